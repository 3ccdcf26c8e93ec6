"""Gradients from function values alone: central differences and the complex step.

Both have the drivers' signature `method(f, params) -> grads`, where f takes a list of numpy
arrays and returns a scalar, and both cost 1 or 2 evaluations of f PER PARAMETER ENTRY.
"""

import numpy as np

from . import flops
from .engine import as_float_array


def _scalar(value, what):
    value = np.asarray(value)
    if value.size != 1:
        raise ValueError(f"{what}: f must return a scalar, got shape {value.shape}")
    return value.reshape(())


def _entries(params, dtype=None):
    """Working copies of params, and (param index, flat entry index) for every entry."""
    copies = [np.array(as_float_array(p), dtype=dtype) for p in params]
    return copies, [(i, k) for i, x in enumerate(copies) for k in range(x.size)]


def default_step(dtype=np.float64):
    """eps^(1/3) for the dtype's machine epsilon: the step that balances truncation against
    rounding (see central_difference), 6.1e-6 in float64, 4.9e-3 in float32."""
    return np.finfo(dtype).eps ** (1 / 3)


def rounding_error(value, dtype=np.float64):
    """eps |f| / h with h = default_step(dtype): the rounding error of one central difference at
    |x| <= 1, since f itself is only known to about eps |f|. The same for every entry, so it is
    small against large gradient entries and can swamp tiny ones."""
    eps = np.finfo(dtype).eps
    return eps * abs(value) / default_step(dtype)


def central_difference(f, params, h=None):
    """df/dx_k ~ (f(x + h e_k) - f(x - h e_k)) / (2h), two evaluations per entry.

    The error has two parts: truncation, about h^2 |f'''| / 6, which wants a small h, and
    rounding, about eps |f| / h (f itself is only known to eps), which wants a large h. They
    balance at h ~ eps^(1/3), so the default step is h_k = eps^(1/3) * max(1, |x_k|) with eps
    of the parameters' dtype (6e-6 for float64, 5e-3 for float32), which leaves a relative
    error near eps^(2/3): about 4e-11 in float64, 2e-5 in float32. The step actually taken,
    (x + h) - (x - h) in floating point, is the one divided by.
    """
    copies, entries = _entries(params)
    grads = [np.zeros_like(x) for x in copies]
    for i, k in entries:
        x = copies[i]
        original = x.flat[k]
        step = default_step(x.dtype) * max(1.0, abs(original)) if h is None else h
        x.flat[k] = plus = original + x.dtype.type(step)
        flops.count_call()
        f_plus = _scalar(f(copies), "central_difference")
        x.flat[k] = minus = original - x.dtype.type(step)
        flops.count_call()
        f_minus = _scalar(f(copies), "central_difference")
        x.flat[k] = original
        grads[i].flat[k] = (f_plus - f_minus) / (plus - minus)
    return grads


def complex_step(f, params, h=1e-20):
    """df/dx_k = Im f(x + i h e_k) / h, one complex evaluation per entry.

    For analytic f, f(x + ih) = f(x) + ih f'(x) - h^2 f''(x)/2 + ..., so the imaginary part
    divided by h is f'(x) up to O(h^2), with NO subtraction of nearly equal numbers and hence no
    rounding error: h can be 1e-20 and the result is exact to machine precision.
    Needs float64 parameters and an f that carries complex values through (use `ops`, not
    np.abs or np.maximum, which drop or mangle the imaginary part).
    """
    for i, p in enumerate(params):
        if np.asarray(p).dtype != np.float64:
            raise TypeError(
                f"complex_step needs float64 parameters; parameter {i} is "
                f"{np.asarray(p).dtype}. Use central_difference for float32."
            )
    copies, entries = _entries(params, dtype=np.complex128)
    grads = [np.zeros(x.shape) for x in copies]
    for i, k in entries:
        x = copies[i]
        original = x.flat[k]
        x.flat[k] = original + 1j * h
        flops.count_call()
        value = _scalar(f(copies), "complex_step")
        x.flat[k] = original
        if not np.iscomplexobj(value):
            raise TypeError(
                "complex_step: f returned a real value for complex input, so the imaginary "
                "part was lost (np.abs, np.maximum, .real, float()?); write f with gradlab.ops"
            )
        grads[i].flat[k] = value.imag / h
    return grads


def smallest_float_where(predicate, low, high):
    """The smallest float64 x in (low, high] with predicate(x) true, for a predicate that is
    false at `low`, true at `high` and monotone in between (0 <= low < high).

    Bisects the bit patterns: non-negative float64 numbers are ordered like their int64 views,
    so at most 64 halvings find the exact threshold, with no tolerance to choose.
    """
    below, above = int(np.float64(low).view(np.int64)), int(np.float64(high).view(np.int64))
    while above - below > 1:
        middle = (below + above) // 2
        if predicate(np.int64(middle).view(np.float64)):
            above = middle
        else:
            below = middle
    return float(np.int64(above).view(np.float64))
