"""Losses, and the same function written as two programs: naive and stable.

Everything here is written with `gradlab.ops`, so it runs on `engine.Tensor` (reverse mode),
`forward.Dual` (forward mode), real arrays (central differences) and complex arrays (complex
step), and every method differentiates the program exactly as it is written here. The engine's
own `softmax`/`log_softmax` ops are NOT used: each program below is a chain of exp, sum, log
and division, so "naive" and "stable" differ only in how the function is written.

Per-example losses are returned elementwise; average them with `ops.mean`.
"""

import numpy as np

from . import ops
from .engine import Tensor
from .forward import Dual

# ----- Regression losses of a residual r = prediction - target -----


def squared_error(residual):
    """r^2 / 2; derivative r, unbounded: a point's pull grows with its residual."""
    return 0.5 * residual**2


def huber(residual, delta=1.0):
    """Huber (1964): r^2 / 2 for |r| <= delta, delta (|r| - delta / 2) beyond; derivative
    clip(r, -delta, delta), bounded by delta.

    Written as c (r - c / 2) with c = clip(r, -delta, delta): one expression, no branch on |r|,
    and its derivative is c everywhere (1 * (r - c/2) + c (1 - 1/2) = r inside, c outside).
    """
    clipped = ops.clip(residual, -delta, delta)
    return clipped * (residual - 0.5 * clipped)


# ----- Classification losses of a logit z and a label y in {0, 1} -----


def sigmoid_squared_error(z, y):
    """(sigmoid(z) - y)^2; derivative 2 (sigmoid(z) - y) sigmoid(z) (1 - sigmoid(z))."""
    return (ops.sigmoid(z) - y) ** 2


def log1p(x):
    """log(1 + x) without forming 1 + x, which rounds 1 + 1e-22 to 1; derivative 1 / (1 + x).
    Defined here for the four types (gradlab.ops has no log1p)."""
    if isinstance(x, Tensor):
        return x._unary("log1p", np.log1p(x.data), lambda x, y: 1 / (1 + x))
    if isinstance(x, Dual):
        return x._make(np.log1p(x.val), x.tan / (1 + x.val))
    return np.log1p(x)


def softplus_of_negative(z):
    """softplus(-z) = log(1 + e^-z) = -log sigmoid(z), written as max(-z, 0) + log1p(e^-|z|):
    e^-|z| never overflows, and log1p keeps e^-|z| even when it is far below eps.

    max(-z, 0) and |z| come from one branch on z >= 0, so at z = 0 the program is
    log1p(e^-z) on both sides and its derivative is the function's, -1/2 (separate relu and abs
    conventions would give -1 or 0 there)."""
    positive = _value(z) >= 0
    magnitude = ops.where(positive, z, -z)
    return ops.where(positive, 0 * z, -z) + log1p(ops.exp(-magnitude))


def binary_cross_entropy_from_logits(z, y):
    """-[y log sigmoid(z) + (1 - y) log(1 - sigmoid(z))] = y softplus(-z) + (1 - y) softplus(z),
    each softplus computed stably; derivative sigmoid(z) - y. At z = 50, y = 1 the loss is
    e^-50 = 1.9e-22 (not 0)."""
    y = np.asarray(y, dtype=np.float64)
    return y * softplus_of_negative(z) + (1 - y) * softplus_of_negative(-z)


def naive_binary_cross_entropy_from_logits(z, y):
    """The same loss as the two-class cross-entropy of the logits [0, z], logsumexp([0, z]) - y z:
    stable against overflow, but for y = 1 it computes z + log(1 + e^-z) - z, which is exactly 0
    once z + e^-z rounds to z (e^-z below half the spacing of floats at z: from z ~ 33 in float64,
    ~15 in float32), so the loss of a confident right answer is 0 instead of e^-z (the pitfall;
    kept for the chapter). Computed in z's precision."""
    dtype = np.result_type(_value(z), np.float32)  # z's precision: float32 logits stay float32
    pair = z.reshape(*np.shape(z), 1) * np.array([0.0, 1.0], dtype=dtype)  # logits [0, z]
    y = np.asarray(y, dtype=dtype)
    targets = np.stack([1 - y, y], axis=-1) * np.ones((*np.shape(z), 2), dtype=dtype)
    return -ops.sum(targets * stable_log_softmax(pair), axis=-1)


# ----- Softmax, log-sum-exp, cross-entropy: naive and stable programs -----


def _value(x):
    """The real value of x on any of the four types, with no derivative attached."""
    if isinstance(x, Tensor):
        return x.data
    if isinstance(x, Dual):
        return x.val
    return np.real(x)


def _row_max(z, axis):
    """max of z along axis as a CONSTANT. Softmax and log-sum-exp shift exactly by any constant,
    so treating the shift as a constant changes no derivative, and the program stays analytic
    (complex step) and free of max's tie convention."""
    return np.max(_value(z), axis=axis, keepdims=True)


def naive_softmax(z, axis=-1):
    """e^z / sum e^z: e^z overflows to inf once z > ln(max float), and inf / inf is NaN."""
    exponentials = ops.exp(z)
    return exponentials / ops.sum(exponentials, axis=axis, keepdims=True)


def stable_softmax(z, axis=-1):
    """e^(z - m) / sum e^(z - m) with m = max z: every exponent is <= 0 and one of them is 0,
    so nothing overflows and the denominator is at least 1."""
    exponentials = ops.exp(z - _row_max(z, axis))
    return exponentials / ops.sum(exponentials, axis=axis, keepdims=True)


def naive_logsumexp(z, axis=-1):
    """log sum e^z, as written: inf once any e^z overflows."""
    return ops.log(ops.sum(ops.exp(z), axis=axis, keepdims=True))


def stable_logsumexp(z, axis=-1):
    """m + log sum e^(z - m) with m = max z: the sum lies in [1, k], so its log is harmless."""
    shift = _row_max(z, axis)
    return shift + ops.log(ops.sum(ops.exp(z - shift), axis=axis, keepdims=True))


def naive_log_softmax(z, axis=-1):
    """log(softmax z): -inf where a probability underflows to 0, NaN where softmax is NaN."""
    return ops.log(naive_softmax(z, axis))


def stable_log_softmax(z, axis=-1):
    """z - logsumexp(z): no exp of a large number, no log of a small one."""
    return z - stable_logsumexp(z, axis)


def _pick(log_probabilities, labels):
    """log_probabilities[..., labels]: the entry of each row's label (integer array)."""
    labels = np.asarray(labels)
    return log_probabilities[(*np.indices(labels.shape), labels)]


def naive_cross_entropy(z, labels):
    """-log softmax(z)[label], with the naive softmax."""
    return -_pick(naive_log_softmax(z), labels)


def stable_cross_entropy(z, labels):
    """logsumexp(z) - z[label]: the same function, written so it stays finite."""
    return -_pick(stable_log_softmax(z), labels)
