"""The shape of the loss: outliers under squared error and Huber, saturation under sigmoid + squared error

A line through gross outliers fitted with squared error and Huber (also over a sweep of delta): the
outliers' share of the summed per-point gradient norms, the slopes. A sigmoid output started confidently
wrong, with squared error or cross-entropy: the logit gradient, the steps of gradient descent, normalized
steps and Adam (each at its best rate from one grid); flipped labels: their gradient share, and the
held-out accuracy of each loss's fit to them. Five seeds; docs/shape-of-the-loss.md.
"""

# %% [markdown]
# ## A line and gross outliers
# $y_i = a x_i + b + \varepsilon_i$; the `--outliers` largest-$x$ points moved by `--offset` (and, with
# `--outlier-x`, to that $x$: high leverage). Row = seed.

# %%
import numpy as np
from gradlab import check, engine, huber_frames, losses, ops, shape, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--points", type=snippet.positive_int, default=40, help="data points")
parser.add_argument("--outliers", type=int, default=3, help="points moved far off the line (0 or more)")
parser.add_argument("--outlier-x", type=float, help="put the outliers at this x (default: the largest x)")
parser.add_argument("--offset", type=float, default=-8.0, help="how far the outliers are moved in y")
parser.add_argument("--delta", type=snippet.positive_float, default=1.0, help="Huber threshold delta")
parser.add_argument("--logit", type=float, default=-10.0, help="logit z where gradients are quoted (label 1)")
parser.add_argument("--init-weight", type=float, default=-8.0, help="initial weight of the logistic model")
parser.add_argument("--lr", type=snippet.positive_float, default=1.0, help="the pitfall's GD rate")
parser.add_argument("--flip", type=float, default=0.1, help="fraction of labels flipped in the noise test")
args, results = snippet.parse(parser)
if not (0 < args.outliers < args.points and 0 < args.flip < 0.5):
    parser.error(f"need 0 < --outliers < --points and 0 < --flip < 0.5, got {args.outliers}, {args.flip}")
SEEDS, LRS, CAP, N_CLS, N_TEST = snippet.seeds(args.seed), 10.0 ** np.arange(-1, 3.01, 0.5), 2000, 100, 10000
rngs = [np.random.default_rng(seed) for seed in SEEDS]

true_slope, true_intercept, noise = 2.0, 0.5, 0.3
x = np.sort(np.stack([rng.uniform(-1, 1, args.points) for rng in rngs]), axis=1)
is_outlier = np.arange(args.points) >= args.points - args.outliers  # the largest x
x[:, is_outlier] = x[:, is_outlier] if args.outlier_x is None else args.outlier_x  # or far out: leverage
y_clean = true_slope * x + true_intercept + noise * np.stack([rng.normal(size=args.points) for rng in rngs])
y = y_clean + args.offset * is_outlier
for key, value, about in [
    ("points", args.points, "data points"), ("outliers", args.outliers, "gross outliers"),
    ("outlier_fraction", args.outliers / args.points, "outliers' share"), ("offset", args.offset, "y shift"),
    ("flip", args.flip, "probability of flipping a label"), ("test_points", N_TEST, "held-out points"),
    ("logit", args.logit, "logit where the gradients are quoted"), ("delta", args.delta, "Huber threshold"),
    ("true_slope", true_slope, "slope of the true line"), ("true_intercept", true_intercept, "its intercept"),
    ("first_seed", SEEDS[0], "seed of the regression figure"), ("lr", args.lr, "the pitfall's learning rate"),
    ("init_weight", args.init_weight, "initial weight of the logistic model"),
    ("lr_grid_min", LRS[0], "smallest grid rate"), ("lr_grid_max", LRS[-1], "largest grid rate"),
    ("max_steps", CAP, "step cap of the tuned runs (the pitfall runs: 5 times more)"),
    ("cls_points", N_CLS, "points per seed of the logistic model"),
]:  # fmt: skip
    results.number(key, value, about)

