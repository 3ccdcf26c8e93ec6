import numpy as np
import pytest
from gradlab import engine, models, ops, seeded_mlp

SIZES = [2, 5, 4, 1]


@pytest.fixture
def stacked():
    rngs = [np.random.default_rng(k) for k in range(3)]
    X = np.stack([rng.normal(size=(7, 2)) for rng in rngs])
    y = np.stack([rng.normal(size=(7, 1)) for rng in rngs])
    params = seeded_mlp.init(SIZES, rngs, bias=0.1)
    return params, X, y


@pytest.mark.parametrize(("activation", "slope"), [("relu", 0.0), ("leaky_relu", 0.01)])
def test_grads_match_reverse_mode_per_seed(stacked, activation, slope):
    params, X, y = stacked
    by_hand = seeded_mlp.grads(params, X, y, slope)
    for k in range(3):
        one = seeded_mlp.one_seed(params, k)
        expected = engine.grad(lambda p, k=k: ops.mean((models.mlp(p, X[k], activation) - y[k]) ** 2), one)
        for a, b in zip(seeded_mlp.one_seed(by_hand, k), expected, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
        assert seeded_mlp.loss(params, X, y, slope)[k] == pytest.approx(
            float(np.mean((models.mlp(one, X[k], activation) - y[k]) ** 2)), rel=1e-12
        )


def test_dead_is_nonpositive_on_every_input(stacked):
    params, X, _ = stacked
    params[1][1, 3] = -100.0  # seed 1, layer-1 unit 3 off everywhere
    dead = seeded_mlp.dead(params, X, 0.0)
    assert dead.shape == (3, 9) and dead[1, 3]
    zs = seeded_mlp.forward(params, X, 0.0)[0]
    assert np.array_equal(dead, np.concatenate([(z <= 0).all(1) for z in zs], axis=1))


def test_sgd_records_and_moves(stacked):
    params, X, y = stacked
    rngs = [np.random.default_rng(k) for k in range(3)]
    new, history = seeded_mlp.sgd(params, X, y, 0.01, 0.0, rngs, steps=4, batch=3, record_at=(0, 2, 4))
    assert history.shape == (3, 3, 9)
    assert not np.array_equal(new[0], params[0])


def test_loss_of_units_gradient_is_the_chosen_columns(stacked):
    params, X, y = stacked
    one = seeded_mlp.one_seed(params, 0)
    function, sub = seeded_mlp.loss_of_units(one, X[0], y[0], [[0, 2], [1]])
    full = engine.grad(lambda p: ops.mean((models.mlp(p, X[0], "relu") - y[0]) ** 2), one)
    got = engine.grad(function, sub)
    expected = [full[0][:, [0, 2]], full[1][[0, 2]], full[2][:, [1]], full[3][[1]]]
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    assert float(function(sub)) == pytest.approx(float(np.mean((models.mlp(one, X[0], "relu") - y[0]) ** 2)))
