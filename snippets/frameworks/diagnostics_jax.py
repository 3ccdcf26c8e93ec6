"""Per-layer diagnostics in JAX: per-leaf gradient norms of a deep tanh net, by jax.grad and tree_map.

The plain and residual networks of snippets/diagnostics.py (20 tanh layers of 16 units, gain 0.5,
the same arrays, built with gradlab from the same seeds) as a list of {"W", "b"} layers:
jax.grad over that pytree, per-leaf norms with jax.tree_util, and the update/weight ratio of one
SGD step and one Adam step written with tree_map. Quoted by docs/per-layer-diagnostics.md.
"""

# %%
import functools
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax

jax.config.update("jax_enable_x64", True)  # float64, as gradlab
import jax.numpy as jnp
import numpy as np
from gradlab import models, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
for part, name in zip(jax.__version__.split(".")[:3], ("major", "minor", "patch"), strict=True):
    results.number(f"jax_{name}", int(part), f"JAX version, {name}")
DEPTH, WIDTH, GAIN, BATCH = 20, 16, 0.5, 32  # diagnostics.py's defaults
SGD_LR, ADAM_LR, EPS = 10**-0.5, 1e-3, 1e-8  # best learning rates on diagnostics.py's grid; Adam's eps


def problem(seed):  # exactly diagnostics.py's problem(seed)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(BATCH, 2))
    y = (np.sin(2 * X[:, 0]) * np.cos(X[:, 1]))[:, None]
    init = models.init_mlp([2] + [WIDTH] * DEPTH + [1], GAIN / np.sqrt(WIDTH), rng)
    init[0] = init[0] * np.sqrt(WIDTH / 2)  # the first layer's fan_in is 2
    return (
        X,
        y,
        [{"W": jnp.asarray(W), "b": jnp.asarray(b)} for W, b in zip(init[0::2], init[1::2], strict=True)],
    )


# %% [markdown]
# ## Parameters as a pytree; one jax.grad gives the same tree of gradients


# %%
# --8<-- [start:core]
def loss(layers, X, y, residual=False):
    h = X
    for i, layer in enumerate(layers[:-1]):
        t = jnp.tanh(h @ layer["W"] + layer["b"])
        h = h + t if residual and i > 0 else t
    return jnp.mean((h @ layers[-1]["W"] + layers[-1]["b"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="residual")
def report(layers, X, y, residual=False):
    """Per-leaf gradient norms, the SGD update ratio lr ||g|| / ||W||, and Adam's first step."""
    grads = jax.grad(loss)(layers, X, y, residual)
    norms = jax.tree_util.tree_map(jnp.linalg.norm, grads)  # same tree: {"W": ||dL/dW||, "b": ...}
    sgd = jax.tree_util.tree_map(lambda g, p: SGD_LR * jnp.linalg.norm(g) / jnp.linalg.norm(p), grads, layers)
    # Adam's first step: m_hat = g, v_hat = g^2, so Delta = -lr g / (|g| + eps)
    adam_step = jax.tree_util.tree_map(lambda g: -ADAM_LR * g / (jnp.abs(g) + EPS), grads)
    adam = jax.tree_util.tree_map(lambda d, p: jnp.linalg.norm(d) / jnp.linalg.norm(p), adam_step, layers)
    return norms, sgd, adam


# --8<-- [end:core]


# %% [markdown]
# ## On every seed, against gradlab's per-layer report

# %%
first, last, sgd_first, adam_first, residual_first, spread, largest = [], [], [], [], [], [], []
for seed in snippet.seeds(args.seed):
    X, y, layers = problem(seed)
    norms, sgd, adam = report(layers, X, y)
    hidden = [float(n["W"]) for n in norms[:-1]]
    first.append(hidden[0]), last.append(hidden[-1]), spread.append(max(hidden) / min(hidden))
    largest.append(max(hidden))
    sgd_first.append(float(sgd[0]["W"])), adam_first.append(float(adam[0]["W"]))
    residual_first.append(float(report(layers, X, y, residual=True)[0][0]["W"]))
print("seed  layer-1 grad   layer-20 grad  max/min    SGD ratio   Adam ratio")
for row in zip(snippet.seeds(args.seed), first, last, spread, sgd_first, adam_first, strict=True):
    print("{:4d}  {:.3e}      {:.3e}      {:6.2f}   {:.2e}    {:.2e}".format(*row))
same = "float64, the same formulas; XLA's tanh and matmul kernels round differently through 20 layers"
for key, values, about in (
    ("plain_first_grad", first, "layer 1 ||dL/dW|| by jax.grad"),
    ("plain_last_grad", last, "layer 20 ||dL/dW|| by jax.grad"),
    ("plain_grad_spread", spread, "largest over smallest hidden layer's ||dL/dW||"),
    ("plain_first_ratio", sgd_first, "layer 1 lr ||dL/dW|| / ||W||"),
    ("adam_first_ratio", adam_first, "Adam's first step: layer 1 ||Delta W|| / ||W||"),
    ("residual_first_grad", residual_first, "residual network: layer 1 ||dL/dW||"),
):
    results.twin_spread(key, values, about, of=f"diagnostics.{key}", rtol=1e-12, atol=0, reason=same)
results.claim(
    "adam_moves_weights", min(adam_first) > 1e3 * max(sgd_first),
    "On every seed Adam's first step changes layer 1 over 1,000 times more than an SGD step at its best lr.",
    {"adam": adam_first, "sgd": sgd_first},
)  # fmt: skip
results.claim(
    "uniformly_small", max(spread) < 100 and max(largest) < 1e-5,
    "On every seed every hidden layer's gradient norm is below 1e-5 and within a factor 100 of every other.",
    {"spread": spread, "largest": largest},
)  # fmt: skip

# %%
results.save()
