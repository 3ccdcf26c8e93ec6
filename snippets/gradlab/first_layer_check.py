"""Four gradient methods on the first layer of a deep MLP at a fixed weight scale.

The network ``[width] * (depth + 1) + [1]`` with N(0, std²) weights (``models.init_mlp``), inputs X
of shape (width, width) and a random read-out r, the loss L = (1/width) Σ_i f(X)_i r_i; its gradient
with respect to the first layer's weights by reverse mode, forward mode, the complex step and
central differences. Forward mode checks reverse mode's bookkeeping; the complex step and
central differences check the derivative rules themselves. The last two evaluate the loss at every
perturbed first layer at once (``batched_check``), bit for bit ``numerical``'s one-by-one values.
"""

import numpy as np

from . import batched_check, check, engine, forward, models, ops


def first_layer_check(depth, width, std, rng, activation="tanh"):
    """Draw the weights, then X, then r from ``rng``; return ``exact`` (reverse mode against
    forward mode and the complex step, the larger relative disagreement), ``central`` (against
    central differences) and ``grad_rms`` (the RMS of reverse mode's dL/dW_1)."""
    params = models.init_mlp([width] * (depth + 1) + [1], std, rng)
    X, readout = rng.normal(size=(width, width)), rng.normal(size=(width, 1))

    def first_layer_loss(first):
        return ops.sum(models.mlp([first[0], *params[1:]], X, activation) * readout) / width

    def stacked_loss(stacks):  # first_layer_loss for a stack of first layers (S, width, width)
        h = X
        for W, b in zip([stacks[0], *params[2:-2:2]], params[1:-2:2], strict=True):
            h = models.ACTIVATIONS[activation](h @ W + b)
        return np.sum((h @ params[-2] + params[-1]) * readout, axis=(-2, -1)) / width

    grad = engine.grad(first_layer_loss, [params[0]])
    forward_error = check.max_rel_error(grad, forward.grad(first_layer_loss, [params[0]]))
    complex_error = check.max_rel_error(grad, batched_check.complex_step(stacked_loss, [params[0]]))
    return {
        "exact": max(forward_error, complex_error),
        "central": check.max_rel_error(grad, batched_check.central_difference(stacked_loss, [params[0]])),
        "grad_rms": np.sqrt(np.mean(grad[0] ** 2)),
    }
