"""Per-layer diagnostics: a deep tanh network that SGD cannot train, and three remedies.

Per-layer reports at step 0; residual, layer norm (the function), Adam (the optimizer); 5 seeds."""

# %% [markdown]
# `depth` hidden tanh layers of `width` units and a linear output map $x \in \mathbb{R}^2$ to a
# scalar. Three functions: plain $h_l = \tanh(h_{l-1} W_l + b_l)$; residual
# $h_l = h_{l-1} + \tanh(h_{l-1} W_l + b_l)$ (from layer 2 on); normalized
# $h_l = \tanh(\mathrm{LN}(h_{l-1} W_l + b_l))$, $\mathrm{LN}(z) = (z - \bar z)/\sigma_z$.
# All start from the same weights $W_l \sim \mathcal N(0, \mathrm{gain}^2/\mathrm{fan\_in})$.
# Every (seed, lr) pair trains at once in `gradlab.stacked` (checked against the engine below).

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, diagnostics, engine, models, numerical, ops, optim, snippet, stacked

parser = snippet.parser(__doc__)
parser.add_argument("--depth", type=snippet.positive_int, default=20, help="hidden layers")
parser.add_argument("--width", type=snippet.positive_int, default=16, help="units per hidden layer")
parser.add_argument("--gain", type=snippet.positive_float, default=0.5, help="weight std times sqrt(fan_in)")
parser.add_argument("--steps", type=snippet.positive_int, default=300, help="full-batch steps")
parser.add_argument("--batch", type=snippet.positive_int, default=32, help="examples")
args, results = snippet.parse(parser)
SEEDS, CLAIMS = snippet.seeds(args.seed), []  # CLAIMS: (name, holds, statement, values), recorded at the end
LRS = 10.0 ** np.arange(-5, 0.25, 0.5)  # the same grid for every method: 1e-5 to 1, factors of sqrt(10)
METHODS = {"plain SGD": "plain", "plain Adam": "plain"}
METHODS |= {"residual SGD": "residual", "normalized SGD": "normalized"}


def problem(seed, depth=args.depth):
    X = (rng := np.random.default_rng(seed)).uniform(-2, 2, size=(args.batch, 2))
    y = (np.sin(2 * X[:, 0]) * np.cos(X[:, 1]))[:, None]  # a smooth target in [-1, 1]
    init = models.init_mlp([2] + [args.width] * depth + [1], args.gain / np.sqrt(args.width), rng)
    return X, y, [init[0] * np.sqrt(args.width / 2), *init[1:]]  # the first layer's fan_in is 2, not width


def network(params, X, variant):
    """The engine's version: the output and the tanh outputs of every hidden layer."""
    h, tanh_outputs = X, []
    for layer, (W, b) in enumerate(zip(params[0:-2:2], params[1:-2:2], strict=True)):
        z = ops.linear(h, W, b)
        t = ops.tanh(ops.layer_norm(z) if variant == "normalized" else z)
        h = h + t if variant == "residual" and layer > 0 else t
        tanh_outputs.append(t)
    return ops.linear(h, params[-2], params[-1]), tanh_outputs


loss = lambda params, X, y, variant: ops.mean((network(params, X, variant)[0] - y) ** 2)  # noqa: E731
problems = [problem(seed) for seed in SEEDS]
variance = np.array([y.var() for _, y, _ in problems])
stack = lambda arrays: np.repeat(np.stack(arrays), len(LRS), axis=0)  # noqa: E731  (seed, lr) pairs
X_all, y_all = stack([X for X, _, _ in problems]), stack([y for _, y, _ in problems])
init_all = [stack([np.atleast_2d(i[k]) for *_, i in problems]) for k in range(2 * args.depth + 2)]
lr_all = np.tile(LRS, len(SEEDS))[:, None, None]
first_of = lambda s, lr=0: s * len(LRS) + lr  # noqa: E731  index of seed s at learning rate lr

# %% [markdown]
# ## Training: every method at every learning rate of the grid, on every seed
# Adam: `gradlab.optim.Adam` ($\beta_1 = 0.9$, $\beta_2 = 0.999$, $\epsilon = 10^{-8}$). A
# non-finite loss counts as infinite. Each method keeps the rate with the best median final loss.

