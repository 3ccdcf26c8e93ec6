"""Initialization: where the optimizer starts, and how far the signal travels from there.

A deep MLP at its start under five initializations, two activations and five seeds: variances per layer
against the mean-field formula, Jacobian spectra, an equal start, four gradient methods. Quoted by
docs/initialization.md.
"""

# %% [markdown]
# ## The setup
# `depth` hidden layers of `width` units, $z_l = h_{l-1} W_l$, $h_l = f(z_l)$, normal inputs
# $h_0 = X$; the loss is a fixed random read-out $L = \frac1B \sum_i y_i \cdot r_i$, so every
# change in the gradient's size comes from the layers in between. Five seeds: new X, r, weights.

# %%
import numpy as np
from gradlab import init as inits
from gradlab import init_figures, snippet
from gradlab.first_layer_check import first_layer_check

parser = snippet.parser(__doc__)
parser.add_argument("--depth", type=snippet.positive_int, default=20, help="hidden layers")
parser.add_argument("--width", type=snippet.positive_int, default=256, help="units per layer")
parser.add_argument("--batch", type=snippet.positive_int, default=64, help="inputs per batch")
parser.add_argument("--naive-std", type=snippet.positive_float, default=0.01, help="small fixed std")
parser.add_argument("--large-std", type=snippet.positive_float, default=1.0, help="large fixed std")
parser.add_argument("--sym-width", type=snippet.positive_int, default=8, help="units of the equal-start net")
parser.add_argument("--sym-steps", type=snippet.positive_int, default=300, help="its gradient steps")
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
depth, width, batch, n_out = args.depth, args.width, args.batch, 10
INITS = {"small": args.naive_std, "large": args.large_std, "glorot": "glorot", "he": "he", "orthogonal": None}
LABELS = {"small": f"N(0, {args.naive_std:g}²)", "large": f"N(0, {args.large_std:g}²)"}
LABELS |= {"glorot": "Glorot", "he": "He", "orthogonal": "orthogonal"}
ACTIVATIONS = ["tanh", "relu"]
SPECTRUM = [("tanh", "glorot"), ("tanh", "orthogonal"), ("relu", "he"), ("relu", "orthogonal")]
SATURATED_SLOPE = 0.01  # a tanh unit is saturated below 1% of its largest slope, as in saturation.py
ZERO_SV = 1e-10  # a singular value below this times the largest counts as numerically zero
SYM_VALUE, SYM_LR = 0.3, 0.1  # the equal start's weights and its gradient-descent step
settings = dict(depth=depth, width=width, batch=batch, naive_std=args.naive_std, large_std=args.large_std)
settings |= dict(sym_width=args.sym_width, sym_steps=args.sym_steps, sym_value=SYM_VALUE, sym_lr=SYM_LR)
settings |= dict(saturated_slope=SATURATED_SLOPE, zero_sv=ZERO_SV, he_std=float(np.sqrt(2 / width)))
sigma_f = {a: float(np.sqrt(c / (width * (depth - 1)))) for a, c in (("relu", 5), ("tanh", 2))}  # see below
settings |= dict(sigma_f_relu=sigma_f["relu"], sigma_f_tanh=sigma_f["tanh"])
settings["he_walk_tol"] = 4 * (depth - 1) * sigma_f["relu"]  # 4 √(5 (D - 1) / n)
for key, value in settings.items():  # quoted by the chapter
    results.number(key, value, f"setting: {key}")

# %% [markdown]
# ## One forward and one backward pass per setting and seed
# Orthogonal weights get gain 1 (tanh) or $\sqrt2$ (ReLU): Glorot's and He's entry variance here.


