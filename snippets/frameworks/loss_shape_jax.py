"""The shape of the loss in JAX: squared error and Huber on outliers, sigmoid + squared error vs log_sigmoid.

The same line and outliers as snippets/loss_shape.py (drawn with numpy from the same seeds): each
point's own gradient by jax.vmap(jax.grad), the outliers' share of the summed gradient norms, the
Huber fit by gradient descent, and the logit gradients of sigmoid + squared error against the
cross-entropy -log_sigmoid(z), in float64 and float32, and the CPU's flush-to-zero mode behind the
exact zero far out. Quoted by docs/shape-of-the-loss.md.
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
from gradlab import losses, shape, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
for part, name in zip(jax.__version__.split(".")[:3], ("major", "minor", "patch"), strict=True):
    results.number(f"jax_{name}", int(part), f"JAX version, {name}")
POINTS, OUTLIERS, OFFSET, DELTA, LOGIT = 40, 3, -8.0, 1.0, -10.0  # loss_shape.py's defaults
rngs = [np.random.default_rng(seed) for seed in snippet.seeds(args.seed)]
x = np.sort(np.stack([rng.uniform(-1, 1, POINTS) for rng in rngs]), axis=1)  # loss_shape.py's draws
y = 2.0 * x + 0.5 + 0.3 * np.stack([rng.normal(size=POINTS) for rng in rngs])
y[:, -OUTLIERS:] += OFFSET  # the largest x

# %% [markdown]
# ## Each point's own gradient, and the outliers' share
# JAX has no Huber loss in its core (optax has one); written with `jnp.where`, it is a few lines.
# `vmap(grad(...))` differentiates one point's loss with respect to (slope, intercept), for every point.


# %%
# --8<-- [start:core]
def huber(r, delta=DELTA):
    return jnp.where(jnp.abs(r) <= delta, 0.5 * r**2, delta * (jnp.abs(r) - 0.5 * delta))


LOSSES = {"squared": lambda r: 0.5 * r**2, "huber": huber}


@functools.partial(jax.jit, static_argnums=0)  # one compiled program per loss
def outlier_share(loss, params, x, y):
    """sum of ||g_i|| over the outliers / over all points, g_i = d loss(a x_i + b - y_i) / d(a, b)."""
    point_grad = jax.vmap(jax.grad(lambda p, xi, yi: loss(p[0] * xi + p[1] - yi)), in_axes=(None, 0, 0))
    norms = jnp.linalg.norm(point_grad(params, x, y), axis=-1)
    return norms[-OUTLIERS:].sum() / norms.sum()


@jax.jit
def fit_huber(x, y, lr=1.0, steps=2000):
    """Plain gradient descent on the mean Huber loss from (0, 0), as loss_shape.py does."""
    mean_grad = jax.grad(lambda p: jnp.mean(huber(p[0] * x + p[1] - y)))
    return jax.lax.fori_loop(0, steps, lambda _, p: p - lr * mean_grad(p), jnp.zeros(2))


# --8<-- [end:core]
POINT_GRAD = {  # the same per-point gradients, for the comparison with gradlab
    name: jax.jit(jax.vmap(jax.grad(lambda p, xi, yi, f=f: f(p[0] * xi + p[1] - yi)), (None, 0, 0)))
    for name, f in LOSSES.items()
}
shares = {key: [] for key in ("squared_initial", "huber_initial", "squared_fitted", "huber_fitted")}
huber_slope_error, gap = [], 0.0  # gap: largest relative difference from gradlab's per-point norms
GRADLAB = {"squared": losses.squared_error, "huber": lambda r: losses.huber(r, DELTA)}
for xs, ys in zip(x, y, strict=True):
    least_squares = jnp.linalg.lstsq(np.stack([xs, np.ones_like(xs)], 1), ys)[0]
    huber_fit = fit_huber(xs, ys)
    huber_slope_error.append(abs(float(huber_fit[0]) - 2.0))
    for name, fitted in (("squared", least_squares), ("huber", huber_fit)):
        shares[f"{name}_initial"].append(float(outlier_share(LOSSES[name], np.zeros(2), xs, ys)))
        shares[f"{name}_fitted"].append(float(outlier_share(LOSSES[name], fitted, xs, ys)))
        ours = np.linalg.norm(POINT_GRAD[name](fitted, xs, ys), axis=-1)
        theirs = shape.per_point_gradient_norms(
            GRADLAB[name], *np.asarray(fitted)[:, None], xs[None], ys[None]
        )[0]
        gap = max(gap, float(np.max(np.abs(ours - theirs) / theirs)))
for key, values in shares.items():
    loss, where = key.split("_")
    results.twin_spread(
        f"{loss}_share_{where}", values, f"{key}: outliers' share of sum |g_i|",
        of=f"loss_shape.{loss}_share_{where}", rtol=1e-9, atol=0,
        reason="float64, the same formula; the fits come from another solver (lstsq, a jitted loop's sums)",
    )  # fmt: skip
results.twin_spread(
    "huber_slope_error", huber_slope_error, "Huber fit by a jitted gradient-descent loop: |slope - 2|",
    of="loss_shape.huber_slope_error", rtol=1e-9, atol=0,
    reason="float64 gradient descent, same rate and steps, converged; only the order of sums differs",
)  # fmt: skip
results.number(
    "norm_gap", gap, "largest relative difference of |g_i| from gradlab's, at each fit", atol=1e-13
)
results.claim(
    "autograd_matches_gradlab", gap < 1e-13,
    "every point's gradient norm from vmap(grad) matches gradlab's reverse mode to 1e-13",
    {"gap": gap},
)  # fmt: skip

# %% [markdown]
# ## The confidently wrong logit, in float64 and float32
# Label 1: sigmoid + squared error against the cross-entropy $-\log\sigma(z)$ = `-jax.nn.log_sigmoid(z)`,
# at the quoted logit and on a grid down to $z = -800$.
# The exact zero starts where $\sigma(z)$ would be subnormal: XLA on the CPU flushes subnormal results
# to 0, in a plain product too, so the zero is the mode's, not `exp`'s.


# %%
@jax.jit
def logit_gradients(z):
    """dL/dz for label 1 at every z: sigmoid + squared error, and cross-entropy from logits."""
    squared = jax.grad(lambda z: jnp.sum((jax.nn.sigmoid(z) - 1) ** 2))(z)
    return squared, jax.grad(lambda z: jnp.sum(-jax.nn.log_sigmoid(z)))(z)


found = {}
for dtype in ("float64", "float32"):
    zs = np.concatenate([[LOGIT], np.arange(0.0, -800.0, -0.01)]).astype(dtype)
    squared, ce = (np.asarray(g) for g in logit_gradients(zs))
    found["squared", dtype], found["ce", dtype] = float(squared[0]), float(ce[0])
    found["zero_from", dtype] = float(zs[squared == 0].max())
    found["ce_smallest", dtype] = float(np.abs(ce[zs <= LOGIT]).min())
    results.number(f"squared_zero_from_{dtype}", found["zero_from", dtype], f"{dtype}: 0 from z", atol=0.02)
for key in ("squared", "ce"):
    results.twin(
        f"logit_grad_{key}", found[key, "float64"], f"dL/dz at z = {LOGIT:g}, float64",
        of=f"loss_shape.logit_grad_{key}", rtol=1e-12, atol=0,
        reason="float64; jax.nn.sigmoid's derivative rule and XLA's exp may round differently in a last bit",
    )  # fmt: skip
    results.number(f"logit_grad_{key}_float32", found[key, "float32"], "dL/dz, float32", rtol=1e-5)
relative32 = {k: abs(found[k, "float32"] / found[k, "float64"] - 1) for k in ("squared", "ce")}
smallest_normal = {d: float(np.log(np.finfo(d).tiny)) for d in ("float64", "float32")}
# Is the zero the exp implementation's range or the CPU's flush-to-zero mode? A product of two normal
# floats whose exact result is subnormal (no exp involved), and the sigmoid itself, whose exp(-z) is huge
# here: the subnormal appears only in the division 1 / (1 + e^-z). numpy keeps the subnormals.
product32, product64 = jnp.float32(1e-20) * jnp.float32(1e-20), jnp.float64(1e-160) * jnp.float64(1e-160)
sigmoid32 = jax.nn.sigmoid(jnp.float32(-87.5))
flushed = {
    "product_float32": (float(product32), float(np.float32(1e-20) * np.float32(1e-20))),
    "product_float64": (float(product64), 1e-160 * 1e-160),
    "sigmoid_float32": (float(sigmoid32), float(1 / (1 + np.exp(np.float32(87.5))))),
}
results.number("product_flushed", float(product32), "jnp.float32(1e-20) * jnp.float32(1e-20) (numpy: 1e-40)")
results.number("sigmoid_flushed", float(sigmoid32), "jax.nn.sigmoid(float32 -87.5) (numpy: 9.98e-39)")
results.number(
    "sigmoid_numpy", flushed["sigmoid_float32"][1], "numpy's 1 / (1 + e^87.5) in float32", rtol=1e-6
)
results.claim(
    "float32_same_small_gradient",
    max(relative32.values()) < 1e-6
    and all(abs(found["zero_from", d] - smallest_normal[d]) < 0.02 for d in smallest_normal),
    f"at z = {LOGIT:g} float32 gives both logit gradients to 1e-6; the squared-error gradient is exactly 0 "
    "from where sigmoid(z) falls below the smallest normal float",
    {"relative32": relative32, "smallest_normal": smallest_normal},
)  # fmt: skip
results.claim(
    "cpu_flushes_subnormals",
    jax.default_backend() == "cpu"
    and all(jax_value == 0 < abs(numpy_value) < np.finfo(np.float32 if "32" in k else np.float64).tiny
            for k, (jax_value, numpy_value) in flushed.items()),
    "XLA on the CPU flushes subnormal results to 0: a product of two normal floats in float32 and in float64 "
    "and sigmoid(-87.5) in float32 are 0 in JAX, subnormal in numpy",
    flushed,
)  # fmt: skip
results.claim(
    "ce_never_zero", min(found["ce_smallest", d] for d in ("float32", "float64")) > 0.99,
    f"cross-entropy's logit gradient is above 0.99 in size for every z from {LOGIT:g} to -800, both dtypes",
    {str(k): v for k, v in found.items()},
)  # fmt: skip
print(f"shares {shares}\nlogit gradients {found}")

# %%
results.save()
