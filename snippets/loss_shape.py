"""The shape of the loss: outliers under squared error and Huber, saturation under sigmoid + squared error

Two experiments in which the loss, not the algorithm that differentiates it, decides the
gradient. A seeded 1-D linear regression with a few gross outliers, fitted with squared error
(closed form) and with the Huber loss (gradient descent): how much of the gradient the outliers
own, and how far each fitted line lands from the true one. Then a sigmoid output trained with
squared error or with cross-entropy from logits, started confidently wrong: the gradient with
respect to the logit, and the steps gradient descent needs. Quoted by docs/shape-of-the-loss.md.
"""

# %% [markdown]
# ## Data: a line, noise, and a few gross outliers
# $y_i = a x_i + b + \varepsilon_i$, then the `--outliers` points with the largest $x$ are moved
# down by `--offset`. The residual of point $i$ is $r_i = \hat a x_i + \hat b - y_i$.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, engine, losses, ops, plot, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--points", type=snippet.positive_int, default=40, help="data points")
parser.add_argument("--outliers", type=int, default=3, help="points moved far off the line (0 or more)")
parser.add_argument("--offset", type=float, default=-8.0, help="how far the outliers are moved in y")
parser.add_argument("--delta", type=snippet.positive_float, default=1.0, help="Huber threshold delta")
parser.add_argument(
    "--logit", type=float, default=-10.0, help="logit z at which gradients are quoted (label 1)"
)
parser.add_argument("--init-weight", type=float, default=-8.0, help="initial weight of the logistic model")
parser.add_argument(
    "--lr", type=snippet.positive_float, default=1.0, help="learning rate of gradient descent"
)
args, results = snippet.parse(parser)
if not 0 <= args.outliers < args.points:
    parser.error(f"--outliers must be in [0, {args.points}), got {args.outliers}")
rng = np.random.default_rng(args.seed)

true_slope, true_intercept, noise = 2.0, 0.5, 0.3
x = np.sort(rng.uniform(-1, 1, args.points))
y_clean = true_slope * x + true_intercept + noise * rng.normal(size=args.points)
is_outlier = np.arange(args.points) >= args.points - args.outliers  # the largest x
y = y_clean + args.offset * is_outlier
for key, value, about in [
    ("points", args.points, "data points"),
    ("outliers", args.outliers, "gross outliers"),
    ("offset", args.offset, "outliers' shift in y"),
    ("delta", args.delta, "Huber threshold"),
    ("true_slope", true_slope, "slope of the true line"),
    ("true_intercept", true_intercept, "intercept of the true line"),
]:
    results.number(key, value, about)

# %% [markdown]
# ## Who owns the gradient
# Give every point its own copy of $(\hat a, \hat b)$, all equal: one backward pass then returns
# each point's own gradient $\ell'(r_i)\,(x_i, 1)$. The outliers' share is
# $\sum_{i \in O} \lVert g_i \rVert / \sum_i \lVert g_i \rVert$.

# %%
LOSSES = {"squared": losses.squared_error, "huber": lambda r: losses.huber(r, args.delta)}


def mean_loss(loss, x, y):
    return lambda params: ops.mean(loss(params[0] * x + params[1] - y))


def per_point_gradient_norms(loss, slope, intercept):
    copies = [np.full(args.points, slope), np.full(args.points, intercept)]
    g_slope, g_intercept = engine.grad(lambda p: ops.sum(loss(p[0] * x + p[1] - y)), copies)
    return np.hypot(g_slope, g_intercept)


def fit_huber(x, y, steps=2000):
    params = [np.array(0.0), np.array(0.0)]
    for _ in range(steps):  # convex, smooth: plain gradient descent converges
        _, grads = engine.value_and_grad(mean_loss(LOSSES["huber"], x, y), params)
        params = [p - args.lr * g for p, g in zip(params, grads, strict=True)]
    return [p.item() for p in params], np.hypot(*grads)


def fit_squared(x, y):  # closed form: least squares on [x, 1]
    return np.linalg.lstsq(np.stack([x, np.ones_like(x)], 1), y, rcond=None)[0]


huber_fit, huber_final_grad_norm = fit_huber(x, y)
fits = {"squared": fit_squared(x, y), "huber": huber_fit, "squared_clean": fit_squared(x, y_clean)}
results.number(
    "huber_final_grad_norm", huber_final_grad_norm, "Huber fit: gradient norm at the end", atol=1e-8
)
for name, (slope, intercept) in fits.items():
    results.number(f"{name}_slope_error", abs(slope - true_slope), f"{name} fit: |slope - true slope|")
    results.number(
        f"{name}_intercept_error", abs(intercept - true_intercept), f"{name} fit: |intercept - true|"
    )
for name, loss in LOSSES.items():
    for where, (slope, intercept) in (("initial", (0.0, 0.0)), ("fitted", fits[name])):
        norms = per_point_gradient_norms(loss, slope, intercept)
        share = norms[is_outlier].sum() / norms.sum()
        results.number(f"{name}_share_{where}", share, f"{name}, {where}: outliers' share of sum |g_i|")
        ratio = norms[is_outlier].mean() / np.median(norms[~is_outlier])
        results.number(f"{name}_ratio_{where}", ratio, f"{name}, {where}: mean outlier |g_i| / median inlier")
results.number("outlier_fraction", args.outliers / args.points, "outliers as a fraction of the points")

