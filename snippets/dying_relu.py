"""Dying ReLUs: dead units counted during SGD, and their exactly zero gradient.

A two-hidden-layer ReLU network fits a small 2-D regression with plain minibatch SGD, using
the project's reverse mode for the gradients. A too-large learning rate or a negative bias
initialization leaves a fraction of the hidden units negative on every training input; their
incoming gradient is exactly zero by reverse mode, forward mode and central differences. The
remedies (smaller step, leaky ReLU, He initialization) run the same experiment. Quoted by
docs/dying-relus.md.
"""

# %% [markdown]
# ## The data, the network, the training loop
# `n_points` inputs $x$ uniform in $[-2, 2]^2$, target $y = \sin(2x_1)\cos(x_2)$; a network
# $2 \to 64 \to 64 \to 1$ with ReLU, He initialization, biases 0; the loss is the mean squared
# error; each step takes a minibatch of `batch` points and updates $\theta \leftarrow \theta - \eta\,g$.
# A unit is **dead** when its pre-activation $z$ is $\le 0$ on every training input, so a ReLU
# outputs exactly 0 on all of them.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, engine, models, ops, snippet
from matplotlib.ticker import PercentFormatter

parser = snippet.parser(__doc__)
parser.add_argument("--lr", type=snippet.positive_float, default=0.1, help="the too-large learning rate")
parser.add_argument(
    "--small-lr", type=snippet.positive_float, default=0.01, help="the remedy's learning rate"
)
parser.add_argument("--bias", type=float, default=-1.0, help="the negative bias initialization")
parser.add_argument("--steps", type=snippet.positive_int, default=200, help="SGD steps")
parser.add_argument("--batch", type=snippet.positive_int, default=32, help="minibatch size")
parser.add_argument("--n-points", type=snippet.positive_int, default=256, help="training inputs")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)

sizes = [2, 64, 64, 1]
X = rng.uniform(-2, 2, size=(args.n_points, 2))
y = (np.sin(2 * X[:, 0]) * np.cos(X[:, 1]))[:, None]
for key, value in [("lr", args.lr), ("small_lr", args.small_lr), ("bias", args.bias), ("steps", args.steps)]:
    results.number(key, value, f"setting: {key}")
results.number("batch", args.batch, "minibatch size")
results.number("n_points", args.n_points, "training inputs")
results.number("hidden_units", sum(sizes[1:-1]), "hidden units in all")
leaky_slope = inspect.signature(ops.leaky_relu).parameters["slope"].default
results.number("leaky_slope", leaky_slope, "leaky ReLU's slope for z < 0")


def dead_masks(params, activation):
    """Per hidden layer, which units have z <= 0 on every training input."""
    _, pre_activations, _ = models.mlp(params, X, activation, return_hidden=True)
    return [(z <= 0).all(axis=0) for z in pre_activations]


COUNT_EVERY = 10  # SGD steps between two counts of the dead units


def train(lr, init="he", bias=0.0, activation="relu", eval_every=COUNT_EVERY):
    """Plain minibatch SGD; returns the final params, the dead fraction every `eval_every`
    steps, the final full-data loss and the dead masks seen along the way."""
    run_rng = np.random.default_rng(args.seed + 1)  # the same minibatches for every setting
    params = models.init_mlp(sizes, init, run_rng, bias=bias)
    history = [dead_masks(params, activation)]
    for step in range(1, args.steps + 1):
        idx = run_rng.integers(0, args.n_points, args.batch)
        X_batch, y_batch = X[idx], y[idx]
        _, grads = engine.value_and_grad(
            lambda p, X_batch=X_batch, y_batch=y_batch: ops.mean(
                (models.mlp(p, X_batch, activation) - y_batch) ** 2
            ),
            params,
        )
        params = [p - lr * g for p, g in zip(params, grads, strict=True)]
        if step % eval_every == 0:
            history.append(dead_masks(params, activation))
    loss = float(np.mean((models.mlp(params, X, activation) - y) ** 2))
    dead_fraction = [float(np.mean(np.concatenate(masks))) for masks in history]
    return params, dead_fraction, loss, history


