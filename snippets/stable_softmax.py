"""Stable formulations: softmax, log-sum-exp and cross-entropy written naively and stably

Each function as two programs on the logits c·[1, 0, −1], c from 0.1 to 10⁴, in float32 and float64:
where the naive one and its gradient overflow or underflow, and what each differentiation method returns
there; a max-subtracting softmax followed by a log; binary cross-entropy with log1p. Quoted by
docs/stable-formulations.md (PyTorch's BCELoss: frameworks/stable_softmax_torch.py).
"""

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
# ## Where floating point runs out (from `np.finfo`; float16 for comparison)
# $e^x = \infty$ above $\ln(\text{max})$, $0$ below $\ln(\text{smallest subnormal}/2)$; $1/e^{-2c} = \infty$
# above $c = \tfrac12\ln(\text{max})$; $1 + e^{-z} = 1$ from $z = -\ln(\epsilon/2)$.

# %%
for name, dtype in {"float16": np.float16, **PRECISIONS}.items():
    info, ln = np.finfo(dtype), lambda x: np.log(np.float64(x))
    results.number(f"exp_overflow_{name}", ln(info.max), f"{name}: exp(x) = inf above this x")
    results.number(f"grad_overflow_{name}", ln(info.max) / 2, f"{name}: 1/e^(-2c) = inf above c")
    results.number(f"exp_underflow_{name}", ln(info.smallest_subnormal) - ln(2), f"{name}: e^x = 0 below x")
    results.number(f"one_plus_exp_{name}", -ln(info.eps / 2), f"{name}: 1 + e^-z = 1 from z")
results.number("label", args.label, "true class of the cross-entropy (logits c·[1, 0, -1])")

# %% [markdown]
# ## The sweep
# Each naive program's relative error (normwise for the softmax) against the stable one in float64,
# non-finite results marked; the last finite $c$ of each program and its gradient, by bisection.

# %%
scales = np.logspace(-1, 4, args.points)
errors = {}
grad_of = lambda program: lambda z: check.engine.grad(lambda p: ops.sum(program(p[0])), [z])[0]  # noqa: E731
for program_name, (naive, stable) in PROGRAMS.items():
    reference = [evaluate(stable, c, direction, np.float64) for c in scales]
    for name, dtype in PRECISIONS.items():
        values = [evaluate(naive, c, direction, dtype) for c in scales]
        errors[program_name, name] = np.array(list(map(relative_error, values, reference)))
        for kind, program in (("naive", naive), ("stable", stable)):
            limit = largest_finite_scale(program, direction, dtype, scales)
            about = f"{name} {kind} {program_name}: last finite c"
            results.number(f"limit_{kind}_{program_name}_{name}", limit, about)
            if program_name != "softmax":  # a scalar: where its reverse-mode gradient stops being finite
                limit = largest_finite_scale(grad_of(program), direction, dtype, scales)
                results.number(f"limit_grad_{kind}_{program_name}_{name}", limit, f"{about}, gradient")
results.number("sweep_max_scale", scales[-1], "largest logit scale c in the sweep")
for name in PRECISIONS:  # the naive cross-entropy loses digits while its probability is subnormal
    error, atol = errors["cross_entropy", name], 1e-4 if name == "float32" else 1e-8
    worst = error[np.isfinite(error)].max()
    results.number(f"naive_ce_worst_finite_error_{name}", worst, f"{name}: worst CE error", atol=atol)

# %%
fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.8), sharey=True)
floor, stable_worst = 1e-17, 0.0  # an error of exactly 0 is drawn at the floor
for ax, (name, dtype) in zip(axes, PRECISIONS.items(), strict=True):
    for color, marker_level, program_name in zip(plot.PALETTE, (1e3, 1e2, 1e1), PROGRAMS, strict=False):
        error = errors[program_name, name]
        shown, bad = np.where(np.isfinite(error), np.maximum(error, floor), np.nan), ~np.isfinite(error)
        ax.plot(scales, shown, color=color, label=program_name)
        ax.plot(scales[bad], np.full(bad.sum(), marker_level), "x", color=color, markersize=4)
    stable = PROGRAMS["cross_entropy"][1]
    stable_error = [relative_error(*(evaluate(stable, c, direction, d) for d in (dtype, np.float64)))
                    for c in scales]  # fmt: skip
    stable_worst, style = max(stable_worst, max(stable_error)), dict(color=plot.PALETTE[3], lw=1)
    ax.plot(scales, np.maximum(stable_error, floor), "--", label="stable cross_entropy", **style)
    ax.axvline(np.log(np.finfo(dtype).max), color=plot.PALETTE[4], linestyle=":", label="ln(max float)")
    ax.set(xscale="log", yscale="log", title=f"{name}", xlabel="logit scale c (log scale)")
