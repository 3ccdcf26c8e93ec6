"""Checking a backward pass in JAX: jax.test_util.check_grads on a correct rule and a planted bug.

The chapter's small tanh network and its sigmoid layer, with the same arrays as
snippets/gradient_check.py on the same seeds; the bug is a jax.custom_vjp whose backward forgot
the factor (1 - y), as gradlab.planted. Quoted by docs/checking-a-backward-pass.md.
"""

# %%
import functools
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np
from gradlab import check, engine, models, ops, snippet
from jax.test_util import check_grads

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
jax_major, jax_minor = (int(part) for part in jax.__version__.split(".")[:2])  # 0.10 is not 0.1
results.number("jax_version_major", jax_major, "JAX major version")
results.number("jax_version_minor", jax_minor, "JAX minor version")
WEIGHTS = {"unit": 1.0, "small": 1e-6}  # the numpy snippet's loss weights


# %% [markdown]
# ## A sigmoid with a planted bug, and check_grads on both rules


# %%
# --8<-- [start:core]
@jax.custom_vjp
def forgot_factor(t):
    return jax.nn.sigmoid(t)


def forgot_fwd(t):
    y = jax.nn.sigmoid(t)
    return y, y


def forgot_bwd(y, grad):
    return (grad * y,)  # BUG: should be grad * y * (1 - y)


forgot_factor.defvjp(forgot_fwd, forgot_bwd)


@functools.partial(jax.jit, static_argnums=0)  # compiled once per sigmoid rule
def loss(sigmoid, W, b, X, weight):
    return weight * jnp.mean((sigmoid(X @ W + b) - 0.5) ** 2)


def passes(sigmoid, W, b, X, weight):  # float64 defaults: eps 1e-4, atol = rtol = 1e-5
    f = lambda W, b: loss(sigmoid, W, b, X, weight)  # noqa: E731
    try:
        check_grads(f, (W, b), order=1, modes=["rev"])  # custom_vjp: reverse mode only
        return True
    except AssertionError:
        return False


# --8<-- [end:core]


RULES = {"correct": jax.nn.sigmoid, "buggy": forgot_factor}
passed = {f"{r}_{w}": 0 for r in RULES for w in WEIGHTS}
for seed in SEEDS:
    rng = np.random.default_rng(seed)  # the draws of gradient_check.py's tolerance section
    X = jnp.array(rng.normal(size=(16, 4)) * np.array([1e-8, 1.0, 1.0, 1.0]))  # one tiny input
    W, b = jnp.array(rng.normal(size=(4, 3))), jnp.zeros(3)
    for rule, sigmoid in RULES.items():
        for w, weight in WEIGHTS.items():
            passed[f"{rule}_{w}"] += passes(sigmoid, W, b, X, weight)
for key, count in passed.items():
    results.number(f"check_grads_{key}", count, f"seeds on which check_grads passes: {key.replace('_', ' ')}")
n = len(SEEDS)
results.claim(
    "check_grads_catches_bug",
    passed["correct_unit"] == n and passed["buggy_unit"] == 0,
    "At loss weight 1, check_grads passes the correct rule and fails the planted bug on every seed.",
    passed,
)
results.claim(
    "check_grads_misses_small_bug",
    passed["correct_small"] == passed["buggy_small"] == n,
    "At loss weight 1e-6, check_grads' default atol 1e-5 passes the planted bug too, on every seed.",
    passed,
)


# %% [markdown]
# ## The tanh network: jax.grad against gradlab's reverse mode, and check_grads on it


# %%
def mse(params, X, y):  # models.mlp with tanh, in JAX
    h = X
    for i in range(0, len(params) - 2, 2):
        h = jnp.tanh(h @ params[i] + params[i + 1])
    return jnp.mean((h @ params[-2] + params[-1] - y) ** 2)


mse_jit, grad_mse = jax.jit(mse), jax.jit(jax.grad(mse))  # compiled once for every seed
errors, tanh_passes = [], 0
for seed in SEEDS:
    rng = np.random.default_rng(seed)  # the draws of gradient_check.py's sweep()
    X, y = rng.normal(size=(16, 4)), rng.normal(size=(16, 1))
    p = models.init_mlp([4, 8, 8, 1], "glorot", rng)
    ref = engine.grad(lambda q, X=X, y=y: ops.mean((models.mlp(q, X, "tanh") - y) ** 2), p)
    jp = [jnp.array(a) for a in p]
    grads = grad_mse(jp, X, y)
    errors.append(check.normwise_rel_error([np.asarray(g) for g in grads], ref))
    try:
        check_grads(lambda q, X=X, y=y: mse_jit(q, X, y), (jp,), order=1, modes=["rev"])
        tanh_passes += 1
    except AssertionError:
        pass
results.spread("grad_vs_gradlab", errors, "normwise |jax - gradlab| / |gradlab|, tanh net", atol=1e-14)
results.number("check_grads_tanh_passes", tanh_passes, "seeds on which check_grads passes the tanh network")
results.claim(
    "grad_matches_gradlab",
    max(errors) < 1e-12 and tanh_passes == n,
    "jax.grad and gradlab's reverse mode agree to 1e-12 on the tanh network on every seed, and "
    "check_grads passes it.",
    {"errors": errors, "passes": tanh_passes},
)

# %%
results.save()