# %%
curves, first_updates, best, final = {}, {}, {}, {}
with np.errstate(all="ignore"):  # the largest learning rates diverge on purpose
    for method, variant in METHODS.items():
        params, history = [p.copy() for p in init_all], []
        adam = optim.Adam(params, lr_all) if "Adam" in method else None
        for step in range(args.steps + 1):
            value, grads = stacked.value_and_grad(params, X_all, y_all, variant)
            history.append(np.where(np.isfinite(value), value, np.inf))
            if step < args.steps:
                new = adam.step(params, grads) if adam else [p - lr_all * g for p, g in zip(params, grads)]  # noqa: B905
                if method not in first_updates:
                    first_updates[method] = [n - p for n, p in zip(new[0:-2:2], params[0:-2:2], strict=True)]
                params = new
        curves[method] = np.array(history).reshape(args.steps + 1, len(SEEDS), len(LRS)) / variance[:, None]
        best[method] = int(np.argmin(np.median(curves[method][-1], axis=0)))
        final[method], key = curves[method][-1, :, best[method]], method.replace(" ", "_").lower()
        results.number(f"{key}_lr", LRS[best[method]], f"{method}: best learning rate on the grid")
        results.spread(f"{key}_final", final[method], f"{method}: final loss / target variance", rtol=1e-4)
        print(f"{method:<15} final loss / variance per lr:", np.median(curves[method][-1], axis=0).round(3))
for key in ("depth", "width", "gain", "steps", "batch"):
    results.number(key, getattr(args, key), key)
results.number("lr_grid_min", LRS[0], "smallest learning rate of the grid")
results.number("lr_grid_max", LRS[-1], "largest learning rate of the grid")
remedies = np.stack([final["residual SGD"], final["normalized SGD"]])
per_seed_best = {m: np.argmin(c[-1], axis=1) for m, c in curves.items()}  # each seed's own best lr
best_all = np.concatenate([list(best.values()), *per_seed_best.values()])
diverged = int(np.sum(curves["plain SGD"][-1, :, -1] == np.inf))
results.number("plain_sgd_diverged_at_max", diverged, "seeds on which plain SGD diverges at the largest lr")
CLAIMS += [
    ("best_lr_interior", np.all((best_all > 0) & (best_all < len(LRS) - 1)), "Every method's best learning "
     "rate, by the median and on each seed, lies inside the grid.",
     {m: LRS[b] for m, b in per_seed_best.items()}),
    ("plain_sgd_diverges", diverged >= 1, "Plain SGD diverges at the grid's largest learning rate on at "
     "least one seed.", {"diverged": diverged}),
    ("sgd_stalls", curves["plain SGD"][-1].min() > 0.99, "Plain SGD ends above 99% of the target "
     "variance at every learning rate of the grid, on every seed.", {"min": curves["plain SGD"][-1].min()}),
    ("adam_escapes", np.all(final["plain Adam"] < 0.95), "Adam on the same plain network ends below 95% "
     "of the target variance on every seed.", {"adam": final["plain Adam"]}),
    ("function_remedies_ahead", np.median(remedies, axis=1).max() < np.median(final["plain Adam"]), f"After "
     f"{args.steps} steps both function remedies end with a lower median loss than Adam.",
     {"medians": [np.median(final[m]) for m in ("plain Adam", "residual SGD", "normalized SGD")]}),
]  # fmt: skip

# %% [markdown]
# ## The per-layer report at step 0, every seed, at each method's best learning rate
# Under Adam, update/weight is the actual first step $\|\Delta W_l\| / \|W_l\|$.

