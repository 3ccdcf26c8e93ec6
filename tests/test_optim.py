"""optim: each method's defining property, on quadratics and the Rosenbrock function."""

import numpy as np
import pytest
from gradlab import engine, ops, optim
from hypothesis import example, given, settings
from hypothesis import strategies as st


def quadratic(A):
    """(f, grad f) of f(x) = x^T A x / 2, by reverse mode."""
    return optim.reverse_mode(lambda p: 0.5 * (p[0] @ (A @ p[0])))


def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2, np.array(
        [-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)]
    )


kappas = st.floats(2.0, 200.0)


@settings(max_examples=25, deadline=None)
@given(kappa=kappas, x=st.lists(st.floats(-5.0, 5.0), min_size=2, max_size=2))
def test_reverse_mode_gives_the_value_and_the_exact_gradient(kappa, x):
    """On f(x) = x^T A x / 2 the value is x^T A x / 2 and the gradient A x, as a float and an array."""
    A, x = np.diag([1.0, kappa]), np.array(x)
    value, gradient = quadratic(A)(x)
    assert isinstance(value, float) and value == pytest.approx(0.5 * x @ A @ x, abs=1e-12)
    np.testing.assert_allclose(gradient, A @ x, rtol=1e-12, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(kappa=kappas)
def test_gradient_descent_contracts_by_the_theory_rate(kappa):
    """With lr = 2 / (1 + kappa) every gradient norm shrinks by exactly (kappa - 1) / (kappa + 1)."""
    trace = optim.gradient_descent(
        quadratic(np.diag([1.0, kappa])), [3.0, -2.0], 2 / (1 + kappa), max_iter=20
    )
    ratios = np.array(trace.grad_norms[1:]) / np.array(trace.grad_norms[:-1])
    np.testing.assert_allclose(ratios, (kappa - 1) / (kappa + 1), rtol=1e-9)
    assert trace.evaluations == trace.iterations + 1


def test_gradient_descent_diverges_just_above_two_over_lambda_max():
    fun = quadratic(np.diag([1.0, 10.0]))
    below = optim.gradient_descent(fun, [1.0, 1.0], 0.99 * 2 / 10, gtol=0, max_iter=500)
    above = optim.gradient_descent(fun, [1.0, 1.0], 1.01 * 2 / 10, gtol=0, max_iter=500)
    assert np.linalg.norm(below.x) < 1e-3 < 1e3 < np.linalg.norm(above.x)


@settings(max_examples=20, deadline=None)
@given(kappa=kappas)
def test_heavy_ball_needs_about_sqrt_kappa_iterations(kappa):
    fun = quadratic(np.diag([1.0, kappa]))
    trace = optim.momentum(
        fun, [1.0, 1.0], *optim.heavy_ball_parameters(1.0, kappa), gtol=1e-8, max_iter=10_000
    )
    assert trace.converged
    rate = (np.sqrt(kappa) - 1) / (np.sqrt(kappa) + 1)
    # the heavy ball's error decays like k * rate^k (a repeated eigenvalue), hence the slack
    assert trace.iterations <= 3 * np.log(1e-8 / (np.sqrt(kappa) * 1.5)) / np.log(rate) + 20


def test_armijo_step_has_sufficient_decrease():
    counted = optim._Counted(rosenbrock)
    x = np.array([-1.2, 1.0])
    value, gradient = rosenbrock(x)
    t, x_new, value_new, _ = optim.armijo_backtracking(counted, x, value, gradient, -gradient, 1.0)
    assert t < 1.0 and value_new <= value - 1e-4 * t * gradient @ gradient
    np.testing.assert_array_equal(x_new, x - t * gradient)


def test_newton_solves_a_quadratic_in_one_step():
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    trace = optim.newton(quadratic(A), [5.0, -4.0], gtol=1e-6)
    assert trace.iterations == 1 and trace.converged
    assert trace.evaluations == 1 + 2 * 2 + 1  # start, Hessian by differences of 2n gradients, step
    exact = optim.newton(quadratic(A), [5.0, -4.0], hessian=lambda x: A, gtol=1e-12)
    assert exact.iterations == 1 and np.abs(exact.x).max() < 1e-12


@pytest.mark.parametrize(
    "method",
    [
        lambda f, x: optim.newton(f, x, gtol=1e-6),
        lambda f, x: optim.bfgs(f, x, gtol=1e-6),
        lambda f, x: optim.gradient_descent_line_search(f, x, gtol=1e-6, max_iter=50_000),
    ],
)
def test_rosenbrock_minimum_is_found(method):
    trace = method(rosenbrock, [-1.2, 1.0])
    assert trace.converged
    np.testing.assert_allclose(trace.x, [1.0, 1.0], atol=1e-5)


def test_bfgs_inverse_hessian_satisfies_the_secant_equation():
    """After its update H y = s; on a quadratic, BFGS converges in a few steps."""
    A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]])
    trace = optim.bfgs(quadratic(A), [1.0, -2.0, 3.0], gtol=1e-10)
    assert trace.converged and trace.iterations <= 10
    s = trace.path[1] - trace.path[0]
    y = A @ s
    rho = 1 / (y @ s)
    H0 = (y @ s) / (y @ y) * np.eye(3)
    left = np.eye(3) - rho * np.outer(s, y)
    H1 = left @ H0 @ left.T + rho * np.outer(s, s)
    np.testing.assert_allclose(H1 @ y, s, rtol=1e-12)