# %% [markdown]
# ## Dead fraction during training
# The same initial weights and minibatches for every setting; only the learning rate, the bias
# initialization, the activation or the weight scale changes.

# %%
fixed_std = 0.5  # larger than He's sqrt(2/64) in layer 2, smaller than its sqrt(2/2) in layer 1
results.number("fixed_std", fixed_std, "the fixed initial weight std of one remedy run")
SETTINGS = {
    f"ReLU, η = {args.small_lr:g}": dict(lr=args.small_lr),
    f"ReLU, η = {3 * args.small_lr:g}": dict(lr=3 * args.small_lr),
    f"ReLU, η = {args.lr:g}": dict(lr=args.lr),
    f"ReLU, η = {args.small_lr:g}, bias {args.bias:g}": dict(lr=args.small_lr, bias=args.bias),
    f"ReLU, η = {args.small_lr:g}, N(0, {fixed_std:g}²) init": dict(lr=args.small_lr, init=fixed_std),
    f"leaky ReLU, η = {3 * args.small_lr:g}": dict(lr=3 * args.small_lr, activation="leaky_relu"),
}
KEYS = ["lr_small", "lr_triple", "lr_large", "bias_negative", "init_large", "leaky"]
runs = {label: train(**setting) for label, setting in SETTINGS.items()}

print(f"{'setting':<34} dead at start  dead at end  final loss")
for key, (label, (_, dead, loss, _)) in zip(KEYS, runs.items(), strict=True):
    print(f"{label:<34} {dead[0]:12.1%}  {dead[-1]:10.1%}  {loss:10.4f}")
    results.number(f"dead_start_{key}", dead[0], f"{label}: dead fraction at step 0")
    results.number(f"dead_end_{key}", dead[-1], f"{label}: dead fraction at the end")
    results.number(f"loss_{key}", loss, f"{label}: final training loss", rtol=1e-4)

# %% [markdown]
# When do the large step's units die? Dead units (a count, not a fraction) at step 0, at the
# first count after it, and the range over every count from then to the end.

# %%
counts = [int(sum(mask.sum() for mask in masks)) for masks in runs[list(SETTINGS)[2]][3]]
results.number("count_every", COUNT_EVERY, "SGD steps between two counts of the dead units")
results.number("dead_units_start_lr_large", counts[0], "large step: dead units at step 0")
results.number("dead_units_first_count_lr_large", counts[1], "large step: dead units at the first count")
results.number("dead_units_min_lr_large", min(counts[1:]), "large step: fewest dead units, first count on")
results.number("dead_units_max_lr_large", max(counts[1:]), "large step: most dead units, first count on")

# %%
fig, ax = plt.subplots()
plotted = list(runs.items())[:5]  # the ReLU runs; leaky ReLU's "dead" units are not stuck
for label, (_, dead, _, _) in plotted:
    ax.plot(np.arange(len(dead)) * COUNT_EVERY, dead, label=label)
ax.set(
    title="Hidden ReLU units dead on every training input",
    xlabel="SGD step",
    ylabel="dead hidden units (% of all)",
)
ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
ax.legend(fontsize="x-small", loc="center right", bbox_to_anchor=(1, 0.7))  # in the empty band
results.figure(
    fig,
    "dead_fraction",
    alt=f"Fraction of hidden units dead on every training input, over {args.steps} SGD steps, at the "
    "start and at the end: "
    + "; ".join(f"{label}: {dead[0]:.0%} then {dead[-1]:.0%}" for label, (_, dead, _, _) in plotted)
    + ".",
)

# %% [markdown]
# ## Is it backprop?
# Take the network trained with the large learning rate and the incoming weights and biases of
# its dead units (all of layer 1's, the first `checked_layer2` of layer 2's). Their gradient of
# the full-data loss by reverse mode, forward mode, central differences and the complex step:

