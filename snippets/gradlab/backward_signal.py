"""The backward signal of an MLP, layer by layer, and what decides how it shrinks.

For z_l = h_{l-1} W_l + b_l, h_l = f(z_l) (models.mlp), the backward signal of layer l is
||dL/dz_l||: the gradient every parameter of layer l is computed from. Unlike the weight gradient
dL/dW_l = h_{l-1}^T dL/dz_l, it does not carry the scale of the layer's inputs h_{l-1} or the
shape of W_l, so two layers' signals compare like with like.
"""

import numpy as np

from . import batched_check, check, diagnostics, engine, models, numerical, ops


def backward_pass(params, X, y, activation):
    """One backward pass of mean((mlp(X) - y)^2): the parameter Tensors, the input Tensor and the
    hidden pre-activations z_l and activations h_l as Tensors, all with .grad filled."""
    tensors = [engine.Tensor(p, requires_grad=True) for p in params]
    inputs = engine.Tensor(X, requires_grad=True)  # bound_split reads dL/dh_0
    output, zs, hs = models.mlp(tensors, inputs, activation, return_hidden=True)
    ops.mean((output - y) ** 2).backward()
    return tensors, inputs, zs, hs


def same_sign_share(weight_grad):
    """Share of units (columns of dL/dW_l) whose incoming weight gradients all have one sign.

    dL/dW_l[i, j] = sum over examples of h_{l-1, i} dL/dz_{l, j}: when every h_{l-1, i} > 0 (sigmoid
    outputs) and one example dominates, all of unit j's incoming weights move the same way."""
    return float(np.mean(np.all(weight_grad > 0, axis=0) | np.all(weight_grad < 0, axis=0)))


def layer_report(params, X, y, activation):
    """Per hidden layer l = 1..D: "signal" ||dL/dz_l||, "weights" ||dL/dW_l||, "slope_means" (the
    mean slope f'(z_l) over units and examples); the first/last ratios of signal and weights; over
    layers 2..D (whose inputs are activations) "same_sign" and "slope_mean"; "signal_estimate",
    the typical-gain estimate of signal_ratio (see `typical_gain`); and the pass itself ("graph")."""
    tensors, inputs, zs, hs = backward_pass(params, X, y, activation)
    slopes = [diagnostics.local_slope(activation, h.data) for h in hs]
    signal = [float(np.linalg.norm(z.grad)) for z in zs]
    weights = [float(np.linalg.norm(t.grad)) for t in tensors[0:-2:2]]
    return {
        "signal": signal,
        "signal_ratio": signal[0] / signal[-1],
        "weights": weights,
        "weight_ratio": weights[0] / weights[-1],
        "same_sign": float(np.mean([same_sign_share(t.grad) for t in tensors[2:-2:2]])),
        "slope_means": [float(np.mean(slope)) for slope in slopes],
        "slope_mean": float(np.mean(slopes[1:])),
        "signal_estimate": float(np.prod(typical_gain([t.data for t in tensors[2:-2:2]], slopes[:-1]))),
        "graph": (tensors, inputs, zs, hs),
    }


def typical_gain(weights, slopes):
    """Per layer, the factor by which ||dL/dz_{l+1}|| typically becomes ||dL/dz_l||, given
    weights = [W_2, ..., W_D] and slopes = [f'(z_1), ..., f'(z_{D-1})] (arrays):
    ||W_{l+1}||_F / sqrt(fan_out) * rms f'(z_l). It is exact in expectation for a gradient whose
    entries are independent of W_{l+1}'s and of the slopes (the variance argument of Glorot and
    Bengio, 2010); for square n x n layers with weight std s the first factor is about s sqrt(n)."""
    return [
        float(np.linalg.norm(W) / np.sqrt(W.shape[1]) * np.sqrt(np.mean(np.square(slope))))
        for W, slope in zip(weights, slopes, strict=True)
    ]


SATURATED_BELOW = {"sigmoid": 0.25 / 100, "tanh": 1 / 100}  # 1% of the largest slope: |z| > 6, |z| > 3


def setup_report(params, X, X_raw, y, activation):
    """layer_report(params, X, y, activation), plus, for a saturating activation (a unit counts as
    saturated where its slope is below SATURATED_BELOW[activation]), the saturated share of all
    hidden layers ("saturated"), of layer 1 ("first_saturated") and of layer 1 on the inputs X_raw
    ("first_saturated_raw")."""
    report, below = layer_report(params, X, y, activation), SATURATED_BELOW.get(activation)
    if below:
        zs, raw = [z.data for z in report["graph"][2]], models.mlp(params, X_raw, activation, True)[1]
        for key, values in (("saturated", zs), ("first_saturated", zs[:1]), ("first_saturated_raw", raw[:1])):
            report[key] = saturated_share(values, activation, below)
    return report


