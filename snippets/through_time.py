"""Gradients through time: the recurrent Jacobian of a tanh RNN vanishes or explodes

dh_T/dh_0 at largest singular values 0.5 to 3 and two input scales, on five seeds; the weight gradient by
lag (what truncated BPTT drops); eigenvalues against singular values; four methods, float32 beside
float64; an additive-memory cell. Quoted by docs/gradients-through-time.md.
"""

# %% [markdown]
# ## The network
# $h_t = \tanh(W_{hh} h_{t-1} + W_{xh} x_t + b)$, $n$ units, inputs $x_t \sim N(0, s_x^2)$,
# $W_{hh} = \sigma_{\max} Q$ with $Q$ orthogonal: every singular value of $W_{hh}$ is $\sigma_{\max}$.
# Each seed draws its own $Q$, $W_{xh}$, inputs, $h_0$ and read-out $v$ (`rec.draw_network`).

# %%
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
from gradlab import numerical, plot, recurrent_frames, snippet
from gradlab import recurrent as rec
from gradlab.backward_signal import first_crossing
from gradlab.recurrent_float32 import float32_gap

parser = snippet.parser(__doc__)
parser.add_argument("--hidden", type=snippet.positive_int, default=32, help="hidden units n")
parser.add_argument("--steps", type=snippet.positive_int, default=100, help="time steps T")
parser.add_argument("--input-scale", type=float, default=1.0, help="std s_x of the inputs (strong drive)")
parser.add_argument("--weak-input-scale", type=float, default=0.01, help="std s_x of the weak drive")
parser.add_argument("--matrix", choices=["orthogonal", "gaussian"], default="orthogonal")
parser.add_argument("--window", type=snippet.positive_int, default=25, help="truncated BPTT window k")
parser.add_argument("--forget", type=snippet.positive_float, default=0.99, help="forget gate f")
parser.add_argument("--sigma-max", type=snippet.positive_float, help="also measure this sigma_max (norm_S)")
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
BASE, VANISHING, EXPLODING, RHO, ALPHA = [0.5, 0.9, 1.0, 1.5, 3.0], 1.0, 3.0, 0.9, 0.2
SCALES = sorted({*BASE, args.sigma_max or 1.0})
DRIVES = {"": args.input_scale, "weak_": args.weak_input_scale}  # key prefix -> input scale s_x
n, T, K, s_x, steps = args.hidden, args.steps, args.window, args.input_scale, np.arange(1, args.steps + 1)
nets = [rec.draw_network(seed, n, 4, T, args.matrix) for seed in SEEDS]
record, per_seed = partial(rec.record, results), partial(rec.per_seed, nets)  # spreads; {name: per seed}
settings = {"vanishing_scale": VANISHING, "exploding_scale": EXPLODING, "rho": RHO, "alpha": ALPHA}
for key, value in [*vars(args).items(), *settings.items(), *((f"scale_{s:g}", s) for s in SCALES)]:
    if key not in ("out", "seed", "matrix", "sigma_max"):
        key = key.replace(".", "p")
        results.number(key, value, key.replace("_", " "))

# %% [markdown]
# ## The Jacobian through time, at two input scales
# $\lVert \partial h_T/\partial h_0 \rVert_2$, the per-step factor $\lVert \cdot \rVert^{1/T}$ and the
# slopes $\tanh'$ along the run. "Vanishes": below $10^{-2}$ at $T$; "explodes": above $10^{2}$.

# %%
table, measured, EVERY = {}, {}, 2  # measured: the runs (norms at every EVERY-th step, as the sweep shows)
for drive, input_scale in DRIVES.items():
    for scale in SCALES:
        runs = measured[drive, scale] = per_seed(rec.jacobian_summary, scale, input_scale, None, EVERY)
        slope, rms = np.array(runs["mean_slope"]), np.array(runs["rms_slope"])
        stats = {"norm": runs["norm"], "rate": runs["rate"], "slope": slope, "gain": scale * slope}
        stats = stats | {"rms_gain": scale * rms} if not drive else stats
        # an exploding map amplifies the last bit of np.tanh, which differs between CPUs' libm
        stats = record(drive, stats, suffix=f"_{scale:g}", rtol=0.1 if scale > 1 else 1e-3)
        table[drive, scale] = stats
EXPECTED = {"": "vanishes " * 4 + "explodes", "weak_": "vanishes vanishes neither explodes explodes"}
for drive, input_scale in DRIVES.items():
    results.claim(
        f"{drive}drive_decides",
        [rec.verdict(table[drive, s]["norm"]) for s in BASE] == EXPECTED[drive].split(),
        f"At input scale {input_scale:g}, on every seed: "
        + "; ".join(f"sigma_max {s:g} {e}" for s, e in zip(BASE, EXPECTED[drive].split(), strict=True)),
        {f"{s:g}": table[drive, s]["norm"] for s in BASE},
    )
