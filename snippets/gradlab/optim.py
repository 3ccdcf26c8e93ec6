"""Ways to use the same gradient: gradient descent (fixed step, or with a line search), heavy-ball
momentum, Newton's method, saddle-free Newton, a trust region, BFGS, Adam and RMSProp; and, for a
gradient that is exactly zero, an evolution strategy that uses function values only.

Every method minimizes f: R^n -> R from `fun(x) -> (f(x), grad f(x))`, for instance
`reverse_mode(loss)`: one forward and one backward pass. Every call of `fun` counts as one
evaluation. A method stops when ||grad f(x_k)|| <= gtol (`converged`) or after `max_iter`
iterations, or when its iterate stops being finite.

Every line-search method uses the same search, `strong_wolfe` by default (`line_search="armijo"`
gives backtracking from the first trial, which never lengthens a step). The methods differ only
in what they do with the gradient; none of them computes it.
References: Nocedal & Wright, Numerical Optimization, 2nd ed. (2006), ch. 3 (line search,
steepest descent), ch. 4 (trust regions) and ch. 6 (BFGS); Polyak (1964) for the heavy ball;
Dauphin et al. (NeurIPS 2014) for saddle-free Newton; Kingma & Ba (ICLR 2015) for Adam;
Nesterov & Spokoiny (Found. Comput. Math. 17(2), 2017) for Gaussian smoothing.
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
    ch. 3). It only ever shrinks t. Returns (t, x + t p, f and grad f there)."""
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


def _cubic_minimizer(lo, hi):
    """The minimizer of the cubic through (t, phi, phi') at both ends (Nocedal & Wright eq. 3.59),
    kept 10% away from the ends of the interval; the midpoint if the cubic has none there."""
    (t_lo, v_lo, s_lo), (t_hi, v_hi, s_hi) = lo[:3], hi[:3]
    d1 = s_lo + s_hi - 3 * (v_lo - v_hi) / (t_lo - t_hi)
    radicand = d1 * d1 - s_lo * s_hi
    left, right = min(t_lo, t_hi), max(t_lo, t_hi)
    margin = 0.1 * (right - left)
    if radicand >= 0 and np.isfinite(radicand):
        d2 = np.sign(t_hi - t_lo) * np.sqrt(radicand)
        t = t_hi - (t_hi - t_lo) * (s_hi + d2 - d1) / (s_hi - s_lo + 2 * d2)
        if np.isfinite(t) and left + margin <= t <= right - margin:
            return float(t)
    return 0.5 * (t_lo + t_hi)


def strong_wolfe(counted, x, value, gradient, direction, t, c1=1e-4, c2=0.9, grow=2.0, max_trials=60):
    """A step t along a descent direction p that satisfies the strong Wolfe conditions

        f(x + t p) <= f(x) + c1 t g^T p                 (sufficient decrease, Armijo)
        |grad f(x + t p)^T p| <= c2 |g^T p|             (curvature),

    by Nocedal & Wright's Algorithm 3.5 (bracketing: t grows by `grow` until a trial fails the
    first condition, rises, or has a non-negative slope) and 3.6 (zoom: cubic interpolation,
    bisection as the fallback). The curvature condition is what makes it EXTRAPOLATE where the
    slope is still steep (a tiny gradient gives a long step), and, for BFGS, it guarantees
    y^T s = (grad f(x + t p) - g)^T t p >= (c2 - 1) t g^T p > 0. Returns (t, x + t p, f and
    grad f there); if no trial passes within `max_trials`, the best sufficient-decrease point.
    """
    slope0 = float(gradient @ direction)

    def trial(t):
        value_t, gradient_t = counted(x + t * direction)
        return (t, value_t, float(gradient_t @ direction), gradient_t)

    def armijo_fails(point, previous):
        t, v = point[0], point[1]
        return (
            not np.isfinite(v) or v > value + c1 * t * slope0 or (previous is not None and v >= previous[1])
        )

    def done(point):
        return point[0], x + point[0] * direction, point[1], point[3]

    def zoom(lo, hi):
        for _ in range(max_trials):
            point = trial(_cubic_minimizer(lo, hi))
            if armijo_fails(point, None) or point[1] >= lo[1]:
                hi = point
            else:
                if abs(point[2]) <= -c2 * slope0:
                    return done(point)
                if point[2] * (hi[0] - lo[0]) >= 0:
                    hi = lo
                lo = point
        return done(lo)

    previous, start = None, (0.0, value, slope0, gradient)
    for _ in range(max_trials):
        point = trial(t)
        if armijo_fails(point, previous):
            return zoom(previous or start, point)
        if abs(point[2]) <= -c2 * slope0:
            return done(point)
        if point[2] >= 0:
            return zoom(point, previous or start)
        previous, t = point, grow * t
    return done(previous)


