"""Checking a backward pass in PyTorch: torch.autograd.gradcheck on a correct and a planted bug.

The chapter's small tanh network and its sigmoid layer, with the same arrays as
snippets/gradient_check.py on the same seeds; the bug is a torch.autograd.Function whose backward
forgot the factor (1 - y), as gradlab.planted. Quoted by docs/checking-a-backward-pass.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from gradlab import check, engine, models, ops, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
torch.set_num_threads(1)
torch_major, torch_minor = (int(part) for part in torch.__version__.split(".")[:2])  # 2.10 is not 2.1
results.number("torch_version_major", torch_major, "PyTorch major version")
results.number("torch_version_minor", torch_minor, "PyTorch minor version")
WEIGHTS = {"unit": 1.0, "small": 1e-6}  # the numpy snippet's loss weights


# %% [markdown]
# ## A sigmoid with a planted bug, and gradcheck on both rules


# %%
# --8<-- [start:core]
class ForgotFactor(torch.autograd.Function):
    """sigmoid whose backward returns grad * y, where the derivative is y * (1 - y)."""

    @staticmethod
    def forward(ctx, t):
        y = torch.sigmoid(t)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y  # BUG: should be grad * y * (1 - y)


def sigmoid_loss(W, b, X, sigmoid, weight):
    return weight * ((sigmoid(X @ W + b) - 0.5) ** 2).mean()


def passes(sigmoid, W, b, X, weight, fast_mode=False):  # defaults eps 1e-6, atol 1e-5, rtol 1e-3
    f = lambda W, b: sigmoid_loss(W, b, X, sigmoid, weight)  # noqa: E731
    return torch.autograd.gradcheck(f, (W, b), raise_exception=False, fast_mode=fast_mode)


# --8<-- [end:core]


RULES = {"correct": torch.sigmoid, "buggy": ForgotFactor.apply}
passed = {f"{r}_{w}{m}": 0 for r in RULES for w in WEIGHTS for m in ("", "_fast")}
for seed in SEEDS:
    rng = np.random.default_rng(seed)  # the draws of gradient_check.py's tolerance section
    X = torch.tensor(rng.normal(size=(16, 4)) * np.array([1e-8, 1.0, 1.0, 1.0]))  # one tiny input
    W = torch.tensor(rng.normal(size=(4, 3)), requires_grad=True)
    b = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    for (rule, sigmoid), (w, weight) in ((r, x) for r in RULES.items() for x in WEIGHTS.items()):
        passed[f"{rule}_{w}"] += passes(sigmoid, W, b, X, weight)
        passed[f"{rule}_{w}_fast"] += passes(sigmoid, W, b, X, weight, fast_mode=True)
for key, count in passed.items():
    results.number(f"gradcheck_{key}", count, f"seeds on which gradcheck passes: {key.replace('_', ' ')}")
n = len(SEEDS)
catches = all(passed[f"correct_unit{m}"] == n and passed[f"buggy_unit{m}"] == 0 for m in ("", "_fast"))
results.claim(
    "gradcheck_catches_bug",
    catches,
    "At loss weight 1, gradcheck (default and fast_mode) passes the correct rule and fails the planted "
    "bug on every seed.",
    passed,
)
misses = all(passed[f"{r}_small{m}"] == n for r in RULES for m in ("", "_fast"))
results.claim(
    "gradcheck_misses_small_bug",
    misses,
    "At loss weight 1e-6, gradcheck's default atol 1e-5 passes the planted bug too, on every seed "
    "(default and fast_mode).",
    passed,
)


# %% [markdown]
# ## The tanh network: autograd against gradlab's reverse mode, and gradcheck on it


# %%
def mse(params, X, y):  # models.mlp with tanh, in torch
    h = X
    for i in range(0, len(params) - 2, 2):
        h = torch.tanh(h @ params[i] + params[i + 1])
    return ((h @ params[-2] + params[-1] - y) ** 2).mean()


errors, tanh_passes = [], 0
for seed in SEEDS:
    rng = np.random.default_rng(seed)  # the draws of gradient_check.py's sweep()
    X, y = rng.normal(size=(16, 4)), rng.normal(size=(16, 1))
    p = models.init_mlp([4, 8, 8, 1], "glorot", rng)
    ref = engine.grad(lambda q, X=X, y=y: ops.mean((models.mlp(q, X, "tanh") - y) ** 2), p)
    tp = [torch.tensor(a, requires_grad=True) for a in p]
    Xt, yt = torch.tensor(X), torch.tensor(y)
    mse(tp, Xt, yt).backward()
    errors.append(check.normwise_rel_error([t.grad.numpy() for t in tp], ref))
    tanh_passes += torch.autograd.gradcheck(
        lambda *q, Xt=Xt, yt=yt: mse(q, Xt, yt), tuple(tp), raise_exception=False
    )
results.spread("autograd_vs_gradlab", errors, "normwise |torch - gradlab| / |gradlab|, tanh net", atol=1e-14)
results.number("gradcheck_tanh_passes", tanh_passes, "seeds on which gradcheck passes the tanh network")
results.claim(
    "autograd_matches_gradlab",
    max(errors) < 1e-12 and tanh_passes == n,
    "PyTorch's autograd and gradlab's reverse mode agree to 1e-12 on the tanh network on every seed, "
    "and gradcheck passes it.",
    {"errors": errors, "passes": tanh_passes},
)
for key in ("correct_unit", "buggy_unit", "correct_small", "buggy_small"):
    results.twin(
        f"twin_gradcheck_{key}", passed[key], f"gradcheck passes, {key}",
        of=f"gradient_check.gradcheck_{key}",
        rtol=0, atol=0,
        reason="A count of seeds passing the same test |a - b| <= 1e-5 + 1e-3 |b|, with b from central "
        "differences (gradcheck's step 1e-6, gradlab's eps^(1/3)): the steps move b by far less than the "
        "tolerance, so the counts must be equal.",
    )  # fmt: skip

# %%
results.save()
