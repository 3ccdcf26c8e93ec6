"""Stable formulations in PyTorch: log(softmax) against F.cross_entropy, BCEWithLogitsLoss, BCELoss.

The numpy snippet stable_softmax.py measures where each program for the cross-entropy fails with
gradlab; this script runs PyTorch's own functions on the same logits and records the numbers
beside gradlab's. Quoted by docs/stable-formulations.md.
"""

# %%
import decimal
import math
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import torch.nn.functional as F
from gradlab import snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
torch.set_num_threads(1)
torch_major, torch_minor = (int(part) for part in torch.__version__.split(".")[:2])  # 2.10 is not 2.1
results.number("torch_version_major", torch_major, "PyTorch major version")
results.number("torch_version_minor", torch_minor, "PyTorch minor version")
C, LABEL, CONFIDENT, WRONG, MODERATE = 1000.0, 2, 50.0, -200.0, -30.0  # the numpy snippet's defaults


# %% [markdown]
# ## The same logits through PyTorch's functions
# $z = c\,[1, 0, -1]$ with $c = 1000$ and true class 2, as in the numpy snippet: the softmax
# followed by a log, against `F.cross_entropy`; then the binary losses at $z = 50$ and $z = -200$.


# %%
# --8<-- [start:core]
def loss_and_grad(loss_fn, z):
    z = z.clone().requires_grad_(True)
    loss = loss_fn(z)
    loss.backward()
    return loss.item(), z.grad


z = C * torch.tensor([[1.0, 0.0, -1.0]], dtype=torch.float64)  # true class: the smallest logit
y = torch.tensor([LABEL])
naive, naive_grad = loss_and_grad(lambda z: -torch.log(torch.softmax(z, dim=1))[0, LABEL], z)
stable, stable_grad = loss_and_grad(lambda z: F.cross_entropy(z, y), z)  # log_softmax inside
exact = torch.softmax(z, dim=1) - F.one_hot(y, 3)  # the gradient, softmax(z) - one_hot(y)

one = torch.ones(1, dtype=torch.float64)  # label 1
bce_logits = F.binary_cross_entropy_with_logits(torch.tensor([CONFIDENT], dtype=torch.float64), one)
p = torch.sigmoid(torch.tensor([WRONG]))  # float32: sigmoid(-200) underflows to 0
bce_clamped = torch.nn.BCELoss()(p, one.float())  # log(0) = -inf, clamped at -100


def bce_of_sigmoid(z, dtype):  # BCELoss(sigmoid(z), 1) and dL/dz; its backward divides by max(p(1-p), 1e-12)
    return loss_and_grad(lambda z: F.binary_cross_entropy(torch.sigmoid(z), torch.ones(1, dtype=dtype)),
                         torch.tensor([z], dtype=dtype))  # fmt: skip


# --8<-- [end:core]
nan_fraction = torch.isnan(naive_grad).double().mean().item()
print(f"c = {C:g}: log(softmax) loss {naive}, NaN gradient entries {nan_fraction:.0%}")
print(f"F.cross_entropy loss {stable}, gradient {stable_grad.tolist()}")
print(
    f"BCEWithLogitsLoss at z = {CONFIDENT:g}: {bce_logits.item()!r};",
    f"BCELoss at sigmoid({WRONG:g}): {bce_clamped}",
)
results.number("naive_loss_inf", bool(naive == float("inf")), "log(softmax) loss is +inf at c")
results.twin(
    "softmax_then_log_nan_float64",
    nan_fraction,
    "log(softmax): fraction of NaN gradient entries",
    of="stable_softmax.softmax_then_log_nan_float64",
    rtol=0,
    atol=0,
    reason="a fraction of NaN entries of 3: must be equal",
)
error = (stable_grad - exact).abs().max().item()
results.twin(
    "stable_grad_error_float64",
    error,
    "F.cross_entropy: max |grad - (softmax - one_hot)|",
    of="stable_softmax.stable_grad_error_float64",
    rtol=0,
    atol=1e-15,
    reason="float64; the exact gradient [1, 0, -1] at c = 1000 is representable, so both kernels get it to "
    "within a few ulps of 1",
)
results.number("stable_loss", stable, "F.cross_entropy at c (= 2c)", rtol=1e-12)
results.twin(
    "bce_stable_float64",
    bce_logits.item(),
    "BCEWithLogitsLoss at z, float64",
    of="stable_softmax.bce_stable_float64",
    rtol=1e-12,
    atol=0,
    reason="float64, log1p(exp(-z)) in PyTorch's kernel; libm's exp may differ in the last bit",
)
results.number("bce_probability_float32", p.item(), "sigmoid(z) in float32, PyTorch")
results.number("bce_clamped_loss", bce_clamped.item(), "BCELoss on the float32 sigmoid of z")
bce = {}  # BCELoss of sigmoid(z), label 1: the loss and dL/dz, where the true dL/dz is sigma(z) - 1, about -1
for (key, z), (name, dtype) in zip(
    [("clamped", WRONG), ("moderate", MODERATE)] * 2,
    [("float32", torch.float32)] * 2 + [("float64", torch.float64)] * 2,
    strict=True,
):
    loss, grad = bce_of_sigmoid(z, dtype)
    bce[key, name] = loss, grad.item()
    results.number(f"bce_{key}_loss_{name}", loss, f"{name}: BCELoss(sigmoid(z)), z = {z:g}")
    results.number(f"bce_{key}_grad_{name}", grad.item(), f"{name}: its dL/dz", atol=1e-300)
    logit, target = torch.tensor([z], dtype=dtype), torch.ones(1, dtype=dtype)
    logits_grad = loss_and_grad(lambda z, t=target: F.binary_cross_entropy_with_logits(z, t), logit)[1].item()
    results.number(f"bce_logits_{key}_grad_{name}", logits_grad, f"{name}: BCEWithLogitsLoss dL/dz")
