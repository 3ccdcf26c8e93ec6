"""Dying ReLUs: dead units counted during SGD, and their exactly zero gradient.

A 2-64-64-1 ReLU network fits a 2-D regression by SGD on five seeds at once: a large step or a negative
bias leaves units negative on every input, with exactly zero gradient. Quoted by docs/dying-relus.md."""

# %% [markdown]
# ## The data, the network, the training loop
# Per seed: `n_points` inputs $x \in [-2, 2]^2$, $y = \sin(2x_1)\cos(x_2)$; a network $2 \to 64 \to 64
# \to 1$, He initialization, every bias 0 (or `--bias`, the output's too); squared error; SGD. A unit is
# **dead** when its pre-activation $z$ is $\le 0$ on every training input. The seeds train together
# in `gradlab.seeded_mlp`, whose hand-written backward pass is checked against reverse mode.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, dead_units, engine, models, numerical, ops, rate_sweep, seeded_mlp, snippet
from matplotlib.ticker import PercentFormatter

parser = snippet.parser(__doc__)
parser.add_argument("--lr", type=snippet.positive_float, default=0.04, help="the too-large learning rate")
parser.add_argument("--small-lr", type=snippet.positive_float, default=0.01, help="the smaller step")
parser.add_argument("--bias", type=float, default=-1.0, help="the negative bias initialization")
parser.add_argument("--steps", type=snippet.positive_int, default=1000, help="SGD steps")
parser.add_argument("--batch", type=snippet.positive_int, default=32, help="minibatch size")
parser.add_argument("--n-points", type=snippet.positive_int, default=256, help="training inputs")
args, results = snippet.parse(parser)
seeds = snippet.seeds(args.seed)

sizes = [2, 64, 64, 1]
X = np.stack([np.random.default_rng([seed, 0]).uniform(-2, 2, size=(args.n_points, 2)) for seed in seeds])
y = (np.sin(2 * X[..., 0]) * np.cos(X[..., 1]))[..., None]
for key in ["lr", "small_lr", "bias", "steps", "batch", "n_points"]:
    results.number(key, getattr(args, key), f"setting: {key}")
results.number("hidden_units", sum(sizes[1:-1]), "hidden units in all")
leaky_slope = inspect.signature(ops.leaky_relu).parameters["slope"].default
results.number("leaky_slope", leaky_slope, "leaky ReLU's slope for z < 0")
SLOPE = {"relu": 0.0, "leaky_relu": leaky_slope}
COUNT_EVERY = 10  # steps between two counts of the dead units up to step 100; then every 50
COUNTS = sorted({*range(0, min(100, args.steps) + 1, COUNT_EVERY), *range(0, args.steps, 50), args.steps})
results.number("count_every", COUNT_EVERY, "SGD steps between two counts of the dead units, early on")


def train(lr, bias=0.0, activation="relu"):
    """SGD on every seed from the same initial weights and minibatches for every setting."""
    rngs = [np.random.default_rng([seed, 1]) for seed in seeds]
    params, slope = seeded_mlp.init(sizes, rngs, bias=bias), SLOPE[activation]
    params, history = seeded_mlp.sgd(params, X, y, lr, slope, rngs, args.steps, args.batch, COUNTS)
    return params, history, seeded_mlp.loss(params, X, y, slope)


def claim_all(name, holds, statement, answer=False, **values):  # `holds`: one bool per seed
    return results.claim(name, bool(np.all(holds)), statement, values, answer=answer)


# %% [markdown]
# The hand-written backward pass against the engine's reverse mode, on the first seed's data:

# %%
init0 = seeded_mlp.one_seed(seeded_mlp.init(sizes, [np.random.default_rng([seeds[0], 1])]), 0)
for activation, slope in SLOPE.items():
    by_hand = seeded_mlp.grads([p[None] for p in init0], X[:1], y[:1], slope)
    by_engine = engine.grad(lambda p, a=activation: ops.mean((models.mlp(p, X[0], a) - y[0]) ** 2), init0)
    scaled = max(float(np.abs(a[0] - b).max()) for a, b in zip(by_hand, by_engine, strict=True))
    scaled /= max(float(np.abs(b).max()) for b in by_engine)
    results.number(f"by_hand_{activation}", scaled, "hand-written vs engine gradient, scaled", atol=1e-12)
    claim_all(f"by_hand_{activation}_ok", scaled < 1e-12, "The hand-written backward pass is reverse mode's.")
inits = seeded_mlp.init(sizes, [np.random.default_rng([seed, 1]) for seed in seeds])  # train()'s start
norms = np.sqrt(sum(np.sum(g**2, axis=tuple(range(1, g.ndim))) for g in seeded_mlp.grads(inits, X, y, 0.0)))
results.spread("grad_norm_init", norms, "ReLU, initial weights: norm of the full-data loss gradient")

