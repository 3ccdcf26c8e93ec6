"""Precision: reverse mode in float32 and float16 against a float64 reference, and where it loses.

Reverse mode on deep tanh networks in float32 and float16 against float64, over depth; tanh's slope written
as 1 - y^2 in float32 where tanh saturates; float16 gradients of a deep sigmoid network that underflow
(decomposed), loss scaling with a GradScaler-like dynamic scale, clipping before unscaling, and bfloat16
updates lost to rounding. Five seeds. Quoted by docs/precision.md.
"""

# %% [markdown]
# ## Set-up
# Parameters are drawn in float64 and rounded to the lower precision; every reference is float64
# arithmetic on the *rounded* parameters, so each error below is the arithmetic's.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, engine, loss_scale_sweep, models, ops, plot, scaling, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--max-depth", type=snippet.positive_int, default=24, help="deepest tanh network")
parser.add_argument("--width", type=snippet.positive_int, default=32, help="hidden units per layer")
parser.add_argument("--sigmoid-depth", type=snippet.positive_int, default=10, help="layers, underflow net")
parser.add_argument("--clip", type=snippet.positive_float, default=1.0, help="gradient-norm clip threshold")
args, results = snippet.parse(parser)
SEEDS, F16 = snippet.seeds(args.seed), np.finfo(np.float16)
spread, number, CLAIMS = results.spread, results.number, []
loss = lambda params, X, y: ops.mean((models.mlp(params, X, "tanh") - y) ** 2)  # noqa: E731
rel = lambda a, b: float(np.linalg.norm(np.subtract(a, b, dtype=np.float64))  # noqa: E731  normwise relative error
                         / np.linalg.norm(np.asarray(b, dtype=np.float64)))  # fmt: skip
data = lambda rng: (rng.normal(size=(16, 8)), rng.normal(size=(16, 1)))  # noqa: E731  a batch of 16

# %% [markdown]
# ## Error over depth (tanh networks, unsaturated)
# First-layer gradient and loss errors per precision; the float64 reference checked by four methods.

# %%
depths = np.unique(np.linspace(1, args.max_depth, 4).astype(int))
errors = {name: np.zeros((len(SEEDS), len(depths))) for name in ("float32", "float16", "loss32", "loss16")}
agreement = []
for s, seed in enumerate(SEEDS):
    X, y = data(rng := np.random.default_rng(seed))
    small = models.init_mlp([8, args.width, 1], "glorot", rng)
    agreement.append(max(check.compare(lambda p, X=X, y=y: loss(p, X, y), small).values()))
    for d, depth in enumerate(depths):
        params64 = models.init_mlp([8] + [args.width] * depth + [1], "glorot", rng)
        for name, dtype in (("float32", np.float32), ("float16", np.float16)):
            params, Xp, yp = [p.astype(dtype) for p in params64], X.astype(dtype), y.astype(dtype)
            value, grads = engine.value_and_grad(lambda p, X=Xp, y=yp: loss(p, X, y), params)
            rounded = [p.astype(np.float64) for p in params]
            ref_value, ref = engine.value_and_grad(lambda p, X=Xp, y=yp: loss(p, X, y), rounded)
            errors[name][s, d] = rel(grads[0], ref[0]) / np.finfo(dtype).eps
            errors["loss" + name[-2:]][s, d] = rel(value, ref_value) / np.finfo(dtype).eps
spread("reference_agreement", agreement, "largest disagreement of the float64 methods", atol=1e-6)
for name in ("float32", "float16"):
    number(f"eps_{name}", np.finfo(name).eps, f"machine epsilon, {name}")
    spread(f"grad_error_in_eps_{name}", errors[name].max(1), f"worst layer-1 grad error, eps, {name}", 1)
    spread(f"loss_error_in_eps_{name}", errors["loss" + name[-2:]].max(1), f"worst loss error, eps, {name}",
           1)  # fmt: skip
