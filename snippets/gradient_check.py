"""Checking a backward pass: step size, the complex step, kinks, tolerances and a planted bug.

Central differences against a float64 reverse-mode reference as the step h shrinks (float32 and
float64), the complex step, a ReLU kink, a wrong backward rule, which tolerance tests tell the two
apart, and the random-direction test. Quoted by docs/checking-a-backward-pass.md.
"""

# %% [markdown]
# ## Set-up
# A small tanh network and its mean squared loss. Its reverse-mode gradient in float64 is the
# reference; forward mode and the complex step confirm it before anything is measured against it.

# %%
import functools
import itertools

import matplotlib.pyplot as plt
import numpy as np
from gradlab import batched_check as batched
from gradlab import check, engine, float32_check, models, numerical, ops, planted, plot, snippet
from gradlab.tolerance import all_close, directional_check, random_direction

parser = snippet.parser(__doc__)
parser.add_argument("--width", type=snippet.positive_int, default=8, help="hidden units per layer")
parser.add_argument("--tiny-input", type=snippet.positive_float, default=1e-8, help="scale of one input")
parser.add_argument("--loss-weight", type=snippet.positive_float, default=1e-6, help="a small loss weight")
parser.add_argument("--kink-distance", type=snippet.positive_float, default=1e-7, help="ReLU's distance to 0")
args, results = snippet.parse(parser)
normwise = check.normwise_rel_error  # ||g - g_ref|| / ||g_ref|| over all parameters


def loss(p, X, y):
    return ops.mean((models.mlp(p, X, "tanh") - y) ** 2)


SIZES = [4, args.width, args.width, 1]  # the tanh network's layer sizes
n_params = sum(p.size for p in models.init_mlp(SIZES, "glorot", np.random.default_rng()))
results.number("n_params", n_params, "parameters of the small tanh network")

# %% [markdown]
# ## The step-size trade-off
# Per seed: central differences in float64 and float32 (float32's reference: float64 reverse mode on
# the float32-rounded parameters, so only the arithmetic differs), the complex step; h from 1 to 1e-13.
# `gradlab.batched_check` evaluates every perturbed network at once, bit for bit as `gradlab.numerical`.

# %%
steps = np.logspace(0, -13, 40)
float32_min_step, tiny_step = 1e-6, 1e-200
results.number("float32_min_step", float32_min_step, "smallest step tried in float32")


def sweep(seed):
    """One network's check errors against h, and reverse mode against forward mode/complex step."""
    rng_s = np.random.default_rng(seed)
    X_s, y_s = rng_s.normal(size=(16, 4)), rng_s.normal(size=(16, 1))
    p64 = models.init_mlp(SIZES, "glorot", rng_s)
    p32, X32, y32 = [p.astype(np.float32) for p in p64], X_s.astype(np.float32), y_s.astype(np.float32)
    f64, s64 = functools.partial(loss, X=X_s, y=y_s), batched.mlp_mse(X_s, y_s)
    f32, s32 = functools.partial(loss, X=X32, y=y32), batched.mlp_mse(X32, y32)
    ref64, ref32 = engine.grad(f64, p64), engine.grad(f32, [p.astype(np.float64) for p in p32])  # 64-bit
    fd32 = [  # below about eps * |x| a float32 step rounds away (x + h == x - h): no quotient
        normwise(batched.central_difference(s32, p32, h=h), ref32) if h >= float32_min_step else np.nan
        for h in steps
    ]
    return {
        "float64": [normwise(batched.central_difference(s64, p64, h=h), ref64) for h in steps],
        "float32": fd32,
        "complex step": [normwise(batched.complex_step(s64, p64, h=h), ref64) for h in steps],
        "agreement": check.compare(f64, p64, ("reverse", "forward", "complex")),
        "tiny": normwise(batched.complex_step(s64, p64, h=tiny_step), ref64),
        "tiny32": normwise(float32_check.complex_step32(f32, p32), ref32),
    }


