"""Gradients through time in PyTorch: ||dh_T/dh_0|| by torch.func.jacrev, and clip_grad_norm_.

The chapter's tanh RNN (same W_hh = sigma_max Q, W_xh, inputs and h_0 as snippets/through_time.py
on the same seeds, input scale 1, T = 100). Quoted by docs/gradients-through-time.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from gradlab import clipping, snippet
from gradlab import recurrent as rec

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
torch.set_num_threads(1)
torch_major, torch_minor = (int(part) for part in torch.__version__.split(".")[:2])  # 2.10 is not 2.1
results.number("torch_version_major", torch_major, "PyTorch major version")
results.number("torch_version_minor", torch_minor, "PyTorch minor version")
SCALES, n, T, MAX_NORM = [0.5, 0.9, 1.0, 1.5, 3.0], 32, 100, 1.0
nets = [rec.draw_network(seed, n, 4, T) for seed in SEEDS]


# %% [markdown]
# ## The Jacobian through time by autograd


# %%
# --8<-- [start:core]
def final_state(h0, W_hh, W_xh, xs):  # h_t = tanh(W_hh h_{t-1} + W_xh x_t), b = 0
    h = h0
    for x in xs:
        h = torch.tanh(W_hh @ h + W_xh @ x)
    return h


def jacobian_norm(W_hh, W_xh, xs, h0):  # ||dh_T/dh_0||_2, one reverse pass per row (vmapped)
    J = torch.func.jacrev(final_state)(h0, W_hh, W_xh, xs)
    return torch.linalg.matrix_norm(J, ord=2).item()


def clipped_grads(W_hh, W_xh, xs, h0, v, max_norm):  # L = v^T h_T, then clip_grad_norm_
    params = [W_hh.requires_grad_(), W_xh.requires_grad_()]
    (v @ final_state(h0, *params, xs)).backward()
    norm_before = torch.nn.utils.clip_grad_norm_(params, max_norm)  # returns the norm BEFORE
    return norm_before.item(), [p.grad.numpy() for p in params]


# --8<-- [end:core]


def as_torch(net, scale):
    params, xs, h0, v = rec.unpack(net, scale, 1.0)
    return [torch.tensor(a) for a in (params[0], params[1], xs, h0, v)]


rel = {}
for scale in SCALES:
    norms = np.array([jacobian_norm(*as_torch(net, scale)[:4]) for net in nets])
    ref = np.array([rec.jacobian_summary(net, scale, 1.0)["norm"] for net in nets])
    rel[scale] = np.abs(norms / ref - 1).max()
    key, chaotic = f"{scale:g}".replace(".", "p"), scale > 2  # only sigma_max 3 explodes
    tol = 0.1 if chaotic else 1e-9
    reason = (
        "Exploding: the forward pass amplifies the last-bit differences between torch.tanh and np.tanh "
        "(the numpy snippet records this norm with rtol 0.1 across CPUs for the same reason)."
        if chaotic
        else "Contracting forward pass: the same products in float64, differing only in tanh's last bit "
        "and the order of the matrix products."
    )
    results.twin_spread(f"norm_{key}", norms, f"||dh_T/dh_0||, sigma_max {scale:g}",
                        of=f"through_time.norm_{key}", rtol=tol, atol=0, reason=reason)  # fmt: skip
    results.number(f"rel_diff_{key}", rel[scale], f"max |torch / gradlab - 1|, sigma_max {scale:g}",
                   atol=1e-8 if not chaotic else 1e-2)  # fmt: skip
contracting = max(rel[s] for s in SCALES if s < 2)
results.claim(
    "jacrev_matches_gradlab",
    contracting < 1e-9 and rel[3.0] < 0.01,
    "torch.func.jacrev's ||dh_T/dh_0|| matches gradlab's product of step Jacobians to 1e-9 relative for "
    "sigma_max <= 1.5 and to 1% at sigma_max 3, on every seed.",
    rel,
)

# %% [markdown]
# ## clip_grad_norm_ against gradlab's norm clipping

# %%
before, cosines, after = [], [], []
for net in nets:
    for scale in (1.0, 3.0):
        W_hh, W_xh, xs, h0, v = as_torch(net, scale)
        norm, grads = clipped_grads(W_hh, W_xh, xs, h0, v, MAX_NORM)
        full = rec.full_gradient(*rec.unpack(net, scale, 1.0))[:2]  # gradlab: dL/d[W_hh, W_xh]
        ours, ref_norm = clipping.clip_by_norm(full, MAX_NORM)
        before.append(abs(norm / ref_norm - 1) if scale < 2 else norm > MAX_NORM)
        cosines.append(clipping.cosine(grads, ours))
        after.append(clipping.global_norm(grads))
results.number("max_norm", MAX_NORM, "clip_grad_norm_'s max_norm")
results.spread("clip_cosine_min", [min(cosines[i : i + 2]) for i in range(0, len(cosines), 2)],
               "cosine of clip_grad_norm_'s gradient with gradlab's clip_by_norm", atol=1e-12)  # fmt: skip
results.claim(
    "clip_returns_norm_before",
    max(before[0::2]) < 1e-9 and all(before[1::2]) and max(abs(np.array(after) - MAX_NORM)) < 1e-6,
    "clip_grad_norm_ returns the norm before clipping (gradlab's to 1e-9 at sigma_max 1, above max_norm "
    "at sigma_max 3) and leaves the gradient at norm max_norm, on every seed.",
    {"before": before, "after": after},
)
results.claim(
    "clip_keeps_direction",
    min(cosines) > 1 - 1e-9,
    "Its clipped gradient points in gradlab's clip_by_norm direction (cosine > 1 - 1e-9) at sigma_max 1 "
    "and 3, on every seed.",
    {"cosines": cosines},
)

# %%
results.save()
