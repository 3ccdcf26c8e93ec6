"""logistic: the two slope rules, exact references and thresholds."""

import numpy as np
from gradlab import engine, forward, logistic, numerical, ops


def test_references_match_closed_forms_where_float64_suffices():
    for z in (-5.0, 0.0, 2.5):
        np.testing.assert_allclose(logistic.reference(z), 1 / (1 + np.exp(-z)), rtol=1e-15)
        np.testing.assert_allclose(
            logistic.reference_slope(z), np.exp(-z) / (1 + np.exp(-z)) ** 2, rtol=1e-15
        )
    assert logistic.reference(-40.0) == 4.248354255291589e-18  # e^-40 / (1 + e^-40)


def test_thresholds_are_where_the_sigmoid_rounds_to_one():
    for bits, dtype in ((53, np.float64), (24, np.float32)):
        z = logistic.first_float_at_or_above(bits, dtype)
        assert z.dtype == dtype and abs(float(z) - bits * np.log(2)) < 4 * np.spacing(z)
        previous = np.nextafter(z, dtype(0))
        assert float(previous) < bits * float(np.log(2)) + 1e-12  # the one below is below p ln 2
        assert ops.sigmoid(np.array([z])).item() == 1.0  # holds for this machine's exp
    assert 745.13 < logistic.first_float_at_or_above(1075) < 745.14


def test_output_rule_rounds_to_zero_where_gradlabs_rule_does_not():
    x = [np.array([5.0, 37.0])]
    rule = engine.grad(lambda p: ops.sum(logistic.sigmoid_output_rule(p[0])), x)[0]
    tangent = forward.grad(lambda p: ops.sum(logistic.sigmoid_output_rule(p[0])), x)[0]
    gradlab = engine.grad(lambda p: ops.sum(ops.sigmoid(p[0])), x)[0]
    complex_step = numerical.complex_step(lambda p: ops.sum(logistic.sigmoid_output_rule(p[0])), x)[0]
    assert rule[1] == tangent[1] == 0.0 and gradlab[1] > 8e-17
    np.testing.assert_allclose(rule[0], gradlab[0], rtol=1e-12)
    np.testing.assert_allclose(complex_step, gradlab, rtol=1e-14)


def test_this_machines_threshold_and_float_counting():
    for bits, dtype in ((53, np.float64), (24, np.float32)):
        machine = logistic.machine_rounds_to_one(dtype)
        assert machine.dtype == dtype and ops.sigmoid(np.array([machine])).item() == 1.0
        assert ops.sigmoid(np.array([np.nextafter(machine, dtype(0))])).item() < 1.0
        assert abs(logistic.floats_from(logistic.first_float_at_or_above(bits, dtype), machine)) <= 1
    one = np.float32(1.0)
    assert logistic.floats_from(one, np.nextafter(np.nextafter(one, np.float32(2)), np.float32(2))) == 2
    assert logistic.floats_from(one, np.nextafter(one, np.float32(0))) == -1


def test_slope_by_methods_at_37_and_at_1():
    at_37 = logistic.slope_by_methods(37.0)
    assert at_37["reverse_rule"] == at_37["forward_rule"] == at_37["central"] == 0.0
    assert all(abs(at_37[key] / at_37["true"] - 1) < 1e-14 for key in ("complex", "reverse_gradlab"))
    at_1 = logistic.slope_by_methods(1.0)
    assert all(abs(value / at_1["true"] - 1) < 1e-9 for value in at_1.values())


def test_correctly_rounded_sigma_reaches_one_a_bit_later_than_the_formula():
    at_37 = logistic.correctly_rounded(37.0)
    assert at_37["one_minus"] == 2.0**-53  # the formula 1 / (1 + e^-37) gives exactly 1.0 here
    np.testing.assert_allclose(at_37["rule_slope"], 2.0**-53, rtol=1e-15)  # ~30% above sigma'(37)
    assert at_37["threshold_holds"] and at_37["flat_under_step"]
    assert abs(at_37["z_one"] - 54 * np.log(2)) < 1e-14 and at_37["z_one"] > logistic.first_float_at_or_above(
        53
    )
    assert not logistic.correctly_rounded(20.0)["flat_under_step"]  # there 2 h sigma' is above an ulp
