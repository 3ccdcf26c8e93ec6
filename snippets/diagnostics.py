"""Per-layer diagnostics: a deep tanh network, plain, residual and layer-normalized.

A 20-layer tanh network with a small initialization trains badly on a small regression task;
the per-layer report (gradient norm, update-to-weight ratio, saturated and dead fractions,
activation statistics) says why, and the same network with residual connections or layer
normalization trains. Quoted by docs/per-layer-diagnostics.md.
"""

# %% [markdown]
# The network maps $x \in \mathbb{R}^2$ to a scalar through `depth` hidden tanh layers of
# `width` units and a linear output. Three variants of the hidden layer $l$:
#
# * plain: $h_l = \tanh(h_{l-1} W_l + b_l)$;
# * residual: $h_l = h_{l-1} + \tanh(h_{l-1} W_l + b_l)$ (from the second hidden layer on);
# * normalized: $h_l = \tanh(\mathrm{LN}(h_{l-1} W_l + b_l))$, with layer normalization
#   $\mathrm{LN}(z) = (z - \bar z)/\sqrt{\mathrm{var}\,z + \epsilon}$ over the units of each example.
#
# All three start from the same weights, $W_l \sim \mathcal N(0, \mathrm{gain}^2/\mathrm{fan\_in})$.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, diagnostics, engine, models, numerical, ops, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--depth", type=snippet.positive_int, default=20, help="hidden layers")
parser.add_argument("--width", type=snippet.positive_int, default=16, help="units per hidden layer")
parser.add_argument("--gain", type=snippet.positive_float, default=0.5, help="weight std times sqrt(fan_in)")
parser.add_argument("--lr", type=snippet.positive_float, default=0.005, help="SGD learning rate")
parser.add_argument("--steps", type=snippet.positive_int, default=200, help="full-batch SGD steps")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)
VARIANTS = ("plain", "residual", "normalized")

X = rng.uniform(-2, 2, size=(64, 2))
y = (np.sin(2 * X[:, 0]) * np.cos(X[:, 1]))[:, None]  # a smooth target in [-1, 1]
init = models.init_mlp([2] + [args.width] * args.depth + [1], args.gain / np.sqrt(args.width), rng)
init[0] = init[0] * np.sqrt(args.width / 2)  # the first layer's fan_in is 2, not width


def network(params, X, variant):
    """The output and the tanh outputs of every hidden layer (for the report)."""
    h, tanh_outputs = X, []
    for layer, (W, b) in enumerate(zip(params[0:-2:2], params[1:-2:2], strict=True)):
        z = ops.linear(h, W, b)
        t = ops.tanh(ops.layer_norm(z) if variant == "normalized" else z)
        h = h + t if variant == "residual" and layer > 0 else t
        tanh_outputs.append(t)
    return ops.linear(h, params[-2], params[-1]), tanh_outputs


def loss(params, variant):
    output, _ = network(params, X, variant)
    return ops.mean((output - y) ** 2)


# %% [markdown]
# Full-batch SGD, $W \leftarrow W - \mathrm{lr}\,\partial L/\partial W$, from the same start for
# each variant. The report is taken at step 0: the gradients the first update uses.

# %%
losses, reports, grad_spread = {}, {}, {}
for variant in VARIANTS:
    params = [p.copy() for p in init]
    losses[variant] = []
    for step in range(args.steps):
        value, grads = engine.value_and_grad(lambda p, v=variant: loss(p, v), params)
        if step == 0:
            _, tanh_outputs = network(params, X, variant)
            reports[variant] = diagnostics.layer_report(
                params[0:-2:2], grads[0:-2:2], tanh_outputs, "tanh", args.lr
            )
        losses[variant].append(value)
        params = [p - args.lr * g for p, g in zip(params, grads, strict=True)]
    losses[variant].append(loss(params, variant))
    print(f"\n{variant} network, step 0:\n" + diagnostics.format_report(reports[variant]))
    if variant == "plain":  # the report's definition of "saturated", quoted by the chapter
        level = results.number(
            "saturation_level", diagnostics.SATURATION_LEVEL, "|tanh| above this: saturated"
        )
        results.number("saturated_slope_bound", 1 - level**2, "tanh's slope there, relative to its maximum 1")
    results.number(
        f"{variant}_final_loss", float(losses[variant][-1]), f"{variant}: loss after training", rtol=1e-6
    )
    first, last = reports[variant][0], reports[variant][-1]
    results.number(f"{variant}_first_grad", first.grad_norm, f"{variant}: layer 1 gradient norm at step 0")
    results.number(
        f"{variant}_last_grad", last.grad_norm, f"{variant}: last hidden layer gradient norm at step 0"
    )
    results.number(
        f"{variant}_first_ratio", first.update_ratio, f"{variant}: layer 1 update/weight at step 0"
    )
    results.number(f"{variant}_last_std", last.std, f"{variant}: std of the last hidden tanh outputs")
    ratios = [r.update_ratio for r in reports[variant]]
    results.number(f"{variant}_ratio_min", min(ratios), f"{variant}: smallest update/weight at step 0")
    results.number(f"{variant}_ratio_max", max(ratios), f"{variant}: largest update/weight at step 0")
    grad_norms = [r.grad_norm for r in reports[variant]]
    grad_spread[variant] = results.number(
        f"{variant}_grad_spread", max(grad_norms) / min(grad_norms), f"{variant}: max/min grad norm"
    )
    # In full-batch gradient descent a rise means the step was too long for the local curvature.
    results.number(
        f"{variant}_loss_rises",
        int(np.sum(np.diff(losses[variant]) > 0)),
        f"{variant}: steps that raised the loss",
    )
    results.number(
        f"{variant}_max_saturated",
        max(r.saturated for r in reports[variant]),
        f"{variant}: largest saturated fraction",
    )
    if variant == "plain":
        for field in ("saturated", "dead", "mean", "std"):
            results.number(
                f"plain_first_{field}", getattr(first, field), f"plain: layer 1 {field} at step 0", atol=1e-12
            )
