"""ops: one definition runs on Tensor, Dual, real and complex arrays, with the same conventions."""

import numpy as np
import pytest
import strategies as S
from gradlab import engine, forward, numerical, ops
from gradlab.engine import Tensor
from gradlab.forward import Dual
from hypothesis import given, settings
from hypothesis import strategies as st

UNARY = {
    "exp": ops.exp,
    "log": ops.log,
    "sqrt": ops.sqrt,
    "tanh": ops.tanh,
    "sigmoid": ops.sigmoid,
    "relu": ops.relu,
    "leaky_relu": lambda x: ops.leaky_relu(x, 0.1),
    "abs": ops.abs,
    "clip": lambda x: ops.clip(x, -1.0, 0.5),
    "softmax": ops.softmax,
    "log_softmax": ops.log_softmax,
    "sum": lambda x: ops.sum(x, axis=0),
    "mean": ops.mean,
}
NEEDS_POSITIVE = {"log", "sqrt"}


def inputs_for(name, shape):
    if name in NEEDS_POSITIVE:
        return S.positive(shape)
    if name == "clip":  # keep away from the bounds -1 and 0.5 (and from 0, harmlessly)
        return S.away_from_zero(shape, 0.1, 0.4).map(lambda x: np.where(x < 0, x * 5, x))
    return S.away_from_zero(shape)


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_same_values_and_derivatives_on_every_type(name, data):
    fn = UNARY[name]
    x = data.draw(S.shapes.filter(lambda s: len(s) >= 1).flatmap(lambda s: inputs_for(name, s)))
    v = data.draw(S.arrays(x.shape))  # a tangent direction
    value = fn(x)
    assert isinstance(value, (np.ndarray, np.floating))
    np.testing.assert_allclose(fn(Tensor(x)).data, value, rtol=1e-14, atol=1e-15)
    dual = fn(Dual(x, v))
    np.testing.assert_allclose(dual.val, value, rtol=1e-14, atol=1e-15)
    # complex step on the numpy version: Im f(x + i h v) / h = directional derivative
    h = 1e-20
    complex_value = fn(x + 1j * h * v)
    np.testing.assert_allclose(complex_value.real, value, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(complex_value.imag / h, dual.tan, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", [ops.maximum, ops.minimum])
@settings(max_examples=25, deadline=None)
@given(pair=S.shapes.flatmap(S.separated_pair))
def test_binary_kinked_ops_agree(fn, pair):
    a, b = pair
    loss = lambda p: ops.sum(fn(p[0], p[1]) * np.arange(1.0, a.size + 1).reshape(a.shape))  # noqa: E731
    reverse = engine.grad(loss, [a, b])
    for method in (forward.grad, numerical.complex_step):
        for r, other in zip(reverse, method(loss, [a, b]), strict=True):
            np.testing.assert_allclose(r, other, rtol=1e-13)


KINKS = {
    "relu at 0": (lambda p: ops.relu(p[0]), [np.array([0.0])]),
    "leaky_relu at 0": (lambda p: ops.leaky_relu(p[0], 0.1), [np.array([0.0])]),
    "abs at 0": (lambda p: ops.abs(p[0]), [np.array([0.0])]),
    "clip at lo": (lambda p: ops.clip(p[0], 0.0, 1.0), [np.array([0.0])]),
    "clip at hi": (lambda p: ops.clip(p[0], -1.0, 0.0), [np.array([0.0])]),
    "maximum tie": (lambda p: ops.maximum(p[0], p[1]), [np.array([1.0]), np.array([1.0])]),
    "minimum tie": (lambda p: ops.minimum(p[0], p[1]), [np.array([1.0]), np.array([1.0])]),
}
EXPECTED_AT_KINK = {
    "relu at 0": [0.0],
    "leaky_relu at 0": [0.1],
    "abs at 0": [0.0],
    "clip at lo": [0.0],
    "clip at hi": [0.0],
    "maximum tie": [1.0, 0.0],
    "minimum tie": [1.0, 0.0],
}


@pytest.mark.parametrize("name", sorted(KINKS))
def test_kink_conventions_are_the_same_for_exact_methods(name):
    fn, params = KINKS[name]
    loss = lambda p: ops.sum(fn(p))  # noqa: E731
    for method in (engine.grad, forward.grad, numerical.complex_step):
        grads = method(loss, params)
        got = [float(g[0]) for g in grads]
        assert got == pytest.approx(EXPECTED_AT_KINK[name], rel=1e-15), method.__module__


def test_where_dispatches_and_routes_gradients():
    condition = np.array([True, False, True])
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-1.0, -2.0, -3.0])
    np.testing.assert_array_equal(ops.where(condition, a, b), [1.0, -2.0, 3.0])
    loss = lambda p: ops.sum(ops.where(condition, p[0], p[1]) * p[0])  # noqa: E731
    ga, gb = engine.grad(loss, [a, b])
    np.testing.assert_array_equal(ga, [2.0, -2.0, 6.0])
    np.testing.assert_array_equal(gb, [0.0, 2.0, 0.0])
    for method in (forward.grad, numerical.complex_step):
        fa, fb = method(loss, [a, b])
        np.testing.assert_allclose(fa, ga, rtol=1e-14)
        np.testing.assert_allclose(fb, gb, rtol=1e-14)


