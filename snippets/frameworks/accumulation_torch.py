"""Accumulation and memory in PyTorch: stale .grad, edits autograd cannot see, an update lost in a copy.

The least-squares fit and the linear autoencoder of snippets/accumulation.py (same arrays, same
seeds): `.grad` accumulating across `backward()` calls until it is reset, `torch.optim.Adam` against
gradlab's Adam, an Adam whose `addcmul_`/`addcdiv_` write into `.contiguous()` copies (the
mechanism of the 2024 MPS bug) caught by probe_torch, and a `.data` edit that autograd does not see
beside the in-place edit its version counter refuses. Quoted by docs/accumulation-and-memory.md.
"""

# %%
import functools
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from gradlab import leaks, snippet
from probe_torch import flags, layer_report

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
torch.set_num_threads(1)
torch_major, torch_minor = (int(part) for part in torch.__version__.split(".")[:2])  # 2.10 is not 2.1
results.number("torch_version_major", torch_major, "PyTorch major version")
results.number("torch_version_minor", torch_minor, "PyTorch minor version")
STEPS, LR, ADAM_LR = 60, 0.05, 0.01  # accumulation.py's defaults


def fit_data(seed):  # accumulation.py's fit(): the same draws
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(50, 3))
    return torch.from_numpy(X), torch.from_numpy(X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=50))


def autoencoder_data(seed):  # accumulation.py's autoencoder: X and the decoder's initial weight
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(64, 3)) @ rng.normal(size=(3, 6)) + 0.05 * rng.normal(size=(64, 6))
    return torch.from_numpy(X), torch.from_numpy(0.1 * rng.normal(size=(3, 6)))


# %% [markdown]
# ## `.grad` accumulates until you reset it; an Adam whose kernels write into a copy


# %%
# --8<-- [start:core]
def fit(X, y, reset):
    w = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    for _ in range(STEPS):
        loss = torch.mean((X @ w - y) ** 2)
        loss.backward()  # adds into w.grad
        with torch.no_grad():
            w -= LR * w.grad
        if reset:
            w.grad = None  # what optimizer.zero_grad() does
    return loss.item()


# --8<-- [end:core]


# --8<-- [start:adam]
class CopyingAdam(torch.optim.Adam):  # the kernels of the MPS bug, re-enacted on the CPU
    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            (b1, b2), lr, eps = group["betas"], group["lr"], group["eps"]
            for p in group["params"]:
                state = self.state[p]
                if not state:  # zeros_like keeps p's strides, as Adam's buffers do
                    state.update(t=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                state["t"] += 1
                m, v, t = state["m"], state["v"], state["t"]
                m.lerp_(p.grad, 1 - b1)  # an ordinary in-place update: works for any layout
                v.mul_(b2).contiguous().addcmul_(p.grad, p.grad, value=1 - b2)  # lost in a copy
                denom = v.sqrt() / (1 - b2**t) ** 0.5 + eps
                p.contiguous().addcdiv_(m, denom, value=-lr / (1 - b1**t))  # lost in a copy


def autoencoder(X, W_dec0, optimizer_class, transposed=True, steps=10 * STEPS):
    encoder, decoder = torch.nn.Linear(6, 3, bias=False), torch.nn.Linear(3, 6, bias=False)
    decoder.weight = torch.nn.Parameter(W_dec0.T.contiguous())  # Linear computes x @ weight.T
    W_enc = decoder.weight.detach().T.clone()  # clone keeps the transposed strides
    encoder.weight = torch.nn.Parameter(W_enc if transposed else W_enc.contiguous())
    model, loss_fn = torch.nn.Sequential(encoder, decoder), torch.nn.MSELoss()
    optimizer = optimizer_class(model.parameters(), lr=ADAM_LR)
    found = flags(layer_report(model, loss_fn, X, X, optimizer))  # probe_torch: one step, undone
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(X), X)
        loss.backward()
        optimizer.step()
    return loss.item(), [name for name, symptom in found if symptom == "frozen"], encoder.weight


# --8<-- [end:adam]


