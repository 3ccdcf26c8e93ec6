"""A per-layer report of a network's gradients and activations, one aligned line per layer:

    layer  3 (tanh): grad 2.1e-04, update/weight 1.3e-03, saturated  81.2%, dead   0.0%, mean +0.01, std 0.64

For layer l with weights W_l, their gradient dL/dW_l, and the activations h_l (rows are the
examples of a batch, columns the units):

* grad: ||dL/dW_l||_F;
* update/weight: ||lr * dL/dW_l||_F / ||W_l||_F, the relative size of one plain-SGD update;
* saturated: the fraction of entries of h_l (example, unit) where the activation is flat:
  |h| > 0.97 for tanh, |2h - 1| > 0.97 for the sigmoid (the same test, since
  2 sigmoid(z) - 1 = tanh(z / 2)); there the local slope is below 1 - 0.97^2 = 5.9% of its
  maximum. Not defined ("n/a") for activations without a flat tail (relu, leaky_relu, linear);
* dead: the fraction of units whose local slope, computed from the output h, is exactly zero on
  EVERY example of the batch: relu units with h = 0 throughout (z <= 0), or tanh/sigmoid units
  whose output has rounded all the way to the float value +-1 (0 or 1). For relu and for tanh
  (whose backward rule is 1 - h^2) no gradient passes such a unit. gradlab's sigmoid rule is
  sigma(z) sigma(-z), positive up to |z| ~ 745, so a sigmoid unit counted here still passes a
  gradient below 1e-16 relative: "dead" in every practical sense, not exactly;
* mean, std: of all entries of h_l.
"""

from dataclasses import dataclass

import numpy as np

SATURATION_LEVEL = 0.97


@dataclass
class LayerStats:
    layer: int
    activation: str
    grad_norm: float
    update_ratio: float
    saturated: float | None  # None where saturation is not defined
    dead: float
    mean: float
    std: float


def local_slope(activation, h, leaky_slope=0.01):
    """The activation's derivative, written as a function of its OUTPUT h (for leaky ReLU, h
    has the sign of z: 1 where h > 0, ``leaky_slope`` elsewhere, the convention of ops)."""
    slopes = {
        "tanh": lambda h: 1 - h * h,
        "sigmoid": lambda h: h * (1 - h),
        "relu": lambda h: (h > 0).astype(float),
        "leaky_relu": lambda h: np.where(h > 0, 1.0, leaky_slope),  # never exactly 0
        "linear": lambda h: np.ones_like(h),
    }
    if activation not in slopes:
        raise ValueError(f"unknown activation {activation!r}; choose from {sorted(slopes)}")
    return slopes[activation](np.asarray(h, dtype=float))


def saturated_fraction(activation, h, level=SATURATION_LEVEL):
    """Fraction of entries in the flat tails (see the module docstring), or None."""
    h = np.asarray(h, dtype=float)
    if activation == "tanh":
        return float(np.mean(np.abs(h) > level))
    if activation == "sigmoid":
        return float(np.mean(np.abs(2 * h - 1) > level))
    return None


def dead_fraction(activation, h):
    """Fraction of units (columns of h) with local slope exactly 0 on every example (row)."""
    h = np.asarray(h, dtype=float).reshape(-1, np.shape(h)[-1])
    return float(np.mean(np.all(local_slope(activation, h) == 0, axis=0)))


def layer_report(weights, grads, activations, activation, lr):
    """One LayerStats per layer. `weights`, `grads` and `activations` are lists with one array
    per layer (W_l, dL/dW_l, h_l); `activation` is a name, or a list of names per layer."""
    names = [activation] * len(weights) if isinstance(activation, str) else list(activation)
    if not len(weights) == len(grads) == len(activations) == len(names):
        raise ValueError(
            f"one entry per layer: {len(weights)} weights, {len(grads)} grads, "
            f"{len(activations)} activations, {len(names)} activation names"
        )
    rows = []
    for layer, (W, g, h, name) in enumerate(zip(weights, grads, activations, names, strict=True), start=1):
        h = np.asarray(h, dtype=float)
        grad_norm = float(np.linalg.norm(g))
        rows.append(
            LayerStats(
                layer=layer,
                activation=name,
                grad_norm=grad_norm,
                update_ratio=lr * grad_norm / float(np.linalg.norm(W)),
                saturated=saturated_fraction(name, h),
                dead=dead_fraction(name, h),
                mean=float(h.mean()),
                std=float(h.std()),
            )
        )
    return rows


def format_row(row, number_width=2, name_width=4):
    saturated = "n/a" if row.saturated is None else f"{row.saturated:.1%}"
    return (
        f"layer {row.layer:>{number_width}} ({row.activation}):{'':<{name_width - len(row.activation)}} "
        f"grad {row.grad_norm:>7.1e}, update/weight {row.update_ratio:>7.1e}, "
        f"saturated {saturated:>6}, dead {row.dead:>6.1%}, mean {row.mean:+6.2f}, std {row.std:5.2f}"
    )


def format_report(rows):
    """The rows as aligned lines: every field starts in the same column on every line."""
    number_width = max(len(str(row.layer)) for row in rows)
    name_width = max(len(row.activation) for row in rows)
    return "\n".join(format_row(row, number_width, name_width) for row in rows)


def per_layer_factor(values):
    """The geometric mean of the ratios values[l] / values[l - 1] between consecutive layers,
    (values[-1] / values[0]) ** (1 / (L - 1)) for L layers: the factor by which a per-layer
    statistic (a variance, a gradient norm) is multiplied per layer, on average."""
    return float((values[-1] / values[0]) ** (1 / (len(values) - 1)))
