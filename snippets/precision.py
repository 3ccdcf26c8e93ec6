"""Precision: reverse mode in float32 and float16 against a float64 reference.

Runs reverse mode on a deep tanh network in float32 and numpy's float16 and compares the
first layer's gradient with a float64 reference, over depth; compares that error with the error
of the forward pass itself and with central differences in the same precision; then shows
float16 gradients underflowing to zero and loss scaling restoring them. Quoted by
docs/precision.md.
"""

# %% [markdown]
# ## Set-up
# One network per depth, float64 parameters rounded to the lower precision. The reference is
# float64 arithmetic on the *rounded* parameters, so every error below is the arithmetic's,
# not the rounding of the inputs.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, engine, models, ops, plot, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--max-depth", type=snippet.positive_int, default=24, help="deepest network measured")
parser.add_argument("--width", type=snippet.positive_int, default=32, help="hidden units per layer")
parser.add_argument(
    "--sigmoid-depth", type=snippet.positive_int, default=10, help="layers of the underflow network"
)
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)

X = rng.normal(size=(16, 8))
y = rng.normal(size=(16, 1))
depths = np.unique(np.linspace(1, args.max_depth, 8).astype(int))
results.number("max_depth", int(depths[-1]), "deepest network")
results.number("width", args.width, "hidden units per layer")


def loss(params, X, y, activation="tanh"):
    return ops.mean((models.mlp(params, X, activation) - y) ** 2)


def in_precision(dtype, params):
    return [p.astype(dtype) for p in params], X.astype(dtype), y.astype(dtype)