results.number("initial_loss", float(losses["plain"][0]), "loss at step 0 (plain)")
results.number("target_variance", float(y.var()), "variance of the targets (loss of predicting the mean)")
for key in ("depth", "width", "gain", "lr", "steps"):
    results.number(key, getattr(args, key), key)
results.number("batch", len(X), "examples in the batch")

# %%
fig, (ax_grad, ax_ratio) = plt.subplots(1, 2, figsize=(9, 3.8))
for variant in VARIANTS:
    layers = [r.layer for r in reports[variant]]
    ax_grad.semilogy(layers, [r.grad_norm for r in reports[variant]], "o-", ms=3, label=variant)
    ax_ratio.semilogy(layers, [r.update_ratio for r in reports[variant]], "o-", ms=3, label=variant)
ax_ratio.axhline(1e-3, color="#999999", ls="--", lw=1, label="1e-3 (CS231n rule of thumb)")
ax_grad.set(title="Gradient norm per layer", xlabel="hidden layer", ylabel="||dL/dW|| (log scale)")
ax_ratio.set(
    title="Update-to-weight ratio per layer", xlabel="hidden layer", ylabel="||lr dL/dW|| / ||W|| (log scale)"
)
ax_grad.legend()
ax_ratio.legend(fontsize="x-small")
# the smallest factor, over layers, by which the plain network's gradient is below the others'
smallest_factor = min(
    other.grad_norm / plain.grad_norm
    for variant in VARIANTS[1:]
    for other, plain in zip(reports[variant], reports["plain"], strict=True)
)
fig.suptitle("Per-layer report at step 0, three variants of the same network")
results.figure(
    fig,
    "per_layer",
    alt=f"In every layer the plain network's gradient norm and update-to-weight ratio are more than "
    f"{10 ** np.floor(np.log10(smallest_factor)):,.0f} times smaller than in the residual and "
    "layer-normalized networks; in those two the gradient norm varies by less than a factor of "
    f"{np.ceil(max(grad_spread['residual'], grad_spread['normalized'])):.0f} across the layers.",
)

# %%
fig, ax = plt.subplots()
for variant in VARIANTS:
    ax.semilogy(losses[variant], label=variant)
ax.axhline(y.var(), color="#999999", ls="--", lw=1, label="variance of the targets")
ax.set(
    title="Training loss, same data, same start, same SGD",
    xlabel="SGD step",
    ylabel="mean squared error (log scale)",
)
ax.legend()
results.figure(
    fig,
    "training_loss",
    alt="The plain network's loss stays at the variance of the targets; the residual network's "
    "falls smoothly and furthest; the layer-normalized network's falls below the plain one's but "
    "is jagged, rising on many steps.",
)

# %% [markdown]
# Is it backprop? The plain network's first-layer gradient $\partial L/\partial W_1$ (at step 0)
# by reverse mode, forward mode, central differences and the complex step; the other
# parameters are held fixed.


# %%
def loss_of_first_layer(first):
    return loss([first[0], *init[1:]], "plain")


agreement = check.compare(loss_of_first_layer, [init[0]])
for pair, error in agreement.items():
    print(f"{pair}: largest relative disagreement {error:.1e}")
results.number("backprop_vs_forward", agreement["reverse vs forward"], "reverse vs forward", atol=1e-12)
results.number("backprop_vs_complex", agreement["reverse vs complex"], "reverse vs complex step", atol=1e-12)
results.number(
    "backprop_vs_central", agreement["reverse vs central"], "reverse vs central differences", atol=0.1
)
# Central differences divide a rounding error of about eps * |L| by 2h; against gradient entries
# this small, that is a large RELATIVE error but a tiny absolute one.
reverse_first = engine.grad(loss_of_first_layer, [init[0]])[0]
central_first = numerical.central_difference(loss_of_first_layer, [init[0]])[0]
results.number("first_layer_largest_entry", np.abs(reverse_first).max(), "largest |dL/dW_1| entry (plain)")
results.number(
    "central_abs_error",
    np.abs(reverse_first - central_first).max(),
    "largest |reverse - central|",
    atol=1e-10,
)
rounding = numerical.rounding_error(float(loss_of_first_layer([init[0]])))
results.number(
    "central_rounding_estimate", rounding, "eps |L| / h, the rounding error of one central difference"
)

# %%
results.save()
