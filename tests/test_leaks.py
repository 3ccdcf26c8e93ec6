"""gradlab.leaks: primal values under every method, the update-norm checks, and Adam with flawed
in-place kernels."""

import numpy as np
import pytest
from gradlab import engine, forward, numerical, ops, optim
from gradlab.leaks import (
    InPlaceAdam,
    addcdiv_,
    addcmul_,
    autoencoder_optimum,
    frozen_encoder_floor,
    frozen_parameters,
    normwise_disagreement,
    primal,
    stuck_parameters,
    update_norms,
)


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


def test_stuck_parameters_needs_a_nonzero_gradient():
    before = [np.zeros(2), np.zeros(2)]
    after = [np.zeros(2), np.zeros(2)]
    grads = [np.array([0.0, 1e-30]), np.zeros(2)]
    assert stuck_parameters(before, after, grads, ["moved nowhere", "no gradient"]) == ["moved nowhere"]
    with pytest.raises(ValueError, match="1 names"):
        stuck_parameters(before, after, grads, ["a"])


@pytest.mark.parametrize("kernel", [addcmul_, addcdiv_])
def test_flawed_kernels_miss_only_non_contiguous_outputs(kernel):
    a, b = np.full((3, 2), 2.0), np.full((3, 2), 4.0)
    contiguous, transposed = np.zeros((3, 2)), np.zeros((2, 3)).T
    kernel(contiguous, a, b, 1.0, flawed=True)
    kernel(transposed, a, b, 1.0, flawed=True)
    assert np.all(contiguous != 0) and np.all(transposed == 0)
    kernel(transposed, a, b, 1.0)  # the correct kernel writes into any layout
    np.testing.assert_array_equal(transposed, contiguous)


def test_in_place_adam_is_adam_and_the_flawed_one_freezes_transposed_parameters():
    rng = np.random.default_rng(0)
    params = [rng.normal(size=(4, 3)).T.copy(order="K"), rng.normal(size=5)]
    grads = [[rng.normal(size=p.shape) for p in params] for _ in range(3)]
    reference, adam = [p.copy() for p in params], optim.Adam(params, lr=0.1)
    correct, flawed = [p.copy(order="K") for p in params], [p.copy(order="K") for p in params]
    in_place, broken = InPlaceAdam(correct, lr=0.1), InPlaceAdam(flawed, lr=0.1, flawed=True)
    for g in grads:
        reference = adam.step(reference, g)
        in_place.step(correct, g)
        broken.step(flawed, g)
    for got, expected in zip(correct, reference, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_array_equal(flawed[0], params[0])  # not contiguous: never moved
    assert np.all(broken.exp_avg_sq[0] == 0) and np.any(broken.exp_avg[0] != 0)
    np.testing.assert_allclose(flawed[1], reference[1], rtol=1e-12)  # contiguous: a normal Adam step


def test_normwise_disagreement_is_small_for_a_correct_rule_and_ignores_near_zero_entries():
    x = np.array([1.0, 1e-9, -2.0])

    def f(params):
        return ops.sum(params[0] ** 2)  # gradient 2x: one entry near zero

    assert normwise_disagreement(f, [x]) < 1e-8
    assert normwise_disagreement(f, [x], methods=("forward",)) < 1e-15


def test_normwise_disagreement_uses_known_gradients_instead_of_recomputing():
    x = np.array([1.0, -2.0])

    def f(params):
        return ops.sum(params[0] ** 2)

    central = numerical.central_difference(f, [x])
    assert normwise_disagreement(f, [x], known={"central": central}) == normwise_disagreement(f, [x])
    wrong = [2 * central[0]]  # a marker: only a reused gradient can be this far off
    assert abs(normwise_disagreement(f, [x], methods=("central",), known={"central": wrong}) - 1) < 1e-6


def test_frozen_encoder_floor_and_optimum():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2)) @ rng.normal(size=(2, 5)) + 0.01 * rng.normal(size=(40, 5))
    optimum = autoencoder_optimum(X, 2)
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    assert np.isclose(optimum, np.mean((X @ Vt[:2].T @ Vt[:2] - X) ** 2), rtol=1e-10)  # PCA attains it
    assert np.isclose(frozen_encoder_floor(X, Vt[:2].T), optimum, rtol=1e-10)  # the best encoder
    assert frozen_encoder_floor(X, rng.normal(size=(5, 2))) > optimum  # any other is worse
    assert autoencoder_optimum(X, 5) < 1e-25 and np.isclose(
        frozen_encoder_floor(X, np.zeros((5, 2))), np.mean(X**2)
    )