PRECISIONS, sweeps = ("float64", "float32"), [sweep(seed) for seed in snippet.seeds(args.seed)]
errors = {name: sweeps[0][name] for name in ("float64", "float32", "complex step")}  # figure: 1st seed
best_h = {n: [steps[int(np.nanargmin(s[n]))] for s in sweeps] for n in PRECISIONS}
best_error = {n: np.array([np.nanmin(s[n]) for s in sweeps]) for n in PRECISIONS}
near_theory = []
for n in PRECISIONS:
    eps = np.finfo(n).eps
    results.spread(f"best_h_{n}", best_h[n], f"step with the smallest check error, {n}", rtol=1)
    results.spread(f"best_error_{n}", best_error[n], f"that error, {n}", atol=100 * eps ** (2 / 3))
    results.number(f"theory_h_{n}", eps ** (1 / 3), f"eps^(1/3), the step that balances the errors, {n}")
    results.number(f"eps_{n}", eps, f"machine epsilon, {n}")
    near_theory += [0.1 < h / eps ** (1 / 3) < 10 for h in best_h[n]]
    near_theory += [0.1 < e / eps ** (2 / 3) < 10 for e in best_error[n]]
for m in ("complex", "forward"):
    values = [s["agreement"][f"reverse vs {m}"] for s in sweeps]
    results.spread(f"reference_vs_{m}", values, f"reverse mode vs {m}, largest relative error", atol=1e-12)
eps_ratio = np.finfo(np.float32).eps / np.finfo(np.float64).eps
predicted, ratio = float(eps_ratio) ** (2 / 3), best_error["float32"] / best_error["float64"]
results.number("eps_ratio", eps_ratio, "float32 eps / float64 eps")
results.number("predicted_error_ratio", predicted, "(float32 eps / float64 eps)^(2/3), the eps^(2/3) rule")
results.spread("best_error_ratio", ratio, "best float32 check error / best float64 check error", rtol=1)
complex_worst = max(e for s in sweeps for e, h in zip(s["complex step"], steps, strict=True) if h <= 1e-7)
results.number("complex_worst_error", complex_worst, "largest complex-step error for h <= 1e-7", atol=1e-13)
results.number("complex_tiny_h", tiny_step, "a step far below any cancellation threshold")
tiny_errors, tiny32 = [s["tiny"] for s in sweeps], [s["tiny32"] for s in sweeps]
results.spread("complex_tiny_h_error", tiny_errors, "complex-step error with that step", atol=1e-13)
results.spread("complex_float32_error", tiny32, "complex-step error in complex64, h = 1e-20", rtol=0.5)
near_theory += [0.1 < e / np.finfo(np.float32).eps < 10 for e in tiny32]  # complex64 complex step
trade_off = all(near_theory) and all(0.2 < r / predicted < 5 for r in ratio) and complex_worst < 1e-13
trade_off = trade_off and min(best_error["float32"]) > 10 * 1e-6  # fails a float64 tolerance of 1e-6
statement = "best h, error within 10x of eps^(1/3), eps^(2/3); their ratio within 5x of (eps32/eps64)^(2/3)"
statement += "; float32's > 1e-5, on every seed; complex step < 1e-13 for h <= 1e-7 (complex64: < 10 eps32)"
results.claim("step_trade_off", bool(trade_off), statement, {"ratio": ratio})

fig, ax = plt.subplots()
for name, marker in zip(errors, "os^", strict=True):
    label = f"central differences, {name}" if name != "complex step" else "complex step, float64"
    ax.loglog(steps, errors[name], marker=marker, markersize=3, label=label)
cube_roots = [numerical.default_step(name) for name in ("float64", "float32")]
ax.vlines(cube_roots, 0, 1, transform=ax.get_xaxis_transform(), colors=plot.PALETTE[4], linestyles=":", lw=1)
ax.collections[-1].set_label("ε^(1/3), float64 and float32")
ax.invert_xaxis()
ax.set(title="Gradient-check error against the step h", xlabel="step h (log scale, shrinking →)")
ax.set_ylabel("norm-wise relative error (log scale)")
ax.legend()
results.figure(
    fig,
    "step_size",
    alt=f"First seed's network: central-difference error falls as h shrinks until rounding takes over, "
    f"a V in each precision, smallest at h = {best_h['float64'][0]:.0e} in float64 (eps^(1/3) = "
    f"{cube_roots[0]:.1e}) and {best_h['float32'][0]:.0e} in float32 (eps^(1/3) = {cube_roots[1]:.1e}); "
    f"the complex step's error stays below {complex_worst:.0e} for every h <= 1e-07, on all seeds.",
)

# %% [markdown]
# ## A kink fools the check
# On each seed, a ReLU network with one hidden pre-activation moved to `--kink-distance` from
# zero. A central difference with a step larger than that distance straddles the kink.

