"""Programs, not functions, in JAX: the NaN through jnp.where, kinks and a hard threshold.

The numpy snippet program_gradients.py measures three interface leaks with gradlab; this script
runs the same programs through jax.grad in float64 and records the numbers beside
gradlab's. Quoted by docs/programs-not-functions.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import jax.numpy as jnp
import numpy as np
from gradlab import snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
jax.config.update("jax_enable_x64", True)
jax_major, jax_minor = (int(part) for part in jax.__version__.split(".")[:2])  # 0.10 is not 0.1
results.number("jax_version_major", jax_major, "JAX major version")
results.number("jax_version_minor", jax_minor, "JAX minor version")


def grad(f, x):
    """dL/dx of f at x (a numpy array), by jax.grad (jitted: one compiled program per f)."""
    return np.asarray(jax.jit(jax.grad(f))(jnp.asarray(x, dtype=jnp.float64)))


# %% [markdown]
# ## The masked square root, and the double where
# The same 61-point grid on [-1, 2] as the numpy snippet; the same model z = Xw on each seed.


# %%
# --8<-- [start:core]
def masked_sqrt(x):  # the function is 0 for x <= 0; the program evaluates sqrt(x) there
    return jnp.where(x > 0, jnp.sqrt(x), 0.0).sum()


def double_where_sqrt(x):  # the inner where feeds sqrt a safe input where the mask is false
    return jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0).sum()


x = np.linspace(-1.0, 2.0, 61)
masked_nan = int(np.isnan(grad(masked_sqrt, x)).sum())  # NaN wherever x <= 0
safe_nan = int(np.isnan(grad(double_where_sqrt, x)).sum())  # none
xj = jnp.asarray(x)  # forward mode, one tangent per entry: where selects the taken branch's tangent
tangent = jax.jvp(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0), (xj,), (jnp.ones_like(xj),))[1]
forward_nan = int(jnp.isnan(tangent).sum())  # none

KINKS = {  # d/dx at the kink: ReLU five ways, |x|, clamp's upper bound, relu(x) - relu(-x) = x
    "relu": (jax.nn.relu, 0.0),
    "max_x_0": (lambda x: jnp.maximum(x, 0.0), 0.0),
    "max_0_x": (lambda x: jnp.maximum(0.0, x), 0.0),
    "half_x_plus_abs": (lambda x: (x + jnp.abs(x)) / 2, 0.0),
    "clip_low": (lambda x: jnp.clip(x, min=0.0), 0.0),
    "abs": (jnp.abs, 0.0),
    "clip_at_hi": (lambda x: jnp.clip(x, 0.0, 1.0), 1.0),
    "relu_diff": (lambda x: jax.nn.relu(x) - jax.nn.relu(-x), 0.0),  # = x, derivative 1 at 0
}
kink = {name: float(grad(f, np.array(at))) for name, (f, at) in KINKS.items()}
# --8<-- [end:core]
print(f"NaN entries of dL/dx on x <= 0: single where {masked_nan}, double where {safe_nan}")
print(f"NaN entries of the forward-mode tangent, single where: {forward_nan}")
results.twin(
    "masked_forward_nan",
    forward_nan,
    "NaN entries, jnp.where, forward mode (jax.jvp)",
    of="program_gradients.masked_forward_nan",
    rtol=0,
    atol=0,
    reason="a count of NaN entries on the same grid: must be equal",
)
print("slope at the kink:", kink)
results.twin(
    "masked_reverse_nan",
    masked_nan,
    "NaN entries, jnp.where",
    of="program_gradients.masked_reverse_nan",
    rtol=0,
    atol=0,
    reason="a count of NaN entries on the same grid: must be equal",
)
results.twin(
    "safe_reverse_nan",
    safe_nan,
    "NaN entries, double jnp.where",
    of="program_gradients.safe_reverse_nan",
    rtol=0,
    atol=0,
    reason="a count of NaN entries on the same grid: must be equal",
)

nan_fraction, safe_fraction = [], []
model_grad = jax.jit(jax.grad(lambda w, X, f: f(X @ w) / len(X)), static_argnums=2)  # one program per f
for seed in SEEDS:  # the numpy snippet's draws: X (64 x 8) and w from default_rng(seed)
    rng = np.random.default_rng(seed)
    X, w = rng.normal(size=(64, 8)), rng.normal(size=8)
    nan_fraction.append(np.isnan(model_grad(w, X, masked_sqrt)).mean())
    safe_fraction.append(np.isnan(model_grad(w, X, double_where_sqrt)).mean())
for key, values in (("model_nan_fraction", nan_fraction), ("model_safe_nan_fraction", safe_fraction)):
    results.spread(key, values, f"{key}: fraction of dL/dw entries that are NaN, JAX")
    for end in ("min", "max"):
        results.twin(
            f"{key}_{end}_twin",
            float(getattr(np, end)(values)),
            f"{key}, {end} over seeds",
            of=f"program_gradients.{key}_{end}",
            rtol=0,
            atol=0,
            reason="a fraction of NaN entries of 8 on the same draws: must be equal",
        )

# %% [markdown]
# ## Kinks: JAX's conventions beside gradlab's
# gradlab: relu'(0) = 0, |x|'(0) = 0, maximum sends a tie's gradient to its first argument, clip
# passes nothing at its bounds. The claim states how JAX differs, as measured here.

# %%
for name, value in kink.items():
    results.number(f"kink_{name}", value, f"JAX's d/dx of {name} at its kink")
for name in (
    "relu",
    "relu_diff",
):  # where JAX and gradlab agree
    results.twin(
        f"kink_{name}_twin",
        kink[name],
        f"{name} at its kink",
        of=f"program_gradients.kink_{name}_reverse",
        rtol=0,
        atol=0,
        reason="a convention at a kink: exactly 0 or 0.5 in both",
    )
results.claim(
    "kinks_differ_from_gradlab",
    kink["max_x_0"] == kink["max_0_x"] == kink["clip_low"] == kink["clip_at_hi"] == 0.5
    and kink["relu"] == 0.0
    and kink["abs"] == kink["half_x_plus_abs"] == 1.0,
    "JAX agrees with gradlab on relu (0) at the kink, but splits maximum's tie 0.5/0.5 in both "
    "argument orders (gradlab: 1 to the first argument, 0 to the second), its clip passes 0.5 at both "
    "bounds (gradlab: 0), and abs'(0) = 1, so (x + abs(x))/2 has slope 1 (gradlab: 0 and 0.5).",
    kink,
)

results.claim(
    "identity_gets_zero",
    kink["relu_diff"] == 0.0,
    "JAX differentiates relu(x) - relu(-x), which is x, to 0 at x = 0, where the derivative is 1.",
    {"relu_diff": kink["relu_diff"]},
)

# %% [markdown]
# ## The hard threshold
# The numpy snippet's first-seed data; the step written with jnp.heaviside, whose derivative is 0.

# %%
x_data = jnp.asarray(np.random.default_rng(SEEDS[0]).uniform(-2.0, 2.0, size=200))
y_data = (x_data > 0.5).astype(jnp.float64)
hard_grad = (
    float(grad(lambda t: ((jnp.heaviside(x_data - t, 1.0) - y_data) ** 2).mean(), np.array(-1.0))) + 0.0
)  # + 0.0 turns IEEE -0.0 into 0.0
results.twin(
    "hard_grad_reverse",
    hard_grad,
    "dL/dt of the hard step at t = -1",
    of="program_gradients.hard_grad_reverse",
    rtol=0,
    atol=0,
    reason="exactly 0 in both",
)
results.claim(
    "where_nan_like_gradlab",
    masked_nan == int((x <= 0).sum())
    and safe_nan == 0
    and forward_nan == 0
    and min(nan_fraction) == 1
    and max(safe_fraction) == 0
    and hard_grad == 0,
    "jnp.where returns NaN at every grid point with x <= 0 in reverse mode, at none in forward mode "
    "(jax.jvp: where selects the taken branch's tangent), and the double where at none; in the "
    "model every entry of dL/dw is NaN on every seed, none with the double where; the hard step's "
    "gradient is exactly 0.",
    {
        "masked": masked_nan,
        "forward": forward_nan,
        "safe": safe_nan,
        "fraction": nan_fraction,
        "hard": hard_grad,
    },
)

# %%
results.save()
