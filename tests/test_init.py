"""Tests for gradlab.init: orthogonal and constant starts, the propagation report, descent."""

import numpy as np
import pytest
from gradlab import engine, init, models, ops


@pytest.mark.parametrize("shape", [(6, 6), (8, 3), (3, 8)])
def test_orthogonal_has_every_singular_value_equal_to_gain(shape):
    W = init.orthogonal(*shape, np.random.default_rng(0), gain=1.5)
    assert W.shape == shape
    np.testing.assert_allclose(np.linalg.svd(W, compute_uv=False), 1.5, rtol=1e-12)


def test_orthogonal_draws_do_not_favour_a_sign():
    # without the sign correction, Q's diagonal follows the QR routine's convention
    diagonals = [np.diag(init.orthogonal(4, 4, np.random.default_rng(seed))) for seed in range(400)]
    assert abs(np.mean(np.sign(diagonals))) < 0.1


def test_jacobian_singular_values_match_a_finite_difference_jacobian():
    rng = np.random.default_rng(1)
    params = models.init_mlp([5, 5, 5, 2], "glorot", rng)
    x = rng.normal(size=(1, 5))
    p = init.propagate(params, x, np.ones((1, 2)), "tanh")
    singular = init.jacobian_singular_values(params[0:-2:2], [s[0] for s in p["slopes"]])

    def last_hidden(h0):
        return models.mlp(params, h0, "tanh", return_hidden=True)[2][-1]

    step, J = 1e-6, np.zeros((5, 5))
    for i in range(5):
        e = np.zeros((1, 5))
        e[0, i] = step
        J[i] = (last_hidden(x + e) - last_hidden(x - e))[0] / (2 * step)
    np.testing.assert_allclose(singular, np.linalg.svd(J, compute_uv=False), rtol=1e-6)


def test_propagate_matches_reverse_mode_and_the_he_factor():
    rng = np.random.default_rng(2)
    params = models.init_mlp([64] * 4 + [3], "he", rng)
    X, readout = rng.normal(size=(512, 64)), rng.normal(size=(512, 3))
    p = init.propagate(params, X, readout, "relu")

    def loss(ps):
        return ops.sum(models.mlp(ps, X, "relu") * readout) / 512

    grads = engine.grad(loss, params)
    norms = models.grad_norm_per_layer(grads)
    assert p["ratio"] == pytest.approx(norms[0] / norms[-1])
    assert p["relgrad"] == pytest.approx(np.linalg.norm(grads[0]) / np.linalg.norm(params[0]))
    assert 0.8 < p["forward"] < 1.25


def test_equal_start_stays_one_unit_wide_and_a_random_start_does_not():
    # equal up to rounding: whether a matrix-product kernel treats every column alike, bit for bit,
    # depends on the width and the BLAS, so the test allows what rounding leaves
    rng = np.random.default_rng(3)
    X = rng.normal(size=(16, 3))
    y = np.sin(X[:, :1])
    for width in (5, 8):
        result = init.equal_versus_random(X, y, [3, width, width, 1], 0.2, 0.1, 20, rng)
        assert result["grad_spread"] < 1e-13 and result["unit_spread"] < 1e-13
        assert result["random"] < result["equal"]
    assert init.unit_spread(models.init_mlp([3, 8, 8, 1], "glorot", rng)) > 0.1


def test_unit_spread_sees_one_differing_bit_in_each_part_of_a_unit():
    for layer, index in [(0, (1, 2)), (1, (2,)), (2, (2, 0))]:  # incoming weight, bias, outgoing
        params = init.constant_mlp([2, 3, 1], 0.5)
        params[1][:] = 0.25  # equal nonzero biases
        assert init.unit_spread(params) == 0.0
        params[layer][index] = np.nextafter(params[layer][index], 1.0)
        assert 0 < init.unit_spread(params) <= 2.0**-52  # one ulp, relative to the largest entry