worst = {"float32": errors["float32"].max(), "float16": errors["float16"].max()}
loss32, grad32 = errors["loss32"].max(1), errors["float32"].max(1)
CLAIMS.append(("few_eps", max(worst.values()) < 50, "Unsaturated, the reverse-mode gradient is within 50 "
    "machine epsilons of float64 in both precisions, at every depth and seed.", worst))  # fmt: skip

# %% [markdown]
# ## Saturated: tanh's slope written from its output
# The engine's rule is $\tanh'(z) = 1 - y^2$ with $y$ the *rounded* output. In float32 it cancels
# where $|y| \to 1$; $\mathrm{sech}^2 z = 4/(e^z + e^{-z})^2$ from $z$ does not.

# %%
z_points = np.array([5.0, 8.0, 10.0], dtype=np.float32)
exact, stable = 1 / np.cosh(z_points.astype(np.float64)) ** 2, scaling.sech_squared(z_points)
from_output = engine.grad(lambda p: ops.sum(ops.tanh(p[0])), [z_points])[0]
slope_err, stable_err = check.rel_error(from_output, exact), check.rel_error(stable, exact)
for z, a, b in zip(z_points, slope_err, stable_err, strict=True):
    number(f"slope_error_z{z:.0f}", a, f"relative error of 1 - y^2 at z = {z:.0f}, float32 (libm-dependent)",
           0.5)  # fmt: skip
    number(f"stable_error_z{z:.0f}", b, f"relative error of sech^2 at z = {z:.0f}, float32", 1, 1e-6)
same_rule = bool(np.array_equal(from_output, scaling.tanh_slope_from_output(np.tanh(z_points))))
CLAIMS.append(("saturated_slope_loses", same_rule and slope_err[1] > 0.01 and slope_err[2] == 1
               and stable_err.max() < 10 * np.finfo(np.float32).eps, "In float32 the engine's tanh slope "
               "(exactly 1 - y^2) is off by over 1% at z = 8 and by 100% at z = 10, while sech^2 from z "
               "stays within 10 machine epsilons.", {"slope": slope_err, "stable": stable_err}))  # fmt: skip

# %% [markdown]
# ## Underflow in float16, decomposed
# A deep sigmoid network (`gradlab.scaling.mlp_scaled_grads`: forward and backward in float16,
# loss in float32). A zero entry is *final* underflow if even the exact value rounds to 0
# ($|g| \le$ half the smallest subnormal); otherwise *intermediate*: the $\delta_1$ that feeds it
# underflowed (the whole column flushed to zero, or partly) on its way down.

# %%
tiny, normal = float(F16.smallest_subnormal), float(F16.smallest_normal)
scales, D10 = 2.0 ** np.arange(0, 25), parser.get_default("sigmoid_depth")
KEYS = "zero final inter dead below_normal bits s_max s_need lifted err1 err_s zero_s skipped clip_ratio norm"
KEYS10 = "final final10 err_s err_s10"  # final underflow, error at the largest safe S; at depth D10
stats = {k: [] for k in (KEYS + " lost kept_rne kept_master kept_sr final10 err_s10").split()}
trajectory_first = first_runs = None


def scaled_runs(seed, depth):
    """One seed's float16 sigmoid net of ``depth`` layers: float64 reference, scale sweep, largest safe S."""
    X, y = data(rng := np.random.default_rng(seed))
    deep = [p.astype(np.float16) for p in models.init_mlp([8] + [args.width] * depth + [1], "glorot", rng)]
    X16 = X.astype(np.float16)
    _, ref, _ = scaling.mlp_scaled_grads([p.astype(np.float64) for p in deep], X16.astype(float), y, 1)
    with np.errstate(all="ignore"):
        outputs = scaling.mlp_scaled_grads_over(deep, X16, y, scales)  # one forward pass for every S
    runs = [o[1] for o in outputs]  # scaled gradients
    finite = np.array([all(np.all(np.isfinite(g)) for g in grads) for grads in runs])
    best = int(np.flatnonzero(finite)[-1]) if finite.all() else int(np.argmin(finite)) - 1  # largest safe S
    final = np.mean((runs[0][0] == 0) & (ref[0] != 0) & (np.abs(ref[0]) <= tiny / 2))  # see `storable` below
    err_s = rel(runs[best][0].astype(np.float32) / np.float32(scales[best]), ref[0])
    return rng, deep, ref, outputs, runs, finite, best, final, err_s


