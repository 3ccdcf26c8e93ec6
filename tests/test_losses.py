"""losses: closed forms, naive and stable programs agree where the naive one is finite, and
every method differentiates them alike."""

import decimal

import numpy as np
import pytest
import strategies as S
from gradlab import check, engine, losses, ops
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

logit_rows = hnp.array_shapes(min_dims=1, max_dims=2, min_side=2, max_side=5)


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def labels_for(shape):
    """One integer label per row of logits of this shape."""
    return hnp.arrays(np.int64, shape[:-1], elements=st.integers(0, shape[-1] - 1))


@settings(max_examples=50, deadline=None)
@given(r=S.arrays((6,), -5.0, 5.0), delta=st.floats(0.1, 3.0))
def test_huber_closed_form_and_bounded_derivative(r, delta):
    expected = np.where(np.abs(r) <= delta, 0.5 * r**2, delta * (np.abs(r) - 0.5 * delta))
    np.testing.assert_allclose(losses.huber(r, delta), expected, rtol=1e-12, atol=1e-15)
    (gradient,) = engine.grad(lambda p: ops.sum(losses.huber(p[0], delta)), [r])
    np.testing.assert_allclose(gradient, np.clip(r, -delta, delta), rtol=1e-12, atol=1e-15)
    (gradient,) = engine.grad(lambda p: ops.sum(losses.squared_error(p[0])), [r])
    np.testing.assert_allclose(gradient, r, rtol=1e-12, atol=1e-15)


@settings(max_examples=50, deadline=None)
@given(z=S.arrays((5,), -20.0, 20.0), y=hnp.arrays(bool, (5,)))
def test_logit_losses_closed_form_derivatives(z, y):
    y = y.astype(float)
    s = sigmoid(z)
    expected = np.logaddexp(0, z) - y * z  # log(1 + e^z) - y z, numpy's stable reference
    np.testing.assert_allclose(
        losses.binary_cross_entropy_from_logits(z, y), expected, rtol=1e-12, atol=1e-14
    )
    (gradient,) = engine.grad(lambda p: ops.sum(losses.binary_cross_entropy_from_logits(p[0], y)), [z])
    np.testing.assert_allclose(gradient, s - y, rtol=1e-9, atol=1e-12)  # the sigmoid's slope cancels
    (gradient,) = engine.grad(lambda p: ops.sum(losses.sigmoid_squared_error(p[0], y)), [z])
    np.testing.assert_allclose(gradient, 2 * (s - y) * s * (1 - s), rtol=1e-6, atol=1e-15)


def test_binary_cross_entropy_stays_finite_for_huge_logits():
    z = np.array([-1000.0, 1000.0])
    np.testing.assert_allclose(losses.binary_cross_entropy_from_logits(z, np.array([1.0, 0.0])), 1000.0)


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_naive_and_stable_agree_where_naive_is_finite(data):
    shape = data.draw(logit_rows)
    scale = data.draw(st.sampled_from([1.0, 30.0, 300.0, 800.0]))
    z = data.draw(S.arrays(shape)) * scale
    labels = data.draw(labels_for(shape))
    # each pair with the log of the smallest sum the naive program forms (softmax: none it logs,
    # but a row whose sum of exponentials overflows divides finite terms by inf: 0, finite and wrong)
    with np.errstate(over="ignore"):
        sum_finite = np.isfinite(np.exp(z).sum(-1, keepdims=True))
    pairs = [
        (losses.naive_softmax, losses.stable_softmax, lambda v: np.where(sum_finite, 0.0, -np.inf) + 0 * v),
        (losses.naive_logsumexp, losses.stable_logsumexp, lambda v: v),
        (losses.naive_log_softmax, losses.stable_log_softmax, lambda v: v),
        (
            lambda x: losses.naive_cross_entropy(x, labels),
            lambda x: losses.stable_cross_entropy(x, labels),
            lambda v: -v,  # the loss is -log p
        ),
    ]
    for naive, stable, log_p in pairs:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            naive_value = naive(z)
        stable_value = stable(z)
        assert np.all(np.isfinite(stable_value[np.isfinite(stable_value)]))
        # where the naive program's probability is subnormal (log p below log(tiny), about -708)
        # it has lost relative precision before the log: agreement is only claimed above that
        # (the cross-entropy -log p of z = (487.5, -243.75), label 1, is 731.25: p is subnormal)
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(naive_value) & (log_p(naive_value) > np.log(np.finfo(np.float64).tiny))
        # absolute error a few eps times the logits' size: log(p) of a p near 1 cancels in the
        # naive program, so relative agreement of tiny log-probabilities is too strict
        atol = 1e-14 * (1 + np.abs(z).max())
        np.testing.assert_allclose(naive_value[finite], stable_value[finite], rtol=1e-12, atol=atol)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_stable_programs_finite_at_any_scale(data):
    shape = data.draw(logit_rows)
    z = data.draw(S.arrays(shape)) * 1e300
    labels = data.draw(labels_for(shape))
    assert np.all(np.isfinite(losses.stable_softmax(z)))
    assert np.all(np.isfinite(losses.stable_logsumexp(z)))
    assert np.all(np.isfinite(losses.stable_cross_entropy(z, labels)))
    np.testing.assert_allclose(losses.stable_softmax(z).sum(axis=-1), 1.0, rtol=1e-12)


