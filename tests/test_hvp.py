"""hvp: Hessian-vector products by central differences of the reverse-mode gradient."""

import numpy as np
import pytest
from gradlab import hvp, ops, optim


def test_exact_for_a_quadratic_up_to_rounding():
    A = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, -0.5], [0.0, -0.5, 4.0]])
    fun = optim.reverse_mode(lambda p: 0.5 * (p[0] @ (A @ p[0])))
    v = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(hvp.hessian_vector_product(fun, [1.0, 2.0, -3.0], v), A @ v, rtol=1e-9)


@pytest.mark.parametrize("x", [[0.3, -0.2], [3.0, 0.0], [1.0, 1.0]])
def test_gaussian_well_matches_the_hand_derived_hessian(x):
    """f = 1 - exp(-|x|^2): H = e^{-|x|^2} (2 I - 4 x x^T)."""
    fun = optim.reverse_mode(lambda p: 1 - ops.exp(-ops.sum(p[0] * p[0])))
    x = np.array(x)
    exact = np.exp(-x @ x) * (2 * np.eye(2) - 4 * np.outer(x, x))
    for v in np.eye(2):
        np.testing.assert_allclose(hvp.hessian_vector_product(fun, x, v), exact @ v, rtol=1e-6, atol=1e-12)
    radial = x / np.linalg.norm(x)
    assert hvp.curvature_along(fun, x, radial) == pytest.approx(radial @ exact @ radial, rel=1e-6)


def test_zero_direction_gives_zero():
    fun = optim.reverse_mode(lambda p: ops.sum(p[0] ** 3))
    np.testing.assert_array_equal(hvp.hessian_vector_product(fun, [1.0, 2.0], [0.0, 0.0]), [0.0, 0.0])