def test_zero_gradient_stops_every_method_where_it_starts():
    def flat(x):
        value, (gradient,) = engine.value_and_grad(lambda p: ops.minimum(ops.sum(p[0] * p[0]), 1.0), [x])
        return value, gradient

    start = np.array([3.0, 4.0])
    for trace in [
        optim.gradient_descent(flat, start, 0.1),
        optim.gradient_descent_line_search(flat, start),
        optim.momentum(flat, start, 0.1, 0.9),
        optim.newton(flat, start),
        optim.bfgs(flat, start),
    ]:
        assert trace.iterations == 0 and trace.converged and trace.evaluations == 1
        np.testing.assert_array_equal(trace.x, start)


def test_divergence_stops_at_the_first_non_finite_iterate():
    with np.errstate(over="ignore", invalid="ignore"):
        trace = optim.gradient_descent(quadratic(np.diag([1.0, 10.0])), [1.0, 1.0], 10.0, max_iter=100_000)
    assert not trace.converged and trace.iterations < 1000


def test_adam_first_step_is_lr_times_the_sign_of_the_gradient():
    """With the bias corrections, Adam's first step is η·g/(|g| + ε): ≈ η per coordinate,
    whatever the gradient's size (the diagonal preconditioning the chapters rely on)."""
    params = [np.array([1.0, -2.0, 3.0])]
    grads = [np.array([1e-6, -5.0, 0.0])]
    new = optim.Adam(params, lr=0.1, eps=1e-12).step(params, grads)
    np.testing.assert_allclose(new[0], [1.0 - 0.1, -2.0 + 0.1, 3.0], rtol=1e-5)
    assert params[0].tolist() == [1.0, -2.0, 3.0], "the input parameters are not modified"


def test_adam_minimizes_an_ill_conditioned_quadratic():
    scales = np.array([1.0, 1e-4])
    params = [np.array([1.0, 1.0])]
    adam = optim.Adam(params, lr=0.05)
    for _ in range(2000):
        params = adam.step(params, [scales * params[0]])
    assert np.abs(params[0]).max() < 1e-2


def gaussian_well(x):
    value = 1 - np.exp(-x @ x)
    return value, 2 * x * np.exp(-x @ x)


def cubic_valley(x):
    """A non-convex function with a non-quadratic valley."""
    return x[0] ** 4 / 4 - x[0] ** 2 + 3 * (x[1] - 0.5 * x[0]) ** 2, np.array(
        [x[0] ** 3 - 2 * x[0] - 3 * (x[1] - 0.5 * x[0]), 6 * (x[1] - 0.5 * x[0])]
    )


