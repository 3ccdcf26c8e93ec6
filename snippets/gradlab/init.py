"""Initializations that are not a weight scale: orthogonal matrices (Saxe, McClelland and
Ganguli, ICLR 2014) and constant weights (the symmetric starting point random draws avoid).

Both return parameter lists in the layout of ``models.init_mlp``: ``[W1, b1, W2, b2, ...]``
with ``W_l`` of shape ``(fan_in, fan_out)`` and biases 0, so ``models.mlp`` runs them.
"""

import functools
from itertools import pairwise

import numpy as np

from . import diagnostics, engine, models, ops


def orthogonal(fan_in, fan_out, rng, gain=1.0):
    """A ``(fan_in, fan_out)`` matrix ``gain * Q`` with orthonormal columns (fan_in >= fan_out)
    or orthonormal rows (fan_in < fan_out), drawn uniformly (Haar measure).

    Q comes from the QR decomposition of a standard normal matrix, with the signs of R's
    diagonal moved into Q so that the draw does not depend on the QR routine's sign convention.
    Every singular value of the result is exactly ``gain`` (up to rounding): the layer scales the
    norm of every vector in its row space by ``gain``, not only on average.
    """
    tall = fan_in >= fan_out
    A = rng.normal(size=(fan_in, fan_out) if tall else (fan_out, fan_in))
    Q, R = np.linalg.qr(A)
    Q = Q * np.where(np.diag(R) < 0, -1.0, 1.0)
    return gain * (Q if tall else Q.T)


def orthogonal_mlp(sizes, rng, gain=1.0):
    """[W1, b1, W2, b2, ...] for layer sizes [n_in, ..., n_out]: every W_l ``orthogonal`` with
    this ``gain`` (1 for tanh, sqrt(2) for ReLU, whose mean square slope is 1/2), biases 0."""
    params = []
    for fan_in, fan_out in pairwise(sizes):
        params += [orthogonal(fan_in, fan_out, rng, gain), np.zeros(fan_out)]
    return params


@functools.lru_cache(maxsize=8)
def _standard_normals(seed, sizes):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(size=(fan_in, fan_out)) for fan_in, fan_out in pairwise(sizes))


@functools.lru_cache(maxsize=8)
def _orthogonal_factors(seed, sizes):
    rng = np.random.default_rng(seed)
    return tuple(orthogonal(fan_in, fan_out, rng) for fan_in, fan_out in pairwise(sizes))


def seeded_mlp(sizes, init, seed):
    """``models.init_mlp(sizes, init, np.random.default_rng(seed))``, bit for bit, or with
    ``init="orthogonal"`` (gain 1) or ``("orthogonal", gain)`` ``orthogonal_mlp`` from that
    generator, bit for bit (``seed``: an int or a tuple of ints).

    Networks drawn from the same seed and sizes share their random numbers: N(0, std^2) is
    ``0.0 + std * z`` for the generator's standard normal z (numpy's own formula), and an
    orthogonal layer is ``gain`` times the same Q. So the draws (and QR decompositions) are made
    once per seed and sizes and kept (the last 8), and every further scale costs one multiply.
    """
    sizes = tuple(sizes)
    if init == "orthogonal" or (isinstance(init, tuple) and init[0] == "orthogonal"):
        gain = 1.0 if init == "orthogonal" else init[1]
        return [a for Q in _orthogonal_factors(seed, sizes) for a in (gain * Q, np.zeros(Q.shape[1]))]
    draws = _standard_normals(seed, sizes)
    return [
        a
        for (fan_in, fan_out), z in zip(pairwise(sizes), draws, strict=True)
        for a in (0.0 + models.weight_std(init, fan_in, fan_out) * z, np.zeros(fan_out))
    ]


def constant_mlp(sizes, value):
    """[W1, b1, ...] with every weight equal to ``value`` and biases 0: every hidden unit of a
    layer computes the same function, so each gets the same gradient."""
    params = []
    for fan_in, fan_out in pairwise(sizes):
        params += [np.full((fan_in, fan_out), float(value)), np.zeros(fan_out)]
    return params


