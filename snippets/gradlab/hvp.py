"""Hessian-vector products from a gradient function, without forming the Hessian.

Pearlmutter (1994, "Fast exact multiplication by the Hessian", Neural Computation 6(1)) gets
H v exactly as the directional derivative of the gradient, d/dr grad f(x + r v) at r = 0, by
running forward mode over reverse mode (the R-operator): about the cost of one more gradient.
Forward-over-reverse needs a reverse mode that runs on dual numbers; this project's engine
accepts only real floating-point arrays (a Dual or a complex array is a TypeError), so it cannot
be done here, and neither can the complex step of the gradient. `hessian_vector_product` takes
that same directional derivative by CENTRAL DIFFERENCES of the reverse-mode gradient instead:

    H v ~ (grad f(x + h v) - grad f(x - h v)) / (2 h),

two gradient evaluations, exact for a quadratic up to rounding, with truncation error
O(h^2 |d^3 f|) otherwise.
"""

import numpy as np


def hessian_vector_product(fun, x, v, h=1e-5):
    """H(x) v by central differences of `fun(x) -> (f(x), grad f(x))` along v; the step is
    h / |v| along v, so h is the step in x. Two evaluations of `fun`."""
    x, v = np.asarray(x, dtype=float), np.asarray(v, dtype=float)
    norm = float(np.linalg.norm(v))
    if norm == 0:
        return np.zeros_like(x)
    step = h / norm
    return (fun(x + step * v)[1] - fun(x - step * v)[1]) / (2 * step)


def curvature_along(fun, x, v, h=1e-5):
    """v^T H v / v^T v: the curvature of f along the direction v (negative: f is concave there)."""
    v = np.asarray(v, dtype=float)
    return float(v @ hessian_vector_product(fun, x, v, h) / (v @ v))
