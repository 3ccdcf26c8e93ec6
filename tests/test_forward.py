"""Forward mode: dual-number rules, the n-pass driver, and agreement with central differences."""

import numpy as np
import pytest
import strategies as S
from gradlab import engine, flops, forward, models, numerical, ops
from gradlab.forward import Dual
from hypothesis import given, settings


def test_tangent_of_a_fork():
    """d(x * x + x) = (2x + 1) dx, with dx = 1."""
    x = Dual(np.array([-1.5, 0.0, 2.0]), np.ones(3))
    y = x * x + x
    np.testing.assert_array_equal(y.val, x.val**2 + x.val)
    np.testing.assert_array_equal(y.tan, 2 * x.val + 1)


def test_tangent_is_a_directional_derivative():
    """tan of f(x + t v) at t = 0 is grad f . v."""
    rng = np.random.default_rng(0)
    x, v = rng.normal(size=4), rng.normal(size=4)
    out = ops.sum(ops.tanh(Dual(x, v)) ** 2)
    np.testing.assert_allclose(out.tan, np.sum(2 * np.tanh(x) * (1 - np.tanh(x) ** 2) * v))


@settings(max_examples=25, deadline=None)
@given(S.shapes.flatmap(S.away_from_zero))
def test_grad_matches_central_difference(x):
    def loss(p):
        y = ops.leaky_relu(p[0] * 1.5, 0.2) + ops.sigmoid(p[0]) * ops.abs(p[0])
        return ops.mean(ops.exp(y) / (1 + p[0] ** 2))

    (fwd,), (cen,) = forward.grad(loss, [x]), numerical.central_difference(loss, [x])
    np.testing.assert_allclose(fwd, cen, rtol=1e-6, atol=1e-9)


def test_one_pass_per_parameter_entry():
    rng = np.random.default_rng(1)
    params = models.init_mlp([3, 4, 2], "glorot", rng)
    X = rng.normal(size=(5, 3))
    with flops.counting() as counter:
        forward.grad(lambda p: ops.mean(models.mlp(p, X) ** 2), params)
    assert counter.calls == sum(p.size for p in params) == 26


def test_kink_conventions_match_the_engine():
    zero, one = np.array([0.0]), np.array([1.0])
    assert Dual(zero, one).relu().tan[0] == 0.0
    assert Dual(zero, one).abs().tan[0] == 0.0
    assert Dual(zero, one).leaky_relu(0.1).tan[0] == np.float64(0.1)
    assert Dual(zero, one).clip(0.0, 1.0).tan[0] == 0.0
    assert Dual(one, one).maximum(Dual(one, 2 * one)).tan[0] == 1.0  # tie: first argument
    assert Dual(one, one).minimum(Dual(one, 2 * one)).tan[0] == 1.0


def test_float32_kept():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    d = Dual(x, np.ones_like(x))
    y = ((d * 2.0 + 1).tanh() @ np.ones((3, 2), np.float32)).softmax().mean()
    assert y.val.dtype == y.tan.dtype == np.float32
    g = forward.grad(lambda p: ops.sum(ops.sigmoid(p[0]) ** 2), [x])[0]
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, engine.grad(lambda p: ops.sum(ops.sigmoid(p[0]) ** 2), [x])[0], rtol=1e-5)


def test_errors():
    with pytest.raises(ValueError, match=r"matmul: shapes \(3, 4\) and \(5, 2\) do not align"):
        Dual(np.ones((3, 4))) @ np.ones((5, 2))
    with pytest.raises(TypeError, match="cannot mix"):
        Dual(np.ones(2)) + engine.Tensor(np.ones(2))
    with pytest.raises(TypeError, match="scalar Dual"):
        forward.grad(lambda p: p[0] * 2, [np.ones(2)])


def test_sigmoid_tangent_survives_where_the_value_rounds_to_one():
    """The tangent uses sigmoid(x) sigmoid(-x), so it is e^-37 / (1 + e^-37)^2, not 0, at x = 37."""
    x = np.array([-37.0, 37.0])
    tangent = Dual(x, np.ones(2)).sigmoid().tan
    np.testing.assert_allclose(tangent, np.exp(-37.0) / (1 + np.exp(-37.0)) ** 2, rtol=1e-14)
    np.testing.assert_array_equal(tangent, engine.grad(lambda p: ops.sum(ops.sigmoid(p[0])), [x])[0])
