"""The flop counter: the cost model, its fields, and that it is silent when off."""

import numpy as np
from gradlab import engine, flops, forward, models, numerical, ops
from gradlab.engine import Tensor
from gradlab.forward import Dual


def test_matmul_costs_2mkn_forward_and_twice_that_backward():
    A, B = Tensor(np.ones((3, 4)), requires_grad=True), Tensor(np.ones((4, 5)), requires_grad=True)
    with flops.counting() as counter:
        out = A @ B
    assert (counter.forward, counter.backward) == (2 * 3 * 4 * 5, 0)
    with flops.counting() as counter:
        out.backward  # noqa: B018 -- attribute access costs nothing
        out.sum().backward()
    assert counter.forward == 15  # the sum reads 15 entries
    assert counter.backward == 15 + 2 * (2 * 3 * 4 * 5)  # sum's closure, matmul's two products


def test_backward_charges_only_the_gradients_computed():
    """X @ W with data X (no gradient) costs one backward product, not two; constants cost none."""
    X, W = Tensor(np.ones((3, 4))), Tensor(np.ones((4, 5)), requires_grad=True)
    with flops.counting() as counter:
        (X @ W).sum().backward()
    assert counter.backward == 15 + 2 * 3 * 4 * 5
    with flops.counting() as counter:
        engine.grad(lambda p: ops.sum(ops.tanh(ops.matmul(np.ones((3, 4)), p[0]))), [np.ones((4, 5))])
    assert counter.backward == 15 + 15 + 2 * 3 * 4 * 5  # sum, tanh, W's product only
    with flops.counting() as counter:
        constant = (X @ X.T).tanh().sum()
    assert counter.forward > 0 and counter.backward == 0 and constant._parents == ()


def test_dual_matmul_tangent_costs_two_products():
    with flops.counting() as counter:
        Dual(np.ones((3, 4))) @ np.ones((4, 5))
    assert (counter.forward, counter.tangent, counter.backward) == (120, 240, 0)


def test_elementwise_and_reduction_costs():
    x = np.ones((2, 3))
    with flops.counting() as counter:
        ops.tanh(x)
        ops.sum(x, axis=0)
        ops.matmul(x, x.T)
    assert counter.forward == 6 + 6 + 2 * 2 * 3 * 2
    assert counter.total == counter.forward


def test_same_forward_cost_for_every_type():
    rng = np.random.default_rng(0)
    params = models.init_mlp([3, 4, 2], "glorot", rng)
    X = rng.normal(size=(5, 3))
    # only ops are counted on plain arrays (a numpy `** 2` would be invisible), so use ops only
    loss = lambda p: ops.mean(ops.tanh(models.mlp(p, X)))  # noqa: E731
    costs = []
    for wrap in (np.asarray, Tensor, Dual, lambda p: p + 0j):
        with flops.counting() as counter:
            loss([wrap(p) for p in params])
        costs.append(counter.forward)
    assert len(set(costs)) == 1 and costs[0] > 2 * 5 * 3 * 4


def test_calls_per_method():
    params = [np.ones((2, 3)), np.ones(4)]
    loss = lambda p: ops.sum(p[0] ** 2) + ops.sum(p[1])  # noqa: E731
    n = 10
    expected = {engine.grad: 1, forward.grad: n, numerical.central_difference: 2 * n,
                numerical.complex_step: n}  # fmt: skip
    for method, calls in expected.items():
        with flops.counting() as counter:
            method(loss, params)
        assert counter.calls == calls, method


def test_silent_when_not_counting_and_nesting():
    assert flops._active is None
    with flops.counting() as outer:
        ops.tanh(np.ones(3))
        with flops.counting() as inner:
            ops.tanh(np.ones(4))
        ops.tanh(np.ones(5))
    assert (outer.forward, inner.forward) == (8, 4)
    assert flops._active is None
    ops.tanh(np.ones(6))
    assert outer.forward == 8
