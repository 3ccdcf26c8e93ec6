"""Programs, not functions: NaN through an untaken branch, conventions at kinks, steps with zero gradient

Differentiates programs that compute the same function in different ways: a masked square root
whose untaken branch turns the reverse-mode gradient into NaN, and the "double where" that
fixes it; ReLU written five ways, which disagree only at 0; a hard threshold whose gradient is
exactly zero, learned with a sigmoid surrogate and a straight-through estimator.
Quoted by docs/programs-not-functions.md.
"""

# %% [markdown]
# Every differentiation method here sees a *program*: reverse mode and forward mode apply one
# local rule per operation; central differences and the complex step only evaluate it. Where
# the program computes something the function does not need (a branch that `where` throws
# away), the methods can disagree, and the disagreement belongs to the program.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, engine, forward, numerical, ops, snippet
from gradlab.leaks import primal
from gradlab.plot import PALETTE

parser = snippet.parser(__doc__)
parser.add_argument("--points", type=snippet.positive_int, default=61, help="grid points on [-1, 2]")
parser.add_argument("--temperature", type=snippet.positive_float, default=0.1, help="sigmoid's tau")
parser.add_argument("--steps", type=snippet.positive_int, default=100, help="steps for the threshold")
parser.add_argument("--lr", type=snippet.positive_float, default=0.5, help="learning rate, threshold")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)
METHODS = {"reverse": engine.grad, "forward": forward.grad, "central": numerical.central_difference}


def gradients(f, x):
    """The gradient of f at x by every method, floating-point warnings silenced (NaN is the point)."""
    with np.errstate(all="ignore"):
        methods = {**METHODS, "complex": numerical.complex_step}
        return {name: method(f, [x])[0] for name, method in methods.items()}


# %% [markdown]
# ## A masked square root
# $f(x) = \sum_i \mathrm{where}(x_i > 0, \sqrt{x_i}, 0)$ is 0 for $x_i \le 0$, so its derivative
# there is 0. The program still evaluates $\sqrt{x_i}$ on every entry; the "double where"
# feeds the square root a safe input (1) where the mask is false.


# %%
def masked_sqrt(params):
    (x,) = params
    return ops.sum(ops.where(primal(x) > 0, ops.sqrt(x), 0.0))


def double_where_sqrt(params):
    (x,) = params
    positive = primal(x) > 0
    return ops.sum(ops.where(positive, ops.sqrt(ops.where(positive, x, 1.0)), 0.0))


x = np.linspace(-1.0, 2.0, args.points)
masked = gradients(masked_sqrt, x)
safe = gradients(double_where_sqrt, x)
results.number("grid_points", x.size, "grid points on [-1, 2]")
results.number("masked_points", int((x <= 0).sum()), "grid points with x <= 0 (branch not taken)")
for name, grad in masked.items():
    results.number(f"masked_{name}_nan", int(np.isnan(grad).sum()), f"NaN entries, where: {name}")
for name, grad in safe.items():
    results.number(f"safe_{name}_nan", int(np.isnan(grad).sum()), f"NaN entries, double where, {name}")
with np.errstate(invalid="ignore"):  # the step to -h takes sqrt of a negative number: NaN, unused
    at_zero = numerical.central_difference(masked_sqrt, [np.zeros(1)])[0][0]  # ~ 1 / (2 sqrt h)
results.number("central_at_zero", at_zero, "central difference at x = 0", rtol=1e-3)
nonzero = x[np.abs(x) > 1e-12]
agreement = check.compare(double_where_sqrt, [nonzero])
results.number(
    "safe_max_disagreement", max(agreement.values()), "double where: largest rel. error", atol=1e-6
)

# One NaN in dL/dz reaches every weight through X^T: a model whose loss contains the masked branch.
X = rng.normal(size=(64, 8))
w = rng.normal(size=8)
with np.errstate(all="ignore"):
    grad_w = engine.grad(lambda p: masked_sqrt([ops.matmul(X, p[0])]) / len(X), [w])[0]
    grad_w_safe = engine.grad(lambda p: double_where_sqrt([ops.matmul(X, p[0])]) / len(X), [w])[0]
results.number(
    "model_nan_fraction", float(np.isnan(grad_w).mean()), "model: fraction of dL/dw entries that are NaN"
)
results.number(
    "model_safe_nan_fraction", float(np.isnan(grad_w_safe).mean()), "model, double where: NaN fraction"
)

fig, ax = plt.subplots()
ax.plot(x, np.clip(masked["central"], None, 3), color=PALETTE[2], label="central differences")
ax.plot(x, safe["reverse"], "--", color=PALETTE[0], label="reverse mode, double where")
finite = ~np.isnan(masked["reverse"])
ax.plot(x[finite], masked["reverse"][finite], "o", ms=4, color=PALETTE[1], label="reverse mode, where")
ax.plot(
    x[~finite], 0 * x[~finite], "x", ms=7, color=PALETTE[3], label="reverse mode, where: NaN (drawn at 0)"
)
ax.set(
    title="Gradient of where(x > 0, sqrt x, 0)", xlabel="x", ylabel="df/dx (clipped at 3)", ylim=(-0.2, 3.2)
)
ax.legend()
results.figure(
    fig,
    "masked_sqrt",
    alt="Reverse mode returns NaN at every x <= 0 for where(x > 0, sqrt x, 0); the double-where "
    "rewrite gives 0 there, central differences give 0 for x < 0 and a large, step-dependent value "
    "at x = 0; all agree on 1/(2 sqrt x) for x > 0.",
)

