import numpy as np
from gradlab import rate_sweep, seeded_mlp

SIZES = [2, 5, 4, 1]


def test_each_run_is_seeded_mlp_sgd_at_its_rate():
    rates, X = [0.01, 0.1, 0.5], np.random.default_rng(0).uniform(-2, 2, size=(1, 16, 2))
    y = np.sin(X[..., :1])
    stack = lambda a: np.repeat(a, len(rates), 0)  # noqa: E731
    rngs = [np.random.default_rng(7) for _ in rates]
    swept, history = rate_sweep.sgd(
        seeded_mlp.init(SIZES, rngs), stack(X), stack(y), rates, 0.0, rngs, 20, 4, [0, 20]
    )
    assert history.shape == (2, len(rates), 9)
    for k, rate in enumerate(rates):
        rng = [np.random.default_rng(7)]
        alone, one = seeded_mlp.sgd(seeded_mlp.init(SIZES, rng), X, y, rate, 0.0, rng, 20, 4, [0, 20])
        for a, b in zip(swept, alone, strict=True):
            np.testing.assert_array_equal(a[k], b[0])
        np.testing.assert_array_equal(history[:, k], one[:, 0])