worst = max(np.abs(table["", s]["rms_gain"] / table["", s]["rate"] - 1).max() for s in BASE)
results.number("rms_gain_worst_diff", worst, "largest |sigma_max RMS tanh' / per-step factor - 1|", rtol=0.05)
strong, weak = (np.concatenate([table[drive, s]["slope"] for s in BASE[:3]]) for drive in DRIVES)
results.claim(
    "drive_sets_the_slopes",
    strong.max() < 0.75 < 0.95 < weak.min() and table["weak_", 1.5]["slope"].max() < 0.8,
    "For sigma_max <= 1 the mean tanh' is below 0.75 at the strong drive and above 0.95 at the weak one; "
    "at sigma_max 1.5 the recurrence alone brings it below 0.8 at the weak drive.",
    {"strong": strong, "weak": weak, "weak 1.5": table["weak_", 1.5]["slope"]},
)
big, weak_15 = table["", EXPLODING], table["weak_", 1.5]
text = f"At input scale {args.weak_input_scale:g}, sigma_max 1.5 explodes (norm above 1e2 at T) on every seed"
results.claim("weak_drive_explodes_at_1p5", rec.verdict(weak_15["norm"]) == "explodes", text, weak_15)
holds = bool(worst < 0.15 and (big["gain"] < 1).all() and (big["rate"] > 1).all())
results.claim("rms_not_mean_slope_decides", holds, "sigma_max RMS tanh' is within 15% of the per-step factor "
              "at every sigma_max and seed; at sigma_max 3, sigma_max x mean tanh' is below 1 on every seed, "
              "yet the product grows.", big | {"worst": worst})  # fmt: skip
# the chapter's slider: the same norms over sigma_max, median of the seeds (`--sigma-max S` records norm_S);
# crossing: the sigma_max where the norm reaches 1, interpolated in log sigma_max and log norm
SWEEP = [0.5, 0.7, 0.9, 1.0, 1.05, 1.1, 1.2, 1.5, 1.6, 1.75, 2.0, 2.5, 3.0]
command = f"python snippets/through_time.py --sigma-max {{value}} --seed {args.seed}"
ends = recurrent_frames.sigma_sweep(
    results, "sigma_sweep", nets, SWEEP, DRIVES, default=1.5, command=command, every=EVERY, measured=measured
)
crossing = {d: np.array([first_crossing(np.array(SWEEP), e) for e in ends[d].T]) for d in DRIVES}
record("sweep_", {f"{d}crossing": crossing[d] for d in DRIVES}, rtol=1e-3)
at = {v: i for i, v in enumerate(SWEEP)}  # the claim reads norms measured at 1.1 and 1.6, no interpolation
results.claim(
    "strong_drive_needs_larger_sigma",
    bool((ends["weak_"][at[1.1]] > 1).all() and (ends[""][at[1.6]] < 1).all() and (ends[""][-1] > 1).all()),
    "On every seed ||dh_T/dh_0|| exceeds 1 at sigma_max 1.1 with the weak drive, but is still below 1 at "
    f"sigma_max 1.6 with the strong drive (and above 1 at {SWEEP[-1]:g}).",
    {"weak at 1.1": ends["weak_"][at[1.1]], "strong at 1.6": ends[""][at[1.6]], "crossing": crossing},
)
weak_1, strong_15, weak_at_1p1 = table["weak_", 1.0], table["", 1.5], ends["weak_"][at[1.1]]
for name, holds, statement, values in [  # stated only in an exercise's answer (--weak-input-scale 0.1)
    ("sigma_1p5_turns_between", rec.verdict(weak_15["norm"]) == "explodes" and rec.verdict(strong_15["norm"])
     == "vanishes", f"On every seed sigma_max 1.5 explodes at input scale {args.weak_input_scale:g} and "
     f"vanishes at input scale {s_x:g}.", {"weak": weak_15["norm"], "strong": strong_15["norm"]}),
    ("weak_sigma_1_vanishes", rec.verdict(weak_1["norm"]) == "vanishes" and weak_1["slope"].max() < 0.95
     and (weak_at_1p1 < 1).all(), f"At input scale {args.weak_input_scale:g}, on every seed, sigma_max 1 "
     "vanishes (norm below 1e-2 at T) with a mean tanh' below 0.95, and the norm is still below 1 at "
     "sigma_max 1.1.", weak_1 | {"at 1.1": weak_at_1p1}),
]:  # fmt: skip
    results.claim(name, holds, statement, values, answer=True)

# %% [markdown]
# ## The weight gradient is a sum over lags; truncation drops the long ones
# For $L = v^\top h_T$, $\partial L/\partial W_{hh} = \sum_t \delta_t h_{t-1}^\top$; the term at step
# $t$ crossed $T - t$ step Jacobians (`rec.lag_summary`). The share of lags $\ge k$ is the relative
# error of truncated BPTT with window $k$.

