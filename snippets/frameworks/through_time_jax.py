"""Gradients through time in JAX: ||dh_T/dh_0|| of the chapter's tanh RNN by jax.jacrev.

The chapter's tanh RNN (same W_hh = sigma_max Q, W_xh, inputs and h_0 as snippets/through_time.py
on the same seeds, input scale 1, T = 100), written with jax.lax.scan. Quoted by
docs/gradients-through-time.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np
from gradlab import recurrent as rec
from gradlab import snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
jax_major, jax_minor = (int(part) for part in jax.__version__.split(".")[:2])  # 0.10 is not 0.1
results.number("jax_version_major", jax_major, "JAX major version")
results.number("jax_version_minor", jax_minor, "JAX minor version")
SCALES, n, T = [0.5, 0.9, 1.0, 1.5, 3.0], 32, 100
nets = [rec.draw_network(seed, n, 4, T) for seed in SEEDS]


# %% [markdown]
# ## The Jacobian through time by jax.jacrev


# %%
# --8<-- [start:core]
def final_state(h0, W_hh, W_xh, xs):  # h_t = tanh(W_hh h_{t-1} + W_xh x_t), b = 0
    def step(h, x):
        return jnp.tanh(W_hh @ h + W_xh @ x), None

    return jax.lax.scan(step, h0, xs)[0]


@jax.jit
def jacobian_norm(W_hh, W_xh, xs, h0):  # ||dh_T/dh_0||_2 by reverse mode
    J = jax.jacrev(final_state)(h0, W_hh, W_xh, xs)
    return jnp.linalg.norm(J, ord=2)


# --8<-- [end:core]


rel = {}
for scale in SCALES:
    norms, ref = [], []
    for net in nets:
        params, xs, h0, _ = rec.unpack(net, scale, 1.0)
        norms.append(
            float(jacobian_norm(jnp.array(params[0]), jnp.array(params[1]), jnp.array(xs), jnp.array(h0)))
        )
        ref.append(rec.jacobian_summary(net, scale, 1.0)["norm"])
    norms = np.array(norms)
    rel[scale] = np.abs(norms / np.array(ref) - 1).max()
    key, chaotic = f"{scale:g}".replace(".", "p"), scale > 2  # only sigma_max 3 explodes
    tol = 0.1 if chaotic else 1e-9
    reason = (
        "Exploding: the forward pass amplifies the last-bit differences between XLA's tanh and np.tanh "
        "(the numpy snippet records this norm with rtol 0.1 across CPUs for the same reason)."
        if chaotic
        else "Contracting forward pass: the same products in float64, differing only in tanh's last bit "
        "and the order of the matrix products."
    )
    results.twin_spread(f"norm_{key}", norms, f"||dh_T/dh_0||, sigma_max {scale:g}",
                        of=f"through_time.norm_{key}", rtol=tol, atol=0, reason=reason)  # fmt: skip
    results.number(f"rel_diff_{key}", rel[scale], f"max |jax / gradlab - 1|, sigma_max {scale:g}",
                   atol=1e-8 if not chaotic else 1e-2)  # fmt: skip
contracting = max(rel[s] for s in SCALES if s < 2)
results.claim(
    "jacrev_matches_gradlab",
    contracting < 1e-9 and rel[3.0] < 0.01,
    "jax.jacrev's ||dh_T/dh_0|| matches gradlab's product of step Jacobians to 1e-9 relative for "
    "sigma_max <= 1.5 and to 1% at sigma_max 3, on every seed.",
    rel,
)

# %%
results.save()