# %%
reports, stacked_error, stats = {}, [], {}
for variant in ("plain", "residual", "normalized"):
    reports[variant], lr = [], LRS[best[f"{variant} SGD"]]
    for s, (X, y, init) in enumerate(problems):
        grads = engine.grad(lambda p, X=X, y=y, v=variant: loss(p, X, y, v), init)
        mine = stacked.value_and_grad([p[first_of(s)] for p in init_all], X, y, variant)[1]
        mine = [a.reshape(b.shape) for a, b in zip(mine, grads, strict=True)]
        stacked_error.append(check.max_rel_error(mine, grads))
        rows = diagnostics.layer_report(init[0:-2:2], grads[0:-2:2], network(init, X, variant)[1], "tanh", lr)
        reports[variant].append(rows)
    print(f"\n{variant} network, seed {SEEDS[0]}, step 0:\n" + diagnostics.format_report(reports[variant][0]))
    stats[variant] = {f: np.array([[getattr(r, f) for r in rows] for rows in reports[variant]])
                      for f in ("grad_norm", "update_ratio", "saturated", "dead", "std")}  # fmt: skip
    grad_norm, spread = stats[variant]["grad_norm"], results.spread
    spread(f"{variant}_first_grad", grad_norm[:, 0], f"{variant}: layer 1 gradient norm")
    spread(f"{variant}_last_grad", grad_norm[:, -1], f"{variant}: last hidden gradient norm")
    spread(f"{variant}_first_ratio", stats[variant]["update_ratio"][:, 0], f"{variant}: layer 1 lr|g|/|W|")
    spread(f"{variant}_grad_spread", grad_norm.max(1) / grad_norm.min(1), f"{variant}: max/min grad")
    spread(f"{variant}_max_saturated", stats[variant]["saturated"].max(1), f"{variant}: most saturated")
