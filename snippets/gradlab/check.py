"""Compare gradients computed by independent methods.

If reverse mode, forward mode, central differences and the complex step agree, the gradient is
right, and whatever goes wrong in training is a property of the function (or the optimizer),
not of backpropagation.
"""

import numpy as np

from . import engine, forward, numerical

METHODS = {
    "reverse": engine.grad,
    "forward": forward.grad,
    "central": numerical.central_difference,
    "complex": numerical.complex_step,
}


def rel_error(a, b):
    """Elementwise |a - b| / max(|a|, |b|), 0 where both are 0 (as in CS231n), and NaN where
    either is NaN or infinite: a non-finite gradient agrees with nothing, so no tolerance passes
    it (``NaN < tol`` is False) and ``max_rel_error`` reports it.

    Scale-free, so one tolerance fits gradients of any size; but two tiny gradients that
    differ only by noise (1e-12 vs 3e-12) get a large relative error: a property of the measure.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    finite = np.isfinite(a) & np.isfinite(b)
    scale = np.where(finite, np.maximum(np.abs(a), np.abs(b)), 0.0)
    error = np.divide(np.abs(a - b), scale, out=np.zeros(np.broadcast(a, b).shape), where=scale > 0)
    return np.where(finite, error, np.nan)


def max_rel_error(grads_a, grads_b):
    """The largest rel_error over two lists of gradients (one array per parameter); NaN if any
    entry of either is NaN or infinite."""
    if len(grads_a) != len(grads_b):
        raise ValueError(f"{len(grads_a)} gradients vs {len(grads_b)}")
    errors = [rel_error(a, b).max(initial=0.0) for a, b in zip(grads_a, grads_b, strict=True)]
    return float(np.max(errors, initial=0.0))  # np.max keeps a NaN; the builtin max may drop it


def normwise_rel_error(grads, reference):
    """||g - g_ref|| / ||g_ref||, the Euclidean norms taken over all parameters together.

    One number for a whole gradient, not dominated by tiny entries as max_rel_error can be.
    Unlike rel_error it divides by the reference alone. `grads` may be float32; the difference
    is taken in float64.
    """
    if len(grads) != len(reference):
        raise ValueError(f"{len(grads)} gradients vs {len(reference)}")
    difference = np.sqrt(
        sum(np.sum((np.asarray(g, dtype=np.float64) - r) ** 2) for g, r in zip(grads, reference, strict=True))
    )
    return float(difference / np.sqrt(sum(np.sum(np.asarray(r) ** 2) for r in reference)))


def _methods_for(params, methods):
    """Drop the complex step unless every parameter is float64 (it needs float64)."""
    all_float64 = all(np.asarray(p).dtype == np.float64 for p in params)
    return [m for m in methods if m != "complex" or all_float64]


def compare(f, params, methods=("reverse", "forward", "central", "complex")):
    """{"reverse vs forward": largest relative error, ...} for every other method in `methods`.

    The complex step is skipped when a parameter is not float64.
    """
    reference = engine.grad(f, params)
    return {
        f"reverse vs {name}": max_rel_error(reference, METHODS[name](f, params))
        for name in _methods_for(params, methods)
        if name != "reverse"
    }


def assert_gradients_close(f, params, rtol, methods=("forward", "central", "complex"), atol=0.0):
    """Raise AssertionError unless every method agrees with reverse mode entry by entry:
    rel_error <= rtol or |difference| <= atol. The message names the method, the parameter,
    the worst entry and both values."""
    reference = engine.grad(f, params)
    for name in _methods_for(params, methods):
        for i, (expected, got) in enumerate(zip(reference, METHODS[name](f, params), strict=True)):
            error = np.where(np.abs(expected - got) <= atol, 0.0, rel_error(expected, got))
            if error.size and not error.max() <= rtol:  # a NaN (a non-finite entry) fails too
                worst = tuple(int(k) for k in np.unravel_index(np.argmax(error), error.shape))
                raise AssertionError(
                    f"gradient check failed: reverse vs {name}, parameter {i}, entry {worst}: "
                    f"reverse = {expected[worst]:.10g}, {name} = {got[worst]:.10g}, "
                    f"relative error {error[worst]:.2e} > rtol {rtol:.0e}"
                )
