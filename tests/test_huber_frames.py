"""gradlab/huber_frames.py: Huber fits over a sweep of delta, as the frames of an interactive figure."""

import json

import numpy as np
from gradlab import huber_frames, losses, shape, snippet


def data():
    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(-1, 1, size=(2, 20)), axis=1)
    y = 2 * x + 0.5 + 0.3 * rng.normal(size=(2, 20))
    y[:, -2:] -= 6.0
    return x, y, np.arange(20) >= 18


def test_sweep_rows_are_the_fits_of_each_delta_alone():
    x, y, _ = data()
    (slopes, _, norm), (s_slopes, s_intercepts, s_norm) = huber_frames.fit_with_sweep(
        x, y, 1.0, [0.5, 1.0], steps=300
    )
    alone = shape.fit_gradient_descent(lambda r: losses.huber(r, 0.5), x[:1], y[:1], steps=300)
    assert np.array_equal(s_slopes[0], alone[0][0]) and np.array_equal(s_intercepts[0], alone[1][0])
    assert np.array_equal(s_slopes[1], slopes[0]) and slopes.shape == (2,)
    assert norm >= 0 and s_norm >= 0


def test_frames_draw_each_deltas_line_and_the_largest_delta_is_least_squares(tmp_path):
    x, y, is_outlier = data()
    deltas = [0.5, 1.0, 50.0]
    _, sweep = huber_frames.fit_with_sweep(x, y, 1.0, deltas)
    results = snippet.Results("demo", tmp_path)
    least_squares = shape.fit_least_squares(x, y)
    swept = huber_frames.record(
        results, "d", x, y, is_outlier, deltas, sweep, least_squares, (2.0, 0.5), default=1.0, seed=0
    )
    frames = json.loads((tmp_path / "d.frames.json").read_text())
    huber = next(s for s in frames["series"] if s["label"] == "Huber fit")
    assert np.allclose(huber["y"][0], [sweep[1][0] - sweep[0][0], sweep[1][0] + sweep[0][0]], rtol=1e-4)
    assert frames["default"] == 1 and len(set(frames["description"])) == 3
    assert swept["largest_residual"] < 50 and swept["to_least_squares"] < 1e-9
    assert np.all(np.diff(swept["errors"]) != 0)


def test_figure_draws_the_first_rows_points_and_lines_with_each_slope_error_in_its_alt_text(tmp_path):
    x, y, is_outlier = data()
    fits = {"squared": shape.fit_least_squares(x, y), "huber": (np.array([2.1, 2.0]), np.array([0.5, 0.5]))}
    fits["squared_clean"] = shape.fit_least_squares(x[:, ~is_outlier], y[:, ~is_outlier])
    results = snippet.Results("demo", tmp_path)
    huber_frames.figure(results, "fits", x, y, is_outlier, fits, (2.0, 0.5), seed=4, offset=-6.0)
    alt = results.figures["fits"]["alt"]
    assert "Seed 4" in alt and "2 outliers moved by -6" in alt and "Huber: 0.10" in alt
    assert f"squared error: {abs(fits['squared'][0][0] - 2.0):.2f}" in alt