# %% [markdown]
# ## Edits autograd sees and an edit it does not
# `z ** 2` saves `z` for its backward pass. Doubling `z` in place before `backward()` bumps its
# version counter and autograd refuses, also through `.detach()`, which shares the counter. Through
# `.data` it does not: the backward pass reads the doubled `z`, and the gradient of the loss that
# was computed comes out twice too large, without a word.


# %%
# --8<-- [start:edits]
def edited_gradient(w, through):
    """(dL/dw or None, error) for L = sum((3 w)^2), with z = 3 w doubled in place before backward()."""
    w = w.clone().requires_grad_(True)
    z = 3 * w
    loss = (z**2).sum()
    try:
        {"data": lambda: z.data, "detach": z.detach, "inplace": lambda: z}[through]().mul_(2)
        loss.backward()
    except RuntimeError as error:
        return None, str(error).split(";")[0]
    return w.grad, ""


# --8<-- [end:edits]


# %% [markdown]
# ## On every seed, against accumulation.py

# %%
adam = lambda params, lr: torch.optim.Adam(params, lr=lr, foreach=False)  # noqa: E731  the single-tensor step
runs = {
    key: []
    for key in ("reset", "stale", "fixed", "flawed", "workaround", "moved", "data_ratio", "data_ratio_low")
}
flagged, flagged_workaround, errors, counters = [], [], set(), []
for seed in SEEDS:
    X, y = fit_data(seed)
    runs["reset"].append(fit(X, y, True))
    runs["stale"].append(fit(X, y, False))
    X_ae, W_dec0 = autoencoder_data(seed)
    runs["fixed"].append(autoencoder(X_ae, W_dec0, adam)[0])
    loss, frozen, W_enc = autoencoder(X_ae, W_dec0, CopyingAdam)
    runs["flawed"].append(loss)
    runs["moved"].append(float((W_enc.detach() - W_dec0).abs().max()))
    flagged.append(frozen)
    loss, frozen, _ = autoencoder(X_ae, W_dec0, CopyingAdam, transposed=False)
    runs["workaround"].append(loss)
    flagged_workaround.append(frozen)
    w = torch.from_numpy(np.random.default_rng(seed).normal(size=5))
    grad, _ = edited_gradient(w, "data")
    ratio = grad / (18 * w)  # the right gradient of sum((3 w)^2) is 18 w
    runs["data_ratio"].append(float(ratio.max()))
    runs["data_ratio_low"].append(float(ratio.min()))
    errors |= {edited_gradient(w, through)[1] for through in ("detach", "inplace")}
z = 3 * w.clone().requires_grad_(True)  # whose counter does an edit through .detach() / .data bump?
z.detach().mul_(2)
counters.append((z._version, z.data._version))  # (1, 0) if .detach() shares it and .data has its own
z.data.mul_(2)
counters.append((z._version, -1))  # still 1: the .data edit went unrecorded

TOL = "float64, the same formulas; another kernel's rounding"
for key, about, of, rtol, why in (
    ("reset", "final loss, .grad = None every step", "reset_final_loss", 1e-12, ""),
    ("stale", "final loss, .grad never reset", "stale_final_loss", 1e-12, ", over 60 oscillating steps"),
    ("fixed", "final loss, torch.optim.Adam", "fixed_final_loss", 1e-10, "; 600 Adam steps"),
    (
        "flawed",
        "final loss, Adam writing into .contiguous() copies",
        "flawed_final_loss",
        1e-10,
        "; 600 steps",
    ),
    (
        "workaround",
        "final loss, copying Adam, contiguous encoder",
        "workaround_final_loss",
        1e-10,
        "; 600 steps",
    ),
):
    results.twin_spread(f"{key}_final_loss", runs[key], about, of=f"accumulation.{of}", rtol=rtol, atol=0,
                        reason=TOL + why)  # fmt: skip
ratio = np.array(runs["flawed"]) / runs["fixed"]
results.twin_spread("stall_ratio", ratio, "final loss, copying / torch Adam", of="accumulation.stall_ratio",
                    rtol=1e-10, atol=0, reason=TOL + "; 600 Adam steps")  # fmt: skip
