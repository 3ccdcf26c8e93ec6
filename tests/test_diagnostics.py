"""diagnostics: known activations give known fractions; the report is aligned."""

import re

import numpy as np
import pytest
from gradlab import diagnostics
from hypothesis import given, settings
from hypothesis import strategies as st


def test_saturated_fraction_uses_the_097_threshold():
    h = np.array([[0.0, 0.5, 0.98], [-0.99, 0.96, -0.2]])
    assert diagnostics.saturated_fraction("tanh", h) == pytest.approx(2 / 6)
    sigmoid = (1 + h) / 2  # 2 sigmoid - 1 = h: the same entries are saturated
    assert diagnostics.saturated_fraction("sigmoid", sigmoid) == pytest.approx(2 / 6)
    assert diagnostics.saturated_fraction("relu", np.maximum(h, 0)) is None


def test_dead_units_are_zero_slope_on_every_example():
    relu_out = np.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    assert diagnostics.dead_fraction("relu", relu_out) == pytest.approx(2 / 4)  # columns 0 and 3
    tanh_out = np.tanh(np.array([[30.0, 0.1], [-40.0, 25.0]]))  # column 0 is +-1.0 exactly
    assert diagnostics.dead_fraction("tanh", tanh_out) == pytest.approx(1 / 2)
    assert diagnostics.dead_fraction("leaky_relu", relu_out) == 0.0


def test_layer_report_values():
    W = [np.full((2, 2), 2.0), np.full((2, 2), 1.0)]  # Frobenius norms 4 and 2
    g = [np.full((2, 2), 0.5), np.zeros((2, 2))]  # norms 1 and 0
    h = [np.array([[0.0, 1.0], [0.0, 3.0]]), np.array([[1.0, 1.0], [1.0, 1.0]])]
    rows = diagnostics.layer_report(W, g, h, "relu", lr=0.1)
    assert [r.layer for r in rows] == [1, 2]
    assert rows[0].grad_norm == pytest.approx(1.0) and rows[0].update_ratio == pytest.approx(0.1 / 4)
    assert rows[0].dead == 0.5 and rows[1].dead == 0.0 and rows[0].saturated is None
    assert rows[0].mean == pytest.approx(1.0) and rows[0].std == pytest.approx(np.std([0, 1, 0, 3]))
    assert rows[1].update_ratio == 0.0
    with pytest.raises(ValueError, match="one entry per layer"):
        diagnostics.layer_report(W, g[:1], h, "relu", 0.1)
    with pytest.raises(ValueError, match="unknown activation"):
        diagnostics.layer_report(W, g, h, "swish", 0.1)


def test_report_is_aligned():
    rng = np.random.default_rng(0)
    names = ["tanh"] * 9 + ["sigmoid", "relu", "linear"]
    weights = [rng.normal(size=(3, 3)) for _ in names]
    grads = [rng.normal(scale=10.0**-k, size=(3, 3)) for k in range(len(names))]
    acts = [rng.uniform(-1, 1, size=(5, 3)) * (k % 3) for k in range(len(names))]
    acts[9] = (acts[9] + 1) / 2
    text = diagnostics.format_report(diagnostics.layer_report(weights, grads, acts, names, lr=0.1))
    lines = text.splitlines()
    assert len(lines) == len(names) and len({len(line) for line in lines}) == 1
    for field in ("grad", "update/weight", "saturated", "dead", "mean", "std"):
        assert len({line.index(f" {field} ") for line in lines}) == 1, field
    assert re.match(r"layer  1 \(tanh\):\s+grad \d\.\de[+-]\d\d, update/weight", lines[0])
    assert "saturated    n/a" in lines[10]


@settings(max_examples=50, deadline=None)
@given(st.floats(1e-3, 1e3), st.floats(0.1, 10.0), st.integers(2, 30))
def test_per_layer_factor_of_a_geometric_sequence_is_its_ratio(start, ratio, layers):
    values = start * ratio ** np.arange(layers)
    assert diagnostics.per_layer_factor(values) == pytest.approx(ratio, rel=1e-9)
    assert diagnostics.per_layer_factor(values[::-1]) == pytest.approx(1 / ratio, rel=1e-9)


def test_local_slope_of_leaky_relu_is_its_derivative():
    from gradlab import engine, ops

    z = np.array([-3.0, -1e-3, 2.0, 5.0])
    h = ops.leaky_relu(z)
    (expected,) = engine.grad(lambda p: ops.sum(ops.leaky_relu(p[0])), [z])
    np.testing.assert_array_equal(diagnostics.local_slope("leaky_relu", h), expected)
    assert diagnostics.local_slope("leaky_relu", h).tolist() == [0.01, 0.01, 1.0, 1.0]