# %%
lag = {}
for name, scale in (("vanishing", VANISHING), ("exploding", EXPLODING)):
    lag[name] = record(f"{name}_", per_seed(rec.lag_summary, scale, s_x, K), rtol=1e-2, atol=1e-9)
results.claim(
    "vanishing_is_not_a_tiny_total",
    max(lag["vanishing"]["lag_sum_error"].max(), lag["exploding"]["lag_sum_error"].max()) < 1e-12
    and lag["vanishing"]["weight_grad_norm"].min() > 0.1 > 1e-2 > lag["vanishing"]["share_beyond"].max(),
    f"The lag terms sum to reverse mode's dL/dW_hh to 1e-12 relative. At sigma_max {VANISHING:g}, "
    f"||dL/dW_hh|| > 0.1 on every seed, and lags >= {K} carry under 1% of it.",
    lag["vanishing"],
)
cut = lag["exploding"]
results.claim(
    "truncation_drops_the_exploding_part",
    cut["share_beyond"].min() > 0.99
    and np.abs(cut["truncated_cosine"]).max() < 0.2
    and (cut["truncated_norm"] / cut["weight_grad_norm"]).max() < 1e-2,
    f"At sigma_max {EXPLODING:g}, lags >= {K} carry over 99% of dL/dW_hh; the truncated gradient is under 1% "
    "of its norm and nearly orthogonal to it (|cosine| < 0.2), on every seed.",
    cut,
)

# %% [markdown]
# ## Eigenvalues are not singular values
# $M = \rho I + \alpha J$ ($J$ the upper shift): every eigenvalue is $\rho$, so the spectral radius is
# $\rho < 1$, but $\sigma_{\max}(M) > 1$, and $\lVert M^t \rVert$ grows for hundreds of steps before
# $\rho^t$ wins. Linear first (no tanh, no input), then as $U M U^\top$ inside the weakly driven RNN.

# %%
linear = rec.power_summary(M := rec.shifted_diagonal(n, RHO, ALPHA), T)
for key, value in linear.items():
    results.number(f"nonnormal_{key}", value, f"M: {key}", rtol=1e-6)
results.number("normal_power_at_t", RHO**T, "||(rho Q)^T|| = rho^T for orthogonal Q")
U = [np.linalg.qr(net["Q"])[0] for net in nets]  # orthogonal also for --matrix gaussian
rotated = [rec.jacobian_summary(net, u @ M @ u.T, DRIVES["weak_"]) for u, net in zip(U, nets, strict=True)]
peaks = [run["norms"].max() for run in rotated]
nonnormal_peaks = record("", {"nonnormal_rnn_peak": peaks})
grows = bool(linear["power_at_t"] > 1e3 and linear["below_one_step"] > T and min(peaks) > 1)
text = f"Spectral radius {RHO:g}: ||M^T|| > 1e3 at T = {T}, > 1 until past T; in the RNN, > 1 on every seed."
results.claim("spectral_radius_below_one_still_grows", grows, text, linear | nonnormal_peaks)

# %% [markdown]
# ## Is it backprop?
# $L = v^\top h_T$ of $h_0$ by reverse and forward mode, complex step, central differences (default step, a
# scan when exploding); the gap at $h_T$ between the real and the complex, and the float32, forward pass.

# %%
SCAN = 10.0 ** -np.arange(9, 13)
results.number("central_default_step", numerical.default_step(), "default central step eps^(1/3)")
results.number("central_default_step_float32", np.finfo(np.float32).eps ** (1 / 3), "eps^(1/3), float32")
results.number("loss_bound", np.sqrt(n), "|L| <= ||h_T|| < sqrt(n): tanh is bounded by 1")
for key, value in (("largest", SCAN[0]), ("smallest", SCAN[-1])):
    results.number(f"central_scan_{key}", value, f"{key} step in the scan")
checks = {}
for name, scale in (("vanishing", VANISHING), ("exploding", EXPLODING)):
    runs = per_seed(rec.gradient_checks, scale, s_x, SCAN if name == "exploding" else ())
    noise_ratio = np.array(runs.pop("noise_ratio"))  # inf when every entry is 0: for the claim only
    checks[name] = record(f"{name}_", runs, rtol=1.0, atol=1e-2) | {"noise_ratio": noise_ratio}
    checks[name] |= record(f"{name}_", per_seed(float32_gap, scale, s_x), rtol=1.0)  # float32 tanh: libm's
