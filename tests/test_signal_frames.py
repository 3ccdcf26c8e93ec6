"""gradlab/signal_frames.py: the backward signal per layer as frames over depth."""

import json

import numpy as np
from gradlab import backward_signal, models, signal_frames, snippet


def draw(depth):
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(8, 2)), rng.normal(size=(8, 1))
    return X, y, models.init_mlp([2] + [5] * depth + [1], 1.0, rng)


def test_each_frame_is_the_layer_report_of_that_depths_draw(tmp_path):
    setups = {"g": ("sigmoid, Glorot", "sigmoid", "glorot", 1), "r": ("ReLU, He", "relu", "he", 1)}
    results = snippet.Results("demo", tmp_path)
    ends = signal_frames.depth_sweep(
        results, "d", draw, [2, 4], setups, ["g"], default=4, command="x {value}"
    )
    frames = json.loads((tmp_path / "d.frames.json").read_text())
    X, y, unit = draw(4)
    signal = backward_signal.layer_report(backward_signal.rescaled(unit, "glorot"), X, y, "sigmoid")["signal"]
    assert np.allclose(frames["series"][0]["y"][1], np.array(signal) / signal[-1], rtol=1e-4)
    assert [s["label"] for s in frames["series"]] == ["sigmoid, Glorot"] and list(ends) == ["g"]
    assert frames["x_frames"] == [[1, 2], [1, 2, 3, 4]] and frames["default"] == 1
    assert f"{ends['g'][1]:.2g} (sigmoid, Glorot)" in frames["description"][1]
