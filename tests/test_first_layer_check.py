import numpy as np
from gradlab import first_layer_check, models


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
