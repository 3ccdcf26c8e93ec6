"""Gradient checks in float32 arithmetic: the complex step in complex64.

``numerical.complex_step`` insists on float64 parameters (its error analysis is float64's); a
float32 check needs the same rule evaluated in complex64, where the only error left is the
rounding of f itself, about float32's machine epsilon.
"""

import numpy as np


def complex_step32(f, params, h=1e-20):
    """df/dx_k = Im f(x + i h e_k) / h with x in complex64, one evaluation per entry.

    ``params`` are float32 arrays; the gradients are returned as float64 arrays (the quotient of
    a complex64 imaginary part by h, widened), one per parameter.
    """
    grads = [np.zeros(p.shape) for p in params]
    for i, k in ((i, k) for i, p in enumerate(params) for k in range(p.size)):
        q = [p.astype(np.complex64) for p in params]
        q[i].flat[k] += np.complex64(1j * h)
        grads[i].flat[k] = np.imag(f(q)) / h
    return grads
