"""Clipping the wrong thing in PyTorch: clamp(delta, -1, 1)^2 against nn.HuberLoss.

The same TD errors as snippets/clipped_error.py (Student-t draws from the same seeds): the share
of examples whose gradient is exactly zero, and Huber's gradient against the clipped residual.
Quoted by docs/clipping-the-wrong-thing.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from gradlab import clipping, engine, ops, snippet
from torch import nn

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
torch.set_num_threads(1)
for part, name in zip(
    torch.__version__.split("+")[0].split(".")[:3], ("major", "minor", "patch"), strict=True
):
    results.number(f"torch_{name}", int(part), f"PyTorch version, {name}")
BATCH, DOF = 256, 2.0  # clipped_error.py's defaults


# %% [markdown]
# ## Per-example gradients of the two losses
# The prediction is the TD error itself and the target 0, so delta is the drawn error exactly.


# %%
# --8<-- [start:core]
def per_example_gradients(td_errors):
    """d loss / d prediction per example: clamped-then-squared, Huber, per-sample clipped, clip(delta)."""
    prediction = torch.tensor(td_errors, requires_grad=True)
    target = torch.zeros_like(prediction)
    delta = prediction - target
    (0.5 * delta.clamp(-1, 1) ** 2).sum().backward()  # the bug: clip the error, then square
    clipped = prediction.grad.clone()
    prediction.grad = None
    nn.HuberLoss(reduction="sum", delta=1.0)(prediction, target).backward()  # the fix
    huber = prediction.grad.clone()
    prediction.grad = None
    # the same fix without a Huber loss: each sample's gradient dL/dq = delta, clipped before backward
    (prediction * delta.detach().clamp(-1, 1)).sum().backward()
    return clipped, huber, prediction.grad, delta.detach().clamp(-1, 1)


# --8<-- [end:core]
zero, gaps, same_as_gradlab, at_bound = [], [], True, 0
for seed in snippet.seeds(args.seed):
    td_errors = np.random.default_rng(seed).standard_t(DOF, size=BATCH)  # clipped_error.py's first draw
    clipped, huber, per_sample, residual = per_example_gradients(td_errors)
    zero.append((clipped == 0).double().mean().item())
    gaps.append(max((huber - residual).abs().max().item(), (per_sample - residual).abs().max().item()))
    gradlab = engine.grad(lambda p: ops.sum(0.5 * ops.clip(p[0], -1.0, 1.0) ** 2), [td_errors])[0]
    same_as_gradlab &= bool(np.array_equal(clipped.numpy(), gradlab))
    at_bound += int(np.sum(np.abs(td_errors) == 1))
results.twin_spread(
    "zero_fraction", zero, "share of examples with exactly zero gradient",
    of="clipped_error.zero_fraction", rtol=0, atol=0,
    reason="the same float64 errors; an exact zero is counted, no rounding enters",
)  # fmt: skip
results.number("huber_gap", max(gaps), "largest |Huber gradient - clamp(delta)| over seeds", atol=1e-15)
results.number("errors_at_bound", at_bound, "TD errors exactly at +-1, all seeds")

# %% [markdown]
# ## At the bound: torch.clamp passes the gradient at +-1, gradlab's clip does not

# %%
bound = torch.tensor([-1.0, 1.0], dtype=torch.float64, requires_grad=True)
(0.5 * bound.clamp(-1, 1) ** 2).sum().backward()
gradlab_bound = engine.grad(lambda p: ops.sum(0.5 * ops.clip(p[0], -1.0, 1.0) ** 2), [np.array([-1.0, 1.0])])[
    0
]
results.number("grad_at_one", bound.grad[1].item(), "torch: d/d delta of clamp(delta)^2 / 2 at delta = 1")
results.number("gradlab_grad_at_one", gradlab_bound[1], "gradlab: the same at delta = 1")
print(f"zero share {zero}, Huber gap {max(gaps)}, at bound {at_bound}, grad at +-1: {bound.grad.tolist()}")
results.claim(
    "clamp_matches_gradlab", same_as_gradlab and max(gaps) == 0 and at_bound == 0,
    "On every seed the clamped loss's gradient in PyTorch equals gradlab's exactly on every example, and "
    "nn.HuberLoss's gradient and the per-sample clipped gradient both equal the clipped residual "
    "clamp(delta, -1, 1) exactly; no error sits at +-1.",
    {"gaps": gaps, "at_bound": at_bound},
)  # fmt: skip
results.claim(
    "clamp_passes_at_bound",
    bool(torch.equal(bound.grad, bound.detach())) and bool(np.all(gradlab_bound == 0)),
    "At delta = +-1 exactly, torch.clamp passes the gradient (d/d delta = delta = +-1); "
    "gradlab's clip gives 0.",
    {"torch": bound.grad.numpy(), "gradlab": gradlab_bound},
)  # fmt: skip

# %% [markdown]
# ## What clip_grad_norm_ returns: the norm before clipping
# The linear predictor of clipped_error.py at its start (the same draws), squared error: its gradient's
# global norm, clipped by norm to `MAX_NORM`. A logger that records the return value logs the
# unclipped norm; the norm the update uses is the one measured after the call.

# %%
COMMON, RARE, MAX_NORM = 60, 4, 0.1  # clipped_error.py's sample counts; a threshold below every seed's norm
W_TRUE, W_START = np.array([1.0, -2.0, 3.0]), np.array([1.6, -2.6, 0.0])


# --8<-- [start:leak]
def clip_and_log(X, y, w_start, max_norm):
    model = nn.Linear(3, 1, bias=False, dtype=torch.float64)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(w_start)[None])
    (0.5 * (model(X)[:, 0] - y) ** 2).mean().backward()
    logged = nn.utils.clip_grad_norm_(model.parameters(), max_norm).item()  # what a logger records
    used = torch.linalg.vector_norm(model.weight.grad).item()  # what the update uses
    return logged, used


# --8<-- [end:leak]
logged, used, gradlab_norm, rare_start = [], [], [], []
for seed in snippet.seeds(args.seed):
    generator = np.random.default_rng(seed)  # clipped_error.py's stream: TD errors, targets, then X
    generator.standard_t(DOF, size=BATCH), generator.normal(size=BATCH)
    X = np.zeros((COMMON + RARE, 3))
    X[:COMMON, :2] = generator.normal(size=(COMMON, 2))
    X[COMMON:, 2] = generator.uniform(0.8, 1.2, size=RARE)
    y = X @ W_TRUE
    rare_start.append(np.abs(X @ W_START - y)[COMMON:].min())
    before, after = clip_and_log(torch.tensor(X), torch.tensor(y), W_START, MAX_NORM)
    logged.append(before), used.append(after)
    gradient = engine.grad(lambda p, X=X, y=y: ops.mean(0.5 * (p[0] @ X.T - y) ** 2), [W_START])
    gradlab_norm.append(clipping.global_norm(gradient))
logged, used, gradlab_norm = np.array(logged), np.array(used), np.array(gradlab_norm)
results.twin_spread(
    "rare_start_error", rare_start, "smallest rare-sample |error| at the start (checks the draws)",
    of="clipped_error.rare_start_error", rtol=1e-12, atol=0, reason="the same float64 draws and formula",
)  # fmt: skip
results.number("max_norm", MAX_NORM, "the clipping threshold of the leak demonstration")
results.spread("logged_norm", logged, "clip_grad_norm_'s return value: the norm before clipping", rtol=1e-9)
results.spread("used_norm", used, "the gradient's norm after clip_grad_norm_", rtol=1e-9)
results.spread("used_shortfall", (MAX_NORM - used) / MAX_NORM, "1 - used norm / max_norm", rtol=1e-3)
shortfall = (MAX_NORM - used) / MAX_NORM * logged  # torch divides by (norm + 1e-6): expect ~1e-6
results.claim(
    "clip_returns_norm_before",
    bool(np.all(np.abs(logged / gradlab_norm - 1) < 1e-12) and np.all(logged > 2 * MAX_NORM))
    and bool(np.all((shortfall > 0.9e-6) & (shortfall < 1.1e-6))),
    "clip_grad_norm_ returns the gradient's norm before clipping (gradlab's global norm, to 1e-12); after "
    "the call the gradient's norm is max_norm * N / (N + 1e-6) for that returned norm N",
    {"logged": logged, "used": used, "gradlab": gradlab_norm, "shortfall": shortfall},
)  # fmt: skip

# %%
results.save()