LINE_SEARCHES = {"wolfe": strong_wolfe, "armijo": armijo_backtracking}


def gradient_descent_line_search(fun, x0, t0=1.0, gtol=1e-6, max_iter=10_000, line_search="wolfe"):
    """p_k = -grad f(x_k), x_{k+1} = x_k + t_k p_k with t_k from a line search.

    The first trial step is t0, then Nocedal & Wright's eq. 3.60: the step that repeats the last
    iteration's first-order decrease, t_{k-1} g_{k-1}^T p_{k-1} / g_k^T p_k.
    """
    search = LINE_SEARCHES[line_search]
    last = [None]

    def step(x, value, gradient, k, counted):
        slope = -float(gradient @ gradient)
        t = t0 if last[0] is None else last[0][0] * last[0][1] / slope
        t, x, value, gradient_new = search(counted, x, value, gradient, -gradient, t)
        last[0] = (t, slope)
        return x, value, gradient_new

    return _run(fun, x0, step, gtol, max_iter)


def hessian_from_gradients(counted, x, h=1e-5):
    """Column j = H e_j by hvp.hessian_vector_product (central differences of the gradient),
    symmetrized: 2n evaluations."""
    from .hvp import hessian_vector_product

    columns = [hessian_vector_product(counted, x, e, h=h) for e in np.eye(x.size)]
    H = np.array(columns).T
    return (H + H.T) / 2


def newton(fun, x0, hessian=None, gtol=1e-6, max_iter=1_000, line_search="wolfe"):
    """x_{k+1} = x_k + t_k p_k with H_k p_k = -grad f(x_k) (H_k the Hessian) and t_k from a line
    search that tries t = 1 first. `hessian(x)` gives H_k; without it H_k comes from
    differences of the gradient (2n evaluations, counted). Where H_k is not positive definite
    the step is p_k = -grad f(x_k) instead (the Newton model has no minimum there)."""
    search = LINE_SEARCHES[line_search]

    def step(x, value, gradient, k, counted):
        H = hessian(x) if hessian is not None else hessian_from_gradients(counted, x)
        try:
            np.linalg.cholesky(H)
            direction = -np.linalg.solve(H, gradient)
        except np.linalg.LinAlgError:
            direction = -gradient
        _, x, value, gradient = search(counted, x, value, gradient, direction, 1.0)
        return x, value, gradient

    return _run(fun, x0, step, gtol, max_iter)


def saddle_free_newton(fun, x0, hessian=None, gtol=1e-6, max_iter=1_000, line_search="wolfe", floor=1e-300):
    """Newton with |H|: p_k = -|H_k|^{-1} grad f(x_k), where |H| = Q |Lambda| Q^T flips the sign
    of every negative eigenvalue (Dauphin et al. 2014). Along a direction of negative
    curvature the step goes downhill, by gradient / |curvature|, instead of uphill to the
    maximum of the quadratic model. t_k from a line search trying t = 1 first."""
    search = LINE_SEARCHES[line_search]

    def step(x, value, gradient, k, counted):
        H = hessian(x) if hessian is not None else hessian_from_gradients(counted, x)
        eigenvalues, Q = np.linalg.eigh(H)
        direction = -Q @ ((Q.T @ gradient) / np.maximum(np.abs(eigenvalues), floor))
        _, x, value, gradient = search(counted, x, value, gradient, direction, 1.0)
        return x, value, gradient

    return _run(fun, x0, step, gtol, max_iter)


