"""Gradients through time: the recurrent Jacobian of a tanh RNN vanishes or explodes

A vanilla tanh RNN runs for T steps with recurrent matrices whose largest singular value is
0.5, 0.9, 1, 1.5 or 3; the spectral norm of the Jacobian dh_T/dh_0 is measured at every T.
The gradient through time is checked by four methods, norm clipping is compared with
elementwise clipping on an exploding gradient, and an additive-memory cell is measured as the
architectural remedy. Quoted by docs/gradients-through-time.md.
"""

# %% [markdown]
# ## The network
# $h_t = \tanh(W_{hh} h_{t-1} + W_{xh} x_t + b)$ with $n$ hidden units, driven by random
# inputs $x_t$. $W_{hh} = s\,Q$: with an orthogonal $Q$ every singular value of $W_{hh}$ is
# $s$, so $\sigma_{\max}(W_{hh}) = s$ exactly and the only other factor in the Jacobian is
# the slope of tanh. (`--matrix gaussian` uses a Gaussian $Q$ rescaled to $\sigma_{\max} = 1$.)

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, clipping, engine, models, numerical, ops, snippet
from gradlab.plot import PALETTE

parser = snippet.parser(__doc__)
parser.add_argument("--hidden", type=snippet.positive_int, default=32, help="hidden units n")
parser.add_argument("--steps", type=snippet.positive_int, default=100, help="time steps T")
parser.add_argument("--input-scale", type=float, default=1.0, help="std of the inputs x_t")
parser.add_argument("--matrix", choices=["orthogonal", "gaussian"], default="orthogonal")
parser.add_argument("--forget", type=snippet.positive_float, default=0.99, help="forget gate f")
parser.add_argument("--clip", type=snippet.positive_float, default=1.0, help="clip threshold")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)

SCALES = [0.5, 0.9, 1.0, 1.5, 3.0]
VANISHING, EXPLODING = 0.5, 3.0
n, T, INPUTS = args.hidden, args.steps, 4
_, W_xh, b = models.init_rnn(n, INPUTS, 1.0, rng)
gaussian = rng.normal(size=(n, n))
Q = np.linalg.qr(gaussian)[0] if args.matrix == "orthogonal" else gaussian / np.linalg.norm(gaussian, 2)
xs = args.input_scale * rng.normal(size=(T, INPUTS))
h0 = 0.5 * rng.normal(size=n)
time_axis = np.arange(1, T + 1)
results.number("hidden", n, "hidden units n")
results.number("steps", T, "time steps T")
results.number("scale_count", len(SCALES), "number of recurrent-matrix scales")
results.number("vanishing_scale", VANISHING, "sigma_max of the vanishing case")
results.number("exploding_scale", EXPLODING, "sigma_max of the exploding case")


def scale_key(scale):
    return f"{scale:g}".replace(".", "p")


# %% [markdown]
# ## The Jacobian through time
# $\partial h_T / \partial h_0 = \prod_t \operatorname{diag}(1 - h_t^2)\, W_{hh}$, accumulated step
# by step: its spectral norm (largest singular value) at every $T$, the per-step factor
# $\lVert \partial h_T/\partial h_0 \rVert^{1/T}$, and the mean and root-mean-square slope $\tanh'$ of
# the units (RMS over the units at each step, averaged geometrically over the steps): a perturbation
# spread evenly over the units grows by $\sigma_{\max} \times$ the RMS slope per step. The same
# function measures the additive cell, $c_t = f c_{t-1} + (1 - f)\tanh(\cdot)$.


# %%
def jacobian_norms(W_hh, forget=None):
    """(||dh_t/dh_0||_2 for t = 1..T, mean tanh', RMS tanh', h_T); forget = f for the additive cell."""
    h, jacobian, norms, slopes, log_rms = h0, np.eye(n), [], [], []
    for x in xs:
        a = np.tanh(W_hh @ h + W_xh @ x + b)
        slope = 1 - a**2  # tanh' of each unit
        slopes.append(np.mean(slope))
        log_rms.append(0.5 * np.log(np.mean(slope**2)))
        step = slope[:, None] * W_hh  # diag(tanh') W_hh
        if forget is not None:  # c_t = f c_{t-1} + (1 - f) a_t: the Jacobian gains f I
            step = forget * np.eye(n) + (1 - forget) * step
            a = forget * h + (1 - forget) * a
        h, jacobian = a, step @ jacobian
        norms.append(np.linalg.norm(jacobian, 2))
    return np.array(norms), float(np.mean(slopes)), float(np.exp(np.mean(log_rms))), h


