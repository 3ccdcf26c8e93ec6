"""Central differences and the complex step with every perturbed input in one batched evaluation.

`numerical.central_difference` and `numerical.complex_step` call f once per perturbed entry (2n
and n calls). Where f can be evaluated on a stack of inputs at once, ``values(X)`` with one input
per row of X, these functions build all perturbed inputs as rows and evaluate them in one call. The
formulas are `numerical`'s, operation for operation: step h_k = eps^(1/3) max(1, |x_k|) (or a
given h), the step actually taken (x_k + h_k) - (x_k - h_k) as the divisor, Im f(x + i h e_k) / h.
So the results equal `numerical`'s bit for bit whenever row k of ``values(X)`` equals, bit for bit,
f of row k alone (true for elementwise operations, sums along a row, and numpy's matmul of a
(rows, 1, n) stack, which runs one matrix-vector product per row; see tests/test_row_checks.py).
"""

import numpy as np

from . import numerical


def central_by_rows(values, x, h=None):
    """(values(x + h_k e_k) - values(x - h_k e_k)) / (2 h_k) for every entry k of the 1-D x."""
    x = np.array(x, dtype=np.float64)
    step = numerical.default_step(x.dtype) * np.maximum(1.0, np.abs(x)) if h is None else np.float64(h)
    plus, minus = x + step, x - step
    rows = np.tile(x, (2 * x.size, 1))
    index = np.arange(x.size)
    rows[index, index], rows[x.size + index, index] = plus, minus
    value = values(rows)
    return (value[: x.size] - value[x.size :]) / (plus - minus)


def complex_step_by_rows(values, x, h=1e-20):
    """Im values(x + i h e_k) / h for every entry k of the 1-D float64 x."""
    x = np.array(x, dtype=np.complex128)
    rows = np.tile(x, (x.size, 1))
    index = np.arange(x.size)
    rows[index, index] = x + 1j * h
    return values(rows).imag / h
