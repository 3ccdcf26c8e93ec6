"""What backprop computes: four methods, one gradient.

Computes the gradient of two small losses, a tanh MLP's squared error and a vanilla RNN's
final-state energy, by reverse mode (backpropagation), forward mode (dual numbers), central
differences and the complex step, and measures how far the last three are from reverse mode.
Quoted by docs/what-backprop-computes.md.
"""

# %% [markdown]
# Every gradient on this site is computed by `gradlab.engine`, a reverse-mode engine of a few
# hundred lines. Check it against three other methods. Forward mode pushes a tangent through the
# computation alongside the value; it uses the same local derivative formulas as the engine
# (tanh' = 1 - tanh², sigmoid'(x) = sigmoid(x) sigmoid(-x)), so it checks the graph bookkeeping,
# not the rules.
# Central differences evaluate the function at $x \pm h e_k$ and the complex step reads the
# derivative off $\operatorname{Im} f(x + i h e_k) / h$: they use no derivative rule at all, so
# they are the independent witnesses of the rules. Every experiment runs on five seeds.

# %%
import functools

import numpy as np
from gradlab import check, engine, models, numerical, ops, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--width", type=snippet.positive_int, default=8, help="hidden units of the MLP")
parser.add_argument("--batch", type=snippet.positive_int, default=16, help="examples in the batch")
parser.add_argument("--steps", type=snippet.positive_int, default=6, help="time steps of the RNN")
parser.add_argument(
    "--activation", choices=["tanh", "sigmoid", "relu"], default="tanh", help="the MLP's hidden activation"
)
args, results = snippet.parse(parser)

# %% [markdown]
# ## Accumulation at a fork
#
# In $f(x) = x \cdot x + x$ the input $x$ is used three times. Each use sends its own
# contribution back, and the engine *adds* them into `x.grad`: $x + x + 1 = 2x + 1$, which is
# 7 at $x = 3$.

# %%
x = engine.Tensor(3.0, requires_grad=True)
(x * x + x).backward()
results.number("fork_grad", x.grad.item(), "d(x*x + x)/dx at x = 3, summed over the three uses of x")
results.claim("fork_sums", x.grad.item() == 2 * 3.0 + 1, "The three uses' gradients add up to 2x + 1.")

# %% [markdown]
# ## Three gates
#
# Seed $L = c \cdot g(a, b)$ with upstream gradient $c$ and read what each gate sends back: `+`
# distributes $c$ to both inputs unchanged, `*` sends each input $c$ times the *other* input
# (it swaps them), `maximum` routes all of $c$ to the larger input and 0 to the other.

# %%
upstream, a_value, b_value = 5.0, 2.0, -3.0
gates = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "max": ops.maximum}
sent = {}
for gate, function in gates.items():
    a, b = engine.Tensor(a_value, requires_grad=True), engine.Tensor(b_value, requires_grad=True)
    (upstream * function(a, b)).backward()
    sent[gate] = (a.grad.item(), b.grad.item())
    print(f"{gate:<4} gate, upstream {upstream:g}: sends {sent[gate][0]:g} to a, {sent[gate][1]:g} to b")
    results.number(f"gate_{gate}_a", sent[gate][0], f"{gate} gate: gradient sent to a")
    results.number(f"gate_{gate}_b", sent[gate][1], f"{gate} gate: gradient sent to b")
for key, value in (("upstream", upstream), ("gate_a", a_value), ("gate_b", b_value)):
    results.number(key, value, f"gate example: {key}")
results.claim("add_distributes", sent["add"] == (upstream, upstream), "add passes the gradient to both.")
results.claim("mul_swaps", sent["mul"] == (upstream * b_value, upstream * a_value), "mul swaps the inputs.")
results.claim("max_routes", sent["max"] == (upstream, 0.0), "max routes the gradient to the winner.")

# %% [markdown]
# ## An MLP's loss
#
# Two hidden layers, a linear output, squared error against random targets. The loss is
# written once with `gradlab.ops`, so the same Python function runs on reverse-mode tensors,
# dual numbers, real arrays and complex arrays.

# %%
n_inputs, hidden, rnn_inputs = 3, 4, 3
SCAN_SETS = 31  # --activation relu: the MLP problems of --seed S to S + 30, searched for kink crossings
seeds = snippet.seeds(args.seed)


def mlp_loss(p, X, y):
    return ops.mean((models.mlp(p, X, args.activation) - y) ** 2)


def mlp_problem(rng):
    """The MLP's loss on one seed's random data and its Glorot-initialized parameters."""
    X, y = rng.normal(size=(args.batch, n_inputs)), rng.normal(size=(args.batch, 1))
    params = models.init_mlp([n_inputs, args.width, args.width, 1], "glorot", rng)
    return functools.partial(mlp_loss, X=X, y=y), params


