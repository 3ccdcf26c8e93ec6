"""Clipping the error before squaring: the DQN bug, against the Huber loss

Three losses of the error delta = prediction - target: squared error, the error clipped to
[-1, 1] and then squared, and the Huber loss. The clipped-then-squared loss has an exactly
zero gradient for |delta| > 1, on exactly the samples with the largest errors; a linear
regression trained with it never fits them. Quoted by docs/clipping-the-wrong-thing.md.
"""

# %% [markdown]
# ## Three losses of one error
# With $\delta = \hat y - y$ (prediction minus target):
# squared $\tfrac12\delta^2$ (gradient $\delta$); clipped-then-squared
# $\tfrac12\operatorname{clip}(\delta,-1,1)^2$ (gradient $\delta$ inside, $0$ outside);
# Huber with threshold 1, $\tfrac12\delta^2$ inside and $|\delta| - \tfrac12$ outside
# (gradient $\operatorname{clip}(\delta, -1, 1)$). Written as $q(\delta - q/2)$ with
# $q = \operatorname{clip}(\delta,-1,1)$, the Huber loss needs no branch.

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
rng = np.random.default_rng(args.seed)

LOSSES = {
    "squared": lambda d: 0.5 * d**2,
    "clipped": lambda d: 0.5 * ops.clip(d, -1.0, 1.0) ** 2,
    "huber": lambda d: ops.clip(d, -1.0, 1.0) * (d - 0.5 * ops.clip(d, -1.0, 1.0)),
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
# ## A batch of TD errors
# Temporal-difference errors are heavy-tailed: most transitions are predicted well, a few
# (a rare reward, a bootstrapped target that moved) are far off. We draw them from a
# Student-t distribution with `--dof` degrees of freedom (2 by default: finite mean, infinite
# variance) and count the samples whose clipped-then-squared gradient is exactly zero.

# %%
td_errors = rng.standard_t(args.dof, size=args.batch)
zero = per_sample_gradient("clipped", td_errors) == 0
results.number("batch", args.batch, "simulated TD errors")
results.number("dof", args.dof, "Student-t degrees of freedom")
results.number("zero_fraction", zero.mean(), "fraction of samples with exactly zero gradient")
results.number("large_fraction", np.mean(np.abs(td_errors) > 1), "fraction with |delta| > 1")
results.number("normal_tail", math.erfc(1 / math.sqrt(2)), "P(|delta| > 1) for a standard normal")
results.number("smallest_zeroed", np.abs(td_errors[zero]).min(), "smallest |delta| with zero gradient")
results.number("largest_kept", np.abs(td_errors[~zero]).max(), "largest |delta| with nonzero gradient")
results.number("largest_error", np.abs(td_errors).max(), "largest |delta| in the batch")
huber_is_clipped_gradient = clipping.clip_by_value([per_sample_gradient("squared", td_errors)], 1.0)[0]
results.number(
    "huber_vs_clipped_gradient",
    np.abs(huber_is_clipped_gradient - per_sample_gradient("huber", td_errors)).max(),
    "max |Huber gradient - elementwise-clipped squared-error gradient|",
    atol=1e-15,
)

# %% [markdown]
# ## Is it backprop?
# The gradient of the clipped-then-squared batch loss with respect to the predictions, by
# reverse mode, forward mode, central differences and the complex step.

# %%
targets = rng.normal(size=args.batch)
predictions = targets + td_errors
methods = {
    name: method(lambda p: ops.sum(LOSSES["clipped"](p[0] - targets)), [predictions])[0]
    for name, method in check.METHODS.items()
}
for name in ("forward", "central", "complex"):
    results.number(
        f"clipped_{name}",
        check.max_rel_error([methods["reverse"]], [methods[name]]),
        f"clipped loss: largest relative disagreement, reverse vs {name}",
        atol=1e-6,
    )
exactly_zero = np.all([g[zero] == 0 for g in methods.values()])
results.number(
    "all_methods_exactly_zero", bool(exactly_zero), "every method gives exactly 0 where |delta| > 1"
)

# %% [markdown]
# ## Training a linear predictor
# $\hat y = X w$. Most samples use features 1 and 2 and start with errors mostly below 1; a
# few rare samples use feature 3 alone, whose true weight is 3 and whose starting weight is 0, so
# they start with errors far above 1. Full-batch gradient descent on each loss.

# %%
COMMON, RARE = 60, 4
X = np.zeros((COMMON + RARE, 3))
X[:COMMON, :2] = rng.normal(size=(COMMON, 2))
X[COMMON:, 2] = rng.uniform(0.8, 1.2, size=RARE)
w_true = np.array([1.0, -2.0, 3.0])
y = X @ w_true
w_start = w_true + np.array([0.3, -0.3, -3.0])
common_start = np.abs(X @ w_start - y)[:COMMON]
results.number("common_samples", COMMON, "common samples, using features 1 and 2")
results.number("common_start_median", np.median(common_start), "median common-sample |error| at start")
results.number("common_start_max", common_start.max(), "largest common-sample |error| at start")
results.number("common_start_above_clip", int(np.sum(common_start > 1)), "common samples with |error| > 1")
rare_error, final_w = {}, {}
fig, ax = plt.subplots()
for name in LOSSES:
    w, history = w_start.copy(), []
    for _ in range(args.epochs):
        history.append(np.mean((X @ w - y)[COMMON:] ** 2))
        w -= args.lr * engine.grad(lambda p, name=name: ops.mean(LOSSES[name](p[0] @ X.T - y)), [w])[0]
    rare_error[name], final_w[name] = np.abs(X @ w - y)[COMMON:].max(), w
    results.number(
        f"rare_error_{name}",
        rare_error[name],
        f"{name}: largest rare-sample |error| after training",
        rtol=1e-4,
        atol=1e-12,
    )
    results.number(
        f"w3_{name}",
        w[2],
        f"{name}: weight of the rare feature after training (true 3)",
        rtol=1e-4,
        atol=1e-12,
    )
    ax.semilogy(history, label=LABELS[name])
results.number(
    "common_error_clipped",
    np.abs(X @ final_w["clipped"] - y)[:COMMON].max(),
    "clipped: largest common-sample |error| after training",
    atol=1e-12,
)
results.number("epochs", args.epochs, "gradient steps")
results.number("rare_samples", RARE, "rare samples that use the third feature alone")
results.number("w3_true", w_true[2], "the rare feature's true weight")
results.number("w3_start", w_start[2], "the rare feature's weight at the start")
results.number("lr", args.lr, "learning rate")
results.number(
    "rare_start_error",
    np.abs(X @ w_start - y)[COMMON:].min(),
    "smallest rare-sample |error| at start",
    rtol=1e-4,
)
ax.set(
    title="Rare samples with large errors: mean squared error while training",
    xlabel="gradient step",
    ylabel="rare samples' mean squared error (log scale)",
)
ax.legend()
results.figure(
    fig,
    "training",
    alt=(
        "Trained with the clipped-then-squared loss the rare samples' error never moves from its start; "
        "squared error and Huber drive it towards zero."
    ),
)

# %% [markdown]
# ## Clipping each sample's gradient instead
# The same run with the squared error, each sample's gradient $\delta$ clipped to $[-1, 1]$
# before it enters the update, against the Huber run's final weights.

# %%
w = w_start.copy()
for _ in range(args.epochs):
    per_sample = clipping.clip_by_value([per_sample_gradient("squared", X @ w - y)], 1.0)[0]
    w -= args.lr * X.T @ per_sample / len(y)
results.number(
    "gradient_clipped_vs_huber_w",
    np.abs(w - final_w["huber"]).max(),
    "max |final w, per-sample clipped gradient - final w, Huber loss|",
    atol=1e-12,
)

# %%
results.save()