# %% [markdown]
# ## Dead fraction during training

# %%
SETTINGS = {
    "lr_large": (f"ReLU, η = {args.lr:g}", dict(lr=args.lr)),
    "lr_small": (f"ReLU, η = {args.small_lr:g}", dict(lr=args.small_lr)),
    "leaky": (f"leaky ReLU, η = {args.lr:g}", dict(lr=args.lr, activation="leaky_relu")),
    "bias_negative": (f"ReLU, η = {args.small_lr:g}, bias {args.bias:g}", dict(lr=args.small_lr,
                                                                               bias=args.bias)),
}  # fmt: skip
runs = {key: train(**setting) for key, (_, setting) in SETTINGS.items()}
variance = y.var(axis=(1, 2))
print(f"{'setting':<26} dead at start  dead at end  final loss / Var(y)   (ranges over {len(seeds)} seeds)")
for key, (label, _) in SETTINGS.items():
    _, history, loss = runs[key]
    start, end, relative = history[0].mean(axis=1), history[-1].mean(axis=1), loss / variance
    print(f"{label:<26} {start.min():5.1%}-{start.max():5.1%}  {end.min():5.1%}-{end.max():5.1%}", end="")
    print(f"  {relative.min():.3f}-{relative.max():.3f}")
    results.spread(f"dead_start_{key}", start, f"{label}: dead fraction at step 0")
    results.spread(f"dead_end_{key}", end, f"{label}: dead fraction at the end")
    results.spread(f"loss_{key}", relative, f"{label}: final training loss / Var(y)")
    claim_all(f"trains_{key}", relative < 1, f"{label}: final loss below Var(y) on every seed.", l=relative)
default_bias = parser.get_default("bias")  # an answer compares --bias with it: inits + bias = train()'s start
dead_default_bias = seeded_mlp.dead([p + i % 2 * default_bias for i, p in enumerate(inits)], X, 0.0).mean(1)
large, small, leaky = (runs[key][1] for key in ("lr_large", "lr_small", "leaky"))
counts = large.sum(axis=2)  # (count, seed)
results.spread("dead_units_start_lr_large", counts[0], "large step: dead units at step 0")
results.spread("dead_units_first_lr_large", counts[1], f"large step: dead units at step {COUNT_EVERY}")
results.spread("dead_units_end_lr_large", counts[-1], "large step: dead units at the end")
drift = np.abs(small[-1].sum(1) - small[0].sum(1))
small_drift = results.number("small_drift_units", 4, "small step: bound on |dead at end - at start|")
results.spread("small_drift", drift, "small step: |dead units at end - at start|")
layer2 = large[-1][:, sizes[1] :].sum(1)
results.spread("dead_layer2_share", layer2 / counts[-1], "large step: share of dead units in layer 2")
loss_large, loss_small, loss_bias = (runs[k][2] / variance for k in ("lr_large", "lr_small", "bias_negative"))
results.number("large_lower_loss_seeds", np.sum(loss_large < loss_small), "seeds: large loss < small")
start_bias = runs["bias_negative"][1][0].mean(1)  # dead fraction at step 0 with --bias
for name, holds, statement, values, *answer in [  # "answer": only an exercise's answer states it
    ("large_kills_more", counts[-1] > 2 * small[-1].sum(1), "The large step ends with more than twice as "
     "many dead units as the small step, on every seed.", counts[-1]),
    ("dies_early", counts[1] > 0.6 * counts[-1], f"With the large step, the dead count at step {COUNT_EVERY} "
     "is most of the final count, on every seed.", counts[1]),
    ("small_near_init", drift <= small_drift, f"With the small step the dead count ends within {small_drift} "
     "units of its start, on every seed.", drift),
    ("start_layer2", large[0][:, sizes[1] :].sum(1) == counts[0], "Every unit dead at step 0 sits in the "
     "second hidden layer, on every seed.", counts[0]),
    ("mostly_layer2", layer2 > 0.5 * counts[-1], "With the large step most of the dead units sit in the "
     "second hidden layer, on every seed.", layer2),
    ("bias_costs", loss_bias > loss_small, f"Bias {args.bias:g} ends with a higher loss than bias 0 at the "
     "same step, on every seed.", loss_bias),
    ("dead_cost_nothing", np.median(loss_large) < np.median(loss_small), "After as many steps, the large "
     "step's median final loss is below the small step's, despite its dead units.", [loss_large, loss_small]),
    ("bias_stalls", (start_bias > dead_default_bias) & (loss_bias > 0.9), f"At bias {args.bias:g} more units "
     f"start dead than at bias {default_bias:g}, and the final loss stays above 0.9 Var(y), on every seed.",
     [start_bias, dead_default_bias, loss_bias], "answer"),
]:  # fmt: skip
    claim_all(name, holds, statement, bool(answer), values=values)

