"""Central differences and the complex step with every perturbed parameter set evaluated at once.

``numerical.central_difference`` and ``numerical.complex_step`` call f once or twice per
parameter entry: thousands of small numpy calls. The functions here make the same perturbed
parameter lists, the same steps and the same quotients, but stack all of them along a leading axis
and hand the stack to ``f_stacked``, which evaluates f on every set in one pass. Where
``f_stacked`` does f's arithmetic in the same order (``mlp_mse``, for the tanh MLP of
``models.mlp`` with a mean squared error, does), the results are the same, bit for bit; the tests
check that against ``numerical``.
"""

import numpy as np

from . import numerical


def _perturbed(params, dtype, values):
    """One parameter list per entry (i, k), stacked: param j is (S, *shape_j), and set s has
    entry s (counting the entries of all params in order) replaced by ``values[s]``."""
    copies = [np.array(p, dtype=dtype) for p in params]
    sizes = [p.size for p in copies]
    stacks, start = [], 0
    for p, n in zip(copies, sizes, strict=True):
        stack = np.repeat(p.reshape(1, -1), sum(sizes), axis=0)
        stack[np.arange(start, start + n), np.arange(n)] = values[start : start + n]
        stacks.append(stack.reshape(-1, *p.shape))
        start += n
    return stacks


def central_difference(f_stacked, params, h=None):
    """``numerical.central_difference(f, params, h)`` for ``f_stacked``, which maps stacked
    parameter lists (param j of shape (S, *shape_j)) to the S values of f."""
    x = np.concatenate([np.asarray(p).reshape(-1) for p in params]).astype(np.result_type(*params))
    dtype = x.dtype
    if h is None:  # as numerical: eps^(1/3) max(1, |x|), in float64, then rounded to the dtype
        step = (numerical.default_step(dtype) * np.maximum(1.0, np.abs(x).astype(np.float64))).astype(dtype)
    else:
        step = np.full(x.shape, h).astype(dtype)
    plus, minus = x + step, x - step
    quotient = (f_stacked(_perturbed(params, dtype, plus)) - f_stacked(_perturbed(params, dtype, minus))) / (
        plus - minus
    )
    return _split(quotient.astype(dtype), params)


def complex_step(f_stacked, params, h=1e-20):
    """``numerical.complex_step(f, params, h)`` for ``f_stacked`` (float64 parameters)."""
    x = np.concatenate([np.asarray(p, dtype=np.float64).reshape(-1) for p in params])
    values = f_stacked(_perturbed(params, np.complex128, x + 1j * h))
    return _split(values.imag / h, params)


def _split(flat, params):
    out, start = [], 0
    for p in params:
        out.append(flat[start : start + np.size(p)].reshape(np.shape(p)))
        start += np.size(p)
    return out


def mlp_mse(X, y, activation=np.tanh):
    """f_stacked for mean((models.mlp(params, X, "tanh") - y) ** 2): the same matmuls, additions,
    activations and sum as ``ops`` does on plain arrays, for every stacked parameter set."""

    def f_stacked(stacks):
        h = X
        for W, b in zip(stacks[0:-2:2], stacks[1:-2:2], strict=True):
            h = activation(h @ W + b[:, None, :])
        residual = (h @ stacks[-2] + stacks[-1][:, None, :] - y) ** 2
        return np.sum(residual, axis=(-2, -1)) * (1 / (residual.shape[-2] * residual.shape[-1]))

    return f_stacked
