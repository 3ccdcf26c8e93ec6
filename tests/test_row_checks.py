"""gradlab/row_checks.py: batched central differences and complex step, bit for bit numerical's."""

import numpy as np
import pytest
from gradlab import models, numerical, ops, row_checks
from gradlab import recurrent as rec


def rowwise(f):
    """values(X) from a function of one 1-D input: f on each row (trivially row-independent)."""
    return lambda X: np.array([f([row]) for row in X])


def test_equal_to_numerical_for_a_row_by_row_function():
    x = np.array([0.3, -2.5, 7.0, 0.0])

    def f(p):
        return ops.sum(ops.tanh(p[0]) * np.arange(1.0, 5.0)) + ops.sum(p[0] ** 3) / 7

    values = rowwise(f)
    for h in (None, 1e-3, 1e-9):
        expected = (
            numerical.central_difference(f, [x]) if h is None else numerical.central_difference(f, [x], h)
        )
        np.testing.assert_array_equal(row_checks.central_by_rows(values, x, h), expected[0])
    np.testing.assert_array_equal(
        row_checks.complex_step_by_rows(values, x), numerical.complex_step(f, [x])[0]
    )


@pytest.mark.parametrize("scale", [0.9, 3.0])
def test_rnn_rows_match_numerical_on_the_ops_loss_bit_for_bit(scale):
    net = rec.draw_network(2, hidden=8, inputs=3, steps=40)
    params, xs, h0, v = rec.unpack(net, scale, 1.0)

    def loss(p):
        return ops.sum(models.rnn(params, xs, p[0]) * v)

    values = rec.loss_rows(params, xs, v)
    assert values(h0[None])[0] == loss([h0])
    for h in (None, 1e-10):
        expected = numerical.central_difference(loss, [h0], h)[0]
        np.testing.assert_array_equal(row_checks.central_by_rows(values, h0, h), expected)
    expected = numerical.complex_step(loss, [h0])[0]
    np.testing.assert_array_equal(row_checks.complex_step_by_rows(values, h0), expected)


@pytest.mark.parametrize("activation", ["sigmoid", "tanh"])
def test_mlp_first_layer_rows_match_numerical_on_the_ops_loss_bit_for_bit(activation):
    from gradlab import backward_signal

    rng = np.random.default_rng(4)
    params = models.init_mlp([3, 5, 5, 5, 1], "glorot", rng)
    X, y = rng.normal(size=(6, 3)), rng.normal(size=(6, 1))

    def loss(first):
        return ops.mean((models.mlp([first[0], *params[1:]], X, activation) - y) ** 2)

    values, W1 = backward_signal.first_layer_rows(params, X, y, activation), params[0]
    assert values(W1.ravel()[None])[0] == loss([W1])
    central = row_checks.central_by_rows(values, W1.ravel()).reshape(W1.shape)
    np.testing.assert_array_equal(central, numerical.central_difference(loss, [W1])[0])
    complex_ = row_checks.complex_step_by_rows(values, W1.ravel()).reshape(W1.shape)
    np.testing.assert_array_equal(complex_, numerical.complex_step(loss, [W1])[0])