# %%
def measure(activation, init, seed):
    """A fresh network at its starting point, on seed's data: ``inits.propagate``'s numbers."""
    data_rng, sizes = np.random.default_rng([seed, 0]), [width] * (depth + 1) + [n_out]
    X, readout = data_rng.normal(size=(batch, width)), data_rng.normal(size=(batch, n_out))
    gain = np.sqrt(2) if activation == "relu" else 1.0  # init: a name or a std; orthogonal takes a gain
    scheme = ("orthogonal", gain) if init == "orthogonal" else INITS.get(init, init)
    params = inits.seeded_mlp(sizes, scheme, (seed, 1))  # init_mlp/orthogonal_mlp on default_rng([seed, 1])
    run = inits.propagate(params, X, readout, activation)
    run["grad_rms_first"] = run["relgrad"] * np.linalg.norm(params[0]) / np.sqrt(params[0].size)
    run["saturated"] = np.mean([np.mean(slope < SATURATED_SLOPE) for slope in run["slopes"]])
    if (activation, init) in SPECTRUM:  # of dh_D/dh_0 at the batch's first input
        singular = inits.jacobian_singular_values(params[0:-2:2], [slope[0] for slope in run["slopes"]])
        run |= {"singular": singular, "sv_spread": singular[0] / np.median(singular)}
        run["sv_zero"] = np.mean(singular < ZERO_SV * singular[0])
    return run


runs = {(act, init): [measure(act, init, seed) for seed in SEEDS] for act in ACTIVATIONS for init in INITS}


def seeds_of(act, init, key):
    return np.array([run[key] for run in runs[act, init]])


for act, init in runs:
    for key in ["forward", "backward", "relgrad", "output_rms", "grad_h_ratio", "grad_rms_first"]:
        results.spread(f"{key}_{act}_{init}", seeds_of(act, init, key), f"{act}, {init}: {key}", rtol=1e-4)

# %%
first = {pair: trials[0] for pair, trials in runs.items()}
fig, alt = init_figures.variance_figure(first, LABELS, ACTIVATIONS, SEEDS[0])
results.figure(fig, "variance_per_layer", alt=alt)
fig, alt = init_figures.spectrum_figure(first, LABELS, ACTIVATIONS, SPECTRUM, SEEDS[0])
results.figure(fig, "jacobian_spectrum", alt=alt)

# %% [markdown]
# The ReLU network of the first seed at other weight scales (each frame is `--naive-std`'s N(0, σ²) row),
# and the last layer's Var[z] at the two fixed scales against float32's range.

# %%
stds = sorted({0.01, 0.02, 0.04, 0.06, 0.07, 0.08, 0.09, 0.1, 0.12, 0.15, 0.2, args.naive_std})
sweep = [measure("relu", std, SEEDS[0]) for std in stds]  # ReLU, no bias: each factor is exactly c σ²
crossing = max(stds[-1] / np.sqrt(sweep[-1][d]) for d in ("forward", "backward"))  # factor (σ / crossing)²
results.number("sweep_crossing", crossing, f"σ where both factors reach 1, seed {SEEDS[0]}", rtol=1e-6)
cmd = f"python snippets/initialization.py --naive-std {{value}} --seed {args.seed}"
results.frames("scale_sweep", default=args.naive_std, **init_figures.signal_frames(stds, sweep, width, cmd))
last = {i: seeds_of("relu", i, "var_z")[:, -1] for i in ("small", "large")}
f32 = np.finfo(np.float32)
for key, value in dict(float32_max=f32.max, float64_max=np.finfo(float).max, float32_tiny=f32.tiny).items():
    results.number(key, float(value), "float32's largest number, float64's, float32's smallest normal")
for i, values in last.items():
    results.spread(f"var_z_last_relu_{i}", values, f"ReLU, {i} scale: Var[z_D]", rtol=1e-4)
    results.spread(f"rms_z_last_relu_{i}", np.sqrt(values), f"ReLU, {i} scale: RMS of z_D", rtol=1e-4)

# %% [markdown]
# ## The formula against the measurements
# Backward each layer multiplies the variance by $n\sigma_w^2\,\mathbb E[f'(z)^2]$, forward by
# $n\sigma_w^2\,\mathbb E[f(z)^2]/\mathrm{Var}[z]$: both $n\sigma_w^2/2$ for ReLU (1 under He), about
# $n\sigma_w^2$ for tanh near 0; for saturated tanh (backward only) $\mathbb E[f'^2]$ is measured.
# Measured: the geometric mean of $D-1$ ratios, each random, variance $\le c/n$ ($c$ = 5 ReLU, 2 tanh near 0).

