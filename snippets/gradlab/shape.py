"""Training a one-feature logistic model sigma(w x + b) with two losses and three optimizers,
vectorized over learning rates and seeds; and the share of a gradient that some points own.

The two losses of a logit z and a label y in {0, 1}, and their derivatives (the formulas of
``losses.sigmoid_squared_error`` and ``losses.binary_cross_entropy_from_logits``):

    squared error   (sigma(z) - y)^2               dL/dz = 2 (sigma(z) - y) sigma(z) (1 - sigma(z))
    cross-entropy   -y log sigma(z) - (1-y) log(1 - sigma(z))     dL/dz = sigma(z) - y

The optimizers differ only in what they do with the gradient g of the mean loss over (w, b):

    gd          theta <- theta - lr g
    normalized  theta <- theta - lr g / ||g||      (a step of fixed length lr)
    adam        gradlab.optim.Adam(lr)             (Kingma & Ba 2015)

Every array has a leading batch shape (one run per learning rate and seed); the data have
shape (seeds, points) and broadcast against it. The line fits at the end serve the regression
half of docs/shape-of-the-loss.md: one line per row (seed) of x and y; the two figures of the
logistic half close the module.
"""

import matplotlib.pyplot as plt
import numpy as np

from . import check, engine, losses, ops, plot
from .optim import Adam

LOSSES = ("squared", "ce")
OPTIMIZERS = ("gd", "normalized", "adam")
LABELS = {"squared": "sigmoid + squared error", "ce": "cross-entropy"}


def sigmoid(z):
    """1 / (1 + e^-z), without overflow for large |z|."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0, e) / (1 + e)  # 1 / (1 + e) for z >= 0, e / (1 + e) below


def logit_gradient(loss, z, y):
    """dL/dz per point for `loss` in LOSSES."""
    s = sigmoid(z)
    if loss == "squared":
        return 2 * (s - y) * s * (1 - s)
    if loss == "ce":
        return s - y
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")


def mean_gradient(loss, w, b, x, y):
    """The gradient of the mean loss over the points (last axis) w.r.t. (w, b)."""
    dz = logit_gradient(loss, w * x + b, y)
    return [np.mean(dz * x, axis=-1, keepdims=True), np.mean(dz, axis=-1, keepdims=True)]


def _loss_and_gradient(loss, w, b, x, y):
    """`mean_loss` and `mean_gradient` from one sigmoid: the training loops' inner step."""
    z = w * x + b
    s = sigmoid(z)
    if loss == "squared":
        error = s - y
        per_point, dz = error**2, 2 * error * s * (1 - s)
    else:
        per_point, dz = np.logaddexp(0.0, z) - y * z, s - y
    n = x.shape[-1]
    return per_point.sum(-1, keepdims=True) / n, [
        (dz * x).sum(-1, keepdims=True) / n,
        dz.sum(-1, keepdims=True) / n,
    ]


def accuracy(w, b, x, y):
    """Share of points whose predicted class (z > 0) is the label, over the last axis."""
    return np.mean((w * x + b > 0) == (y > 0), axis=-1, keepdims=True)


def fitted_accuracy(loss, x, y, x_test, y_test):
    """Per row: fit `loss` to (x, y) with `minima`, return the fit's `accuracy` on (x_test, y_test)."""
    theta, _ = minima(loss, x, y)
    return accuracy(theta[:, :1], theta[:, 1:], x_test, y_test)[:, 0]


def closed_form_error(w, b, x, y):
    """Largest relative disagreement, over both losses, between `mean_gradient` and the engine's
    reverse mode through ``losses.sigmoid_squared_error`` / ``losses.binary_cross_entropy_from_logits``."""
    programs = {"squared": losses.sigmoid_squared_error, "ce": losses.binary_cross_entropy_from_logits}
    return max(
        check.max_rel_error(
            engine.grad(lambda p, f=f: ops.sum(ops.mean(f(p[0] * x + p[1], y), axis=-1)), [w, b]),
            mean_gradient(loss, w, b, x, y),
        )
        for loss, f in programs.items()
    )