for s, seed in enumerate(SEEDS):
    rng, deep, ref, outputs, runs, finite, best, final, err_s = scaled_runs(seed, args.sigmoid_depth)
    at10 = scaled_runs(seed, D10)[-2:] if args.sigmoid_depth != D10 else (final, err_s)  # exercise 1 compares
    stats["final10"], stats["err_s10"] = stats["final10"] + [at10[0]], stats["err_s10"] + [at10[1]]
    delta1, g1, r1 = outputs[0][2][0], runs[0][0], ref[0]  # delta_1 at S = 1
    zero, storable = (g1 == 0) & (r1 != 0), np.abs(r1) > tiny / 2  # storable: the exact value rounds to > 0
    masks = {"zero": zero, "final": zero & ~storable, "inter": zero & storable,
             "below_normal": np.abs(r1) < normal}  # fmt: skip
    for key, mask in (masks | {"dead": zero & storable & np.all(delta1 == 0, axis=0)}).items():
        stats[key].append(np.mean(mask))
    stats["bits"].append(scaling.significant_bits(g1).max())
    stats["s_max"].append(S := scales[best])
    stats["s_need"].append(2.0 ** np.ceil(np.log2(normal / np.median(np.abs(r1)))))
    stats["lifted"].append(np.mean(np.abs(S * r1) >= normal))
    stats["err1"].append(rel(g1, r1))
    stats["err_s"].append(err_s)
    stats["zero_s"].append(np.mean((runs[best][0] == 0) & (r1 != 0)))
    # GradScaler's schedule over 10,000 steps with these gradients held fixed (no training): overflow at
    # S is known exactly from the runs above, so the schedule is periodic
    scaler, skipped, trajectory = scaling.DynamicLossScaler(), 0, [2.0**16]  # GradScaler's init_scale
    for _ in range(10_000):
        k = int(np.log2(scaler.scale))
        skipped += not scaler.update(found_inf=not (k < len(scales) and finite[k]))
        trajectory.append(float(scaler.scale))
    stats["skipped"].append(skipped)
    trajectory_first, first_runs = (trajectory, (runs, ref)) if s == 0 else (trajectory_first, first_runs)
    # clipping the scaled gradient instead of the unscaled one
    scaled = [g.astype(np.float32) for g in runs[best]]
    stats["norm"].append(norm := np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in scaled)) / S)
    stats["clip_ratio"].append(min(1, args.clip / norm) / min(1, args.clip / (S * norm)))
    # bfloat16 weights: updates with update/weight ratios log-uniform in [1e-5, 1e-1], once and 100 times
    w = np.concatenate([p.astype(np.float32).ravel() for p in deep[0:-2:2]])
    ratio = rng.choice([-1.0, 1.0], w.size) * 10.0 ** rng.uniform(-5, -1, w.size)  # update / weight
    dw = (w * ratio).astype(np.float32)
    w16, moved = scaling.to_bfloat16(w), dw != 0
    stats["lost"].append(np.mean(scaling.to_bfloat16(w16 + dw)[moved] == w16[moved]))
    rne, master, sr = w16.copy(), w16.copy(), w16.copy()
    for _ in range(100):
        rne, master = scaling.to_bfloat16(rne + dw), master + dw
        sr = scaling.to_bfloat16_stochastic(sr + dw, rng)
    for key, final_w in (("kept_rne", rne), ("kept_master", master), ("kept_sr", sr)):
        stats[key].append(np.mean((final_w - w16)[moved].astype(np.float64) / (100.0 * dw[moved])))

