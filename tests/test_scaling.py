"""gradlab.scaling: bfloat16 rounding, stochastic rounding, the loss-scale schedule, tanh'."""

import numpy as np
import pytest
from gradlab import scaling


def test_bfloat16_keeps_representable_values():
    values = np.array([0.0, -0.0, 1.0, -2.5, 1 + 2**-7, 2.0**-130, 3.0e38], dtype=np.float32)
    values = values.view(np.uint32) & np.uint32(0xFFFF0000)  # force them onto the bfloat16 grid
    values = values.view(np.float32)
    np.testing.assert_array_equal(scaling.to_bfloat16(values), values)


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (1 + 2**-8, 1.0),  # a tie between 1 and 1 + 2**-7: to the even one, 1
        (1 + 3 * 2**-8, 1 + 2**-6),  # a tie between 1 + 2**-7 (odd) and 1 + 2**-6: up to even
        (1 + 2**-8 + 2**-20, 1 + 2**-7),  # just above the tie: up
        (1 + 2**-9, 1.0),  # below the tie: down
        (-(1 + 2**-8 + 2**-20), -(1 + 2**-7)),  # symmetric for negative numbers
    ],
)
def test_bfloat16_rounds_to_nearest_even(x, expected):
    assert scaling.to_bfloat16(np.float32(x)) == np.float32(expected)


def test_bfloat16_special_values_and_overflow():
    out = scaling.to_bfloat16(np.array([np.inf, -np.inf, np.nan, np.finfo(np.float32).max], np.float32))
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2]) and out[3] == np.inf


def test_bfloat16_error_is_at_most_half_an_ulp():
    x = np.random.default_rng(0).uniform(-100, 100, 10_000).astype(np.float32)
    error = np.abs(scaling.to_bfloat16(x).astype(np.float64) - x)
    assert np.all(error <= scaling.bfloat16_spacing(x) / 2)


def test_stochastic_rounding_is_unbiased_and_on_the_grid():
    rng = np.random.default_rng(1)
    x = np.full(200_000, 1 + 2**-10, dtype=np.float32)  # an eighth of the way from 1 to 1 + 2**-7
    out = scaling.to_bfloat16_stochastic(x, rng)
    assert set(np.unique(out)) == {np.float32(1.0), np.float32(1 + 2**-7)}
    assert abs(out.astype(np.float64).mean() - (1 + 2**-10)) < 5 * 2**-7 / np.sqrt(x.size)


def test_scaler_grows_after_the_interval_and_backs_off_on_inf():
    scaler = scaling.DynamicLossScaler(growth_interval=3)
    assert scaler.scale == 2**16 and scaler.scale.dtype == np.float32
    assert [scaler.update(False) for _ in range(3)] == [True] * 3
    assert scaler.scale == 2**17
    assert scaler.update(True) is False and scaler.scale == 2**16
    assert [scaler.update(False) for _ in range(2)] == [True] * 2 and scaler.scale == 2**16


def test_sech_squared_matches_the_definition_and_does_not_cancel():
    z = np.array([0.0, 0.5, 3.0, 10.0, 40.0])
    np.testing.assert_allclose(scaling.sech_squared(z), 1 / np.cosh(z) ** 2, rtol=1e-14)
    y = np.tanh(np.float32(10.0))
    assert scaling.tanh_slope_from_output(y) == 0  # rounded y is 1: the slope cancels to 0
    assert scaling.sech_squared(np.float32(10.0)) > 0


def test_mlp_scaled_grads_in_float64_is_the_engine_gradient_times_the_scale():
    from gradlab import engine, models, ops

    rng = np.random.default_rng(2)
    params = models.init_mlp([3, 4, 4, 1], "glorot", rng)
    X, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 1))
    expected = engine.grad(lambda p: ops.mean((models.mlp(p, X, "sigmoid") - y) ** 2), params)
    _, scaled, deltas = scaling.mlp_scaled_grads(params, X, y, 8.0)
    assert len(deltas) == 2
    for got, want in zip(scaled, expected, strict=True):
        np.testing.assert_allclose(got / 8.0, want, rtol=1e-10)  # float64 parameters: a float64 loss


def test_mlp_scaled_grads_over_scales_is_one_call_per_scale_bit_for_bit():
    from gradlab import models

    rng = np.random.default_rng(3)
    for activation in ("sigmoid", "tanh"):
        params = [p.astype(np.float16) for p in models.init_mlp([3, 6, 6, 6, 1], "glorot", rng)]
        X, y = rng.normal(size=(7, 3)).astype(np.float16), rng.normal(size=(7, 1))
        scales = [1.0, 2.0**10, 2.0**24]  # the last overflows float16 to inf
        with np.errstate(all="ignore"):
            swept = scaling.mlp_scaled_grads_over(params, X, y, scales, activation)
            single = [scaling.mlp_scaled_grads(params, X, y, s, activation) for s in scales]
        assert not np.all(np.isfinite(single[-1][1][0]))
        for (loss_a, grads_a, deltas_a), (loss_b, grads_b, deltas_b) in zip(swept, single, strict=True):
            assert loss_a == loss_b
            for a, b in zip(grads_a + deltas_a, grads_b + deltas_b, strict=True):
                assert a.dtype == b.dtype == np.float16
                np.testing.assert_array_equal(a, b)


def test_significant_bits_of_float16():
    tiny = float(np.finfo(np.float16).smallest_subnormal)
    bits = scaling.significant_bits([1.0, 6.2e-5, tiny, 3 * tiny, 0.0])
    np.testing.assert_array_equal(bits, [11, 11, 1, 2, 0])