def bound_split(graph, max_slope):
    """||dL/dh_0|| / ||dL/dh_D|| against its bound prod_l max_slope ||W_l||_2, and the exact split
    measured / bound = slopes * directions, with
    slopes = prod_l ||dL/dz_l|| / (max_slope ||dL/dh_l||)  (<= 1: slopes below their maximum) and
    directions = prod_l ||dL/dh_{l-1}|| / (||W_l||_2 ||dL/dz_l||)  (<= 1: off W_l's top direction);
    also the hidden layers' ||W_l||_2 ("spectral_norms")."""
    tensors, inputs, zs, hs = graph
    norm = np.linalg.norm
    measured = norm(inputs.grad) / norm(hs[-1].grad)
    bound = float(np.prod([max_slope * norm(t.data, 2) for t in tensors[0:-2:2]]))
    slopes = float(np.prod([norm(z.grad) / (max_slope * norm(h.grad)) for z, h in zip(zs, hs, strict=True)]))
    out = {"measured": measured, "bound": bound, "slopes": slopes, "directions": measured / bound / slopes}
    return out | {"spectral_norms": [float(norm(t.data, 2)) for t in tensors[0:-2:2]]}


def first_layer_check(params, X, y, activation):
    """dL/dW_1 of mean((mlp(X) - y)^2) by the four methods of check.METHODS: the largest relative
    error of each against reverse mode, the reverse-mode entries' largest, median and smallest
    magnitude, and the largest |central - reverse| over the rounding estimate eps |L| / h."""

    def first_layer_loss(first):  # with ops: reverse and forward mode trace it
        return ops.mean((models.mlp([first[0], *params[1:]], X, activation) - y) ** 2)

    stacked = first_layer_rows(params, X, y, activation)  # every perturbed W_1 at once, bit for bit
    grads = {name: check.METHODS[name](first_layer_loss, params[:1])[0] for name in ("reverse", "forward")}
    grads["central"] = batched_check.central_difference(stacked, params[:1])[0]
    grads["complex"] = batched_check.complex_step(stacked, params[:1])[0]
    entries, rounding = np.abs(grads["reverse"]), numerical.rounding_error(first_layer_loss(params[:1]))
    out = {
        name: float(check.rel_error(grads["reverse"], g).max())
        for name, g in grads.items()
        if name != "reverse"
    }
    out |= {"largest": entries.max(), "median": float(np.median(entries)), "smallest": entries.min()}
    return out | {"central_over_rounding": np.abs(grads["central"] - grads["reverse"]).max() / rounding}


def first_layer_rows(params, X, y, activation):
    """values([W_1 stack]) -> mean((mlp(X) - y)^2) for every W_1 of the stack, the other layers
    fixed: the ``f_stacked`` of `batched_check`, its ``mlp_mse`` with the other layers shared by
    the whole stack (each a stack of one, which numpy's matmul broadcasts)."""
    f_stacked = batched_check.mlp_mse(X, y, models.ACTIVATIONS[activation])
    rest = [p[None] for p in params[1:]]
    return lambda stacked: f_stacked([stacked[0], *rest])


def first_crossing(scales, ratios, level=1.0):
    """The scale at which `ratios` (one per scale, scales increasing) first reaches `level`,
    interpolated linearly in log(scale) and log(ratio) between the two swept scales around it;
    nan if it never does, the first scale if it starts there."""
    above = np.flatnonzero(np.asarray(ratios) >= level)
    if above.size == 0 or above[0] == 0:
        return scales[0] if above.size else np.nan
    (s0, s1), (r0, r1) = (
        np.log(scales[above[0] - 1 : above[0] + 1]),
        np.log(ratios[above[0] - 1 : above[0] + 1]),
    )
    return float(np.exp(s0 + (np.log(level) - r0) * (s1 - s0) / (r1 - r0)))


def rescaled(unit, init, multiple=1.0):
    """A weight draw `unit` ([W1, b1, ...], W_l standard normal) with every W_l scaled to the std
    multiple * models.weight_std(init, fan_in, fan_out): setups that differ in scale only."""
    return [p * multiple * models.weight_std(init, *p.shape) if p.ndim == 2 else p for p in unit]


def saturated_share(zs, activation, below):
    """Share of the entries of the pre-activations zs (a list of arrays) whose slope, computed from
    the activation's output as diagnostics.local_slope does, is below `below`."""
    slopes = [diagnostics.local_slope(activation, models.ACTIVATIONS[activation](z)).ravel() for z in zs]
    return float(np.mean(np.concatenate(slopes) < below))