@pytest.mark.parametrize(
    "fun, x, t0",
    [
        (rosenbrock, [-1.2, 1.0], 1.0),
        (rosenbrock, [0.5, 0.9], 1e-6),
        (gaussian_well, [3.0, 0.0], 1.0),  # tiny gradient: the search must extrapolate
        (gaussian_well, [0.3, -0.2], 50.0),  # far too long a first trial: it must zoom back
        (cubic_valley, [2.5, -1.0], 1.0),
        (lambda x: (float(np.sum(np.cosh(x))), np.sinh(x)), [2.0, -3.0], 1.0),
    ],
)
@pytest.mark.parametrize("c2", [0.1, 0.9])
def test_strong_wolfe_step_satisfies_both_conditions(fun, x, t0, c2):
    counted, x = optim._Counted(fun), np.array(x)
    value, gradient = fun(x)
    direction = -gradient
    slope = gradient @ direction
    t, x_new, value_new, gradient_new = optim.strong_wolfe(counted, x, value, gradient, direction, t0, c2=c2)
    assert t > 0
    np.testing.assert_array_equal(x_new, x + t * direction)
    assert value_new <= value + 1e-4 * t * slope, "sufficient decrease"
    assert abs(gradient_new @ direction) <= c2 * abs(slope), "curvature"
    assert (value_new, list(gradient_new)) == (fun(x_new)[0], list(fun(x_new)[1]))


def test_strong_wolfe_extrapolates_where_the_gradient_is_tiny():
    """From |x| = 3 on the Gaussian well the slope is ~1e-3: the accepted step is ~1e3."""
    counted, x = optim._Counted(gaussian_well), np.array([3.0, 0.0])
    value, gradient = gaussian_well(x)
    t, x_new, *_ = optim.strong_wolfe(counted, x, value, gradient, -gradient, 1.0)
    assert t > 100 and np.linalg.norm(x_new) < 1.0


@pytest.mark.parametrize(
    "fun, x0", [(rosenbrock, [-1.2, 1.0]), (gaussian_well, [3.0, 0.0]), (cubic_valley, [2.5, -1.0])]
)
def test_bfgs_with_wolfe_keeps_positive_curvature(fun, x0):
    trace = optim.bfgs(fun, x0, gtol=1e-8)
    assert trace.converged and min(trace.curvatures) > 0


def test_bfgs_with_armijo_can_meet_negative_curvature():
    trace = optim.bfgs(gaussian_well, [3.0, 0.0], gtol=1e-8, line_search="armijo", max_iter=5000)
    assert min(trace.curvatures) < 0


@settings(max_examples=30, deadline=None)
@given(
    g=st.lists(st.floats(-3, 3), min_size=3, max_size=3),
    eigenvalues=st.lists(st.floats(-2, 2), min_size=3, max_size=3),
    radius=st.floats(0.05, 5.0),
)
@example(g=[0.0, 0.0, 1.0], eigenvalues=[1.2e-203] * 3, radius=1.0)  # Newton step 1e203: no warning
@example(g=[0.0, 0.0, 1.0], eigenvalues=[1e-310] * 3, radius=1.0)  # subnormal curvature: inf * 0
def test_trust_region_step_is_feasible_and_beats_the_cauchy_point(g, eigenvalues, radius):
    """|p| <= radius, and the model decrease is at least that of the best step along -g."""
    g = np.array(g)
    Q = np.linalg.qr(np.arange(1.0, 10.0).reshape(3, 3) + np.eye(3))[0]
    H = Q @ np.diag(eigenvalues) @ Q.T
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow is rounding
        p = optim.trust_region_step(g, H, radius)
    model = lambda s: g @ s + 0.5 * s @ H @ s  # noqa: E731
    assert np.linalg.norm(p) <= radius * (1 + 1e-9)
    if np.linalg.norm(g) > 0:
        along = [model(-t * g / np.linalg.norm(g)) for t in np.linspace(0, radius, 201)]
        assert model(p) <= min(along) + 1e-9


