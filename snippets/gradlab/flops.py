"""A deterministic floating-point-operation counter, so the cost chapter can quote exact costs.

    with flops.counting() as counter:
        grads = engine.grad(loss, params)
    print(counter.forward, counter.backward, counter.tangent, counter.total, counter.calls)

The cost model (the same for `engine.Tensor`, `forward.Dual` and numpy arrays passed to `ops`):

* matmul of (m, k) by (k, n) costs 2mkn (one multiply and one add per term);
* an elementwise op costs the size of its output; softmax and log_softmax cost 3 passes;
* a reduction (sum, mean) costs the size of its input;
* indexing, reshaping and transposing move data and cost 0.

What each field holds:

* `forward`: evaluating the function itself, in any method (a float, a Tensor or a Dual);
* `backward`: the reverse sweep. Each node's closure costs its forward cost once per input it
  sends a gradient to, so a matmul's backward costs 2 * 2mkn, twice its forward, when both inputs
  require a gradient, and 2mkn when one is data (X @ W with data X: no dL/dX, as in PyTorch);
* `tangent`: the tangent half of forward mode, with the same rule: an op's cost once per operand;
* `calls`: how many times a gradient driver evaluated the user's function f.

Numpy operators used directly on plain arrays (`X @ W` with two numpy arrays) are invisible to
the counter; go through `ops` (e.g. `ops.matmul`, `ops.linear`) to have them counted. The sums that
undo broadcasting in the backward pass are not counted.

When no counter is active the hooks below return after one `is None` check.
"""

from contextlib import contextmanager

_active = None  # the Counter being filled, or None when nobody is counting


class Counter:
    """Running totals; see the module docstring for what each field counts."""

    def __init__(self):
        self.forward = 0
        self.backward = 0
        self.tangent = 0
        self.calls = 0

    @property
    def total(self):
        return self.forward + self.backward + self.tangent

    def __repr__(self):
        return (
            f"Counter(forward={self.forward}, backward={self.backward}, "
            f"tangent={self.tangent}, total={self.total}, calls={self.calls})"
        )


@contextmanager
def counting():
    """Count flops inside the `with` block. Nested blocks: only the innermost counter counts."""
    global _active
    previous, _active = _active, Counter()
    try:
        yield _active
    finally:
        _active = previous


def active() -> bool:
    """Whether a counter is counting (a plain-numpy op skips working out its cost otherwise)."""
    return _active is not None


def count_forward(n):
    if _active is not None:
        _active.forward += int(n)


def count_backward(n):
    if _active is not None:
        _active.backward += int(n)


def count_tangent(n):
    if _active is not None:
        _active.tangent += int(n)


def count_call():
    if _active is not None:
        _active.calls += 1


def matmul_cost(a_shape, b_shape):
    """2 * (output size) * k: 2mkn for (m, k) @ (k, n), 2k for a dot product of two k-vectors."""
    m = a_shape[0] if len(a_shape) == 2 else 1
    n = b_shape[1] if len(b_shape) == 2 else 1
    return 2 * m * a_shape[-1] * n
