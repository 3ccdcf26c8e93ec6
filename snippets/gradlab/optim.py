"""Five ways to use the same gradient: gradient descent, heavy-ball momentum, gradient descent
with a backtracking (Armijo) line search, Newton's method and BFGS.

Every method minimizes f: R^n -> R from `fun(x) -> (f(x), grad f(x))`, for instance
`reverse_mode(loss)`: one forward and one backward pass. Every call of `fun` counts as one
evaluation. A method stops when ||grad f(x_k)|| <= gtol (`converged`) or after `max_iter`
iterations, or when its iterate stops being finite.

The methods differ only in what they do with the gradient; none of them computes it.
References: Nocedal & Wright, Numerical Optimization, 2nd ed. (2006), ch. 3 (line search,
steepest descent) and ch. 6 (BFGS); Polyak (1964) for the heavy ball.
"""

from dataclasses import dataclass, field

import numpy as np

from . import engine


def reverse_mode(loss):
    """`fun(x) -> (f(x), grad f(x))` for a loss written on a parameter list, f(x) = loss([x]):
    the value and gradient from one forward and one backward pass of the engine."""

    def fun(x):
        value, (gradient,) = engine.value_and_grad(loss, [x])
        return value, gradient

    return fun


@dataclass
class Trace:
    """The iterates x_0, x_1, ..., their values and gradient norms, and the evaluations used."""

    path: list = field(default_factory=list)
    values: list = field(default_factory=list)
    grad_norms: list = field(default_factory=list)
    evaluations: int = 0
    converged: bool = False

    @property
    def x(self):
        return self.path[-1]

    @property
    def iterations(self):
        return len(self.path) - 1

    def record(self, x, value, gradient):
        self.path.append(np.array(x, dtype=float))
        self.values.append(float(value))
        self.grad_norms.append(float(np.linalg.norm(gradient)))


class _Counted:
    """`fun` with a call counter."""

    def __init__(self, fun):
        self.fun, self.calls = fun, 0

    def __call__(self, x):
        self.calls += 1
        value, gradient = self.fun(x)
        return float(value), np.asarray(gradient, dtype=float)


def _run(fun, x0, step, gtol, max_iter):
    """The loop every method shares: `step(x, f, g, k) -> (x_new, f_new, g_new)`."""
    counted = _Counted(fun)
    trace = Trace()
    x = np.array(x0, dtype=float)
    value, gradient = counted(x)
    trace.record(x, value, gradient)
    for k in range(max_iter):
        if trace.grad_norms[-1] <= gtol or not np.all(np.isfinite(x)):
            break
        x, value, gradient = step(x, value, gradient, k, counted)
        trace.record(x, value, gradient)
    trace.converged = trace.grad_norms[-1] <= gtol
    trace.evaluations = counted.calls
    return trace


def gradient_descent(fun, x0, lr, gtol=1e-6, max_iter=10_000):
    """x_{k+1} = x_k - lr * grad f(x_k), a fixed step.

    On f = x^T A x / 2 each eigencomponent is multiplied by (1 - lr * lambda_i) per step, so it
    converges if and only if 0 < lr < 2 / lambda_max; lr = 2 / (lambda_min + lambda_max)
    contracts by (kappa - 1) / (kappa + 1) per step, kappa = lambda_max / lambda_min.
    """

    def step(x, value, gradient, k, counted):
        x = x - lr * gradient
        return (x, *counted(x))

    return _run(fun, x0, step, gtol, max_iter)


def heavy_ball_parameters(lambda_min, lambda_max):
    """Polyak's tuning for a quadratic with Hessian eigenvalues in [lambda_min, lambda_max]:
    lr = 4 / (sqrt(L) + sqrt(mu))^2, beta = ((sqrt(kappa) - 1) / (sqrt(kappa) + 1))^2; the error
    then contracts by about (sqrt(kappa) - 1) / (sqrt(kappa) + 1) per step."""
    root_min, root_max = np.sqrt(lambda_min), np.sqrt(lambda_max)
    return 4 / (root_max + root_min) ** 2, ((root_max - root_min) / (root_max + root_min)) ** 2


def momentum(fun, x0, lr, beta, gtol=1e-6, max_iter=10_000):
    """Heavy ball: x_{k+1} = x_k - lr * grad f(x_k) + beta * (x_k - x_{k-1}), with x_{-1} = x_0."""
    previous = [np.array(x0, dtype=float)]

    def step(x, value, gradient, k, counted):
        x_new = x - lr * gradient + beta * (x - previous[0])
        previous[0] = x
        return (x_new, *counted(x_new))

    return _run(fun, x0, step, gtol, max_iter)


def armijo_backtracking(counted, x, value, gradient, direction, t, c=1e-4, max_trials=60):
    """A step t along a descent direction p (slope = grad f(x)^T p < 0) with sufficient
    decrease, the Armijo condition

        f(x + t p) <= f(x) + c t grad f(x)^T p.

    A rejected trial t is replaced by the minimizer of the parabola through f(x), the slope
    and f(x + t p), kept within [0.1 t, 0.5 t] (backtracking by interpolation, Nocedal & Wright
    ch. 3). Returns (t, x + t p, f and grad f there)."""
    slope = float(gradient @ direction)
    for _ in range(max_trials):
        x_new = x + t * direction
        value_new, gradient_new = counted(x_new)
        if value_new <= value + c * t * slope:
            break
        curvature = value_new - value - slope * t  # > 0 here, or the trial would pass
        minimizer = -slope * t * t / (2 * curvature) if np.isfinite(curvature) else 0.0
        t = float(np.clip(minimizer, 0.1 * t, 0.5 * t))
    return t, x_new, value_new, gradient_new


