"""Stable formulations: softmax, log-sum-exp and cross-entropy written naively and stably

Each function as two programs on the logits c·[1, 0, −1], c swept over five orders of magnitude in
float32 and float64: where the naive one overflows or underflows and what its gradient is there; a
max-subtracting softmax followed by a log; binary cross-entropy with log1p; a log clamped at -100.
Quoted by docs/stable-formulations.md.
"""

# %% [markdown]
# The naive program computes $e^{z}$ and normalizes; the stable one subtracts $m = \max_j z_j$:
# $\mathrm{logsumexp}(z) = m + \log \sum_j e^{z_j - m}$. Both are in `gradlab/losses.py`.

# %%
import decimal
import itertools

import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, losses, ops, plot, snippet
from gradlab.sweep import evaluate, largest_finite_scale, relative_error

parser = snippet.parser(__doc__)
parser.add_argument("--label", type=int, choices=[0, 1, 2], default=2, help="true class (2: smallest logit)")
parser.add_argument("--scale", type=snippet.positive_float, default=10.0, help="c where both are finite")
parser.add_argument("--overflow-scale", type=snippet.positive_float, default=1000.0, help="c past overflow")
parser.add_argument("--points", type=snippet.positive_int, default=241, help="scales in the sweep")
parser.add_argument("--confident-logit", type=float, default=50.0, help="a confident right logit (label 1)")
parser.add_argument("--bce-logit", type=float, default=-200.0, help="a confidently wrong logit (label 1)")
args, results = snippet.parse(parser)
direction = np.array([1.0, 0.0, -1.0])
PRECISIONS = {"float32": np.float32, "float64": np.float64}
PROGRAMS = {"softmax": (losses.naive_softmax, losses.stable_softmax),
            "logsumexp": (losses.naive_logsumexp, losses.stable_logsumexp),
            "cross_entropy": (lambda z: losses.naive_cross_entropy(z, args.label),
                              lambda z: losses.stable_cross_entropy(z, args.label))}  # fmt: skip

# %% [markdown]
# ## Where floating point runs out
# $e^x$ overflows above $\ln(\text{largest float})$, rounds to 0 below $\ln(\text{smallest subnormal}/2)$;
# $1 + e^{-z}$ rounds to 1 from $z = -\ln(\epsilon/2)$. All from `np.finfo`, not from memory.

# %%
for name, dtype in PRECISIONS.items():
    info = np.finfo(dtype)
    results.number(f"exp_overflow_{name}", np.log(np.float64(info.max)), f"{name}: exp(x) = inf above this x")
    underflow = np.log(np.float64(info.smallest_subnormal)) - np.log(2)
    results.number(f"exp_underflow_{name}", underflow, f"{name}: exp(x) rounds to 0 below this x")
    results.number(f"one_plus_exp_{name}", -np.log(np.float64(info.eps) / 2), f"{name}: 1 + e^-z = 1 from z")
results.number("label", args.label, "true class of the cross-entropy (logits c·[1, 0, -1])")

# %% [markdown]
# ## The sweep
# For every scale $c$, each naive program in each precision against the stable program in
# float64 (the reference): relative error, normwise for the softmax vector. Non-finite results
# are marked. Then the largest finite scale of each program, refined by bisection. (In the
# float64 panel the stable program is its own reference, so its error line sits at the floor.)

# %%
scales = np.logspace(-1, 4, args.points)
errors = {}
naive_limits = {name: [] for name in PRECISIONS}
for program_name, (naive, stable) in PROGRAMS.items():
    reference = [evaluate(stable, c, direction, np.float64) for c in scales]
    for name, dtype in PRECISIONS.items():
        values = [evaluate(naive, c, direction, dtype) for c in scales]
        errors[program_name, name] = np.array(list(map(relative_error, values, reference)))
        for kind, program in (("naive", naive), ("stable", stable)):
            limit = largest_finite_scale(program, direction, dtype, scales)
            if kind == "naive":
                naive_limits[name].append(limit)
            about = f"{name} {kind} {program_name}: last finite c"
            results.number(f"limit_{kind}_{program_name}_{name}", limit, about)
results.number("sweep_max_scale", scales[-1], "largest logit scale c in the sweep")
for name in PRECISIONS:  # the naive cross-entropy loses digits while its probability is subnormal
    error = errors["cross_entropy", name]
    worst, atol = error[np.isfinite(error)].max(), 1e-4 if name == "float32" else 1e-8
    results.number(f"naive_ce_worst_finite_error_{name}", worst, f"{name}: worst CE error", atol=atol)

