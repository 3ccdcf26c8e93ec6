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
"""

import numpy as np

VARIANTS = ("plain", "residual", "normalized")


def _t(a):
    return np.swapaxes(a, -1, -2)


def value_and_grad(params, X, y, variant, eps=1e-5):
    """(loss per network, [dL/dW_1, dL/db_1, ..., dL/dW_out, dL/db_out]).

    ``params`` = [W_1, b_1, ..., W_out, b_out] with shapes (K, n_in, n_out) and (K, 1, n_out);
    X (K, N, d), y (K, N, 1). The loss is mean((output - y)^2) over each network's batch.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
    normalized, residual_from = variant == "normalized", (1 if variant == "residual" else None)
    h, cache = X, []
    for layer, (W, b) in enumerate(zip(params[0:-2:2], params[1:-2:2], strict=True)):
        z = h @ W + b
        sigma = np.sqrt(z.var(-1, keepdims=True) + eps) if normalized else 1.0
        u = (z - z.mean(-1, keepdims=True)) / sigma if normalized else z
        t = np.tanh(u)
        cache.append((h, u, sigma, t))
        h = h + t if residual_from is not None and layer >= residual_from else t
    residual = h @ params[-2] + params[-1] - y
    d = 2 * residual / residual.shape[-2]
    grads = [None] * (len(params) - 2) + [_t(h) @ d, d.sum(-2, keepdims=True)]
    dh = d @ _t(params[-2])
    for layer in reversed(range(len(cache))):
        h_prev, u, sigma, t = cache[layer]
        g = dh * (1 - t * t)  # tanh' from its output
        if normalized:  # LN's rule: (g - mean g - u mean(g u)) / sigma
            g = (g - g.mean(-1, keepdims=True) - u * (g * u).mean(-1, keepdims=True)) / sigma
        grads[2 * layer], grads[2 * layer + 1] = _t(h_prev) @ g, g.sum(-2, keepdims=True)
        back = g @ _t(params[2 * layer])
        dh = back + dh if residual_from is not None and layer >= residual_from else back
    return (residual**2).mean(axis=(-2, -1)), grads
