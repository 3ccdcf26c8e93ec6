"""Reverse mode: every op against forward mode and central differences, plus the engine's rules."""

import numpy as np
import pytest
import strategies as S
from gradlab import engine, forward, numerical, ops
from gradlab.engine import Tensor
from hypothesis import given, settings
from hypothesis import strategies as st


def weights_like(y):
    """Fixed, uneven weights, so sum(w * y) has no symmetry that zeroes the gradient."""
    return 0.5 + (np.arange(np.size(y)) % 7).reshape(np.shape(y)) / 7


def weighted(fn):
    """Turn an array-valued fn(params) into the scalar sum(w * fn(params))."""

    def loss(params):
        y = fn(params)
        shape = y.shape if hasattr(y, "shape") else np.shape(y)
        return ops.sum(y * weights_like(np.zeros(shape)))

    return loss


def one(strategy):
    return strategy.map(lambda x: [x])


def pair(strategy_a, strategy_b):
    return st.tuples(strategy_a, strategy_b).map(list)


def safe_for_clip(x):
    """Move entries within 0.1 of the clip bounds +-1 to +-0.5."""
    return np.where(np.abs(np.abs(x) - 1) < 0.1, 0.5 * np.sign(x), x)


matmul_shapes = st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4))
broadcast_pair = S.broadcastable_pairs.flatmap(lambda s: pair(S.arrays(s[0]), S.arrays(s[1])))
divisor_pair = S.broadcastable_pairs.flatmap(lambda s: pair(S.arrays(s[0]), S.away_from_zero(s[1], 0.5, 2.0)))

# name -> (strategy for the parameter list, array-valued function of the parameters)
CASES = {
    "add": (broadcast_pair, lambda p: p[0] + p[1]),
    "sub": (broadcast_pair, lambda p: p[0] - p[1]),
    "mul": (broadcast_pair, lambda p: p[0] * p[1]),
    "div": (divisor_pair, lambda p: p[0] / p[1]),
    "scalar_left": (one(S.shapes.flatmap(S.arrays)), lambda p: 3.0 - 2.0 * p[0] + 1.5),
    "rdiv": (one(S.shapes.flatmap(S.positive)), lambda p: 2.0 / p[0]),
    "neg": (one(S.shapes.flatmap(S.arrays)), lambda p: -p[0]),
    "pow": (one(S.shapes.flatmap(S.positive)), lambda p: p[0] ** 2.5),
    "matmul": (
        matmul_shapes.flatmap(lambda s: pair(S.arrays(s[:2]), S.arrays(s[1:]))),
        lambda p: p[0] @ p[1],
    ),
    "matvec": (
        matmul_shapes.flatmap(lambda s: pair(S.arrays(s[:2]), S.arrays(s[1:2]))),
        lambda p: p[0] @ p[1],
    ),
    "vecmat": (
        matmul_shapes.flatmap(lambda s: pair(S.arrays(s[:1]), S.arrays(s[:2]))),
        lambda p: p[0] @ p[1],
    ),
    "dot": (
        st.integers(1, 5).flatmap(lambda n: pair(S.arrays((n,)), S.arrays((n,)))),
        lambda p: p[0] @ p[1],
    ),
    "exp": (one(S.shapes.flatmap(S.arrays)), lambda p: ops.exp(p[0])),
    "log": (one(S.shapes.flatmap(S.positive)), lambda p: ops.log(p[0])),
    "sqrt": (one(S.shapes.flatmap(S.positive)), lambda p: ops.sqrt(p[0])),
    "tanh": (one(S.shapes.flatmap(S.arrays)), lambda p: ops.tanh(p[0])),
    "sigmoid": (one(S.shapes.flatmap(S.arrays)), lambda p: ops.sigmoid(p[0])),
    "relu": (one(S.shapes.flatmap(S.away_from_zero)), lambda p: ops.relu(p[0])),
    "leaky_relu": (one(S.shapes.flatmap(S.away_from_zero)), lambda p: ops.leaky_relu(p[0], 0.1)),
    "abs": (one(S.shapes.flatmap(S.away_from_zero)), lambda p: ops.abs(p[0])),
    "maximum": (S.shapes.flatmap(S.separated_pair).map(list), lambda p: ops.maximum(p[0], p[1])),
    "minimum": (S.shapes.flatmap(S.separated_pair).map(list), lambda p: ops.minimum(p[0], p[1])),
    "clip": (
        one(S.shapes.flatmap(S.arrays).map(safe_for_clip)),
        lambda p: ops.clip(p[0], -1.0, 1.0),
    ),
    "where": (
        S.shapes.flatmap(lambda s: pair(S.arrays(s), S.arrays(s))),
        lambda p: ops.where(np.arange(np.size(p[0])).reshape(np.shape(p[0])) % 2 == 0, p[0], p[1]),
    ),
    "sum_axis": (
        one(S.matrix_shapes.flatmap(S.arrays)),
        lambda p: ops.sum(p[0], axis=0, keepdims=False) * 1.0,
    ),
    "sum_keepdims": (one(S.matrix_shapes.flatmap(S.arrays)), lambda p: ops.sum(p[0], -1, True)),
    "mean_axis": (one(S.matrix_shapes.flatmap(S.arrays)), lambda p: ops.mean(p[0], axis=1)),
    "mean_all": (one(S.shapes.flatmap(S.arrays)), lambda p: ops.mean(p[0]) * p[0]),
    "reshape": (one(S.matrix_shapes.flatmap(S.arrays)), lambda p: p[0].reshape(-1)),
    "transpose": (one(S.matrix_shapes.flatmap(S.arrays)), lambda p: p[0].T),
    "transpose_axes": (
        one(S.arrays((2, 3, 4))),
        lambda p: p[0].transpose((2, 0, 1)) * p[0].transpose((2, 0, 1)),
    ),
    "gather_repeated": (S.gather_indices(), None),  # fn built in the test from the indices
    "softmax": (one(S.matrix_shapes.flatmap(S.arrays)), lambda p: ops.softmax(p[0])),
    "softmax_axis0": (one(S.matrix_shapes.flatmap(S.arrays)), lambda p: ops.softmax(p[0], 0)),
    "log_softmax": (one(S.matrix_shapes.flatmap(S.arrays)), lambda p: ops.log_softmax(p[0])),
}


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_reverse_matches_forward_and_central(name, data):
    strategy, fn = CASES[name]
    if name == "gather_repeated":
        length, indices = data.draw(strategy)
        params = [data.draw(S.arrays((length,)))]
        fn = lambda p: p[0][indices] * p[0][indices]  # noqa: E731
    else:
        params = data.draw(strategy)
    loss = weighted(fn)
    reverse = engine.grad(loss, params)
    for r, fwd, cen, p in zip(
        reverse,
        forward.grad(loss, params),
        numerical.central_difference(loss, params),
        params,
        strict=True,
    ):
        assert r.shape == np.shape(p)
        np.testing.assert_allclose(r, fwd, rtol=1e-9, atol=1e-12)
        # central differences' rounding error is about eps |L| / h: scale atol with |L|
        np.testing.assert_allclose(r, cen, rtol=1e-6, atol=1e-9 * (1 + abs(float(np.asarray(loss(params))))))


