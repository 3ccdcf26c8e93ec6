"""Saturating sigmoids in JAX: the backward signal of the Glorot sigmoid stack, and sigma'(37).

The same stack, weights and inputs as snippets/saturation.py (built with gradlab from the same
seeds), its backward-signal ratio ||dL/dz_1|| / ||dL/dz_D|| by jax.grad, and jax.nn.sigmoid's
slope at z = 37 and 40. Quoted by docs/saturating-sigmoids.md.
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
from gradlab import backward_signal, engine, logistic, models, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
for part, name in zip(jax.__version__.split(".")[:3], ("major", "minor", "patch"), strict=True):
    results.number(f"jax_{name}", int(part), f"JAX version, {name}")

# %% [markdown]
# ## The stack: gradlab's arrays, jax.grad
# $\partial L/\partial z_l$ is the gradient with respect to a zero offset added to $z_l$.

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
def loss(offsets, params, X, y):
    """mean((mlp(X) - y)^2) with z_l + offsets[l]: dL/d offsets[l] = dL/dz_l."""
    h = X
    *hidden, (W_out, b_out) = zip(params[0::2], params[1::2], strict=True)
    for (W, b), offset in zip(hidden, offsets, strict=True):
        h = jax.nn.sigmoid(h @ W + b + offset)
    return jnp.mean((h @ W_out + b_out - y) ** 2)


@jax.jit
def signal_ratio(params, X, y):
    """||dL/dz_1|| / ||dL/dz_D||, by jax.grad with respect to the offsets."""
    offsets = [jnp.zeros((X.shape[0], W.shape[1])) for W in params[0:-2:2]]
    dz = jax.grad(loss)(offsets, params, X, y)
    return jnp.linalg.norm(dz[0]) / jnp.linalg.norm(dz[-1])


# sigma'(z) far out: JAX's rule is written from the output, y (1 - y)
z = jnp.array([37.0, 40.0])
slope_reverse = jax.vmap(jax.grad(jax.nn.sigmoid))(z)
_, slope_forward = jax.jvp(jax.nn.sigmoid, (z,), (jnp.ones(2),))
slope_formula = jax.nn.sigmoid(z) * jax.nn.sigmoid(-z)  # a number; jax.grad's rule unchanged

# JAX's built-in remedy: with accuracy=HIGHEST, logistic_p's JVP is ans * logistic(-x), sigma(z) sigma(-z),
# and tanh_p's is 4 sigma(2x) sigma(-2x) instead of (1 + y)(1 - y)
HIGHEST = jax.lax.AccuracyMode.HIGHEST
slope_highest = jax.vmap(jax.grad(lambda x: jax.lax.logistic(x, accuracy=HIGHEST)))(z)
_, slope_highest_forward = jax.jvp(lambda x: jax.lax.logistic(x, accuracy=HIGHEST), (z,), (jnp.ones(2),))
tanh20 = jax.grad(jnp.tanh)(20.0), jax.grad(lambda x: jax.lax.tanh(x, accuracy=HIGHEST))(20.0)
# --8<-- [end:core]

# %% [markdown]
# ## On every seed, against gradlab's reverse mode

# %%
draws = [draw(seed) for seed in snippet.seeds(args.seed)]
ratios = np.array([float(signal_ratio([jnp.asarray(p) for p in P], X, y)) for X, y, P in draws])
gradlab_ratios = np.array(
    [backward_signal.layer_report(P, X, y, "sigmoid")["signal_ratio"] for X, y, P in draws]
)
gap = np.abs(ratios / gradlab_ratios - 1)
print("seed  jax signal ratio     gradlab            rel. gap")
for seed, r, g, e in zip(snippet.seeds(args.seed), ratios, gradlab_ratios, gap, strict=True):
    print(f"{seed:4d}  {r:.15e}  {g:.15e}  {e:.1e}")
results.twin_spread(
    "signal_ratio_glorot", ratios, "Glorot sigmoid stack, jax.grad: signal ratio",
    of="saturation.signal_ratio_glorot", rtol=1e-12, atol=0,
    reason="float64, same formula; another matmul and exp kernel round differently through 10 layers",
)  # fmt: skip
results.number("signal_gap", gap.max(), "largest relative gap to gradlab's ratio, over seeds", atol=1e-12)
results.claim(
    "jax_matches_gradlab", bool(gap.max() < 1e-12),
    "On every seed jax.grad and gradlab's reverse mode give the same signal ratio to 1e-12.",
    {"gap": gap},
)  # fmt: skip

# %%
far = engine.Tensor(np.array([37.0, 40.0]), requires_grad=True)
far.sigmoid().sum().backward()  # gradlab's rule sigma(z) sigma(-z)
for i, at in enumerate((37, 40)):
    results.number(f"slope{at}_reverse", float(slope_reverse[i]), f"jax.grad of jax.nn.sigmoid at z = {at}")
    results.number(f"slope{at}_forward", float(slope_forward[i]), f"jax.jvp of jax.nn.sigmoid at z = {at}")
    results.number(f"slope{at}_gradlab", far.grad[i], f"gradlab's sigma'({at})", rtol=1e-14)
results.twin(
    "slope37_rule", float(slope_reverse[0]), "jax.grad of jax.nn.sigmoid at z = 37",
    of="saturation.slope37_reverse_rule", rtol=0, atol=0,
    reason="both compute the rule y (1 - y) from y = 1.0 exactly: 0",
)  # fmt: skip
formula_gap = np.abs(np.asarray(slope_formula) / far.grad - 1).max()
results.claim(
    "jax_slope_is_zero_far_out",
    bool(np.all(np.asarray(slope_reverse) == 0) and np.all(np.asarray(slope_forward) == 0))
    and bool(np.all(far.grad > 0))
    and bool(formula_gap < 1e-14),
    "At z = 37 and z = 40 jax.nn.sigmoid's slope is exactly 0 in reverse and forward mode, where gradlab's "
    "sigma(z) sigma(-z) is positive; jax.nn.sigmoid(z) * jax.nn.sigmoid(-z) matches gradlab's to 1e-14.",
    {"reverse": np.asarray(slope_reverse), "forward": np.asarray(slope_forward), "gradlab": far.grad},
)
print(f"sigma'(37), sigma'(40): jax reverse {slope_reverse.tolist()}, forward {slope_forward.tolist()}, "
      f"gradlab {far.grad.tolist()}")  # fmt: skip

highest_gap = max(np.abs(np.asarray(g) / far.grad - 1).max() for g in (slope_highest, slope_highest_forward))
tanh_true = 4 * logistic.reference_slope(40.0)  # tanh'(20) = 1 - tanh(20)^2 = 4 sigma(40) sigma(-40)
for i, mode in enumerate(("default", "highest")):
    results.number(
        f"tanh20_{mode}", float(tanh20[i]), f"jax.grad of tanh at z = 20, accuracy {mode}", rtol=1e-12
    )
results.number("tanh20_true", tanh_true, "tanh'(20), decimal reference", rtol=1e-12)
results.number("highest_gap", highest_gap, "accuracy=HIGHEST sigmoid slope at 37, 40 vs gradlab", atol=1e-14)
results.claim(
    "highest_keeps_the_slope",
    bool(highest_gap < 1e-14 and float(tanh20[0]) == 0 and abs(float(tanh20[1]) / tanh_true - 1) < 1e-14),
    "With accuracy=HIGHEST, jax.lax.logistic's slope at z = 37 and 40 (jax.grad and jax.jvp) matches "
    "gradlab's sigma(z) sigma(-z) to 1e-14; tanh's slope at z = 20 is exactly 0 by default and, with "
    "HIGHEST, the true value to 1e-14.",
    {"gap": highest_gap, "tanh default": float(tanh20[0]), "tanh highest": float(tanh20[1])},
)

# %%
results.save()