# %% [markdown]
# ## Conventions at kinks
# Five programs for $\mathrm{relu}(x) = \max(x, 0)$, plus $|x|$ and clip at its bounds. Away
# from the kink they all agree; at it, each returns its own convention, and central differences
# return the average of the two one-sided slopes.

# %%
KINKS = {
    "relu": (lambda p: ops.sum(ops.relu(p[0])), 0.0),
    "max_x_0": (lambda p: ops.sum(ops.maximum(p[0], 0.0)), 0.0),
    "max_0_x": (lambda p: ops.sum(ops.maximum(0.0, p[0])), 0.0),
    "half_x_plus_abs": (lambda p: ops.sum((p[0] + ops.abs(p[0])) * 0.5), 0.0),
    "clip_low": (lambda p: ops.sum(ops.clip(p[0], 0.0, None)), 0.0),
    "abs": (lambda p: ops.sum(ops.abs(p[0])), 0.0),
    "clip_at_hi": (lambda p: ops.sum(ops.clip(p[0], 0.0, 1.0)), 1.0),
}
for name, (f, kink) in KINKS.items():
    grads = {method: float(g(f, [np.array([kink])])[0][0]) for method, g in METHODS.items()}
    print(f"{name:>16} at {kink}: " + ", ".join(f"{m} {v:+.3f}" for m, v in grads.items()))
    results.number(f"kink_{name}_reverse", grads["reverse"], f"{name} at its kink: reverse mode")
    results.number(f"kink_{name}_forward", grads["forward"], f"{name} at its kink: forward mode")
    results.number(f"kink_{name}_central", grads["central"], f"{name} at its kink: central", atol=1e-6)

# %% [markdown]
# ## A hard threshold
# Learn $t$ so that $\mathrm{step}(x - t)$ matches labels $y = [x > t^\star]$, with the squared
# error. The step's derivative is 0 wherever it exists. The sigmoid surrogate replaces the step by
# $\sigma((x - t)/\tau)$; the straight-through estimator keeps the hard step in the forward pass
# and differentiates the identity in the backward pass.

# %%
T_TRUE, T_START = 0.5, -1.0
x_data = rng.uniform(-2.0, 2.0, size=200)
y_data = (x_data > T_TRUE).astype(float)


def hard_step(z):
    # 0 * z keeps t in the graph, so every method differentiates one program
    return ops.where(primal(z) > 0, 1.0 + 0.0 * z, 0.0 * z)


PREDICTORS = {
    "hard step": hard_step,
    "sigmoid surrogate": lambda z: ops.sigmoid(z / args.temperature),
    "straight-through": lambda z: hard_step(z) + (z - primal(z)),  # value: step; slope: 1
}


def threshold_loss(predict):
    return lambda p: ops.mean((predict(x_data - p[0]) - y_data) ** 2)


t_start = np.array(T_START)
for key, name in (("hard", "hard step"), ("sigmoid", "sigmoid surrogate")):
    grads = {m: float(g(threshold_loss(PREDICTORS[name]), [t_start])[0]) for m, g in METHODS.items()}
    for method, value in grads.items():
        results.number(f"{key}_grad_{method}", value, f"dL/dt at t = {T_START}, {name}, {method}", atol=1e-8)
ste_grad = engine.grad(threshold_loss(PREDICTORS["straight-through"]), [t_start])[0]
results.number("ste_grad_reverse", float(ste_grad), "dL/dt at the start, straight-through estimator")

histories = {}
for name, predict in PREDICTORS.items():
    t, history = t_start.copy(), [T_START]
    for _ in range(args.steps):
        t = t - args.lr * engine.grad(threshold_loss(predict), [t])[0]
        history.append(float(t))
    histories[name] = history
    key = name.split()[0].replace("-", "_")
    results.number(f"{key}_final_t", history[-1], f"threshold after training, {name}", rtol=1e-6)
    accuracy = float(((x_data > history[-1]) == (y_data > 0)).mean())
    results.number(f"{key}_accuracy", accuracy, f"hard-step accuracy after training, {name}")
results.number("t_true", T_TRUE, "true threshold")
results.number("t_start", T_START, "starting threshold")
results.number("temperature", args.temperature, "sigmoid surrogate's temperature")
results.number("steps", args.steps, "gradient steps")
results.number("lr", args.lr, "learning rate")

fig, ax = plt.subplots()
for name, history in histories.items():
    ax.plot(history, label=name)
ax.axhline(T_TRUE, color=PALETTE[4], linestyle=":", label="true threshold")
ax.set(title="Learning a threshold: step vs surrogates", xlabel="gradient step", ylabel="threshold t")
ax.legend()
results.figure(
    fig,
    "threshold",
    alt="With the hard step the threshold never moves from its start (its gradient is "
    "exactly zero); the sigmoid surrogate and the straight-through estimator move it to the true threshold.",
)

# %%
results.save()
