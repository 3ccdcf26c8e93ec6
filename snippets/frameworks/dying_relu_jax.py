"""Dying ReLUs in JAX: jax.nn.relu trained by plain SGD under jax.jit, dead units counted.

The same network, data, initial weights and minibatches as snippets/dying_relu.py (drawn with
gradlab from the same seeds), trained at the large learning rate with jax.grad and lax.scan; the
gradient at the start and the share of dead units at the end, against gradlab's; the derivative
at z = 0 of jax.nn.relu and of jnp.maximum(z, 0). Quoted by docs/dying-relus.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax

jax.config.update("jax_enable_x64", True)  # float64, as gradlab
import jax.numpy as jnp
import numpy as np
from gradlab import seeded_mlp, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
for part, name in zip(jax.__version__.split(".")[:3], ("major", "minor", "patch"), strict=True):
    results.number(f"jax_{name}", int(part), f"JAX version, {name}")
LR, STEPS, BATCH, N_POINTS, SIZES = 0.04, 1000, 32, 256, [2, 64, 64, 1]  # dying_relu.py's defaults


# %% [markdown]
# ## The network as a function of its parameters; SGD as a scan over the minibatches


# %%
# --8<-- [start:core]
def hidden(params, x):  # pre-activations z_l of the hidden layers
    zs = []
    for W, b in zip(params[0:-2:2], params[1:-2:2], strict=True):
        zs.append(x @ W + b)
        x = jax.nn.relu(zs[-1])
    return zs, x


def loss(params, x, y):
    return jnp.mean((hidden(params, x)[1] @ params[-2] + params[-1] - y) ** 2)


@jax.jit
def train(params, X, y, minibatches):
    def step(params, idx):
        grads = jax.grad(loss)(params, X[idx], y[idx])
        return [p - LR * g for p, g in zip(params, grads, strict=True)], None

    params, _ = jax.lax.scan(step, params, minibatches)
    dead = jnp.concatenate([jnp.all(z <= 0, axis=0) for z in hidden(params, X)[0]])
    return params, jnp.mean(dead)  # the final weights and the dead share


# --8<-- [end:core]


# %% [markdown]
# ## On every seed: the starting gradient and the dead share after training

# %%
seeds = snippet.seeds(args.seed)
X_all = np.stack([np.random.default_rng([seed, 0]).uniform(-2, 2, size=(N_POINTS, 2)) for seed in seeds])
y_all = (np.sin(2 * X_all[..., 0]) * np.cos(X_all[..., 1]))[..., None]  # dying_relu.py's data
norms, dead, gaps, finals = [], [], [], []
initial_grad = jax.jit(jax.grad(loss))  # compiled once for every seed
for k, seed in enumerate(seeds):
    rng = np.random.default_rng([seed, 1])
    params = seeded_mlp.one_seed(seeded_mlp.init(SIZES, [rng]), 0)
    minibatches = jnp.array([rng.integers(0, N_POINTS, BATCH) for _ in range(STEPS)])
    jparams = [jnp.asarray(p) for p in params]  # for the initial gradient and for training
    grads = [np.asarray(g) for g in initial_grad(jparams, X_all[k], y_all[k])]
    norms.append(float(np.sqrt(sum(np.sum(g**2) for g in grads))))
    by_gradlab = seeded_mlp.grads([p[None] for p in params], X_all[k : k + 1], y_all[k : k + 1], 0.0)
    gaps.append(max(np.abs(j - g[0]).max() for j, g in zip(grads, by_gradlab, strict=True)))
    gaps[-1] /= max(np.abs(g).max() for g in by_gradlab)
    final, share = train(jparams, X_all[k], y_all[k], minibatches)
    finals.append([np.asarray(p) for p in final])
    dead.append(float(share))
    print(f"seed {seed}: initial gradient norm {norms[-1]:.15e}, dead after {STEPS} steps {dead[-1]:.1%}")
results.twin_spread(
    "grad_norm_init", norms, "full-data gradient norm at the initial weights, jax.grad",
    of="dying_relu.grad_norm_init", rtol=1e-12, atol=0,
    reason="float64, the same weights and formula; another matmul kernel rounds differently",
)  # fmt: skip
results.number("grad_gap", max(gaps), "largest |jax - gradlab| gradient entry, scaled", atol=1e-14)
results.claim(
    "jax_matches_gradlab", max(gaps) < 1e-12,
    "At the initial weights, every entry of jax.grad's gradient matches gradlab's to 1e-12 of the largest, "
    "on every seed.", {"gaps": gaps},
)  # fmt: skip
results.twin_spread(
    "dead_end_lr_large", dead, f"dead share after {STEPS} SGD steps under jax.jit",
    of="dying_relu.dead_end_lr_large", rtol=0, atol=0,
    reason="the same minibatches and starting point; rounding differences of 1e-16 stay far from every "
    "unit's sign change on these seeds, so each count is exact (the claim below checks it per seed)",
)  # fmt: skip

# %% [markdown]
# gradlab's SGD on the same seeds: how far apart the two trajectories end, and the dead share per seed.

# %%
rngs = [np.random.default_rng([seed, 1]) for seed in seeds]
ends, history = seeded_mlp.sgd(
    seeded_mlp.init(SIZES, rngs), X_all, y_all, LR, 0.0, rngs, STEPS, BATCH, [STEPS]
)
drift = [max(np.abs(j - g[k]).max() / np.abs(g[k]).max() for j, g in zip(final, ends, strict=True))
         for k, final in enumerate(finals)]  # fmt: skip
results.spread(
    "weight_drift", drift, f"largest |jax - gradlab| weight after {STEPS} steps, scaled", atol=1e-6
)
same_dead = np.array_equal(np.array(dead), history[-1].mean(axis=1))
results.claim(
    "same_dead_share", bool(same_dead and max(drift) < 1e-10),
    f"After {STEPS} steps JAX's weights match gradlab's to 1e-10 of the largest and its dead share "
    "equals gradlab's exactly, on every seed: the rounding differences do not grow.",
    {"jax": dead, "gradlab": history[-1].mean(axis=1), "weight drift": drift},
)  # fmt: skip

# %% [markdown]
# ## The derivative at the kink: jax.nn.relu against jnp.maximum(z, 0)

# %%
relu_at_0 = float(jax.grad(jax.nn.relu)(0.0))
maximum_at_0 = float(jax.grad(lambda z: jnp.maximum(z, 0.0))(0.0))
results.number("relu_grad_at_0", relu_at_0, "jax.grad(jax.nn.relu) at z = 0")
results.number("maximum_grad_at_0", maximum_at_0, "jax.grad of jnp.maximum(z, 0) at z = 0")
results.claim(
    "relu_kink_differs", relu_at_0 == 0.0 and maximum_at_0 == 0.5,
    "jax.nn.relu's derivative at z = 0 is 0, as gradlab's; the same function written jnp.maximum(z, 0) "
    "has derivative 0.5 there.", {"relu": relu_at_0, "maximum": maximum_at_0},
)  # fmt: skip

# %%
results.save()