norms, rms_gains = {}, {}
fig, ax = plt.subplots()
for scale in SCALES:
    norms[scale], slope, rms_slope, h_T = jacobian_norms(scale * Q)
    assert np.allclose(h_T, models.rnn([scale * Q, W_xh, b], xs, h0))  # same RNN as the library's
    at = f"sigma_max {scale:g}"
    for prefix, value, about, rtol in (
        ("norm", norms[scale][-1], f"||dh_T/dh_0||_2, {at}", 1e-4),
        ("rate", norms[scale][-1] ** (1 / T), f"per-step factor, {at}", 1e-4),
        ("slope", slope, f"mean tanh' on the run, {at}", 1e-4),
        ("scale", scale, "sigma_max(W_hh) = s", 1e-6),
        ("gain", scale * slope, f"sigma_max x mean tanh', {at}", 1e-4),
        ("rms_gain", scale * rms_slope, f"sigma_max x RMS tanh' (geometric mean over steps), {at}", 1e-4),
    ):
        results.number(f"{prefix}_{scale_key(scale)}", value, about, rtol=rtol)
    rms_gains[scale] = scale * rms_slope
    ax.semilogy(time_axis, norms[scale], label=f"$\\sigma_{{\\max}}$ = {scale:g}")
ax.set(title="tanh RNN: Jacobian norm through time", xlabel="time steps $T$")
ax.set_ylabel(r"$\|\partial h_T / \partial h_0\|_2$ (log scale)")
ax.legend(ncol=2)
worst = max(abs(rms_gains[s] / norms[s][-1] ** (1 / T) - 1) for s in SCALES)
results.number("rms_gain_worst_diff", worst, "largest |RMS gain / per-step factor - 1|", rtol=1e-3)
vanished = [s for s in SCALES if norms[s][-1] < 1]
results.number("vanished_count", len(vanished), "scales whose Jacobian norm ended below 1")
results.number("largest_vanishing_scale", max(vanished, default=0.0), "largest sigma_max that vanished")
listed = ", ".join(f"{s:g}" for s in vanished)
alt = (
    f"Over {T} steps the Jacobian norm falls by orders of magnitude for largest singular values "
    f"{listed}, and grows for the rest: a largest singular value above 1 is not enough to explode."
)
results.figure(fig, "jacobian_norms", alt=alt)

# %% [markdown]
# ## Is it backprop?
# $L = v^\top h_T$ for a fixed random unit vector $v$; its gradient with respect to $h_0$ is
# $(\partial h_T/\partial h_0)^\top v$. Reverse mode, forward mode, central differences and the
# complex step compute it for the vanishing and the exploding matrix. Central differences, which fail
# for reasons of their own, get two extra measurements: how many entries come out exactly 0 (the two
# values of $L$ are the same float) and, on the exploding matrix, the best agreement over a scan of
# smaller steps $h$.

# %%
v = rng.normal(size=n)
v /= np.linalg.norm(v)
STEP_SCAN = 10.0 ** -np.arange(7, 14)
DEFAULT_STEP = numerical.default_step()  # numerical.central_difference's step for |x| <= 1
results.number("central_default_step", DEFAULT_STEP, "default central-difference step eps^(1/3)")
results.number("loss_bound", np.sqrt(n), "|L| <= ||h_T|| < sqrt(n): tanh is bounded by 1")
# rounding-level values: compare with an atol that still catches a broken method
ATOL = {"forward": 1e-9, "complex": 1e-5, "central": 0.0}
for name, scale in (("vanishing", VANISHING), ("exploding", EXPLODING)):
    rnn_params = [scale * Q, W_xh, b]

    def loss(params, rnn_params=rnn_params):
        return ops.sum(models.rnn(rnn_params, xs, params[0]) * v)

    gradient = engine.grad(loss, [h0])[0]
    about = f"||dL/dh_0||, sigma_max {scale:g}"
    results.number(f"{name}_grad_norm", np.linalg.norm(gradient), about, rtol=1e-4)
    for pair, error in check.compare(loss, [h0]).items():
        method = pair.split()[-1]
        about = f"{name}: largest relative disagreement, {pair}"
        results.number(f"{name}_{method}", error, about, atol=ATOL[method], rtol=0.5)
        print(f"{name:>9} (sigma_max {scale:g}): {pair:<21} {error:.1e}")
    central = numerical.central_difference(loss, [h0])[0]
    # the forward pass's own rounding, amplified by the same Jacobian: real vs complex arithmetic
    gap = np.abs(models.rnn(rnn_params, xs, h0.astype(complex)).real - models.rnn(rnn_params, xs, h0))
    # a central difference must resolve the change 2h|dL/dx| against the float spacing at L
    change = 2 * DEFAULT_STEP * np.abs(gradient).max()
    for number, value, about, rtol, atol in (
        ("central_zeros", int(np.sum(central == 0)), "central entries exactly 0", 1e-6, 0.0),
        ("loss_spacing", np.spacing(abs(float(loss([h0])))), "spacing of floats at L", 1e-6, 0.0),
        ("central_change", change, "largest change of L over a default central step", 1e-4, 0.0),
        ("rounding_gap", gap.max(), "max |h_T(real) - Re h_T(complex)|", 1.0, 1e-6),
    ):
        results.number(f"{name}_{number}", value, f"{name}: {about}", rtol=rtol, atol=atol)

