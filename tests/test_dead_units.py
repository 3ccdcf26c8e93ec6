import numpy as np
from gradlab import dead_units, models, numerical, seeded_mlp

SIZES = [2, 5, 4, 1]


def network(bias_of_dead=-30.0):
    rng = np.random.default_rng(3)
    params = seeded_mlp.one_seed(seeded_mlp.init(SIZES, [rng]), 0)
    params[1][0] = bias_of_dead  # layer-1 unit 0: z <= 0 on every input below
    X = rng.uniform(-1, 1, size=(20, 2))
    return params, X


def test_reach_bounds_every_central_step():
    params, X = network()
    z_top, move = dead_units.central_reach(params, X, [[0, 1], [2]])
    zs, _, _ = seeded_mlp.forward([p[None] for p in params], X[None], 0.0)
    assert z_top[:2] == [zs[0][0][:, 0].max(), zs[0][0][:, 1].max()]
    assert z_top[2] == zs[1][0][:, 2].max()
    # moving each incoming entry of layer-1 unit 1 by one step changes z by at most its reach
    for row in range(3):
        moved = [p.copy() for p in params]
        entry = moved[0][:, 1] if row < 2 else moved[1][1:2]
        index = row if row < 2 else 0
        entry[index] += numerical.default_step() * max(1, abs(entry[index]))
        moved_z = seeded_mlp.forward([p[None] for p in moved], X[None], 0.0)[0][0][0][:, 1]
        assert np.abs(moved_z - zs[0][0][:, 1]).max() <= move[1] * (1 + 1e-9)  # z rounds


def test_dead_unit_out_of_reach_has_exactly_zero_central_difference():
    params, X = network()
    y = np.zeros((len(X), 1))
    z_top, move = dead_units.central_reach(params, X, [[0]])
    assert z_top[0] + move[0] < 0

    def loss(sub):
        full = [sub[0] if i == 0 else sub[1] if i == 1 else p for i, p in enumerate(params)]
        return np.mean((models.mlp(full, X, "relu") - y) ** 2)

    W, b = params[0].copy(), params[1].copy()
    grads = numerical.central_difference(loss, [W, b])
    assert np.all(grads[0][:, 0] == 0) and grads[1][0] == 0


def test_out_of_reach_splits_dead_units_by_the_step():
    params, X = network()
    params[3][2] = -1e-9  # layer-2 unit 2: dead only by a hair, and in reach of one central step?
    params[2][:, 2] = 0.0
    dead = seeded_mlp.dead([p[None] for p in params], X[None], 0.0)[0]
    units, clear = dead_units.out_of_reach(params, X, dead)
    assert 0 in units[0] and 2 in units[1]
    z_top, move = dead_units.central_reach(params, X, units)
    flat = np.concatenate(clear)
    assert list(flat) == [z + m < 0 for z, m in zip(z_top, move, strict=True)]
    assert clear[0][list(units[0]).index(0)] and not clear[1][list(units[1]).index(2)]
    huge = dead_units.out_of_reach(params, X, dead, step=10.0)[1]  # a step of 10 reaches every unit
    assert not np.concatenate(huge).any()


def test_in_reach_counts_per_seed():
    params, X = network()
    params[3][2], params[2][:, 2] = -1e-9, 0.0  # one dead unit in reach of a central step
    stacked = [np.stack([p, p]) for p in params]
    dead = seeded_mlp.dead(stacked, np.stack([X, X]), 0.0)
    assert dead_units.in_reach(stacked, np.stack([X, X]), dead) == [1, 1]
    assert dead_units.in_reach(stacked, np.stack([X, X]), dead, step=10.0) == [int(dead[0].sum())] * 2
