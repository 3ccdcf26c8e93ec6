"""Many small tanh networks trained at once: the loss and its gradient on stacks of weights.

Every array carries a leading "stack" axis (one network per entry: a seed, a learning rate), so
one numpy pass trains them all. Three functions of hidden layer l, the same as
docs/per-layer-diagnostics.md:

* ``plain``:      h_l = tanh(h_{l-1} W_l + b_l);
* ``residual``:   h_l = h_{l-1} + tanh(h_{l-1} W_l + b_l) from the second hidden layer on;
* ``normalized``: h_l = tanh(LN(h_{l-1} W_l + b_l)), LN(z) = (z - mean z) / sqrt(var z + eps)
  over each example's units;

then a linear output and the mean squared error. The backward pass is written out by hand (the
same local rules as the engine's tanh, layer_norm and matmul); tests/test_stacked.py checks it
against the engine's reverse mode.

The hidden layers' arrays are stored units first, (units, K, N), not (K, N, units): numpy's
reductions and broadcasts over a short last axis pay a call per row, so layer norm's sums over
the units run as whole-block additions in numpy's own pairwise order, and each network's matrix
is still a strided BLAS operand. The operations and their order are those of the plain
(K, N, units) layout; the results are the same bit for bit wherever the BLAS rounds a product
alike in both storage orders (some kernels split an odd or long inner dimension differently),
otherwise equal to rounding: tests/test_stacked.py checks both against that layout's version.
"""

import numpy as np

VARIANTS = ("plain", "residual", "normalized")


def _t(a):
    return np.swapaxes(a, -1, -2)


def _units_first(a):
    """(K, N, units) -> a contiguous (units, K, N) copy."""
    return np.ascontiguousarray(a.transpose(2, 0, 1))


def _matrices(a):
    """(units, K, N) -> the view (K, N, units): network k's examples-by-units matrix."""
    return a.transpose(1, 2, 0)


def unit_sum(x):
    """The sum over the units (axis 0) of a (units, K, N) array, keepdims: bit for bit what numpy's
    x.sum(-1) gives in the (K, N, units) layout, where a contiguous row of 8 to 128 entries is
    summed pairwise (eight running sums, a tree, then the rest in turn, added to 0.0)."""
    n = x.shape[0]
    if not 8 <= n <= 128:
        return np.ascontiguousarray(_matrices(x)).sum(-1)[None]
    r = x[0:8]
    for i in range(8, n - n % 8, 8):
        r = r + x[i : i + 8]
    r = r[0::2] + r[1::2]
    r = r[0::2] + r[1::2]
    r = r[0:1] + r[1:2]
    for i in range(n - n % 8, n):
        r = r + x[i : i + 1]
    r += 0.0  # numpy starts from 0.0: a sum of -0.0s is +0.0
    return r


def value_and_grad(params, X, y, variant, eps=1e-5):
    """(loss per network, [dL/dW_1, dL/db_1, ..., dL/dW_out, dL/db_out]).

    ``params`` = [W_1, b_1, ..., W_out, b_out] with shapes (K, n_in, n_out) and (K, 1, n_out);
    X (K, N, d), y (K, N, 1). The loss is mean((output - y)^2) over each network's batch.
    Without the stack axis (X of shape (N, d)), one network: its loss and gradients, unstacked.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
    if np.ndim(X) == 2:
        value, grads = value_and_grad([p[None] for p in params], X[None], y[None], variant, eps)
        return value[0], [g[0] for g in grads]
    normalized, residual_from = variant == "normalized", (1 if variant == "residual" else None)
    h, cache = _units_first(X), []
    for layer, (W, b) in enumerate(zip(params[0:-2:2], params[1:-2:2], strict=True)):
        z = np.empty((W.shape[-1], *h.shape[1:]))
        np.matmul(_matrices(h), W, out=_matrices(z))
        z += b.transpose(2, 0, 1)
        sigma = 1.0
        if normalized:  # LN(z) = (z - mean z) / sqrt(var z + eps), numpy's var: mean of (z - mean)^2
            z -= unit_sum(z) / len(z)
            sigma = np.sqrt(unit_sum(z * z) / len(z) + eps)
            z /= sigma
        t = np.tanh(z)
        cache.append((h, z, sigma, t))
        h = h + t if residual_from is not None and layer >= residual_from else t
    h = np.ascontiguousarray(_matrices(h))  # the output layer in the (K, N, units) layout
    residual = h @ params[-2] + params[-1] - y
    d = 2 * residual / residual.shape[-2]
    grads = [None] * (len(params) - 2) + [_t(h) @ d, d.sum(-2, keepdims=True)]
    dh = _units_first(d @ _t(params[-2]))
    for layer in reversed(range(len(cache))):
        h_prev, u, sigma, t = cache[layer]
        g = t * t
        np.subtract(1, g, out=g)
        g *= dh  # tanh' from its output, times dL/dt
        if normalized:  # LN's rule: (g - mean g - u mean(g u)) / sigma
            g = (g - unit_sum(g) / len(g) - u * (unit_sum(g * u) / len(g))) / sigma
        by_example = np.ascontiguousarray(g.transpose(2, 1, 0))  # (N, K, units): sum over N in turn
        grads[2 * layer] = np.matmul(h_prev.transpose(1, 0, 2), _matrices(g))
        grads[2 * layer + 1] = by_example.sum(0)[:, None, :]
        if layer == 0:
            break
        back = np.empty(h_prev.shape)
        np.matmul(_matrices(g), _t(params[2 * layer]), out=_matrices(back))
        dh = back + dh if residual_from is not None and layer >= residual_from else back
    return (residual**2).mean(axis=(-2, -1)), grads