axes[0].set_ylabel("relative error vs float64 stable\n(log scale; × = inf or NaN)")
axes[1].legend(loc="center left")
fig.suptitle("Naive programs are accurate until they return inf or NaN; stable ones stay finite")
lims = {n: [results.numbers[f"limit_naive_{g}_{n}"]["value"] for g in PROGRAMS] for n in PRECISIONS}
reach = " and ".join(f"{min(lim):.0f} to {max(lim):.0f} in {name}" for name, lim in lims.items())
results.figure(fig, "naive_error_sweep", alt="Relative error of the naive softmax, log-sum-exp and "
               "cross-entropy against a float64 stable reference, over logit scale c: finite until c "
               f"reaches {reach}, then inf or NaN; the stable cross-entropy stays finite, with relative "
               f"error at most {stable_worst:.0e}, over the whole sweep to c = {scales[-1]:g}.")  # fmt: skip

# %% [markdown]
# ## The gradients of the two programs
# At $c$ = `--scale` the four methods agree on both. Then, in float64, the last $c$ where each method's
# gradient of the naive program is right (normwise to $10^{-6}$) and the last where it is finite.

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
results.number("programs_disagreement", check.max_rel_error(*gradients), "naive vs stable", atol=1e-10)
z_big, one_hot = args.overflow_scale * direction, np.eye(3)[args.label]
exact = lambda z: np.asarray(losses.stable_softmax(np.asarray(z, np.float64))) - one_hot  # noqa: E731
right = lambda g, z: bool(relative_error(g, exact(z)) < 1e-6)  # noqa: E731 (normwise; absolute where exact = 0)
finite = lambda g, z: bool(np.all(np.isfinite(g)))  # noqa: E731
kept = lambda m, test: lambda z: m(naive_ce, [z])[0] if test(m(naive_ce, [z])[0], z) else np.nan  # noqa: E731
outcome, stable_right = {}, 0  # per method at c = --overflow-scale: right, finite and wrong, non-finite
with np.errstate(all="ignore"):
    for method_name, method in check.METHODS.items():
        for kind, test in (("finite", finite), ("right", right)):
            limit = largest_finite_scale(kept(method, test), direction, np.float64, scales)
            results.number(f"window_{kind}_{method_name}", limit, f"float64 naive CE: {method_name}, {kind}")
        gradient = method(naive_ce, [z_big])[0]
        kind = "right" if right(gradient, z_big) else "finite, wrong" if finite(gradient, 0) else "non-finite"
        outcome[method_name], stable_right = kind, stable_right + right(method(stable_ce, [z_big])[0], z_big)
about = f"c = {args.overflow_scale:g}: methods whose gradient is"
for key, kind in (("methods_nan_naive", "non-finite"), ("methods_wrong_naive", "finite, wrong")):
    results.number(key, sum(outcome[m] == kind for m in check.METHODS), f"{about} {kind} (naive)")
results.number("methods_right_stable", stable_right, f"{about} right (stable)")
results.number("methods_total", len(check.METHODS), "differentiation methods tried")
for name, dtype in PRECISIONS.items():
    with np.errstate(all="ignore"):
        naive_grad, stable_grad = (check.engine.grad(f, [dtype(z_big)])[0] for f in (naive_ce, stable_ce))
    results.number(f"naive_grad_nan_{name}", np.isnan(naive_grad).mean(), f"{name}: naive grad, NaN share")
    error = np.abs(stable_grad - exact(z_big)).max()
    results.number(f"stable_grad_error_{name}", error, f"{name}: |stable grad - exact|", atol=1e-6)
results.number("overflow_scale", args.overflow_scale, "logit scale c past overflow")
results.number("scale", args.scale, "logit scale c where both programs are finite")

# %% [markdown]
# ## A library softmax, then a log; the binary case
# The log of a max-subtracting softmax: loss $-\log 0$ once $p_y$ underflows, NaN gradient once $1/p_y$
# overflows. Binary cross-entropy as log-sum-exp of $[0, z]$, $z + \log(1 + e^{-z}) - z$, against softplus.