# %%
fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.8), sharey=True)
floor = 1e-17  # an error of exactly 0 is drawn here
stable_worst = 0.0
for ax, (name, dtype) in zip(axes, PRECISIONS.items(), strict=True):
    for color, marker_level, program_name in zip(plot.PALETTE, (1e3, 1e2, 1e1), PROGRAMS, strict=False):
        error = errors[program_name, name]
        shown = np.where(np.isfinite(error), np.maximum(error, floor), np.nan)
        ax.plot(scales, shown, color=color, label=program_name)
        bad = ~np.isfinite(error)
        ax.plot(scales[bad], np.full(bad.sum(), marker_level), "x", color=color, markersize=4)
    stable = PROGRAMS["cross_entropy"][1]
    stable_error = [
        relative_error(*(evaluate(stable, c, direction, d) for d in (dtype, np.float64))) for c in scales
    ]
    stable_worst = max(stable_worst, max(stable_error))
    style = dict(color=plot.PALETTE[3], lw=1, label="stable cross_entropy")
    ax.plot(scales, np.maximum(stable_error, floor), "--", **style)
    ax.axvline(np.log(np.finfo(dtype).max), color=plot.PALETTE[4], linestyle=":", label="ln(max float)")
    ax.set(xscale="log", yscale="log", title=f"{name}", xlabel="logit scale c (log scale)")
axes[0].set_ylabel("relative error vs float64 stable\n(log scale; × = inf or NaN)")
axes[1].legend(loc="center left")
fig.suptitle("Naive programs are accurate until they return inf or NaN; stable ones stay finite")
reach = " and ".join(f"{min(lim):.0f} to {max(lim):.0f} in {name}" for name, lim in naive_limits.items())
results.figure(fig, "naive_error_sweep", alt="Relative error of the naive softmax, log-sum-exp and "
               "cross-entropy against a float64 stable reference, over logit scale c: finite until c "
               f"reaches {reach}, then inf or NaN; the stable cross-entropy stays finite, with relative "
               f"error at most {stable_worst:.0e}, over the whole sweep to c = {scales[-1]:g}.")  # fmt: skip


# %% [markdown]
# ## The gradients of the two programs
# At $c$ = `--scale` both programs are finite: reverse mode, forward mode, central differences
# and the complex step agree on each, and the two programs agree with each other. At
# $c$ = `--overflow-scale` the naive program is NaN, and so is every method that evaluates it;
# the stable program's gradient is exactly $\mathrm{softmax}(z) - \text{one\_hot}$.


# %%
cross_entropy = lambda program: lambda params: ops.sum(program(params[0], args.label))  # noqa: E731


naive_ce, stable_ce = cross_entropy(losses.naive_cross_entropy), cross_entropy(losses.stable_cross_entropy)
z_small = args.scale * direction
comparisons = [check.compare(program, [z_small]) for program in (naive_ce, stable_ce)]
for method in ("forward", "central", "complex"):  # np.max keeps a NaN: a NaN gradient agrees with nothing
    naive, stable = (c[f"reverse vs {method}"] for c in comparisons)
    atol, about = 1e-4 if method == "central" else 1e-12, f"c = {args.scale:g}: reverse vs {method}"
    results.number(f"disagreement_{method}", float(np.max([naive, stable])), about, atol=atol)
    results.number(f"stable_disagreement_{method}", stable, f"{about}, stable program", atol=atol)
gradients = [check.engine.grad(program, [z_small]) for program in (naive_ce, stable_ce)]
results.number("programs_disagreement", check.max_rel_error(*gradients), "naive vs stable gradient",
               atol=1e-10)  # fmt: skip

z_big = args.overflow_scale * direction
with np.errstate(all="ignore"):
    failed = [not np.all(np.isfinite(method(naive_ce, [z_big])[0])) for method in check.METHODS.values()]
    succeeded = [np.all(np.isfinite(method(stable_ce, [z_big])[0])) for method in check.METHODS.values()]
results.number("methods_nan_naive", sum(failed), f"c = {args.overflow_scale:g}: methods non-finite, naive")
results.number("methods_finite_stable", sum(succeeded),
               f"c = {args.overflow_scale:g}: methods finite, stable")  # fmt: skip
results.number("methods_total", len(check.METHODS), "differentiation methods tried")