def gradient_descent_line_search(fun, x0, t0=1.0, grow=2.0, gtol=1e-6, max_iter=10_000):
    """p_k = -grad f(x_k), x_{k+1} = x_k + t_k p_k with t_k from Armijo backtracking.

    The first trial step is t0, then grow * t_{k-1}: after every accepted step the trial
    doubles, so a region where the gradient is tiny in every direction is crossed in a few
    doublings instead of thousands of fixed steps.
    """
    accepted = [t0 / grow]

    def step(x, value, gradient, k, counted):
        t, x, value, gradient = armijo_backtracking(
            counted, x, value, gradient, -gradient, grow * accepted[0]
        )
        accepted[0] = t
        return x, value, gradient

    return _run(fun, x0, step, gtol, max_iter)


def hessian_from_gradients(counted, x, h=1e-5):
    """Column j = (grad f(x + h e_j) - grad f(x - h e_j)) / (2h), symmetrized: 2n evaluations."""
    columns = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        columns.append((counted(x + e)[1] - counted(x - e)[1]) / (2 * h))
    H = np.array(columns).T
    return (H + H.T) / 2


def newton(fun, x0, hessian=None, gtol=1e-6, max_iter=1_000):
    """x_{k+1} = x_k + t_k p_k with H_k p_k = -grad f(x_k) (H_k the Hessian) and t_k from Armijo
    backtracking that tries t = 1 first. `hessian(x)` gives H_k; without it H_k comes from
    differences of the gradient (2n evaluations, counted). Where H_k is not positive definite
    the step is p_k = -grad f(x_k) instead."""

    def step(x, value, gradient, k, counted):
        H = hessian(x) if hessian is not None else hessian_from_gradients(counted, x)
        try:
            np.linalg.cholesky(H)
            direction = -np.linalg.solve(H, gradient)
        except np.linalg.LinAlgError:
            direction = -gradient
        _, x, value, gradient = armijo_backtracking(counted, x, value, gradient, direction, 1.0)
        return x, value, gradient

    return _run(fun, x0, step, gtol, max_iter)


def bfgs(fun, x0, gtol=1e-6, max_iter=1_000):
    """Quasi-Newton: p_k = -H_k grad f(x_k), t_k from Armijo backtracking trying t = 1 first,
    and H_k, an estimate of the INVERSE Hessian, updated from s = x_{k+1} - x_k and
    y = grad f(x_{k+1}) - grad f(x_k) with rho = 1 / (y^T s):

        H_{k+1} = (I - rho s y^T) H_k (I - rho y s^T) + rho s s^T,

    so that H_{k+1} y = s (the secant equation). H_0 = I, rescaled to (y^T s / y^T y) I before
    the first update. The update is skipped when y^T s <= 0: Armijo steps, unlike Wolfe steps,
    do not guarantee the positive curvature that keeps H_k positive definite.
    """
    n = np.size(x0)
    inverse_hessian = [np.eye(n)]

    def step(x, value, gradient, k, counted):
        H = inverse_hessian[0]
        _, x_new, value_new, gradient_new = armijo_backtracking(
            counted, x, value, gradient, -H @ gradient, 1.0
        )
        s, y = x_new - x, gradient_new - gradient
        curvature = float(y @ s)
        if curvature > 0:
            if k == 0:
                H = curvature / float(y @ y) * np.eye(n)
            rho = 1 / curvature
            left = np.eye(n) - rho * np.outer(s, y)
            inverse_hessian[0] = left @ H @ left.T + rho * np.outer(s, s)
        return x_new, value_new, gradient_new

    return _run(fun, x0, step, gtol, max_iter)


# ----- Adaptive (diagonal) preconditioning: Adam and RMSProp ------------------------------------


class Adam:
    """Adam (Kingma & Ba, ICLR 2015, Algorithm 1) on a list of numpy arrays.

    m ← β₁m + (1 − β₁)g,  v ← β₂v + (1 − β₂)g²,  θ ← θ − η m̂ / (√v̂ + ε)
    with the bias corrections m̂ = m / (1 − β₁ᵗ), v̂ = v / (1 − β₂ᵗ). The step divides each
    coordinate by a running RMS of its own gradient: a diagonal preconditioner, so a uniformly
    tiny gradient gives a step of size ≈ η, not ≈ η‖g‖. ``beta1=0`` is RMSProp with bias
    correction (Tieleman & Hinton, 2012, lecture 6.5).
    """

    def __init__(self, params, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, params, grads):
        """The new parameters (new arrays; the inputs are not modified)."""
        self.t += 1
        new = []
        for i, (p, g) in enumerate(zip(params, grads, strict=True)):
            self.m[i] = self.beta1 * self.m[i] + (1 - self.beta1) * g
            self.v[i] = self.beta2 * self.v[i] + (1 - self.beta2) * g * g
            m_hat = self.m[i] / (1 - self.beta1**self.t)
            v_hat = self.v[i] / (1 - self.beta2**self.t)
            new.append(p - self.lr * m_hat / (np.sqrt(v_hat) + self.eps))
        return new