def kink_crossings(loss, params):
    """How many of central differences' steps x_k +- h_k flip the sign of a hidden pre-activation:
    for ReLU, how many carry one across the kink at 0 (same steps as `numerical.central_difference`)."""

    def signs(p):
        return [z > 0 for z in models.mlp(p, loss.keywords["X"], args.activation, return_hidden=True)[1]]

    before, crossed = signs(params), 0
    for i, k in ((i, k) for i, p in enumerate(params) for k in range(p.size)):
        for direction in (1, -1):
            moved = [p.copy() for p in params]
            moved[i].flat[k] += direction * numerical.default_step() * max(1.0, abs(params[i].flat[k]))
            crossed += any(np.any(a != b) for a, b in zip(signs(moved), before, strict=True))
    return crossed


# %% [markdown]
# ## A small RNN's loss
#
# $h_t = \tanh(W_{hh} h_{t-1} + W_{xh} x_t + b)$ for a few steps, loss $\tfrac12 \lVert h_T \rVert^2$
# averaged over the batch. The same weights are used at every step, so each gradient is a sum
# over time steps: accumulation at forks again.


# %%
def rnn_problem(rng):
    """The RNN's final-state energy on one seed's random inputs and weights."""
    params = models.init_rnn(hidden, rnn_inputs, scale=1.0, rng=rng)
    xs, h0 = rng.normal(size=(args.steps, args.batch, rnn_inputs)), np.zeros((args.batch, hidden))
    return (lambda p: 0.5 * ops.mean(ops.sum(models.rnn(p, xs, h0) ** 2, axis=1))), params


results.number("mlp_params", sum(p.size for p in mlp_problem(np.random.default_rng(0))[1]), "MLP parameters")
results.number("mlp_width", args.width, "hidden units per layer of the MLP")
results.number("batch", args.batch, "examples in the MLP's batch")
results.number("rnn_params", sum(p.size for p in rnn_problem(np.random.default_rng(0))[1]), "RNN parameters")
results.number("rnn_steps", args.steps, "time steps of the RNN")

# %% [markdown]
# ## Agreement
#
# Two measures for each method against reverse mode. The *elementwise* one is the largest
# $|a_k - b_k| / \max(|a_k|, |b_k|)$ over all entries (`gradlab.check.rel_error`): strict, and
# dominated by the smallest gradient entries. The *scaled* one divides the largest
# $|a_k - b_k|$ by the largest $|a_k|$. Forward mode and the complex step subtract no nearly
# equal numbers, so they agree to a few units of the last place; central differences carry
# rounding and truncation errors near $\epsilon^{2/3} (\lvert L\rvert + \lvert \partial_k^3 L\rvert / 6)$,
# $\epsilon^{2/3} \approx 4 \times 10^{-11}$ (see `gradlab/numerical.py`). The claims below fail
# the run if a method is off by more than rounding explains, on any seed.

# %%
tolerance = {"forward": 1e-12, "complex": 1e-12, "central": 1e-8}  # scaled disagreement allowed
errors = {}  # (model, method, measure) -> one value per seed
for seed in seeds:
    for model, problem in (("mlp", mlp_problem), ("rnn", rnn_problem)):
        loss, params = problem(np.random.default_rng([seed, 0 if model == "mlp" else 1]))
        reference = engine.grad(loss, params)
        scale = max(np.abs(g).max() for g in reference)
        for method in ("forward", "central", "complex"):
            grads = check.METHODS[method](loss, params)
            scaled = max(np.abs(a - b).max() for a, b in zip(reference, grads, strict=True)) / scale
            errors.setdefault((model, method, "error"), []).append(check.max_rel_error(reference, grads))
            errors.setdefault((model, method, "scaled"), []).append(scaled)
for (model, method, measure), values in errors.items():
    print(f"{model}: reverse vs {method:<8} {measure:<6} {min(values):.1e} to {max(values):.1e}")
    about = f"{model.upper()}: reverse vs {method}, largest relative disagreement, {measure}"
    atol = tolerance[method] * (1 if measure == "scaled" else 1e3 if method == "central" else 10)
    results.spread(f"{model}_{method}_{measure}", values, about, rtol=0, atol=atol)
