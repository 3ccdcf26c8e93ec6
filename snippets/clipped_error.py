"""Clipping the error before squaring: the DQN bug, against the Huber loss

Three losses of the error delta = prediction - target: squared error, the error clipped to
[-1, 1] and then squared, and the Huber loss. The clipped-then-squared loss has an exactly
zero gradient for |delta| > 1, on exactly the samples with the largest errors; a linear
regression trained with it never fits them. Huber's update and squared error's with each
sample's gradient clipped are the same update. Quoted by docs/clipping-the-wrong-thing.md.
"""

# %% [markdown]
# ## Three losses of one error
# With $\delta = \hat y - y$ (prediction minus target):
# squared $\tfrac12\delta^2$ (gradient $\delta$); clipped-then-squared
# $\tfrac12\operatorname{clip}(\delta,-1,1)^2$ (gradient $\delta$ inside, $0$ outside);
# Huber with threshold 1, $\tfrac12\delta^2$ inside and $|\delta| - \tfrac12$ outside
# (gradient $q = \operatorname{clip}(\delta, -1, 1)$). Written as $\tfrac12 q^2 + q(\delta - q)$, Huber
# needs no branch, and reverse mode returns exactly $q$ (inside, $\delta - q = 0$ exactly).

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, clipping, engine, ops, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--batch", type=snippet.positive_int, default=256, help="simulated TD errors")
parser.add_argument("--dof", type=snippet.positive_float, default=2.0, help="Student-t degrees of freedom")
parser.add_argument("--lr", type=snippet.positive_float, default=1.0, help="learning rate")
parser.add_argument("--epochs", type=snippet.positive_int, default=200, help="gradient steps")
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
rngs = [np.random.default_rng(seed) for seed in SEEDS]


def huber(d):
    q = ops.clip(d, -1.0, 1.0)
    return 0.5 * q**2 + q * (d - q)


LOSSES = {
    "squared": lambda d: 0.5 * d**2,
    "clipped": lambda d: 0.5 * ops.clip(d, -1.0, 1.0) ** 2,
    "huber": huber,
}
LABELS = {"squared": "squared error", "clipped": "clip(δ) then squared", "huber": "Huber (threshold 1)"}


def per_sample_gradient(name, errors):
    """dL/d(prediction) for each sample: reverse mode through the summed loss (each sample's term
    depends on its own error only, so the gradient's entries are the per-sample derivatives)."""
    return engine.grad(lambda p: ops.sum(LOSSES[name](p[0])), [errors])[0]


# %%
deltas = np.linspace(-4, 4, 801)
fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.6))
for name in LOSSES:
    left.plot(deltas, LOSSES[name](deltas), label=LABELS[name])
    right.plot(deltas, per_sample_gradient(name, deltas), label=LABELS[name])
left.set(title="Loss", xlabel="error δ = prediction − target", ylabel="loss", ylim=(0, 4))
right.set(title="Gradient", xlabel="error δ = prediction − target", ylabel="d loss / d prediction")
left.legend()
fig.suptitle("Clipping the error before squaring zeroes the gradient for |δ| > 1", y=1.03)
results.figure(
    fig,
    "losses",
    alt=(
        "Clipped-then-squared is flat for |δ| > 1 and its gradient is exactly zero there; the Huber "
        "gradient is the squared-error gradient clipped to ±1, never zero outside."
    ),
)

# %% [markdown]
# ## A batch of synthetic TD errors, on each seed
# Drawn from a Student-t distribution with `--dof` degrees of freedom (2 by default: finite mean,
# infinite variance), a stand-in for heavy-tailed TD errors, not a measurement of any agent's.
# The fraction with $|\delta| > 1$ belongs to that distribution: its population value is
# $P(|T| > 1) = 1 - 2\int_0^1 f_\nu(t)\,dt$, integrated here by Simpson's rule.

# %%
t = np.linspace(0.0, 1.0, 2001)
nu = args.dof
log_norm = math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)
density = np.exp(log_norm - (nu + 1) / 2 * np.log1p(t**2 / nu))
simpson = (density[0] + density[-1] + 4 * density[1:-1:2].sum() + 2 * density[2:-1:2].sum()) * (t[1] / 3)
t_tail = results.number("t_tail", 1 - 2 * simpson, "P(|delta| > 1) for the Student-t distribution", rtol=1e-9)
normal_tail = results.number("normal_tail", math.erfc(1 / math.sqrt(2)), "P(|delta| > 1), standard normal")
results.number("batch", args.batch, "simulated TD errors per seed")
results.number("dof", args.dof, "Student-t degrees of freedom")
near = "P(|δ| > 1) is within 5% of the standard normal distribution's."
results.claim("tail_near_normal", abs(t_tail / normal_tail - 1) < 0.05, near, {"t": t_tail}, answer=True)

