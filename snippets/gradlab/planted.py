"""Gradients made to fool a check: a backward rule with a planted bug, and a ReLU network placed
a given distance from its kink. Used by the gradient-check chapter (snippets/gradient_check.py).
"""

import numpy as np

from . import engine, models, ops


def sigmoid_forgot_factor(t):
    """The sigmoid, whose reverse-mode rule forgot the factor (1 - y): it returns y where the
    derivative is y (1 - y). Every other method (forward mode, central differences, the complex
    step) sees the correct function, so a check against any of them can catch the bug."""
    if not isinstance(t, engine.Tensor):
        return ops.sigmoid(t)
    y = 1 / (1 + np.exp(-t.data))
    return t._unary("sigmoid (buggy)", y, lambda x, y: y)  # should be y * (1 - y)


def relu_net_near_kink(x_one, width, distance, rng):
    """A one-hidden-layer ReLU network (He initialization) on the single input row ``x_one``,
    with the hidden pre-activation nearest 0 moved to +``distance`` by its bias.

    Returns ``(params, loss)`` with loss(p) = sum((mlp(p, x_one) - 1)^2): the target 1 keeps the
    gradient of order one even when every other hidden unit is off. A central difference whose
    step exceeds ``distance`` straddles that unit's kink."""
    params = models.init_mlp([x_one.shape[1], width, 1], "he", rng)
    z = x_one @ params[0] + params[1]
    unit = int(np.argmin(np.abs(z)))
    params[1][unit] -= z[0, unit] - distance
    return params, lambda p: ops.sum((models.mlp(p, x_one, "relu") - 1.0) ** 2)
