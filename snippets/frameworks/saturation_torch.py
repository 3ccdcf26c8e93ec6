"""Saturating sigmoids in PyTorch: the backward signal of the Glorot sigmoid stack, and sigma'(37).

The same stack, weights and inputs as snippets/saturation.py (built with gradlab from the same
seeds), its backward-signal ratio ||dL/dz_1|| / ||dL/dz_D|| by autograd, and torch.sigmoid's
slope at z = 37 and 40. Quoted by docs/saturating-sigmoids.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from gradlab import backward_signal, engine, models, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
torch.set_num_threads(1)
for part, name in zip(
    torch.__version__.split("+")[0].split(".")[:3], ("major", "minor", "patch"), strict=True
):
    results.number(f"torch_{name}", int(part), f"PyTorch version, {name}")

# %% [markdown]
# ## The stack: gradlab's arrays, PyTorch's autograd
# `retain_grad()` keeps $\partial L/\partial z_l$ of every hidden layer.

# %%
DEPTH, WIDTH, N_INPUTS, BATCH = 10, 32, 4, 32  # saturation.py's defaults
sizes = [N_INPUTS] + [WIDTH] * DEPTH + [1]


def draw(seed):  # exactly saturation.py's draw(): the raw inputs are drawn too, to keep the stream
    generator = np.random.default_rng(seed)
    X = generator.normal(size=(BATCH, N_INPUTS))
    generator.normal(size=(BATCH, N_INPUTS))
    y = generator.normal(size=(BATCH, 1))
    return X, y, backward_signal.rescaled(models.init_mlp(sizes, 1.0, generator), "glorot")


# --8<-- [start:core]
def signal_ratio(params, X, y):
    """||dL/dz_1|| / ||dL/dz_D|| for L = mean((mlp(X) - y)^2), by loss.backward()."""
    h, zs = torch.from_numpy(X), []
    *hidden, (W_out, b_out) = zip(params[0::2], params[1::2], strict=True)
    for W, b in hidden:
        z = h @ W + b
        z.retain_grad()  # keep dL/dz_l, an intermediate, after backward()
        zs.append(z)
        h = torch.sigmoid(z)
    loss = torch.mean((h @ W_out + b_out - torch.from_numpy(y)) ** 2)
    loss.backward()
    return (zs[0].grad.norm() / zs[-1].grad.norm()).item()


# sigma'(z) far out: autograd's rule is written from the output, y (1 - y)
z = torch.tensor([37.0, 40.0], dtype=torch.float64, requires_grad=True)
torch.sigmoid(z).sum().backward()
slope_reverse = z.grad
_, slope_forward = torch.func.jvp(torch.sigmoid, (z.detach(),), (torch.ones(2, dtype=torch.float64),))
slope_formula = torch.sigmoid(z.detach()) * torch.sigmoid(-z.detach())  # a number; autograd unchanged


class StableSigmoid(torch.autograd.Function):
    """torch.sigmoid forward, with the backward rule sigma(z) sigma(-z) in place of y (1 - y)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.sigmoid(z)

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return grad * torch.sigmoid(z) * torch.sigmoid(-z)


z_stable = z.detach().clone().requires_grad_()
StableSigmoid.apply(z_stable).sum().backward()  # slope_stable = z_stable.grad
# --8<-- [end:core]

# %% [markdown]
# ## On every seed, against gradlab's reverse mode

# %%
draws = [draw(seed) for seed in snippet.seeds(args.seed)]
ratios = np.array([signal_ratio([torch.tensor(p, requires_grad=True) for p in P], X, y) for X, y, P in draws])
gradlab_ratios = np.array(
    [backward_signal.layer_report(P, X, y, "sigmoid")["signal_ratio"] for X, y, P in draws]
)
gap = np.abs(ratios / gradlab_ratios - 1)
print("seed  torch signal ratio   gradlab            rel. gap")
for seed, r, g, e in zip(snippet.seeds(args.seed), ratios, gradlab_ratios, gap, strict=True):
    print(f"{seed:4d}  {r:.15e}  {g:.15e}  {e:.1e}")
results.twin_spread(
    "signal_ratio_glorot", ratios, "Glorot sigmoid stack, autograd: signal ratio",
    of="saturation.signal_ratio_glorot", rtol=1e-12, atol=0,
    reason="float64, same formula; another matmul and exp kernel round differently through 10 layers",
)  # fmt: skip
results.number("signal_gap", gap.max(), "largest relative gap to gradlab's ratio, over seeds", atol=1e-12)
results.claim(
    "autograd_matches_gradlab", bool(gap.max() < 1e-12),
    "On every seed PyTorch's autograd and gradlab's reverse mode give the same signal ratio to 1e-12.",
    {"gap": gap},
)  # fmt: skip

