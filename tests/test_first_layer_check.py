import numpy as np
from gradlab import check, first_layer_check, models, ops


def test_methods_agree_and_rms_is_reverse_modes():
    result = first_layer_check.first_layer_check(3, 4, 0.5, np.random.default_rng(0))
    assert result["exact"] < 1e-12 and result["central"] < 1e-6
    # the same draws, the gradient by hand: L = mean over rows of f(X) r, first layer only
    rng = np.random.default_rng(0)
    params = models.init_mlp([4] * 4 + [1], 0.5, rng)
    X, readout = rng.normal(size=(4, 4)), rng.normal(size=(4, 1))
    h, slopes = X, []
    for W, b in zip(params[0:-2:2], params[1:-2:2], strict=True):
        h = np.tanh(h @ W + b)
        slopes.append(1 - h**2)
    delta = (readout / 4) @ params[-2].T * slopes[-1]
    for layer in range(len(slopes) - 1, 0, -1):
        delta = delta @ params[2 * layer].T * slopes[layer - 1]
    by_hand = X.T @ delta
    assert np.isclose(result["grad_rms"], np.sqrt(np.mean(by_hand**2)), rtol=1e-12)


def test_vanishing_scale_gives_a_tiny_gradient():
    small = first_layer_check.first_layer_check(10, 4, 0.01, np.random.default_rng(1))
    large = first_layer_check.first_layer_check(10, 4, 1.0, np.random.default_rng(1))
    assert small["grad_rms"] < 1e-12 * large["grad_rms"]


def test_the_same_numbers_as_check_compare():
    for activation, std in [("tanh", 0.01), ("tanh", 1.0), ("relu", 0.5)]:
        rng = np.random.default_rng(7)
        result = first_layer_check.first_layer_check(6, 5, std, rng, activation)
        rng = np.random.default_rng(7)  # the same draws, one method at a time
        params = models.init_mlp([5] * 7 + [1], std, rng)
        X, readout = rng.normal(size=(5, 5)), rng.normal(size=(5, 1))

        def loss(first, params=params, X=X, readout=readout, activation=activation):
            return ops.sum(models.mlp([first[0], *params[1:]], X, activation) * readout) / 5

        expected = check.compare(loss, [params[0]])
        assert result["central"] == expected["reverse vs central"]
        assert result["exact"] == max(expected["reverse vs forward"], expected["reverse vs complex"])
