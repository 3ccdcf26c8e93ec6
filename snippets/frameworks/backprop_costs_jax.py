"""What backprop costs, in JAX: the matrix products of jax.grad, with and without the input's gradient.

The MNIST-shaped MLP of the chapter (784-128-128-10, tanh, squared error, a batch of 256), built
from gradlab's arrays, in float64. `jax.grad` differentiates only with respect to its argument:
with the parameters as the argument the traced gradient program (its jaxpr) holds one matrix
product fewer than with the input X among the arguments. Quoted by docs/what-backprop-computes.md.
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
from gradlab import check, engine, models, ops, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
for part, value in zip(("major", "minor"), jax.__version__.split("."), strict=False):
    results.number(f"jax_{part}", int(value), f"JAX version, {part}")


# %% [markdown]
# ## Matrix products in the gradient program


# %%
# --8<-- [start:core]
def loss(params, X, y):
    h = X
    for W, b in zip(params[0:-2:2], params[1:-2:2], strict=True):
        h = jnp.tanh(h @ W + b)
    return jnp.mean((h @ params[-2] + params[-1] - y) ** 2)


def matmuls(function, *arguments):
    """(count, flops) of the matrix products (dot_general) in the program jax traces for
    function(*arguments); a product costs 2 x (output size) x (contracted length)."""
    products = [e for e in jax.make_jaxpr(function)(*arguments).eqns if e.primitive.name == "dot_general"]
    flops = 0
    for e in products:
        (contracted, _), _ = e.params["dimension_numbers"]
        flops += (
            2 * np.prod(e.outvars[0].aval.shape) * np.prod([e.invars[0].aval.shape[d] for d in contracted])
        )
    return len(products), int(flops)


grad_params = jax.grad(loss)  # with respect to the parameters only: X is data
grad_both = jax.grad(loss, argnums=(0, 1))  # the parameters and the input X
# --8<-- [end:core]

# %%
errors, counts = [], []
grad_compiled = jax.jit(grad_params)  # one program for every seed
for seed in snippet.seeds(args.seed):
    rng = np.random.default_rng(seed)
    arrays = models.init_mlp([784, 128, 128, 10], "glorot", rng)
    X, y = rng.normal(size=(256, 784)), rng.normal(size=(256, 10))
    params = [jnp.asarray(a) for a in arrays]
    counts.append(tuple(matmuls(f, params, X, y) for f in (loss, grad_params, grad_both)))
    reference = engine.grad(lambda p, X=X, y=y: ops.mean((models.mlp(p, X) - y) ** 2), arrays)
    errors.append(check.normwise_rel_error([np.asarray(g) for g in grad_compiled(params, X, y)], reference))
(forward, skip, both), = set(counts)  # fmt: skip
print(f"(matrix products, their flops): forward {forward}, jax.grad {skip}, with dL/dX {both}; "
      f"vs gradlab {max(errors):.1e}")  # fmt: skip
reason = (
    "the products' flops in jax.grad's traced program; gradlab's flop model also charges the "
    "elementwise ops (0.22% of this network's forward flops; they move the ratio by less than 2e-3 "
    "relative); the products' counts are the same 2mkn"
)
for key, total in (("skip", skip), ("input", both)):
    results.twin(f"backward_{key}", total[1] / forward[1] - 1, f"jax: backward / forward flops ({key})",
                 of=f"backprop_costs.backward_{key}", rtol=3e-3, atol=0, reason=reason)  # fmt: skip
saved_flops = both[1] - skip[1]  # the flops of dL/dX = dL/dZ1 W1^T, the same as X @ W1's
forward, skip, both = forward[0], skip[0], both[0]

# %%
results.number("forward_matmuls", forward, "matrix products in the forward pass")
results.number("grad_matmuls", skip, "matrix products in jax.grad's program (forward included)")
results.number("grad_input_matmuls", both, "matrix products with dL/dX too (forward included)")
results.number(
    "grad_error", max(errors), "jax.grad vs gradlab gradient, normwise relative, worst seed", atol=1e-12
)
results.claim(
    "jax_matches_gradlab",
    max(errors) < 1e-12,
    "On every seed jax.grad and gradlab's reverse mode give the same gradient to 1e-12.",
    {"errors": errors},
)
results.claim(
    "argument_saves_a_product",
    (forward, skip, both) == (3, 3 + 5, 3 + 6) and saved_flops == 2 * 256 * 784 * 128,
    "jax.grad's program has the forward pass's 3 products and 5 backward products; asking for dL/dX "
    "adds the sixth, as many flops as the first layer's forward product.",
    {"counts": (forward, skip, both), "dL/dX flops": saved_flops},
)

# %%
results.save()