# %%
params, _, _, history = runs[list(SETTINGS)[2]]
dead1, dead2 = (np.flatnonzero(mask) for mask in history[-1])
live1 = np.flatnonzero(~history[-1][0])[:8]


def loss_of_units(units1, units2):
    """The full-data loss as a function of the incoming weights and biases of the units
    `units1` (layer 1) and `units2` (layer 2) only; every other parameter is held fixed.
    The chosen columns are added back through 0/1 selection matrices, which every method runs."""
    select1, select2 = np.eye(sizes[1])[units1], np.eye(sizes[2])[units2]
    rest = [p.copy() for p in params]
    rest[0][:, units1], rest[1][units1], rest[2][:, units2], rest[3][units2] = 0, 0, 0, 0

    def loss(sub):
        W1, b1, W2, b2 = [
            r + ops.matmul(q, s)
            for r, q, s in zip(rest[:4], sub, [select1, select1, select2, select2], strict=True)
        ]
        return ops.mean((models.mlp([W1, b1, W2, b2, *params[4:]], X, "relu") - y) ** 2)

    return loss, [params[0][:, units1], params[1][units1], params[2][:, units2], params[3][units2]]


checked_layer2 = 2  # each layer-2 unit brings 65 weights; two keep forward mode and the rest quick
dead_loss, dead_params = loss_of_units(dead1, dead2[:checked_layer2])
for name in ["reverse", "forward", "central", "complex"]:
    largest = max(float(np.abs(g).max(initial=0.0)) for g in check.METHODS[name](dead_loss, dead_params))
    print(f"{name:<8} largest |gradient| over the dead units' incoming weights: {largest!r}")
    results.number(f"dead_grad_{name}", largest, f"{name}: max |dL/dw| over dead units' weights")
results.number("dead_layer1", len(dead1), "dead units in layer 1 after training with the large step")
results.number("dead_layer2", len(dead2), "dead units in layer 2 after training with the large step")
results.number("checked_layer2", min(checked_layer2, len(dead2)), "dead layer-2 units in the check")

# %% [markdown]
# Central differences are exactly zero because a step of $\pm h$ in one incoming weight moves a
# dead unit's $z$ by at most $h \cdot \max|{\rm input}|$, less than its distance from 0 on the
# closest training input: the unit stays off, and the loss does not change in any bit.
# On live units the methods agree too (eight live first-layer units here).

# %%
_, pre_activations, activations = models.mlp(params, X, "relu", return_hidden=True)
closest = max(float(z[:, d].max()) for z, d in zip(pre_activations, [dead1, dead2], strict=True) if len(d))
# the default central-difference step is eps^(1/3) * max(1, |w|); inputs are X and h_1
step = np.finfo(float).eps ** (1 / 3) * max(1.0, *(float(np.abs(p).max()) for p in params[:4]))
largest_move = step * max(1.0, float(np.abs(X).max()), float(activations[0].max()))
results.number("dead_closest_z", closest, "largest pre-activation of a dead unit over the data", rtol=1e-4)
results.number("h_largest_move", largest_move, "bound on the change of z by one central step", rtol=1e-3)
results.number("stays_dead", closest + largest_move < 0, "a central-difference step cannot wake a dead unit")

live_loss, live_params = loss_of_units(live1, dead2[:0])
live = check.compare(live_loss, live_params)
for pair, value in live.items():
    print(f"live first-layer units: {pair:<20} largest relative disagreement {value:.1e}")
exact = max(live["reverse vs forward"], live["reverse vs complex"])
results.number("check_max_disagreement", exact, "live units: reverse vs forward/complex", atol=1e-6)
results.number(
    "check_central_disagreement", live["reverse vs central"], "live units: reverse vs central", atol=1e-6
)

# %%
results.save()
