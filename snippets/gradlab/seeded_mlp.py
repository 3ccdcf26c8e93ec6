"""ReLU-family MLPs trained on several seeds at once, for counting dead units.

Arrays carry a leading seed axis: X is (seed, input, feature), each parameter (seed, ...). The
backward pass is the reverse-mode rules written out by hand for the stacked arrays, so five seeds
train in one numpy call per layer; ``tests/test_seeded_mlp.py`` checks it against ``engine.grad``.
An activation is given by its slope for z <= 0: 0 for ReLU, ``slope`` for leaky ReLU.
"""

import numpy as np

from . import models, ops


def init(sizes, rngs, init="he", bias=0.0):
    """models.init_mlp drawn from each generator in ``rngs``, stacked along a leading seed axis."""
    per_seed = [models.init_mlp(sizes, init, rng, bias=bias) for rng in rngs]
    return [np.stack(p) for p in zip(*per_seed, strict=True)]


def one_seed(params, k):
    """The parameters of seed number ``k`` as a plain list, for ``models.mlp`` and the engine."""
    return [p[k] for p in params]


def forward(params, X, slope):
    """Per seed: the hidden pre-activations z_l, activations h_l and the output."""
    zs, hs, h = [], [], X
    for W, b in zip(params[0:-2:2], params[1:-2:2], strict=True):
        zs.append(h @ W + b[:, None])
        hs.append(np.maximum(zs[-1], slope * zs[-1]))  # z > 0 ? z : slope z, for 0 <= slope < 1
        h = hs[-1]
    return zs, hs, h @ params[-2] + params[-1][:, None]


def loss(params, X, y, slope):
    """Per seed: the mean squared error over all inputs."""
    return np.mean((forward(params, X, slope)[2] - y) ** 2, axis=(1, 2))


def grads(params, X, y, slope):
    """Per seed: the gradient of the mean squared error, by the reverse-mode rules."""
    zs, hs, out = forward(params, X, slope)
    delta, result = 2 * (out - y) / y.shape[1], []
    for layer in range(len(zs), -1, -1):
        h_in = hs[layer - 1] if layer else X
        result[:0] = [h_in.transpose(0, 2, 1) @ delta, delta.sum(1)]
        if layer:
            delta = (delta @ params[2 * layer].transpose(0, 2, 1)) * _slopes(zs[layer - 1], slope)
    return result


def _slopes(z, slope):
    """The activation's derivative at z: 1 where z > 0, else slope (as a 0/1 mask for ReLU)."""
    return z > 0 if np.all(slope == 0) else np.where(z > 0, 1, slope)


def dead(params, X, slope):
    """(seed, unit) booleans over all hidden units: z <= 0 on every input of X."""
    return np.concatenate([(z <= 0).all(axis=1) for z in forward(params, X, slope)[0]], axis=1)


def sgd(params, X, y, lr, slope, rngs, steps, batch, record_at=()):
    """Plain minibatch SGD on every seed, each drawing its minibatches from its own generator.

    Returns the final parameters and ``dead(...)`` at every step in ``record_at`` (0 = the start),
    stacked as (record, seed, unit)."""
    rows, history = np.arange(len(rngs))[:, None], []
    for step in range(steps + 1):
        if step in record_at:
            history.append(dead(params, X, slope))
        if step == steps:
            break
        idx = np.stack([rng.integers(0, X.shape[1], batch) for rng in rngs])
        step_grads = grads(params, X[rows, idx], y[rows, idx], slope)
        params = [p - lr * g for p, g in zip(params, step_grads, strict=True)]
    return params, np.array(history)


def loss_of_units(params, X, y, units, activation="relu"):
    """One seed's full-data loss as a function of the incoming weights and biases of some hidden
    units only (``units[l]``: indices in hidden layer l), every other parameter held fixed.

    Returns ``(loss, sub_params)`` with sub_params ``[W_1[:, u_1], b_1[u_1], W_2[:, u_2], ...]``.
    The chosen columns are added back through 0/1 selection matrices, which every method runs."""
    rest, selects, sub = [p.copy() for p in params], [], []
    for layer, chosen in enumerate(units):
        selects += [np.eye(params[2 * layer + 1].size)[chosen]] * 2
        sub += [params[2 * layer][:, chosen], params[2 * layer + 1][chosen]]
        rest[2 * layer][:, chosen], rest[2 * layer + 1][chosen] = 0, 0

    def function(sub):
        pieces = [r + ops.matmul(q, s) for r, q, s in zip(rest, sub, selects, strict=False)]
        return ops.mean((models.mlp(pieces + rest[len(pieces) :], X, activation) - y) ** 2)

    return function, sub