def jacobian_singular_values(weights, slopes):
    """The singular values of the input-output Jacobian of an MLP at one input, largest first.

    With row vectors, h_l = f(h_{l-1} W_l), so dh_D/dh_0 = W_1 diag(f'(z_1)) W_2 ... W_D
    diag(f'(z_D)); ``weights`` are W_1..W_D, ``slopes`` the vectors f'(z_l) at that input.
    Saxe et al. (2014) call an initialization whose singular values all stay near 1 with depth
    "dynamically isometric".
    """
    J = np.eye(weights[0].shape[0])
    for W, slope in zip(weights, slopes, strict=True):
        J = (J @ W) * slope
    return np.linalg.svd(J, compute_uv=False)


def propagate(params, X, readout, activation):
    """One forward and one backward pass of ``models.mlp`` with the loss L = sum(y * readout) / B
    (so dL/dy = readout / B does not depend on the weights), by the project's reverse mode.

    Per hidden layer l = 1..D: ``var_z`` (mean square of z_l over batch and units),
    ``var_grad_h`` (mean square of dL/dh_l), ``slopes`` (the arrays f'(z_l)). Summaries:
    ``forward`` and ``backward``, the per-layer factors of var_z (first to last layer) and of
    var_grad_h (last to first), each the geometric mean of D - 1 ratios; ``ratio``,
    ||dL/dW_1|| / ||dL/dW_last||; ``relgrad``, ||dL/dW_1|| / ||W_1||; ``output_rms``, the RMS of
    y; ``grad_h_ratio``, RMS dL/dh_1 / RMS dL/dh_D.
    """
    tensors = [engine.Tensor(p, requires_grad=True) for p in params]
    output, pre_acts, acts = models.mlp(tensors, X, activation, return_hidden=True)
    (ops.sum(output * readout) / X.shape[0]).backward()
    var_z = np.array([np.mean(z.data**2) for z in pre_acts])
    var_grad_h = np.array([np.mean(h.grad**2) for h in acts])
    grad_norms = models.grad_norm_per_layer([t.grad for t in tensors])
    return {
        "var_z": var_z,
        "var_grad_h": var_grad_h,
        "slopes": [diagnostics.local_slope(activation, h.data) for h in acts],
        "forward": diagnostics.per_layer_factor(var_z),
        "backward": diagnostics.per_layer_factor(var_grad_h[::-1]),
        "ratio": grad_norms[0] / grad_norms[-1],
        "relgrad": float(np.linalg.norm(tensors[0].grad) / np.linalg.norm(params[0])),
        "output_rms": float(np.sqrt(np.mean(output.data**2))),
        "grad_h_ratio": float(np.sqrt(var_grad_h[0] / var_grad_h[-1])),
    }


def unit_spread(params):
    """How far the hidden units are from one another: the largest ``|p_j - p_0|`` over every
    hidden unit j's incoming weights, bias and outgoing weights (``[W1, b1, W2, b2, ...]``),
    relative to that layer's largest such entry. 0.0 means bit for bit identical (the network is
    then one unit wide); rounding alone leaves about 1e-16."""
    weights, biases = params[0::2], params[1::2]
    spread = 0.0
    for W_in, b, W_out in zip(weights[:-1], biases, weights[1:], strict=False):
        parts = [W_in.T, b[:, None], W_out]  # one row per unit of this layer
        scale = max(np.abs(part).max() for part in parts) or 1.0
        spread = max(spread, *(np.abs(part - part[:1]).max() / scale for part in parts))
    return float(spread)


