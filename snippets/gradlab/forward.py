"""Forward-mode automatic differentiation with dual numbers, written independently of engine.py.

A `Dual` carries a value `.val` and a tangent `.tan` of the same shape: the directional
derivative of the value along one chosen input direction. Each op pushes the tangent forward
with the chain rule, y = f(x), dy = f'(x) dx, in the same pass that computes the value.
One pass gives the derivative along ONE direction, so a full gradient of f: R^n -> R takes n
passes (reverse mode takes one backward pass); see `grad`.

Dtypes and kink conventions are the engine's (the dtype rule is shared; the derivative rules
below are not): relu'(0) = 0, leaky_relu'(0) = slope, abs'(0) = 0, maximum/minimum follow the
first argument at a tie, clip's derivative is 1 strictly inside (lo, hi) and 0 elsewhere.
"""

import numpy as np

from . import flops
from .engine import as_float_array, check_matmul_shapes, sigmoid


class Dual:
    """A value and its tangent (directional derivative)."""

    __array_ufunc__ = None  # numpy defers to us: `array @ dual` calls Dual.__rmatmul__

    def __init__(self, val, tan=None):
        self.val = as_float_array(val)
        if tan is None:
            self.tan = np.zeros_like(self.val)
        elif isinstance(tan, np.ndarray) and tan.shape == self.val.shape:
            self.tan = tan.astype(self.val.dtype)  # a copy, as below, without broadcasting's cost
        else:
            self.tan = np.broadcast_to(np.asarray(tan, dtype=self.val.dtype), self.val.shape).copy()

    def lift(self, other):
        """`other` as a Dual with zero tangent (a constant); scalars adopt this dual's dtype."""
        if isinstance(other, Dual):
            return other
        if type(other).__name__ == "Tensor":
            raise TypeError("cannot mix a Dual (forward mode) with a Tensor (reverse mode)")
        if np.ndim(other) == 0:
            return Dual(np.asarray(other, dtype=self.val.dtype))
        return Dual(other)

    shape = property(lambda self: self.val.shape)
    dtype = property(lambda self: self.val.dtype)
    ndim = property(lambda self: self.val.ndim)
    size = property(lambda self: self.val.size)

    def __repr__(self):
        return f"Dual({self.val!r}, tan={self.tan!r})"

    def _make(self, val, tan, n_operands=1, cost=None):
        """Count the value's cost as forward, the tangent's as `cost` once per operand."""
        cost = np.size(val) if cost is None else cost
        flops.count_forward(cost)
        flops.count_tangent(cost * n_operands)
        return Dual(val, tan)

    # ----- Binary, with broadcasting -----

    def __add__(self, other):
        other = self.lift(other)  # d(a + b) = da + db
        return self._make(self.val + other.val, self.tan + other.tan, 2)

    def __sub__(self, other):
        other = self.lift(other)  # d(a - b) = da - db
        return self._make(self.val - other.val, self.tan - other.tan, 2)

    def __mul__(self, other):
        other = self.lift(other)  # d(a b) = da b + a db
        return self._make(self.val * other.val, self.tan * other.val + self.val * other.tan, 2)

    def __truediv__(self, other):
        a, b = self, self.lift(other)  # d(a / b) = da / b - a db / b^2
        return self._make(a.val / b.val, a.tan / b.val - a.val * b.tan / b.val**2, 2)

    def maximum(self, other):
        """max(a, b); at a tie it follows the first argument, a."""
        other = self.lift(other)
        first = self.val >= other.val
        return self._make(np.where(first, self.val, other.val), np.where(first, self.tan, other.tan), 2)

    def minimum(self, other):
        """min(a, b); at a tie it follows the first argument, a."""
        other = self.lift(other)
        first = self.val <= other.val
        return self._make(np.where(first, self.val, other.val), np.where(first, self.tan, other.tan), 2)

    def __radd__(self, other):
        return self + other

    def __rsub__(self, other):
        return self.lift(other) - self

    def __rmul__(self, other):
        return self * other

    def __rtruediv__(self, other):
        return self.lift(other) / self

    def __neg__(self):
        return self * -1

    def __pow__(self, exponent):
        """x ** p for a constant scalar p; d(x^p) = p x^(p-1) dx."""
        if isinstance(exponent, Dual) or np.ndim(exponent) != 0:
            raise TypeError("Dual ** p needs a constant scalar p; write exp(p * log(x)) instead")
        p = np.asarray(exponent).item()
        return self._make(self.val**p, p * self.val ** (p - 1) * self.tan)

    # ----- Linear algebra -----

    def __matmul__(self, other):
        """d(A B) = dA B + A dB."""
        other = self.lift(other)
        check_matmul_shapes(self.shape, other.shape)
        cost = flops.matmul_cost(self.shape, other.shape)
        tan = self.tan @ other.val + self.val @ other.tan
        return self._make(self.val @ other.val, tan, 2, cost)

    def __rmatmul__(self, other):
        return self.lift(other) @ self

    # ----- Elementwise -----

    def tanh(self):
        y = np.tanh(self.val)  # d tanh x = (1 - tanh^2 x) dx
        return self._make(y, (1 - y * y) * self.tan)

    def exp(self):
        y = np.exp(self.val)  # d e^x = e^x dx
        return self._make(y, y * self.tan)

    def log(self):
        return self._make(np.log(self.val), self.tan / self.val)  # d log x = dx / x

    def sqrt(self):
        y = np.sqrt(self.val)  # d sqrt x = dx / (2 sqrt x)
        return self._make(y, self.tan / (2 * y))

    def sigmoid(self):
        y = sigmoid(self.val)  # d s(x) = s(x) s(-x) dx, which is not rounded to 0 where s(x) is 1.0
        return self._make(y, y * sigmoid(-self.val) * self.tan)

    def relu(self):
        positive = self.val > 0  # relu'(0) = 0
        return self._make(np.where(positive, self.val, 0), np.where(positive, self.tan, 0))

    def leaky_relu(self, slope=0.01):
        positive = self.val > 0  # leaky_relu'(0) = slope
        return self._make(
            np.where(positive, self.val, slope * self.val),
            np.where(positive, self.tan, slope * self.tan),
        )

    def abs(self):
        sign = np.sign(self.val)  # abs'(0) = sign(0) = 0
        return self._make(np.abs(self.val), sign * self.tan)

    def clip(self, lo=None, hi=None):
        """Derivative 1 strictly inside (lo, hi), 0 elsewhere (None: no bound)."""
        lo = -np.inf if lo is None else lo
        hi = np.inf if hi is None else hi
        inside = (self.val > lo) & (self.val < hi)
        value = np.clip(self.val, lo, hi).astype(self.dtype)
        return self._make(value, np.where(inside, self.tan, 0))

    # ----- Reductions and shapes -----

    def sum(self, axis=None, keepdims=False):
        return self._make(
            self.val.sum(axis, keepdims=keepdims),
            self.tan.sum(axis, keepdims=keepdims),
            cost=self.size,
        )

    def mean(self, axis=None, keepdims=False):
        total = self.sum(axis, keepdims)
        return total * (total.size / self.size)

    def reshape(self, *shape):
        return self._make(self.val.reshape(*shape), self.tan.reshape(*shape), cost=0)

    def transpose(self, axes=None):
        return self._make(np.transpose(self.val, axes), np.transpose(self.tan, axes), cost=0)

    T = property(transpose)

    def __getitem__(self, index):
        index = index.val if isinstance(index, Dual) else index
        return self._make(self.val[index], self.tan[index], cost=0)

    def softmax(self, axis=-1):
        """d y = y * (dx - sum(y * dx)) for y = softmax(x)."""
        e = np.exp(self.val - self.val.max(axis, keepdims=True))
        y = e / e.sum(axis, keepdims=True)
        tan = y * (self.tan - (y * self.tan).sum(axis, keepdims=True))
        return self._make(y, tan, cost=3 * self.size)

    def log_softmax(self, axis=-1):
        """d y = dx - sum(softmax(x) * dx) for y = log_softmax(x)."""
        z = self.val - self.val.max(axis, keepdims=True)
        y = z - np.log(np.exp(z).sum(axis, keepdims=True))
        tan = self.tan - (np.exp(y) * self.tan).sum(axis, keepdims=True)
        return self._make(y, tan, cost=3 * self.size)

    # ----- Normalization -----

    def layer_norm(self, axis=-1, eps=1e-5):
        """y = (x - mean x) / sigma over `axis`, sigma = sqrt(var x + eps);
        dy = (dx - mean(dx) - y * mean(y * dx)) / sigma."""
        centred = self.val - self.val.mean(axis, keepdims=True)
        sigma = np.sqrt((centred**2).mean(axis, keepdims=True) + eps)
        y = centred / sigma
        tan = self.tan - self.tan.mean(axis, keepdims=True)
        tan = (tan - y * (y * self.tan).mean(axis, keepdims=True)) / sigma
        return self._make(y, tan, cost=5 * self.size)


def where(condition, a, b):
    """where(c, a, b) = a where c else b, tangent likewise."""
    like = a if isinstance(a, Dual) else b if isinstance(b, Dual) else Dual(np.asarray(a))
    a, b = like.lift(a), like.lift(b)
    condition = np.asarray(condition.val if isinstance(condition, Dual) else condition, bool)
    return a._make(np.where(condition, a.val, b.val), np.where(condition, a.tan, b.tan), 2)


def grad(f, params):
    """Forward-mode gradient of scalar f: one pass per parameter entry, n passes in all.

    Pass k seeds the tangent e_k (1 at entry k, 0 elsewhere) and reads df = grad f . e_k.
    """
    grads = [np.zeros_like(as_float_array(p)) for p in params]
    for i, g in enumerate(grads):
        for k in range(g.size):
            duals = [Dual(p, np.zeros_like(q)) for p, q in zip(params, grads, strict=True)]
            duals[i].tan.flat[k] = 1
            flops.count_call()
            out = f(duals)
            if not isinstance(out, Dual) or out.size != 1:
                raise TypeError(f"f must return a scalar Dual, got {out!r}")
            g.flat[k] = out.tan.item()
    return grads
