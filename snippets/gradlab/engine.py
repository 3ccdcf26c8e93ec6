"""Reverse-mode automatic differentiation (backpropagation) on numpy arrays.

A `Tensor` wraps an array `.data`. Every operation returns a new Tensor that remembers its
parents and a closure `_backward` that ADDS its local gradient into each parent's `.grad`:
for y = op(x), dL/dx += dy/dx * dL/dy. Adding (not assigning) is what makes a value used twice
(a fork, like x * x + x) receive the sum of both paths' gradients.

`Tensor.backward()` sorts the graph topologically, seeds dL/dL = 1 and runs every closure once,
outputs before inputs. That is the whole algorithm; everything else is one local rule per op.

What gets a gradient, as in PyTorch: a Tensor made from data (an input, a target, a constant)
requires none unless created with `requires_grad=True`; `value_and_grad` and `grad` mark their
params. An op's output requires a gradient iff one of its inputs does; if none does, the output is
a constant with no parents and no closure, and a rule computes nothing for an input that needs no
gradient (so X @ W with data X costs one backward matrix product, not two). `.grad` is None until
the first gradient is written into it, then accumulates. `backward()` frees the graph (closures
and parent links) unless called with `retain_graph=True`; a second `backward()` through a freed
graph raises.

Dtypes: float16, float32 and float64 are kept as they are (never upcast; float16 is numpy's
emulation, rounded after every operation); bools and integers become float64; anything else
(complex, object, strings) is a TypeError. Scalars (python or
0-d numpy) adopt the tensor's dtype; arrays keep theirs and numpy's promotion rules apply.

Conventions where the function has a kink (forward mode and `ops` use the same ones):
relu'(0) = 0, leaky_relu'(0) = slope, abs'(0) = 0; maximum and minimum send the whole gradient
to the FIRST argument at a tie; clip passes the gradient only strictly inside (lo, hi).
"""

import numpy as np

from . import flops


def as_float_array(data):
    """float16/32/64 pass through; bools and integers become float64; the rest is a TypeError."""
    array = np.asarray(data)
    if array.dtype in (np.float16, np.float32, np.float64):
        return array
    if array.dtype.kind in "biu":
        return array.astype(np.float64)
    raise TypeError(f"expected real floating-point data (float32 or float64), got dtype {array.dtype}")


def check_matmul_shapes(a_shape, b_shape):
    """Only vectors and matrices; the inner dimensions must agree."""
    if not (1 <= len(a_shape) <= 2 and 1 <= len(b_shape) <= 2) or a_shape[-1] != b_shape[0]:
        raise ValueError(f"matmul: shapes {a_shape} and {b_shape} do not align")


def unbroadcast(grad, shape):
    """Sum `grad` down to `shape`, undoing numpy broadcasting.

    If x of shape (3,) was broadcast against (4, 3), each x_j was used 4 times, so
    dL/dx_j = sum over i of dL/dy_ij: sum the added leading axes, and the axes where x had size 1.
    Never returns `grad` itself (a view if nothing is summed): the caller's buffer is not given away.
    """
    grad = grad[...]
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def sigmoid(x):
    """1 / (1 + e^-x) for a numpy array, real or complex, accurate on both sides and never
    overflowing: with e = exp(-|Re x|) <= 1 it is 1 / (1 + e) where Re x >= 0 and e / (1 + e)
    where Re x < 0. (The tempting (1 + tanh(x/2)) / 2 cancels for x < 0: 4% off at x = -36,
    exactly 0 below -38.) Each branch is analytic, so the complex step works on it."""
    x = np.asarray(x)
    negative = np.real(x) < 0
    e = np.exp(np.where(negative, x, -x))
    return (np.where(negative, e, 1) / (1 + e))[()]


