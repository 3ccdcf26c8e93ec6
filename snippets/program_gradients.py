"""Programs, not functions: NaN through an untaken branch, conventions at kinks, steps with zero gradient

Differentiates programs that compute the same function in different ways: a masked square root whose
untaken branch turns the reverse-mode gradient into NaN, and the "double where" that fixes it; ReLU
written five ways, which disagree only at 0, and relu(x) - relu(-x) = x, whose slope 1 at 0 autodiff
gets wrong; a hard threshold, learned through surrogates. Quoted by docs/programs-not-functions.md.
"""

# %% [markdown]
# Every differentiation method here sees a *program*: reverse mode and forward mode apply one
# local rule per operation; central differences and the complex step only evaluate it (the complex
# step also runs its branch tests). Where the program computes something the function does not
# need (a branch that `where` throws away), the methods can disagree, and that is the program's.

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
SEEDS = snippet.seeds(args.seed)  # the random experiments (the model, the threshold data) run on each
METHODS = {"reverse": engine.grad, "forward": forward.grad, "central": numerical.central_difference}


def gradients(f, x):
    """The gradient of f at x by every method, floating-point warnings silenced (NaN is the point)."""
    with np.errstate(all="ignore"):
        return {name: m(f, [x])[0] for name, m in {**METHODS, "complex": numerical.complex_step}.items()}


# %% [markdown]
# ## A masked square root
# $f(x) = \sum_i \mathrm{where}(x_i > 0, \sqrt{x_i}, 0)$ is 0 for $x_i \le 0$, so its derivative
# there is 0. The program still evaluates $\sqrt{x_i}$ on every entry; the "double where"
# feeds the square root a safe input (1) where the mask is false.


# %%
def where_positive(branch):
    return lambda params: ops.sum(ops.where(primal(params[0]) > 0, branch(params[0]), 0.0))


def double_where_sqrt(params):
    x, positive = params[0], primal(params[0]) > 0
    return ops.sum(ops.where(positive, ops.sqrt(ops.where(positive, x, 1.0)), 0.0))


masked_sqrt, x, LOG_X = where_positive(ops.sqrt), np.linspace(-1.0, 2.0, args.points), np.array([-1.0, 0.0])
masked, safe = gradients(masked_sqrt, x), gradients(double_where_sqrt, x)
results.number("grid_points", x.size, "grid points on [-1, 2]")
results.number("masked_points", int((x <= 0).sum()), "grid points with x <= 0 (branch not taken)")
for kind, name, grad in [(k, n, g) for k, gs in (("masked", masked), ("safe", safe)) for n, g in gs.items()]:
    results.number(f"{kind}_{name}_nan", int(np.isnan(grad).sum()), f"NaN entries, {kind} where: {name}")
with np.errstate(invalid="ignore"):  # the step to -h takes sqrt of a negative number: NaN, unused
    at_zero = numerical.central_difference(masked_sqrt, [np.zeros(1)])[0][0]  # ~ 1 / (2 sqrt h)
results.number("central_at_zero", at_zero, "central difference at x = 0", rtol=1e-3)
with np.errstate(all="ignore"):  # the untaken branch's partials: log's 1/x; for x log x, the value log x
    log_grad = engine.grad(where_positive(ops.log), [LOG_X])[0]
    xlogx_grad = engine.grad(where_positive(lambda x: x * ops.log(x)), [np.array([-1.0, 0.5])])[0]
agreement = check.compare(double_where_sqrt, [x[np.abs(x) > 1e-12]])  # off the kink
results.number("safe_max_disagreement", max(agreement.values()), "double where: largest error", atol=1e-6)

# One NaN in dL/dz reaches every weight through X^T: a model whose loss contains the masked branch.
fractions = []  # per seed: the NaN share of dL/dw with the single where, and with the double where
for seed in SEEDS:
    X, w = (rng := np.random.default_rng(seed)).normal(size=(64, 8)), rng.normal(size=8)
    with np.errstate(all="ignore"):
        fractions.append([np.isnan(engine.grad(lambda p, X=X, f=f: f([ops.matmul(X, p[0])]) / len(X), [w])[0])
                          .mean() for f in (masked_sqrt, double_where_sqrt)])  # fmt: skip
