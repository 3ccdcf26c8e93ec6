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
from gradlab import check, engine, models, numerical, ops, plot, snippet
from gradlab.tolerance import all_close, directional_check, random_direction

parser = snippet.parser(__doc__)
parser.add_argument("--width", type=snippet.positive_int, default=8, help="hidden units per layer")
parser.add_argument("--tiny-input", type=snippet.positive_float, default=1e-8, help="scale of one input")
parser.add_argument("--loss-weight", type=snippet.positive_float, default=1e-6, help="a small loss weight")
parser.add_argument(
    "--kink-distance", type=snippet.positive_float, default=1e-7, help="ReLU input's distance to 0"
)
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)
normwise = check.normwise_rel_error  # ||g - g_ref|| / ||g_ref|| over all parameters

X = rng.normal(size=(16, 4))
y = rng.normal(size=(16, 1))
params = models.init_mlp([4, args.width, args.width, 1], "glorot", rng)


def loss(p, X=X, y=y):
    return ops.mean((models.mlp(p, X, "tanh") - y) ** 2)


reference = engine.grad(loss, params)
n_params = sum(p.size for p in params)
results.number("n_params", n_params, "parameters of the small tanh network")
agreement = check.compare(loss, params, ("reverse", "forward", "complex"))
for method, name in (("complex", "complex step"), ("forward", "forward mode")):
    about = f"reverse mode vs {name}, float64, largest relative error"
    results.number(f"reference_vs_{method}", agreement[f"reverse vs {method}"], about, atol=1e-12)


# %% [markdown]
# ## The step-size trade-off
# Central differences in float64 and float32 (the float32 reference is reverse mode in float64
# on the same float32-rounded parameters, so only the arithmetic differs), and the complex step,
# for steps h from 1 down to 1e-13.

# %%
steps = np.logspace(0, -13, 40)
float32_min_step = 1e-6
results.number("float32_min_step", float32_min_step, "smallest step tried in float32")
params32 = [p.astype(np.float32) for p in params]
reference32 = engine.grad(loss, [p.astype(np.float64) for p in params32])
X32, y32 = X.astype(np.float32), y.astype(np.float32)
errors = {"float64": [], "float32": [], "complex step": []}
for h in steps:
    errors["float64"].append(normwise(numerical.central_difference(loss, params, h=h), reference))
    # below about eps * |x| a float32 step rounds away (x + h == x - h): no quotient to take
    float32_ok = h >= float32_min_step
    errors["float32"].append(
        normwise(numerical.central_difference(lambda p: loss(p, X32, y32), params32, h=h), reference32)
        if float32_ok
        else np.nan
    )
    errors["complex step"].append(normwise(numerical.complex_step(loss, params, h=h), reference))

best_h, best_error = {}, {}
for name in ("float64", "float32"):
    eps, best = np.finfo(name).eps, int(np.nanargmin(errors[name]))
    best_h[name], best_error[name] = steps[best], errors[name][best]
    for key, value, about, tolerance in (
        ("best_h", best_h[name], "step with the smallest central-difference error", {"rtol": 1}),
        ("best_error", best_error[name], "that smallest error", {"atol": 100 * eps ** (2 / 3)}),
        ("theory_h", eps ** (1 / 3), "eps^(1/3), the step that balances the errors", {}),
        ("eps", eps, "machine epsilon", {}),
    ):
        results.number(f"{key}_{name}", value, f"{about}, {name}", **tolerance)
complex_worst = max(e for e, h in zip(errors["complex step"], steps, strict=True) if h <= 1e-7)
results.number("complex_worst_error", complex_worst, "largest complex-step error for h <= 1e-7", atol=1e-13)
eps_ratio = np.finfo(np.float32).eps / np.finfo(np.float64).eps
results.number("eps_ratio", eps_ratio, "float32 eps / float64 eps")
about = "(float32 eps / float64 eps)^(2/3), the best-error ratio the eps^(2/3) rule predicts"
results.number("predicted_error_ratio", float(eps_ratio) ** (2 / 3), about)
about = "best float32 check error / best float64 check error"
results.number("best_error_ratio", best_error["float32"] / best_error["float64"], about, rtol=1)
tiny_step = 1e-200
tiny_error = normwise(numerical.complex_step(loss, params, h=tiny_step), reference)
results.number("complex_tiny_h", tiny_step, "a step far below any cancellation threshold")
results.number("complex_tiny_h_error", tiny_error, "complex-step error with that step", atol=1e-13)

fig, ax = plt.subplots()
for name, marker in zip(errors, "os^", strict=True):
    label = f"central differences, {name}" if name != "complex step" else "complex step, float64"
    ax.loglog(steps, errors[name], marker=marker, markersize=3, label=label)