def test_fork_accumulates_both_paths():
    """x is used three times in x * x + x: dL/dx = 2x + 1, the sum over the paths."""
    x = Tensor(np.array([-1.5, 0.0, 2.0]), requires_grad=True)
    (x * x + x).sum().backward()
    np.testing.assert_array_equal(x.grad, 2 * x.data + 1)


def test_shared_subexpression_used_twice():
    x = Tensor(np.array(0.7), requires_grad=True)
    y = x.tanh()
    (y * y).backward()  # d(tanh^2)/dx = 2 tanh (1 - tanh^2)
    t = np.tanh(0.7)
    np.testing.assert_allclose(x.grad, 2 * t * (1 - t**2), rtol=1e-15)


@settings(max_examples=25, deadline=None)
@given(S.gather_indices())
def test_repeated_indices_accumulate(length_and_indices):
    length, indices = length_and_indices
    x = Tensor(np.arange(length, dtype=float), requires_grad=True)
    x[indices].sum().backward()
    np.testing.assert_array_equal(x.grad, np.bincount(indices, minlength=length))


@settings(max_examples=25, deadline=None)
@given(S.broadcastable_pairs)
def test_unbroadcast_returns_operand_shapes(shapes):
    a, b = Tensor(np.ones(shapes[0]), requires_grad=True), Tensor(np.ones(shapes[1]), requires_grad=True)
    out = a * b
    out.sum().backward()
    assert a.grad.shape == shapes[0] and b.grad.shape == shapes[1]
    # every entry of a was used once per entry of the output it was broadcast into
    np.testing.assert_array_equal(a.grad, np.full(shapes[0], out.size / a.size))