worst, all_zero, per_seed = {"forward": 0.0, "central": 0.0, "complex": 0.0}, True, []
for rng in rngs:
    td_errors = rng.standard_t(args.dof, size=args.batch)
    clipped_gradient = per_sample_gradient("clipped", td_errors)
    zero = clipped_gradient == 0
    large = np.abs(td_errors) > 1
    huber_gradient = per_sample_gradient("huber", td_errors)
    clipped_squared = clipping.clip_by_value([per_sample_gradient("squared", td_errors)], 1.0)[0]
    per_seed.append(
        {
            "zero": zero.mean(),
            "large": large.mean(),
            "smallest_zeroed": np.abs(td_errors[zero]).min(),
            "largest_kept": np.abs(td_errors[~zero]).max(),
            "largest": np.abs(td_errors).max(),
            "inside_is_delta": np.all(clipped_gradient[~large] == td_errors[~large]),
            "huber_gap": np.abs(huber_gradient - clipped_squared).max(),
            "huber_unit": np.all(huber_gradient[large] == np.sign(td_errors[large])),
        }
    )
    # Is it backprop? The clipped loss's gradient w.r.t. the predictions, by four methods.
    targets = rng.normal(size=args.batch)
    methods = {
        name: method(lambda p, y=targets: ops.sum(LOSSES["clipped"](p[0] - y)), [targets + td_errors])[0]
        for name, method in check.METHODS.items()
    }
    for name in worst:
        worst[name] = max(worst[name], check.max_rel_error([methods["reverse"]], [methods[name]]))
    all_zero &= bool(np.all([g[large] == 0 for g in methods.values()]))
td = {key: np.array([entry[key] for entry in per_seed]) for key in per_seed[0]}
results.spread("zero_fraction", td["zero"], "fraction of samples with exactly zero gradient")
results.spread("largest_error", td["largest"], "largest |delta| in the batch")
for name, error in worst.items():
    results.number(f"clipped_{name}", error, f"clipped: largest rel. error, reverse vs {name}", atol=1e-4)
binomial_sd = math.sqrt(t_tail * (1 - t_tail) / args.batch)
for name, holds, statement, values in [
    ("zeroed_are_the_large", np.all(td["zero"] == td["large"]) and np.all(td["smallest_zeroed"] > 1)
     and np.all(td["largest_kept"] < 1) and np.all(td["inside_is_delta"]),
     "the clipped loss's gradient is exactly 0 where |δ| > 1 and exactly δ (squared error's) elsewhere",
     {"smallest_zeroed": td["smallest_zeroed"], "largest_kept": td["largest_kept"]}),
    ("fraction_is_the_distributions", np.all(np.abs(td["zero"] - t_tail) < 4 * binomial_sd),
     "on every seed the zeroed fraction lies within 4 binomial standard deviations of P(|δ| > 1)",
     {"zero": td["zero"], "t_tail": t_tail, "binomial_sd": binomial_sd}),
    ("huber_gradient_is_unit_outside", np.all(td["huber_unit"]),
     "Huber's gradient is exactly ±1 (the sign of δ) on every sample with |δ| > 1", {}),
    ("huber_is_clipped_gradient", np.all(td["huber_gap"] == 0),
     "Huber's per-sample gradient equals the clipped squared-error gradient exactly",
     {"gap": td["huber_gap"]}),
    ("all_methods_exactly_zero", all_zero,
     "every method gives exactly 0 on every sample with |δ| > 1", worst),
    ("methods_agree", worst["forward"] <= 1e-15 and worst["complex"] <= 1e-13 and worst["central"] <= 1e-4,
     "reverse mode agrees with forward mode to 1e-15, the complex step to 1e-13, central differences to 1e-4",
     worst),
]:  # fmt: skip
    results.claim(name, bool(holds), statement, values)

# %% [markdown]
# ## Training a linear predictor, on each seed
# $\hat y = X w$. Common samples use features 1 and 2 and start with errors mostly below 1 (some
# above); rare samples use feature 3 alone, whose weight starts far off, so their errors start far
# above 1. Full-batch gradient descent on each loss, and on the squared error with each sample's
# gradient clipped to $[-1, 1]$ (summed as `X.T @ g`: another order than the engine's reduction).

