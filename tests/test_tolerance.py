"""gradlab.tolerance: the mixed test and the random-direction check."""

import numpy as np
import pytest
from gradlab import ops
from gradlab.tolerance import all_close, directional_check, mixed_close, random_direction


def test_mixed_close_is_numpy_isclose():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=50), rng.normal(size=50) * np.logspace(-12, 3, 50)
    a = b + rng.normal(size=50) * 1e-6
    np.testing.assert_array_equal(mixed_close(a, b, 1e-5, 1e-8), np.isclose(a, b, rtol=1e-5, atol=1e-8))


def test_pure_relative_fails_a_tiny_entry_that_the_mixed_test_passes():
    reference = [np.array([1.0, 1e-9])]
    noisy = [np.array([1.0 + 1e-12, 1e-9 + 1e-11])]  # rounding-level noise, 1e-2 relative on the tiny one
    assert not all_close(noisy, reference, rtol=1e-6, atol=0.0)
    assert all_close(noisy, reference, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError):
        all_close(noisy, reference + reference, 1e-6, 0.0)


def test_directional_check_agrees_on_a_correct_gradient_and_catches_a_wrong_one():
    def f(p):
        return ops.sum(ops.tanh(p[0]) ** 2) + ops.sum(p[1] ** 3)

    rng = np.random.default_rng(1)
    params = [rng.normal(size=(3, 2)), rng.normal(size=4)]
    v = random_direction(params, rng)
    assert np.isclose(sum(np.sum(x**2) for x in v), 1.0)
    slope, dot = directional_check(f, params, v)
    assert abs(slope - dot) <= 1e-8 * max(1.0, abs(dot))
    exact = [2 * np.tanh(params[0]) * (1 - np.tanh(params[0]) ** 2), 3 * params[1] ** 2]
    wrong = [exact[0], exact[1].copy()]
    wrong[1][2] *= 1.5  # one wrong entry
    slope, dot = directional_check(f, params, v, grads=wrong)
    assert abs(slope - dot) > 1e-3 * abs(slope)
