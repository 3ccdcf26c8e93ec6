"""Stable formulations: softmax, log-sum-exp and cross-entropy written naively and stably

The same three functions written as two programs each, evaluated on the logits c·[1, 0, −1]
with the scale c swept over five orders of magnitude in float32 and float64: where the naive
program overflows or underflows, what its gradient is there, and that every differentiation
method fails (or succeeds) together. Quoted by docs/stable-formulations.md.
"""

# %% [markdown]
# Two programs for one function. The naive one computes $e^{z}$ and normalizes; the stable one
# subtracts $m = \max_j z_j$ first, so every exponent is $\le 0$:
# $\mathrm{logsumexp}(z) = m + \log \sum_j e^{z_j - m}$ and
# $\log \mathrm{softmax}(z) = z - \mathrm{logsumexp}(z)$. Both are in `gradlab/losses.py`,
# written with `gradlab.ops`, so every differentiation method runs on exactly these programs.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, losses, ops, plot, snippet

parser = snippet.parser(__doc__)
parser.add_argument(
    "--label", type=int, choices=[0, 1, 2], default=2, help="true class (2: the smallest logit)"
)
parser.add_argument(
    "--scale", type=snippet.positive_float, default=10.0, help="logit scale c where both are finite"
)
parser.add_argument(
    "--overflow-scale", type=snippet.positive_float, default=1000.0, help="logit scale c past overflow"
)
parser.add_argument("--points", type=snippet.positive_int, default=241, help="scales in the sweep")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)  # unused: everything here is deterministic
direction = np.array([1.0, 0.0, -1.0])
PRECISIONS = {"float32": np.float32, "float64": np.float64}
PROGRAMS = {
    "softmax": (losses.naive_softmax, losses.stable_softmax),
    "logsumexp": (losses.naive_logsumexp, losses.stable_logsumexp),
    "cross_entropy": (
        lambda z: losses.naive_cross_entropy(z, args.label),
        lambda z: losses.stable_cross_entropy(z, args.label),
    ),
}

# %% [markdown]
# ## Where floating point runs out
# $e^x$ overflows to inf above $\ln(\text{largest float})$ and rounds to 0 below
# $\ln(\text{smallest subnormal} / 2)$. Both limits come from `np.finfo`, not from memory.

# %%
for name, dtype in PRECISIONS.items():
    info = np.finfo(dtype)
    results.number(f"exp_overflow_{name}", np.log(np.float64(info.max)), f"{name}: exp(x) = inf above this x")
    underflow = np.log(np.float64(info.smallest_subnormal)) - np.log(2)
    results.number(f"exp_underflow_{name}", underflow, f"{name}: exp(x) rounds to 0 below this x")
results.number("label", args.label, "true class of the cross-entropy (logits c·[1, 0, -1])")


# %% [markdown]
# ## The sweep
# For every scale $c$, each naive program in each precision against the stable program in
# float64 (the reference): relative error, normwise for the softmax vector. Non-finite results
# are marked. Then the largest finite scale of each program, refined by bisection. (In the
# float64 panel the stable program is its own reference, so its error line sits at the floor.)


# %%
def evaluate(program, c, dtype):
    with np.errstate(all="ignore"):
        return np.asarray(program((c * direction).astype(dtype)), dtype=np.float64)


def relative_error(value, reference):
    if not np.all(np.isfinite(value)):
        return np.inf
    size = np.linalg.norm(reference)  # 0 when the loss itself rounds to 0 (label 0, large c)
    difference = np.linalg.norm(value - reference)
    return difference / size if size > 0 else difference


def largest_finite_scale(program, dtype, grid):
    finite = [np.all(np.isfinite(evaluate(program, c, dtype))) for c in grid]
    if all(finite):
        return grid[-1]  # finite over the whole sweep
    low, high = grid[finite.index(False) - 1], grid[finite.index(False)]
    for _ in range(60):  # the boundary between the last finite and the first non-finite scale
        middle = 0.5 * (low + high)
        low, high = (middle, high) if np.all(np.isfinite(evaluate(program, middle, dtype))) else (low, middle)
    return low


scales = np.logspace(-1, 4, args.points)
errors = {}
naive_limits = {name: [] for name in PRECISIONS}
for program_name, (naive, stable) in PROGRAMS.items():
    reference = [evaluate(stable, c, np.float64) for c in scales]
    for name, dtype in PRECISIONS.items():
        errors[program_name, name] = np.array(
            [relative_error(evaluate(naive, c, dtype), ref) for c, ref in zip(scales, reference, strict=True)]
        )
        for kind, program in (("naive", naive), ("stable", stable)):
            limit = largest_finite_scale(program, dtype, scales)
            if kind == "naive":
                naive_limits[name].append(limit)
            results.number(
                f"limit_{kind}_{program_name}_{name}",
                limit,
                f"{name} {kind} {program_name}: largest finite c",
            )
results.number("sweep_max_scale", scales[-1], "largest logit scale c in the sweep")
for name in PRECISIONS:  # the naive cross-entropy loses digits while its probability is subnormal
    error = errors["cross_entropy", name]
    results.number(
        f"naive_ce_worst_finite_error_{name}",
        error[np.isfinite(error)].max(),
        f"{name}: worst finite naive CE error",
        atol=1e-4 if name == "float32" else 1e-8,
    )