# %%
COMMON, RARE = 60, 4
w_true = np.array([1.0, -2.0, 3.0])
w_start = w_true + np.array([0.6, -0.6, -3.0])
runs = {key: [] for key in ("above", "common_max", "rare_start", "clipped_common", "same_update", "frozen")}
rare_error, final_w3 = ({name: [] for name in LOSSES} for _ in range(2))
for seed, rng in zip(SEEDS, rngs, strict=True):
    X = np.zeros((COMMON + RARE, 3))
    X[:COMMON, :2] = rng.normal(size=(COMMON, 2))
    X[COMMON:, 2] = rng.uniform(0.8, 1.2, size=RARE)
    y = X @ w_true
    start_error = np.abs(X @ w_start - y)
    runs["above"].append(np.sum(start_error[:COMMON] > 1))
    runs["common_max"].append(start_error[:COMMON].max())
    runs["rare_start"].append(start_error[COMMON:].min())
    final_w, history = {}, {}
    for name in LOSSES:
        w, history[name] = w_start.copy(), []
        for _ in range(args.epochs):
            history[name].append(np.mean((X @ w - y)[COMMON:] ** 2))
            w -= (
                args.lr * engine.grad(lambda p, f=LOSSES[name], X=X, y=y: ops.mean(f(p[0] @ X.T - y)), [w])[0]
            )
        final_w[name] = w
        rare_error[name].append(np.abs(X @ w - y)[COMMON:].max())
        final_w3[name].append(w[2])
    runs["clipped_common"].append(np.abs(X @ final_w["clipped"] - y)[:COMMON].max())
    runs["frozen"].append(
        final_w["clipped"][2] == w_start[2]
        and np.array_equal(np.abs(X @ final_w["clipped"] - y)[COMMON:], start_error[COMMON:])
    )
    w = w_start.copy()  # squared error, each sample's gradient clipped before it enters the update
    for _ in range(args.epochs):
        per_sample = clipping.clip_by_value([per_sample_gradient("squared", X @ w - y)], 1.0)[0]
        w -= args.lr * X.T @ per_sample / len(y)
    runs["same_update"].append(np.abs(w - final_w["huber"]).max())
    if seed == SEEDS[0]:
        fig, ax = plt.subplots()
        for name in LOSSES:
            ax.semilogy(history[name], label=LABELS[name])
runs = {key: np.array(values) for key, values in runs.items()}
for key, value, about in [
    ("common_samples", COMMON, "common samples, using features 1 and 2"),
    ("rare_samples", RARE, "rare samples that use the third feature alone"),
    ("w3_true", w_true[2], "the rare feature's true weight"),
    ("w3_start", w_start[2], "the rare feature's weight at the start"),
    ("epochs", args.epochs, "gradient steps"),
    ("lr", args.lr, "learning rate"),
    ("first_seed", SEEDS[0], "seed of the training figure"),
]:
    results.number(key, value, about)
results.spread("common_start_above_clip", runs["above"], "common samples with |error| > 1 at start")
results.spread("common_start_max", runs["common_max"], "largest common-sample |error| at start")
results.spread("rare_start_error", runs["rare_start"], "smallest rare-sample |error| at start", rtol=1e-4)
for name in LOSSES:
    results.spread(
        f"rare_error_{name}", rare_error[name], f"{name}: max rare |error| after", rtol=1e-4, atol=1e-12
    )
    results.spread(f"w3_{name}", final_w3[name], f"{name}: rare feature's weight after training", rtol=1e-4)
results.spread("common_error_clipped", runs["clipped_common"], "clipped: largest common |error|", atol=1e-12)
results.spread("gradient_clipped_vs_huber_w", runs["same_update"], "max |w diff| vs Huber", atol=1e-12)
for name, holds, statement, values in [
    ("clipped_never_moves_rare", np.all(runs["frozen"]),
     "with the clipped-then-squared loss the rare weight and the rare samples' errors never move", {}),
    ("squared_and_huber_fit_rare", max(np.max(rare_error["squared"]), np.max(rare_error["huber"])) < 1e-3,
     "squared error and Huber bring every rare sample's error below 0.001", rare_error),
    ("common_fitted_anyway", np.all(runs["clipped_common"] < 1e-6) and np.all(runs["above"] >= 2),
     "on every seed at least 2 common samples start above 1, and under the clipped loss every common "
     "sample, those included, ends within 1e-6",
     {"clipped_common": runs["clipped_common"], "above": runs["above"]}),
    ("same_update", np.all(runs["same_update"] < 1e-12),
     "Huber and the per-sample clipped squared-error gradient end at the same weights to 1e-12",
     {"differences": runs["same_update"]}),
]:  # fmt: skip
    results.claim(name, bool(holds), statement, values)
stuck = "On every seed the rare weight and the rare samples' errors end where they started, all above 1."
results.claim("rare_still_frozen", np.all(runs["frozen"]) and min(runs["rare_start"]) > 1, stuck, answer=True)
ax.set(
    title=f"Rare samples with large errors: mean squared error while training (seed {SEEDS[0]})",
    xlabel="gradient step",
    ylabel="rare samples' mean squared error (log scale)",
)
ax.legend()
results.figure(
    fig,
    "training",
    alt=(
        f"Seed {SEEDS[0]}: trained with the clipped-then-squared loss the rare samples' error never moves "
        "from its start; squared error and Huber drive it towards zero."
    ),
)
results.save()
