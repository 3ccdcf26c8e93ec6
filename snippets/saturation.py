"""Saturating sigmoids: slopes, saturated units and gradient norms through a deep stack.

Shows the sigmoid's slope bound and the exact-zero slope of float64, the fraction of saturated
units as the weight scale and the input scale grow, and the gradient norm of every layer's
weights in a deep MLP under sigmoid, tanh and ReLU, with the first layer's tiny gradient checked
by four methods. Quoted by docs/saturating-sigmoids.md.
"""

# %% [markdown]
# A unit is *saturated* when its slope is below 1% of the activation's largest slope:
# $\sigma'(z) < 0.0025$ for the sigmoid ($|z| > 6$), $\tanh'(z) < 0.01$ for tanh ($|z| > 3$).

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, diagnostics, engine, models, numerical, ops, snippet

parser = snippet.parser(__doc__)
arguments = {  # name: (type, default, help); each is also recorded as a number
    "depth": (snippet.positive_int, 10, "hidden layers of the stack"),
    "width": (snippet.positive_int, 32, "units per hidden layer"),
    "input_scale": (snippet.positive_float, 20.0, "mean and std of the raw inputs"),
    "weight_std": (snippet.positive_float, 1.0, "the 'large' weight std"),
}
for name, (kind, default, about) in arguments.items():
    parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default, help=about)
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)
SATURATED_BELOW = {"sigmoid": 0.25 / 100, "tanh": 1 / 100}


def slope(activation, z):
    """The activation's derivative at z, from its output as the engine computes it."""
    return diagnostics.local_slope(activation, models.ACTIVATIONS[activation](z))


# %% [markdown]
# ## The slope bound, and a slope that is exactly zero
#
# $\sigma'(z) = \sigma(z)(1 - \sigma(z))$ peaks at $1/4$ at $z = 0$; $\tanh'$ peaks at 1. For
# large $z$ the computed $\sigma(z)$ rounds to exactly 1.0 and the computed slope is exactly 0.
# Bisecting the float64 numbers themselves finds the smallest such $z$.

# %%
grid = np.linspace(-10, 10, 2001)
results.number("sigmoid_max_slope", slope("sigmoid", grid).max(), "largest sigmoid slope (at z = 0)")
results.number("tanh_max_slope", slope("tanh", grid).max(), "largest tanh slope (at z = 0)")
z_zero = numerical.smallest_float_where(lambda z: ops.sigmoid(z) == 1.0, 1.0, 100.0)  # (1 + tanh(z/2)) / 2
z_zero_textbook = numerical.smallest_float_where(lambda z: 1 / (1 + np.exp(-z)) == 1.0, 1.0, 100.0)
results.number("z_zero_slope", z_zero, "smallest z whose computed sigmoid slope is 0 (engine's formula)")
results.number("z_zero_textbook", z_zero_textbook, "the same for 1 / (1 + exp(-z))")
results.number("true_gap_at_z_zero", float(np.exp(-z_zero)), "exp(-z) ~ 1 - sigmoid(z) at that z")
eps = np.finfo(np.float64).eps
results.number("eps", float(eps), "float64 machine epsilon")
results.number("ln_two_over_eps", float(np.log(2 / eps)), "ln(2 / eps): where 1 + exp(-z) rounds to 1")
slope_below = float(slope("sigmoid", np.nextafter(z_zero, 0)))
results.number("slope_just_below", slope_below, "slope one float below it")

# %% [markdown]
# ## Saturation against the weight scale and the input scale
#
# A stack of sigmoid layers, weights $W_l \sim N(0, s^2)$, fed standardized inputs (mean 0,
# std 1) or raw ones (mean and std both `--input-scale`, like features in natural units).

# %%
n_inputs, batch = 4, 32
sizes = [n_inputs] + [args.width] * args.depth + [1]
X = rng.normal(size=(batch, n_inputs))
X_raw = args.input_scale * (1 + rng.normal(size=(batch, n_inputs)))
y = rng.normal(size=(batch, 1))


def stack(init):
    """The stack's weights; every setup starts from the same random draw."""
    return models.init_mlp(sizes, init, np.random.default_rng(args.seed + 1))