# %% [markdown]
# ## Who owns the gradient
# Give every point its own copy of $(\hat a, \hat b)$, all equal: one backward pass returns each
# point's gradient $g_i = \ell'(r_i)\,(x_i, 1)$. The outliers' share is
# $\sum_{i \in O} \lVert g_i \rVert / \sum_i \lVert g_i \rVert$. Huber: gradient descent on all seeds at once,
# with and without the outliers, and on the first seed for every δ of the slider (`gradlab.huber_frames`).

# %%
LOSSES = {"squared": losses.squared_error, "huber": lambda r: losses.huber(r, args.delta)}
DELTAS = sorted({0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, args.delta})  # slider stops
both = huber_frames.fit_with_sweep(np.concatenate([x, x]), np.concatenate([y, y_clean]), args.delta, DELTAS)
(*huber_both, grad_norm), sweep = both  # convex: GD converges; rows 0-4 with the outliers, 5-9 without
results.number("huber_final_grad_norm", grad_norm, "Huber fit: largest final gradient norm", atol=1e-8)
huber_fit, huber_clean = [v[: len(SEEDS)] for v in huber_both], [v[len(SEEDS) :] for v in huber_both]
fits = {"squared": shape.fit_least_squares(x, y), "huber": huber_fit,
        "squared_clean": shape.fit_least_squares(x, y_clean)}  # fmt: skip
swept = huber_frames.record(results, "delta_sweep", x, y, is_outlier, DELTAS, sweep, fits["squared"],
                            (true_slope, true_intercept), default=args.delta, seed=args.seed)  # fmt: skip
for name, (slope, intercept) in fits.items():
    results.spread(f"{name}_slope_error", np.abs(slope - true_slope), f"{name} fit: |slope - true slope|")
    results.spread(f"{name}_intercept_error", np.abs(intercept - true_intercept), f"{name}: |b - true b|")
shares = {}
for name, loss in LOSSES.items():
    for where, point in (("initial", (np.zeros(len(SEEDS)),) * 2), ("fitted", fits[name])):
        norms = shape.per_point_gradient_norms(loss, *point, x, y)
        shares[name, where] = shape.share(norms, is_outlier)
        results.spread(f"{name}_share_{where}", shares[name, where], f"{name}, {where}: outliers' share")
        ratio = norms[:, is_outlier].mean(1) / np.median(norms[:, ~is_outlier], 1)
        results.spread(f"{name}_ratio_{where}", ratio, f"{name}, {where}: mean outlier |g_i| / median inlier")
errors = {name: np.abs(fits[name][0] - true_slope) for name in fits}
shift = {"squared": fits["squared"][0] - fits["squared_clean"][0], "huber": huber_fit[0] - huber_clean[0]}
for name in shift:  # the outliers' own effect: the same loss on the same points without them
    results.spread(f"{name}_outlier_shift", np.abs(shift[name]), f"{name}: |slope - slope without outliers|")
results.spread("huber_over_squared", errors["huber"] / errors["squared"], "slope error: Huber's / LS'")
errors |= shape.record_biweight(results, x, y, huber_fit, true_slope)  # a redescending loss from two starts
for name, holds, statement, values in [
    ("outliers_outweigh_their_number", np.all(shares["squared", "initial"] > 3 * args.outliers / args.points)
     and np.all(shares["squared", "fitted"] > 3 * args.outliers / args.points),
     "under squared error the outliers own over three times their share of the points", {}),
    ("huber_shrinks_share", np.all(shares["huber", "fitted"] < shares["squared", "fitted"]),
     "at each loss's own fit Huber gives the outliers a smaller share than squared error", {}),
    ("huber_becomes_squared", swept["largest_residual"] < DELTAS[-1] and swept["to_least_squares"] < 1e-9,
     "once δ exceeds every least-squares residual, the Huber fit is the least-squares fit (to 1e-9)", swept),
    ("small_delta_robust", np.all(swept["errors"][np.array(DELTAS) <= 1] < swept["squared_error"] / 2),
     "for every δ up to 1 the Huber slope error is under half the least-squares one", swept),
    ("huber_fits_better", np.all(errors["huber"] < errors["squared"] / 2),
     "Huber's slope error is less than half the squared-error fit's", errors),
    ("huber_still_pulled", np.all(shift["huber"] * np.sign(args.offset) > 0),
     "the outliers still pull Huber's slope their way, against Huber's fit without them", shift),
]:  # fmt: skip
    results.claim(name, bool(holds), statement, values)

