"""Saturating sigmoids: slopes, saturated units and the backward signal through a deep stack.

The slope bound; where the slope written y(1 - y) rounds to 0 and the methods disagree; saturated
units and the backward signal ||dL/dz_l|| of a deep MLP under sigmoid (four weight scales and a
sweep), tanh and ReLU on five seeds, checked by four methods. Quoted by docs/saturating-sigmoids.md.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import backward_signal, diagnostics, engine, logistic, models, ops, signal_frames, snippet
from gradlab.backward_signal import rescaled, setup_report

parser = snippet.parser(__doc__)
arguments = {  # name: (type, default, help); each is also recorded as a number
    "depth": (snippet.positive_int, 10, "hidden layers of the stack"),
    "width": (snippet.positive_int, 32, "units per hidden layer"),
    "input_scale": (snippet.positive_float, 20.0, "mean and std of the raw inputs"),
    "weight_std": (snippet.positive_float, 1.5, "the sigmoid's large weight std s"),
}
for name, (kind, default, about) in arguments.items():
    parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default, help=about)
args, results = snippet.parse(parser)

# %% [markdown]
# ## The slope bound, and where the program rounds the slope to zero
# $\sigma'(z) = \sigma(z)\sigma(-z) \le 1/4$; $\tanh' \le 1$. The formula $1/(1 + e^{-z})$, rounded twice, is
# exactly 1.0 once $e^{-z} \le 2^{-p}$ ($p$ = 53 in float64, 24 in float32): from the first float $\ge
# p \ln 2$, found in decimal arithmetic, not with the machine's `exp`; the correctly rounded $\sigma$ only
# from $(p+1)\ln 2$. There $y(1-y)$ returns 0; $\sigma(z)\sigma(-z)$ stays positive past $1075 \ln 2$.

# %%
grid = np.linspace(-10, 10, 2001)
for name, f in (("sigmoid", ops.sigmoid), ("tanh", ops.tanh)):  # slopes from the output, as diagnostics
    results.number(f"{name}_max_slope", diagnostics.local_slope(name, f(grid)).max(), f"largest {name} slope")
for dtype, bits, tiny, zero in ((np.float64, 53, 1022, 1075), (np.float32, 24, 126, 150)):
    z_one, name = logistic.first_float_at_or_above(bits, dtype), np.dtype(dtype).name
    for key, power in (("subnormal", tiny), ("underflow", zero)):  # e^-z is subnormal / rounds to 0 from here
        results.number(f"z_{key}_{name}", logistic.first_float_at_or_above(power, dtype), f"{key}, {name}")
    results.number(f"z_one_{name}", z_one, f"first {name} z >= {bits} ln 2: sigmoid(z) is 1.0 from here")
    steps = logistic.floats_from(z_one, logistic.machine_rounds_to_one(dtype))
    statement = f"This machine's {name} sigmoid is 1.0 from that float or one beside it."
    results.claim(f"libm_agrees_{name}", abs(steps) <= 1, statement, {"floats away": steps})
y_below = ops.sigmoid(z_below := np.nextafter(logistic.first_float_at_or_above(53), 0.0))
results.number("slope_rule_just_below", y_below * (1 - y_below), "y(1 - y) one float below z_one_float64")
results.number("slope_true_just_below", logistic.reference_slope(z_below), "true sigma' there (decimal)")
correct = logistic.correctly_rounded(37.0)  # sigma(37) rounded once: 1 - 2^-53, not 1.0
results.number("spacing_below_one", 1 - np.nextafter(1.0, 0.0), "float64: gap from 1.0 to the float below")
for key in ("one_minus", "rule_slope", "z_one"):
    results.number(f"correct37_{key}", correct[key], f"correctly rounded sigma at 37: {key}")
held = correct["one_minus"] > 0 and correct["threshold_holds"] and correct["flat_under_step"]
results.claim("correct_sigma_not_one", bool(held), "The correctly rounded sigma(37) is 1 - 2^-53, not 1.0, "
    "and the same at 37 -+ h; it first rounds to 1.0 at the first float above 54 ln 2.", correct)  # fmt: skip
(far := engine.Tensor(np.array([745.0, 746.0]), requires_grad=True)).sigmoid().sum().backward()
statement = "gradlab's slope sigmoid(z) sigmoid(-z) is > 0 at z = 745 and 0 at z = 746."
results.claim("gradlab_slope_lasts", bool(far.grad[0] > 0 == far.grad[1]), statement, {"slope": far.grad})

# %% [markdown]
# ## A case where the methods disagree
# $\sigma'(37)$ by the rule $y(1-y)$ (reverse, forward mode), central differences, complex step, gradlab.

# %%
at_37 = logistic.slope_by_methods(37.0)
for key, value in at_37.items():
    results.number(f"slope37_{key}", value, f"sigma'(37): {key.replace('_', ' ')}")
results.claim("methods_disagree_at_37", at_37["reverse_rule"] == at_37["forward_rule"] == at_37["central"]
    == 0.0 and all(abs(at_37[key] / at_37["true"] - 1) < 1e-14 for key in ("complex", "reverse_gradlab")),
    "At z = 37 the rule y(1-y), in reverse and forward mode, and central differences give exactly 0; "
    "the complex step and gradlab's rule agree with the true slope to 1e-14.", at_37)  # fmt: skip

# %% [markdown]
# ## The stack, on five seeds
# Inputs standardized or raw (mean and std `--input-scale`, like features in natural units). Per seed
# one standard-normal weight draw, rescaled for every setup. Backward signal: $\lVert \partial L/\partial
# z_l \rVert$. Saturated: slope below 1% of the largest, $|z| > 6$ (sigmoid), $|z| > 3$ (tanh).

# %%
n_inputs, batch = 4, 32
setups = {  # key: (label, activation, init, multiple of it)
    "glorot": ("sigmoid, Glorot", "sigmoid", "glorot", 1),
    "glorot4": ("sigmoid, 4 × Glorot", "sigmoid", "glorot", 4),
    "large": (f"sigmoid, s = {args.weight_std:g}", "sigmoid", args.weight_std, 1),
    "huge": (f"sigmoid, s = {2 * args.weight_std:g}", "sigmoid", args.weight_std, 2),
    "tanh": ("tanh, Glorot", "tanh", "glorot", 1),
    "relu": ("ReLU, He", "relu", "he", 1),
}


def draw(generator, depth=args.depth, input_scale=args.input_scale):
    X = generator.normal(size=(batch, n_inputs))
    X_raw = input_scale * (1 + generator.normal(size=(batch, n_inputs)))
    layers = [n_inputs] + [args.width] * depth + [1]
    return X, X_raw, generator.normal(size=(batch, 1)), models.init_mlp(layers, 1.0, generator)


def measure_setups(X, X_raw, y, unit):
    return {k: setup_report(rescaled(unit, i, m), X, X_raw, y, a) for k, (_, a, i, m) in setups.items()}


draws = [draw(np.random.default_rng(seed)) for seed in snippet.seeds(args.seed)]
per_seed = [measure_setups(*d) for d in draws]
about = dict(signal_ratio="||dL/dz_1|| / ||dL/dz_D||", weight_ratio="||dL/dW_1|| / ||dL/dW_D||")
about |= dict(same_sign="one-sign incoming weight gradients (layers 2..D)", saturated="saturated share")
about |= dict(slope_mean="mean slope (2..D)", first_saturated="layer 1", first_saturated_raw="layer 1, raw")
about["signal_estimate"] = "prod_l ||W_l+1||_F / sqrt(fan_out) * rms f'(z_l): typical-gain estimate"
seeds_of = {q: {key: np.array([s[key].get(q, np.nan) for s in per_seed]) for key in setups} for q in about}
for key, (label, *_) in setups.items():
    for q in [q for q in about if q in per_seed[0][key]]:
        results.spread(f"{q}_{key}", seeds_of[q][key], f"{label}: {about[q]}")
ratio, same, raw = seeds_of["signal_ratio"], seeds_of["same_sign"], seeds_of["first_saturated_raw"]
scales, keep = ["glorot", "glorot4", "large", "huge"], ["large", "tanh", "relu"]
results.claim("signal_and_scale", bool(np.all(np.diff([ratio[k] for k in scales], axis=0) > 0)
    and ratio["glorot"].max() < 1e-4) and bool(ratio["glorot4"].max() < 0.1 and ratio["huge"].min() > 1)
    and all(0.02 < min(ratio[k]) < max(ratio[k]) < 10 for k in keep),
    "On every seed the sigmoid's signal ratio rises with the weight scale: below 1e-4 with Glorot, below "
    f"0.1 with 4 × Glorot, between 0.02 and 10 at s = {args.weight_std:g}, as with tanh and ReLU, and above "
    f"1 (growing towards the input) at s = {2 * args.weight_std:g}.",
    {k: ratio[k] for k in scales + keep[1:]})  # fmt: skip
results.claim("sigmoid_handicaps", bool(same["glorot"].min() > 0.7 and same["large"].min() > 0.1
    and max(same["tanh"]) < 0.05) and bool(max(same["relu"]) < 0.15 and min(min(raw[k]) for k in scales) > 0.3
    and min(raw["large"]) > 0.8), "On every seed, behind sigmoid layers over 70% (Glorot) and over 10% "
    "(large s) of units get incoming weight gradients of one sign over the batch, behind tanh layers under "
    "5%, behind ReLU layers under 15%; on raw inputs over 30% (every sigmoid scale) and over 80% (large s) "
    "of layer 1's units saturate.", {"same sign": same, "raw": raw})  # fmt: skip

# %%  Backward signal per layer, depths 2-20, one draw each (seed --seed, as `--depth D` draws it): the slider
depths, keys = sorted({*range(2, 21, 2), args.depth}), ["glorot", "glorot4", "tanh", "relu"]
command = f"python snippets/saturation.py --depth {{value}} --seed {args.seed}"
draw_one = lambda d: (w := draw(np.random.default_rng(args.seed), d))[:1] + w[2:]  # noqa: E731  X, y, W
ends = signal_frames.depth_sweep(results, "depth_sweep", draw_one, depths, setups, keys, default=args.depth,
                                command=command)  # fmt: skip
per_layer = {k: np.exp(np.polyfit(depths, np.log(ends[k]), 1)[0]) for k in keys}
for k in keys:
    results.number(f"sweep_per_layer_{k}", per_layer[k], f"{setups[k][0]}: fitted factor per layer")
glorot, typical = ends["glorot"], seeds_of["signal_estimate"]["glorot"] ** (1 / (args.depth - 1))
results.spread("typical_per_layer_glorot", typical, "Glorot sigmoid: (typical-gain estimate)^(1/(D-1))")
measured = ratio["glorot"] ** (1 / (args.depth - 1))  # each seed's own factor per layer-to-layer step
results.spread("measured_per_layer_glorot", measured, "Glorot sigmoid: (signal ratio)^(1/(D-1))")
falls = np.all(np.diff(np.log(glorot)) < 0) and glorot[-1] < 1e-8 and per_layer["glorot"] < 0.25
results.claim("deeper_sigmoids_vanish", bool(falls and abs(per_layer["glorot"] / np.median(typical) - 1)
    < 0.05) and max(abs(per_layer[k] - 1) for k in ("tanh", "relu")) < 0.1
    and bool(np.all(abs(measured / per_layer["glorot"] - 1) < 0.15)),
    f"From depth 2 to {depths[-1]} the Glorot sigmoid stack's signal ratio falls with every step, to under "
    "1e-8; its fitted factor per layer is below 1/4 and within 5% of the typical gain per layer (weight "
    "gain x rms slope, median of the seeds); tanh's and ReLU's fitted factors are within 10% of 1. At depth "
    f"{args.depth}, each seed's own factor, (signal ratio)^(1/(D-1)), is within 15% of the fitted one.",
    {k: per_layer[k] for k in keys} | {"typical": typical, "measured": measured})  # fmt: skip
# %%  A sweep of the sigmoid stack's weight std s on all five seeds: median, band from min to max
stds = np.geomspace(0.03, 2 * args.weight_std, 21)
qs = ("saturated", "first_saturated_raw", "signal_ratio")
reports = [[setup_report(rescaled(d[3], s), *d[:3], "sigmoid") for s in stds] for d in draws]
swept = np.array([[[report[q] for report in row] for row in reports] for q in qs])
glorot = models.weight_std("glorot", args.width, args.width)
crossings = np.array([backward_signal.first_crossing(stds, row) for row in swept[2]])
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
labels = ["all hidden layers, standardized inputs", f"layer 1, raw inputs (mean, std {args.input_scale:g})"]
for axis, label, values in zip([left, left, right], [*labels, "layer 1 / layer D"], swept, strict=True):
    (line,) = axis.semilogx(stds, np.median(values, axis=0), "o-", label=label)
    axis.fill_between(stds, values.min(axis=0), values.max(axis=0), color=line.get_color(), alpha=0.25)
    axis.set(xlabel="weight standard deviation s (log scale)")
for multiple, style in ((1, ":"), (4, "--")):
    right.axvline(multiple * glorot, color="gray", linestyle=style, label=f"{multiple} × Glorot")
left.set(title="Saturated share of sigmoid units", ylabel="fraction saturated")
right.set(title="Backward signal ||dL/dz_1|| / ||dL/dz_D||", yscale="log", ylabel="ratio (log scale)")
right.axhline(1, color="black", linewidth=0.8), left.legend(fontsize="small"), right.legend(fontsize="small")
results.spread("crossing_std", crossings, "s where the signal ratio first reaches 1 (log-log interpolated)")
results.spread("crossing_multiple", crossings / glorot, "that s in multiples of Glorot's std")
results.number("glorot_std", glorot, "Glorot's std for the square layers")
results.number("huge_std", 2 * args.weight_std, "the huge setup's weight std, 2 s")
results.number("offset_std_glorot4", np.sqrt(args.width) * 2 * glorot, "std of sum_i W[i, j] / 2, 4 × Glorot")
slope = seeds_of["slope_mean"]
results.claim("four_times_glorot_falls_short", bool(slope["glorot"].min() > 0.22 and slope["glorot4"].max()
    < 0.17 and min(crossings / glorot) > 6), "On every seed the mean slope in layers 2..D is above 0.22 with "
    "Glorot and below 0.17 with 4 × Glorot, and the signal ratio first reaches 1 above 6 × Glorot.",
    {"slope_mean": {k: slope[k] for k in ("glorot", "glorot4")}, "multiple": crossings / glorot})  # fmt: skip
results.figure(fig, "saturated_vs_scale", alt=f"As the weight std s grows, the sigmoid stack's "
    f"backward-signal ratio rises and passes 1 between s = {min(crossings):.1f} and {max(crossings):.1f}, "
    f"{min(crossings) / glorot:.0f} to {max(crossings) / glorot:.0f} times Glorot's {glorot:.2f}; the "
    f"saturated share of hidden units rises from 0 to {np.median(swept[0][:, -1]):.0%} at s = "
    f"{stds[-1]:g}; on raw inputs layer 1 saturates at much smaller s. Median and range over five "
    "seeds.")  # fmt: skip

# %% [markdown]
# ## Is it backprop?
# The Glorot sigmoid stack's first-layer gradient by four methods, on every seed. Central differences
# carry an absolute rounding error near $\epsilon |L| / h$ ($h = \epsilon^{1/3}$) in every entry.

# %%
checks = [backward_signal.first_layer_check(rescaled(d[3], "glorot"), d[0], d[2], "sigmoid") for d in draws]
worst = {q: max(c[q] for c in checks) for q in ("forward", "complex", "central", "central_over_rounding")}
for q, atol in {"forward": 1e-11, "complex": 1e-11, "central": 1, "central_over_rounding": 0.5}.items():
    about = "max |central - reverse| / (eps |L| / h)" if "_" in q else f"reverse vs {q}"
    results.number(q if "_" in q else f"{q}_error", worst[q], f"{about}, worst seed", rtol=0, atol=atol)
for q in ("largest", "median", "smallest"):
    results.spread(f"first_grad_{q}", [c[q] for c in checks], f"{q} |entry| of dL/dW_1", rtol=1e-3)
results.claim("methods_agree_on_the_stack", bool(worst["forward"] < 1e-10 and worst["complex"] < 1e-10
    and worst["central_over_rounding"] < 2), "On every seed forward mode and the complex step agree with "
    "reverse mode to 1e-10 in every entry, central differences to within twice their rounding error "
    "eps |L| / h.", worst)  # fmt: skip

# %% [markdown]
# ## Why: the product of Jacobians, and its bound
# $\lVert \partial L/\partial h_0 \rVert \le \prod_l \tfrac14 \lVert W_l \rVert_2
# \lVert \partial L/\partial h_D \rVert$ on the Glorot sigmoid stack; measured / bound splits exactly
# into slopes and directions (`bound_split`).

# %%
why = [backward_signal.bound_split(s["glorot"]["graph"], max_slope=0.25) for s in per_seed]
for w, means in zip(why, [s["glorot"]["slope_means"] for s in per_seed], strict=True):
    w |= {"slope_mean_min": min(means), "slope_mean_max": max(means)}
    w["square_spectral_norm"] = np.median(w.pop("spectral_norms")[1:])
for q in why[0]:
    results.spread(f"bound_{q}", [w[q] for w in why], f"Glorot sigmoid stack: {q.replace('_', ' ')}")
results.number("quarter_power", 0.25**args.depth, "(1/4)^D: the bound's slope factor alone")
off_by = [max(q := s[k]["signal_ratio"] / s[k]["signal_estimate"], 1 / q) for s in per_seed for k in setups]
results.number("estimate_off_by", max(off_by), "largest factor between a signal ratio and its estimate")
results.claim(
    "bound_holds_directions_dominate",
    all(w["measured"] < 0.25**args.depth < w["bound"] and w["directions"] < w["slopes"] for w in why)
    and max(off_by) < 8,
    "On every seed the measured shrinkage is below (1/4)^D and the bound above it, and the directions' "
    "factor is further below 1 than the slopes' factor; the typical-gain estimate is within a factor 8 "
    "of every setup's signal ratio.",
    {q: [w[q] for w in why] for q in ("measured", "bound", "slopes", "directions")} | {"off by": off_by},
)
# %%  The exercises' comparisons: each seed's Glorot sigmoid stack at the default depth and input scale
D10, RAW20 = (parser.get_default(k) for k in ("depth", "input_scale"))
at_defaults = [draw(np.random.default_rng(s), D10, RAW20) for s in snippet.seeds(args.seed)]
at_defaults = [setup_report(rescaled(d[3], "glorot"), *d[:3], "sigmoid") for d in at_defaults]
ratio10, raw20 = (np.array([r[q] for r in at_defaults]) for q in ("signal_ratio", "first_saturated_raw"))
predicted, estimate = ratio10 ** ((args.depth - 1) / (D10 - 1)), seeds_of["signal_estimate"]
results.spread("predicted_ratio_glorot", predicted, f"Glorot sigmoid: the seed's ratio at {D10}, ^((D-1)/9)")
near_fit = np.abs(np.r_[measured, ratio10 ** (1 / (D10 - 1))] / per_layer["glorot"] - 1)
ANSWERS = [  # what the answers to the exercises state, about other settings
    ("factor_near_fit", near_fit.max() < 0.15, f"On every seed that factor and the same seed's {D10}-layer "
     "factor are both within 15% of the slider's fitted factor per layer.", {"off by": near_fit}),
    ("power_prediction", np.all(np.abs(np.log10(ratio["glorot"] / predicted)) < 1), "On every seed the "
     "ratio is within a factor of 10 of that prediction.", {"ratio/predicted": ratio["glorot"] / predicted}),
    ("gain_outgrows_slope", np.all((estimate["huge"] > estimate["large"]) & (estimate["huge"] > 1)), "On "
     "every seed the typical-gain estimate, the product over the layers of s√n times the rms slope, is "
     f"larger at s = {2 * args.weight_std:g} than at s = {args.weight_std:g}, and above 1.", estimate),
    ("raw_share_rises", np.all(raw["glorot"] > raw20), "On every seed the share is higher than the same "
     f"seed's at input scale {RAW20:g}.", {"share": raw["glorot"], f"at {RAW20:g}": raw20}),
]  # fmt: skip
for name, holds, statement, values in ANSWERS:
    results.claim(name, bool(holds), statement, values, answer=True)
for name, (_, _, about) in arguments.items():
    results.number(name, getattr(args, name), about)
results.save()
