"""optim: each method's defining property, on quadratics and the Rosenbrock function."""

import numpy as np
import pytest
from gradlab import engine, ops, optim
from hypothesis import given, settings
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