def trust_region_step(gradient, H, radius, bisections=200):
    """The minimizer of the model m(p) = g^T p + p^T H p / 2 over |p| <= radius (Nocedal & Wright
    ch. 4.3), from H's eigendecomposition: p(lam) = -(H + lam I)^{-1} g with lam >= max(0,
    -lambda_min) and |p(lam)| = radius unless the Newton step lies inside. Where H has negative
    curvature the step reaches the boundary. In the 'hard case' (g orthogonal to the lowest
    eigenvector) the step adds that eigenvector to reach the boundary."""
    eigenvalues, Q = np.linalg.eigh(H)
    coefficients = Q.T @ gradient
    largest = float(np.abs(gradient).max(initial=0.0))
    g_norm = largest * float(np.linalg.norm(gradient / largest)) if largest > 0 else 0.0  # no underflow
    if eigenvalues[0] > 0:
        with np.errstate(all="ignore"):  # curvature near 0 (1e-203, 1e-310): an inf or NaN norm is outside
            newton_step = -Q @ (coefficients / eigenvalues)
            inside = np.linalg.norm(newton_step) <= radius
        if inside:
            return newton_step
    lo = max(0.0, -eigenvalues[0])
    hi = lo + max(g_norm / radius, 4 * np.spacing(lo))  # |p(hi)| <= |g| / (hi + lambda_min) <= radius
    for _ in range(bisections):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if np.linalg.norm(coefficients / (eigenvalues + mid)) > radius:
            lo = mid
        else:
            hi = mid
    p = -Q @ (coefficients / (eigenvalues + hi))
    if p @ p > radius**2:  # lam - lambda_min below the resolution of lam: rescale onto the boundary
        p = p * (radius / np.linalg.norm(p))
    shortfall = radius**2 - p @ p
    if eigenvalues[0] <= 0 and shortfall > 1e-12 * radius**2:
        # the hard case (g has no component, or one below rounding, along the lowest
        # eigenvector): add that eigenvector to reach the boundary: p + tau q with
        # |p + tau q| = radius, the root with the lower model value
        along = float(p @ Q[:, 0])
        roots = -along + np.array([1.0, -1.0]) * np.sqrt(along**2 + shortfall)
        candidates = [p + tau * Q[:, 0] for tau in roots]
        p = min(candidates, key=lambda c: gradient @ c + 0.5 * c @ H @ c)
    return p


def trust_region(fun, x0, hessian=None, radius=1.0, max_radius=100.0, gtol=1e-6, max_iter=1_000):
    """Nocedal & Wright's Algorithm 4.1 with the exact model minimizer (`trust_region_step`):
    accept the step if the actual decrease is at least 1/10 of the model's (rho > 0.1); shrink the
    radius by 4 if rho < 1/4, double it (up to `max_radius`) if rho > 3/4 on the boundary. A
    rejected step is an iteration that does not move. H as in `newton`."""
    state = {"radius": radius}

    def step(x, value, gradient, k, counted):
        H = hessian(x) if hessian is not None else hessian_from_gradients(counted, x)
        p = trust_region_step(gradient, H, state["radius"])
        predicted = -(gradient @ p + 0.5 * p @ H @ p)
        value_new, gradient_new = counted(x + p)
        rho = (value - value_new) / predicted if predicted > 0 else -1.0
        on_boundary = np.linalg.norm(p) >= 0.99 * state["radius"]
        if rho < 0.25:
            state["radius"] /= 4
        elif rho > 0.75 and on_boundary:
            state["radius"] = min(2 * state["radius"], max_radius)
        return (x + p, value_new, gradient_new) if rho > 0.1 else (x, value, gradient)

    return _run(fun, x0, step, gtol, max_iter)


def bfgs(fun, x0, gtol=1e-6, max_iter=1_000, line_search="wolfe"):
    """Quasi-Newton: p_k = -H_k grad f(x_k), t_k from a line search trying t = 1 first,
    and H_k, an estimate of the INVERSE Hessian, updated from s = x_{k+1} - x_k and
    y = grad f(x_{k+1}) - grad f(x_k) with rho = 1 / (y^T s):

        H_{k+1} = (I - rho s y^T) H_k (I - rho y s^T) + rho s s^T,

    so that H_{k+1} y = s (the secant equation). H_0 = I, rescaled to (y^T s / y^T y) I before
    the first update. The update needs y^T s > 0, which strong Wolfe steps guarantee; with
    Armijo steps it can fail, and the update is then skipped. `trace.curvatures` lists every
    y^T s.
    """
    n = np.size(x0)
    inverse_hessian = [np.eye(n)]
    search = LINE_SEARCHES[line_search]
    curvatures = []

    def step(x, value, gradient, k, counted):
        H = inverse_hessian[0]
        _, x_new, value_new, gradient_new = search(counted, x, value, gradient, -H @ gradient, 1.0)
        s, y = x_new - x, gradient_new - gradient
        curvature = float(y @ s)
        curvatures.append(curvature)
        if curvature > 0:
            if k == 0:
                H = curvature / float(y @ y) * np.eye(n)
            rho = 1 / curvature
            left = np.eye(n) - rho * np.outer(s, y)
            inverse_hessian[0] = left @ H @ left.T + rho * np.outer(s, s)
        return x_new, value_new, gradient_new

    trace = _run(fun, x0, step, gtol, max_iter)
    trace.curvatures = curvatures
    return trace


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