# the exploding case (the loop's last) at smaller h: truncation error falls, amplified rounding grows as 1/h
scan = {h: check.max_rel_error([gradient], numerical.central_difference(loss, [h0], h=h)) for h in STEP_SCAN}
best_step = min(scan, key=scan.get)
for h, error in scan.items():
    print(f"exploding, central differences with h = {h:.0e}: largest relative disagreement {error:.1e}")
results.number("central_best_step", best_step, "exploding: best step h in the scan", rtol=9.5)
results.number("central_best", scan[best_step], "exploding: central disagreement at the best step", atol=0.05)
results.number("central_scan_largest", STEP_SCAN[0], "largest step in the scan")
results.number("central_scan_smallest", STEP_SCAN[-1], "smallest step in the scan")

# %% [markdown]
# ## Clipping the exploding gradient: by norm or by entry
# The gradient of $L$ with respect to all parameters at $\sigma_{\max} = 3$, clipped to norm
# `--clip` (rescaled, direction kept) or each entry to $[-c, c]$ (direction changed).

# %%
full_gradient = engine.grad(lambda p: ops.sum(models.rnn(p, xs, h0) * v), [EXPLODING * Q, W_xh, b])
by_norm, norm_before = clipping.clip_by_norm(full_gradient, args.clip)
by_value = clipping.clip_by_value(full_gradient, args.clip)
results.number("clip", args.clip, "clipping threshold (norm, and entry limit)")
results.number("parameter_count", sum(g.size for g in full_gradient), "entries of the full gradient")
results.number("exploding_full_grad_norm", norm_before, "||dL/d(W_hh, W_xh, b)|| at sigma_max 3", rtol=1e-4)
results.number("cosine_norm_clip", clipping.cosine(full_gradient, by_norm), "cosine(norm-clipped, original)")
cosine_value_clip = clipping.cosine(full_gradient, by_value)
results.number("cosine_value_clip", cosine_value_clip, "cosine(entry-clipped)", rtol=1e-4)
results.number("clipped_fraction", clipping.clipped_fraction(full_gradient, args.clip), "entries clipped")

# %% [markdown]
# ## The architectural remedy: an additive memory
# With $c_t = f\,c_{t-1} + (1 - f)\tanh(W_{hh} c_{t-1} + W_{xh} x_t + b)$ the step Jacobian is
# $f I + (1 - f)\operatorname{diag}(\tanh') W_{hh}$, whose singular values lie within
# $f \pm (1 - f)\sigma_{\max}$: near $f$ when $f$ is near 1, so the product stays near $f^T$
# whatever $W_{hh}$ does. (An LSTM learns its gates per unit and step.)

# %%
f = args.forget
additive = {scale: jacobian_norms(scale * Q, forget=f)[0] for scale in (VANISHING, EXPLODING)}
upper, lower = f + (1 - f) * EXPLODING, f - (1 - f) * VANISHING
results.number("forget", f, "forget gate f of the additive cell")
results.number("forget_power", f**T, "f^T")
for scale, norm in additive.items():
    about = f"additive cell ||dc_T/dc_0||, sigma_max {scale:g}"
    results.number(f"additive_norm_{scale_key(scale)}", norm[-1], about, rtol=1e-4)
results.number("additive_upper_3", upper**T, "(f + (1 - f) sigma_max)^T at the exploding scale")
results.number("additive_lower_0p5", lower**T, "(f - (1 - f) sigma_max)^T at the vanishing scale")

fig, ax = plt.subplots()
for colour, (scale, additive_norms) in zip(PALETTE, additive.items(), strict=False):
    sigma = f"$\\sigma_{{\\max}}$ = {scale:g}"
    ax.semilogy(time_axis, norms[scale], color=colour, linestyle="--", label=f"tanh RNN, {sigma}")
    ax.semilogy(time_axis, additive_norms, color=colour, label=f"additive cell, {sigma}")
ax.semilogy(time_axis, f**time_axis, color=PALETTE[2], linestyle=":", label="$f^T$")
ax.set(title="Additive memory: the Jacobian follows the forget gate", xlabel="time steps $T$")
ax.set_ylabel(r"$\|\partial h_T/\partial h_0\|_2$ or $\|\partial c_T/\partial c_0\|_2$ (log scale)")
ax.legend(fontsize="x-small")
all_additive = np.concatenate(list(additive.values()))
alt = (
    f"With an additive memory and forget gate {f:g} the Jacobian norm stays between "
    f"{all_additive.min():.2g} and {all_additive.max():.2g} over {T} steps for both matrices "
    f"(f^T = {f**T:.2g}), while the tanh RNN's falls to {norms[VANISHING][-1]:.0e} "
    f"or grows to {norms[EXPLODING][-1]:.0e}."
)
results.figure(fig, "additive_cell", alt=alt)

# %%
results.save()
