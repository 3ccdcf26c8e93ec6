"""gradlab.sweep: evaluation along a ray, relative error, and the bisection for the finite range."""

import numpy as np
from gradlab.sweep import evaluate, largest_finite_scale, relative_error


def test_largest_finite_scale_of_exp_is_log_of_the_largest_float():
    grid = np.logspace(-1, 4, 50)
    for dtype in (np.float32, np.float64):
        limit = largest_finite_scale(np.exp, [1.0], dtype, grid)
        assert np.isclose(limit, np.log(np.float64(np.finfo(dtype).max)), rtol=1e-6)
    assert largest_finite_scale(np.tanh, [1.0], np.float64, grid) == grid[-1]


def test_relative_error_and_evaluate():
    assert relative_error(np.array([np.inf]), np.array([1.0])) == np.inf
    assert relative_error(np.array([2.0]), np.array([0.0])) == 2.0
    assert np.isclose(relative_error(np.array([1.1, 0.0]), np.array([1.0, 0.0])), 0.1)
    assert evaluate(np.exp, 1000.0, [1.0], np.float32)[0] == np.inf
