"""Relative error and the cross-method gradient check."""

import numpy as np
import pytest
import strategies as S
from gradlab import check, ops
from hypothesis import given, settings


def test_rel_error_values():
    np.testing.assert_array_equal(check.rel_error([0.0, 1.0, -2.0], [0.0, 1.0, 2.0]), [0, 0, 2])
    assert check.rel_error(1.0, 1.1) == pytest.approx(0.1 / 1.1)
    assert check.rel_error(1e-300, 0.0) == 1.0


def test_a_non_finite_gradient_agrees_with_nothing():
    """NaN and inf give NaN (np.maximum(nan, 1) is NaN, and a NaN scale once made the entry 0:
    a NaN gradient passed every check), and max_rel_error reports it whatever its position."""
    error = check.rel_error([np.nan, 1.0, np.inf, np.inf, 0.0], [1.0, np.nan, 1.0, np.inf, 0.0])
    np.testing.assert_array_equal(np.isnan(error), [True, True, True, True, False])
    assert not check.rel_error(np.nan, np.nan) < 1e-10
    for grads in ([np.array([np.nan]), np.array([0.5])], [np.array([0.5]), np.array([np.nan])]):
        assert np.isnan(check.max_rel_error(grads, [np.array([1.0]), np.array([1.0])]))


@settings(max_examples=25, deadline=None)
@given(S.shapes.flatmap(lambda s: S.arrays(s).flatmap(lambda a: S.arrays(s).map(lambda b: (a, b)))))
def test_rel_error_is_symmetric_and_bounded(pair):
    a, b = pair
    error = check.rel_error(a, b)
    np.testing.assert_array_equal(error, check.rel_error(b, a))
    assert np.all((error >= 0) & (error <= 2))


def test_max_rel_error_over_lists():
    a = [np.array([1.0, 2.0]), np.array(3.0)]
    b = [np.array([1.0, 2.2]), np.array(3.0)]
    assert check.max_rel_error(a, b) == pytest.approx(0.2 / 2.2)
    with pytest.raises(ValueError):
        check.max_rel_error(a, b[:1])


def test_normwise_rel_error_known_value():
    """||(0, 0, 1)|| / ||(3, 4, 0)|| = 1/5, the norms taken over both parameters together."""
    reference = [np.array([3.0, 4.0]), np.array(0.0)]
    assert check.normwise_rel_error([np.array([3.0, 4.0]), np.array(1.0)], reference) == pytest.approx(0.2)
    assert check.normwise_rel_error(reference, reference) == 0.0
    with pytest.raises(ValueError):
        check.normwise_rel_error(reference, reference[:1])


def test_normwise_rel_error_of_a_scalar_is_the_relative_error():
    """For one scalar no larger than its reference in magnitude, max(|a|, |b|) = |reference|:
    the two measures coincide (a float32 value is compared in float64)."""
    got, reference = [np.array(np.float32(1.5))], [np.array(2.0)]
    assert check.normwise_rel_error(got, reference) == pytest.approx(check.max_rel_error(got, reference))


def smooth_loss(params):
    return ops.mean(ops.tanh(params[0] @ params[1]) ** 2)


def smooth_params(dtype=np.float64):
    rng = np.random.default_rng(0)
    return [rng.normal(size=(3, 4)).astype(dtype), rng.normal(size=(4, 2)).astype(dtype)]


def test_compare_reports_every_method():
    errors = check.compare(smooth_loss, smooth_params())
    assert list(errors) == ["reverse vs forward", "reverse vs central", "reverse vs complex"]
    assert errors["reverse vs forward"] < 1e-12
    assert errors["reverse vs central"] < 1e-6
    assert errors["reverse vs complex"] < 1e-12


def test_compare_skips_complex_step_for_float32():
    errors = check.compare(smooth_loss, smooth_params(np.float32))
    assert list(errors) == ["reverse vs forward", "reverse vs central"]


def test_assert_gradients_close_passes_on_a_smooth_function():
    check.assert_gradients_close(smooth_loss, smooth_params(), rtol=1e-6)


def test_assert_gradients_close_fails_readably_at_a_kink():
    """At x = 0 relu'(0) = 0 by convention, but the central difference sees the average, 1/2."""
    params = [np.array([1.0, 0.0, -1.0])]
    with pytest.raises(AssertionError) as failure:
        check.assert_gradients_close(lambda p: ops.sum(ops.relu(p[0])), params, rtol=1e-6)
    message = str(failure.value)
    for part in ("reverse vs central", "parameter 0", "entry (1,)", "reverse = 0", "central = 0.5"):
        assert part in message


def test_assert_gradients_close_fails_on_a_nan_gradient():
    """sqrt at a negative entry: NaN in reverse mode and in central differences; the check fails."""
    from gradlab import ops

    with pytest.raises(AssertionError, match="gradient check failed"):
        check.assert_gradients_close(lambda p: ops.sum(ops.sqrt(p[0])), [np.array([-1.0, 4.0])], rtol=1e-6)