results.number("bce_moderate_logit", MODERATE, "a wrong logit z whose BCELoss is exact")
results.number("bce_floor_logit", math.log(1e-12), "z below which p(1 - p) < 1e-12, the backward's floor")
results.claim(
    "bce_backward_floor",
    all(
        abs(bce["moderate", p][0] / -MODERATE - 1) < 1e-6 and 0.05 < abs(bce["moderate", p][1]) < 0.2
        for p in ("float32", "float64")
    )
    and bce["clamped", "float32"] == (100, 0)
    and bce["clamped", "float64"][0] == 100
    and abs(bce["clamped", "float64"][1]) < 1e-30,
    "BCELoss of sigmoid(z): at z = -30 the loss is exact but |dL/dz| is about a tenth of the true one "
    "(between 0.05 and 0.2; true: about 1), in both "
    "precisions; at z = -200 the loss is capped at 100 and dL/dz is 0 in float32, below 1e-30 in float64",
    {f"{k} {p}": value for (k, p), value in bce.items()},
)
# where log(softmax) stops being finite: the loss, and its gradient, on a grid of c (one batch per dtype)
for name, dtype, top in (("float32", torch.float32, 60.0), ("float64", torch.float64, 400.0)):
    scales = torch.arange(1.0, top, 1e-3, dtype=torch.float64)
    zs = (
        (scales[:, None] * torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64)).to(dtype).requires_grad_(True)
    )
    losses = -torch.log(torch.softmax(zs, dim=1))[:, LABEL]
    losses.sum().backward()  # the rows are independent: each row's gradient is its own
    for key, finite in (("", torch.isfinite(losses)), ("grad_", torch.isfinite(zs.grad).all(dim=1))):
        last = scales[finite.nonzero().max()].item()
        about = f"{name} log(softmax): last finite c, {key or 'loss'}"
        results.twin(f"limit_{key}softmax_then_log_{name}", last, about,
                     of=f"stable_softmax.limit_{key}softmax_then_log_{name}", rtol=1e-4, atol=0,
                     reason="PyTorch's fused softmax, grid of step 0.001; numpy: bisection")  # fmt: skip
# the naive cross-entropy, -log(e^z / sum e^z)[y]: PyTorch's division backward, -grad * ((a / b) / b), forms
# e^(-3c) before it meets the incoming -1/p_y, as gradlab's -a/b^2 does; right (normwise 1e-6) and finite to c
scales = torch.arange(200.0, 400.0, 1e-3, dtype=torch.float64)
zs = (scales[:, None] * torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64)).requires_grad_(True)
exponentials = torch.exp(zs)
(-torch.log(exponentials / exponentials.sum(dim=1, keepdim=True))[:, LABEL]).sum().backward()
exact_grads = torch.softmax(zs.detach(), dim=1) - F.one_hot(torch.tensor(LABEL), 3)
right = (zs.grad - exact_grads).norm(dim=1) / exact_grads.norm(dim=1) < 1e-6  # NaN compares False
REASONS = {
    "right": "the same underflow of e^(-3c), formed as (a/b)/b instead of a/b^2: the subnormal loses 1e-6 "
    "at a slightly different c; grid of step 0.001, numpy: bisection",
    "finite": "1/p_y overflows at ½ ln(max) in both; grid of step 0.001, numpy: bisection",
}
for key, flags in (("right", right), ("finite", torch.isfinite(zs.grad).all(dim=1))):
    last = scales[int(torch.argmin(flags.int())) - 1].item()  # the last c before the first failure
    rtol = 1e-2 if key == "right" else 1e-4
    about, of = f"naive CE: reverse mode {key} to c", f"stable_softmax.window_{key}_reverse"
    results.twin(f"window_{key}_reverse", last, about, of=of, rtol=rtol, atol=0, reason=REASONS[key])
decimal.getcontext().prec = 60
reference = float((1 + decimal.Decimal(-CONFIDENT).exp()).ln())  # log(1 + e^-z), 60 digits
results.claim(
    "torch_like_gradlab",
    naive == float("inf")
    and nan_fraction == 1
    and error < 1e-15
    and stable == 2 * C
    and abs(bce_logits.item() / reference - 1) < 1e-12
    and bce_clamped.item() == 100,
    "In PyTorch, log(softmax) gives an infinite loss and an all-NaN gradient at c = 1000, F.cross_entropy "
    "the finite loss 2c and the gradient softmax - one_hot; BCEWithLogitsLoss at z = 50 matches the "
    "decimal reference to 1e-12; BCELoss on sigmoid(-200) in float32 returns the clamped 100, not 200.",
    {
        "naive": naive,
        "nan": nan_fraction,
        "error": error,
        "bce": bce_logits.item(),
        "clamped": bce_clamped.item(),
    },
)

# %%
results.save()
