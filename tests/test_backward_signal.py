"""backward_signal: per-layer backward signal, same-sign shares and the exact bound split."""

import numpy as np
from gradlab import backward_signal, engine, models, ops


def _stack(activation="sigmoid", seed=0):
    rng = np.random.default_rng(seed)
    params = models.init_mlp([3, 5, 5, 5, 1], "glorot", rng)
    return params, rng.normal(size=(7, 3)), rng.normal(size=(7, 1))


def test_signal_is_the_pre_activation_gradient_norm():
    params, X, y = _stack()
    report = backward_signal.layer_report(params, X, y, "sigmoid")
    grads = engine.grad(lambda p: ops.mean((models.mlp(p, X, "sigmoid") - y) ** 2), params)
    np.testing.assert_allclose(report["weights"], models.grad_norm_per_layer(grads)[:-1], rtol=1e-12)
    last_z = report["graph"][2][-1]
    assert report["signal"][-1] == np.linalg.norm(last_z.grad)
    assert report["signal_ratio"] == report["signal"][0] / report["signal"][-1]


def test_same_sign_share_counts_columns():
    grad = np.array([[1.0, -1.0, 2.0], [3.0, -2.0, -1.0]])
    assert backward_signal.same_sign_share(grad) == 2 / 3


def test_bound_split_is_exact_and_both_factors_at_most_one():
    for activation, max_slope in (("sigmoid", 0.25), ("tanh", 1.0)):
        params, X, y = _stack(activation)
        split = backward_signal.bound_split(
            backward_signal.layer_report(params, X, y, activation)["graph"], max_slope
        )
        assert split["measured"] <= split["bound"]
        assert 0 < split["slopes"] <= 1 and 0 < split["directions"] <= 1
        np.testing.assert_allclose(split["slopes"] * split["directions"], split["measured"] / split["bound"])


def test_first_layer_check_agrees_on_a_small_stack():
    params, X, y = _stack("tanh")
    result = backward_signal.first_layer_check(params, X, y, "tanh")
    assert result["forward"] < 1e-12 and result["complex"] < 1e-12 and result["central"] < 1e-5
    assert (
        result["smallest"] <= result["median"] <= result["largest"] and result["central_over_rounding"] < 10
    )


def test_rescaled_and_saturated_share():
    unit = [np.ones((2, 8)), np.zeros(8)]
    scaled = backward_signal.rescaled(unit, "glorot", 4)
    np.testing.assert_allclose(scaled[0], 4 * np.sqrt(2 / 10)) and np.testing.assert_array_equal(scaled[1], 0)
    zs = [np.array([0.0, 5.0, 7.0, -8.0])]  # sigmoid'(z) < 0.0025 exactly where |z| > 6
    assert backward_signal.saturated_share(zs, "sigmoid", 0.0025) == 0.5
    assert backward_signal.saturated_share(zs, "tanh", 0.01) == 0.75


def test_first_crossing_interpolates_in_log_log():
    scales = np.array([1.0, 2.0, 4.0, 8.0])
    np.testing.assert_allclose(backward_signal.first_crossing(scales, np.array([0.1, 0.5, 2.0, 0.5])), 2**1.5)
    assert backward_signal.first_crossing(scales, np.array([1.0, 2.0, 4.0, 8.0])) == 1.0
    assert np.isnan(backward_signal.first_crossing(scales, np.full(4, 0.5)))


def test_slope_mean_is_over_layers_two_to_d():
    params, X, y = _stack()
    report = backward_signal.layer_report(params, X, y, "sigmoid")
    hs = [h.data for h in report["graph"][3][1:]]
    assert report["slope_mean"] == np.mean([h * (1 - h) for h in hs]) and 0.2 < report["slope_mean"] <= 0.25


def test_setup_report_adds_saturated_shares_for_saturating_activations():
    params, X, y = _stack()
    report = backward_signal.setup_report(params, X, 100 * X, y, "sigmoid")
    assert report["saturated"] <= report["first_saturated_raw"] and 0 < report["first_saturated_raw"] <= 1
    assert "saturated" not in backward_signal.setup_report(params, X, X, y, "relu")


def test_typical_gain_estimates_the_signal_ratio_of_a_wide_stack():
    rng = np.random.default_rng(1)
    params = models.init_mlp([4] + [200] * 6 + [1], "glorot", rng)
    report = backward_signal.layer_report(params, rng.normal(size=(50, 4)), rng.normal(size=(50, 1)), "tanh")
    assert 0.5 < report["signal_ratio"] / report["signal_estimate"] < 2
    weights, slopes = [np.full((4, 4), 0.5)], [np.full((3, 4), 0.25)]  # ||W||_F / 2 = 1, rms slope 1/4
    assert backward_signal.typical_gain(weights, slopes) == [0.25]
