"""gradlab.graph_memory: stored values, the bytes a freed graph gives back, checkpointing."""

import numpy as np
import pytest
from gradlab import engine, graph_memory, models, ops


def setup(depth=4):
    rng = np.random.default_rng(0)
    params = models.init_mlp([3] + [8] * depth + [1], "glorot", rng)
    return params, rng.normal(size=(5, 3))


def test_stored_values_counts_the_intermediates():
    params, X = setup(depth=1)
    tensors = [engine.Tensor(p, requires_grad=True) for p in params]
    loss = ops.mean(models.mlp(tensors, X) ** 2)
    # X @ W1, + b1, tanh (5 x 8 each); h @ W2, + b2, ** 2 (5 x 1 each); mean = sum, then a scale
    assert graph_memory.stored_values(loss) == 3 * 40 + 3 * 5 + 2


def test_freed_graph_holds_less_than_a_retained_one():
    params, X = setup()
    tensors = [engine.Tensor(p, requires_grad=True) for p in params]

    def make_loss():
        for t in tensors:
            t.grad = None
        return ops.mean(models.mlp(tensors, X) ** 2)

    retained = graph_memory.backward_memory(make_loss, True)
    freed = graph_memory.backward_memory(make_loss, False)
    assert freed["after"] < retained["after"] and freed["peak"] < retained["peak"]


def test_checkpointed_gradient_is_the_gradient():
    params, X = setup(depth=6)
    grads, peak, peak_read = graph_memory.checkpointed_grad(params, X, 2, "tanh")
    reference = engine.grad(lambda p: ops.mean(models.mlp(p, X) ** 2), params)
    for g, r in zip(grads, reference, strict=True):
        np.testing.assert_array_equal(g, r)
    full = graph_memory.stored_values(
        ops.mean(models.mlp([engine.Tensor(p, requires_grad=True) for p in params], X) ** 2)
    )
    assert peak_read < peak < full


def test_the_rules_read_one_value_per_tanh_unit_and_the_graph_keeps_three():
    params, X = setup(depth=2)
    tensors = [engine.Tensor(p, requires_grad=True) for p in params]
    loss = ops.mean(models.mlp(tensors, X) ** 2)
    # tanh reads its output, which is also the next product's input (counted once); + reads
    # nothing; ** reads the output unit's value; the mean's scaling by a constant reads nothing
    assert graph_memory.values_rules_read(loss) == 2 * 5 * 8 + 5
    assert graph_memory.stored_values(loss) == 3 * (2 * 5 * 8 + 5) + 2


def test_relu_and_sigmoid_rules_also_read_the_pre_activation():
    params, X = setup(depth=2)
    for activation in ("relu", "sigmoid"):
        tensors = [engine.Tensor(p, requires_grad=True) for p in params]
        loss = ops.mean(models.mlp(tensors, X, activation) ** 2)
        assert graph_memory.values_rules_read(loss) == 2 * (2 * 5 * 8) + 5


def test_an_op_without_an_entry_is_refused():
    x = engine.Tensor(np.ones(3), requires_grad=True)
    node = x * 2.0
    node._op = "unknown"
    with pytest.raises(ValueError, match="unknown"):
        graph_memory.values_rules_read(node)