# %%
far = engine.Tensor(np.array([37.0, 40.0]), requires_grad=True)
far.sigmoid().sum().backward()  # gradlab's rule sigma(z) sigma(-z)
for i, at in enumerate((37, 40)):
    results.number(f"slope{at}_reverse", slope_reverse[i].item(), f"torch.sigmoid backward at z = {at}")
    results.number(f"slope{at}_forward", slope_forward[i].item(), f"torch.func.jvp of sigmoid at z = {at}")
    results.number(f"slope{at}_gradlab", far.grad[i], f"gradlab's sigma'({at})", rtol=1e-14)
results.twin(
    "slope37_rule", slope_reverse[0].item(), "torch.sigmoid backward at z = 37",
    of="saturation.slope37_reverse_rule", rtol=0, atol=0,
    reason="both compute the rule y (1 - y) from y = 1.0 exactly: 0",
)  # fmt: skip
formula_gap = np.abs(slope_formula.numpy() / far.grad - 1).max()
stable_gap = np.abs(z_stable.grad.numpy() / far.grad - 1).max()
results.number(
    "stable_gap", stable_gap, "StableSigmoid's slope at 37 and 40 against gradlab's, relative", atol=1e-14
)
results.claim(
    "torch_slope_is_zero_far_out",
    bool(torch.all(slope_reverse == 0) and torch.all(slope_forward == 0) and np.all(far.grad > 0))
    and bool(formula_gap < 1e-14 and stable_gap < 1e-14),
    "At z = 37 and z = 40 torch.sigmoid's slope is exactly 0 in reverse and forward mode, where gradlab's "
    "sigma(z) sigma(-z) is positive; the number torch.sigmoid(z) * torch.sigmoid(-z), and the gradient "
    "through a torch.autograd.Function with that backward rule, match gradlab's to 1e-14.",
    {
        "reverse": slope_reverse.numpy(),
        "forward": slope_forward.numpy(),
        "gradlab": far.grad,
        "gap": formula_gap,
        "stable gap": stable_gap,
    },
)
print(f"sigma'(37), sigma'(40): torch reverse {slope_reverse.tolist()}, forward {slope_forward.tolist()}, "
      f"gradlab {far.grad.tolist()}")  # fmt: skip

# %% [markdown]
# ## What a tiny first-layer gradient does to one step: SGD against Adam
# SGD moves each weight by lr * g, so layer 1 moves the gradient ratio less than layer D. Adam's first
# step is lr * m / (sqrt(v) + eps) with m = g and sqrt(v) = |g| after bias correction: lr * g / (|g| +
# eps), about lr * sign(g) unless |g| is near eps (1e-8 by default). Root-mean-square step per entry of
# layer 1 over layer D (the last hidden layer), one step from the same start on every seed.


# %%
def step_ratio(P, X, y, make_optimizer):
    params = [torch.tensor(p, requires_grad=True) for p in P]
    signal_ratio(params, X, y)  # fills every .grad
    before = [p.detach().clone() for p in params]
    make_optimizer(params).step()
    rms = [torch.sqrt(torch.mean((p.detach() - b) ** 2)).item() for p, b in zip(params, before, strict=True)]
    return rms[0] / rms[2 * DEPTH - 2], params[0].grad.abs()


sgd, adam, below_eps = [], [], []
for X, y, P in draws:
    sgd.append(step_ratio(P, X, y, lambda p: torch.optim.SGD(p, lr=1e-3))[0])
    ratio, first_grad = step_ratio(P, X, y, lambda p: torch.optim.Adam(p, lr=1e-3))
    adam.append(ratio), below_eps.append((first_grad < 1e-8).double().mean().item())
results.spread("step_ratio_sgd", sgd, "SGD: rms step of layer 1 / rms step of layer D", rtol=1e-6)
results.spread("step_ratio_adam", adam, "Adam, first step: the same ratio", rtol=1e-6)
results.spread("below_eps", below_eps, "share of layer 1's gradient entries below Adam's eps = 1e-8")
results.claim(
    "adam_undoes_the_scale", bool(max(sgd) < 1e-3 and min(adam) > 0.1),
    "On every seed SGD moves layer 1's weights by less than 1e-3 of layer D's step (root mean square per "
    "entry), Adam's first step by more than 0.1 of it.",
    {"sgd": sgd, "adam": adam},
)  # fmt: skip

# %%
results.save()
