"""gradlab/recurrent_frames.py: the sigma_max sweep of a tanh RNN's Jacobian norm as frames."""

import json

import numpy as np
from gradlab import recurrent as rec
from gradlab import recurrent_frames, snippet


def test_frames_are_the_median_jacobian_norms_and_the_ends_every_seed(tmp_path):
    nets = [rec.draw_network(seed, 6, 2, 10) for seed in range(3)]
    results = snippet.Results("demo", tmp_path)
    values, drives = [0.5, 1.0, 2.0], {"": 1.0, "weak_": 0.01}
    ends = recurrent_frames.sigma_sweep(
        results, "s", nets, values, drives, default=1.0, command="run {value}"
    )
    frames = json.loads((tmp_path / "s.frames.json").read_text())
    direct = [rec.jacobian_summary(net, 2.0, 0.01)["norms"] for net in nets]
    assert ends["weak_"].shape == (3, 3)
    assert np.allclose(ends["weak_"][2], [d[-1] for d in direct])
    assert frames["x"] == [2, 4, 6, 8, 10] and frames["default"] == 1
    assert np.allclose(frames["series"][1]["y"][2], np.median(direct, axis=0)[1::2], rtol=1e-4)
    assert frames["command"] == ["run 0.5", "run 1", "run 2"]
    assert f"{np.median(ends['weak_'][2]):.1e} at input scale 0.01" in frames["description"][2]


def test_measured_runs_are_reused_not_recomputed(tmp_path):
    nets = [rec.draw_network(seed, 6, 2, 10) for seed in range(2)]
    drives = {"": 1.0, "weak_": 0.01}
    fresh = recurrent_frames.sigma_sweep(
        snippet.Results("a", tmp_path / "a"), "s", nets, [0.5, 2.0], drives, default=2.0, command="{value}"
    )
    known = rec.per_seed(nets, rec.jacobian_summary, 2.0, 0.01)
    marked = known | {"norm": [7.0, 7.0]}  # a marker: only a reused run can carry it
    reused = recurrent_frames.sigma_sweep(
        snippet.Results("b", tmp_path / "b"), "s", nets, [0.5, 2.0], drives, default=2.0, command="{value}",
        measured={("weak_", 2.0): marked},
    )  # fmt: skip
    assert np.array_equal(reused[""], fresh[""]) and np.array_equal(reused["weak_"][0], fresh["weak_"][0])
    assert np.array_equal(fresh["weak_"][1], known["norm"]) and list(reused["weak_"][1]) == [7.0, 7.0]