# %%
softmax_then_log = lambda z: -ops.log(losses.stable_softmax(z))[..., args.label]  # noqa: E731
for name, dtype in PRECISIONS.items():
    for key, program in (("", softmax_then_log), ("grad_", grad_of(softmax_then_log))):
        limit = largest_finite_scale(program, direction, dtype, scales)
        results.number(f"limit_{key}softmax_then_log_{name}", limit, f"{name} log(softmax): last finite c")
    with np.errstate(all="ignore"):
        value = float(evaluate(softmax_then_log, args.overflow_scale, direction, dtype))
        grad = grad_of(softmax_then_log)(z_big.astype(dtype))
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
grid = np.arange(1.0, 60.0, 1 / 256)  # where the log-sum-exp form loses the loss, against log1p in float64
for name, dtype in PRECISIONS.items():
    z = dtype(args.confident_logit)  # first the form with log1p inside: z + log1p(e^-z) - z
    results.number(f"bce_lse_log1p_{name}", float(z + np.log1p(np.exp(-z)) - z), "z + log1p(e^-z) - z")
    naive = losses.naive_binary_cross_entropy_from_logits(grid.astype(dtype), np.ones_like(grid))
    zero, lost = grid[naive == 0], grid[np.abs(naive / np.log1p(np.exp(-grid)) - 1) > 0.01]
    results.number(f"bce_naive_lost_{name}", lost[0], f"{name}: log-sum-exp BCE 1% wrong from z")
    results.number(f"bce_naive_zero_{name}", zero[0], f"{name}: log-sum-exp BCE exactly 0 from z")
    ratio = np.exp(-zero[0]) / (np.spacing(dtype(zero[0])) / 2)
    results.number(f"bce_naive_zero_ratio_{name}", ratio, f"{name}: e^-z / half the spacing at z", rtol=1e-4)
    results.number(f"bce_naive_zero_after_{name}", bool(np.all(naive[grid >= zero[0]] == 0)), "0 beyond")
true_loss = float(losses.binary_cross_entropy_from_logits(np.array([args.bce_logit]), np.ones(1))[0])
results.number("bce_logit", args.bce_logit, "logit z of a confidently wrong answer (label 1)")
results.number("bce_true_loss", true_loss, "binary cross-entropy from the logit, float64")
v = {key: entry["value"] for key, entry in results.numbers.items()}
limits = [v[f"limit_softmax_then_log_{p}"] for p in PRECISIONS]
half_underflow = [limit / (-v[f"exp_underflow_{p}"] / 2) for limit, p in zip(limits, PRECISIONS, strict=True)]
past = [(v[f"softmax_then_log_inf_{p}"] and v[f"softmax_then_log_nan_{p}"] > 0) == (args.overflow_scale
        > limit) for p, limit in zip(PRECISIONS, limits, strict=True)]  # fmt: skip
halves = all(abs(r - 1) < 1e-3 for r in half_underflow) and all(abs(v[f"limit_naive_cross_entropy_{p}"]
         / limit - 1) < 1e-3 for p, limit in zip(PRECISIONS, limits, strict=True))  # fmt: skip
bce = [v[f"bce_naive_{p}"] == 0 == v[f"bce_lse_log1p_{p}"] and abs(v[f"bce_stable_{p}"] / bce_reference - 1)
       < 1e-6 and v[f"bce_naive_lost_{p}"] < v[f"bce_naive_zero_{p}"] < v[f"one_plus_exp_{p}"]
       and v[f"bce_naive_zero_after_{p}"] and 0.8 < v[f"bce_naive_zero_ratio_{p}"] < 1.25
       for p in PRECISIONS]  # fmt: skip
worst = [np.max(e[np.isfinite(e)]) / np.finfo(p).eps for (g, p), e in errors.items() if g != "cross_entropy"]
stable_all = all(v[k] == scales[-1] for k in v if k.startswith("limit_") and "_stable_" in k)
n_methods, half = len(check.METHODS), v["grad_overflow_float64"]
w = {k.removeprefix("window_"): v[k] for k in v if k.startswith("window_")}
halves = halves and all(abs(v[f"limit_grad_{g}_{p}"] / v[f"grad_overflow_{p}"] - 1) < 1e-3
                        for g in ("naive_cross_entropy", "softmax_then_log") for p in PRECISIONS)  # fmt: skip
