"""One function definition, every differentiation method.

Write the loss once with these functions,

    def loss(params):
        (W,) = params
        return ops.mean(ops.tanh(X @ W) ** 2)

and it runs on `engine.Tensor` (reverse mode), `forward.Dual` (forward mode), real numpy arrays
(central differences) and complex numpy arrays (complex step). Each function dispatches on
its argument's type. The numpy versions are complex-step safe: where a function is not analytic
(abs, relu, maximum, clip) they branch on the REAL part and carry the imaginary part through, so
Im f(x + ih) / h recovers the derivative with the same kink conventions as the engine:
relu'(0) = 0, leaky_relu'(0) = slope, abs'(0) = 0, ties in maximum/minimum go to the first
argument, clip's derivative is 1 strictly inside (lo, hi).
"""

import numpy as np

from . import engine, flops, forward
from .engine import Tensor
from .forward import Dual

TRACED = (Tensor, Dual)


def _traced(*args):
    """The first Tensor or Dual among args, or None if they are all plain numbers/arrays."""
    for a in args:  # a loop, not a generator: the central differences call this millions of times
        if isinstance(a, TRACED):
            return a
    return None


def _counted(value, cost=None):
    """Count a plain-numpy op (elementwise by default) and pass its value through."""
    if flops.active():
        flops.count_forward(np.size(value) if cost is None else cost)
    return value


# ----- Elementwise, smooth -----


def exp(x):
    return x.exp() if isinstance(x, TRACED) else _counted(np.exp(x))


def log(x):
    return x.log() if isinstance(x, TRACED) else _counted(np.log(x))


def sqrt(x):
    return x.sqrt() if isinstance(x, TRACED) else _counted(np.sqrt(x))


def tanh(x):
    return x.tanh() if isinstance(x, TRACED) else _counted(np.tanh(x))


def sigmoid(x):
    """1 / (1 + e^-x), as engine.sigmoid computes it: accurate for x of either sign, no overflow,
    analytic for complex x (it branches on the real part)."""
    return x.sigmoid() if isinstance(x, TRACED) else _counted(engine.sigmoid(x))


# ----- Elementwise, with kinks: branch on the real part -----


def relu(x):
    """max(x, 0); relu'(0) = 0."""
    if isinstance(x, TRACED):
        return x.relu()
    return _counted(np.where(np.real(x) > 0, x, 0 * x))


def leaky_relu(x, slope=0.01):
    """x if x > 0 else slope * x; leaky_relu'(0) = slope."""
    if isinstance(x, TRACED):
        return x.leaky_relu(slope)
    return _counted(np.where(np.real(x) > 0, x, slope * x))


def abs(x):
    """|x| = sign(Re x) * x, so abs'(0) = 0 and the imaginary part is carried through."""
    if isinstance(x, TRACED):
        return x.abs()
    return _counted(np.sign(np.real(x)) * x)


def maximum(a, b):
    """max(a, b); at a tie the first argument, a, wins (and gets the gradient)."""
    traced = _traced(a, b)
    if traced is not None:
        return traced.lift(a).maximum(b)
    return _counted(np.where(np.real(a) >= np.real(b), a, b))


def minimum(a, b):
    """min(a, b); at a tie the first argument, a, wins (and gets the gradient)."""
    traced = _traced(a, b)
    if traced is not None:
        return traced.lift(a).minimum(b)
    return _counted(np.where(np.real(a) <= np.real(b), a, b))


def clip(x, lo=None, hi=None):
    """min(max(x, lo), hi) for scalar bounds (None: none); derivative 1 strictly inside."""
    if isinstance(x, TRACED):
        return x.clip(lo, hi)
    real = np.real(x)
    lo = -np.inf if lo is None else lo
    hi = np.inf if hi is None else hi
    return _counted(np.where(real <= lo, lo + 0 * x, np.where(real >= hi, hi + 0 * x, x)))


def where(condition, a, b):
    """a where condition else b; the gradient flows to whichever was chosen."""
    traced = _traced(a, b)
    if isinstance(traced, Tensor):
        return engine.where(condition, a, b)
    if isinstance(traced, Dual):
        return forward.where(condition, a, b)
    return _counted(np.where(condition, a, b))


# ----- Linear algebra -----


def matmul(a, b):
    """a @ b for vectors and matrices: 2mkn flops for (m, k) @ (k, n)."""
    if isinstance(a, TRACED) or isinstance(b, TRACED):
        return a @ b
    a_shape, b_shape = np.shape(a), np.shape(b)
    engine.check_matmul_shapes(a_shape, b_shape)
    product = a @ b
    if flops.active():
        flops.count_forward(flops.matmul_cost(a_shape, b_shape))
    return product


def linear(X, W, b):
    """X @ W + b: a dense layer, rows of X are examples."""
    if _traced(X, W, b) is not None:
        return X @ W + b
    return _counted(matmul(X, W) + b)


# ----- Reductions -----


def sum(x, axis=None, keepdims=False):
    if isinstance(x, TRACED):
        return x.sum(axis, keepdims)
    return _counted(np.sum(x, axis=axis, keepdims=keepdims), np.size(x))


def mean(x, axis=None, keepdims=False):
    if isinstance(x, TRACED):
        return x.mean(axis, keepdims)
    total = sum(x, axis, keepdims)
    return _counted(total * (np.size(total) / np.size(x)))


def softmax(x, axis=-1):
    """e^(x - max) / sum e^(x - max); the max is of the real part, a constant shift."""
    if isinstance(x, TRACED):
        return x.softmax(axis)
    e = np.exp(x - np.real(x).max(axis, keepdims=True))
    return _counted(e / e.sum(axis, keepdims=True), 3 * np.size(x))


def log_softmax(x, axis=-1):
    """x - logsumexp(x), shifted by the max of the real part for stability."""
    if isinstance(x, TRACED):
        return x.log_softmax(axis)
    z = x - np.real(x).max(axis, keepdims=True)
    return _counted(z - np.log(np.exp(z).sum(axis, keepdims=True)), 3 * np.size(x))


# ----- Normalization -----


def layer_norm(x, axis=-1, eps=1e-5):
    """(x - mean x) / sqrt(var x + eps) over `axis`: axis=-1 is layer norm (each example over
    its features), axis=0 is batch norm's training-time normalization (each feature over the
    batch). The variance is mean((x - mean x)^2), with no abs or conj, so it stays analytic and
    the complex step works."""
    if isinstance(x, TRACED):
        return x.layer_norm(axis, eps)
    centred = x - np.mean(x, axis=axis, keepdims=True)
    sigma = np.sqrt(np.mean(centred * centred, axis=axis, keepdims=True) + eps)
    return _counted(centred / sigma, 5 * np.size(x))
