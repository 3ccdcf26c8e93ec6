"""gradlab.leaks: primal values under every method, and the update-norm check."""

import numpy as np
import pytest
from gradlab import engine, forward, numerical, ops
from gradlab.leaks import frozen_parameters, primal, update_norms


def test_primal_reads_the_value_under_every_method():
    x = np.array([-1.0, 2.0])
    assert np.array_equal(primal(engine.Tensor(x)), x)
    assert np.array_equal(primal(forward.Dual(x)), x)
    assert np.array_equal(primal(x + 1e-20j), x)


def test_a_mask_built_with_primal_branches_the_same_way_under_every_method():
    def f(params):
        (x,) = params
        return ops.sum(ops.where(primal(x) > 0, x * x, -x))

    x = np.array([-1.5, 0.5, 2.0])
    expected = np.where(x > 0, 2 * x, -1.0)
    for grad in (engine.grad, forward.grad, numerical.complex_step):
        np.testing.assert_allclose(grad(f, [x])[0], expected, rtol=1e-12)


def test_update_norms_and_frozen_parameters():
    before = [np.zeros((2, 2)), np.ones(3)]
    after = [np.full((2, 2), 0.5), np.ones(3)]
    assert update_norms(before, after) == [1.0, 0.0]
    assert frozen_parameters(before, after, ["W", "b"]) == ["b"]


def test_a_write_into_a_contiguous_copy_is_flagged():
    storage = np.arange(6.0).reshape(2, 3)
    param = storage.T  # a non-contiguous view
    before = [param.copy()]
    buffer = np.ascontiguousarray(param)
    buffer -= 1.0
    assert frozen_parameters(before, [param], ["W"]) == ["W"]
    param -= 1.0
    assert frozen_parameters(before, [param], ["W"]) == []


def test_mismatched_lengths_are_errors():
    with pytest.raises(ValueError, match="2 parameters before"):
        update_norms([np.zeros(1), np.zeros(1)], [np.zeros(1)])
    with pytest.raises(ValueError, match="1 names for 2"):
        frozen_parameters([np.zeros(1)] * 2, [np.zeros(1)] * 2, ["a"])