def saturated_fraction(params, inputs, activation="sigmoid", layers=slice(None)):
    """Share of the hidden pre-activations z_l (entries of the chosen layers) that are saturated."""
    _, pre_activations, _ = models.mlp(params, inputs, activation, True)
    slopes = np.concatenate([slope(activation, z).ravel() for z in pre_activations[layers]])
    return float(np.mean(slopes < SATURATED_BELOW[activation]))


weight_stds = np.geomspace(0.03, 3, 21)
curves = {
    "all hidden layers, standardized inputs": (X, slice(None)),
    "layer 1, standardized inputs": (X, slice(0, 1)),
    f"layer 1, raw inputs (mean, std {args.input_scale:g})": (X_raw, slice(0, 1)),
}
fig, ax, fractions_by_curve = *plt.subplots(), {}
for label, (inputs, layers) in curves.items():
    fractions = fractions_by_curve[label] = []
    for std in weight_stds:
        fractions.append(saturated_fraction(stack(std), inputs, layers=layers))
    ax.semilogx(weight_stds, fractions, marker="o", label=label)
ax.set(
    title="Sigmoid stack: saturated units grow with the weight and input scales",
    xlabel="weight standard deviation s (log scale)",
    ylabel="fraction of saturated units",
)
ax.legend()
onset = {label: weight_stds[np.argmax(np.array(f) > 0.05)] for label, f in fractions_by_curve.items()}
results.figure(
    fig,
    "saturated_vs_scale",
    alt=f"On standardized inputs, 5% of the first layer's sigmoid units are saturated only from a weight "
    f"std of {onset['layer 1, standardized inputs']:.1f}; on raw inputs (mean and std {args.input_scale:g}) "
    f"from {onset[list(curves)[-1]]:.2f}, and the share keeps rising towards 1.",
)

# %%
params = stack("glorot")
for inputs, key in ((X, "standardized"), (X_raw, "raw")):
    first_share = saturated_fraction(params, inputs, layers=slice(0, 1))
    results.number(f"first_saturated_{key}", first_share, f"Glorot sigmoid, {key} inputs: layer 1 saturated")

# %% [markdown]
# ## Gradient norms, layer by layer
#
# The same stack under five setups, one backward pass each. Glorot's std is
# $\sqrt{2/(\text{fan\_in} + \text{fan\_out})}$, He's $\sqrt{2/\text{fan\_in}}$.

# %%
setups = {  # key: (label, activation, weight init)
    "small": ("sigmoid, s = 0.1", "sigmoid", 0.1),
    "glorot": ("sigmoid, Glorot", "sigmoid", "glorot"),
    "large": (f"sigmoid, s = {args.weight_std:g}", "sigmoid", args.weight_std),
    "tanh": ("tanh, Glorot", "tanh", "glorot"),
    "relu": ("ReLU, He", "relu", "he"),
}
norms, ratio = {}, {}
for key, (name, activation, init) in setups.items():
    grads = engine.grad(lambda p, a=activation: ops.mean((models.mlp(p, X, a) - y) ** 2), stack(init))
    norms[key] = models.grad_norm_per_layer(grads)[:-1]  # hidden layers
    ratio[key] = norms[key][0] / norms[key][-1]
    results.number(f"ratio_{key}", ratio[key], f"{name}: ||dL/dW_1|| / ||dL/dW_L||")
    if activation != "relu":
        saturated = saturated_fraction(stack(init), X, activation)
        results.number(f"saturated_{key}", saturated, f"{name}: saturated share of hidden units")

fig, ax = plt.subplots()
layers = np.arange(1, args.depth + 1)
for key, layer_norms in norms.items():
    ax.semilogy(layers, layer_norms, marker="o", label=setups[key][0])
ax.set(
    title=f"Gradient norm per layer, {args.depth} hidden layers of {args.width}",
    xlabel="layer l (1 = nearest the input)",
    ylabel="||dL/dW_l|| (log scale)",
)
ax.legend(loc="lower right", fontsize="small")
results.figure(
    fig,
    "depth_norms",
    alt=f"Towards the input the sigmoid layers' gradient norms fall: layer 1 gets {ratio['glorot']:.0e} "
    f"of layer {args.depth}'s with Glorot weights, {ratio['small']:.0e} with s = 0.1; tanh with Glorot "
    f"({ratio['tanh']:.1f}) and ReLU with He init ({ratio['relu']:.2f}) stay within a small factor.",
)
for name, (_, _, about) in arguments.items():
    results.number(name, getattr(args, name), about)