nan_fraction, safe_nan_fraction = (list(column) for column in zip(*fractions, strict=True))
results.spread("model_nan_fraction", nan_fraction, "model: fraction of dL/dw entries that are NaN")
results.spread("model_safe_nan_fraction", safe_nan_fraction, "model, double where: NaN fraction")
nan_counts = {kind: {m: int(np.isnan(g).sum()) for m, g in grads.items()}
              for kind, grads in (("where", masked), ("double where", safe))}  # fmt: skip
CLAIMS = [
    ("masked_nan_only_in_reverse",
     nan_counts["where"] == {"reverse": int((x <= 0).sum()), "forward": 0, "central": 0, "complex": 0},
     "Reverse mode returns NaN at every grid point with x <= 0; forward mode, central differences "
     "and the complex step return none.", nan_counts),
    ("double_where_fixes_it", set(nan_counts["double where"].values()) == {0} and max(safe_nan_fraction) == 0,
     "The double where gives no NaN by any method, on the grid or in the model.", nan_counts),
    ("one_nan_poisons_every_weight", min(nan_fraction) == 1.0,
     "In the linear model every entry of dL/dw is NaN, on every seed.", {"nan_fraction": nan_fraction}),
    ("methods_agree_off_the_kink", max(agreement.values()) < 1e-6,
     "On the double-where program at every x != 0, reverse mode agrees with forward mode, central "
     "differences and the complex step to 1e-6 relative.", agreement),
    ("masked_log_nan_only_at_zero", log_grad[0] == 0 and np.signbit(log_grad[0]) and np.isnan(log_grad[1]),
     "Reverse mode on where(x > 0, log x, 0) returns -0.0 at x = -1 (the where's 0 times log's finite "
     "1/x = -1) and NaN at x = 0.", {"gradient at -1, 0": log_grad.tolist()}),
    ("masked_xlogx_nan", np.isnan(xlogx_grad[0]) and abs(xlogx_grad[1] - np.log(0.5) - 1) < 1e-15, "Reverse "
     "mode on where(x > 0, x log x, 0) returns NaN at x = -1, log x + 1 at x = 0.5.", {"g": xlogx_grad}),
]  # fmt: skip

fig, ax = plt.subplots()
ax.plot(x, np.clip(masked["central"], None, 3), color=PALETTE[2], label="central differences")
ax.plot(x, safe["reverse"], "--", color=PALETTE[0], label="reverse mode, double where")
bad = np.isnan(masked["reverse"])
ax.plot(x[~bad], masked["reverse"][~bad], "o", ms=4, color=PALETTE[1], label="reverse mode, where")
ax.plot(x[bad], 0 * x[bad], "x", ms=7, color=PALETTE[3], label="reverse mode, where: NaN (drawn at 0)")
ax.set(title="Gradient of where(x > 0, sqrt x, 0)", xlabel="x", ylabel="df/dx (clipped at 3)")
ax.set_ylim(-0.2, 3.2)
ax.legend()
results.figure(fig, "masked_sqrt", alt="Reverse mode returns NaN at every x <= 0 for where(x > 0, sqrt x, "
               "0); the double-where rewrite gives 0 there, central differences give 0 for x < 0 and a "
               "large, step-dependent value at x = 0; all agree on 1/(2 sqrt x) for x > 0.")  # fmt: skip

# %% [markdown]
# ## Conventions at kinks
# Five programs for $\mathrm{relu}(x) = \max(x, 0)$, $|x|$, clip at its bounds and $\mathrm{relu}(x) -
# \mathrm{relu}(-x) = x$. Away from the kink they agree; at it, each returns its library's convention,
# and central differences return the average of the two one-sided slopes.

# %%
KINKS = {
    "relu": (lambda p: ops.sum(ops.relu(p[0])), 0.0),
    "max_x_0": (lambda p: ops.sum(ops.maximum(p[0], 0.0)), 0.0),
    "max_0_x": (lambda p: ops.sum(ops.maximum(0.0, p[0])), 0.0),
    "half_x_plus_abs": (lambda p: ops.sum((p[0] + ops.abs(p[0])) * 0.5), 0.0),
    "clip_low": (lambda p: ops.sum(ops.clip(p[0], 0.0, None)), 0.0),
    "abs": (lambda p: ops.sum(ops.abs(p[0])), 0.0),
    "clip_at_hi": (lambda p: ops.sum(ops.clip(p[0], 0.0, 1.0)), 1.0),
    "relu_diff": (lambda p: ops.sum(ops.relu(p[0]) - ops.relu(-p[0])), 0.0),  # = x
}
kink_grads = {name: {method: float(g(f, [np.array([kink])])[0][0]) for method, g in METHODS.items()}
              for name, (f, kink) in KINKS.items()}  # fmt: skip