# %%  the first seed's points and lines
huber_frames.figure(results, "regression_fits", x, y, is_outlier, fits, (true_slope, true_intercept),
                    seed=SEEDS[0], offset=args.offset)  # fmt: skip

# %% [markdown]
# ## Squared error behind a sigmoid, against cross-entropy from logits
# For label $y = 1$ and logit $z$: $\partial_z (\sigma(z) - y)^2 = 2(\sigma(z) - y)\sigma(z)(1 - \sigma(z))$,
# and $\partial_z \mathrm{BCE}(z, y) = \sigma(z) - y$. The engine computes both on a grid of $z$.

# %%
LOGIT_LOSSES = {"squared": losses.sigmoid_squared_error, "ce": losses.binary_cross_entropy_from_logits}
shape.logit_gradient_figure(results, "logit_gradients", LOGIT_LOSSES, np.linspace(-20, 10, 301), args.logit)
at_logit = np.array([args.logit])
for key, loss in LOGIT_LOSSES.items():
    (gradient,) = engine.grad(lambda p, loss=loss: ops.sum(loss(p[0], 1.0)), [at_logit])
    results.number(f"logit_grad_{key}", gradient.item(), f"dL/dz at z = {args.logit:g}, label 1", rtol=1e-9)
results.number("logit_grad_squared_predicted", -2 * np.exp(args.logit), "-2 e^z, for z << 0", rtol=1e-9)

# %% [markdown]
# ## Is it backprop?
# Reverse mode against forward mode, central differences and the complex step, all four losses.

# %%
origin = [np.zeros((len(SEEDS), 1))] * 2
problems = [(lambda p, f=f: ops.mean(f(p[0] * x + p[1] - y)), origin) for f in LOSSES.values()]
problems += [(lambda p, f=loss: ops.sum(f(p[0], 1.0)), [at_logit]) for loss in LOGIT_LOSSES.values()]
comparisons = [check.compare(f, point) for f, point in problems]
for method in ("forward", "central", "complex"):
    worst = max(c[f"reverse vs {method}"] for c in comparisons)
    tolerance = 1e-5 if method == "central" else 1e-10  # the complex tanh rounds differently
    results.number(f"disagreement_{method}", worst, f"reverse vs {method}, all four losses", atol=tolerance)

# %% [markdown]
# ## Training from a confidently wrong start: the function's remedy and the optimizer's
# $\sigma(w x + b)$ on 1-D data from $w$ = `--init-weight`, $b = 0$: steps until $L - L^* \le 1\%$ of
# $L_0 - L^*$ ($L^*$ by Newton), each loss and optimizer at its best rate from one grid (`gradlab.shape`).

# %%
x_cls = np.stack([rng.normal(size=N_CLS) for rng in rngs])
y_cls = (x_cls + 0.3 * np.stack([rng.normal(size=N_CLS) for rng in rngs]) > 0).astype(float)
start = [np.full((len(SEEDS), 1), args.init_weight), np.zeros((len(SEEDS), 1))]
closed_form_error = shape.closed_form_error(*start, x_cls, y_cls)
results.number("closed_form_vs_engine", closed_form_error, "shape.mean_gradient vs engine", atol=1e-12)
fitted = {key: shape.minima(key, x_cls, y_cls) for key in LOGIT_LOSSES}  # ((w, b) per seed, L* per seed)
minima, steps, best, at_gap = {key: fitted[key][1] for key in LOGIT_LOSSES}, {}, {}, {}
grids = {}  # steps per (rate, seed) of each optimizer and loss
for optimizer, key in [(o, k) for o in shape.OPTIMIZERS for k in LOGIT_LOSSES]:
    run = (key, optimizer, LRS, args.init_weight, x_cls, y_cls, minima[key])
    grids[optimizer, key], best[optimizer, key], steps[optimizer, key] = shape.tune(*run, max_steps=CAP)
    results.number(f"best_lr_{optimizer}_{key}", best[optimizer, key], f"{optimizer}, {key}: best grid rate")
    results.spread(f"steps_{optimizer}_{key}", steps[optimizer, key], f"{optimizer}, {key}: steps")