exact = np.exp(z_big - z_big.max()) / np.exp(z_big - z_big.max()).sum() - np.eye(3)[args.label]
for name, dtype in PRECISIONS.items():
    z = z_big.astype(dtype)
    with np.errstate(all="ignore"):
        naive_grad = check.engine.grad(naive_ce, [z])[0]
    stable_grad = check.engine.grad(stable_ce, [z])[0]
    results.number(f"naive_grad_nan_{name}", np.isnan(naive_grad).mean(),
                   f"{name}: naive gradient, NaN share")  # fmt: skip
    error = np.abs(stable_grad - exact).max()
    results.number(f"stable_grad_error_{name}", error, f"{name}: |stable grad - exact|", atol=1e-6)
    print(f"c = {args.overflow_scale:g} {name}: naive grad {naive_grad}, stable grad {stable_grad}")
results.number("overflow_scale", args.overflow_scale, "logit scale c past overflow")
results.number("scale", args.scale, "logit scale c where both programs are finite")

# %% [markdown]
# ## A library softmax, then a log; the binary case; a clamped log
# A max-subtracting softmax never overflows, but its log underflows: $p_y = 0$, loss $-\log 0 = \infty$,
# gradient $(-1/p) \cdot 0$ = NaN. Binary cross-entropy (label 1) is softplus$(-z)$: as log-sum-exp of
# $[0, z]$, $\log(1 + e^{-50})$ rounds to 0; as $\max(-z, 0) + \operatorname{log1p}(e^{-|z|})$ it
# does not (reference: 60-digit decimals). Last, `BCELoss`'s documented clamp of log at $-100$, emulated.


# %%
def softmax_then_log(z):
    return -ops.log(losses.stable_softmax(z))[..., args.label]


for name, dtype in PRECISIONS.items():
    limit = largest_finite_scale(softmax_then_log, direction, dtype, scales)
    results.number(f"limit_softmax_then_log_{name}", limit, f"{name} log of stable softmax: last finite c")
    with np.errstate(all="ignore"):
        value = float(evaluate(softmax_then_log, args.overflow_scale, direction, dtype))
        grad = check.engine.grad(lambda p: ops.sum(softmax_then_log(p[0])), [z_big.astype(dtype)])[0]
    results.number(f"softmax_then_log_inf_{name}", bool(value == np.inf), f"{name}: its loss is +inf at c")
    results.number(f"softmax_then_log_nan_{name}", np.isnan(grad).mean(), f"{name}: its gradient, NaN share")
with decimal.localcontext() as context:
    context.prec = 60
    bce_reference = float((1 + decimal.Decimal(-args.confident_logit).exp()).ln())
results.number("confident_logit", args.confident_logit, "logit z of a confident right answer (label 1)")
results.number("bce_reference", bce_reference, "log(1 + e^-z), 60-digit decimal reference")
BCE = dict(naive=losses.naive_binary_cross_entropy_from_logits,
           stable=losses.binary_cross_entropy_from_logits)  # fmt: skip
for (name, dtype), (kind, bce) in itertools.product(PRECISIONS.items(), BCE.items()):
    value = float(bce(np.array([args.confident_logit], dtype=dtype), np.ones(1))[0])
    results.number(f"bce_{kind}_{name}", value, f"{name} {kind} BCE at z", rtol=1e-5)
for name, dtype in PRECISIONS.items():  # the log-sum-exp form with log1p inside: z + log1p(e^-z) - z
    z = dtype(args.confident_logit)
    results.number(f"bce_lse_log1p_{name}", float(z + np.log1p(np.exp(-z)) - z), "z + log1p(e^-z) - z")
with np.errstate(all="ignore"):  # label 1, float32: sigmoid(z) rounds to 0 below about z = -104
    probability = float(ops.sigmoid(np.array([args.bce_logit], dtype=np.float32))[0])
    clamped = -max(float(np.log(np.float32(probability))), -100.0)  # the documented clamp, emulated
true_loss = float(losses.binary_cross_entropy_from_logits(np.array([args.bce_logit]), np.ones(1))[0])
results.number("bce_logit", args.bce_logit, "logit z of a confidently wrong answer (label 1)")
results.number("bce_probability_float32", probability, "sigmoid(z) in float32")
results.number("bce_clamped_loss", clamped, "probability loss with log clamped at -100 (emulated)")
results.number("bce_true_loss", true_loss, "binary cross-entropy from the logit, float64")
v = {key: entry["value"] for key, entry in results.numbers.items()}
limits = [v[f"limit_softmax_then_log_{p}"] for p in PRECISIONS]
half_underflow = [limit / (-v[f"exp_underflow_{p}"] / 2) for limit, p in zip(limits, PRECISIONS, strict=True)]
fails = [v[f"softmax_then_log_inf_{p}"] and v[f"softmax_then_log_nan_{p}"] > 0 for p in PRECISIONS]
past = [fail == (args.overflow_scale > limit) for fail, limit in zip(fails, limits, strict=True)]
same = [abs(v[f"limit_naive_cross_entropy_{p}"] / limit - 1) < 1e-3
        for limit, p in zip(limits, PRECISIONS, strict=True)]  # fmt: skip