cube_roots = [numerical.default_step(name) for name in ("float64", "float32")]
ax.vlines(cube_roots, 0, 1, transform=ax.get_xaxis_transform(), colors=plot.PALETTE[4], linestyles=":", lw=1)
ax.collections[-1].set_label("ε^(1/3), float64 and float32")
ax.invert_xaxis()
ax.set(
    title="Gradient-check error against the step h",
    xlabel="step h (log scale, shrinking →)",
    ylabel="norm-wise relative error (log scale)",
)
ax.legend()
results.figure(
    fig,
    "step_size",
    alt=f"Central-difference error falls as h shrinks until rounding takes over, a V in each precision: "
    f"smallest at h = {best_h['float64']:.0e} in float64 (eps^(1/3) = {cube_roots[0]:.1e}) and at "
    f"h = {best_h['float32']:.0e} in float32 (eps^(1/3) = {cube_roots[1]:.1e}); the complex step's "
    f"error stays below {complex_worst:.0e} for every h <= 1e-07.",
)

# %% [markdown]
# ## A kink fools the check
# A ReLU network with one hidden pre-activation moved to `--kink-distance` from zero. A
# central difference with a step larger than that distance straddles the kink.

# %%
relu_params = models.init_mlp([4, args.width, 1], "he", rng)
x_one = X[:1]
z = x_one @ relu_params[0] + relu_params[1]
unit = int(np.argmin(np.abs(z)))
relu_params[1][unit] -= z[0, unit] - args.kink_distance  # pre-activation now = +kink_distance


def relu_loss(p):
    return ops.sum(models.mlp(p, x_one, "relu") ** 2)


small_step_factor = 100
relu_reference = engine.grad(relu_loss, relu_params)
default = numerical.central_difference(relu_loss, relu_params)
small = numerical.central_difference(relu_loss, relu_params, h=args.kink_distance / small_step_factor)
kink_error = check.max_rel_error(relu_reference, default)
normwise_default, normwise_small = normwise(default, relu_reference), normwise(small, relu_reference)
forward_error = check.max_rel_error(relu_reference, check.METHODS["forward"](relu_loss, relu_params))
complex_kink = normwise(numerical.complex_step(relu_loss, relu_params), relu_reference)  # h = 1e-20
for key, value, about, tolerance in (
    ("kink_distance", args.kink_distance, "distance of the chosen pre-activation from the kink", {}),
    ("kink_default_h", numerical.default_step(), "default central-difference step at |x| <= 1", {}),
    ("kink_error_default_h", kink_error, "largest relative error, default step", {"rtol": 1e-3}),
    ("kink_small_step_factor", small_step_factor, "how much smaller than the distance the small step is", {}),
    ("kink_normwise_default_h", normwise_default, "norm-wise relative error, default step", {"rtol": 1e-3}),
    ("kink_normwise_small_h", normwise_small, "norm-wise relative error, the small step", {"atol": 1e-5}),
    ("kink_reverse_vs_forward", forward_error, "reverse vs forward mode at the same point", {"atol": 1e-12}),
    (
        "kink_complex_error",
        complex_kink,
        "norm-wise relative error, complex step (h = 1e-20)",
        {"atol": 1e-13},
    ),
):
    results.number(key, value, about, **tolerance)

# %% [markdown]
# ## A planted bug
# A sigmoid whose backward rule forgot the factor $(1-\sigma)$: the check against central
# differences catches it; the correct rule passes.

# %%


def sigmoid_forgot_factor(t):
    """The sigmoid, with a reverse-mode rule that forgot the factor (1 - y)."""
    if not isinstance(t, engine.Tensor):
        return ops.sigmoid(t)  # the other methods see the function itself
    y = 1 / (1 + np.exp(-t.data))
    return t._unary("sigmoid (buggy)", y, lambda x, y: y)  # should be y * (1 - y)


def sigmoid_loss(p, sigmoid=ops.sigmoid, X=X, weight=1.0):
    W, b = p
    return weight * ops.mean((sigmoid(X @ W + b) - 0.5) ** 2)


sig_params = [rng.normal(size=(4, 3)), np.zeros(3)]
expected = numerical.central_difference(sigmoid_loss, sig_params)
buggy_loss = functools.partial(sigmoid_loss, sigmoid=sigmoid_forgot_factor)
buggy = engine.grad(buggy_loss, sig_params)
correct = engine.grad(sigmoid_loss, sig_params)
bug_error, fixed_error = check.max_rel_error(buggy, expected), check.max_rel_error(correct, expected)
results.number("bug_error", bug_error, "buggy rule vs central differences", rtol=1e-6)
results.number("fixed_error", fixed_error, "correct rule vs central differences", atol=1e-7)
orders = round(float(np.log10(bug_error / fixed_error)))
results.number("bug_orders_of_magnitude", orders, "orders of magnitude between the two errors")
results.claim("bug_separated", orders >= 6, "the bug's error is at least 1e6 times the correct one's")
try:
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
    grads["buggy"] = engine.grad(functools.partial(f, sigmoid=sigmoid_forgot_factor), p_t)
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
separates = max(directional["correct"]) < 1e-7 and min(directional["buggy"]) > 1e-2
results.claim("direction_separates", separates, "random direction: correct < 1e-7, buggy > 1e-2", directional)
straddles = args.kink_distance < numerical.default_step()
kink_ok = complex_kink < 1e-14 and (normwise_default > 1e-3) == straddles
results.claim("complex_step_at_kink", kink_ok, "complex step < 1e-14; default step > 1e-3 iff it straddles")

# %%
results.save()
