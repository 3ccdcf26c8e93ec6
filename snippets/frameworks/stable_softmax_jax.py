"""Stable formulations in JAX: log(softmax) against jax.nn.log_softmax, log_sigmoid, logsumexp's gradient.

The numpy snippet stable_softmax.py measures where each program for the cross-entropy fails with
gradlab; this script runs JAX's own functions on the same logits in float64 and records the
numbers beside gradlab's. Quoted by docs/stable-formulations.md.
"""

# %%
import decimal
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
jax.config.update("jax_enable_x64", True)
jax_major, jax_minor = (int(part) for part in jax.__version__.split(".")[:2])  # 0.10 is not 0.1
results.number("jax_version_major", jax_major, "JAX major version")
results.number("jax_version_minor", jax_minor, "JAX minor version")
C, LABEL, CONFIDENT = 1000.0, 2, 50.0  # the numpy snippet's defaults

# %% [markdown]
# ## The same logits through JAX's functions
# $z = c\,[1, 0, -1]$ with $c = 1000$ and true class 2, as in the numpy snippet: the softmax
# followed by a log, against `jax.nn.log_softmax`; the gradient of `jax.nn.logsumexp`; and the
# binary loss at $z = 50$ from `jax.nn.log_sigmoid`.

# %%
# --8<-- [start:core]
z = C * jnp.array([1.0, 0.0, -1.0])  # float64; the true class is the smallest logit


def naive(z):  # the max-subtracting softmax, then a log
    return -jnp.log(jax.nn.softmax(z))[LABEL]


def stable(z):  # log_softmax = z - logsumexp(z): never the log of a probability
    return -jax.nn.log_softmax(z)[LABEL]


naive_loss, naive_grad = jax.value_and_grad(naive)(z)
stable_loss, stable_grad = jax.value_and_grad(stable)(z)
exact = jax.nn.softmax(z) - jax.nn.one_hot(LABEL, 3)
lse_grad = jax.grad(jax.nn.logsumexp)(z)  # exponents z - max z <= 0: finite, the softmax
bce = -jax.nn.log_sigmoid(jnp.array(CONFIDENT))  # label 1: softplus(-z)
# --8<-- [end:core]
# the bookkeeping in numpy: eager jnp ops would each compile once more
nan_fraction = float(np.isnan(naive_grad).mean())
error = float(np.abs(np.asarray(stable_grad) - np.asarray(exact)).max())
# at c = 1000 the softmax is exactly [1, 0, 0]; also compare on logits where it is not
z_random = 3.0 * jax.random.normal(jax.random.key(0), (10,))
lse_pairs = [
    (lse_grad, jax.nn.softmax(z)),
    (jax.jit(jax.grad(jax.nn.logsumexp))(z_random), jax.jit(jax.nn.softmax)(z_random)),  # one program each
]
lse_error = max(float(np.abs(np.asarray(g) - np.asarray(p)).max()) for g, p in lse_pairs)
print(f"c = {C:g}: log(softmax) loss {naive_loss}, NaN gradient entries {nan_fraction:.0%}")
print(f"log_softmax loss {stable_loss}, gradient {stable_grad}; logsumexp gradient {lse_grad}")
print(f"-log_sigmoid({CONFIDENT:g}) = {float(bce)!r}")
results.number("naive_loss_inf", float(naive_loss) == np.inf, "log(softmax) loss is +inf at c")
results.twin(
    "softmax_then_log_nan_float64",
    nan_fraction,
    "log(softmax): fraction of NaN gradient entries",
    of="stable_softmax.softmax_then_log_nan_float64",
    rtol=0,
    atol=0,
    reason="a fraction of NaN entries of 3: must be equal",
)
results.twin(
    "stable_grad_error_float64",
    error,
    "log_softmax: max |grad - (softmax - one_hot)|",
    of="stable_softmax.stable_grad_error_float64",
    rtol=0,
    atol=1e-15,
    reason="float64; the exact gradient [1, 0, -1] at c = 1000 is representable, so both kernels get it to "
    "within a few ulps of 1",
)
results.number("stable_loss", float(stable_loss), "-log_softmax(z)[y] at c (= 2c)", rtol=1e-12)
results.number(
    "lse_grad_error", lse_error, "max |grad logsumexp - softmax|, c = 1000 and random logits", atol=1e-15
)
results.twin(
    "bce_stable_float64",
    float(bce),
    "-log_sigmoid(z), float64",
    of="stable_softmax.bce_stable_float64",
    rtol=1e-12,
    atol=0,
    reason="float64, log1p(exp(-z)) in XLA; libm's exp may differ in the last bit",
)
# where -log(softmax) stops being finite in JAX: XLA on the CPU flushes subnormals to zero (jax-ml/jax
# issue #16200), so p_y = e^(-2c) is 0 once it is below the smallest normal float, not the smallest subnormal
for name, dtype, top in (("float32", jnp.float32, 60.0), ("float64", jnp.float64, 400.0)):
    scales = np.arange(1.0, top, 1e-3)
    zs = jnp.asarray(scales[:, None] * np.array([1.0, 0.0, -1.0]), dtype=dtype)
    loss_values, grad_values = jax.jit(jax.vmap(jax.value_and_grad(naive)))(zs)
    finite_loss, finite_grad = (
        np.isfinite(np.asarray(loss_values)),
        np.isfinite(np.asarray(grad_values)).all(axis=1),
    )
    results.number(f"limit_softmax_then_log_{name}", scales[finite_loss].max(), f"{name}: last finite loss c")
    results.number(f"limit_grad_softmax_then_log_{name}", scales[finite_grad].max(), f"{name}: gradient")
    flush = -np.log(np.float64(np.finfo(dtype).tiny)) / 2  # half of -ln(smallest normal)
    results.number(f"flush_limit_{name}", flush, f"{name}: c where e^(-2c) falls below the smallest normal")
    results.claim(f"flushed_{name}", abs(scales[finite_loss].max() / flush - 1) < 1e-4,
                  f"In {name}, JAX's log(softmax) is inf from c = ½·(−ln tiny), to 10⁻⁴")  # fmt: skip