# %%
small_step_factor = 100
KINK_SPREADS = (
    ("error_default_h", "largest relative error, default step", {"rtol": 1e-3}),
    ("normwise_default_h", "norm-wise relative error, default step", {"rtol": 1e-3}),
    ("normwise_small_h", "norm-wise relative error, the small step", {"atol": 1e-5}),
    ("forward", "reverse vs forward mode at the same point", {"atol": 1e-12}),
    ("complex", "complex step (h = 1e-20), norm-wise error", {"atol": 1e-13}),
)
kink = {key: [] for key, _, _ in KINK_SPREADS}
for seed in snippet.seeds(args.seed):
    rng_k = np.random.default_rng(seed)
    x_one = rng_k.normal(size=(1, 4))
    relu_params, relu_loss = planted.relu_net_near_kink(x_one, args.width, args.kink_distance, rng_k)
    ref = engine.grad(relu_loss, relu_params)
    default = numerical.central_difference(relu_loss, relu_params)
    small = numerical.central_difference(relu_loss, relu_params, h=args.kink_distance / small_step_factor)
    kink["error_default_h"].append(check.max_rel_error(ref, default))
    kink["normwise_default_h"].append(normwise(default, ref))
    kink["normwise_small_h"].append(normwise(small, ref))
    kink["forward"].append(check.max_rel_error(ref, check.METHODS["forward"](relu_loss, relu_params)))
    kink["complex"].append(normwise(numerical.complex_step(relu_loss, relu_params), ref))  # h = 1e-20
results.number("kink_distance", args.kink_distance, "distance of the chosen pre-activation from the kink")
results.number("kink_default_h", numerical.default_step(), "default central-difference step at |x| <= 1")
results.number("kink_small_step_factor", small_step_factor, "the small step is the distance / this factor")
for key, about, tolerance in KINK_SPREADS:
    results.spread(f"kink_{key}", kink[key], about, **tolerance)

# %% [markdown]
# ## A planted bug
# A sigmoid whose backward rule forgot the factor $(1-\sigma)$ (`gradlab.planted`), on each seed's
# sigmoid layer: the check against central differences catches it; the correct rule passes.


# %%
def sigmoid_loss(p, X, sigmoid=ops.sigmoid, weight=1.0):
    W, b = p
    return weight * ops.mean((sigmoid(X @ W + b) - 0.5) ** 2)


bug_error, fixed_error = [], []
for seed in snippet.seeds(args.seed):
    rng_b = np.random.default_rng(seed)
    f = functools.partial(sigmoid_loss, X=rng_b.normal(size=(16, 4)))
    sig_params = [rng_b.normal(size=(4, 3)), np.zeros(3)]
    buggy_loss = functools.partial(f, sigmoid=planted.sigmoid_forgot_factor)
    expected = numerical.central_difference(f, sig_params)
    bug_error.append(check.max_rel_error(engine.grad(buggy_loss, sig_params), expected))
    fixed_error.append(check.max_rel_error(engine.grad(f, sig_params), expected))
results.spread("bug_error", bug_error, "buggy rule vs central differences", rtol=1e-6)
results.spread("fixed_error", fixed_error, "correct rule vs central differences", atol=1e-7)
orders = int(np.floor(np.log10(min(bug_error) / max(fixed_error))))
results.number("bug_orders_of_magnitude", orders, "orders of magnitude, least bug error / most correct")
results.claim("bug_separated", orders >= 6, "on every seed the bug's error is >= 1e6 times the correct one's")
try:  # the last seed's check, as assert_gradients_close reports it
    check.assert_gradients_close(buggy_loss, sig_params, rtol=1e-6, methods=("central",))
except AssertionError as failure:
    print(failure)

# %% [markdown]
# ## Tolerances, and a check in one direction
# The sigmoid model on five seeds, first input scaled by `--tiny-input`: four tests |a - b| <= atol
# + rtol |b| at loss weight 1 and `--loss-weight`, and the slope along a random v against <grad, v>.

