"""Initialization in PyTorch: nn.Linear's default draw against kaiming_normal_ and xavier_normal_.

The deep ReLU network of snippets/initialization.py (20 layers of 256 units, the same inputs and
read-out, drawn with gradlab from the same seeds): its per-layer variance factors by autograd,
first with gradlab's He and Glorot weights copied into nn.Linear (twins of the numpy numbers),
then with PyTorch's own initializers. Quoted by docs/initialization.md.
"""

# %%
import sys
from itertools import pairwise
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
import torch.nn.functional as F
from gradlab import init as inits
from gradlab import models, snippet
from torch import nn

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
torch.set_num_threads(1)
for part, name in zip(
    torch.__version__.split("+")[0].split(".")[:3], ("major", "minor", "patch"), strict=True
):
    results.number(f"torch_{name}", int(part), f"PyTorch version, {name}")
DEPTH, WIDTH, BATCH, N_OUT = 20, 256, 64, 10  # initialization.py's defaults
SIZES = [WIDTH] * (DEPTH + 1) + [N_OUT]


# %% [markdown]
# ## Per-layer factors by autograd
# `torch.autograd.grad` returns $\partial L/\partial h_l$ and nothing else (no weight gradients);
# the factors are geometric means over layers.


# %%
# --8<-- [start:core]
def factors(layers, X, readout):
    """Per-layer factors of Var[z_l] (forward) and Var[dL/dh_l] (backward), L = sum(y * r) / B."""
    h, zs, hs = X, [], []
    for layer in layers[:-1]:
        zs.append(layer(h))
        h = F.relu(zs[-1])
        hs.append(h)
    grads = torch.autograd.grad(torch.sum(layers[-1](h) * readout) / len(X), hs)  # dL/dh_l
    var_z = torch.stack([z.detach().pow(2).mean() for z in zs])
    var_g = torch.stack([g.pow(2).mean() for g in grads])
    forward, backward = (
        (var_z[-1] / var_z[0]) ** (1 / (DEPTH - 1)),
        (var_g[0] / var_g[-1]) ** (1 / (DEPTH - 1)),
    )
    return forward.item(), backward.item()


def torch_layers(init):  # "default": nn.Linear as constructed; else weights by `init`, biases 0
    layers = [nn.Linear(n_in, n_out, dtype=torch.float64) for n_in, n_out in pairwise(SIZES)]
    for layer in layers if init != "default" else []:
        init(layer.weight), nn.init.zeros_(layer.bias)
    return layers


INITS = {
    "default": "default",  # kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(n_in), 1/sqrt(n_in))
    "kaiming": lambda w: nn.init.kaiming_normal_(w, nonlinearity="relu"),  # He: N(0, 2/n_in)
    "xavier": nn.init.xavier_normal_,  # Glorot: N(0, 2/(n_in + n_out))
}
# --8<-- [end:core]


def from_gradlab(params):  # gradlab's [W1, b1, ...] (W of shape (in, out)) in nn.Linear layers
    layers = torch_layers("default")
    with torch.no_grad():
        for layer, W, b in zip(layers, params[0::2], params[1::2], strict=True):
            layer.weight.copy_(torch.from_numpy(W.T)), layer.bias.copy_(torch.from_numpy(b))
    return layers


# %% [markdown]
# ## gradlab's He and Glorot weights in nn.Linear: twins of the numpy numbers

# %%
measured, by_gradlab, std_z = {}, {}, []
for seed in snippet.seeds(args.seed):
    data_rng = np.random.default_rng([seed, 0])  # initialization.py's measure()
    X, readout = (torch.from_numpy(data_rng.normal(size=(BATCH, n))) for n in (WIDTH, N_OUT))
    for scheme in ("he", "glorot"):
        params = models.init_mlp(SIZES, scheme, np.random.default_rng([seed, 1]))
        measured.setdefault(scheme, []).append(factors(from_gradlab(params), X, readout))
        run = inits.propagate(params, X.numpy(), readout.numpy(), "relu")
        by_gradlab.setdefault(scheme, []).append((run["forward"], run["backward"]))
    torch.manual_seed(seed)
    for name, init in INITS.items():
        layers = torch_layers(init)
        measured.setdefault(name, []).append(factors(layers, X, readout))
        for W in (layer.weight.detach().numpy() for layer in layers if name != "default"):
            target = np.sqrt(2 / W.shape[1]) if name == "kaiming" else np.sqrt(2 / sum(W.shape))
            std_z.append((W.std() / target - 1) * np.sqrt(2 * W.size))  # in standard errors, 1/sqrt(2N)
    torch.manual_seed(seed)  # the same default weights as "default", its biases set to 0
    layers = torch_layers("default")
    for layer in layers:
        nn.init.zeros_(layer.bias)
    measured.setdefault("default_zero_bias", []).append(factors(layers, X, readout))