# --8<-- [start:tensor]
class Tensor:
    """An array, its gradient, and how it was computed."""

    __array_ufunc__ = None  # numpy defers to us: `array @ tensor` calls Tensor.__rmatmul__

    def __init__(self, data, requires_grad=False, _parents=(), _op=""):
        self.data = as_float_array(data)
        self.requires_grad = requires_grad  # does the loss's gradient flow into this node?
        self.grad = None  # dL/d(data): allocated by the first gradient backward() writes
        self._parents = _parents  # the inputs of the op that made it, those needing a gradient
        self._op = _op
        self._cost = 0  # flops of the forward op; see flops.py
        self._backward = lambda: None  # a leaf sends its gradient nowhere

    # --8<-- [start:accumulate]
    def _accumulate(self, g):
        """dL/d(data) += g. The first write keeps g if a rule computed it afresh, else copies it (a
        view may be another node's .grad: no two nodes share a buffer)."""
        if self.grad is None:
            if isinstance(g, np.ndarray) and g.shape == self.shape and g.dtype == self.dtype:
                self.grad = g if g.flags.owndata else g.copy()
            else:  # a scalar or a broadcast gradient: this node's shape and dtype
                self.grad = np.array(np.broadcast_to(g, self.shape), self.dtype)
        else:
            self.grad += g

    # --8<-- [end:accumulate]
    # --8<-- [end:tensor]

    def _child(self, data, parents, op, cost=None):
        """The output of an op: a new node whose parents are the op's inputs.
        `cost` is its flop count (flops.py); None means elementwise, one per output entry."""
        cost = np.size(data) if cost is None else cost
        flops.count_forward(cost)
        parents = tuple(p for p in parents if p.requires_grad)  # constants get no gradient
        out = Tensor(data, bool(parents), parents, op)
        out._cost = cost
        return out

    def _record(self, backward):
        """Keep the op's rule only if a gradient will flow through it; a constant keeps none."""
        if self.requires_grad:
            self._backward = backward
        return self

    def lift(self, other):
        """`other` as a Tensor; scalars adopt this tensor's dtype."""
        if isinstance(other, Tensor):
            return other
        if type(other).__name__ == "Dual":
            raise TypeError("cannot mix a Tensor (reverse mode) with a Dual (forward mode)")
        if np.ndim(other) == 0:
            return Tensor(np.asarray(other, dtype=self.data.dtype))
        return Tensor(other)

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)

    def __repr__(self):
        return f"Tensor({self.data!r}, requires_grad={self.requires_grad}, grad={self.grad!r})"

    # ----- Binary, with broadcasting -----

    # --8<-- [start:add]
    def __add__(self, other):
        other = self.lift(other)
        out = self._child(self.data + other.data, (self, other), "+")

        def _backward():  # d(a + b)/da = 1, d(a + b)/db = 1
            if self.requires_grad:
                self._accumulate(unbroadcast(out.grad, self.shape))
            if other.requires_grad:
                other._accumulate(unbroadcast(out.grad, other.shape))

        return out._record(_backward)

    # --8<-- [end:add]

    # --8<-- [start:mul]
    def __mul__(self, other):
        other = self.lift(other)
        out = self._child(self.data * other.data, (self, other), "*")

        def _backward():  # d(a * b)/da = b, d(a * b)/db = a
            if self.requires_grad:
                self._accumulate(unbroadcast(other.data * out.grad, self.shape))
            if other.requires_grad:
                other._accumulate(unbroadcast(self.data * out.grad, other.shape))

        return out._record(_backward)

    # --8<-- [end:mul]

    def _binary(self, other, op, value, d_self, d_other):
        """z = value(a, b) elementwise; dL/da += d_self(a, b) dL/dz, dL/db += d_other(a, b) dL/dz."""
        other = self.lift(other)
        z = value(self.data, other.data)
        out = self._child(z, (self, other), op)

        def _backward():
            a, b = self.data, other.data
            if self.requires_grad:
                self._accumulate(unbroadcast(d_self(a, b) * out.grad, self.shape))
            if other.requires_grad:
                other._accumulate(unbroadcast(d_other(a, b) * out.grad, other.shape))

        return out._record(_backward)

    def __sub__(self, other):
        return self._binary(other, "-", np.subtract, lambda a, b: 1, lambda a, b: -1)

    def __truediv__(self, other):
        return self._binary(other, "/", np.divide, lambda a, b: 1 / b, lambda a, b: -a / b**2)

    def maximum(self, other):
        """max(a, b); at a tie a == b the whole gradient goes to the first argument, a."""
        return self._binary(other, "maximum", np.maximum, lambda a, b: a >= b, lambda a, b: a < b)

    def minimum(self, other):
        """min(a, b); at a tie a == b the whole gradient goes to the first argument, a."""
        return self._binary(other, "minimum", np.minimum, lambda a, b: a <= b, lambda a, b: a > b)

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
        """x ** p for a constant scalar p; d(x^p)/dx = p x^(p-1)."""
        if isinstance(exponent, Tensor) or np.ndim(exponent) != 0:
            raise TypeError("Tensor ** p needs a constant scalar p; write exp(p * log(x)) instead")
        p = np.asarray(exponent).item()  # a python number, so a float32 x stays float32
        return self._unary("**", self.data**p, lambda x, y: p * x ** (p - 1))

    # ----- Linear algebra -----

    def __matmul__(self, other):
        """A @ B for vectors and matrices; dL/dA = dL/dY B^T, dL/dB = A^T dL/dY."""
        other = self.lift(other)
        check_matmul_shapes(self.shape, other.shape)
        cost = flops.matmul_cost(self.shape, other.shape)
        out = self._child(self.data @ other.data, (self, other), "@", cost)

        def _backward():  # treat a vector as a 1-row (left) or 1-column (right) matrix
            a = self.data.reshape(1, -1) if self.ndim == 1 else self.data
            b = other.data.reshape(-1, 1) if other.ndim == 1 else other.data
            g = out.grad.reshape(a.shape[0], b.shape[1])
            if self.requires_grad:  # skipped for data X in X @ W: one product saved
                self._accumulate((g @ b.T).reshape(self.shape) if self.ndim == 1 else g @ b.T)
            if other.requires_grad:
                other._accumulate((a.T @ g).reshape(other.shape) if other.ndim == 1 else a.T @ g)

        return out._record(_backward)

    def __rmatmul__(self, other):
        return self.lift(other) @ self

    # ----- Elementwise -----

    def _unary(self, op, value, derivative):
        """y = value elementwise; dL/dx += derivative(x, y) * dL/dy."""
        out = self._child(value, (self,), op)

        def _backward():
            self._accumulate(derivative(self.data, out.data) * out.grad)

        return out._record(_backward)

    # --8<-- [start:tanh]
    def tanh(self):
        """y = tanh(x); dy/dx = 1 - y^2, which vanishes where |x| is large (saturation)."""
        out = self._child(np.tanh(self.data), (self,), "tanh")

        def _backward():
            self._accumulate((1 - out.data**2) * out.grad)

        return out._record(_backward)

    # --8<-- [end:tanh]

    def exp(self):
        """y = e^x; dy/dx = y."""
        return self._unary("exp", np.exp(self.data), lambda x, y: y)

    def log(self):
        """y = log x; dy/dx = 1 / x."""
        return self._unary("log", np.log(self.data), lambda x, y: 1 / x)

    def sqrt(self):
        """y = sqrt x; dy/dx = 1 / (2 y)."""
        return self._unary("sqrt", np.sqrt(self.data), lambda x, y: 0.5 / y)

    def sigmoid(self):
        """y = 1 / (1 + e^-x) (see `sigmoid`); dy/dx = sigmoid(x) sigmoid(-x) <= 1/4.

        The slope is NOT written y (1 - y): once y rounds to 1.0 (x >= 36.74 in float64) that
        product is exactly 0, while sigmoid(x) sigmoid(-x) stays > 0 until e^-x underflows (745)."""
        return self._unary("sigmoid", sigmoid(self.data), lambda x, y: y * sigmoid(-x))

    # --8<-- [start:relu]
    def relu(self):
        """y = max(x, 0); dy/dx = 1 if x > 0 else 0 (so relu'(0) = 0: a dead unit stays dead)."""
        return self._unary("relu", np.where(self.data > 0, self.data, 0), lambda x, y: x > 0)

    # --8<-- [end:relu]

    def leaky_relu(self, slope=0.01):
        """y = x if x > 0 else slope * x; dy/dx = 1 if x > 0 else slope (so slope at 0)."""
        y = np.where(self.data > 0, self.data, slope * self.data)
        return self._unary("leaky_relu", y, lambda x, y: np.where(x > 0, 1, slope).astype(x.dtype))

    def abs(self):
        """y = |x|; dy/dx = sign(x), with abs'(0) = 0."""
        return self._unary("abs", np.abs(self.data), lambda x, y: np.sign(x))

    def clip(self, lo=None, hi=None):
        """y = min(max(x, lo), hi) for scalars lo, hi (None: no bound); dy/dx = 1 strictly inside
        (lo, hi), 0 elsewhere, including at x == lo and x == hi."""
        lo = -np.inf if lo is None else lo
        hi = np.inf if hi is None else hi
        y = np.clip(self.data, lo, hi).astype(self.dtype)
        return self._unary("clip", y, lambda x, y: (x > lo) & (x < hi))

    # ----- Reductions and shapes -----

    def sum(self, axis=None, keepdims=False):
        """y = sum of x over `axis`; every summed entry gets dL/dy: dL/dx = broadcast(dL/dy)."""
        out = self._child(self.data.sum(axis, keepdims=keepdims), (self,), "sum", self.size)

        def _backward():
            g = out.grad if keepdims or axis is None else np.expand_dims(out.grad, axis)
            self._accumulate(np.broadcast_to(g, self.shape))

        return out._record(_backward)

    def mean(self, axis=None, keepdims=False):
        """sum / (number of entries averaged)."""
        total = self.sum(axis, keepdims)
        return total * (total.size / self.size)

    def reshape(self, *shape):
        out = self._child(self.data.reshape(*shape), (self,), "reshape", cost=0)

        def _backward():
            self._accumulate(out.grad.reshape(self.shape))

        return out._record(_backward)

    def transpose(self, axes=None):
        out = self._child(np.transpose(self.data, axes), (self,), "transpose", cost=0)

        def _backward():
            inverse = None if axes is None else np.argsort(axes)
            self._accumulate(np.transpose(out.grad, inverse))

        return out._record(_backward)

    T = property(transpose)

    def __getitem__(self, index):
        """Gather. Repeated integer indices must ACCUMULATE: np.add.at, not grad[index] += g
        (which would keep only the last write for a repeated index)."""
        index = index.data if isinstance(index, Tensor) else index
        out = self._child(self.data[index], (self,), "getitem", cost=0)

        def _backward():
            g = np.zeros_like(self.data)
            np.add.at(g, index, out.grad)
            self._accumulate(g)

        return out._record(_backward)

    def softmax(self, axis=-1):
        """y = e^(x - max x) / sum e^(x - max x); dL/dx = y * (dL/dy - sum(y * dL/dy))."""
        z = np.exp(self.data - self.data.max(axis, keepdims=True))
        out = self._child(z / z.sum(axis, keepdims=True), (self,), "softmax", 3 * self.size)

        def _backward():
            y, g = out.data, out.grad
            self._accumulate(y * (g - (y * g).sum(axis, keepdims=True)))

        return out._record(_backward)

    def log_softmax(self, axis=-1):
        """y = x - logsumexp(x); dL/dx = dL/dy - softmax(x) * sum(dL/dy)."""
        z = self.data - self.data.max(axis, keepdims=True)
        y = z - np.log(np.exp(z).sum(axis, keepdims=True))
        out = self._child(y, (self,), "log_softmax", 3 * self.size)

        def _backward():
            g = out.grad
            self._accumulate(g - np.exp(out.data) * g.sum(axis, keepdims=True))

        return out._record(_backward)

    # ----- Normalization -----

    def layer_norm(self, axis=-1, eps=1e-5):
        """y = (x - mean x) / sqrt(var x + eps) over `axis` (no learned gain or bias; multiply and
        add them yourself). axis=-1 normalizes each example over its features (layer norm);
        axis=0 normalizes each feature over the batch (batch norm's training-time statistics).

        With n entries along `axis` and sigma = sqrt(var + eps):
        dL/dx = (dL/dy - mean(dL/dy) - y * mean(y * dL/dy)) / sigma. It does not depend on the
        scale of x: multiplying x by c divides dL/dx by c (for eps -> 0).
        """
        centred = self.data - self.data.mean(axis, keepdims=True)
        sigma = np.sqrt((centred**2).mean(axis, keepdims=True) + eps)
        out = self._child(centred / sigma, (self,), "layer_norm", 5 * self.size)

        def _backward():
            y, g = out.data, out.grad
            mean_g = g.mean(axis, keepdims=True)
            mean_gy = (g * y).mean(axis, keepdims=True)
            self._accumulate((g - mean_g - y * mean_gy) / sigma)

        return out._record(_backward)

    # --8<-- [start:backward]
    def backward(self, retain_graph=False):
        """Backpropagation: dL/dnode for every node that this scalar L depends on. Then the graph
        is freed (closures and parent links dropped) unless retain_graph=True."""
        if self.size != 1:
            raise ValueError(
                f"backward() needs a scalar output, got shape {self.shape}; "
                "reduce it first, e.g. with .sum() or .mean()"
            )
        if not self.requires_grad:
            raise RuntimeError("backward(): nothing this value depends on has requires_grad=True")
        # Topological order: every node after all of its parents. Iterative, not recursive,
        # so a long RNN unroll cannot hit Python's recursion limit.
        order, visited, stack = [], set(), [(self, False)]
        while stack:
            node, parents_done = stack.pop()
            if parents_done:
                order.append(node)
            elif node not in visited:
                visited.add(node)
                stack.append((node, True))
                stack.extend((parent, False) for parent in node._parents)

        for node in order:
            if node._parents:  # an interior node's .grad is this sweep's alone; leaves accumulate
                node.grad = None
        self.grad = np.ones_like(self.data)  # dL/dL = 1
        del visited  # from here on only `order` holds the nodes, and it lets each go in turn
        while order:  # outputs first: a node's grad is complete when it runs
            node = order.pop()
            node._backward()
            flops.count_backward(node._cost * len(node._parents))
            if node._parents and not retain_graph:  # free it: unless the caller holds the
                node._parents, node._backward = (), _graph_freed  # node, its arrays go now

    # --8<-- [end:backward]