for key, value in {f"kink_{n}_{m}": v for n, grads in kink_grads.items() for m, v in grads.items()}.items():
    results.number(key, value, f"at the kink: {key[5:]}", atol=1e-6)
ONE_SIDED_MEAN = {"abs": 0.0, "relu_diff": 1.0}  # (left + right slope) / 2: (-1 + 1) / 2 for |x|, else 0.5
relu_programs = ["relu", "max_x_0", "max_0_x", "half_x_plus_abs", "clip_low"]
results.claim("relu_programs_disagree_at_zero", len({kink_grads[n]["reverse"] for n in relu_programs}) == 3
              and all(kink_grads[n]["reverse"] == kink_grads[n]["forward"] for n in KINKS)
              and all(abs(kink_grads[n]["central"] - ONE_SIDED_MEAN.get(n, 0.5)) < 1e-6 for n in KINKS),
              "The five programs for relu return three different reverse-mode slopes at 0 (0, 1 and 0.5); "
              "forward mode returns the same as reverse mode on each program; central differences return the "
              "mean of the two one-sided slopes on every program (0.5 for relu and at clip's bound, 0 for "
              "|x|, 1 for relu(x) - relu(-x)).", kink_grads)  # fmt: skip
identity = kink_grads["relu_diff"]  # relu(x) - relu(-x) = x: each relu contributes its relu'(0) = 0
results.claim("ad_wrong_where_differentiable", identity["reverse"] == identity["forward"] == 0 and identity[
              "central"] == 1, "On relu(x) - relu(-x), which is x, reverse and forward mode return 0 at "
              "x = 0, where the derivative is 1; central differences return 1.", identity)  # fmt: skip

# %% [markdown]
# ## A hard threshold
# Learn $t$ so that $\mathrm{step}(x - t)$ matches labels $y = [x > t^\star]$, with the squared
# error. The step's derivative is 0 wherever it exists. The sigmoid surrogate replaces the step by
# $\sigma((x - t)/\tau)$; the straight-through estimator keeps the hard step in the forward pass
# and differentiates the identity in the backward pass.

# %%
T_TRUE, T_START = 0.5, -1.0
x_data = np.random.default_rng(SEEDS[0]).uniform(-2.0, 2.0, size=200)  # redrawn per seed below
y_data, t_start = (x_data > T_TRUE).astype(float), np.array(T_START)


def hard_step(z):
    # 0 * z keeps t in the graph, so every method differentiates one program
    return ops.where(primal(z) > 0, 1.0 + 0.0 * z, 0.0 * z)


PREDICTORS = {
    "hard step": hard_step,
    "sigmoid surrogate": lambda z: ops.sigmoid(z / args.temperature),
    "straight-through": lambda z: hard_step(z) + (z - primal(z)),  # value: step; slope: 1
}


def threshold_loss(predict, x_data=x_data, y_data=y_data):
    return lambda p: ops.mean((predict(x_data - p[0]) - y_data) ** 2)


def train(predict, x_data, y_data):
    t, history = t_start.copy(), [T_START]
    for _ in range(args.steps):
        t = t - args.lr * engine.grad(threshold_loss(predict, x_data, y_data), [t])[0]
        history.append(float(t))
    return history


for key, name in (("hard", "hard step"), ("sigmoid", "sigmoid surrogate")):
    grads = {m: float(g(threshold_loss(PREDICTORS[name]), [t_start])[0]) for m, g in METHODS.items()}
    for method, value in grads.items():
        results.number(f"{key}_grad_{method}", value, f"dL/dt at t = {T_START}, {name}, {method}", atol=1e-8)
ste_grad = engine.grad(threshold_loss(PREDICTORS["straight-through"]), [t_start])[0]
results.number("ste_grad_reverse", float(ste_grad), "dL/dt at the start, straight-through estimator")