# %% [markdown]
# Do units come back? The share of step 100's dead units positive on some input at the end.

# %%
revive_from, revived, revived_layer1 = COUNTS.index(min(100, args.steps)), {}, {}
results.number("revive_from", COUNTS[revive_from], "step at which the revival count starts")
for key, history in (("relu", large), ("leaky", leaky)):
    earlier, now = history[revive_from], history[-1]
    back = (earlier & ~now).sum(1) / np.maximum(earlier.sum(1), 1)
    results.spread(f"revived_{key}", back, f"{key}: share of step-{COUNTS[revive_from]} dead units back")
    claim_all(f"few_revive_{key}", back < 0.5, f"{key}: fewer than half come back, on every seed.", b=back)
    revived[key], revived_layer1[key] = back, (earlier & ~now)[:, : sizes[1]].sum(1)
claim_all("revive_layer2_only", revived_layer1["relu"] == 0, "Every ReLU unit that comes back sits in the "
          "second hidden layer.", layer1=revived_layer1["relu"])  # fmt: skip
claim_all("leaky_not_always_more", not np.all(revived["leaky"] > revived["relu"]), "Not on every seed: on "
          "some seed ReLU brings back at least as large a share as leaky ReLU.", True, **revived)  # fmt: skip
claim_all("leaky_stays_negative", leaky[-1].mean(1) > 0, f"Leaky ReLU at η = {args.lr:g} ends with units "
          "negative on every input, on every seed.", end=leaky[-1].mean(1))  # fmt: skip
fig, ax = plt.subplots()
for key, (label, _) in SETTINGS.items():
    fraction = runs[key][1].mean(axis=2)  # (count, seed)
    line = ax.plot(COUNTS, fraction[:, 0], label=label)
    ax.fill_between(COUNTS, fraction.min(1), fraction.max(1), color=line[0].get_color(), alpha=0.2)
ax.set(title="Hidden units negative on every training input", xlabel="SGD step",
       ylabel="units with z ≤ 0 on all inputs (% of all)")  # fmt: skip
ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
legend = dict(fontsize="x-small", title_fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.15))
ax.legend(title=f"lines: seed {seeds[0]}; bands: range over {len(seeds)} seeds", ncol=2, **legend)
ends = [f"{label}: {runs[k][1][-1].mean(1).min():.0%} to {runs[k][1][-1].mean(1).max():.0%}"
        for k, (label, _) in SETTINGS.items()]  # fmt: skip
results.figure(fig, "dead_fraction", alt=f"Fraction of hidden units negative on every training input over "
               f"{args.steps} SGD steps; lines: seed {seeds[0]}; bands: the range over {len(seeds)} seeds. "
               f"At the end: {'; '.join(ends)}.")  # fmt: skip

# %% [markdown]
# The large-step run at other rates, on the first seed (each frame is what `--lr` gives for it).

# %%
rates = sorted({0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.05, 0.06, args.lr})
rngs, stack = [np.random.default_rng([seeds[0], 1]) for _ in rates], lambda a: np.repeat(a[:1], len(rates), 0)
_, sweep = rate_sweep.sgd(seeded_mlp.init(sizes, rngs), stack(X), stack(y), rates, 0.0, rngs, args.steps,
                          args.batch, COUNTS)  # fmt: skip
layers = {"both layers": sweep, "layer 1": sweep[..., : sizes[1]], "layer 2": sweep[..., sizes[1] :]}
claim_all("sweep_is_lr_large", sweep[:, rates.index(args.lr)] == large[:, 0], "The sweep's large step is the "
          "table's.")  # fmt: skip
final_dead = sweep[-1].sum(-1)  # per rate
results.number("sweep_largest_share", np.diff(final_dead).max() / max(final_dead[-1] - final_dead[0], 1),
               "slider: largest share of the dead count's rise one step of the rate adds")  # fmt: skip
shares = {k: [list(v[:, i].sum(-1) / sweep.shape[-1]) for i in range(len(rates))] for k, v in layers.items()}
text = [f"η = {r:g}: {sweep[-1, i].mean():.0%} of the hidden units dead after {args.steps} steps (layer 1: "
        f"{sweep[-1, i, : sizes[1]].sum()}, layer 2: {sweep[-1, i, sizes[1] :].sum()} units), seed {seeds[0]}"
        for i, r in enumerate(rates)]  # fmt: skip
results.frames("lr_sweep", parameter="learning rate η", values=rates, default=args.lr, x=COUNTS,
               series=shares, description=text, title="Dead units as the step grows", xlabel="SGD step",
               command=f"python snippets/dying_relu.py --lr {{value}} --seed {args.seed}",
               ylabel="share of all hidden units with z ≤ 0 on all inputs")  # fmt: skip