def rel(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# %% [markdown]
# ## Is the reference right?
# On the shallowest network, reverse mode, forward mode, central differences and the complex
# step agree in float64.

# %%
small = models.init_mlp([8, args.width, 1], "glorot", rng)
agreement = check.compare(lambda p: loss(p, X, y), small)
for pair, error in agreement.items():
    print(f"{pair:<24} {error:.1e}")
results.number(
    "reference_agreement", max(agreement.values()), "largest disagreement of the float64 methods", atol=1e-7
)

# %% [markdown]
# ## Error over depth
# For each precision: the relative error of the first layer's weight gradient (reverse mode),
# of the loss value (the forward pass), and of a central difference along a random direction
# (two evaluations, step $\epsilon^{1/3}$).

# %%
precisions = {"float32": np.float32, "float16": np.float16}
measured = {f"{kind} {name}": [] for name in precisions for kind in ("gradient", "loss", "central")}
for depth in depths:
    params64 = models.init_mlp([8] + [args.width] * depth + [1], "glorot", rng)
    direction = [rng.normal(size=p.shape) for p in params64]
    for name, dtype in precisions.items():
        params, Xp, yp = in_precision(dtype, params64)
        rounded = [p.astype(np.float64) for p in params]
        value, grads = engine.value_and_grad(lambda p, X=Xp, y=yp: loss(p, X, y), params)
        X_ref, y_ref = Xp.astype(np.float64), yp.astype(np.float64)
        ref_value, ref_grads = engine.value_and_grad(lambda p, X=X_ref, y=y_ref: loss(p, X, y), rounded)
        measured[f"gradient {name}"].append(rel(grads[0], ref_grads[0]))
        measured[f"loss {name}"].append(rel(value, ref_value))
        h = np.finfo(dtype).eps ** (1 / 3)
        plus = [(p + h * d).astype(dtype) for p, d in zip(rounded, direction, strict=True)]
        minus = [(p - h * d).astype(dtype) for p, d in zip(rounded, direction, strict=True)]
        central = (float(loss(plus, Xp, yp)) - float(loss(minus, Xp, yp))) / (2 * h)
        exact = sum(float(np.sum(g * d)) for g, d in zip(ref_grads, direction, strict=True))
        measured[f"central {name}"].append(rel(central, exact))

for name, dtype in precisions.items():
    errors = {kind: measured[f"{kind} {name}"] for kind in ("gradient", "loss", "central")}
    central_median = np.median(errors["central"])
    for key, value, about, rtol in (
        ("grad_error", errors["gradient"][-1], "first-layer gradient error at the largest depth", 1),
        ("loss_error", max(errors["loss"]), "largest loss (forward pass) error over depth", 1),
        ("central_error", central_median, "median central-difference (directional) error over depth", 1),
        ("eps", np.finfo(dtype).eps, "machine epsilon", 1e-6),
    ):
        results.number(f"{key}_{name}", value, f"{about}, {name}", rtol=rtol)
for name, dtype in precisions.items():
    in_eps = max(measured[f"gradient {name}"]) / np.finfo(dtype).eps
    about = f"largest first-layer gradient error over depth, in machine epsilons, {name}"
    results.number(f"grad_error_in_eps_{name}", in_eps, about, rtol=1)
about = "first-layer gradient error of the shallowest network, float32"
results.number("grad_error_float32_shallowest", measured["gradient float32"][0], about, rtol=1)
results.number("grad_error_float32_max", max(measured["gradient float32"]), "its maximum over depth", rtol=1)

fig, ax = plt.subplots()
styles = {"gradient": "-o", "loss": "--s", "central": ":^"}
labels = {"gradient": "reverse-mode gradient", "loss": "loss value", "central": "central difference"}
for key, values in measured.items():
    kind, name = key.split()
    color = plot.PALETTE[0] if name == "float32" else plot.PALETTE[1]
    ax.semilogy(depths, values, styles[kind], color=color, markersize=4, label=f"{name}: {labels[kind]}")
ax.set(
    title="Reverse-mode gradients are accurate to a few machine epsilons",
    xlabel="hidden layers",
    ylabel="relative error vs float64 (log scale)",
)
ax.legend(ncols=2, fontsize="x-small")
results.figure(
    fig,
    "error_over_depth",
    alt="Relative error against float64 over depth: the reverse-mode gradient's stays within "
    + " and ".join(
        f"{max(measured[f'gradient {name}']) / np.finfo(dtype).eps:.1f} machine epsilons in {name}"
        for name, dtype in precisions.items()
    )
    + "; central differences in the same precision have median errors of "
    + " and ".join(f"{np.median(measured[f'central {name}']):.1e}" for name in precisions)
    + ".",
)

# %% [markdown]
# ## Underflow and loss scaling
# A deep sigmoid network has first-layer gradients far below 1. In float16, entries below the
# smallest subnormal ($6 \times 10^{-8}$) become exactly zero. Multiplying the loss by $S$
# before the backward pass, and the gradients by $1/S$ after (in float32), keeps them in range.
# The scan over powers of two also finds where the scaled loss $S L$, and where a gradient,
# first overflows float16's largest value.

# %%
deep = models.init_mlp([8] + [args.width] * args.sigmoid_depth + [1], "glorot", rng)
results.number("sigmoid_depth", args.sigmoid_depth, "hidden layers of the sigmoid network")
reference = engine.grad(lambda p: loss(p, X, y, "sigmoid"), deep)[0]
params16, X16, y16 = in_precision(np.float16, deep)
scales = 2.0 ** np.arange(0, 25)
zero_fraction, scaled_error, scaled_loss_finite, all_finite = [], [], [], []
for scale in scales:
    with np.errstate(over="ignore", invalid="ignore"):  # the overflow at large S is the point
        scaled_loss, grads16 = engine.value_and_grad(
            lambda p, s=scale: loss(p, X16, y16, "sigmoid") * np.float16(s), params16
        )
        unscaled = grads16[0].astype(np.float32) / np.float32(scale)
    zero_fraction.append(float(np.mean((grads16[0] == 0) & (reference != 0))))
    scaled_error.append(rel(unscaled, reference) if np.all(np.isfinite(unscaled)) else np.inf)
    scaled_loss_finite.append(bool(np.isfinite(scaled_loss)))
    all_finite.append(all(np.all(np.isfinite(g)) for g in grads16))  # what a dynamic scaler checks

about = "median |first-layer gradient entry|, float64, sigmoid network"
results.number("first_layer_grad_median", np.median(np.abs(reference)), about, rtol=1e-4)
results.number("smallest_subnormal_float16", float(np.finfo(np.float16).smallest_subnormal), "float16")
results.number("largest_float16", float(np.finfo(np.float16).max), "float16")
results.number("zero_fraction_unscaled", zero_fraction[0], "entries flushed to zero, no scaling", rtol=1e-3)
results.number("error_unscaled", scaled_error[0], "relative error, no scaling", rtol=1e-2)
best = int(np.argmin(scaled_error))
results.number("best_scale", scales[best], "loss scale with the smallest error")
about = "entries flushed to zero at that scale"
results.number("zero_fraction_best_scale", zero_fraction[best], about, rtol=1e-3, atol=1e-3)
results.number("error_best_scale", scaled_error[best], "relative error at that scale", rtol=1e-2)
loss16 = float(loss(params16, X16, y16, "sigmoid"))
ov = [i for i, ok in enumerate(scaled_loss_finite) if not ok][:1]  # the first overflow, if any
overflow = scales[ov[0]] if ov else np.nan
results.number("first_overflow_scale", overflow, "smallest scale whose scaled loss overflows float16")
results.number("scaled_loss_first_overflow", overflow * loss16, "S L there, in float64", rtol=1e-3)
results.number(
    "zero_fraction_first_overflow_scale", zero_fraction[ov[0]] if ov else np.nan, "zeros there", atol=1e-3
)
results.number("error_first_overflow_scale", scaled_error[ov[0]] if ov else np.nan, "error there", rtol=1e-2)
first_bad_gradient = next(
    (s for s, e in zip(scales, scaled_error, strict=True) if not np.isfinite(e)), np.nan
)
results.number(
    "first_nonfinite_gradient_scale", first_bad_gradient, "smallest scale, inf or NaN first-layer gradient"
)
first_bad_any = next((s for s, ok in zip(scales, all_finite, strict=True) if not ok), np.nan)
about = "smallest scale at which any parameter's gradient is inf or NaN"
results.number("first_nonfinite_any_gradient_scale", first_bad_any, about)
results.number("loss_float16", loss16, "the sigmoid network's loss, float16", rtol=1e-3)

fig, ax = plt.subplots()
finite = np.isfinite(scaled_error)
ax.loglog(scales[finite], np.array(scaled_error)[finite], "-o", label="relative error of the gradient")
zero_shown = np.where(finite, np.maximum(zero_fraction, 1e-4), np.nan)
ax.loglog(scales, zero_shown, "--s", label="fraction of entries flushed to zero (floor 1e-4)")
if np.isfinite(overflow):
    ax.axvline(overflow, color=plot.PALETTE[4], linestyle=":", label="scaled loss overflows (inf)")
ax.set(
    title="Loss scaling rescues float16 first-layer gradients",
    xlabel="loss scale S (log scale)",
    ylabel="error or fraction (log scale)",
)
ax.legend()
results.figure(
    fig,
    "loss_scaling",
    alt=f"Without scaling, {zero_fraction[0]:.0%} of the float16 first-layer gradient entries "
    f"underflow to zero and the relative error is {scaled_error[0]:.2g}; at S = {scales[best]:g} "
    f"{zero_fraction[best]:.0%} are zero and the error is {scaled_error[best]:.1e}; from "
    f"S = {overflow:g} the scaled loss overflows float16 (the first-layer gradient is first inf or NaN at "
    f"S = {first_bad_gradient:g}).",
)

# %%
results.save()