# %%
TESTS = {"relative": (1e-6, 0.0), "absolute": (0.0, 1e-5), "gradcheck": (1e-3, 1e-5), "mixed": (1e-6, None)}
passed, worst_tiny, directional = {}, [], {"correct": [], "buggy": []}
for seed, weight in itertools.product(snippet.seeds(args.seed), (1.0, args.loss_weight)):
    rng_t = np.random.default_rng(seed)
    X_t = rng_t.normal(size=(16, 4)) * np.array([args.tiny_input, 1.0, 1.0, 1.0])
    p_t = [rng_t.normal(size=(4, 3)), np.zeros(3)]
    f = functools.partial(sigmoid_loss, X=X_t, weight=weight)
    central = numerical.central_difference(f, p_t)
    grads = {"correct": engine.grad(f, p_t)}
    grads["buggy"] = engine.grad(functools.partial(f, sigmoid=planted.sigmoid_forgot_factor), p_t)
    atol_mixed = 1e-6 * max(np.abs(c).max() for c in central)  # mixed: atol from the gradient's scale
    for (test, (rtol, atol)), (rule, g) in itertools.product(TESTS.items(), grads.items()):
        key = f"{test}_{rule}_{'unit' if weight == 1.0 else 'small'}"
        passed[key] = passed.get(key, 0) + all_close(g, central, rtol, atol_mixed if atol is None else atol)
    if weight == 1.0:
        worst_tiny.append(check.max_rel_error(grads["correct"], central))
        v = random_direction(p_t, rng_t)
        for rule, g in grads.items():
            slope, dot = directional_check(f, p_t, v, g)
            directional[rule].append(abs(slope - dot) / max(abs(slope), abs(dot)))
results.spread("tiny_rel_error", worst_tiny, "correct rule: worst entrywise rel. error", rtol=1, atol=1e-3)
for rule, errors in directional.items():
    results.spread(f"direction_{rule}", errors, f"{rule} rule: random-direction relative error", atol=1e-8)
for key, count in passed.items():
    results.number(key, count, f"seeds passed: {key.replace('_', ' ')} (test, rule, loss weight)")
results.number("loss_weight", args.loss_weight, "the small loss weight")
results.number("tiny_input", args.tiny_input, "scale of the unscaled input")
n, p = len(worst_tiny), passed
relative_ok = p["relative_correct_unit"] == 0 and min(worst_tiny) > 1e-4
results.claim("relative_fails_correct", relative_ok, "rtol alone fails the correct rule (worst > 1e-4)", p)
absolute_ok = p["absolute_buggy_small"] == p["gradcheck_buggy_small"] == n and p["absolute_buggy_unit"] == 0
results.claim("absolute_misses_bug", absolute_ok, "atol 1e-5 passes the bug at the small weight only", p)
mixed = [p[f"mixed_correct_{w}"] == n and p[f"mixed_buggy_{w}"] == 0 for w in ("unit", "small")]
results.claim("mixed_right", all(mixed), "the mixed test, atol = 1e-6 max|g|, is right at both weights", p)
separates = max(directional["correct"]) < 1e-6 and min(directional["buggy"]) > 1e-2
results.claim("direction_separates", separates, "random direction: correct < 1e-6, buggy > 1e-2", directional)
straddles = args.kink_distance < numerical.default_step()
kink_ok = max(kink["complex"]) < 1e-14 and all((e > 1e-3) == straddles for e in kink["normwise_default_h"])
results.claim("complex_step_at_kink", kink_ok, "complex step < 1e-14; default step > 1e-3 iff it straddles")
off_kink = not straddles and max(kink["normwise_default_h"]) < 1e-9 and max(kink["error_default_h"]) < 1e-5
says = "The default step no longer reaches the kink: on every seed norm-wise error < 1e-9, entrywise < 1e-5."
results.claim("kink_out_of_reach", off_kink, says, kink, answer=True)
near = all(1 / 3 < h / numerical.default_step() < 3 for h in best_h["float64"])
says = "On every seed the best float64 step is within a factor of 3 of ε^(1/3), where the formula puts it."
results.claim("best_h_at_theory", near, says, best_h, answer=True)
rounds = np.float32(1) + np.float32(1e-8) == 1 == np.float32(1) - np.float32(1e-8)  # in float32
results.claim("float32_steps_round", bool(rounds), "In float32, 1 + 10⁻⁸ and 1 − 10⁻⁸ both round to 1.")
ends = [s["float32"][np.flatnonzero(steps >= float32_min_step)[-1]] / np.nanmin(s["float32"]) for s in sweeps]
says = "On every seed the float32 error at the smallest step tried is over 1,000 times its best error."
results.claim("float32_rounding_end", min(ends) > 1000, says, {"ratio": ends})
results.save()