for key in LOGIT_LOSSES:  # the pitfall: plain gradient descent at --lr, with a longer cap
    run = (key, "gd", args.lr, args.init_weight, x_cls, y_cls, minima[key])
    steps["pitfall", key], at_gap[key] = shape.steps_to_gap(*run, max_steps=5 * CAP, with_accuracy=True)
    at_gap[key] = np.abs(at_gap[key] - shape.accuracy(*fitted[key][0].T[..., None], x_cls, y_cls)[:, 0])
    results.spread(f"steps_pitfall_{key}", steps["pitfall", key], f"gd at --lr, {key}")
shape.tuning_figure(results, "tuning", LRS, grids, CAP)

# %% [markdown]
# ## Flipped labels: the pull, and the price
# Labels flipped with probability `--flip`: their share of $\sum_i \lVert g_i \rVert$ at one line (the clean
# labels' CE fit) under each loss; then each loss fitted to the flipped labels, scored on fresh clean points.

# %%
flipped = np.stack([rng.random(N_CLS) < args.flip for rng in rngs])
y_noisy = np.where(flipped, 1 - y_cls, y_cls)
x_test = np.stack([rng.normal(size=N_TEST) for rng in rngs])  # fresh points, labelled by the same rule
y_test = (x_test + 0.3 * np.stack([rng.normal(size=N_TEST) for rng in rngs]) > 0).astype(float)
w_fit, b_fit = fitted["ce"][0].T[..., None]  # the clean labels' cross-entropy fit
flip_share, held_out = {}, {}
for key in LOGIT_LOSSES:
    dz = np.abs(shape.logit_gradient(key, w_fit * x_cls + b_fit, y_noisy))
    flip_share[key] = shape.share(dz * np.hypot(x_cls, 1.0), flipped)
    results.spread(f"flip_share_{key}", flip_share[key], f"{key}: flipped points' share of sum |g_i|")
    held_out[key] = shape.fitted_accuracy(key, x_cls, y_noisy, x_test, y_test)
    results.spread(f"noisy_accuracy_{key}", held_out[key], f"{key} fit to flipped labels: held-out accuracy")
results.spread("flip_share_ratio", flip_share["ce"] / flip_share["squared"], "flipped share: CE / squared")
results.spread("noisy_accuracy_gap", 100 * (held_out["ce"] - held_out["squared"]), "held-out: CE - squared")
price = shape.record_price(results, SEEDS, args.flip, 20, N_CLS, N_TEST)  # 20 more data sets per seed
pitfall_ratio = steps["pitfall", "squared"] / steps["pitfall", "ce"]
results.spread("pitfall_ratio", pitfall_ratio, "gd at --lr: squared error's steps / cross-entropy's")
cut = {o: steps["pitfall", "squared"] / steps[o, "squared"] for o in ("gd", "normalized")}
for o in cut:
    results.spread(f"cut_{o}", cut[o], f"squared error: steps of gd at --lr / of {o} at its best rate")