results.spread("plain_last_std", (plain := stats["plain"])["std"][:, -1], "plain: std, last tanh outputs")
per_seed_layer = lambda f: np.array([[f(s, k) for k in range(args.depth)] for s in range(len(SEEDS))])  # noqa: E731
weight_norms = per_seed_layer(lambda s, k: np.linalg.norm(init_all[2 * k][first_of(s)]))
adam_lr, adam_steps, adam_best = LRS[best["plain Adam"]], first_updates["plain Adam"], best["plain Adam"]
adam_ratio = per_seed_layer(lambda s, k: np.linalg.norm(adam_steps[k][first_of(s, adam_best)])) / weight_norms
sign_step = per_seed_layer(lambda s, k: adam_lr * np.sqrt(init_all[2 * k][0].size)) / weight_norms
results.spread("adam_first_ratio", adam_ratio[:, 0], "plain Adam: layer 1 actual first update / weight")
results.spread("adam_over_sgd", adam_ratio.min(1) / plain["update_ratio"].max(1), "Adam min / SGD max ratio")
results.spread("adam_step_vs_sign", (adam_ratio / sign_step).max(1), "Adam: largest actual/(lr sqrt(n)/|W|)")
std_factor = np.array([diagnostics.per_layer_factor(row) for row in plain["std"]])
results.spread("plain_std_factor", std_factor, "plain: per-layer factor of the activation std")
in_gain_units = plain["grad_norm"] / args.gain ** (args.depth - 1)
results.spread("plain_grad_in_gain_units_max", in_gain_units.max(1), "plain: largest |dL/dW_l| / gain^(D-1)")
results.spread("plain_grad_in_gain_units_min", in_gain_units.min(1), "plain: smallest |dL/dW_l| / gain^(D-1)")
results.number("gain_power", args.gain ** (args.depth - 1), "gain^(depth - 1)")
results.number("saturation_level", diagnostics.SATURATION_LEVEL, "|tanh| above this: saturated")
factor = min((stats[v]["grad_norm"] / plain["grad_norm"]).min() for v in ("residual", "normalized"))
D20, first, last = parser.get_default("depth"), plain["grad_norm"][:, 0], plain["grad_norm"][:, -1]
grad_1 = lambda X, y, init: np.linalg.norm(engine.grad(lambda p: loss(p, X, y, "plain"), init)[0])  # noqa: E731
vs_d20 = first / np.array([grad_1(*problem(s, D20)) for s in SEEDS] if args.depth != D20 else first)  # ex. 2
results.spread("plain_first_grad_vs_d20", vs_d20, f"plain: layer 1 grad / the same seed's at depth {D20}")
results.number("smallest_factor_to_remedies", factor, "min over layers and seeds: remedy grad / plain grad")
CLAIMS += [
    ("stacked_matches_engine", max(stacked_error) < 1e-10, "The stacked backward pass agrees with the "
     "engine's reverse mode to 1e-10.", {"error": max(stacked_error)}),
    ("plain_not_saturated", plain["saturated"].max() < 0.05 and plain["dead"].max() == 0, "At step 0 under "
     "5% of each plain layer's entries are saturated and no unit is dead.", {"s": plain["saturated"]}),
    ("std_shrinks_by_gain", np.all(np.abs(std_factor / args.gain - 1) < 0.2), "The plain network's "
     "activation std shrinks by the gain per layer, within 20%, on every seed.", {"f": std_factor}),
    ("plain_grad_tiny", factor > 1e5, "In every layer the plain network's gradient is over 100,000 times "
     "smaller than with either function remedy.", {"factor": factor}),
    ("plain_spread_small", (spread_max := (in_gain_units.max(1) / in_gain_units.min(1)).max()) < 100
     and 5e-3 < in_gain_units.min() and in_gain_units.max() < 2,
     "Every plain layer's gradient norm lies between 0.005 and 2 times gain^(D-1), and the largest layer's "
     "is under 100 times the smallest's, not 1/gain^(D-1) times.", {"in": in_gain_units, "s": spread_max}),
    ("adam_moves_weights", (over := adam_ratio.min(1) / plain["update_ratio"].max(1)).min() > 500, "On every "
     "seed Adam's first update/weight ratio exceeds SGD's by over 500 times in every layer.", {"f": over}),
    ("adam_eps_shortens", (adam_ratio / sign_step).max() < 0.9, "Adam's first step is shorter than lr per "
     "entry in every layer.", {"max": (adam_ratio / sign_step).max()}),
]  # fmt: skip
sgd, power = final["plain SGD"], args.gain ** (args.depth - D20)
ANSWERS = [  # what the exercises' answers state, about other settings (--gain 3, --depth 10, --gain 1)
    ("gain_amplifies", np.all(first > last), "On every seed layer 1's gradient is larger than the last "
     "hidden layer's: the gain now amplifies the backward signal.", {"first": first, "last": last}),
    ("grad_order_gain_power", power / 3 < np.median(vs_d20) < 3 * power, "On the median seed that ratio is "
     f"within a factor of 3 of $g^{{{args.depth - D20}}}$ = {power:.4g}.", {"ratio": vs_d20}),
    ("sgd_barely_moves", np.median(sgd) > 0.9 and sgd.min() > 0.5, "Plain SGD barely moves on the median "
     "seed, ending above 90% of the variance, and even the best seed keeps more than half.", {"final": sgd}),
    ("plain_sgd_trains", np.median(sgd) < 0.4 and sgd.max() < 0.9, "Plain SGD now trains: it ends below 40% "
     "of the variance on the median seed and below 90% on every seed.", {"final": sgd}),
]  # fmt: skip

# %%
fig, (ax_grad, ax_ratio) = plt.subplots(1, 2, figsize=(9, 3.8))
layers = np.arange(1, args.depth + 1)
for variant, (rows, *_) in reports.items():  # the first seed's report
    ax_grad.semilogy(layers, [r.grad_norm for r in rows], "o-", ms=3, label=variant)
    ax_ratio.semilogy(layers, [r.update_ratio for r in rows], "o-", ms=3, label=f"{variant}, SGD")
ax_ratio.semilogy(layers, adam_ratio[0], "s--", ms=3, label="plain, Adam (actual step)")
ax_ratio.axhline(1e-3, color="#999999", ls="--", lw=1, label="1e-3 (CS231n rule of thumb)")
ax_grad.set(title="Gradient norm per layer", xlabel="hidden layer", ylabel="||dL/dW|| (log scale)")
ax_ratio.set(title="First update / weight", xlabel="hidden layer", ylabel="||ΔW|| / ||W|| (log scale)")
ax_grad.legend()
ax_ratio.legend(fontsize="x-small")
fig.suptitle(f"Per-layer report at step 0, seed {SEEDS[0]}, each method at its best learning rate")
sgd_ratio = plain["update_ratio"][0, 0]
results.figure(fig, "per_layer", alt="The plain network's gradient norm is roughly flat across the layers "
               f"and over {10 ** np.floor(np.log10(factor)):,.0f} times below the residual and normalized "
               f"networks' in every layer; its SGD update/weight ratio is near {sgd_ratio:.0e}, "
               f"Adam's first step on the same gradient near {adam_ratio[0, 0]:.0e}.")  # fmt: skip

