"""The complex step in complex64: float32 accuracy, no rounding of a difference."""

import numpy as np
from gradlab import float32_check, ops


def test_complex_step32_matches_a_known_gradient_to_float32_rounding():
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=4).astype(np.float32)

    def f(params):
        return ops.sum(ops.tanh(params[0] @ params[1]))

    gx, gw = float32_check.complex_step32(f, [x, w])
    slope = 1 - np.tanh(x.astype(np.float64) @ w.astype(np.float64)) ** 2
    exact_x, exact_w = np.outer(slope, w.astype(np.float64)), slope @ x.astype(np.float64)
    eps32 = np.finfo(np.float32).eps
    assert gx.dtype == gw.dtype == np.float64 and gx.shape == x.shape and gw.shape == w.shape
    for got, exact in ((gx, exact_x), (gw, exact_w)):
        error = np.linalg.norm(got - exact) / np.linalg.norm(exact)
        assert 0 < error < 20 * eps32  # float32 rounding of f, not float64's, and no cancellation


def test_complex_step32_does_not_touch_its_inputs():
    x = np.arange(3, dtype=np.float32)
    float32_check.complex_step32(lambda p: ops.sum(p[0] ** 2), [x])
    assert x.dtype == np.float32 and np.array_equal(x, np.arange(3, dtype=np.float32))
