"""Initialization in JAX: jax.nn.initializers.he_normal and glorot_normal, truncated normals.

The deep ReLU network of snippets/initialization.py (20 layers of 256 units, the same inputs and
read-out, drawn with gradlab from the same seeds): its per-layer variance factors by jax.grad,
first with gradlab's He and Glorot weights (twins of the numpy numbers), then with JAX's own
initializers, whose truncated normal is rescaled to keep the variance. Quoted by docs/initialization.md.
"""

# %%
import sys
from itertools import pairwise
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax

jax.config.update("jax_enable_x64", True)  # float64, as gradlab
import jax.numpy as jnp
import numpy as np
from gradlab import init as inits
from gradlab import models, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
for part, name in zip(jax.__version__.split(".")[:3], ("major", "minor", "patch"), strict=True):
    results.number(f"jax_{name}", int(part), f"JAX version, {name}")
DEPTH, WIDTH, BATCH, N_OUT = 20, 256, 64, 10  # initialization.py's defaults
SIZES = [WIDTH] * (DEPTH + 1) + [N_OUT]


# %% [markdown]
# ## Per-layer factors by jax.grad
# $\partial L/\partial h_l$ is the gradient with respect to a zero offset added to $h_l$.


# %%
# --8<-- [start:core]
def loss(offsets, weights, X, readout):
    """L = sum(y * r) / B with h_l = relu(h_{l-1} W_l) + offsets[l]; also returns every z_l."""
    h, zs = X, []
    for W, offset in zip(weights[:-1], offsets, strict=True):
        zs.append(h @ W)
        h = jax.nn.relu(zs[-1]) + offset
    return jnp.sum((h @ weights[-1]) * readout) / len(X), zs


@jax.jit
def factors(weights, X, readout):
    """Per-layer factors of Var[z_l] (forward) and Var[dL/dh_l] (backward)."""
    offsets = [jnp.zeros((len(X), W.shape[1])) for W in weights[:-1]]
    dh, zs = jax.grad(loss, has_aux=True)(offsets, weights, X, readout)
    var_z, var_g = [jnp.mean(z**2) for z in zs], [jnp.mean(g**2) for g in dh]
    root = 1 / (DEPTH - 1)
    return (var_z[-1] / var_z[0]) ** root, (var_g[0] / var_g[-1]) ** root


INITS = {  # variance_scaling(scale, mode, "truncated_normal"): a normal cut at 2 std, rescaled
    "he_normal": jax.nn.initializers.he_normal(),  # variance 2 / fan_in
    "glorot_normal": jax.nn.initializers.glorot_normal(),  # variance 2 / (fan_in + fan_out)
}
# --8<-- [end:core]


# %% [markdown]
# ## gradlab's He and Glorot weights, then JAX's own draws

# %%
measured, by_gradlab, draws = {}, {}, {name: [] for name in INITS}
for seed in snippet.seeds(args.seed):
    data_rng = np.random.default_rng([seed, 0])  # initialization.py's measure()
    X, readout = (jnp.asarray(data_rng.normal(size=(BATCH, n))) for n in (WIDTH, N_OUT))
    for scheme in ("he", "glorot"):
        params = models.init_mlp(SIZES, scheme, np.random.default_rng([seed, 1]))
        weights = [jnp.asarray(W) for W in params[0::2]]  # its biases are 0
        measured.setdefault(scheme, []).append(factors(weights, X, readout))
        run = inits.propagate(params, np.asarray(X), np.asarray(readout), "relu")
        by_gradlab.setdefault(scheme, []).append((run["forward"], run["backward"]))
    keys = jax.random.split(jax.random.key(seed), len(SIZES) - 1)
    for name, init in INITS.items():
        weights = [init(k, shape, jnp.float64) for k, shape in zip(keys, pairwise(SIZES), strict=True)]
        measured.setdefault(name, []).append(factors(weights, X, readout))
        draws[name].append(np.asarray(weights[0]))
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
    "jax_matches_gradlab", bool(gap < 1e-12),
    "On every seed jax.grad and gradlab's reverse mode give the same He and Glorot factors to 1e-12.",
    {"gap": gap},
)  # fmt: skip
for name in INITS:
    for i, direction in enumerate(("forward", "backward")):
        results.spread(f"{direction}_{name}", measured[name][:, i], f"{name}: {direction} factor per layer")
        print(f"{name:<14} {direction:<8} factor per layer: {measured[name][:, i].round(4)}")

# %% [markdown]
# ## What the truncated normal is
# Cut at 2 standard deviations of the underlying normal, then divided by 0.8796 (the standard
# deviation of the cut normal), so the variance is the target and no entry exceeds 2/0.8796 of its std.

# %%
target = {"he_normal": 2 / WIDTH, "glorot_normal": 2 / (2 * WIDTH)}
var_off = {name: max(abs(np.var(W) / target[name] - 1) for W in draws[name]) for name in INITS}
largest = {name: max(np.abs(W).max() / np.sqrt(target[name]) for W in draws[name]) for name in INITS}
for name in INITS:
    results.number(f"var_off_{name}", var_off[name], f"{name}: first layer's |variance / target - 1|")
    results.number(f"largest_{name}", largest[name], f"{name}: largest |entry| in target std")
results.number("cut", 2 / 0.87962566103423978, "truncation point in target std")
# A factor is random (initialization_torch.py): the log of one network's has std at most
# sigma = sqrt(5 / (n (D - 1))); a draw against the mean of five others: 4 sigma sqrt(1 + 1/5) in the log
tolerance = 4 * np.sqrt(5 / (WIDTH * (DEPTH - 1))) * np.sqrt(1 + 1 / 5)
as_he = np.abs(np.log(measured["he_normal"] / measured["he"].mean(0))).max()
as_glorot = np.abs(np.log(measured["glorot_normal"] / measured["glorot"].mean(0))).max()
results.claim(
    "jax_inits_match", as_he < tolerance and as_glorot < tolerance and max(var_off.values()) < 0.02
    and max(largest.values()) <= (1 + 1e-12) * 2 / 0.87962566103423978,
    "he_normal and glorot_normal give factors within 4 standard deviations of gradlab's He and Glorot "
    "means on every seed; their first layer's variance is within 2% of the target, and no entry lies "
    "beyond the cut.",
    {"he": as_he, "glorot": as_glorot, "tolerance": tolerance, "variance": var_off, "largest": largest},
)  # fmt: skip

# %%
results.save()
