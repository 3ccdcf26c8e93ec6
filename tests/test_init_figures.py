import numpy as np
from gradlab import init as inits
from gradlab import init_figures, models


def test_frames_are_the_runs_relative_variances():
    rng = np.random.default_rng(0)
    X, readout = rng.normal(size=(8, 16)), rng.normal(size=(8, 3))
    stds = [0.1, 0.35, 0.5]
    runs = [
        inits.propagate(models.init_mlp([16] * 5 + [3], s, np.random.default_rng(1)), X, readout, "relu")
        for s in stds
    ]
    frames = init_figures.signal_frames(stds, runs, 16, "python x.py --naive-std {value}")
    forward, backward = frames["series"].values()
    assert frames["x"] == [1, 2, 3, 4] and len(set(frames["description"])) == 3
    for run, f, b in zip(runs, forward, backward, strict=True):
        np.testing.assert_allclose(f, run["var_z"] / run["var_z"][0])
        np.testing.assert_allclose(b, run["var_grad_h"] / run["var_grad_h"][-1])
        assert f[0] == 1.0 and b[-1] == 1.0
    assert forward[0][-1] < 1 < forward[2][-1]  # n sigma^2 / 2 = 0.08 and 2 per layer


def test_figures_draw_and_describe():
    rng = np.random.default_rng(0)
    X, readout = rng.normal(size=(4, 6)), rng.normal(size=(4, 2))
    labels = {"glorot": "Glorot", "he": "He", "orthogonal": "orthogonal"}
    first = {}
    for act in ("tanh", "relu"):
        for init in labels:
            params = models.init_mlp(
                [6] * 4 + [2], "he" if init == "orthogonal" else init, np.random.default_rng(1)
            )
            run = inits.propagate(params, X, readout, act)
            singular = inits.jacobian_singular_values(params[0:-2:2], [s[0] for s in run["slopes"]])
            first[act, init] = run | {"singular": singular, "sv_spread": 2.0, "sv_zero": 0.5}
    fig, alt = init_figures.variance_figure(first, labels, ["tanh", "relu"], 0)
    assert "seed 0" in alt and len(fig.axes) == 4
    spectrum = [("tanh", "glorot"), ("tanh", "orthogonal"), ("relu", "he"), ("relu", "orthogonal")]
    fig, alt = init_figures.spectrum_figure(first, labels, ["tanh", "relu"], spectrum, 0)
    assert "50% (He)" in alt and len(fig.axes) == 2