# %%
fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.8), sharey=True)
floor = 1e-17  # an error of exactly 0 is drawn here
stable_worst = 0.0
for ax, name in zip(axes, PRECISIONS, strict=True):
    for color, marker_level, program_name in zip(plot.PALETTE, (1e3, 1e2, 1e1), PROGRAMS, strict=False):
        error = errors[program_name, name]
        ax.plot(
            scales,
            np.where(np.isfinite(error), np.maximum(error, floor), np.nan),
            color=color,
            label=program_name,
        )
        bad = ~np.isfinite(error)
        ax.plot(scales[bad], np.full(bad.sum(), marker_level), "x", color=color, markersize=4)
    stable_error = [
        relative_error(
            evaluate(PROGRAMS["cross_entropy"][1], c, PRECISIONS[name]),
            evaluate(PROGRAMS["cross_entropy"][1], c, np.float64),
        )
        for c in scales
    ]
    stable_worst = max(stable_worst, max(stable_error))
    ax.plot(
        scales,
        np.maximum(stable_error, floor),
        "--",
        color=plot.PALETTE[3],
        lw=1,
        label="stable cross_entropy",
    )
    ax.axvline(
        np.log(np.finfo(PRECISIONS[name]).max), color=plot.PALETTE[4], linestyle=":", label="ln(max float)"
    )
    ax.set(xscale="log", yscale="log", title=f"{name}", xlabel="logit scale c (log scale)")
axes[0].set_ylabel("relative error vs float64 stable\n(log scale; × = inf or NaN)")
axes[1].legend(loc="center left")
fig.suptitle("Naive programs are accurate until they return inf or NaN; stable ones stay finite")
results.figure(
    fig,
    "naive_error_sweep",
    alt="Relative error of the naive softmax, log-sum-exp and cross-entropy against a float64 stable "
    "reference, over logit scale c: finite until c reaches "
    + " and ".join(
        f"{min(limits):.0f} to {max(limits):.0f} in {name}" for name, limits in naive_limits.items()
    )
    + f", then inf or NaN; the stable cross-entropy stays finite, with relative error at most "
    f"{stable_worst:.0e}, over the whole sweep to c = {scales[-1]:g}.",
)


# %% [markdown]
# ## The gradients of the two programs
# At $c$ = `--scale` both programs are finite: reverse mode, forward mode, central differences
# and the complex step agree on each, and the two programs agree with each other. At
# $c$ = `--overflow-scale` the naive program is NaN, and so is every method that evaluates it;
# the stable program's gradient is exactly $\mathrm{softmax}(z) - \text{one\_hot}$.


# %%
def cross_entropy(program):
    return lambda params: ops.sum(program(params[0], args.label))


naive_ce, stable_ce = cross_entropy(losses.naive_cross_entropy), cross_entropy(losses.stable_cross_entropy)
z_small = args.scale * direction
comparisons = [check.compare(program, [z_small]) for program in (naive_ce, stable_ce)]
for method in ("forward", "central", "complex"):
    worst = max(comparison[f"reverse vs {method}"] for comparison in comparisons)
    tolerance = 1e-4 if method == "central" else 1e-12  # central differences: truncation + rounding
    results.number(
        f"disagreement_{method}",
        worst,
        f"c = {args.scale:g}: reverse vs {method}, both programs",
        atol=tolerance,
    )
programs_disagreement = check.max_rel_error(
    check.engine.grad(naive_ce, [z_small]), check.engine.grad(stable_ce, [z_small])
)
results.number(
    "programs_disagreement", programs_disagreement, "naive vs stable reverse-mode gradient", atol=1e-10
)

z_big = args.overflow_scale * direction
with np.errstate(all="ignore"):
    failed = {
        name: not np.all(np.isfinite(method(naive_ce, [z_big])[0])) for name, method in check.METHODS.items()
    }
    succeeded = {
        name: np.all(np.isfinite(method(stable_ce, [z_big])[0])) for name, method in check.METHODS.items()
    }
results.number(
    "methods_nan_naive", sum(failed.values()), f"c = {args.overflow_scale:g}: methods non-finite, naive"
)
results.number(
    "methods_finite_stable", sum(succeeded.values()), f"c = {args.overflow_scale:g}: methods finite, stable"
)
results.number("methods_total", len(check.METHODS), "differentiation methods tried")

exact = np.exp(z_big - z_big.max()) / np.exp(z_big - z_big.max()).sum() - np.eye(3)[args.label]
for name, dtype in PRECISIONS.items():
    z = z_big.astype(dtype)
    with np.errstate(all="ignore"):
        naive_grad = check.engine.grad(naive_ce, [z])[0]
    stable_grad = check.engine.grad(stable_ce, [z])[0]
    results.number(
        f"naive_grad_nan_{name}", np.isnan(naive_grad).mean(), f"{name}: naive gradient, NaN fraction"
    )
    error = np.abs(stable_grad - exact).max()
    results.number(
        f"stable_grad_error_{name}", error, f"{name}: |stable grad - (softmax - one_hot)|", atol=1e-6
    )
    print(f"c = {args.overflow_scale:g} {name}: naive grad {naive_grad}, stable grad {stable_grad}")
results.number("overflow_scale", args.overflow_scale, "logit scale c past overflow")
results.number("scale", args.scale, "logit scale c where both programs are finite")

# %%
results.save()
