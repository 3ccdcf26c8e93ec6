"""Dying ReLUs in PyTorch: nn.Linear + F.relu trained by torch.optim.SGD, dead units counted.

The same network, data, initial weights and minibatches as snippets/dying_relu.py (drawn with
gradlab from the same seeds), trained at the large learning rate with torch.optim.SGD; the
gradient at the start and the share of dead units at the end, against gradlab's; F.relu's
derivative at z = 0. Quoted by docs/dying-relus.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
import torch.nn.functional as F
from gradlab import seeded_mlp, snippet
from torch import nn

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
torch.set_num_threads(1)
for part, name in zip(
    torch.__version__.split("+")[0].split(".")[:3], ("major", "minor", "patch"), strict=True
):
    results.number(f"torch_{name}", int(part), f"PyTorch version, {name}")
LR, STEPS, BATCH, N_POINTS, SIZES = 0.04, 1000, 32, 256, [2, 64, 64, 1]  # dying_relu.py's defaults

# %% [markdown]
# ## gradlab's arrays in nn.Linear layers
# `nn.Linear` stores $W^\top$; the weights are copied in, so PyTorch starts where gradlab starts.


# %%
# --8<-- [start:core]
class Net(nn.Module):
    def __init__(self, params):  # gradlab's [W1, b1, W2, b2, W3, b3], W of shape (in, out)
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(*W.shape, dtype=torch.float64) for W in params[0::2])
        with torch.no_grad():
            for layer, W, b in zip(self.layers, params[0::2], params[1::2], strict=True):
                layer.weight.copy_(torch.from_numpy(W.T)), layer.bias.copy_(torch.from_numpy(b))

    def forward(self, x):
        self.z = []  # pre-activations of the hidden layers, for counting dead units
        for layer in self.layers[:-1]:
            self.z.append(layer(x))
            x = F.relu(self.z[-1])
        return self.layers[-1](x)


def train(net, X, y, minibatches):
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    for idx in minibatches:
        optimizer.zero_grad()
        F.mse_loss(net(X[idx]), y[idx]).backward()
        optimizer.step()
    with torch.no_grad():
        net(X)
    return torch.cat([(z <= 0).all(dim=0) for z in net.z]).double().mean().item()  # dead share


# --8<-- [end:core]


# %% [markdown]
# ## On every seed: the starting gradient and the dead share after training

# %%
norms, dead, gaps, finals = [], [], [], []
for seed in snippet.seeds(args.seed):
    X_np = np.random.default_rng([seed, 0]).uniform(-2, 2, size=(N_POINTS, 2))  # dying_relu.py's data
    y_np = (np.sin(2 * X_np[:, 0]) * np.cos(X_np[:, 1]))[:, None]
    rng = np.random.default_rng([seed, 1])
    params = seeded_mlp.one_seed(seeded_mlp.init(SIZES, [rng]), 0)
    minibatches = [torch.from_numpy(rng.integers(0, N_POINTS, BATCH)) for _ in range(STEPS)]
    X, y, net = torch.from_numpy(X_np), torch.from_numpy(y_np), Net(params)
    F.mse_loss(net(X), y).backward()
    norms.append(torch.sqrt(sum(p.grad.pow(2).sum() for p in net.parameters())).item())
    by_gradlab = seeded_mlp.grads([p[None] for p in params], X_np[None], y_np[None], 0.0)
    torch_grads = [g for layer in net.layers for g in (layer.weight.grad.T, layer.bias.grad)]
    gaps.append(max(np.abs(t.numpy() - g[0]).max() for t, g in zip(torch_grads, by_gradlab, strict=True)))
    gaps[-1] /= max(np.abs(g).max() for g in by_gradlab)
    dead.append(train(net, X, y, minibatches))
    finals.append([t.detach().numpy() for layer in net.layers for t in (layer.weight.T, layer.bias)])
    print(f"seed {seed}: initial gradient norm {norms[-1]:.15e}, dead after {STEPS} steps {dead[-1]:.1%}")
results.twin_spread(
    "grad_norm_init", norms, "full-data gradient norm at the initial weights, loss.backward()",
    of="dying_relu.grad_norm_init", rtol=1e-12, atol=0,
    reason="float64, the same weights and formula; another matmul kernel rounds differently",
)  # fmt: skip
results.number("grad_gap", max(gaps), "largest |torch - gradlab| gradient entry, scaled", atol=1e-14)
results.claim(
    "autograd_matches_gradlab", max(gaps) < 1e-12,
    "At the initial weights, every entry of PyTorch's gradient matches gradlab's to 1e-12 of the largest, "
    "on every seed.", {"gaps": gaps},
)  # fmt: skip
results.twin_spread(
    "dead_end_lr_large", dead, f"dead share after {STEPS} steps of torch.optim.SGD",
    of="dying_relu.dead_end_lr_large", rtol=0, atol=0,
    reason="the same minibatches and starting point; rounding differences of 1e-16 stay far from every "
    "unit's sign change on these seeds, so each count is exact (the claim below checks it per seed)",
)  # fmt: skip
# %% [markdown]
# gradlab's SGD on the same seeds: how far apart the two trajectories end, and the dead share per seed.

# %%
seeds = snippet.seeds(args.seed)
rngs = [np.random.default_rng([seed, 1]) for seed in seeds]
X_all = np.stack([np.random.default_rng([seed, 0]).uniform(-2, 2, size=(N_POINTS, 2)) for seed in seeds])
y_all = (np.sin(2 * X_all[..., 0]) * np.cos(X_all[..., 1]))[..., None]
start = seeded_mlp.init(SIZES, rngs)
ends, history = seeded_mlp.sgd(start, X_all, y_all, LR, 0.0, rngs, STEPS, BATCH, [STEPS])
drift = [max(np.abs(t - g[k]).max() / np.abs(g[k]).max() for t, g in zip(final, ends, strict=True))
         for k, final in enumerate(finals)]  # fmt: skip
results.spread(
    "weight_drift", drift, f"largest |torch - gradlab| weight after {STEPS} steps, scaled", atol=1e-6
)
same_dead = np.array_equal(np.array(dead), history[-1].mean(axis=1))
results.claim(
    "same_dead_share", bool(same_dead and max(drift) < 1e-10),
    f"After {STEPS} steps PyTorch's weights match gradlab's to 1e-10 of the largest and its dead share "
    "equals gradlab's exactly, on every seed: the rounding differences do not grow.",
    {"torch": dead, "gradlab": history[-1].mean(axis=1), "weight drift": drift},
)  # fmt: skip

# %% [markdown]
# ## F.relu's derivative at its kink

# %%
z = torch.zeros(1, dtype=torch.float64, requires_grad=True)
F.relu(z).backward()
results.number("relu_grad_at_0", z.grad.item(), "d F.relu / dz at z = 0")
results.claim("relu_kink_zero", z.grad.item() == 0.0, "F.relu's derivative at z = 0 is 0, as gradlab's.",
              {"grad": z.grad.item()})  # fmt: skip

# %%
results.save()