# %%
fig, ax = plt.subplots()
# hollow markers: in the dark theme the data's sky blue is close to the squared-error line's blue
ax.plot(x[~is_outlier], y[~is_outlier], "o", color=plot.PALETTE[5], mfc="none", markersize=4, label="data")
ax.plot(x[is_outlier], y[is_outlier], "x", color=plot.PALETTE[3], markersize=7, mew=2, label="outliers")
grid = np.array([-1.0, 1.0])
labels = {"squared": "squared error", "huber": "Huber", "squared_clean": "squared error, no outliers"}
styles = ("-", "-", ":")
for (name, (slope, intercept)), style, color in zip(fits.items(), styles, plot.PALETTE[:3], strict=True):
    ax.plot(grid, slope * grid + intercept, style, color=color, label=labels[name])
ax.plot(grid, true_slope * grid + true_intercept, color=plot.PALETTE[4], lw=1, label="true line")
ax.set(
    title=f"{args.outliers} outliers tilt the squared-error line, the Huber line much less",
    xlabel="x",
    ylabel="y",
)
ax.legend(loc="lower left")
results.figure(
    fig,
    "regression_fits",
    alt=f"Noisy points along a line and {args.outliers} outliers moved by {args.offset:g} in y at the "
    "right end. Slope error of each fitted line: "
    + "; ".join(f"{labels[name]}: {abs(fit[0] - true_slope):.2f}" for name, fit in fits.items())
    + ".",
)

# %% [markdown]
# ## Squared error behind a sigmoid, against cross-entropy from logits
# For label $y = 1$ and logit $z$: $\partial_z (\sigma(z) - y)^2 = 2(\sigma(z) - y)\sigma(z)(1 - \sigma(z))$,
# and $\partial_z \mathrm{BCE}(z, y) = \sigma(z) - y$. The engine computes both on a grid of $z$
# (each entry's loss depends only on its own $z$, so one backward pass gives every derivative).

# %%
LOGIT_LOSSES = {
    "sigmoid + squared error": losses.sigmoid_squared_error,
    "cross-entropy": losses.binary_cross_entropy_from_logits,
}
z_grid = np.linspace(-20, 10, 301)
fig, ax = plt.subplots()
for name, loss in LOGIT_LOSSES.items():
    (gradient,) = engine.grad(lambda p, loss=loss: ops.sum(loss(p[0], 1.0)), [z_grid])
    ax.plot(z_grid, np.abs(gradient), label=name)
ax.axvline(args.logit, color=plot.PALETTE[4], linestyle=":", label=f"z = {args.logit:g}")
ax.set(yscale="log", title="Cross-entropy keeps a gradient where the sigmoid saturates (label 1)")
ax.set(xlabel="logit z", ylabel="|dL/dz| (log scale)")
ax.legend()
results.figure(
    fig,
    "logit_gradients",
    alt="Absolute gradient with respect to the logit for label 1: cross-entropy's tends to 1 as z "
    "becomes very negative, sigmoid plus squared error's falls exponentially toward zero.",
)
at_logit = np.array([args.logit])
for key, loss in zip(("squared", "ce"), LOGIT_LOSSES.values(), strict=True):
    (gradient,) = engine.grad(lambda p, loss=loss: ops.sum(loss(p[0], 1.0)), [at_logit])
    results.number(f"logit_grad_{key}", gradient.item(), f"dL/dz at z = {args.logit:g}, label 1", rtol=1e-9)
results.number("logit", args.logit, "logit where the gradients are quoted")

# %% [markdown]
# ## Is it backprop?
# Each loss's gradient by reverse mode, forward mode, central differences and the complex step.

# %%
worst = {"forward": 0.0, "central": 0.0, "complex": 0.0}
problems = [(mean_loss(loss, x, y), [np.array([0.0]), np.array([0.0])]) for loss in LOSSES.values()]
problems += [(lambda p, f=loss: ops.sum(f(p[0], 1.0)), [at_logit]) for loss in LOGIT_LOSSES.values()]
for f, params in problems:
    for pair, error in check.compare(f, params).items():
        method = pair.removeprefix("reverse vs ")
        worst[method] = max(worst[method], error)
for method, error in worst.items():
    tolerance = 1e-5 if method == "central" else 1e-10  # the complex tanh rounds differently
    results.number(
        f"disagreement_{method}", error, f"largest reverse vs {method}, all four losses", atol=tolerance
    )

# %% [markdown]
# ## Training from a confidently wrong start
# A logistic model $\sigma(w x + b)$ on seeded 1-D data, started at $w$ = `--init-weight`, trained by
# gradient descent with each loss until 90% of the points are classified correctly.

# %%
x_cls = rng.normal(size=100)
y_cls = (x_cls + 0.3 * rng.normal(size=100) > 0).astype(float)
max_steps = 20000
for key, loss in zip(("squared", "ce"), LOGIT_LOSSES.values(), strict=True):
    params = [np.array(args.init_weight), np.array(0.0)]
    step = 0
    while np.mean((params[0] * x_cls + params[1] > 0) == (y_cls > 0)) < 0.9 and step < max_steps:
        mean_loss_cls = lambda p, loss=loss: ops.mean(loss(p[0] * x_cls + p[1], y_cls))  # noqa: E731
        _, grads = engine.value_and_grad(mean_loss_cls, params)
        params = [p - args.lr * g for p, g in zip(params, grads, strict=True)]
        step += 1
    results.number(f"steps_{key}", step, f"GD steps to 90% accuracy (cap {max_steps})")
    print(f"{key:>8}: {step:5d} steps, w = {params[0]:+.3f}, b = {params[1]:+.3f}")
results.number("init_weight", args.init_weight, "initial weight of the logistic model")
results.number("lr", args.lr, "learning rate")

# %%
results.save()