# %%
slope_sq = [np.exp(np.mean([np.log(np.mean(s**2)) for s in r["slopes"][1:]])) for r in runs["tanh", "large"]]
large_tanh, small_tanh = width * args.large_std**2 * np.array(slope_sq), width * args.naive_std**2
predictions = {("relu", "he"): 1.0, ("tanh", "small"): small_tanh, ("tanh", "large"): large_tanh}
off, sigmas = {}, {}  # |measured / predicted - 1|; |ln(measured / predicted)| / σ_F, σ_F = √(c / (n (D - 1)))
for (act, init), predicted in predictions.items():
    for direction in ["forward", "backward"] if init != "large" else ["backward"]:
        ratio, k = seeds_of(act, init, direction) / predicted, (act, init, direction)
        off[k], sigmas[k] = np.abs(ratio - 1), np.abs(np.log(ratio)) / sigma_f[act]
        key, about = f"rel_diff_{act}_{init}_{direction}", "|measured / predicted - 1|"
        results.spread(key, off[k], about, atol=1e-6, rtol=1e-3)
results.number("predicted_tanh_small", small_tanh, "n sigma^2 for the small scale")
results.spread("predicted_tanh_large", large_tanh, "n sigma^2 E[tanh'^2] under the large scale", rtol=1e-4)
results.spread("saturated_tanh_large", seeds_of("tanh", "large", "saturated"), "share saturated", rtol=1e-4)
saturated_off, _ = off.pop(("tanh", "large", "backward")).max(), sigmas.pop(("tanh", "large", "backward"))
worst = results.number("formula_sigmas", max(v.max() for v in sigmas.values()), "largest, in σ_F", rtol=1e-3)
# The chapter's sentences, as claims ("every factor": forward and backward, on every seed)
F = {pair: np.concatenate([seeds_of(*pair, "forward"), seeds_of(*pair, "backward")]) for pair in runs}
spreads = {f"{key}_range_relu_he": np.array([r[v].max() / r[v].min() for r in runs["relu", "he"]])
           for key, v in (("var", "var_z"), ("grad", "var_grad_h"))}  # fmt: skip
walk = np.log([v[1:] / v[0] for r in runs["relu", "he"] for v in (r["var_z"], r["var_grad_h"][::-1])])
walk_sigmas = np.max(np.abs(walk) / np.sqrt(5 * np.arange(1, depth) / width))  # k = 1 .. D - 1 layers on
ratios = {i: seeds_of("relu", i, "ratio") for i in ("small", "large", "he")}
spreads |= {f"ratio_relu_{i}": v for i, v in ratios.items()}  # |dL/dW_1| / |dL/dW_last|
for key, values in spreads.items():
    results.spread(key, values, "ReLU: max/min Var over layers (He), or |dL/dW_1|/|dL/dW_last|", rtol=1e-4)
sv = {f"{key}_{a}_{i}": seeds_of(a, i, key) for a, i in SPECTRUM for key in ("sv_spread", "sv_zero")}
for key, values in sv.items():  # ZERO_SV lies inside a continuous spectrum: one value may cross it
    if not key.startswith("sv_spread_relu"):  # ReLU's median singular value is rounding noise
        results.spread(key, values, "Jacobian: max/median sv, share zero", rtol=1e-4, atol=2 / width)
