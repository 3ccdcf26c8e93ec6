"""Four gradient methods on the first layer of a deep MLP at a fixed weight scale.

The network ``[width] * (depth + 1) + [1]`` with N(0, std²) weights (``models.init_mlp``), inputs X
of shape (width, width) and a random read-out r, the loss L = (1/width) Σ_i f(X)_i r_i; its gradient
with respect to the first layer's weights by reverse mode, forward mode, the complex step and
central differences (``check.compare``). Forward mode checks reverse mode's bookkeeping; the
complex step and central differences check the derivative rules themselves.
"""

import numpy as np

from . import check, engine, models, ops


def first_layer_check(depth, width, std, rng, activation="tanh"):
    """Draw the weights, then X, then r from ``rng``; return ``exact`` (reverse mode against
    forward mode and the complex step, the larger relative disagreement), ``central`` (against
    central differences) and ``grad_rms`` (the RMS of reverse mode's dL/dW_1)."""
    params = models.init_mlp([width] * (depth + 1) + [1], std, rng)
    X, readout = rng.normal(size=(width, width)), rng.normal(size=(width, 1))

    def first_layer_loss(first):
        return ops.sum(models.mlp([first[0], *params[1:]], X, activation) * readout) / width

    disagreement = check.compare(first_layer_loss, [params[0]])
    exact = max(disagreement["reverse vs forward"], disagreement["reverse vs complex"])
    grad = engine.grad(first_layer_loss, [params[0]])[0]
    return {
        "exact": exact,
        "central": disagreement["reverse vs central"],
        "grad_rms": np.sqrt(np.mean(grad**2)),
    }