halves = all(abs(r - 1) < 1e-3 for r in half_underflow) and all(same)
underflow = all(past) and (args.label != 2 or halves)
statement = "softmax then log: finite to half the underflow limit (as naive CE); then inf loss, NaN gradient"
results.claim("softmax_then_log_underflows", underflow, statement, {"ratio": half_underflow, "past": past})
bce = [v[f"bce_naive_{p}"] == 0 and abs(v[f"bce_stable_{p}"] / bce_reference - 1) < 1e-6 for p in PRECISIONS]
bce = all(bce) and all(v[f"bce_lse_log1p_{p}"] == 0 for p in PRECISIONS)
statement = "BCE at z: log-sum-exp gives 0, even with log1p inside (z + tiny - z); softplus the reference"
results.claim("naive_bce_rounds_to_zero", bce, statement)
clamp_ok = probability == 0 and clamped == 100.0 and true_loss > 100.0
results.claim("clamp_hides_underflow", clamp_ok, "p rounds to 0; the clamped loss is 100, not the true loss")
worst = [np.max(e[np.isfinite(e)]) / np.finfo(p).eps for (g, p), e in errors.items() if g != "cross_entropy"]
results.claim("accurate_until_limit", max(worst) < 10, "naive softmax, log-sum-exp: finite errors < 10 eps")
stable_all = all(v[f"limit_stable_{g}_{p}"] == scales[-1] for g in PROGRAMS for p in PRECISIONS)
n_methods = len(check.METHODS)
past_limit = args.overflow_scale > v["limit_naive_cross_entropy_float64"]  # then every method fails
together = v["methods_nan_naive"] == n_methods * past_limit and v["methods_finite_stable"] == n_methods
statement = "stable: finite over the sweep; naive: every method fails past its float64 limit, none below"
results.claim("stable_finite", stable_all and together, statement)
c, p_big = args.overflow_scale, np.asarray(losses.stable_softmax(z_big))  # the answers' sentences, below
to_max = [abs(v[f"limit_naive_cross_entropy_{p}"] / v[f"exp_overflow_{p}"] - 1) < 1e-3 for p in PRECISIONS]
half32 = abs(v["limit_naive_cross_entropy_float32"] / (-v["exp_underflow_float32"] / 2) - 1) < 1e-3
big_loss = float(evaluate(softmax_then_log, c, direction, np.float64))
grad, central = gradients[1][0], check.METHODS["central"](stable_ce, [z_small])[0]  # the stable program's
naive_loss_small = evaluate(PROGRAMS["cross_entropy"][0], args.scale, direction, np.float64)
rel, tiny = check.rel_error(grad, central), abs(grad[1] * np.exp(min(args.scale, 700)) - 1) < 0.01
for name, holds, statement in [
    ("naive_ce_overflow_only", all(to_max), "The naive cross-entropy stays finite up to ln(max) of each "
     "precision, to 0.1%, and no further."),
    ("softmax_log_loss_finite", np.isfinite(big_loss) and np.all(np.delete(p_big, args.label) == 0),
     f"The max-subtracting softmax followed by a log gives a finite loss in float64 at c = {c:g}, and the "
     "other classes' probabilities round to exactly 0, so their logs are −∞."),
    ("float32_nan_by_underflow", v["limit_naive_cross_entropy_float32"] < c < v["exp_overflow_float32"]
     and half32 and v["naive_grad_nan_float32"] == 1, f"The naive float32 gradient is NaN at c = {c:g}, "
     "below float32's overflow threshold: c is past the naive cross-entropy's float32 limit, half the "
     "size of e^x's underflow threshold."),
    ("float64_grad_finite", v["methods_nan_naive"] == 0, f"At c = {c:g} the naive float64 gradient is "
     "finite in every entry, by every method."),
    ("central_zero_on_tiny_entry", rel.argmax() == 1 and max(rel[0], rel[2]) < 1e-6 and tiny
     and central[1] == 0, "In the stable program the disagreement sits on the middle class's entry, "
     "e^(−c) to 1%, which central differences return as exactly 0; the other entries agree to 10⁻⁶."),
    ("naive_reverse_nan", np.all(np.isnan(gradients[0][0])) and np.isfinite(naive_loss_small),
     f"At c = {args.scale:g} the naive program's loss is finite, but its reverse-mode gradient is NaN."),
]:  # fmt: skip
    results.claim(name, bool(holds), statement, answer=True)
results.save()