PROGRAMS = {
    "naive_softmax": lambda z, labels: ops.sum(losses.naive_softmax(z) ** 2),
    "stable_softmax": lambda z, labels: ops.sum(losses.stable_softmax(z) ** 2),
    "naive_logsumexp": lambda z, labels: ops.sum(losses.naive_logsumexp(z)),
    "stable_logsumexp": lambda z, labels: ops.sum(losses.stable_logsumexp(z)),
    "naive_cross_entropy": lambda z, labels: ops.sum(losses.naive_cross_entropy(z, labels)),
    "stable_cross_entropy": lambda z, labels: ops.sum(losses.stable_cross_entropy(z, labels)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_every_method_agrees_on_every_program(name, data):
    shape = data.draw(logit_rows)
    z = data.draw(S.arrays(shape, -5.0, 5.0))
    labels = data.draw(labels_for(shape))
    check.assert_gradients_close(lambda p: PROGRAMS[name](p[0], labels), [z], rtol=1e-6, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_cross_entropy_gradient_is_softmax_minus_one_hot(data):
    shape = data.draw(logit_rows)
    z = data.draw(S.arrays(shape)) * 500.0
    labels = data.draw(labels_for(shape))
    (gradient,) = engine.grad(lambda p: ops.sum(losses.stable_cross_entropy(p[0], labels)), [z])
    one_hot = np.eye(shape[-1])[labels]
    np.testing.assert_allclose(gradient, losses.stable_softmax(z) - one_hot, rtol=1e-12, atol=1e-15)


def test_naive_cross_entropy_gradient_is_nan_past_overflow():
    z = np.array([800.0, 0.0, -800.0])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        (gradient,) = engine.grad(lambda p: ops.sum(losses.naive_cross_entropy(p[0], 0)), [z])
    assert np.isnan(gradient).all()


def softplus_reference(x):
    """log(1 + e^x) in 400-digit decimal arithmetic (1 + e^-745 needs 324 digits), as float64."""
    with decimal.localcontext() as context:
        context.prec = 400
        return float((1 + decimal.Decimal(float(x)).exp()).ln())


@pytest.mark.parametrize("y", [0.0, 1.0])
def test_binary_cross_entropy_matches_a_high_precision_reference(y):
    z = np.concatenate([np.linspace(-60, 60, 61), [-745.0, -700.0, -1e-300, 0.0, 1e-300, 700.0, 745.0]])
    expected = np.array([softplus_reference(-t if y == 1.0 else t) for t in z])
    got = losses.binary_cross_entropy_from_logits(z, np.full_like(z, y))
    np.testing.assert_allclose(got, expected, rtol=4e-16, atol=0)


def test_the_naive_binary_cross_entropy_rounds_a_confident_loss_to_zero():
    z, y = np.array([50.0]), np.array([1.0])
    assert losses.naive_binary_cross_entropy_from_logits(z, y)[0] == 0.0
    assert losses.binary_cross_entropy_from_logits(z, y)[0] == pytest.approx(np.exp(-50.0), rel=1e-15)


def test_the_naive_binary_cross_entropy_computes_in_the_logits_precision():
    """float32 logits give a float32 loss (a float64 constant used to promote it): at z = 15,
    z + e^-z rounds to z in float32 (e^-15 is below half the spacing 2^-20), not in float64."""
    z, y = np.array([15.0], dtype=np.float32), np.array([1.0])
    got = losses.naive_binary_cross_entropy_from_logits(z, y)
    assert got.dtype == np.float32 and got[0] == 0.0
    assert losses.naive_binary_cross_entropy_from_logits(z.astype(np.float64), y)[0] > 0.0


def test_binary_cross_entropy_derivative_at_zero_is_the_functions():
    z, y = np.array([0.0, 0.0, 1e-3]), np.array([1.0, 0.0, 1.0])
    check.assert_gradients_close(
        lambda p: ops.sum(losses.binary_cross_entropy_from_logits(p[0], y)), [z], rtol=1e-6, atol=1e-12
    )
    (gradient,) = engine.grad(lambda p: ops.sum(losses.binary_cross_entropy_from_logits(p[0], y)), [z])
    np.testing.assert_allclose(gradient, sigmoid(z) - y, rtol=1e-12)


def test_log1p_under_every_method():
    x = np.array([1e-20, 0.5, 3.0])
    assert losses.log1p(x)[0] == 1e-20
    check.assert_gradients_close(lambda p: ops.sum(losses.log1p(p[0])), [x], rtol=1e-7)