def test_kink_conventions():
    x = Tensor(np.array([0.0]), requires_grad=True)
    for fn, expected in [
        (lambda t: t.relu(), 0.0),
        (lambda t: t.abs(), 0.0),
        (lambda t: t.leaky_relu(0.1), 0.1),
        (lambda t: t.clip(0.0, 1.0), 0.0),
        (lambda t: t.clip(-1.0, 0.0), 0.0),
        (lambda t: t.clip(-1.0, 1.0), 1.0),
    ]:
        x.grad = None
        fn(x).sum().backward()
        assert x.grad[0] == expected
    a, b = Tensor(np.array(1.0), requires_grad=True), Tensor(np.array(1.0), requires_grad=True)
    a.maximum(b).backward()
    assert (a.grad, b.grad) == (1.0, 0.0)
    a, b = Tensor(np.array(1.0), requires_grad=True), Tensor(np.array(1.0), requires_grad=True)
    a.minimum(b).backward()
    assert (a.grad, b.grad) == (1.0, 0.0)


def test_float32_kept_end_to_end():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    t = Tensor(x, requires_grad=True)
    y = ((t * 2.0 + 1).tanh() @ np.ones((3, 2), np.float32)).softmax().mean()
    assert y.data.dtype == np.float32
    y.backward()
    assert t.grad.dtype == np.float32
    for op in ("exp", "sigmoid", "relu", "leaky_relu", "abs", "transpose", "softmax"):
        assert getattr(t, op)().dtype == np.float32, op
    assert (t**2).dtype == (t ** np.float64(2)).dtype == np.float32
    assert t.clip(-0.5, 0.5).dtype == t.maximum(0.0).dtype == np.float32
    assert engine.grad(lambda p: (p[0] ** 2).sum(), [x])[0].dtype == np.float32


def test_dtype_rules():
    assert Tensor([1, 2]).data.dtype == np.float64
    assert Tensor(np.array([True])).data.dtype == np.float64
    with pytest.raises(TypeError, match="complex128"):
        Tensor(np.array([1j]))
    with pytest.raises(TypeError, match="object"):
        Tensor(np.array([None]))


def test_matmul_shape_error_names_both_shapes():
    with pytest.raises(ValueError, match=r"matmul: shapes \(3, 4\) and \(5, 2\) do not align"):
        Tensor(np.ones((3, 4))) @ Tensor(np.ones((5, 2)))


def test_backward_needs_a_scalar():
    with pytest.raises(ValueError, match="scalar"):
        (Tensor(np.ones((2, 3))) * 2).backward()


def test_numpy_array_on_the_left_defers_to_tensor():
    X = np.arange(6.0).reshape(2, 3)
    W = Tensor(np.ones((3, 1)), requires_grad=True)
    out = X @ W
    assert isinstance(out, Tensor)
    out.sum().backward()
    np.testing.assert_array_equal(W.grad, X.sum(axis=0, keepdims=True).T)
    assert isinstance(np.ones(3) + Tensor(np.ones(3)), Tensor)