def test_dispatch_returns_the_input_type():
    x = np.array([[0.5, -1.0]])
    assert isinstance(ops.tanh(Tensor(x)), Tensor)
    assert isinstance(ops.tanh(Dual(x)), Dual)
    assert isinstance(ops.maximum(x, Tensor(x)), Tensor)
    assert isinstance(ops.maximum(0.0, Dual(x)), Dual)
    assert isinstance(ops.linear(x, Tensor(np.ones((2, 3))), np.zeros(3)), Tensor)
    assert ops.tanh(x.astype(complex)).dtype == np.complex128
    assert ops.relu(x.astype(np.float32)).dtype == np.float32


def test_numpy_matmul_checks_shapes():
    with pytest.raises(ValueError, match=r"matmul: shapes \(3, 4\) and \(5, 2\) do not align"):
        ops.matmul(np.ones((3, 4)), np.ones((5, 2)))


def test_softmax_is_stable_for_large_inputs():
    x = np.array([1000.0, 1001.0, 999.0])
    for result in (ops.softmax(x), ops.softmax(Tensor(x)).data, ops.softmax(Dual(x)).val):
        np.testing.assert_allclose(result.sum(), 1.0)
        assert np.all(np.isfinite(result))
    np.testing.assert_allclose(ops.log_softmax(x), x - 1001.0 - np.log(np.exp([-1, 0, -2]).sum()))


def _reference_sigmoid(x, digits=50):
    """1 / (1 + e^-x) for the float x, in `digits`-digit decimal arithmetic, rounded once."""
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = digits
        return float(1 / (1 + (-Decimal(float(x))).exp()))


def test_sigmoid_is_accurate_to_1e_15_on_both_sides_without_warnings():
    """Against a 50-digit reference on [-700, 700]: (1 + tanh(x/2)) / 2 fails this (4% off at
    x = -36, exactly 0 at -40); 1 / (1 + e^-x) alone would overflow for x < -709."""
    z = np.concatenate([np.linspace(-700, 700, 2801), [-40.0, -36.0, -30.0, -1e-300, 0.0, 1e-300]])
    reference = np.array([_reference_sigmoid(x) for x in z])
    with np.errstate(all="raise"):
        computed = ops.sigmoid(z)
    assert np.max(np.abs(computed - reference) / reference) <= 1e-15
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # e^-1000 underflows, harmlessly
        assert ops.sigmoid(np.array([-1000.0, 1000.0])).tolist() == [0.0, 1.0]


def test_sigmoid_complex_step_branches_on_the_real_part():
    """Im sigmoid(x + ih) / h = sigmoid'(x) = e^-|x| / (1 + e^-|x|)^2 on both branches, also
    where sigmoid(x) itself rounds to 1.0 (x = 37)."""
    x = np.array([-37.0, -5.0, 0.0, 5.0, 37.0])
    (derivative,) = numerical.complex_step(lambda p: ops.sum(ops.sigmoid(p[0])), [x])
    expected = np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))) ** 2
    np.testing.assert_allclose(derivative, expected, rtol=1e-14)
    assert isinstance(ops.sigmoid(3.0), np.floating) and ops.sigmoid(np.float32(3.0)).dtype == np.float32