# %% [markdown]
# ## Is it backprop?
# The first seed's network after the large step: dL/dw for every dead unit by reverse mode; by four
# methods for those out of one central step's reach (layer 1's, `checked_layer2` of layer 2's).

# %%
params = seeded_mlp.one_seed(runs["lr_large"][0], 0)
(dead1, dead2), clear = dead_units.out_of_reach(params, X[0], large[-1][0])
checked_layer2 = 1  # each layer-2 unit brings 65 weights; one keeps forward mode quick
checked = [dead1[clear[0]], dead2[clear[1]][:checked_layer2]]  # out of one central step's reach
dead_loss, dead_params = seeded_mlp.loss_of_units(params, X[0], y[0], checked)
reverse_all = max(float(np.abs(g).max(initial=0)) for g in engine.grad(*seeded_mlp.loss_of_units(
    params, X[0], y[0], [dead1, dead2])))  # fmt: skip
results.number("dead_grad_reverse_all", reverse_all, "reverse: max |dL/dw| over every dead unit's weights")
largest = {}
for name, method in check.METHODS.items():
    largest[name] = max(float(np.abs(g).max(initial=0.0)) for g in method(dead_loss, dead_params))
    print(f"{name:<8} largest |gradient| over the dead units' incoming weights: {largest[name]!r}")
    results.number(f"dead_grad_{name}", largest[name], f"{name}: max |dL/dw| over dead units' weights")
results.claim("dead_grad_zero", max(largest.values()) == 0.0 == reverse_all, "All four methods give exactly "
              "0 on the checked units, reverse mode on every dead unit.", largest)  # fmt: skip
for key, value in dict(check_seed=seeds[0], dead_layer1=len(dead1), dead_layer2=len(dead2),
                       checked_layer1=len(checked[0]), checked_layer2=len(checked[1])).items():  # fmt: skip
    results.number(key, value, "the seed of the gradient checks; its dead units; those checked")
z_top, move = dead_units.central_reach(params, X[0], checked)
results.number("dead_closest_z", max(z_top), "checked dead units: largest z over the data", rtol=1e-4)
results.number("h_largest_move", max(move), "largest change of z by one central step", rtol=1e-3)
step32 = numerical.default_step(np.float32)  # the same check in float32: how many dead units are in reach
results.number("h_largest_move_float32", max(move) * step32 / numerical.default_step(), "float32", rtol=1e-3)
for key, step in (("float64", None), ("float32", step32)):
    in_reach = dead_units.in_reach(runs["lr_large"][0], X, large[-1], step)
    results.spread(f"in_reach_{key}", in_reach, f"dead units one central step can reach, {key}")
live1 = np.flatnonzero(~large[-1][0][: sizes[1]])[:8]
live = check.compare(*seeded_mlp.loss_of_units(params, X[0], y[0], [live1]))
exact = max(live["reverse vs forward"], live["reverse vs complex"])
results.number("check_max_disagreement", exact, "live units: reverse vs forward/complex", atol=1e-6)
results.number("check_central_disagreement", live["reverse vs central"], "live: vs central", atol=1e-6)
results.claim("live_agree", exact < 1e-10 and live["reverse vs central"] < 1e-5, "On live units reverse mode "
              "agrees with forward mode and the complex step to 1e-10, with central differences to 1e-5.",
              live)  # fmt: skip

# %% [markdown]
# Leaky ReLU at the large step: per unit negative on every input, the largest incoming |gradient|,
# by reverse mode (every such unit) and central differences (layer 1's, `checked_layer2` of layer 2's).

# %%
leaky_params = seeded_mlp.one_seed(runs["leaky"][0], 0)
negative1, negative2 = (np.flatnonzero(m) for m in np.split(leaky[-1][0], [sizes[1]]))
per_unit = {}
for name, units2 in (("reverse", negative2), ("central", negative2[:checked_layer2])):
    f, sub = seeded_mlp.loss_of_units(leaky_params, X[0], y[0], [negative1, units2], "leaky_relu")
    grads = [np.abs(np.atleast_2d(g)) for g in check.METHODS[name](f, sub)]
    per_unit[name] = np.concatenate([np.vstack(grads[:2]).max(0), np.vstack(grads[2:]).max(0)])
    results.number(f"leaky_grad_min_{name}", per_unit[name].min(), f"{name}: min per-unit max |g|", rtol=1e-3)
results.number("leaky_negative_units", len(per_unit["reverse"]), "that seed, leaky: negative everywhere")
results.claim("leaky_no_zero_grad", all(bool(np.all(v > 0)) for v in per_unit.values()), "Leaky ReLU: no "
              "negative unit has a zero gradient, by reverse mode and by central differences.",
              {name: v.min() for name, v in per_unit.items()})  # fmt: skip

# %%
results.save()
