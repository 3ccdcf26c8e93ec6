"""The shape of the loss in PyTorch: nn.MSELoss and nn.HuberLoss on outliers, F.cross_entropy's binary twin.

The same line and outliers as snippets/loss_shape.py (drawn with numpy from the same seeds): each
point's own gradient by torch.func.vmap(grad), the outliers' share of the summed gradient norms,
the Huber fit by gradient descent, and the logit gradients of sigmoid + MSE against
F.binary_cross_entropy_with_logits, in float64 and float32. Quoted by docs/shape-of-the-loss.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
import torch.nn.functional as F
from gradlab import losses, shape, snippet
from torch import nn
from torch.func import grad, vmap

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
torch.set_num_threads(1)
for part, name in zip(
    torch.__version__.split("+")[0].split(".")[:3], ("major", "minor", "patch"), strict=True
):
    results.number(f"torch_{name}", int(part), f"PyTorch version, {name}")
POINTS, OUTLIERS, OFFSET, DELTA, LOGIT = 40, 3, -8.0, 1.0, -10.0  # loss_shape.py's defaults
rngs = [np.random.default_rng(seed) for seed in snippet.seeds(args.seed)]
x = np.sort(np.stack([rng.uniform(-1, 1, POINTS) for rng in rngs]), axis=1)  # loss_shape.py's draws
y = 2.0 * x + 0.5 + 0.3 * np.stack([rng.normal(size=POINTS) for rng in rngs])
y[:, -OUTLIERS:] += OFFSET  # the largest x
x, y = torch.tensor(x), torch.tensor(y)

# %% [markdown]
# ## Each point's own gradient, and the outliers' share
# `vmap(grad(...))` differentiates one point's loss with respect to (slope, intercept), for every
# point at once. `nn.MSELoss` is $r^2$, twice gradlab's $\tfrac12 r^2$: shares do not see the factor.


# %%
# --8<-- [start:core]
LOSSES = {"squared": nn.MSELoss(), "huber": nn.HuberLoss(delta=DELTA)}


def outlier_share(loss, params, x, y):
    """sum of ||g_i|| over the outliers / over all points, g_i = d loss(a x_i + b, y_i) / d(a, b)."""
    point_grad = vmap(grad(lambda p, xi, yi: loss(p[0] * xi + p[1], yi)), in_dims=(None, 0, 0))
    norms = torch.linalg.vector_norm(point_grad(params, x, y), dim=-1)
    return (norms[-OUTLIERS:].sum() / norms.sum()).item()


def fit_huber(x, y, lr=1.0, steps=2000):
    """Plain gradient descent on the mean Huber loss from (0, 0), as loss_shape.py does."""
    params = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.SGD([params], lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        LOSSES["huber"](params[0] * x + params[1], y).backward()
        optimizer.step()
    return params.detach()


# --8<-- [end:core]
shares = {key: [] for key in ("squared_initial", "huber_initial", "squared_fitted", "huber_fitted")}
huber_slope_error, gap = [], 0.0  # gap: largest relative difference from gradlab's per-point norms
GRADLAB = {"squared": losses.squared_error, "huber": lambda r: losses.huber(r, DELTA)}
for xs, ys in zip(x, y, strict=True):
    least_squares = torch.linalg.lstsq(torch.stack([xs, torch.ones_like(xs)], 1), ys[:, None]).solution[:, 0]
    huber_fit = fit_huber(xs, ys)
    huber_slope_error.append(abs(huber_fit[0].item() - 2.0))
    for name, fitted in (("squared", least_squares), ("huber", huber_fit)):
        shares[f"{name}_initial"].append(
            outlier_share(LOSSES[name], torch.zeros(2, dtype=torch.float64), xs, ys)
        )
        shares[f"{name}_fitted"].append(outlier_share(LOSSES[name], fitted, xs, ys))
        point_grad = vmap(
            grad(lambda p, xi, yi, f=LOSSES[name]: f(p[0] * xi + p[1], yi)), in_dims=(None, 0, 0)
        )
        ours = torch.linalg.vector_norm(point_grad(fitted, xs, ys), dim=-1).numpy()
        theirs = shape.per_point_gradient_norms(
            GRADLAB[name], *fitted.numpy()[:, None], xs[None].numpy(), ys[None].numpy()
        )
        factor = 2 if name == "squared" else 1  # MSELoss is r^2, gradlab's squared error r^2 / 2
        gap = max(gap, float(np.max(np.abs(ours - factor * theirs[0]) / (factor * theirs[0]))))
for key, values in shares.items():
    results.twin_spread(
        f"{key.split('_')[0]}_share_{key.split('_')[1]}", values, f"{key}: outliers' share of sum |g_i|",
        of=f"loss_shape.{key.split('_')[0]}_share_{key.split('_')[1]}", rtol=1e-9, atol=0,
        reason="float64, the same formula; the fits come from another solver (lstsq, SGD order of sums)",
    )  # fmt: skip
results.twin_spread(
    "huber_slope_error", huber_slope_error, "Huber fit by torch.optim.SGD: |slope - 2|",
    of="loss_shape.huber_slope_error", rtol=1e-9, atol=0,
    reason="float64 gradient descent, same rate and steps, converged; only the order of sums differs",
)  # fmt: skip

results.number(
    "norm_gap", gap, "largest relative difference of |g_i| from gradlab's, at each fit", atol=1e-13
)
results.claim(
    "autograd_matches_gradlab", gap < 1e-13,
    "every point's gradient norm from vmap(grad) matches gradlab's reverse mode to 1e-13 (MSELoss halved)",
    {"gap": gap},
)  # fmt: skip

# %% [markdown]
# ## The interface: MSELoss is $r^2$, HuberLoss $\tfrac12 r^2$ inside $\delta$, smooth_l1 Huber / $\beta$
# Swapping `nn.MSELoss` for `nn.HuberLoss` halves every small residual's gradient, a change of
# learning rate nobody asked for; `F.smooth_l1_loss(beta=2)` is `huber_loss(delta=2)` divided by 2.

# %%
r = torch.linspace(-3, 3, 61, dtype=torch.float64)
zero_target = torch.zeros_like(r)
per_point = {
    "mse": grad(lambda r: F.mse_loss(r, zero_target, reduction="sum"))(r),
    "huber1": grad(lambda r: F.huber_loss(r, zero_target, reduction="sum", delta=1.0))(r),
    "huber2": grad(lambda r: F.huber_loss(r, zero_target, reduction="sum", delta=2.0))(r),
    "smooth2": grad(lambda r: F.smooth_l1_loss(r, zero_target, reduction="sum", beta=2.0))(r),
}
inside = r.abs() < 1
results.claim(
    "mse_twice_huber",
    bool(torch.equal(per_point["mse"][inside], 2 * per_point["huber1"][inside])),
    "nn.MSELoss's gradient is exactly twice nn.HuberLoss's for every residual inside (-δ, δ), δ = 1",
)
results.claim(
    "smooth_l1_is_huber_over_beta",
    bool(torch.allclose(per_point["smooth2"] * 2, per_point["huber2"], rtol=1e-15, atol=0))
    and not torch.allclose(per_point["smooth2"], per_point["huber2"]),
    "F.smooth_l1_loss(beta=2)'s gradient is F.huber_loss(delta=2)'s divided by 2",
)

# %% [markdown]
# ## The confidently wrong logit, in float64 and float32
# Label 1: sigmoid + `F.mse_loss` against `F.binary_cross_entropy_with_logits`, at the quoted
# logit and on a grid down to $z = -800$, where `torch.sigmoid`'s $e^{-z}$ overflows.
# Written $e^z/(1+e^z)$, the same function keeps a non-zero gradient until $\sigma(z)$ itself
# underflows: where `torch.sigmoid`'s zero starts is its formula's choice, not floating point's.


# %%
def logit_gradients(z):
    """dL/dz for label 1 at every z: sigmoid + squared error, cross-entropy from logits, and sigmoid +
    squared error with the sigmoid written e^z / (1 + e^z), whose e^z cannot overflow for z <= 0."""
    one = torch.ones_like(z)
    squared = grad(lambda z: F.mse_loss(torch.sigmoid(z), one, reduction="sum"))(z)
    rewritten = grad(lambda z: F.mse_loss(torch.exp(z) / (1 + torch.exp(z)), one, reduction="sum"))(z)
    return squared, grad(lambda z: F.binary_cross_entropy_with_logits(z, one, reduction="sum"))(z), rewritten


found = {}
for dtype, name in ((torch.float64, "float64"), (torch.float32, "float32")):
    zs = torch.cat([torch.tensor([LOGIT]), torch.arange(0.0, -800.0, -0.01)]).to(dtype)
    squared, ce, rewritten = logit_gradients(zs)
    found["squared", name], found["ce", name] = squared[0].item(), ce[0].item()
    found["zero_from", name] = zs[squared == 0].max().item()
    found["rewritten_zero_from", name] = zs[rewritten == 0].max().item()
    results.number(
        f"rewritten_zero_from_{name}", found["rewritten_zero_from", name], f"{name}: e^z/(1+e^z), 0 from z",
        atol=0.05,  # a subnormal e^z rounds by the libm: a grid step or two
    )  # fmt: skip
    found["ce_smallest", name] = ce[zs <= LOGIT].abs().min().item()
    results.number(f"squared_zero_from_{name}", found["zero_from", name], f"{name}: 0 from z", atol=0.02)
for key in ("squared", "ce"):
    results.twin(
        f"logit_grad_{key}", found[key, "float64"], f"dL/dz at z = {LOGIT:g}, float64",
        of=f"loss_shape.logit_grad_{key}", rtol=1e-12, atol=0,
        reason="float64; torch's sigmoid backward is y(1 - y) from the output, gradlab's sigma(z) sigma(-z)",
    )  # fmt: skip
    results.number(f"logit_grad_{key}_float32", found[key, "float32"], "dL/dz, float32", rtol=1e-5)
relative32 = {k: abs(found[k, "float32"] / found[k, "float64"] - 1) for k in ("squared", "ce")}
overflow = {d: -float(np.log(np.finfo(d).max)) for d in ("float64", "float32")}
results.claim(
    "float32_same_small_gradient",
    max(relative32.values()) < 1e-6
    and all(abs(found["zero_from", d] - overflow[d]) < 0.02 for d in overflow),
    f"at z = {LOGIT:g} float32 gives both logit gradients to 1e-6; the squared-error gradient is exactly 0 "
    "from where torch.sigmoid's e^-z overflows to inf, -ln(largest float), in both dtypes",
    {"relative32": relative32, "overflow": overflow},
)  # fmt: skip
# IEEE's own limit: sigma(z) ~ e^z rounds to 0 below half the smallest subnormal float
underflow = {
    d: float(np.log(np.finfo(d).smallest_subnormal)) - float(np.log(2)) for d in ("float64", "float32")
}
results.claim(
    "zero_is_the_formulas",
    all(abs(found["rewritten_zero_from", d] - underflow[d]) < 0.05 for d in underflow)
    and all(found["rewritten_zero_from", d] < found["zero_from", d] - 14 for d in underflow),
    "written e^z / (1 + e^z), sigmoid + squared error keeps a non-zero gradient down to where sigma(z) "
    "rounds to 0, ln(smallest subnormal / 2), over 14 units of z beyond torch.sigmoid's zero, in both dtypes",
    {"underflow": underflow, "found": {str(k): v for k, v in found.items()}},
)  # fmt: skip
results.claim(
    "ce_never_zero", min(found["ce_smallest", n] for n in ("float32", "float64")) > 0.99,
    f"cross-entropy's logit gradient is above 0.99 in size for every z from {LOGIT:g} to -800, both dtypes",
    {str(k): v for k, v in found.items()},
)  # fmt: skip
print(f"shares {shares}\nlogit gradients {found}")

# %%
results.save()
