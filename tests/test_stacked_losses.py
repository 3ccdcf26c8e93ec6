"""The stacked losses that gradlab.batched_check evaluates for the RNN (recurrent.loss_rows) and the
first layer of an MLP (backward_signal.first_layer_rows): bit for bit numerical's results on the ops loss."""

import numpy as np
import pytest
from gradlab import backward_signal, batched_check, models, numerical, ops
from gradlab import recurrent as rec


@pytest.mark.parametrize("scale", [0.9, 3.0])
def test_rnn_rows_match_numerical_on_the_ops_loss_bit_for_bit(scale):
    net = rec.draw_network(2, hidden=8, inputs=3, steps=40)
    params, xs, h0, v = rec.unpack(net, scale, 1.0)

    def loss(p):
        return ops.sum(models.rnn(params, xs, p[0]) * v)

    values = rec.loss_rows(params, xs, v)
    assert values([h0[None]])[0] == loss([h0])
    for h in (None, 1e-10):
        expected = numerical.central_difference(loss, [h0], h)[0]
        np.testing.assert_array_equal(batched_check.central_difference(values, [h0], h)[0], expected)
    expected = numerical.complex_step(loss, [h0])[0]
    np.testing.assert_array_equal(batched_check.complex_step(values, [h0])[0], expected)


@pytest.mark.parametrize("activation", ["sigmoid", "tanh"])
def test_mlp_first_layer_rows_match_numerical_on_the_ops_loss_bit_for_bit(activation):
    rng = np.random.default_rng(4)
    params = models.init_mlp([3, 5, 5, 5, 1], "glorot", rng)
    X, y = rng.normal(size=(6, 3)), rng.normal(size=(6, 1))

    def loss(first):
        return ops.mean((models.mlp([first[0], *params[1:]], X, activation) - y) ** 2)

    values, W1 = backward_signal.first_layer_rows(params, X, y, activation), params[0]
    assert values([W1[None]])[0] == loss([W1])
    np.testing.assert_array_equal(
        batched_check.central_difference(values, [W1])[0], numerical.central_difference(loss, [W1])[0]
    )
    np.testing.assert_array_equal(
        batched_check.complex_step(values, [W1])[0], numerical.complex_step(loss, [W1])[0]
    )
