"""Plain minibatch SGD on stacked runs that each take their own step size: a learning-rate sweep
in one numpy call per layer, in the layout of ``seeded_mlp`` (a leading run axis on X, y and every
parameter). Run k with rate ``rates[k]`` and generator ``rngs[k]`` makes exactly the updates
``seeded_mlp.sgd`` makes for that run alone; ``tests/test_rate_sweep.py`` checks it."""

import numpy as np

from . import seeded_mlp


def sgd(params, X, y, rates, slope, rngs, steps, batch, record_at=()):
    """``seeded_mlp.sgd`` with one learning rate per run. Returns the final parameters and
    ``seeded_mlp.dead(...)`` at every step in ``record_at`` (0 = the start), as (record, run, unit)."""
    rates, rows, history = np.asarray(rates, dtype=float), np.arange(len(rngs))[:, None], []
    for step in range(steps + 1):
        if step in record_at:
            history.append(seeded_mlp.dead(params, X, slope))
        if step == steps:
            break
        idx = np.stack([rng.integers(0, X.shape[1], batch) for rng in rngs])
        grads = seeded_mlp.grads(params, X[rows, idx], y[rows, idx], slope)
        params = [p - rates.reshape(-1, *[1] * (p.ndim - 1)) * g for p, g in zip(params, grads, strict=True)]
    return params, np.array(history)
