"""Accumulation and memory in JAX: jax.grad is pure, and a functional update can be discarded.

The least-squares fit and the linear autoencoder of snippets/accumulation.py (same arrays, same
seeds). `jax.grad` returns a fresh gradient on every call, so the never-reset loop of the chapter
must be written on purpose (a running sum). Adam is a pure function returning new parameters and
state; discarding the returned encoder freezes it exactly as the flawed in-place kernels did.
Arrays are immutable: there is no in-place edit to hide from autodiff. Quoted by
docs/accumulation-and-memory.md.
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
from gradlab import leaks, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
for part, name in zip(jax.__version__.split(".")[:3], ("major", "minor", "patch"), strict=True):
    results.number(f"jax_{name}", int(part), f"JAX version, {name}")
STEPS, LR, ADAM_LR = 60, 0.05, 0.01  # accumulation.py's defaults


def fit_data(seed):  # accumulation.py's fit(): the same draws
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(50, 3))
    return X, X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=50)


def autoencoder_data(seed):  # accumulation.py's autoencoder: X and the decoder's initial weight
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(64, 3)) @ rng.normal(size=(3, 6)) + 0.05 * rng.normal(size=(64, 6))
    return X, 0.1 * rng.normal(size=(3, 6))


# %% [markdown]
# ## A pure gradient, accumulation written out; a functional Adam whose result is half discarded


# %%
# --8<-- [start:core]
def mse(w, X, y):
    return jnp.mean((X @ w - y) ** 2)


value_and_grad = jax.jit(jax.value_and_grad(mse))  # compiled once: X and y are arguments


def fit(X, y, accumulate):
    w, g_sum = jnp.zeros(3), jnp.zeros(3)
    for _ in range(STEPS):
        value, g = value_and_grad(w, X, y)  # a fresh gradient on every call
        g_sum = g_sum + g if accumulate else g  # a stale .grad, written on purpose
        w = w - LR * g_sum
    return float(value)


@jax.jit
def adam(params, grads, state, lr=ADAM_LR, b1=0.9, b2=0.999, eps=1e-8):
    """One Adam step as a pure function: returns new parameters and state, changes nothing."""
    m, v, t = state
    t = t + 1
    m = jax.tree.map(lambda m, g: m + (1 - b1) * (g - m), m, grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    step = lambda p, m, v: p - lr / (1 - b1**t) * m / (jnp.sqrt(v) / jnp.sqrt(1 - b2**t) + eps)  # noqa: E731
    return jax.tree.map(step, params, m, v), (m, v, t)


reconstruction = jax.jit(jax.value_and_grad(lambda p, X: jnp.mean((X @ p["enc"] @ p["dec"] - X) ** 2)))


def autoencoder(X, W_dec0, discard_encoder, steps=10 * STEPS):
    params = {"enc": jnp.asarray(W_dec0.T), "dec": jnp.asarray(W_dec0)}
    state = (jax.tree.map(jnp.zeros_like, params),) * 2 + (0,)
    for k in range(steps):
        value, grads = reconstruction(params, X)
        new, state = adam(params, grads, state)
        before, params = params, {**new, "enc": params["enc"]} if discard_encoder else new  # the bug
        if k == 0:  # the probe: which parameter with a non-zero gradient did not change?
            frozen = [
                n for n in params if np.array_equal(params[n], before[n]) and np.asarray(grads[n]).any()
            ]
    return float(value), frozen, params["enc"]


# --8<-- [end:core]


# %% [markdown]
# ## On every seed, against accumulation.py

# %%
grad = jax.jit(jax.grad(mse))
runs = {key: [] for key in ("reset", "stale", "fixed", "flawed", "moved")}
flagged, flagged_fixed, pure = [], [], []
for seed in SEEDS:
    X, y = fit_data(seed)
    runs["reset"].append(fit(X, y, False))
    runs["stale"].append(fit(X, y, True))
    X_ae, W_dec0 = autoencoder_data(seed)
    loss, frozen, _ = autoencoder(X_ae, W_dec0, False)
    runs["fixed"].append(loss)
    flagged_fixed.append(frozen)
    loss, frozen, W_enc = autoencoder(X_ae, W_dec0, True)
    runs["flawed"].append(loss)
    flagged.append(frozen)
    runs["moved"].append(float(np.abs(np.asarray(W_enc) - W_dec0.T).max()))
    w = jnp.ones(3)
    pure.append(np.array_equal(grad(w, X, y), grad(w, X, y)))  # no buffer to accumulate into

TOL = "float64, the same formulas; XLA's kernels round differently"
for key, about, of, rtol, why in (
    ("reset", "final loss, the gradient used as returned", "reset_final_loss", 1e-12, ""),
    (
        "stale",
        "final loss, gradients summed on purpose",
        "stale_final_loss",
        1e-12,
        ", over 60 oscillating steps",
    ),
    ("fixed", "final loss, functional Adam", "fixed_final_loss", 1e-10, "; 600 Adam steps"),
    (
        "flawed",
        "final loss, returned encoder discarded",
        "flawed_final_loss",
        1e-10,
        "; 600 Adam steps. gradlab's flawed kernels and a discarded encoder both leave the decoder's Adam "
        "exact, so the decoder takes the same steps",
    ),
):
    results.twin_spread(f"{key}_final_loss", runs[key], about, of=f"accumulation.{of}", rtol=rtol, atol=0,
                        reason=TOL + why)  # fmt: skip
gradlab_adam = []  # gradlab's Adam (leaks.InPlaceAdam, correct kernels) on the same arrays
for seed in SEEDS:
    X_ae, W_dec0 = autoencoder_data(seed)
    loss_ae = functools.partial(leaks.autoencoder_loss, X=X_ae)
    params = [np.copy(W_dec0.T), W_dec0.copy()]
    gradlab_adam.append(leaks.run_adam(loss_ae, params, ADAM_LR, False, 10 * STEPS, ["e", "d"])[0][-1])
gap = float(np.max(np.abs(np.array(runs["fixed"]) / gradlab_adam - 1)))
results.number("adam_gap", gap, "largest relative gap, JAX Adam vs gradlab's Adam, final loss", atol=1e-12)
try:  # the in-place edit of the torch tab
    jnp.zeros(3)[0] = 1.0
    immutable = False
except TypeError:
    immutable = True

# %% [markdown]
# ## Repeated and out-of-range indices


# %%
# --8<-- [start:indices]
idx, G = jnp.array([0, 0, 1]), jnp.array([1.0, 2.0, 3.0])
written, added = jnp.zeros(3).at[idx].set(G), jnp.zeros(3).at[idx].add(G)
E, row_2 = jnp.arange(3.0), jnp.array([0.0, 0.0, 1.0])


def lookup(E):  # index 5 of a 3-row table: the gather clamps it to the last row
    return E[jnp.array([5])].sum()


reverse = jax.grad(lookup)(E)  # its VJP is a scatter, which drops an out-of-range index
forward = jax.jvp(lookup, (E,), (row_2,))[1]
central = (lookup(E + 1e-6 * row_2) - lookup(E - 1e-6 * row_2)) / 2e-6
# --8<-- [end:indices]
print(f".at[].set {written}, .at[].add {added}; E[5] = {lookup(E)}: grad {reverse}, jvp {forward}")
CLAIMS = [
    ("at_add_accumulates", added.tolist() == [3.0, 3.0, 0.0] and float(written[0]) in (1.0, 2.0),
     "With idx = [0, 0, 1], `.at[idx].set(G)` keeps one contribution to row 0 and `.at[idx].add(G)` "
     "adds both."),
    ("out_of_range_gradient_dropped", float(lookup(E)) == float(E[2]) and not reverse.any()
     and float(forward) == 1.0 and abs(float(central) - 1) < 1e-8, "`E[5]` on a 3-row table returns "
     "the last row, but `jax.grad` gives 0 for every row, while `jax.jvp` and central differences give "
     "1 for the last row: reverse mode disagrees with forward mode and with the function."),
    ("pure", all(pure), "jax.grad called twice at the same point returns the same gradient: nothing "
     "accumulates."),
    ("adam_agrees", gap < 1e-12, "On every seed the functional Adam and gradlab's Adam end at the same "
     "loss to 1e-12 after 600 steps."),
    ("discarded_encoder_frozen", max(runs["moved"]) == 0 and all(f == ["enc"] for f in flagged)
     and all(f == [] for f in flagged_fixed), "Discarding the returned encoder leaves it exactly at its "
     "initial value on every seed; the probe flags it, and only it, after one step, and nothing in the "
     "correct loop."),
    ("immutable", immutable, "Assigning into a jax.Array raises TypeError: arrays are immutable."),
]  # fmt: skip
for name, holds, statement in CLAIMS:
    results.claim(name, bool(holds), statement, {"runs": {k: np.array(v) for k, v in runs.items()}})

# %%
results.save()