def _graph_freed():
    raise RuntimeError(
        "backward() through a graph a second time: the first backward() freed it; "
        "call that one as backward(retain_graph=True) to keep the graph"
    )


def where(condition, a, b):
    """where(c, a, b) = a where c else b; the gradient flows to a where c, to b elsewhere."""
    like = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else Tensor(np.asarray(a))
    a, b = like.lift(a), like.lift(b)
    condition = np.asarray(condition.data if isinstance(condition, Tensor) else condition, bool)
    value = np.where(condition, a.data, b.data)
    out = a._child(value, (a, b), "where")

    def _backward():
        if a.requires_grad:
            a._accumulate(unbroadcast(np.where(condition, out.grad, 0), a.shape))
        if b.requires_grad:
            b._accumulate(unbroadcast(np.where(condition, 0, out.grad), b.shape))

    return out._record(_backward)


def value_and_grad(f, params):
    """Reverse mode: one forward pass builds the graph, one backward pass fills every gradient.

    f takes a list of Tensors (one per array in `params`) and returns a scalar Tensor.
    Returns (f(params) as a float, [dL/dp for p in params]) with the params' dtypes.
    """
    tensors = [Tensor(p, requires_grad=True) for p in params]
    flops.count_call()
    loss = f(tensors)
    if not isinstance(loss, Tensor):
        raise TypeError(f"f returned {type(loss).__name__}, not a Tensor: does it use its input?")
    if loss.requires_grad:
        loss.backward()
    return loss.data.item(), [np.zeros_like(t.data) if t.grad is None else t.grad for t in tensors]


def grad(f, params):
    """Reverse-mode gradient of scalar f at params: a list of arrays shaped like params."""
    return value_and_grad(f, params)[1]