def test_long_chain_has_no_recursion_limit():
    x = Tensor(np.array(1.0), requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    y.backward()
    assert x.grad == 1.0


def test_value_and_grad():
    value, (g,) = engine.value_and_grad(lambda p: (p[0] ** 2).sum(), [np.array([3.0, 4.0])])
    assert value == 25.0
    np.testing.assert_array_equal(g, [6.0, 8.0])
    with pytest.raises(TypeError, match="not a Tensor"):
        engine.grad(lambda p: 1.0, [np.ones(2)])


def test_float16_is_kept_end_to_end():
    x = np.array([[0.5, -1.25], [2.0, 0.75]], dtype=np.float16)
    w = np.array([0.25, -0.5], dtype=np.float16)
    grads = engine.grad(lambda p: (p[0] @ p[1]).tanh().sum(), [x, w])
    assert [g.dtype for g in grads] == [np.float16, np.float16]
    reference = engine.grad(
        lambda p: (p[0] @ p[1]).tanh().sum(), [x.astype(np.float64), w.astype(np.float64)]
    )
    # float16 keeps about 3 significant digits of each term; a small entry that is a sum of
    # larger terms loses more, so compare at the scale of the gradient (atol), not entrywise
    np.testing.assert_allclose(grads[1].astype(np.float64), reference[1], rtol=5e-3, atol=2e-3)


def test_sigmoid_slope_is_accurate_where_y_rounds_to_one():
    """dy/dx = sigmoid(x) sigmoid(-x), against a 50-digit reference up to |x| = 700; the rule
    y (1 - y) would return exactly 0 for x >= 36.74, where y has rounded to 1.0."""
    from decimal import Decimal, localcontext

    x = np.concatenate([np.linspace(-700, 700, 1401), [36.0, 37.0, 40.0]])
    with localcontext() as context:
        context.prec = 50
        reference = np.array([float((e := (-Decimal(abs(v))).exp()) / (1 + e) ** 2) for v in x])
    t = Tensor(x, requires_grad=True)
    y = t.sigmoid()
    y.sum().backward()
    assert np.max(np.abs(t.grad - reference) / reference) <= 1e-15
    at_37 = x == 37.0
    assert np.all(y.data[at_37] == 1.0) and np.all((y.data * (1 - y.data))[at_37] == 0.0)
    assert np.all(t.grad[at_37] > 8e-17)


def test_data_leaves_get_no_gradient_and_record_no_graph():
    """Like PyTorch: a Tensor from data requires no gradient; an op on constants only is a
    constant (no parents, no closure); an op's output requires a gradient iff an input does."""
    X, W = Tensor(np.ones((2, 3))), Tensor(np.ones((3, 1)), requires_grad=True)
    assert not X.requires_grad and X.grad is None
    constant = (X * 2.0).tanh()
    assert not constant.requires_grad and constant._parents == ()
    assert constant._backward() is None  # the leaf's no-op rule, not a closure over X
    out = (constant @ W).sum()
    assert out.requires_grad
    out.backward()
    assert X.grad is None and constant.grad is None
    np.testing.assert_array_equal(W.grad, np.tanh(2.0) * 2 * np.ones((3, 1)))
    with pytest.raises(RuntimeError, match="requires_grad"):
        (X * 2.0).sum().backward()


def test_rules_skip_inputs_that_need_no_gradient():
    """X @ W with data X: X is not a parent, its buffer is never allocated (test_flops checks
    that only W's product is charged)."""
    X = Tensor(np.arange(6.0).reshape(2, 3))
    W = Tensor(np.ones((3, 4)), requires_grad=True)
    out = X @ W
    assert out._parents == (W,)
    out.sum().backward()
    assert X.grad is None
    np.testing.assert_array_equal(W.grad, np.repeat(X.data.sum(axis=0, keepdims=True).T, 4, axis=1))


def test_grad_is_none_until_written_then_accumulates():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    assert x.grad is None
    (x * 3.0).sum().backward()
    first = x.grad
    np.testing.assert_array_equal(first, [3.0, 3.0])
    (x * x).sum().backward()  # a new graph: the leaf accumulates, like PyTorch's .grad
    np.testing.assert_array_equal(x.grad, [3.0 + 2.0, 3.0 + 4.0])
    y = x + 0.0  # the first write copies: y's gradient buffer is not x's
    y.sum().backward()
    assert x.grad is not y.grad


def test_backward_frees_the_graph_and_a_second_backward_raises():
    import gc
    import weakref

    x = Tensor(np.ones(3), requires_grad=True)
    hidden = x.tanh()
    loss = (hidden * hidden).sum()
    watcher = weakref.ref(hidden)
    del hidden
    loss.backward()
    assert loss._parents == ()
    gc.disable()  # freed by reference counting alone: no cycle through the closures is left
    try:
        assert watcher() is None
    finally:
        gc.enable()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        loss.backward()


def test_retain_graph_allows_a_second_backward_that_accumulates():
    x = Tensor(np.array([0.5, -1.0]), requires_grad=True)
    hidden = x.tanh()
    loss = (hidden * hidden).sum()
    loss.backward(retain_graph=True)
    once = x.grad.copy()
    np.testing.assert_allclose(once, 2 * np.tanh(x.data) * (1 - np.tanh(x.data) ** 2), rtol=1e-15)
    loss.backward()  # interior gradients start from zero again; the leaf adds a second copy
    np.testing.assert_allclose(x.grad, 2 * once, rtol=1e-15)
    np.testing.assert_allclose(hidden.grad, 2 * hidden.data, rtol=1e-15)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_value_and_grad_marks_params_and_returns_zeros_for_unused_ones():
    X = np.ones((2, 3))
    value, (g_w, g_unused) = engine.value_and_grad(
        lambda p: ops.sum(ops.matmul(X, p[0])), [np.ones(3), np.ones(2)]
    )
    assert value == 6.0
    np.testing.assert_array_equal(g_w, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(g_unused, [0.0, 0.0])


def test_no_two_nodes_share_a_gradient_buffer():
    """`+` passes its gradient on unchanged; the inputs get copies, so accumulating into one
    (a + a: the same input twice) leaves the output's gradient as it was."""
    a = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    total = a + a
    total.sum().backward()
    np.testing.assert_array_equal(total.grad, [1.0, 1.0])
    np.testing.assert_array_equal(a.grad, [2.0, 2.0])