results.frames("scale_sweep", **loss_scale_sweep.frames(*first_runs, scales, SEEDS[0]))  # the slider
for key, about, rtol in (
    ("zero", "first-layer float16 entries zero where float64 is not", 1e-3),
    ("final", "of them: exact value below half the smallest subnormal", 1e-3),
    ("inter", "of them: exact value storable (an earlier delta underflowed)", 1e-3),
    ("dead", "of those: the delta_1 column feeding the entry is all zero", 1e-3),
    ("below_normal", "first-layer entries below float16's smallest normal", 1e-3),
    ("bits", "most significant bits kept by a surviving float16 entry", 1e-6),
    ("err1", "relative error of the float16 first-layer gradient, no scaling", 1e-2),
    ("s_max", "largest power-of-two scale with every scaled gradient finite", 1e-6),
    ("s_need", "scale that lifts the median first-layer entry above the smallest normal", 1e-6),
    ("lifted", "first-layer entries above the smallest normal at the largest safe scale", 1e-3),
    ("err_s", "relative error at the largest safe scale, unscaled in float32", 1e-2),
    ("zero_s", "first-layer entries zero at the largest safe scale", 1e-3),
    ("skipped", "steps the dynamic scaler skips in 10,000", 1e-6),
    ("norm", "norm of the unscaled gradient (all parameters)", 1e-2),
    ("clip_ratio", "update norm, clip after unscaling / clip before", 1e-3),
    ("lost", "weight updates lost when w is stored in bfloat16", 1e-3),
    ("kept_rne", "mean share of 100 updates kept per weight, bfloat16", 1e-2),
    ("kept_master", "the same with a float32 master copy", 1e-2),
    ("kept_sr", "the same with stochastic rounding to bfloat16", 1e-2),
):  # fmt: skip
    spread(key, stats[key], about, rtol=rtol, atol=1e-9)
st = {k: np.array(v) for k, v in stats.items()}
constants = {"smallest_subnormal_float16": tiny, "smallest_normal_float16": normal, "eps_bfloat16": 2.0**-7}
constants |= {"largest_float16": float(F16.max), "clip": args.clip, "sigmoid_depth": args.sigmoid_depth}
constants |= {"max_depth": int(depths[-1])}
constants |= {f"{k}_float32": float(getattr(np.finfo("float32"), k)) for k in ("smallest_normal", "max")}
for key, value in constants.items():
    number(key, value, key.replace("_", " "))