normalized_ratio = steps["normalized", "squared"] / steps["normalized", "ce"]
median = {k: float(np.median(v)) for k, v in steps.items()}
for name, holds, statement, values in [
    ("saturated_gradient_tiny", abs(results.numbers["logit_grad_squared"]["value"]) < 1e-3
     and abs(results.numbers["logit_grad_ce"]["value"] + 1) < 1e-3,
     "at the quoted logit the squared-error gradient is below 1e-3, cross-entropy's near -1", {}),
    ("closed_form_matches", closed_form_error < 1e-10, "closed-form gradients match the engine's, to 1e-10",
     {}),
    ("gd_stalls_on_squared", np.all(pitfall_ratio >= 5),
     "plain gradient descent at the pitfall's rate needs at least 5 times more steps with squared error",
     {"ratio": pitfall_ratio}),
    ("optimizer_rescues_squared", all(np.all(np.isfinite(steps[o, "squared"]) & (cut[o] >= 3)) for o in cut),
     "a tuned rate or the normalized step cuts squared error's steps at least threefold on every seed", cut),
    ("normalized_same_order", np.all((normalized_ratio < 10) & (normalized_ratio > 0.1)),
     "with normalized steps the two losses' step counts are within a factor of 10 on every seed",
     {"ratio": normalized_ratio}),
    ("gd_adam_favour_ce", all(median[o, "squared"] >= 2 * median[o, "ce"] for o in ("gd", "adam")),
     "tuned gradient descent and tuned Adam need at least twice the median steps with squared error",
     {str(k): v for k, v in median.items()}),
    ("adam_slower_than_normalized", steps["adam", "squared"].min() > steps["normalized", "squared"].max(),
     "on squared error Adam at its best rate needs more steps than normalized steps on every seed", {}),
    ("gap_means_fitted", all(np.all(np.round(at_gap[key], 9) <= 0.05) for key in LOGIT_LOSSES),
     "where a pitfall run reaches the gap, its accuracy is within 5 points of its loss's minimum's",
     at_gap),
    ("ce_pulls_flipped", np.all(flip_share["ce"] > flip_share["squared"]),
     "at the same line the flipped labels own a larger share under cross-entropy on every seed", flip_share),
    ("small_price", -2 < price["mean"] < 0, f"averaged over {price['draws']} data sets, cross-entropy's fit "
     "to the flipped labels is less accurate on fresh points than squared error's, by less than 2 points",
     price),
]:  # fmt: skip
    results.claim(name, bool(holds), statement, values)
OFFSET0, W0 = parser.get_default("offset"), parser.get_default("init_weight")  # the answers' comparisons
from_w0 = shape.steps_to_gap("squared", "gd", args.lr, W0, x_cls, y_cls, minima["squared"], max_steps=5 * CAP)
grows = errors["squared"] > np.abs(shape.fit_least_squares(x, y_clean + OFFSET0 * is_outlier)[0] - true_slope)
out = (huber_fit[0][:, None] * x + huber_fit[1][:, None] - y)[:, is_outlier]
results.spread("huber_outlier_residual", np.abs(out).max(1), "largest |r_i| of an outlier at the Huber fit")
back = out + args.offset - OFFSET0  # at the default offset: Huber's gradient is the same if none crosses ±δ
for name, holds, statement in [
    ("squared_error_grows", np.all(grows), "On every seed squared error's slope error is larger than at the "
     f"default offset {OFFSET0:g}."),
    ("huber_same_fit", np.all((np.abs(out) > args.delta) & (np.abs(back) > args.delta) & (out * back > 0)),
     "On every seed each outlier's residual at the Huber fit lies beyond δ, on the same side at the default "
     f"offset {OFFSET0:g}: the gradient, and so the fit, is the same there."),
    ("pitfall_slower", np.all(steps["pitfall", "squared"] > from_w0), "With squared error, gradient descent "
     f"at rate {args.lr:g} needs more steps to reach the gap than from w = {W0:g} on every seed, and on "
     f"{np.isinf(steps['pitfall', 'squared']).sum()} of {len(SEEDS)} seeds more than {5 * CAP}."),
    ("normalized_arrives", np.all(np.isfinite(steps["normalized", "squared"])), "On every seed the "
     "normalized step at its best rate still reaches the gap with squared error."),
    ("start_decides_stall", np.median(pitfall_ratio) < 5, f"From w = {args.init_weight:g} the median over "
     "seeds of that ratio is below 5."),
    ("leverage_defeats_huber", np.all(errors["huber"] > 0.75 * errors["squared"]), "On every seed Huber's "
     "slope error is over three quarters of least squares'."),
    ("start_decides_biweight", np.all(errors["biweight_lms"] < 0.5) and np.any(errors["biweight_huber"] > 1),
     "The biweight started from least median of squares misses the slope by under 0.5 on every seed; started "
     "from Huber's fit it misses by over 1 on some seed."),
]:  # fmt: skip
    results.claim(name, bool(holds), statement, answer=True)
results.save()