saturated, backward = seeds_of("tanh", "large", "saturated"), seeds_of("tanh", "large", "backward")
ortho_sigmas = max(abs(np.log(F[a, "orthogonal"] / F[a, i])).max() / sigma_f[a] for a, i in SPECTRUM[::2])
small_max = max(F[a, "small"].max() for a in ACTIVATIONS)
small_rms = np.concatenate([seeds_of(a, "small", "grad_rms_first") for a in ACTIVATIONS])
ratio_off = max(abs(ratios[i] / ratios["he"] - 1).max() for i in ratios)
isometric = sv["sv_spread_tanh_orthogonal"].max() * 100 < sv["sv_spread_tanh_glorot"].min()
glorot_relu, glorot_tanh, large_relu = F["relu", "glorot"], F["tanh", "glorot"], F["relu", "large"]
CLAIMS = """
formula_holds: every factor of ReLU + He and of small-scale tanh is within 4 σ_F of the formula's, in the log
formula_holds_saturated: saturated tanh: the backward factor is within 15% of the formula's on every seed
small_shrinks: every layer at least halves the variance, forward and backward, with tanh and with ReLU
large_relu_grows: every ReLU layer at least doubles the variance, forward and backward
glorot_relu_halves: ReLU + Glorot: every factor is 1/2 ± 0.1
he_relu_preserved: with ReLU + He, ln Var[z_{k+1}] lies within 4√(5k/n) of ln Var[z_1], as does the gradient's
glorot_tanh_slow: tanh + Glorot: every factor is between 0.7 and 1
tanh_large_saturated_yet_grows: tanh, large scale: most units saturated, yet the backward factor is above 1
ratio_hides_scale: the ratio is the same under the three scales to a relative 1e-9, on every seed
orthogonal_same_variance: orthogonal's factors are within 4√2 σ_F of Glorot's (tanh) and He's (ReLU) in log
orthogonal_tanh_isometric: tanh: orthogonal's largest/median singular value is over 100 times below Glorot's
below_adam_eps: on every seed both lie more than a million times below Adam's default epsilon, 1e-8
relu_half_zero: ReLU: at least half the singular values are numerically zero, under He and orthogonal alike
float32_out_of_range: on every seed, large scale above float32's max; small scale under 1000 × its tiny
values_inside_float32: on every seed, the RMS of z_D lies inside float32's normal range at both scales
sweep_crosses_he: both factors are < 1 at σ = 0.08 and > 1 at σ = 0.1 (He's σ = √(2/n) lies between)
"""
checks = {  # name: (holds on every seed, the numbers behind it)
    "formula_holds": (worst < 4, {str(k): v for k, v in sigmas.items()}),
    "formula_holds_saturated": (saturated_off < 0.15, {"off": saturated_off}),
    "small_shrinks": (small_max < 0.5, {"largest factor": small_max}),
    "large_relu_grows": (large_relu.min() > 2, {"factors": large_relu}),
    "glorot_relu_halves": (abs(glorot_relu - 0.5).max() < 0.1, {"factors": glorot_relu}),
    "he_relu_preserved": (walk_sigmas < 4, spreads | {"largest, in √(5k/n)": walk_sigmas}),
    "glorot_tanh_slow": (np.all((glorot_tanh > 0.7) & (glorot_tanh < 1)), {"factors": glorot_tanh}),
    "tanh_large_saturated_yet_grows": (saturated.min() > 0.5 and backward.min() > 1, {"b": backward}),
    "ratio_hides_scale": (ratio_off < 1e-9, ratios),
    "orthogonal_same_variance": (ortho_sigmas < 4 * np.sqrt(2), {"largest, in σ_F": ortho_sigmas}),
    "orthogonal_tanh_isometric": (isometric, sv),
    "below_adam_eps": (small_rms.max() < 1e-14, {"RMS of dL/dW_1 entries": small_rms}),
    "relu_half_zero": (min(sv["sv_zero_relu_he"].min(), sv["sv_zero_relu_orthogonal"].min()) >= 0.5, sv),
    "float32_out_of_range": (last["large"].min() > f32.max and last["small"].max() < 1000 * f32.tiny, last),
    "values_inside_float32": (np.sqrt(last["large"].max()) < f32.max
                              and np.sqrt(last["small"].min()) > f32.tiny, last),
    "sweep_crosses_he": (max(sweep[stds.index(0.08)][d] for d in ("forward", "backward")) < 1
                         < min(sweep[stds.index(0.1)][d] for d in ("forward", "backward")), {"stds": stds}),
}  # fmt: skip
for name, text in (line.split(": ", 1) for line in CLAIMS.strip().splitlines()):
    results.claim(name, bool(checks[name][0]), text, checks[name][1])