CLAIMS += [
    ("all_below_normal", np.all(st["below_normal"] == 1), "Every first-layer entry is below float16's "
     "smallest normal on every seed.", {"below": st["below_normal"]}),
    ("both_underflows", np.all(st["final"] > 0.1) and np.all(st["inter"] > 0.05), "On every seed over 10% "
     "of the entries underflow at the end and over 5% through an earlier delta.",
     {"final": st["final"], "inter": st["inter"]}),
    ("few_bits", np.all(st["bits"] <= 5), "Surviving float16 entries keep at most 5 of 11 significant bits.",
     {"bits": st["bits"]}),
    ("scale_fits", np.all(st["s_need"] <= st["s_max"]) and np.all(st["err_s"] < 5 * F16.eps), "The scale "
     "that lifts the median entry above the smallest normal fits below overflow, and the largest safe scale "
     "brings the error under 5 float16 epsilons, on every seed.", {"need": st["s_need"], "err": st["err_s"]}),
    ("scaler_skips_few", np.all((st["skipped"] >= 1) & (st["skipped"] <= 10)), "The dynamic scaler skips "
     "between 1 and 10 of 10,000 steps on every seed.", {"skipped": st["skipped"]}),
    ("clip_order_matters", np.all(st["clip_ratio"] > 1e3), "Clipping before unscaling shrinks the update "
     "over 1000 times more than clipping after, on every seed.", {"ratio": st["clip_ratio"]}),
    ("bf16_loses_updates", np.all(st["lost"] > 0.5) and np.all(st["kept_rne"] < 0.6) and
     np.all(np.abs(st["kept_master"] - 1) < 0.01) and np.all(np.abs(st["kept_sr"] - 1) < 0.1), "In bfloat16 "
     "over half the updates are lost; a float32 master copy keeps them within 1%, stochastic rounding "
     "within 10% on average.",
     {"lost": st["lost"], "rne": st["kept_rne"], "sr": st["kept_sr"]}),
    ("loss_error_small", np.all(loss32 < 2) and np.all(loss32 < grad32), "On every seed the float32 loss "
     "value is within 2 epsilons of float64 and closer, relative to its size, than the first-layer gradient.",
     {"loss": loss32, "grad": grad32}),
]  # fmt: skip
ANSWERS = [  # what exercises 1 and 2 answer, about other settings (--sigmoid-depth 14, --clip 100)
    ("deeper_worse", all(st["final"] > st["final10"]) and np.median(st["err_s"]) > np.median(st["err_s10"]),
     f"Final underflow's share is higher than at depth {D10} on every seed, and the error is higher on the "
     "median seed (not on every seed).", {k: st[k] for k in KEYS10.split()}),
    ("scale_too_small", np.all(st["s_need"] > st["s_max"]), "On every seed that scale is above the largest "
     "safe scale.", {"need": st["s_need"], "s_max": st["s_max"]}),
    ("clip_between", np.all((st["norm"] < args.clip) & (args.clip < st["s_max"] * st["norm"])), "On every "
     "seed $c$ lies between the unscaled norm and the scaled norm.", {"norm": st["norm"]}),
]  # fmt: skip

# %%
fig, (ax_scale, ax_traj) = plt.subplots(1, 2, figsize=(9, 3.8))
ax_traj.semilogy(trajectory_first, color=plot.PALETTE[0], label="scale S (float32)")
ax_traj.axhline(st["s_max"][0], color=plot.PALETTE[3], ls=":", label="largest S without overflow")
ax_traj.set(title="GradScaler's schedule, fixed gradients", xlabel="step", ylabel="loss scale S (log scale)",
            ylim=(min(trajectory_first) / 2, max(trajectory_first) * 2))  # fmt: skip
ax_traj.legend(fontsize="small")
levels = np.arange(len(SEEDS))
ax_scale.bar(levels - 0.2, st["final"], 0.4, label="exact value below half the smallest subnormal")
ax_scale.bar(levels - 0.2, st["inter"], 0.4, bottom=st["final"], label="a delta underflowed")
ax_scale.bar(levels + 0.2, st["zero_s"], 0.4, label="zero after scaling by the largest safe S")
ax_scale.set(title="float16 first-layer entries that are zero", xlabel="seed", ylabel="fraction of entries",
             xticks=levels, xticklabels=[str(s) for s in SEEDS], ylim=(0, 1.45))  # fmt: skip
ax_scale.legend(fontsize="x-small", loc="upper center")
fig.suptitle("Underflow in float16 and the dynamic loss scale")
zero, final = st["zero"], st["final"]
results.figure(fig, "loss_scaling", alt=f"Left: on each of {len(SEEDS)} seeds, {zero.min():.0%} to "
               f"{zero.max():.0%} of the float16 first-layer gradient entries are zero, {final.min():.0%} to "
               f"{final.max():.0%} because the exact value underflows, the rest as an earlier delta did; "
               f"after scaling by the largest safe S at most {st['zero_s'].max():.1%} are. Right: the scale "
               "starts at 65,536, halves on every overflow and doubles after 2,000 clean steps, with the "
               "gradients held at their initial values.")  # fmt: skip

# %%
for (name, holds, statement, values), answer in [(c, False) for c in CLAIMS] + [(c, True) for c in ANSWERS]:
    results.claim(name, bool(holds), statement, values, answer=answer)
results.save()