def mean_loss(loss, w, b, x, y):
    """The mean loss over the points (last axis), kept as a trailing axis of length 1."""
    z = w * x + b
    if loss == "squared":
        per_point = (sigmoid(z) - y) ** 2
    elif loss == "ce":
        per_point = np.logaddexp(0.0, z) - y * z  # log(1 + e^z) - y z, without overflow
    else:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    return np.mean(per_point, axis=-1, keepdims=True)


def minimize(loss, x, y, start=(1.0, 0.0), iterations=100):
    """(w, b) and the mean loss at a stationary point near `start`, for 1-D x and y: Newton steps
    with the Hessian from central differences of the gradient, halved until the loss decreases,
    and plain gradient steps where that Hessian is not positive definite (`minima` on one row)."""
    theta, value = minima(loss, np.asarray(x)[None], np.asarray(y)[None], start, iterations)
    return theta[0], float(value[0, 0])


def steps_to_gap(loss, optimizer, lr, w0, x, y, best, fraction=0.01, max_steps=2000, with_accuracy=False):
    """The number of steps each run needs until its mean loss L first satisfies
    L - best <= fraction * (L_0 - best), from (w, b) = (w0, 0); np.inf if not within `max_steps`.
    With `with_accuracy`, also each run's `accuracy` at that step (nan if it never gets there).

    `lr` broadcasts against the runs, e.g. shape (n_lr, 1, 1) with x, y of shape (n_seeds,
    points) and `best` (each seed's minimum) of shape (n_seeds, 1); returns an array of the runs'
    batch shape, e.g. (n_lr, n_seeds).

    A run that has arrived leaves the batch: the others go on with the same floating-point
    operations on their own rows (every operation is elementwise or a sum along a run's own
    points, and Adam's state is per entry), so their steps do not depend on who else is running."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    lr = np.asarray(lr, dtype=float)
    shape = np.broadcast_shapes(lr.shape, (*x.shape[:-1], 1))
    params = [np.full(shape, float(w0)), np.zeros(shape)]
    tolerance = fraction * (mean_loss(loss, *params, x, y) - best)
    steps, at_gap = np.full(shape[:-1], np.inf), np.full(shape[:-1], np.nan)
    rows, points = int(np.prod(shape[:-1])), x.shape[-1]

    def flat(a, width=1):  # (runs, width): one row per run
        return np.broadcast_to(a, (*shape[:-1], width)).reshape(rows, width)

    params, tolerance, best = [flat(p) for p in params], flat(tolerance), flat(best)
    x, y, lr, running = flat(x, points), flat(y, points), flat(lr), np.arange(rows)
    adam = Adam(params, lr=lr) if optimizer == "adam" else None
    for step in range(max_steps + 1):
        value, grads = _loss_and_gradient(loss, *params, x, y)
        arrived = (value - best <= tolerance)[:, 0]
        if arrived.any():
            steps.flat[running[arrived]] = step
            if with_accuracy:
                at_gap.flat[running[arrived]] = accuracy(*params, x, y)[arrived, 0]
            keep = ~arrived
            running, params, grads = running[keep], [p[keep] for p in params], [g[keep] for g in grads]
            x, y, lr, best, tolerance = x[keep], y[keep], lr[keep], best[keep], tolerance[keep]
            if adam is not None:  # its per-entry state follows the runs
                adam.m, adam.v, adam.lr = [m[keep] for m in adam.m], [v[keep] for v in adam.v], lr
        if step == max_steps or running.size == 0:
            break
        params = update(optimizer, params, grads, lr, adam)
    return (steps, at_gap) if with_accuracy else steps


def update(optimizer, params, grads, lr, adam=None):
    """One step of `optimizer` on the parameter list (w, b); `adam` is the optim.Adam state."""
    if optimizer == "gd":
        return [p - lr * g for p, g in zip(params, grads, strict=True)]
    if optimizer == "normalized":
        norm = np.sqrt(sum(g * g for g in grads))
        return [p - lr * g / np.where(norm > 0, norm, 1.0) for p, g in zip(params, grads, strict=True)]
    if optimizer == "adam":
        return adam.step(params, grads)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")


def best_learning_rate(steps, lrs):
    """The grid's learning rate whose worst run over seeds (axis 1) needs the fewest steps, ties
    to the smaller rate; returns (lr, that row of steps)."""
    worst = np.max(steps, axis=1)
    index = int(np.argmin(worst))  # argmin takes the first, i.e. the smallest tied rate
    return float(lrs[index]), steps[index]


def share(norms, mask):
    """sum of norms over the points in `mask` / sum over all points (last axis)."""
    return np.sum(np.where(mask, norms, 0.0), axis=-1) / np.sum(norms, axis=-1)


def minima(loss, x, y, start=(1.0, 0.0), iterations=100):
    """`minimize` for every row of x, y at once: ((w, b) per row, shape (n, 2); minima, shape (n, 1)).
    The rows run side by side, each with its own Hessian, Newton or gradient step and line search
    (a row halves its own step); every operation acts on one row's entries, so a row's result does
    not depend on the other rows (tests/test_shape.py checks it against one row at a time)."""
    rows = len(x)

    def value(theta):
        return mean_loss(loss, theta[:, :1], theta[:, 1:], x, y)[:, 0]

    def gradient(theta):
        return np.concatenate(mean_gradient(loss, theta[:, :1], theta[:, 1:], x, y), axis=1)

    theta, h = np.tile(np.array(start, dtype=float), (rows, 1)), 1e-6
    for _ in range(iterations):
        g = gradient(theta)
        hessian = np.stack(
            [(gradient(theta + h * e) - gradient(theta - h * e)) / (2 * h) for e in np.eye(2)], 1
        )
        hessian = (hessian + hessian.transpose(0, 2, 1)) / 2
        newton = np.all(np.linalg.eigvalsh(hessian) > 0, axis=1)
        direction = -g
        if newton.any():
            direction[newton] = -np.linalg.solve(hessian[newton], g[newton][:, :, None])[:, :, 0]
        t, searching, current = np.ones((rows, 1)), np.ones(rows, dtype=bool), value(theta)
        while searching.any():
            searching &= (value(theta + t * direction) > current) & (t[:, 0] > 1e-12)
            t[searching] /= 2
        theta = theta + t * direction
    return theta, value(theta)[:, None]


def tune(loss, optimizer, lrs, w0, x, y, best, **options):
    """`steps_to_gap` for every rate in the 1-D grid `lrs`: returns (steps of shape (n_lr, n_seeds),
    the best rate, that rate's steps per seed), the best rate as in `best_learning_rate`."""
    grid = steps_to_gap(loss, optimizer, np.asarray(lrs)[:, None, None], w0, x, y, best, **options)
    return (grid, *best_learning_rate(grid, lrs))


# ----- Lines through the rows of x, y: one fit per seed ------------------------------------------


def fit_least_squares(x, y):
    """(slopes, intercepts) minimizing sum (a x + b - y)^2 for each row, in closed form."""
    fits = [
        np.linalg.lstsq(np.stack([xi, np.ones_like(xi)], 1), yi, rcond=None)[0]
        for xi, yi in zip(x, y, strict=True)
    ]
    return np.array(fits).T


def safe_rate(x, lr=1.0):
    """Per row of x, `lr` or, where smaller, 1.5 / L: L is the largest eigenvalue of the mean of
    (x_i, 1)(x_i, 1)^T, the Hessian of the mean of r^2 / 2, which bounds the Hessian of the mean
    of any convex loss whose second derivative is at most 1 (Huber's); gradient descent on such a
    loss converges at any rate below 2 / L. Shape (rows, 1). For x drawn uniformly from [-1, 1],
    L is near 1 and the rate is `lr` = 1 itself; points far out in x (high leverage) make L large."""
    mean_x, mean_x2 = x.mean(-1), (x * x).mean(-1)
    largest = (mean_x2 + 1) / 2 + np.sqrt(((mean_x2 - 1) / 2) ** 2 + mean_x**2)
    return np.minimum(lr, 1.5 / largest)[:, None]


def fit_gradient_descent(loss, x, y, lr=1.0, steps=2000):
    """(slopes, intercepts, largest final gradient norm) after `steps` of gradient descent on the
    mean of loss(a x + b - y) over each row, from (0, 0), at `safe_rate(x, lr)`; the gradient by
    the engine."""
    params, lr = [np.zeros((len(x), 1)), np.zeros((len(x), 1))], safe_rate(x, lr)
    for _ in range(steps):
        grads = engine.grad(lambda p: ops.sum(loss(p[0] * x + p[1] - y)) / x.shape[-1], params)
        params = [p - lr * g for p, g in zip(params, grads, strict=True)]
    return params[0][:, 0], params[1][:, 0], float(np.hypot(*grads).max())


def least_median_of_squares(x, y):
    """Per row: the line through two of the points with the smallest median squared residual (least
    median of squares, Rousseeuw 1984, searched over every pair), and the scale estimate
    1.4826 (1 + 5 / (n - 2)) sqrt(that median). A high-breakdown fit: almost half the points can be
    anywhere. Returns (slopes, intercepts, scales)."""
    first, second = np.triu_indices(x.shape[-1], 1)
    run = x[:, second] - x[:, first]
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = np.where(run != 0, (y[:, second] - y[:, first]) / run, np.nan)  # (rows, pairs)
    intercepts = y[:, first] - slopes * x[:, first]
    medians = np.median((slopes[..., None] * x[:, None] + intercepts[..., None] - y[:, None]) ** 2, axis=-1)
    best = np.nanargmin(np.where(np.isnan(slopes), np.inf, medians), axis=1)
    rows, n = np.arange(len(x)), x.shape[-1]
    scales = 1.4826 * (1 + 5 / (n - 2)) * np.sqrt(medians[rows, best])
    return slopes[rows, best], intercepts[rows, best], scales


def biweight_fit(x, y, start, scale, c=4.685, iterations=200):
    """Per row: Tukey's biweight fit of a line by iteratively reweighted least squares from
    `start` = (slopes, intercepts), with weights (1 - (r / (c scale))^2)^2 where |r| < c scale, 0
    beyond: a loss whose pull returns to zero for large residuals. It is not convex, so the fit
    is the stationary point the iteration reaches from its start. Returns (slopes, intercepts)."""
    slopes, intercepts = (np.array(v, dtype=float) for v in start)
    limit = (c * np.asarray(scale, dtype=float))[:, None]
    for _ in range(iterations):
        u = (slopes[:, None] * x + intercepts[:, None] - y) / limit
        w = np.where(np.abs(u) < 1, (1 - u**2) ** 2, 0.0)
        sw, sx, sxx, sy, sxy = (np.sum(w * t, axis=1) for t in (1, x, x * x, y, x * y))
        det = sw * sxx - sx**2
        ok = det > 1e-12 * np.maximum(sw * sxx, 1e-300)  # a row whose weights vanish keeps its line
        safe = np.where(ok, det, 1.0)
        slopes = np.where(ok, (sw * sxy - sx * sy) / safe, slopes)
        intercepts = np.where(ok, (sxx * sy - sx * sxy) / safe, intercepts)
    return slopes, intercepts


def record_biweight(results, x, y, huber_fit, true_slope):
    """Tukey's biweight (`biweight_fit`) from two starts, Huber's fit and the least-median-of-squares
    line, both with the latter's scale: records the spreads biweight_huber_slope_error and
    biweight_lms_slope_error and the number biweight_huber_stuck (seeds whose error from Huber's
    start exceeds 1); returns the slope errors by key."""
    *lms_line, scale = least_median_of_squares(x, y)
    errors = {}
    for name, start in (("huber", huber_fit), ("lms", lms_line)):
        errors[f"biweight_{name}"] = np.abs(biweight_fit(x, y, start, scale)[0] - true_slope)
        about = f"biweight from the {name} fit: |slope - true slope|"
        results.spread(f"biweight_{name}_slope_error", errors[f"biweight_{name}"], about)
    stuck = int(np.sum(errors["biweight_huber"] > 1))
    results.number("biweight_huber_stuck", stuck, "seeds whose biweight from Huber's fit misses by over 1")
    return errors


def flip_price(seeds, flip, draws, points, test_points):
    """Held-out accuracy of cross-entropy's fit minus squared error's, both fitted (`minima`) to
    labels flipped with probability `flip`: `draws` data sets per seed, each from its own
    generator default_rng([seed, draw]), x ~ N(0, 1) and y = [x + 0.3 N(0, 1) > 0] as in the
    snippet, scored on `test_points` fresh clean points. One value per data set, seed-major."""
    rngs = [np.random.default_rng([seed, draw]) for seed in seeds for draw in range(draws)]
    x, noise = (np.stack([rng.normal(size=points) for rng in rngs]) for _ in range(2))
    y = (x + 0.3 * noise > 0).astype(float)
    y_noisy = np.where(np.stack([rng.random(points) < flip for rng in rngs]), 1 - y, y)
    x_test, noise_test = (np.stack([rng.normal(size=test_points) for rng in rngs]) for _ in range(2))
    y_test = (x_test + 0.3 * noise_test > 0).astype(float)
    ce, squared = (fitted_accuracy(key, x, y_noisy, x_test, y_test) for key in ("ce", "squared"))
    return ce - squared


def record_price(results, seeds, flip, draws, points, test_points):
    """`flip_price` in percentage points, recorded as price_draws (how many data sets), price_mean,
    price_se (its standard error), price_min and price_max; returns those values by name."""
    price = 100 * flip_price(seeds, flip, draws, points, test_points)
    values = {"draws": price.size, "mean": price.mean(), "se": price.std(ddof=1) / np.sqrt(price.size),
              "min": price.min(), "max": price.max()}  # fmt: skip
    for key, value in values.items():
        about = (
            f"held-out accuracy, CE's fit minus squared error's (points), {draws} data sets per seed: {key}"
        )
        results.number(f"price_{key}", value, about)
    return values


def per_point_gradient_norms(loss, slopes, intercepts, x, y):
    """||g_i||, g_i = loss'(r_i) (x_i, 1), for every point of every row: each point gets its own copy of
    its row's (slope, intercept), so one backward pass returns every point's own gradient."""
    copies = [np.broadcast_to(np.reshape(v, (-1, 1)), x.shape).copy() for v in (slopes, intercepts)]
    g_slope, g_intercept = engine.grad(lambda p: ops.sum(loss(p[0] * x + p[1] - y)), copies)
    return np.hypot(g_slope, g_intercept)


# ----- The logistic half's figures ---------------------------------------------------------------


def logit_gradient_figure(results, key, programs, z, logit):
    """Figure ``key``: |dL/dz| for label 1 on the grid ``z``, by the engine's reverse mode through each
    of ``programs`` (loss name in LOSSES -> loss(z, y)), with the quoted ``logit`` marked."""
    fig, ax = plt.subplots()
    for name, loss in programs.items():
        (gradient,) = engine.grad(lambda p, loss=loss: ops.sum(loss(p[0], 1.0)), [z])
        ax.plot(z, np.abs(gradient), label=LABELS[name])
    ax.axvline(logit, color=plot.PALETTE[4], linestyle=":", label=f"z = {logit:g}")
    ax.set(yscale="log", title="Cross-entropy keeps a gradient where the sigmoid saturates (label 1)")
    ax.set(xlabel="logit z", ylabel="|dL/dz| (log scale)")
    ax.legend()
    results.figure(
        fig,
        key,
        alt="Absolute gradient with respect to the logit for label 1: cross-entropy's tends to 1 as z "
        "becomes very negative, sigmoid plus squared error's falls exponentially toward zero.",
    )


def tuning_figure(results, key, lrs, grids, cap):
    """Figure ``key``: the median over seeds of `tune`'s steps against the rate, for every (optimizer,
    loss) in ``grids`` (-> steps of shape (len(lrs), seeds)); runs past ``cap`` leave gaps."""
    fig, ax = plt.subplots(figsize=(8.4, 3.6))
    for (optimizer, loss), grid in grids.items():
        color, style = plot.PALETTE[OPTIMIZERS.index(optimizer)], "-" if loss == "squared" else "--"
        ax.loglog(lrs, np.median(grid, axis=1), style, color=color, label=f"{optimizer}, {LABELS[loss]}")
    ax.set(title="Steps to 1% of the loss gap against the learning rate", xlabel="learning rate (log scale)")
    ax.set(ylabel="steps, median over seeds (log scale)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    results.figure(
        fig,
        key,
        alt="Median steps to 1% of the loss gap against the learning rate: gradient descent, normalized "
        f"steps, Adam, each with squared error behind a sigmoid and with cross-entropy; gaps: not within "
        f"{cap} steps.",
    )