fig, ax = plt.subplots()
for method, curve in curves.items():
    chosen, label = curve[:, :, best[method]], f"{method}, lr {LRS[best[method]]:.2g}"
    (line,) = ax.semilogy(np.median(chosen, 1), label=label)
    ax.fill_between(range(args.steps + 1), chosen.min(1), chosen.max(1), color=line.get_color(), alpha=0.2)
ax.set(title="Training loss, each method at its best learning rate", xlabel="step",
       ylabel="loss / target variance (log scale)")  # fmt: skip
ax.legend(fontsize="small")
results.figure(fig, "training_loss", alt=f"Median and range over {len(SEEDS)} seeds of the loss divided "
               "by the target variance: plain SGD stays at 1; Adam on the same network falls below it; with "
               "residual connections or layer normalization SGD falls furthest in the median.")  # fmt: skip

# %% [markdown]
# ## Is it backprop?
# The plain network's first-layer gradient at step 0 (other parameters fixed), every seed: reverse
# mode against forward mode and the complex step, and against central differences with the mixed
# tolerance $|g_\text{rev} - g_\text{cd}| \le 10\,\epsilon|L|/h + 10^{-6}\,|g_\text{cd}|$
# ($\epsilon|L|/h$: the rounding error of one central difference).

# %%
exact, central_rel, central_abs, rounding, largest = [], [], [], [], []
for X, y, init in problems:
    f = lambda first, X=X, y=y, init=init: loss([first[0], *init[1:]], X, y, "plain")  # noqa: E731
    exact.append(max(check.compare(f, [init[0]], methods=("reverse", "forward", "complex")).values()))
    reverse, central = engine.grad(f, [init[0]])[0], numerical.central_difference(f, [init[0]])[0]
    central_rel.append(check.rel_error(reverse, central).max())
    central_abs.append(np.abs(reverse - central).max())
    rounding.append([numerical.rounding_error(float(f([init[0]])), d) for d in (np.float64, np.float32)])
    largest.append(np.abs(reverse).max())
results.spread("backprop_vs_exact", exact, "reverse vs forward and complex step", atol=1e-12)
results.spread("backprop_vs_central", central_rel, "reverse vs central, relative", atol=0.5)
results.spread("central_abs_error", central_abs, "largest |reverse - central|", atol=1e-10)
rounding, rounding32 = np.array(rounding).T  # float32: eps and h = eps^(1/3) of float32, same |L|
results.spread("central_rounding_estimate", rounding, "eps |L| / h", rtol=1e-3)
results.spread("central_rounding_float32", rounding32, "eps |L| / h in float32 (same L)", rtol=1e-3)
results.spread("first_layer_largest_entry", largest, "largest |dL/dW_1| entry", rtol=1e-4)
passes = all(a <= 10 * r + 1e-6 * g for a, r, g in zip(central_abs, rounding, largest, strict=True))
CLAIMS += [
    ("exact_methods_agree", max(exact) < 1e-10, "Forward mode and the complex step agree with reverse mode "
     "to 1e-10.", {"error": exact}),
    ("float32_blind", min(rounding32) > max(largest), "In float32, one central difference's rounding error "
     "exceeds the largest gradient entry on every seed.", {"float32": rounding32, "largest": largest}),
    ("central_passes_mixed", passes and min(central_rel) > 1e-4, "Central differences pass the mixed "
     "tolerance while their relative error exceeds 1e-4.", {"abs": central_abs, "rel": central_rel}),
]  # fmt: skip
for (name, holds, statement, values), answer in [(c, False) for c in CLAIMS] + [(c, True) for c in ANSWERS]:
    results.claim(name, bool(holds), statement, values, answer=answer)
results.save()