def test_descend_takes_plain_gradient_steps():
    def loss(ps):
        return ops.sum(ps[0] * ps[0])

    value, first, (x,) = init.descend(loss, [np.array([1.0, -2.0])], lr=0.25, steps=2)
    np.testing.assert_allclose(first[0], [2.0, -4.0])
    np.testing.assert_allclose(x, [0.25, -0.5])  # x <- x - 0.25 * 2x = x / 2, twice
    assert value == pytest.approx(0.3125)


def test_seeded_mlp_is_init_mlp_and_orthogonal_mlp_bit_for_bit():
    sizes = [6, 5, 5, 3]
    for _ in range(2):  # the second round comes from the cached draws
        for scheme in ("glorot", "he", 0.07, 1.0):
            expected = models.init_mlp(sizes, scheme, np.random.default_rng([4, 1]))
            got = init.seeded_mlp(sizes, scheme, (4, 1))
            assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
        for gain in (1.0, np.sqrt(2)):
            expected = init.orthogonal_mlp(sizes, np.random.default_rng(9), gain=gain)
            got = init.seeded_mlp(sizes, ("orthogonal", gain), 9)
            assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
    expected = init.orthogonal_mlp(sizes, np.random.default_rng(9))
    assert all(
        np.array_equal(a, b) for a, b in zip(init.seeded_mlp(sizes, "orthogonal", 9), expected, strict=True)
    )
    got = init.seeded_mlp(sizes, 0.5, (4, 1))
    got[0][0, 0] = 1e9  # the caller's arrays are its own: the cache is not touched
    assert init.seeded_mlp(sizes, 0.5, (4, 1))[0][0, 0] != 1e9


@pytest.mark.parametrize("sizes", [[4, 8, 8, 1], [4, 13, 13, 1], [3, 5, 2], [2, 6, 6, 6, 3]])
def test_tanh_mse_value_and_grad_is_the_engines_bit_for_bit_along_a_descent(sizes):
    rng = np.random.default_rng(len(sizes))
    X, y = rng.normal(size=(64, sizes[0])), rng.normal(size=(64, sizes[-1]))

    def mse(params):
        return ops.mean((models.mlp(params, X, "tanh") - y) ** 2)

    for start in (init.constant_mlp(sizes, 0.3), models.init_mlp(sizes, "glorot", rng)):
        start[1] = start[1] + 0.1  # a nonzero bias
        mine = init.descend(mse, start, 0.1, 40, lambda _, p: init.tanh_mse_value_and_grad(p, X, y))
        engines = init.descend(mse, start, 0.1, 40)
        assert mine[0] == engines[0]
        assert all(
            np.array_equal(a, b) for a, b in zip(mine[1] + mine[2], engines[1] + engines[2], strict=True)
        )


def test_equal_versus_random_seeds_is_the_engines_descent_bit_for_bit():
    sizes, problems, expected = [4, 13, 13, 1], [], []
    for seed in range(3):
        rng = np.random.default_rng([seed, 2])
        X = rng.normal(size=(64, 4))
        y = np.sin(1.5 * X @ rng.normal(size=(4, 1)))
        problems.append((X, y, rng))

        def mse(params, X=X, y=y):
            return ops.mean((models.mlp(params, X, "tanh") - y) ** 2)

        equal, first, end = init.descend(mse, init.constant_mlp(sizes, 0.3), 0.1, 60)
        random = init.descend(mse, models.init_mlp(sizes, "glorot", _after_problem(seed)), 0.1, 60)[0]
        expected.append((equal, random, first, init.unit_spread(end)))
    for got, (equal, random, first, spread) in zip(
        init.equal_versus_random_seeds(problems, sizes, 0.3, 0.1, 60), expected, strict=True
    ):
        assert got["equal"] == equal and got["random"] == random and got["unit_spread"] == spread
        assert all(np.array_equal(a, b) for a, b in zip(got["first_grads"], first, strict=True))


def _after_problem(seed):
    """The generator of a problem after its data were drawn, where the Glorot draw starts."""
    rng = np.random.default_rng([seed, 2])
    rng.normal(size=(64, 4))
    rng.normal(size=(4, 1))
    return rng