window = [w[f"right_{m}"] < w[f"finite_{m}"] for m in check.METHODS] + [abs(w["right_forward"] / half - 1)
          < 1e-3, abs(w["finite_reverse"] / half - 1) < 1e-3, w["right_reverse"] < w["right_complex"] < half
          < w["right_central"], w["finite_complex"] > w["finite_central"]]  # fmt: skip
c, p_big = args.overflow_scale, np.asarray(losses.stable_softmax(z_big))  # the answers' sentences, below
half32 = abs(v["limit_naive_cross_entropy_float32"] / (-v["exp_underflow_float32"] / 2) - 1) < 1e-3
grad, central = gradients[1][0], check.METHODS["central"](stable_ce, [z_small])[0]  # the stable program's
rel, tiny = check.rel_error(grad, central), abs(grad[1] * np.exp(min(args.scale, 700)) - 1) < 0.01
for name, holds, statement, values in [
    ("softmax_then_log_underflows", all(past) and (args.label != 2 or halves), "softmax then log and naive "
     "CE: loss finite to half the underflow limit, gradient to ½ ln(max) (0.1%); then NaN gradient, inf loss",
     {"ratio": half_underflow, "past": past}),
    ("naive_bce_rounds_to_zero", all(bce), "BCE at z: log-sum-exp gives 0, even with log1p inside "
     "(z + tiny - z), softplus the reference; log-sum-exp is 1% wrong, then exactly 0 (once e^-z is within "
     "25% of half the spacing of floats at z), before 1 + e^-z rounds to 1", {}),
    ("accurate_until_limit", max(worst) < 10, "naive softmax, log-sum-exp: finite errors < 10 eps", {}),
    ("stable_finite", stable_all and v["methods_right_stable"] == n_methods, "stable: loss and gradient "
     "finite over the sweep; at c every method's gradient is right", {}),
    ("wrong_before_nonfinite", args.label != 2 or all(window), "Each method returns finite, wrong gradients "
     "of the naive CE over a window of c: reverse mode first, then the complex step, then forward mode "
     "from ½ ln(max); only central differences is right beyond; the complex step stays finite (zeros) "
     "even where the loss is inf", w),
    ("no_method_right_at_c", v["methods_nan_naive"] + v["methods_wrong_naive"] == n_methods,
     f"At c = {args.overflow_scale:g} no method's naive gradient is right", outcome),
]:  # fmt: skip
    results.claim(name, bool(holds), statement, values)
for name, holds, statement in [  # the exercises' answers: claims about the run with the exercise's arguments
    ("naive_ce_overflow_only", all(abs(v[f"limit_naive_cross_entropy_{p}"] / v[f"exp_overflow_{p}"] - 1)
     < 1e-3 for p in PRECISIONS), "The naive cross-entropy stays finite up to ln(max) of each precision, "
     "to 0.1%, and no further."),
    ("softmax_log_loss_finite", np.isfinite(evaluate(softmax_then_log, c, direction, np.float64))
     and np.all(np.delete(p_big, args.label) == 0),
     f"The max-subtracting softmax followed by a log gives a finite loss in float64 at c = {c:g}, and the "
     "other classes' probabilities round to exactly 0, so their logs are −∞."),
    ("float32_nan_by_underflow", v["limit_naive_cross_entropy_float32"] < c < v["exp_overflow_float32"]
     and half32 and v["naive_grad_nan_float32"] == 1, f"The naive float32 gradient is NaN at c = {c:g}, "
     "below float32's overflow threshold: c is past the naive cross-entropy's float32 limit, half the "
     "size of e^x's underflow threshold."),
    ("float64_grad_finite", v["methods_nan_naive"] + v["methods_wrong_naive"] == 0, f"At c = {c:g} every "
     "method's naive float64 gradient is finite and right."),
    ("central_zero_on_tiny_entry", rel.argmax() == 1 and max(rel[0], rel[2]) < 1e-6 and tiny
     and central[1] == 0, "In the stable program the disagreement sits on the middle class's entry, "
     "e^(−c) to 1%, which central differences return as exactly 0; the other entries agree to 10⁻⁶."),
    ("naive_reverse_nan", np.all(np.isnan(gradients[0][0]))
     and np.isfinite(evaluate(PROGRAMS["cross_entropy"][0], args.scale, direction, np.float64)),
     f"At c = {args.scale:g} the naive program's loss is finite, but its reverse-mode gradient is NaN."),
]:  # fmt: skip
    results.claim(name, bool(holds), statement, answer=True)
results.save()
