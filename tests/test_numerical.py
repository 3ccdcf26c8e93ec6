"""Central differences and the complex step: accuracy, dtypes, evaluation counts, errors."""

import numpy as np
import pytest
import strategies as S
from gradlab import engine, flops, models, numerical, ops
from hypothesis import given, settings
from hypothesis import strategies as st


def cubic(params):
    return ops.sum(params[0] ** 3)


def central_error_bound(x):
    """What central_difference's docstring promises for f = sum(x^3): truncation h_k^2 exactly
    ((f(x + h) - f(x - h)) / 2h = 3x^2 + h^2 for a cube), plus rounding: each evaluation of a
    sum of n cubes is off by at most (n + 2) eps sum|x|^3, and the two are divided by 2h_k.
    Twice that, for the perturbed entry's larger cube and the step's own rounding."""
    h = numerical.default_step() * np.maximum(1.0, np.abs(x))
    total = np.sum((np.abs(x) + h.max()) ** 3)
    return 2 * (h**2 + (x.size + 2) * np.finfo(np.float64).eps * total / h)


@settings(max_examples=25, deadline=None)
@given(S.shapes.flatmap(S.arrays))
def test_central_difference_on_a_known_gradient(x):
    """Within the error bound it states, which depends on |f| (the rounding), not only on the
    entry: an entry of 0.002 beside eight entries of 2 has an error of 1e-9, 1e-4 of its size."""
    (g,) = numerical.central_difference(cubic, [x])
    assert np.all(np.abs(g - 3 * x**2) <= central_error_bound(x))


def test_the_bound_is_tight_enough_to_catch_a_wrong_gradient():
    x = np.array([[1.953125e-03, 2.0, 2.0], [2.0, 2.0, 2.0], [2.0, 2.0, 2.0]])  # Hypothesis found it
    (g,) = numerical.central_difference(cubic, [x])
    assert np.all(np.abs(g - 3 * x**2) <= central_error_bound(x))
    assert central_error_bound(x).max() < 1e-6  # a gradient off by 1e-6 fails the check


@settings(max_examples=25, deadline=None)
@given(S.shapes.flatmap(S.arrays))
def test_complex_step_is_exact_to_machine_precision(x):
    (g,) = numerical.complex_step(cubic, [x])
    np.testing.assert_allclose(g, 3 * x**2, rtol=1e-14, atol=1e-30)  # truncation: h^2


def tanh_mlp_loss_and_params(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(6, 3)).astype(dtype)
    y = rng.normal(size=(6, 2)).astype(dtype)
    params = models.init_mlp([3, 5, 4, 2], "glorot", rng, dtype=dtype, bias=0.1)
    return (lambda p: ops.mean((models.mlp(p, X, "tanh") - y) ** 2)), params


def test_complex_step_matches_reverse_mode_on_an_mlp():
    loss, params = tanh_mlp_loss_and_params()
    for r, c in zip(engine.grad(loss, params), numerical.complex_step(loss, params), strict=True):
        np.testing.assert_allclose(c, r, rtol=1e-13, atol=1e-16)


def test_default_step_beats_a_tiny_step():
    """h = 1e-13 drowns in rounding error (eps / h ~ 1e-3); the default h ~ eps^(1/3) does not."""
    loss, params = tanh_mlp_loss_and_params()
    exact = numerical.complex_step(loss, params)
    default = numerical.central_difference(loss, params)
    tiny = numerical.central_difference(loss, params, h=1e-13)
    error = lambda grads: max(np.abs(g - e).max() for g, e in zip(grads, exact, strict=True))  # noqa: E731
    assert error(default) < 1e-9 < 1e-6 < error(tiny)


def test_float32_central_difference_keeps_dtype():
    loss, params = tanh_mlp_loss_and_params(dtype=np.float32)
    grads = numerical.central_difference(loss, params)
    assert all(g.dtype == np.float32 for g in grads)
    reference = engine.grad(loss, [p.astype(np.float64) for p in params])
    for g, r in zip(grads, reference, strict=True):
        np.testing.assert_allclose(g, r, rtol=2e-2, atol=1e-3)


def test_evaluation_counts():
    x = np.ones((2, 3))
    with flops.counting() as counter:
        numerical.central_difference(cubic, [x])
    assert counter.calls == 2 * x.size
    with flops.counting() as counter:
        numerical.complex_step(cubic, [x])
    assert counter.calls == x.size


def test_complex_step_rejects_float32():
    with pytest.raises(TypeError, match=r"float64.*float32"):
        numerical.complex_step(cubic, [np.ones(3, dtype=np.float32)])


def test_complex_step_rejects_a_function_that_drops_the_imaginary_part():
    with pytest.raises(TypeError, match="real value"):
        numerical.complex_step(lambda p: np.sum(np.abs(p[0])), [np.ones(3)])


def test_non_scalar_output_is_an_error():
    with pytest.raises(ValueError, match="scalar"):
        numerical.central_difference(lambda p: p[0] * 2, [np.ones(3)])


@settings(max_examples=50, deadline=None)
@given(st.floats(1.0, 100.0, exclude_min=True))
def test_smallest_float_where_finds_a_threshold_exactly(threshold):
    found = numerical.smallest_float_where(lambda x: x >= threshold, 1.0, 100.0)
    assert found == threshold


def test_smallest_float_where_on_the_sigmoid_rounding_to_one():
    """The answer is true, and the float just below it is not."""
    z = numerical.smallest_float_where(lambda z: 1 / (1 + np.exp(-z)) == 1.0, 1.0, 100.0)
    assert 1 / (1 + np.exp(-z)) == 1.0 and 1 / (1 + np.exp(-np.nextafter(z, 0))) != 1.0
    assert z == pytest.approx(np.log(2 / np.finfo(float).eps), rel=0.01)


def test_default_step_and_rounding_error():
    """eps^(1/3) per dtype, and eps |f| / h: the error bound the default central step carries."""
    for dtype in (np.float32, np.float64):
        eps = np.finfo(dtype).eps
        assert numerical.default_step(dtype) == pytest.approx(eps ** (1 / 3))
        assert numerical.rounding_error(-3.0, dtype) == pytest.approx(3 * eps ** (2 / 3))
