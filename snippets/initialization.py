"""Initialization: activation and gradient variance through a deep tanh or ReLU network.

A deep, wide MLP at initialization, run forward and backward once with the project's reverse
mode, under four weight scales (a small fixed 0.01, a large fixed 1, Glorot, He) and two
activations; the per-layer variances are checked against the mean-field formulas, and the
first-layer gradient is recomputed by four methods. Quoted by docs/initialization.md.
"""

# %% [markdown]
# ## The setup
# A multilayer perceptron with `depth` hidden layers of `width` units, $z_l = h_{l-1} W_l$
# (biases 0), $h_l = f(z_l)$, $W_l \sim \mathcal N(0, \sigma_w^2)$, inputs $h_0 = X$ with
# standard normal entries. The loss is a fixed random read-out of the output,
# $L = \frac1B \sum_i y_i \cdot r_i$, so $\partial L/\partial y = r/B$ does not depend on the
# network: every change in the gradient's size comes from the layers in between.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, diagnostics, models, ops, snippet
from gradlab.engine import Tensor
from gradlab.plot import PALETTE

parser = snippet.parser(__doc__)
parser.add_argument("--depth", type=snippet.positive_int, default=20, help="hidden layers")
parser.add_argument("--width", type=snippet.positive_int, default=256, help="units per layer")
parser.add_argument("--batch", type=snippet.positive_int, default=128, help="inputs per batch")
parser.add_argument("--naive-std", type=snippet.positive_float, default=0.01, help="small fixed std")
parser.add_argument("--large-std", type=snippet.positive_float, default=1.0, help="large fixed std")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)

depth, width, batch, n_out = args.depth, args.width, args.batch, 10
INITS = {f"N(0, {args.naive_std:g}²)": args.naive_std, f"N(0, {args.large_std:g}²)": args.large_std}
INITS |= {"Glorot": "glorot", "He": "he"}
ACTIVATIONS = ["tanh", "relu"]
SATURATED_SLOPE = 0.01  # a tanh unit is saturated below 1% of its largest slope, as in saturation.py
for key, value in [("depth", depth), ("width", width), ("batch", batch)]:
    results.number(key, value, f"network {key}")
results.number("naive_std", args.naive_std, "the small fixed weight std")
results.number("large_std", args.large_std, "the large fixed weight std")

X = rng.normal(size=(batch, width))
readout = rng.normal(size=(batch, n_out))


# %% [markdown]
# ## One forward and one backward pass per setting
# After `backward()` every intermediate Tensor holds its gradient, so the pre-activations
# $z_l$ and activations $h_l$ give $\mathrm{Var}[z_l]$ and $\mathrm{Var}[\partial L/\partial h_l]$.
# "Variance" is the mean square over the batch and the units (the entries have mean ~0).


# %%
def measure(activation, init, X, params_rng):
    """One forward and backward pass of a fresh network as wide as X."""
    params = models.init_mlp([X.shape[1]] * (depth + 1) + [n_out], init, params_rng)
    tensors = [Tensor(p) for p in params]
    output, pre_acts, acts = models.mlp(tensors, X, activation, return_hidden=True)
    (ops.sum(output * readout) / batch).backward()
    slopes = [1 - np.tanh(z.data) ** 2 for z in pre_acts]  # tanh's slopes (meaningless for ReLU)
    grad_norms = models.grad_norm_per_layer([t.grad for t in tensors])
    var_z = np.array([np.mean(z.data**2) for z in pre_acts])
    var_grad_h = np.array([np.mean(h.grad**2) for h in acts])
    return {
        "var_z": var_z,
        "var_grad_h": var_grad_h,
        "ratio": grad_norms[0] / grad_norms[-1],
        "relative_grad_1": np.linalg.norm(tensors[0].grad) / np.linalg.norm(params[0]),
        "output_rms": np.sqrt(np.mean(output.data**2)),
        "saturated": np.mean([np.mean(slope < SATURATED_SLOPE) for slope in slopes]),
        "slope_sq": np.array([np.mean(slope**2) for slope in slopes]),
        # Var[z_l] grows forward, Var[dL/dh_l] backward: both factors run in the signal's direction
        "forward_factor": diagnostics.per_layer_factor(var_z),
        "backward_factor": diagnostics.per_layer_factor(var_grad_h[::-1]),
    }


runs = {
    (activation, label): measure(activation, init, X, np.random.default_rng(args.seed))
    for activation in ACTIVATIONS
    for label, init in INITS.items()
}

