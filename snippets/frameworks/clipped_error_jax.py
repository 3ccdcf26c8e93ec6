"""Clipping the wrong thing in JAX: jnp.clip(delta, -1, 1)^2 against a Huber loss written with jnp.where.

The same TD errors as snippets/clipped_error.py (Student-t draws from the same seeds): the share
of examples whose gradient is exactly zero, and Huber's gradient against the clipped residual.
Quoted by docs/clipping-the-wrong-thing.md.
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
from gradlab import clipping, engine, ops, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
for part, name in zip(jax.__version__.split(".")[:3], ("major", "minor", "patch"), strict=True):
    results.number(f"jax_{name}", int(part), f"JAX version, {name}")
BATCH, DOF = 256, 2.0  # clipped_error.py's defaults


# %% [markdown]
# ## Per-example gradients of the two losses
# Each example's loss depends on its own error only, so jax.grad of the sum gives them all.


# %%
# --8<-- [start:core]
def clipped_loss(delta):  # the bug: clip the error, then square
    return jnp.sum(0.5 * jnp.clip(delta, -1, 1) ** 2)


def huber_loss(delta):  # the fix, threshold 1
    return jnp.sum(jnp.where(jnp.abs(delta) <= 1, 0.5 * delta**2, jnp.abs(delta) - 0.5))


@jax.jit
def per_example_gradients(td_errors):
    """d loss / d delta for every example: clipped-then-squared, Huber, and the clipped residual."""
    delta = jnp.asarray(td_errors)
    return jax.grad(clipped_loss)(delta), jax.grad(huber_loss)(delta), jnp.clip(delta, -1, 1)


# --8<-- [end:core]
zero, gaps, same_as_gradlab, at_bound = [], [], True, 0
for seed in snippet.seeds(args.seed):
    td_errors = np.random.default_rng(seed).standard_t(DOF, size=BATCH)  # clipped_error.py's first draw
    clipped, huber, residual = (np.asarray(a) for a in per_example_gradients(td_errors))
    zero.append(float(np.mean(clipped == 0)))
    gaps.append(float(np.max(np.abs(huber - residual))))
    gradlab = engine.grad(lambda p: ops.sum(0.5 * ops.clip(p[0], -1.0, 1.0) ** 2), [td_errors])[0]
    same_as_gradlab &= bool(np.array_equal(clipped, gradlab))
    at_bound += int(np.sum(np.abs(td_errors) == 1))
results.twin_spread(
    "zero_fraction", zero, "share of examples with exactly zero gradient",
    of="clipped_error.zero_fraction", rtol=0, atol=0,
    reason="the same float64 errors; an exact zero is counted, no rounding enters",
)  # fmt: skip
results.number("huber_gap", max(gaps), "largest |Huber gradient - clip(delta)| over seeds", atol=1e-15)
results.number("errors_at_bound", at_bound, "TD errors exactly at +-1, all seeds")

# %% [markdown]
# ## At the bound: what jnp.clip's gradient is at exactly +-1

# %%
bound = jnp.array([-1.0, 1.0])
at_one = jax.jit(jax.grad(clipped_loss))(bound)  # one program, the same derivative rules
gradlab_bound = engine.grad(lambda p: ops.sum(0.5 * ops.clip(p[0], -1.0, 1.0) ** 2), [np.array([-1.0, 1.0])])[
    0
]
results.number("grad_at_one", float(at_one[1]), "jax: d/d delta of clip(delta)^2 / 2 at delta = 1")
results.number("gradlab_grad_at_one", gradlab_bound[1], "gradlab: the same at delta = 1")
print(f"zero share {zero}, Huber gap {max(gaps)}, at bound {at_bound}, grad at +-1: {at_one.tolist()}")
results.claim(
    "clip_matches_gradlab", same_as_gradlab and max(gaps) == 0 and at_bound == 0,
    "On every seed the clipped loss's gradient in JAX equals gradlab's exactly on every example, and the "
    "jnp.where Huber's gradient equals the clipped residual jnp.clip(delta, -1, 1) exactly; "
    "no error sits at +-1.",
    {"gaps": gaps, "at_bound": at_bound},
)  # fmt: skip
results.claim(
    "clip_halves_at_bound",
    bool(np.array_equal(np.asarray(at_one), [-0.5, 0.5])) and bool(np.all(gradlab_bound == 0)),
    "At delta = +-1 exactly, jnp.clip passes half the gradient (d/d delta = +-0.5: a tie between "
    "min and max splits it); gradlab's clip gives 0.",
    {"jax": np.asarray(at_one), "gradlab": gradlab_bound},
)  # fmt: skip

# %% [markdown]
# ## Clipping by global norm, by hand
# optax's `clip_by_global_norm` is a gradient transformation that returns the clipped updates, not
# the norm (`optax.global_norm` computes it); in plain JAX it is a few lines over the gradient's pytree.
# The linear predictor of clipped_error.py at its start (the same draws), squared error, clipped
# to `MAX_NORM`: return the norm before clipping beside the clipped gradient, and log the one you mean.

# %%
COMMON, RARE, MAX_NORM = 60, 4, 0.1  # clipped_error.py's sample counts; a threshold below every seed's norm
W_TRUE, W_START = np.array([1.0, -2.0, 3.0]), np.array([1.6, -2.6, 0.0])


# --8<-- [start:leak]
def clip_by_global_norm(grads, max_norm):
    """grads * min(1, max_norm / ||grads||) over every leaf; returns (clipped, norm before)."""
    norm = jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree_util.tree_leaves(grads)))
    scale = jnp.minimum(1.0, max_norm / norm)
    return jax.tree_util.tree_map(lambda g: g * scale, grads), norm


def clip_and_log(X, y, params, max_norm):
    grads = jax.grad(lambda p: jnp.mean(0.5 * (X @ p["w"] - y) ** 2))(params)
    clipped, before = clip_by_global_norm(grads, max_norm)
    return float(before), float(jnp.linalg.norm(clipped["w"]))


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
    before, after = clip_and_log(jnp.asarray(X), jnp.asarray(y), {"w": jnp.asarray(W_START)}, MAX_NORM)
    logged.append(before), used.append(after)
    gradient = engine.grad(lambda p, X=X, y=y: ops.mean(0.5 * (p[0] @ X.T - y) ** 2), [W_START])
    gradlab_norm.append(clipping.global_norm(gradient))
logged, used, gradlab_norm = np.array(logged), np.array(used), np.array(gradlab_norm)
results.twin_spread(
    "rare_start_error", rare_start, "smallest rare-sample |error| at the start (checks the draws)",
    of="clipped_error.rare_start_error", rtol=1e-12, atol=0, reason="the same float64 draws and formula",
)  # fmt: skip
results.number("max_norm", MAX_NORM, "the clipping threshold")
results.spread("logged_norm", logged, "the norm before clipping", rtol=1e-9)
results.spread("used_norm", used, "the clipped gradient's norm", rtol=1e-9)
results.claim(
    "clip_norm_exact",
    bool(np.all(np.abs(logged / gradlab_norm - 1) < 1e-12) and np.all(logged > 2 * MAX_NORM))
    and bool(np.all(np.abs(used / MAX_NORM - 1) < 1e-14)),
    "the hand-written clip returns gradlab's global norm (to 1e-12) and leaves a gradient of norm "
    "max_norm to 1e-14: no 1e-6 in the denominator, unlike clip_grad_norm_",
    {"logged": logged, "used": used, "gradlab": gradlab_norm},
)  # fmt: skip

# %%
results.save()