gradlab_adam = []  # gradlab's Adam (leaks.InPlaceAdam, correct kernels) on the same arrays
for seed in SEEDS:
    X_ae, W_dec0 = (t.numpy() for t in autoencoder_data(seed))
    loss_ae = functools.partial(leaks.autoencoder_loss, X=X_ae)
    history = leaks.run_adam(
        loss_ae, [np.copy(W_dec0.T), W_dec0.copy()], ADAM_LR, False, 10 * STEPS, ["e", "d"]
    )[0]
    gradlab_adam.append(history[-1])
gap = float(np.max(np.abs(np.array(runs["fixed"]) / gradlab_adam - 1)))
results.number(
    "adam_gap", gap, "largest relative gap, torch.optim.Adam vs gradlab's Adam, final loss", atol=1e-12
)
results.spread("data_ratio", runs["data_ratio"], "dL/dw after a .data edit / the right gradient", rtol=1e-12)
results.number("n_errors", len(errors), "distinct errors raised by the .detach() and in-place edits")
print("errors:", errors)

# %% [markdown]
# ## A repeated index: indexing assignment against index_add_


# %%
# --8<-- [start:indices]
idx, G = torch.tensor([0, 0, 1]), torch.tensor([1.0, 2.0, 3.0])
buffered = torch.zeros(3)
buffered[idx] += G  # index_put_ without accumulate: undefined with repeated indices
added = torch.zeros(3).index_add_(0, idx, G)  # adds every contribution
E = torch.zeros(3, requires_grad=True)
(E[idx] * G).sum().backward()  # autograd's backward of a lookup adds, like index_add_
# --8<-- [end:indices]
buffered, added, lookup_grad = buffered.tolist(), added.tolist(), E.grad.tolist()
print(f"g[idx] += G: {buffered}, index_add_: {added}, E.grad: {lookup_grad}")
CLAIMS = [
    ("index_add_accumulates", added == lookup_grad == [3.0, 3.0, 0.0] and buffered[0] in (1.0, 2.0),
     f"With idx = [0, 0, 1], `g[idx] += G` keeps one contribution to row 0 ({buffered}), while "
     f"`index_add_` and autograd's backward of `E[idx]` add both ({added})."),
    ("adam_agrees", gap < 1e-12, "On every seed torch.optim.Adam and gradlab's Adam end at the same loss "
     "to 1e-12 after 600 steps."),
    ("stale_higher", all(s > r for s, r in zip(runs["stale"], runs["reset"], strict=True)),
     "On every seed the loop that never resets .grad ends above the one that sets it to None."),
    ("encoder_frozen", max(runs["moved"]) == 0 and all(f == ["0.weight"] for f in flagged),
     "On every seed the copying Adam leaves the transposed encoder exactly at its initial value, and "
     "probe_torch flags it, and only it, as frozen after one step."),
    ("workaround_trains", all(f == [] for f in flagged_workaround) and max(np.abs(
     np.array(runs["workaround"]) / runs["fixed"] - 1)) < 1e-9,
     "With a contiguous encoder the copying Adam trains like torch.optim.Adam (final loss to 1e-9) and "
     "the probe flags nothing."),
    ("data_edit_silent", max(abs(np.array(runs["data_ratio"]) - 2)) < 1e-12
     and max(abs(np.array(runs["data_ratio_low"]) - 2)) < 1e-12,
     "A .data edit that doubles a saved tensor raises nothing and doubles the gradient, on every seed."),
    ("version_counter", len(errors) == 1 and "modified by an inplace operation" in next(iter(errors)),
     "The same edit in place or through .detach() raises autograd's version-counter RuntimeError."),
    ("detach_shares_counter", set(counters) == {(1, 0), (1, -1)}, "An in-place edit through .detach() "
     "bumps the tensor's version counter; .data starts its own counter at 0, and an edit through it "
     "leaves the tensor's unchanged, on every seed."),
]  # fmt: skip
for name, holds, statement in CLAIMS:
    results.claim(name, bool(holds), statement, {"runs": {k: np.array(v) for k, v in runs.items()}})

# %%
results.save()