adam_step = small_rms / (small_rms + 1e-8)  # Adam's first step / η at an entry of the RMS's size
text = "On every seed Adam's first step at the first layer's gradient RMS g, η|g|/(|g| + ε), exceeds η/100, "
text += "and Var[z_D] lies over 1000 times above float32's smallest normal number."
holds = bool(adam_step.min() > 0.01 and last["small"].min() > 1e3 * f32.tiny)
results.claim(
    "small_scale_trains", holds, text, {"step / η": adam_step} | last, answer=True
)  # --naive-std 0.04

# %% [markdown]
# ## A symmetric start
# Every weight of a small tanh network equal to `SYM_VALUE`, against a Glorot draw, both trained by
# gradient descent. Swapping two units leaves $L$ unchanged, so equal units stay equal, in exact
# arithmetic; a BLAS may round equal columns differently, so the claims allow a relative 1e-12.

# %%
sym_sizes, problems = [4, args.sym_width, args.sym_width, 1], []
for seed in SEEDS:  # every seed's two starts train at once, as equal_versus_random would one by one
    X_sym = (rng := np.random.default_rng([seed, 2])).normal(size=(64, sym_sizes[0]))
    problems.append((X_sym, np.sin(1.5 * X_sym @ rng.normal(size=(sym_sizes[0], 1))), rng))
sym = inits.equal_versus_random_seeds(problems, sym_sizes, SYM_VALUE, SYM_LR, args.sym_steps)
print("dL/dW_1 at the equal start, first row:", sym[0]["first_grads"][0][0])
results.number("sym_grad_example", sym[0]["first_grads"][0][0, 0], "dL/dW_1[0, j], equal start", rtol=1e-4)
equal, random = np.array([r["equal"] for r in sym]), np.array([r["random"] for r in sym])
for key, values in {"equal": equal, "random": random, "ratio": random / equal}.items():
    results.spread(f"sym_loss_{key}", values, f"loss after {args.sym_steps} steps ({key})", rtol=1e-4)
spread = {key: np.array([r[key] for r in sym]) for key in ("grad_spread", "unit_spread")}
for key, values in spread.items():  # 0 where the BLAS rounds every column alike; 1e-16 where not
    results.spread(f"sym_{key}", values, "largest relative difference between units", atol=1e-12)
text = "units started equal get the same gradient, to a relative 1e-12"
results.claim("equal_grads_identical", spread["grad_spread"].max() < 1e-12, text, spread)
text = f"after {args.sym_steps} steps the units started equal still agree to a relative 1e-12"
results.claim("equal_stays_equal", spread["unit_spread"].max() < 1e-12, text, spread)
split, start = spread["unit_spread"].max(), max(spread["grad_spread"].max(), np.finfo(float).eps)
text = f"After {args.sym_steps} steps the largest relative difference between units started equal, over the "
text += "seeds, is 0 or over 1000 times that between their first gradients and float64's epsilon."
results.claim("split_grows", split == 0 or split > 1e3 * start, text, spread, answer=True)  # --sym-steps 3000
text = "the random start ends below the equal start's loss on the median seed (not on every seed)"
fits_better = bool(np.median(random / equal) < 1)
results.claim("random_fits_better", fits_better, text, {"equal": equal, "random": random})

# %% [markdown]
# ## Is it backprop?
# The small-scale tanh net's first-layer gradient by four methods, on a copy `check_width` units wide.

# %%
check_width = results.number("check_width", 8, "width and batch of the smaller copy")
copies = [first_layer_check(depth, check_width, args.naive_std, np.random.default_rng([s, 3])) for s in SEEDS]
exact, central, grad_rms = ([copy[key] for copy in copies] for key in ("exact", "central", "grad_rms"))
results.spread("check_grad_rms", grad_rms, "small copy: RMS first-layer gradient", rtol=1e-4)
results.spread("check_exact", exact, "reverse vs forward mode and complex step", atol=1e-9)
results.spread("check_central", central, "reverse vs central differences", atol=1e-5)
text = "reverse mode agrees with forward mode and the complex step to 1e-9, with central differences to 1e-5"
agree = max(exact) < 1e-9 and max(central) < 1e-5
results.claim("methods_agree", agree, text, {"exact": exact, "central": central})

# %%
results.save()