vanish, explode = checks["vanishing"], checks["exploding"]
exact = max(vanish["forward"].max(), explode["forward"].max(), vanish["complex"].max())
results.claim("forward_and_complex_agree", exact < 1e-9 and explode["complex"].max() < 0.5, "Forward mode "
              "agrees with reverse mode to 1e-9 at both sigma_max; the complex step to 1e-9 (vanishing) and "
              "0.5 (exploding, where amplified rounding limits it), on every seed.")  # fmt: skip
results.claim(
    "exploding_forward_map_amplifies_rounding",
    vanish["rounding_gap"].max() < 1e-14 < 1e-12 < explode["rounding_gap"].min()
    and vanish["float32_gap"].max() < 1e-5 < 1e-2 < explode["float32_gap"].min(),
    "Real and complex forward passes differ at h_T by < 1e-14 (vanishing), > 1e-12 (exploding); the float32 "
    "forward pass ends within 1e-5 of float64's h_T (vanishing) and more than 1e-2 away (exploding).",
    {k: checks[k]["float32_gap"] for k in checks},
)
results.claim(
    "central_measures_rounding_when_vanishing",
    vanish["central"].min() > 0.999
    and vanish["noise_ratio"].min() > 1e4
    and (vanish["central_change"] / vanish["loss_spacing"]).max() < 1e-3,
    "Vanishing: the default step changes L by under 1e-3 of a float spacing; every central entry is 0 or "
    "rounding noise over 1e4 times the gradient (relative disagreement 1), on every seed.",
    vanish,
)
# rounding's share of the central error at the default step: (error of L ~ sqrt(n) x gap) / step / max|g|
rounding_share = 2 * np.sqrt(n) * explode["rounding_gap"] / explode["central_change"]
results.claim(
    "central_fails_when_exploding",
    explode["central"].min() > 0.5
    and rounding_share.max() < 1e-3 < 0.1 < explode["central_change"].min()
    and (explode["central_best"] / explode["complex"]).min() > 1,
    "Exploding: central differences disagree by over 0.5 at the default step, where rounding explains under "
    "1e-3 of the gradient and the linear prediction of the change of L exceeds 0.1 (truncation); at the "
    "scan's best step they still disagree more than the complex step, on every seed.",
    explode | {"rounding_share": rounding_share},
)

# %% [markdown]
# ## The architectural remedy: an additive memory
# $m_t = f\,m_{t-1} + (1 - f)\tanh(W_{hh} m_{t-1} + W_{xh} x_t + b)$ has the step Jacobian
# $f I + (1 - f)\operatorname{diag}(\tanh') W_{hh}$, with singular values in $f \pm (1 - f)\sigma_{\max}$.

# %%
results.number("forget_power", (f := args.forget) ** T, "f^T")
fig, ax = plt.subplots()
inside, ends = [], []
for colour, scale in zip(plot.PALETTE, (VANISHING, EXPLODING), strict=False):
    runs = per_seed(rec.jacobian_summary, scale, s_x, f)
    rnn = rec.jacobian_summary(nets[0], scale, s_x)["norms"]  # every step, for the figure
    ends.append(f"{runs['norms'][0][-1]:.2g} at sigma_max {scale:g} (tanh RNN: {rnn[-1]:.0e})")
    key = f"{scale:g}".replace(".", "p")
    bounds = max(f - (1 - f) * scale, 0) ** T, (f + (1 - f) * scale) ** T
    record("additive_", {f"norm_{key}": runs["norm"]}, rtol=1e-3)
    results.number(f"additive_lower_{key}", bounds[0], f"(f - (1 - f) sigma_max)^T, sigma_max {scale:g}")
    results.number(f"additive_upper_{key}", bounds[1], f"(f + (1 - f) sigma_max)^T, sigma_max {scale:g}")
    inside += [bounds[0] <= norm <= bounds[1] for norm in runs["norm"]]
    label = f"$\\sigma_{{\\max}}$ = {scale:g}"
    ax.semilogy(steps, rnn, "--", color=colour, label=f"tanh RNN, {label}")
    ax.semilogy(steps, runs["norms"][0], color=colour, label=f"additive cell, {label}")
ax.semilogy(steps, f**steps, ":", color=plot.PALETTE[2], label="$f^T$")
ax.set(title=f"Additive memory (f = {f:g}) against the tanh RNN (seed {SEEDS[0]})", xlabel="time steps $T$")
ax.set_ylabel(r"$\|\partial h_T/\partial h_0\|_2$ or $\|\partial m_T/\partial m_0\|_2$ (log scale)")
ax.legend(fontsize="x-small")
results.claim("additive_cell_stays_in_its_bounds", all(inside), "The additive cell's Jacobian norm lies "
              "between (f -+ (1 - f) sigma_max)^T on every seed.")  # fmt: skip
alt = f"Seed {SEEDS[0]}, forget gate {f:g}: additive-cell Jacobian norm after {T} steps " + "; ".join(ends)
results.figure(fig, "additive_cell", alt=alt)
results.save()