def adam(fun, x0, lr, beta1=0.9, beta2=0.999, eps=1e-8, gtol=1e-6, max_iter=10_000):
    """`Adam` (``beta1=0``: RMSProp) as a method like the others: one evaluation per iteration,
    the same stopping rule."""
    optimizer = Adam([np.asarray(x0, dtype=float)], lr, beta1, beta2, eps)

    def step(x, value, gradient, k, counted):
        (x,) = optimizer.step([x], [gradient])
        return (x, *counted(x))

    return _run(fun, x0, step, gtol, max_iter)


def rotation(angle):
    """The 2 x 2 rotation by `angle` (radians)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])


# ----- Without the gradient: evolution strategies on a Gaussian-smoothed objective --------------


def smoothed_gradient(f, x, sigma, samples, rng):
    """An estimate of the gradient of the Gaussian smoothing f_sigma(x) = E f(x + sigma u),
    u ~ N(0, I), from function values alone, with antithetic pairs:

        grad f_sigma(x) = E[(f(x + sigma u) - f(x - sigma u)) u] / (2 sigma).

    `f` takes a batch of points (rows) and returns their values. 2 * samples evaluations. It is
    the gradient of a DIFFERENT function, f_sigma, which is not flat where f is, as long as
    x + sigma u reaches where f varies (Nesterov & Spokoiny 2017)."""
    u = rng.standard_normal((samples, np.size(x)))
    differences = f(x + sigma * u) - f(x - sigma * u)
    return differences @ u / (2 * sigma * samples)


def evolution_strategy(f, x0, sigma, step, samples, rng, stop, max_iter=100):
    """x_{k+1} = x_k - step * d_k / |d_k| with d_k = `smoothed_gradient` (a normalized step:
    the estimate's length is a small difference of function values). Stops when `stop(x)` is
    true or d_k is exactly 0. Returns a Trace whose grad_norms are |d_k|."""
    trace, x = Trace(), np.array(x0, dtype=float)
    for _ in range(max_iter):
        if stop(x):
            break
        estimate = smoothed_gradient(f, x, sigma, samples, rng)
        trace.evaluations += 2 * samples
        trace.record(x, f(x[None])[0], estimate)
        norm = np.linalg.norm(estimate)
        if norm == 0:
            break
        x = x - step * estimate / norm
    trace.record(x, f(x[None])[0], np.zeros_like(x))
    trace.converged = bool(stop(x))
    return trace


# ----- Many learning rates at once, for tuning every method on the same grid --------------------


def quadratic_iterations(A, x0, method, lrs, beta=0.0, rtol=1e-6, max_iter=10_000):
    """Iterations until |grad f| <= rtol |grad f(x0)| on f = x^T A x / 2 (gradient A x, exact),
    for every step size in `lrs` at once (inf where the cap is reached or the run diverges).
    method: "gd", "heavy_ball" (with `beta`), "rmsprop" or "adam" (default betas)."""
    lrs = np.asarray(lrs, dtype=float)[:, None]
    X = np.tile(np.asarray(x0, dtype=float), (lrs.size, 1))
    previous, target = X.copy(), rtol * np.linalg.norm(A @ x0)
    adaptive = Adam([X], lrs, beta1=0.9 if method == "adam" else 0.0)
    hit = np.full(lrs.size, np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(1, max_iter + 1):
            G = X @ A
            if method in ("adam", "rmsprop"):
                (new,) = adaptive.step([X], [G])
            else:
                new = X - lrs * G + beta * (X - previous)
            previous, X = X, new
            done = np.linalg.norm(X @ A, axis=1) <= target
            hit[np.isinf(hit) & done] = k
            if np.all(np.isfinite(hit) | ~np.isfinite(X).all(axis=1)):
                break
    return hit


# The minibatch experiment's design: features, the ratio of the largest to the smallest feature
# scale, steps, batch size, and the fraction of the last steps the excess loss is averaged over.
MINIBATCH = {"features": 10, "scale_span": 100.0, "steps": 1000, "batch": 16, "tail": 0.2}


def minibatch_least_squares(X, y, method, lrs, steps, batch, rng, tail=MINIBATCH["tail"]):
    """Minibatch SGD or Adam on L(w) = mean((X w - y)^2) / 2 from w = 0, for every step size in
    `lrs` at once (the same minibatches for all of them). Returns the excess loss
    L(w) - min L averaged over the last `tail` fraction of the steps (inf if a run diverged):
    the average smooths out the minibatch noise of the last iterate."""
    lrs = np.asarray(lrs, dtype=float)[:, None]
    W = np.zeros((lrs.size, X.shape[1]))
    adam_state = Adam([W], lrs)
    minimum = 0.5 * np.mean((X @ np.linalg.lstsq(X, y, rcond=None)[0] - y) ** 2)
    total, counted = np.zeros(lrs.size), 0
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(steps):
            rows = rng.integers(0, len(y), batch)
            G = (W @ X[rows].T - y[rows]) @ X[rows] / batch
            W = adam_state.step([W], [G])[0] if method == "adam" else W - lrs * G
            if k >= steps * (1 - tail):
                total, counted = total + 0.5 * np.mean((W @ X.T - y) ** 2, axis=1), counted + 1
    return np.nan_to_num(total / counted - minimum, nan=np.inf)


def scaled_regression(
    seed, rotated, n=512, d=MINIBATCH["features"], smallest_scale=1 / MINIBATCH["scale_span"], noise=0.1
):
    """Least-squares data whose d features have scales from 1 down to `smallest_scale` (Hessian
    condition number about smallest_scale^-2), optionally rotated by a random orthogonal matrix
    (the same function in rotated coordinates): (X, y, the generator, to draw minibatches)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.geomspace(1, smallest_scale, d)
    if rotated:
        X = X @ np.linalg.qr(rng.standard_normal((d, d)))[0]
    return X, X @ rng.standard_normal(d) + noise * rng.standard_normal(n), rng


def grid_tuned_iterations(A, x0, lrs, betas=(0.5, 0.9, 0.99), rtol=1e-6, max_iter=5000):
    """The fewest `quadratic_iterations` over the step-size grid `lrs` for gradient descent,
    RMSProp and Adam (default betas), and over lrs x `betas` for the heavy ball."""
    best = {
        m: _smallest(quadratic_iterations(A, x0, m, lrs, 0.0, rtol, max_iter))
        for m in ("gd", "rmsprop", "adam")
    }
    best["heavy_ball"] = min(
        _smallest(quadratic_iterations(A, x0, "heavy_ball", lrs, beta, rtol, max_iter)) for beta in betas
    )
    return best


def _smallest(counts):
    """The smallest count as a float (inf if no run reached the tolerance)."""
    return float(np.min(counts))


def tuned_minibatch_losses(seeds, rotated, method, lrs, steps=MINIBATCH["steps"], batch=MINIBATCH["batch"]):
    """`minibatch_least_squares` on `scaled_regression(seed, rotated)` for every seed; the step
    size is the one in `lrs` with the lowest MEDIAN loss over the seeds (one tuned value for
    all seeds). Returns the per-seed losses at that step size and the step size."""
    losses = []
    for seed in seeds:
        X, y, rng = scaled_regression(seed, rotated)
        losses.append(minibatch_least_squares(X, y, method, lrs, steps, batch, rng))
    best = int(np.argmin(np.median(losses, axis=0)))
    return np.array(losses)[:, best], float(np.asarray(lrs)[best])


# ----- A test function ------------------------------------------------------------------------


def rosenbrock(params):
    """f(x) = (1 - x_1)^2 + 100 (x_2 - x_1^2)^2 on a parameter list [x]: a curved, narrow valley
    with its minimum f = 0 at (1, 1) (Rosenbrock, The Computer Journal 3(3), 1960)."""
    (x,) = params
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def rosenbrock_eigenvalues(x):
    """Eigenvalues (ascending) of Rosenbrock's Hessian at x, differentiated by hand."""
    return np.linalg.eigvalsh([[2 - 400 * (x[1] - 3 * x[0] ** 2), -400 * x[0]], [-400 * x[0], 200]])
