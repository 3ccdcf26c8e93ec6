"""gradlab.planted: the buggy sigmoid rule and the ReLU network near its kink."""

import numpy as np
from gradlab import engine, forward, models, ops
from gradlab.planted import relu_net_near_kink, sigmoid_forgot_factor


def test_buggy_sigmoid_has_the_right_value_and_the_wrong_reverse_rule():
    x = np.array([-2.0, 0.0, 3.0])
    y = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(engine.grad(lambda p: ops.sum(sigmoid_forgot_factor(p[0])), [x])[0], y)
    np.testing.assert_allclose(
        forward.grad(lambda p: ops.sum(sigmoid_forgot_factor(p[0])), [x])[0], y * (1 - y)
    )
    np.testing.assert_allclose(sigmoid_forgot_factor(x), y)


def test_relu_net_near_kink_places_one_pre_activation_at_the_distance():
    rng = np.random.default_rng(0)
    x_one = rng.normal(size=(1, 4))
    params, loss = relu_net_near_kink(x_one, 8, 1e-7, rng)
    z = x_one @ params[0] + params[1]
    assert np.isclose(np.abs(z).min(), 1e-7, rtol=1e-6, atol=1e-15)
    assert loss(params) == ops.sum((models.mlp(params, x_one, "relu") - 1.0) ** 2)