def test_trust_region_and_saddle_free_newton_leave_the_concave_plateau():
    for method in (optim.trust_region, optim.saddle_free_newton):
        trace = method(gaussian_well, [3.0, 0.0], gtol=1e-8)
        assert trace.converged and trace.iterations <= 5


def test_newton_is_invariant_to_scaling_the_function():
    def scaled(x):
        value, gradient = gaussian_well(x)
        return 1e-6 * value, 1e-6 * gradient

    a = optim.newton(gaussian_well, [0.6, 0.2], gtol=1e-10)
    b = optim.newton(scaled, [0.6, 0.2], gtol=1e-16)
    assert a.iterations == b.iterations
    np.testing.assert_allclose(np.array(a.path), np.array(b.path), atol=1e-8)


def test_smoothed_gradient_is_nonzero_where_the_gradient_is_zero():
    centre = np.array([0.5, -0.3])

    def flat(X):
        return np.minimum(np.sum((X - centre) ** 2, axis=-1), 0.04)

    x = np.array([-0.5, 0.6])
    estimate = optim.smoothed_gradient(flat, x, 1.0, 2000, np.random.default_rng(0))
    assert np.linalg.norm(estimate) > 0 and estimate @ (x - centre) > 0  # it points away from c: uphill
    trace = optim.evolution_strategy(
        flat, x, 1.0, 0.2, 500, np.random.default_rng(1), lambda z: flat(z[None])[0] < 0.04
    )
    assert trace.converged and trace.evaluations == 1000 * trace.iterations


def test_quadratic_iterations_matches_the_engine_runs():
    A, x0 = np.diag([1.0, 30.0]), np.array([np.sqrt(30.0), 1.0])
    gtol = 1e-6 * np.linalg.norm(A @ x0)
    (vectorized,) = optim.quadratic_iterations(A, x0, "gd", [2 / 31], rtol=1e-6)
    assert vectorized == optim.gradient_descent(quadratic(A), x0, 2 / 31, gtol, 10_000).iterations
    lr, beta = optim.heavy_ball_parameters(1.0, 30.0)
    (vectorized,) = optim.quadratic_iterations(A, x0, "heavy_ball", [lr], beta, rtol=1e-6)
    assert vectorized == optim.momentum(quadratic(A), x0, lr, beta, gtol, 10_000).iterations
    (adam_count,) = optim.quadratic_iterations(A, x0, "adam", [0.1], rtol=1e-6)
    assert adam_count == optim.adam(quadratic(A), x0, 0.1, gtol=gtol, max_iter=10_000).iterations
    assert np.isinf(optim.quadratic_iterations(A, x0, "gd", [1.0], rtol=1e-6)[0]), "diverges"


def test_adam_is_invariant_to_diagonal_rescaling_only():
    """RMSProp's first steps do not depend on the scale of each coordinate: rescaling a quadratic's
    axes leaves the count unchanged up to the effect of eps; rotating it does not."""
    x0 = np.array([1.0, 1.0])
    axis = optim.quadratic_iterations(np.diag([1.0, 100.0]), x0, "rmsprop", [0.05], rtol=1e-4)[0]
    R = optim.rotation(np.pi / 4)
    rotated = optim.quadratic_iterations(
        R @ np.diag([1.0, 100.0]) @ R.T, R @ x0, "rmsprop", [0.05], rtol=1e-4
    )[0]
    assert axis < rotated


def test_minibatch_least_squares_reaches_the_noise_floor_with_a_good_step():
    X, y, rng = optim.scaled_regression(0, rotated=False, smallest_scale=0.5)
    excess = optim.minibatch_least_squares(X, y, "sgd", [1e-4, 0.1, 100.0], 2000, 32, rng)
    assert excess[1] < 1e-3 < excess[0] and np.isinf(excess[2])