if args.activation == "relu":  # the exercise's question: does a step cross a kink on these seeds?
    crossings = [kink_crossings(*mlp_problem(np.random.default_rng([seed, 0]))) for seed in seeds]
    results.spread("kink_crossings", crossings, "central-difference steps that cross a ReLU kink")
    scan, eps23 = {True: [], False: []}, np.finfo(float).eps ** (2 / 3)  # crossed? -> scaled errors
    for seed in range(snippet.seeds(args.seed)[0], snippet.seeds(args.seed + SCAN_SETS - 1)[-1] + 1):
        loss, params = mlp_problem(np.random.default_rng([seed, 0]))
        reference = engine.grad(loss, params)
        central_grads = check.METHODS["central"](loss, params)
        scaled = max(np.abs(a - b).max() for a, b in zip(reference, central_grads, strict=True))
        scan[kink_crossings(loss, params) > 0].append(scaled / max(np.abs(g).max() for g in reference))
    results.number("scan_problems", len(scan[True]) + len(scan[False]), "MLP problems scanned for crossings")
    results.number("scan_last_seed", args.seed + SCAN_SETS - 1, "the scan covers --seed S to this --seed")
    results.number("scan_crossed", len(scan[True]), "scanned problems where a step crosses a kink")
    for key, value in (("min", min(scan[True], default=np.nan)), ("max", max(scan[True], default=np.nan))):
        results.number(f"crossed_scaled_{key}", value, f"central scaled error where a step crosses ({key})")
    results.number("uncrossed_scaled_max", max(scan[False]), "central scaled error where none crosses (max)",
                   rtol=0, atol=1e-8)  # fmt: skip
    results.claim("central_fine_uncrossed", max(scan[False]) < 100 * eps23, "Where no step crosses a kink, "
                  "central differences stay within 100 eps^(2/3) on the MLP.", {"max": max(scan[False])},
                  answer=True)  # fmt: skip
    breaks = len(scan[True]) > 0 and min(scan[True]) > 100 * eps23
    results.claim("crossing_breaks_central", breaks, "Where a step crosses a kink, central differences' "
                  "scaled error on the MLP exceeds 100 eps^(2/3).", {"crossed": scan[True]},
                  answer=True)  # fmt: skip
worst = {m: max(max(errors[(k, m, "error")]) for k in ("mlp", "rnn")) for m in ("forward", "complex")}
results.number(
    "worst_exact_error", max(worst.values()), "largest elementwise error, forward/complex", atol=1e-11
)
results.claim(
    "exact_agree",
    max(worst.values()) < 1e-11,
    "Forward mode and the complex step agree with reverse mode to 1e-11, entry by entry, on every seed.",
    worst,
)
worst_scaled = {key: max(values) for key, values in errors.items() if key[2] == "scaled"}
results.claim(
    "scaled_within_tolerance",
    all(value < tolerance[key[1]] for key, value in worst_scaled.items()),
    "Scaled: forward and complex within 1e-12 of the gradient's scale, central within 1e-8.",
    {"/".join(key): value for key, value in worst_scaled.items()},
)
eps23 = np.finfo(float).eps ** (2 / 3)
central_factor = max(worst_scaled[(k, "central", "scaled")] for k in ("mlp", "rnn")) / eps23
results.number("eps_two_thirds", eps23, "float64 machine epsilon to the power 2/3")
for name, dtype in (("f64", np.float64), ("f32", np.float32)):  # the step and error floor per dtype
    results.number(
        f"step_{name}", float(np.finfo(dtype).eps) ** (1 / 3), f"{name}: best central step eps^(1/3)"
    )
    results.number(f"eps23_{name}", float(np.finfo(dtype).eps) ** (2 / 3), f"{name}: eps^(2/3)")
results.number(
    "central_over_eps23", central_factor, "largest central scaled error / eps^(2/3)", rtol=0, atol=50
)
results.claim(
    "central_near_eps23",
    central_factor < 100,
    "Central differences' scaled error stays within 100 eps^(2/3) on every seed: truncation and rounding.",
    {"factor": central_factor},
)
central_ratio = [  # elementwise / scaled: above 1 only where the worst entry is below the largest
    e / s
    for k in ("mlp", "rnn")
    for e, s in zip(errors[(k, "central", "error")], errors[(k, "central", "scaled")], strict=True)
]
for key, value in (("median", np.median(central_ratio)), ("min", min(central_ratio))):
    results.number(f"central_ratio_{key}", value, f"central: elementwise / scaled, {key} over problems")
results.number("central_ratio_max", max(central_ratio), "central: elementwise / scaled, largest")
results.claim(
    "central_elementwise_larger",
    np.median(central_ratio) > 10,
    "On the median problem central differences' elementwise error is more than 10 times their scaled "
    "error: their rounding error is absolute, so it weighs most on entries far smaller than the largest.",
    {"elementwise / scaled": central_ratio},
)

# %%
results.save()