histories, finals = {}, {name: [] for name in PREDICTORS}
accuracies, hard_grads, starts, ends = {name: [] for name in PREDICTORS}, [], [], []  # starts, ends: ex. 1
TAU0, sigmoid_at = parser.get_default("temperature"), lambda tau: lambda z: ops.sigmoid(z / tau)
for seed in SEEDS:  # the data are drawn anew for each seed; the first seed's runs are drawn
    seed_x = np.random.default_rng(seed).uniform(-2.0, 2.0, size=200)
    seed_y = (seed_x > T_TRUE).astype(float)
    hard_grads.append(float(engine.grad(threshold_loss(hard_step, seed_x, seed_y), [t_start])[0]))
    starts.append([float(engine.grad(threshold_loss(sigmoid_at(tau), seed_x, seed_y), [t_start])[0])
                   for tau in (args.temperature, TAU0)])  # fmt: skip
    for name, predict in PREDICTORS.items():
        histories.setdefault(name, history := train(predict, seed_x, seed_y))
        finals[name].append(history[-1])
        accuracies[name].append(((seed_x > history[-1]) == (seed_y > 0)).mean())
    ends.append([finals["sigmoid surrogate"][-1]])  # the final t at this tau and at TAU0
    ends[-1].append(train(sigmoid_at(TAU0), seed_x, seed_y)[-1] if args.temperature != TAU0 else ends[-1][0])
for name in PREDICTORS:
    key = name.split()[0].replace("-", "_")
    results.spread(f"{key}_final_t", finals[name], f"threshold after training, {name}")
    results.spread(f"{key}_accuracy", accuracies[name], f"hard-step accuracy after training, {name}")
results.claim("step_gradient_is_exactly_zero", all(g == 0 for g in hard_grads) and set(finals["hard step"])
              == {T_START}, "The hard step's gradient with respect to t is exactly 0 on every seed, so its "
              "threshold never moves from the start.",
              {"dL/dt": hard_grads, "final t": finals["hard step"]})  # fmt: skip
results.claim("surrogates_learn_the_threshold", min(accuracies["sigmoid surrogate"] + accuracies[
              "straight-through"]) >= 0.98, "The sigmoid surrogate and the straight-through estimator both "
              "reach at least 98% accuracy with the hard step, on every seed.",
              {name: accuracies[name] for name in ("sigmoid surrogate", "straight-through")})  # fmt: skip
starts, far = np.abs(starts), np.abs(np.array(ends) - T_TRUE)  # per seed: |dL/dt| at the start, |t - t*|
swing, tau, n = starts.max(0) / starts.min(0), f"$\\tau$ = {args.temperature:g}", len(SEEDS)  # this tau, TAU0
ANSWERS = [  # what the answers to exercises 1 and 2 state, about other settings
    ("soft_starts_smaller", np.all(starts[:, 0] < starts[:, 1]), f"On each of the {n} seeds' data the start "
     f"gradient at {tau} is smaller in magnitude than at $\\tau$ = {TAU0:g}.", {"|dL/dt|": starts}),
    ("sharp_start_swings", swing[0] > swing[1], f"Over the {n} seeds' data its magnitude varies by a factor "
     f"of {swing[0]:.1f} at {tau}, more than the {swing[1]:.1f} at $\\tau$ = {TAU0:g}.", {"max/min": swing}),
    ("worst_end_farther", far[:, 0].max() > far[:, 1].max(), f"At {tau} the worst of the {n} seeds ends "
     f"farther from $t^\\star$ than the worst at $\\tau$ = {TAU0:g}.", {"|t - t*|": far}),
    ("no_point_at_zero", not np.any(x == 0) and nan_counts["where"]["reverse"] == np.sum(x < 0), "No grid "
     "point is exactly 0, and reverse mode still returns NaN at every point with x < 0.", nan_counts),
]  # fmt: skip
for (name, holds, statement, values), answer in [(c, False) for c in CLAIMS] + [(c, True) for c in ANSWERS]:
    results.claim(name, bool(holds), statement, values, answer=answer)
SETTINGS = dict(t_true=T_TRUE, t_start=T_START, temperature=args.temperature, steps=args.steps, lr=args.lr)
for key, value in SETTINGS.items():
    results.number(key, value, f"setting of the threshold experiment: {key}")

fig, ax = plt.subplots()
for name, history in histories.items():
    ax.plot(history, label=name)
ax.axhline(T_TRUE, color=PALETTE[4], linestyle=":", label="true threshold")
ax.set(title="Learning a threshold: step vs surrogates", xlabel="gradient step", ylabel="threshold t")
ax.legend()
results.figure(fig, "threshold", alt="With the hard step the threshold never moves from its start (its "
               "gradient is exactly zero); the sigmoid surrogate and the straight-through estimator move it "
               "to the true threshold.")  # fmt: skip

# %%
results.save()