# %% [markdown]
# ## Is it backprop?
#
# The first layer's gradient of the sigmoid stack with Glorot init, by four methods. Forward
# mode and the complex step subtract nothing, so they resolve even tiny entries. Central
# differences carry an absolute rounding error near $\epsilon |L| / h$ (with $h = \epsilon^{1/3}$),
# the same for every entry: small against the largest entries, comparable to the smallest.


# %%
def first_layer_loss(first):
    return ops.mean((models.mlp([first[0], *params[1:]], X, "sigmoid") - y) ** 2)


first_grad = engine.grad(first_layer_loss, params[:1])[0]
agreement = check.compare(first_layer_loss, params[:1])
central_miss = np.abs(numerical.central_difference(first_layer_loss, params[:1])[0] - first_grad)
central_scaled = central_miss.max() / np.abs(first_grad).max()
rounding = numerical.rounding_error(first_layer_loss(params[:1]))
for key, value, about, tolerance in [
    ("first_grad_max", np.abs(first_grad).max(), "largest |entry| of dL/dW_1, sigmoid Glorot", {}),
    ("first_grad_median", np.median(np.abs(first_grad)), "median |entry| of dL/dW_1", {}),
    ("first_grad_min", np.abs(first_grad).min(), "smallest |entry| of dL/dW_1", {"rtol": 1e-3}),
    ("forward_error", agreement["reverse vs forward"], "reverse vs forward", {"rtol": 0, "atol": 1e-11}),
    ("complex_error", agreement["reverse vs complex"], "reverse vs complex", {"rtol": 0, "atol": 1e-11}),
    ("central_error", agreement["reverse vs central"], "reverse vs central", {"rtol": 0, "atol": 1}),
    ("central_abs", central_miss.max(), "largest |central - reverse|", {"rtol": 0, "atol": 1e-9}),
    ("central_scaled", central_scaled, "that / largest |entry|", {"rtol": 0, "atol": 1e-2}),
    ("central_rounding", rounding, "rounding estimate eps |L| / h", {"rtol": 1e-6}),
]:
    results.number(key, value, about, **tolerance)

# %% [markdown]
# ## Why: the product of Jacobians, and its bound
#
# $\partial L/\partial h_{l-1} = (\sigma'(z_l) \odot \partial L/\partial h_l)\, W_l^\top$, so
# $\lVert \partial L/\partial h_0 \rVert \le \prod_l \tfrac14 \lVert W_l \rVert_2 \cdot
# \lVert \partial L/\partial h_L \rVert$. Measure both sides on the Glorot sigmoid stack, and split
# measured / bound exactly into the slopes' part, $\prod_l 4 \lVert \partial L/\partial z_l \rVert
# / \lVert \partial L/\partial h_l \rVert$, and the rest: gradients off $W_l$'s top singular direction.

# %%
tensors, inputs, norm = [engine.Tensor(p) for p in params], engine.Tensor(X), np.linalg.norm
output, zs, hs = models.mlp(tensors, inputs, "sigmoid", return_hidden=True)  # z_l, h_l as Tensors
ops.mean((output - y) ** 2).backward()
shrink = norm(inputs.grad) / norm(hs[-1].grad)
bound = np.prod([0.25 * norm(W, 2) for W in params[0:-2:2]])
slack_slopes = np.prod([4 * norm(z.grad) / norm(h.grad) for z, h in zip(zs, hs, strict=True)])
mean_slopes = [np.mean(slope("sigmoid", z.data)) for z in zs]
results.number("shrink_measured", shrink, "||dL/dh_0|| / ||dL/dh_L||, sigmoid Glorot")
results.number("shrink_bound", bound, "prod of ||W_l||_2 / 4 over the hidden layers")
results.number("slope_mean_min", min(mean_slopes), "smallest per-layer mean of sigmoid'(z_l), Glorot")
results.number("slope_mean_max", max(mean_slopes), "largest per-layer mean of sigmoid'(z_l), Glorot")
results.number("slack_slopes", slack_slopes, "part of measured / bound from slopes below 1/4")
results.number("slack_directions", shrink / bound / slack_slopes, "the rest: gradients off the top direction")
square_norm = np.median([np.linalg.norm(W, 2) for W in params[2:-2:2]])
results.number("square_spectral_norm", square_norm, "median ||W_l||_2 of the square Glorot layers")

# %%
results.save()