columns = ["Var[z_1]", "Var[z_D]", "Var[dL/dh_1]", "Var[dL/dh_D]", "|y| rms", "|dW_1|/|W_1|", "|dW_1|/|dW_L|"]
print(f"{'activation':<10} {'init':<12}" + "".join(f"{column:>14}" for column in columns))
for (activation, label), run in runs.items():
    cells = [*run["var_z"][[0, -1]], *run["var_grad_h"][[0, -1]], run["output_rms"], run["relative_grad_1"]]
    print(f"{activation:<10} {label:<12}" + "".join(f"{cell:14.2e}" for cell in [*cells, run["ratio"]]))


# %%
def per_layer_figure(key, ylabel, title):
    """One panel per activation, one line per weight scale, layer by layer."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.6), sharey=True)
    for ax, activation in zip(axes, ACTIVATIONS, strict=True):
        for color, label in zip(PALETTE, INITS, strict=False):
            ax.semilogy(np.arange(1, depth + 1), runs[activation, label][key], color=color, label=label)
        ax.set(title=f"{activation}", xlabel="hidden layer l")
    axes[0].set_ylabel(ylabel)
    axes[0].legend()
    fig.suptitle(title)
    return fig


def last_layer_summary(key, activation):
    return ", ".join(f"{label} {runs[activation, label][key][-1]:.1e}" for label in INITS)


title = "Pre-activation variance per layer at initialization"
fig = per_layer_figure("var_z", r"Var[$z_l$] (log scale)", title)
tanh_others = np.concatenate([runs["tanh", label]["var_z"] for label in list(INITS)[1:]])
results.figure(
    fig,
    "forward_variance",
    alt=f"Pre-activation variance over {depth} layers. At the last layer, with ReLU: "
    f"{last_layer_summary('var_z', 'relu')}; with tanh: {last_layer_summary('var_z', 'tanh')}. "
    f"Under tanh every scale but the small one stays between {tanh_others.min():.2g} and "
    f"{tanh_others.max():.3g}.",
)


# %%
def first_over_last(activation):
    ratios = {label: runs[activation, label]["var_grad_h"] for label in INITS}
    return ", ".join(f"{label} {v[0] / v[-1]:.1e}" for label, v in ratios.items())


ylabel = r"Var[$\partial L/\partial h_l$] (log scale)"
fig = per_layer_figure("var_grad_h", ylabel, "Gradient variance per layer at initialization")
results.figure(
    fig,
    "backward_variance",
    alt=f"Gradient variance per layer. First hidden layer over last, with ReLU: {first_over_last('relu')}; "
    f"with tanh: {first_over_last('tanh')}. A ratio far below 1 is a vanishing gradient, far above "
    "1 an exploding one.",
)

# %% [markdown]
# ## The formulas against the measurements
# Forward, $\mathrm{Var}[z_l] = n\,\sigma_w^2\,\mathbb E[h_{l-1}^2]$; for ReLU
# $\mathbb E[h^2] = \mathrm{Var}[z]/2$, so each layer multiplies the variance by $n\sigma_w^2/2$
# (1 under He); for tanh near 0, $h \approx z$ and the factor is $n\sigma_w^2$.
# Backward, each layer multiplies $\mathrm{Var}[\partial L/\partial h]$ by
# $n\sigma_w^2\,\mathbb E[f'(z)^2]$: again 1 for ReLU + He, $n\sigma_w^2$ for tanh near 0.
# The measured factor is the geometric mean of the $D - 1$ ratios between consecutive layers.
# For tanh under the large fixed scale, $\mathbb E[f'(z_l)^2]$ comes from the measured slopes.
# One finite network deviates from these averages over random weights: repeat the ReLU + He run
# for several seeds at width 32 and at the full width, and take the RMS deviation from 1.


# %%
NAIVE, LARGE = list(INITS)[:2]
he_relu, naive_tanh, tanh_large = runs["relu", "He"], runs["tanh", NAIVE], runs["tanh", LARGE]
naive_tanh_predicted = width * args.naive_std**2
large_tanh_predicted = width * args.large_std**2 * np.exp(np.mean(np.log(tanh_large["slope_sq"][1:])))
checks = {
    "he_relu_forward": (1.0, he_relu["forward_factor"]),
    "he_relu_backward": (1.0, he_relu["backward_factor"]),
    "naive_tanh_forward": (naive_tanh_predicted, naive_tanh["forward_factor"]),
    "naive_tanh_backward": (naive_tanh_predicted, naive_tanh["backward_factor"]),
    "large_tanh_backward": (large_tanh_predicted, tanh_large["backward_factor"]),
}
for key, (predicted, measured) in checks.items():
    difference = abs(measured - predicted) / predicted
    print(f"{key:<20} predicted {predicted:.4f}  measured {measured:.4f}  rel. difference {difference:.1%}")
    results.number(f"{key}_predicted", predicted, f"{key}: predicted variance factor per layer")
    results.number(f"{key}_measured", measured, f"{key}: measured variance factor per layer", rtol=1e-4)
    results.number(f"{key}_rel_diff", difference, f"{key}: relative difference", rtol=1e-3, atol=1e-6)

spread_seeds, narrow, spread = 5, 32, {}
for key, n in {"narrow": narrow, "wide": width}.items():
    rngs = [np.random.default_rng([args.seed, n, seed]) for seed in range(spread_seeds)]
    trials = [measure("relu", "he", trial_rng.normal(size=(batch, n)), trial_rng) for trial_rng in rngs]
    factors = [trial[direction] for direction in ("forward_factor", "backward_factor") for trial in trials]
    spread[key] = np.sqrt(np.mean(np.square(np.array(factors) - 1)))
    print(f"ReLU + He at width {n}: RMS deviation from 1 over {spread_seeds} seeds {spread[key]:.1%}")

slug = {NAIVE: "naive", LARGE: "large", "Glorot": "glorot", "He": "he"}
for (activation, label), run in runs.items():
    name, about = f"{activation}_{slug[label]}", f"{activation}, {label}"
    results.number(f"ratio_{name}", run["ratio"], f"{about}: |dL/dW_1| / |dL/dW_last|", rtol=1e-4)
    results.number(f"relgrad_{name}", run["relative_grad_1"], f"{about}: |dL/dW_1| / |W_1|", rtol=1e-4)
    results.number(f"output_rms_{name}", run["output_rms"], f"{about}: RMS of the output", rtol=1e-4)
    grad_h_ratio = np.sqrt(run["var_grad_h"][0] / run["var_grad_h"][-1])
    results.number(f"grad_h_ratio_{name}", grad_h_ratio, f"{about}: rms dL/dh_1 / rms dL/dh_D", rtol=1e-4)
for key, value, about in [
    ("naive_relu_var_z_last", runs["relu", NAIVE]["var_z"][-1], "ReLU, small std: Var[z_D]"),
    ("large_relu_var_z_last", runs["relu", LARGE]["var_z"][-1], "ReLU, large std: Var[z_D]"),
    ("saturated_slope", SATURATED_SLOPE, "tanh' below which a unit counts as saturated"),
    ("saturated_tanh_large", tanh_large["saturated"], "tanh, large std: share of saturated units"),
    ("narrow_width", narrow, "the narrow width of the deviation study"),
    ("spread_narrow", spread["narrow"], "narrow width: RMS deviation of the ReLU + He factors from 1"),
    ("spread_wide", spread["wide"], "full width: RMS deviation of the ReLU + He factors from 1"),
    ("spread_seeds", spread_seeds, "seeds per width in the deviation study"),
]:
    results.number(key, value, about, rtol=1e-4)

# %% [markdown]
# ## Is it backprop?
# The first layer's weight gradient under the small fixed scale (tanh), by reverse mode, forward
# mode, central differences and the complex step. Forward mode and the two numerical methods cost
# one or two passes per weight, so this runs on a smaller copy of the network: same depth,
# `check_width` units per layer, `check_batch` inputs.

# %%
check_width, check_batch = 16, 16
small = models.init_mlp([check_width] * (depth + 1) + [1], args.naive_std, rng)
X_small, r_small = rng.normal(size=(check_batch, check_width)), rng.normal(size=(check_batch, 1))


def first_layer_loss(first):
    y = models.mlp([first[0], *small[1:]], X_small, "tanh")
    return ops.sum(y * r_small) / check_batch


disagreement = check.compare(first_layer_loss, [small[0]])
first_grad = check.METHODS["reverse"](first_layer_loss, [small[0]])[0]
for pair, value in disagreement.items():
    print(f"{pair:<22} largest relative disagreement {value:.1e}")
exact_methods = max(disagreement["reverse vs forward"], disagreement["reverse vs complex"])
exact_about = "largest relative disagreement of reverse mode with forward mode and the complex step"
first_grad_rms = np.sqrt(np.mean(first_grad**2))
results.number("check_width", check_width, "width of the smaller copy")
results.number("check_batch", check_batch, "batch of the smaller copy")
results.number("check_grad_rms", first_grad_rms, "small copy: RMS first-layer gradient", rtol=1e-4)
results.number(
    "check_max_disagreement", max(disagreement.values()), "largest relative disagreement", atol=1e-6
)
results.number("check_exact_disagreement", exact_methods, exact_about, atol=1e-9)

# %%
results.save()