def tanh_mse_value_and_grad(params, X, y):
    """``engine.value_and_grad`` of ``mean((models.mlp(params, X, "tanh") - y) ** 2)``, bit for
    bit, without building a graph: the same forward operations, then the engine's backward rules
    in its order (the mean's 1/size, the square's 2x, the subtraction's 1, the broadcast bias's
    sum over the batch, the matmul's two products, tanh's 1 - y**2). For a small network most of
    the engine's time is bookkeeping, so this costs a fraction of it; tests/test_init.py checks
    it against the engine over many descent steps.

    Stacked networks (every array with a leading axis K: X (K, N, d), W (K, n_in, n_out), b (K,
    n_out)) give K values and stacked gradients, each network's the same as alone."""
    activations = [X]
    for W, b in zip(params[0:-2:2], params[1:-2:2], strict=True):
        activations.append(np.tanh(activations[-1] @ W + b[..., None, :]))
    difference = activations[-1] @ params[-2] + params[-1][..., None, :] - y
    square = difference**2
    scale = np.asarray(1 / (square.shape[-2] * square.shape[-1]))  # the engine's mean: sum, times 1/size
    value = square.sum(axis=(-2, -1)) * scale
    g = 1 * ((2 * difference**1) * np.full(square.shape, scale))  # the sum's rule: dL/dsum everywhere
    grads = [None] * len(params)
    for layer in reversed(range(len(params) // 2)):
        grads[2 * layer] = np.swapaxes(activations[layer], -1, -2) @ g
        grads[2 * layer + 1] = g.sum(axis=-2)
        if layer > 0:
            g = (1 - activations[layer] ** 2) * (g @ np.swapaxes(params[2 * layer], -1, -2))
    return (float(value) if np.ndim(value) == 0 else value), grads


def descend(loss, params, lr, steps, value_and_grad=engine.value_and_grad):
    """``steps`` steps of plain gradient descent on ``loss`` (a function of a parameter list),
    with ``value_and_grad(loss, params)`` (the engine's reverse mode unless given): returns the
    loss after the last step, the gradient at the start and the final params."""
    first = None
    for _ in range(steps):
        _, grads = value_and_grad(loss, params)
        first = grads if first is None else first
        params = [p - lr * g for p, g in zip(params, grads, strict=True)]
    return value_and_grad(loss, params)[0], first, params


def equal_versus_random(X, y, sizes, value, lr, steps, rng, activation="tanh"):
    """Train an MLP on the squared error from an equal start (every weight ``value``) and from a
    Glorot draw (``rng``), ``steps`` steps of gradient descent each. Returns the final losses
    ``equal`` and ``random``, ``first_grads`` (the equal start's gradient at step 0), and
    ``grad_spread`` / ``unit_spread``: ``unit_spread`` of that gradient and of the equal start's
    final weights. The gradients are the engine's reverse mode (for tanh computed, bit for bit,
    by ``tanh_mse_value_and_grad``; ``equal_versus_random_seeds`` trains several problems at once)."""
    if activation == "tanh":
        return equal_versus_random_seeds([(X, y, rng)], sizes, value, lr, steps)[0]

    def mse(params):
        return ops.mean((models.mlp(params, X, activation) - y) ** 2)

    equal, first_grads, end = descend(mse, constant_mlp(sizes, value), lr, steps)
    random = descend(mse, models.init_mlp(sizes, "glorot", rng), lr, steps)[0]
    spreads = {"grad_spread": unit_spread(first_grads), "unit_spread": unit_spread(end)}
    return {"equal": equal, "random": random, "first_grads": first_grads} | spreads


def equal_versus_random_seeds(problems, sizes, value, lr, steps):
    """``equal_versus_random`` (tanh) for each ``(X, y, rng)`` of ``problems``, the same numbers bit
    for bit, with the equal and the random start of every problem trained at once, stacked."""
    starts = [
        start
        for _, _, rng in problems
        for start in (constant_mlp(sizes, value), models.init_mlp(sizes, "glorot", rng))
    ]
    params = [np.stack(arrays) for arrays in zip(*starts, strict=True)]
    X = np.stack([X for X, _, _ in problems for _ in range(2)])
    y = np.stack([y for _, y, _ in problems for _ in range(2)])
    final, first, end = descend(None, params, lr, steps, lambda _, p: tanh_mse_value_and_grad(p, X, y))
    results = []
    for k in range(0, len(X), 2):  # k: the equal start, k + 1: the random one
        first_grads = [g[k] for g in first] if first is not None else None
        spreads = {"grad_spread": unit_spread(first_grads), "unit_spread": unit_spread([p[k] for p in end])}
        results.append(
            {"equal": float(final[k]), "random": float(final[k + 1]), "first_grads": first_grads} | spreads
        )
    return results
