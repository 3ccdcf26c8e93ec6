"""gradlab.batched_check: every perturbed set at once, the same numbers as gradlab.numerical."""

import functools

import numpy as np
import pytest
from gradlab import batched_check, models, numerical, ops


def loss(p, X, y):
    return ops.mean((models.mlp(p, X, "tanh") - y) ** 2)


def network(dtype, seed=0, sizes=(4, 5, 5, 1)):
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(16, sizes[0])), rng.normal(size=(16, 1))
    params = models.init_mlp(list(sizes), "glorot", rng)
    params[1] += rng.normal(size=params[1].shape)  # a bias that is not 0, and entries above 1
    params[2][0, 0] = 3.5
    return [p.astype(dtype) for p in params], X.astype(dtype), y.astype(dtype)


def same(got, expected):
    return all(
        g.dtype == e.dtype and np.array_equal(g, e, equal_nan=True)
        for g, e in zip(got, expected, strict=True)
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("h", [None, 1.0, 1e-3, 1e-6, 1e-10])
def test_central_difference_is_numericals_bit_for_bit(dtype, h):
    params, X, y = network(dtype)
    expected = numerical.central_difference(functools.partial(loss, X=X, y=y), params, h=h)
    assert same(batched_check.central_difference(batched_check.mlp_mse(X, y), params, h=h), expected)


@pytest.mark.parametrize("h", [1e-20, 1e-5, 1e-200])
def test_complex_step_is_numericals_bit_for_bit(h):
    params, X, y = network(np.float64, seed=1, sizes=(4, 8, 8, 1))
    expected = numerical.complex_step(functools.partial(loss, X=X, y=y), params, h=h)
    assert same(batched_check.complex_step(batched_check.mlp_mse(X, y), params, h=h), expected)


def test_a_quadratic_has_its_exact_gradient():
    params = [np.array([[1.0, -2.0], [0.5, 3.0]]), np.array([0.25])]
    f_stacked = lambda s: np.sum(s[0] ** 2, axis=(1, 2)) + 3 * s[1][:, 0]  # noqa: E731
    grads = batched_check.complex_step(f_stacked, params)
    np.testing.assert_allclose(grads[0], 2 * params[0], rtol=1e-15)
    np.testing.assert_allclose(grads[1], [3.0], rtol=1e-15)