# %% [markdown]
# ## The naive cross-entropy's gradient in JAX: the other library as witness
# $-\log(e^{z} / \sum_k e^{z_k})_y$, written as gradlab writes it. gradlab's reverse mode returns a finite,
# wrong gradient from $c \approx 245$: its division rule forms the local factor $-a/b^2 \approx -e^{-3c}$,
# which underflows before it meets the incoming $-1/p_y \approx -e^{2c}$. JAX's rule multiplies the
# incoming cotangent first. Both modes against $\mathrm{softmax}(z) - \mathrm{one\_hot}(y)$, normwise to
# $10^{-6}$, on a grid of $c$.


# %%
def naive_cross_entropy(z):  # e^z / sum e^z, then the log: the naive program of the numpy snippet
    exponentials = jnp.exp(z)
    return -jnp.log(exponentials / jnp.sum(exponentials))[LABEL]


scales = np.arange(1.0, 400.0, 1e-3)
zs = scales[:, None] * np.array([1.0, 0.0, -1.0])
shifted = np.exp(zs - zs.max(axis=1, keepdims=True))
exact_grads = shifted / shifted.sum(axis=1, keepdims=True) - np.eye(3)[LABEL]  # never 0: normwise is defined
flush64, no_window = -np.log(np.finfo(np.float64).tiny) / 2, {}
for mode, transform in (("reverse", jax.grad), ("forward", jax.jacfwd)):
    grads = np.asarray(jax.jit(jax.vmap(transform(naive_cross_entropy)))(jnp.asarray(zs)))
    with np.errstate(invalid="ignore"):
        right = np.linalg.norm(grads - exact_grads, axis=1) / np.linalg.norm(exact_grads, axis=1) < 1e-6
    finite = np.isfinite(grads).all(axis=1)
    first_wrong, first_nonfinite = int(np.argmin(right)), int(np.argmin(finite))  # both fail on the grid
    results.number(f"naive_ce_right_{mode}", scales[first_wrong - 1], f"naive CE: JAX {mode} right to c")
    results.number(
        f"naive_ce_finite_{mode}", scales[first_nonfinite - 1], f"naive CE: JAX {mode} finite to c"
    )
    no_window[mode] = bool(first_wrong == first_nonfinite and not finite[first_nonfinite:].any()
                           and abs(scales[first_wrong - 1] / flush64 - 1) < 1e-4)  # fmt: skip
results.claim("naive_ce_no_window", all(no_window.values()), "JAX's reverse- and forward-mode gradients of "
              "the naive cross-entropy are right (normwise 1e-6) at every c of the grid up to ½·(−ln tiny), "
              "to 1e-4, and non-finite beyond: no finite, wrong gradient in between", no_window)  # fmt: skip

# %%
decimal.getcontext().prec = 60
reference = float((1 + decimal.Decimal(-CONFIDENT).exp()).ln())  # log(1 + e^-z), 60 digits
results.claim(
    "jax_like_gradlab",
    float(naive_loss) == np.inf
    and nan_fraction == 1
    and error < 1e-15
    and float(stable_loss) == 2 * C
    and bool(np.isfinite(lse_grad).all())
    and lse_error < 1e-15
    and abs(float(bce) / reference - 1) < 1e-12,
    "In JAX, log(softmax) gives an infinite loss and an all-NaN gradient at c = 1000; jax.nn.log_softmax "
    "the finite loss 2c and the gradient softmax - one_hot; jax.nn.logsumexp's gradient is finite and "
    "equals the softmax to 1e-15 (at c = 1000 and on random logits); -log_sigmoid(50) matches the "
    "decimal reference to 1e-12.",
    {"naive": float(naive_loss), "nan": nan_fraction, "error": error, "lse": lse_error, "bce": float(bce)},
)

# %%
results.save()
