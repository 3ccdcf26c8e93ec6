"""Why central differences see a dead ReLU unit's gradient as exactly 0, unit by unit.

A hidden unit is dead when its pre-activation z = h_in · w + b is <= 0 on every input. Central
differences move one of its incoming weights w_i (or its bias b) at a time by h·max(1, |w_i|),
which changes z on input x by h·max(1, |w_i|)·|h_in,i| (by h·max(1, |b|) for the bias, whose
"input" is 1). When the largest z over the data plus the largest such change stays below 0, both
evaluations of the loss see the unit dead, and their difference is exactly 0.
"""

import itertools

import numpy as np

from . import numerical, seeded_mlp


def central_reach(params, X, units, step=None):
    """One seed's ReLU MLP (``params`` a plain list ``[W_1, b_1, ...]``) on inputs ``X``; for each
    hidden unit ``j`` in ``units[l]`` (indices in hidden layer ``l``): the largest z over ``X``, and
    the largest change of z on any input that one central-difference step of size
    ``step·max(1, |entry|)`` (default ``numerical.default_step()``) on one incoming entry makes.

    Returns ``(z_top, move)``, two lists in the order of ``units``."""
    step = numerical.default_step() if step is None else step
    zs, hs, _ = seeded_mlp.forward([p[None] for p in params], X[None], 0.0)
    layer_inputs = [X] + [h[0] for h in hs]
    z_top, move = [], []
    for layer, chosen in enumerate(units):
        inputs = np.append(np.abs(layer_inputs[layer]).max(0), 1.0)  # the bias's "input" is 1
        for j in chosen:
            entries = np.append(params[2 * layer][:, j], params[2 * layer + 1][j])
            move.append(float((step * np.maximum(1, np.abs(entries)) * inputs).max()))
            z_top.append(float(zs[layer][0][:, j].max()))
    return z_top, move


def out_of_reach(params, X, dead, step=None):
    """One seed's dead units (``dead``: the booleans of ``seeded_mlp.dead`` for this seed, over all
    hidden units), split by whether one central step of size ``step·max(1, |entry|)`` can reach
    z = 0: ``(units, clear)``, where ``units[l]`` lists the dead units of hidden layer ``l`` and
    ``clear[l]`` says, per unit, that its largest z plus its ``central_reach`` move stays below 0.
    A check of a unit that is not clear tests where the step lands, not the unit's gradient."""
    bounds = np.cumsum([0] + [params[2 * layer].shape[1] for layer in range(len(params) // 2 - 1)])
    units = [np.flatnonzero(dead[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
    z_top, move = central_reach(params, X, units, step)
    clear, start = [], 0
    for chosen in units:
        clear.append(np.array(z_top[start : start + len(chosen)]) + move[start : start + len(chosen)] < 0)
        start += len(chosen)
    return units, clear


def in_reach(params, X, dead, step=None):
    """Per seed (``params``, ``X`` and ``dead`` with a leading seed axis, as ``seeded_mlp`` keeps
    them): how many dead units one central step can reach (``out_of_reach``'s units not clear)."""
    split = [out_of_reach(seeded_mlp.one_seed(params, k), X[k], dead[k], step)[1] for k in range(len(X))]
    return [sum(int((~clear).sum()) for clear in layers) for layers in split]
