"""Stable formulations in PyTorch: log(softmax) against F.cross_entropy, BCEWithLogitsLoss, BCELoss.

The numpy snippet stable_softmax.py measures where each program for the cross-entropy fails with
gradlab; this script runs PyTorch's own functions on the same logits and records the numbers
beside gradlab's. Quoted by docs/stable-formulations.md.
"""

# %%
import decimal
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
C, LABEL, CONFIDENT, WRONG = 1000.0, 2, 50.0, -200.0  # the numpy snippet's defaults


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
results.twin(
    "bce_clamped_loss",
    bce_clamped.item(),
    "BCELoss on the float32 sigmoid of z",
    of="stable_softmax.bce_clamped_loss",
    rtol=0,
    atol=0,
    reason="the clamp value -100, exact",
)
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
