"""gradlab.stacked: the hand-written stacked backward pass equals the engine's reverse mode."""

import itertools

import numpy as np
import pytest
from gradlab import engine, ops, stacked


def engine_loss(params, X, y, variant):
    h = X
    for layer, (W, b) in enumerate(zip(params[0:-2:2], params[1:-2:2], strict=True)):
        z = ops.linear(h, W, b)
        t = ops.tanh(ops.layer_norm(z) if variant == "normalized" else z)
        h = h + t if variant == "residual" and layer > 0 else t
    return ops.mean((ops.linear(h, params[-2], params[-1]) - y) ** 2)


@pytest.mark.parametrize("variant", stacked.VARIANTS)
def test_matches_engine_on_every_network_of_the_stack(variant):
    rng = np.random.default_rng(0)
    sizes, K, N = [3, 5, 5, 5, 1], 4, 7
    params = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        params += [rng.normal(size=(K, fan_in, fan_out)), rng.normal(size=(K, 1, fan_out))]
    X, y = rng.normal(size=(K, N, 3)), rng.normal(size=(K, N, 1))
    losses, grads = stacked.value_and_grad(params, X, y, variant)
    for k in range(K):
        one = [p[k] for p in params]
        value, expected = engine.value_and_grad(lambda p, k=k: engine_loss(p, X[k], y[k], variant), one)
        assert np.isclose(losses[k], value, rtol=1e-12)
        for g, e in zip(grads, expected, strict=True):
            np.testing.assert_allclose(g[k], e, rtol=1e-10, atol=1e-13)


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="unknown variant"):
        stacked.value_and_grad([], None, None, "batchnorm")