measured = {key: np.array(values) for key, values in measured.items()}  # (seed, forward/backward)
for scheme in ("he", "glorot"):
    for i, direction in enumerate(("forward", "backward")):
        results.twin_spread(
            f"{direction}_relu_{scheme}", measured[scheme][:, i], f"gradlab's {scheme} weights: {direction}",
            of=f"initialization.{direction}_relu_{scheme}", rtol=1e-12, atol=0,
            reason="float64, the same weights and formula; another matmul kernel rounds differently",
        )  # fmt: skip
gap = max(np.abs(measured[k] / np.array(by_gradlab[k]) - 1).max() for k in ("he", "glorot"))
results.number("factor_gap", gap, "largest relative gap to gradlab's factors, He and Glorot", atol=1e-12)
results.claim(
    "autograd_matches_gradlab", bool(gap < 1e-12),
    "On every seed PyTorch's autograd and gradlab's reverse mode give the same He and Glorot factors "
    "to 1e-12.",
    {"gap": gap},
)  # fmt: skip

# %% [markdown]
# ## PyTorch's own draws
# Other random numbers than gradlab's, so kaiming_normal_ and xavier_normal_ match He and Glorot
# only as statistics. nn.Linear's default has variance $1/(3n)$, so the factor is $n\sigma^2/2 = 1/6$.

# %%
for name in [*INITS, "default_zero_bias"]:
    for i, direction in enumerate(("forward", "backward")):
        results.spread(f"{direction}_{name}", measured[name][:, i], f"{name}: {direction} factor per layer")
        print(f"{name:<8} {direction:<8} factor per layer: {measured[name][:, i].round(4)}")
results.number("predicted_default", 1 / 6, "n sigma^2 / 2 for variance 1/(3n)")
total = measured["default"][:, 1] ** (DEPTH - 1)
results.spread("backward_default_total", total, "default: Var[dL/dh_1] / Var[dL/dh_D]", rtol=1e-3)
# %% [markdown]
# A factor is a random number: for one input, each ReLU layer multiplies the squared norm by
# $(2/n)\sum_j \max(0, g_j)^2$, of relative variance $5/n$, so the log of the geometric mean over
# $D-1$ layers has standard deviation at most $\sigma_F = \sqrt{5/(n(D-1))}$ (a batch averages some of it
# away). A draw against the mean of five others: within 4 of $\sigma_F\sqrt{1 + 1/5}$ in the log.

# %%
sigma_f = results.number("sigma_factor", np.sqrt(5 / (WIDTH * (DEPTH - 1))), "std of a factor's log, bound")
tolerance = results.number("factor_tolerance", 4 * sigma_f * np.sqrt(1 + 1 / 5), "4 sigma of the difference")
as_he = np.abs(np.log(measured["kaiming"] / measured["he"].mean(0))).max()
as_glorot = np.abs(np.log(measured["xavier"] / measured["glorot"].mean(0))).max()
results.number("kaiming_off", as_he, "kaiming_normal_ factors vs gradlab He's mean, largest |log ratio|")
results.number("xavier_off", as_glorot, "xavier_normal_ factors vs gradlab Glorot's mean, largest |log|")
results.number("std_z_max", np.abs(std_z).max(), "largest |sample std / target - 1| in standard errors")
results.claim(
    "torch_inits_match", bool(max(as_he, as_glorot) < tolerance and np.abs(std_z).max() < 5),
    "On every seed kaiming_normal_ and xavier_normal_ draw every layer's weights with He's and Glorot's "
    "standard deviation to within 5 standard errors, and their factors lie within 4 standard deviations "
    "of gradlab's He and Glorot means (other random draws, so not to the last digit).",
    {"he": as_he, "glorot": as_glorot, "tolerance": tolerance, "std_z": np.abs(std_z).max()},
)  # fmt: skip
default_backward = measured["default"][:, 1]
results.claim(
    "default_shrinks", bool(np.all(np.abs(default_backward * 6 - 1) < 0.1)),
    "With nn.Linear's default initialization the gradient's variance shrinks by a factor within 10% of "
    "1/6 per layer, on every seed: it is neither He (1) nor Glorot (1/2).", {"backward": default_backward},
)  # fmt: skip

zero_bias = measured["default_zero_bias"]
results.claim(
    "default_forward_is_the_biases", bool(np.all(np.abs(zero_bias * 6 - 1) < 0.1))
    and bool(np.all(measured["default"][:, 0] > 2 * zero_bias[:, 0])),
    "With the same default weights and the biases set to 0, both factors are within 10% of 1/6 on every "
    "seed; with the default biases the forward factor is more than twice that.",
    {"zero_bias": zero_bias, "default": measured["default"]},
)  # fmt: skip

# %%
results.save()
