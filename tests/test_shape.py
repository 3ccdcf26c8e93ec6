"""shape: closed-form logit gradients against the engine, the optimizers' update rules, the
step counter, the grid's best rate, held-out accuracy of a fit, the line fits and their safe rate,
the per-point gradient shares and the two figures."""

import numpy as np
import pytest
from gradlab import engine, losses, ops, optim, shape, snippet


def data(seeds=3, points=50):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(seeds, points))
    return x, (x + 0.3 * rng.normal(size=(seeds, points)) > 0).astype(float)


def test_closed_form_gradients_match_the_engine():
    x, y = data()
    w, b = np.full((3, 1), -4.0), np.full((3, 1), 0.5)
    assert shape.closed_form_error(w, b, x, y) < 1e-12
    z = np.linspace(-30, 30, 61)
    np.testing.assert_allclose(shape.sigmoid(z), 1 / (1 + np.exp(-z)), rtol=1e-15)


def test_mean_loss_matches_the_library_losses():
    x, y = data()
    w, b = np.full((3, 1), 2.0), np.zeros((3, 1))
    for key, f in (
        ("squared", losses.sigmoid_squared_error),
        ("ce", losses.binary_cross_entropy_from_logits),
    ):
        expected = np.mean(f(w * x + b, y), axis=-1, keepdims=True)
        np.testing.assert_allclose(shape.mean_loss(key, w, b, x, y), expected, rtol=1e-12)


def test_minimize_finds_a_stationary_point():
    x, y = data(seeds=1)
    for key in shape.LOSSES:
        theta, value = shape.minimize(key, x[0], y[0])
        gradient = np.array([g.item() for g in shape.mean_gradient(key, *theta, x[0], y[0])])
        assert np.linalg.norm(gradient) < 1e-8
        assert value <= shape.mean_loss(key, theta[0] + 0.1, theta[1], x[0], y[0]).item()


def test_minima_runs_every_row_as_if_alone():
    x, y = data(seeds=4)
    y[2] = np.where(np.arange(y.shape[1]) % 3 == 0, 1 - y[2], y[2])  # a noisier row: other steps
    for key in shape.LOSSES:
        thetas, values = shape.minima(key, x, y)
        for row in range(len(x)):
            theta, value = shape.minima(key, x[row : row + 1], y[row : row + 1])
            np.testing.assert_array_equal(thetas[row], theta[0])
            assert values[row, 0] == value[0, 0]


def test_steps_to_gap_counts_zero_at_the_minimum_and_inf_when_stuck():
    x, y = data(seeds=1)
    _, best = shape.minimize("ce", x[0], y[0])
    steps = shape.steps_to_gap("ce", "gd", np.array([[[1e-12]], [[1.0]]]), -8.0, x, y, np.array([[best]]))
    assert steps.shape == (2, 1)
    assert np.isinf(steps[0, 0]) and np.isfinite(steps[1, 0])  # a rate of 1e-12 never gets there
    steps, at_gap = shape.steps_to_gap(
        "ce", "gd", np.array([[[1e-12]], [[1.0]]]), -8.0, x, y, np.array([[best]]), with_accuracy=True
    )
    assert np.isnan(at_gap[0, 0]) and 0.5 < at_gap[1, 0] <= 1.0  # nan where it never arrives
    np.testing.assert_array_equal(shape.accuracy(np.ones((1, 1)), 0.0, x, x > 0), [[1.0]])


def test_updates_gd_normalized_and_adam():
    params, grads = [np.array([1.0]), np.array([2.0])], [np.array([3e-6]), np.array([4e-6])]
    moved = shape.update("gd", params, grads, 0.5)
    np.testing.assert_allclose(
        [m - p for m, p in zip(moved, params, strict=True)], [[-1.5e-6], [-2e-6]], rtol=1e-9
    )
    moved = shape.update("normalized", params, grads, 0.5)  # a step of length lr, whatever |g|
    np.testing.assert_allclose(
        [m - p for m, p in zip(moved, params, strict=True)], [[-0.3], [-0.4]], rtol=1e-12
    )
    adam, grads = optim.Adam(params, lr=0.5), [np.array([3.0]), np.array([-4.0])]
    moved = shape.update("adam", params, grads, 0.5, adam)  # first Adam step: lr * sign(g)
    np.testing.assert_allclose(
        [m - p for m, p in zip(moved, params, strict=True)], [[-0.5], [0.5]], rtol=1e-6
    )
    with pytest.raises(ValueError):
        shape.update("sgd", params, grads, 0.5)
    x, y = data(seeds=1)
    with pytest.raises(ValueError):
        shape.steps_to_gap("squared", "sgd", 1.0, -8.0, x, y, np.zeros((1, 1)))


def test_best_learning_rate_minimizes_the_worst_seed_and_prefers_the_smaller_rate():
    steps = np.array([[5.0, 50.0], [9.0, 9.0], [9.0, 9.0], [np.inf, 1.0]])
    lr, row = shape.best_learning_rate(steps, np.array([0.1, 1.0, 10.0, 100.0]))
    assert lr == 1.0 and list(row) == [9.0, 9.0]


def test_line_fits_recover_a_line():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (2, 30))
    y = 2.0 * x + 0.5
    np.testing.assert_allclose(shape.fit_least_squares(x, y), [[2.0, 2.0], [0.5, 0.5]], atol=1e-12)
    slope, intercept, grad_norm = shape.fit_gradient_descent(losses.huber, x, y, steps=3000)
    np.testing.assert_allclose(slope, 2.0, atol=1e-6)
    np.testing.assert_allclose(intercept, 0.5, atol=1e-6)
    assert grad_norm < 1e-6


def test_safe_rate_is_lr_near_unit_curvature_and_makes_gradient_descent_converge_far_out():
    x = np.stack([np.linspace(-1, 1, 20), np.r_[np.linspace(-1, 1, 17), 5.0, 5.0, 5.0]])
    rates = shape.safe_rate(x)
    for row, rate in zip(x, rates[:, 0], strict=True):
        design = np.stack([row, np.ones_like(row)])
        largest = np.linalg.eigvalsh(design @ design.T / row.size).max()
        np.testing.assert_allclose(rate, min(1.0, 1.5 / largest), rtol=1e-12)
    assert rates[0, 0] == 1.0 and rates[1, 0] < 1.0  # the second row's lever x = 5 needs a smaller rate
    y = 2.0 * x + 0.5
    y[1, -3:] -= 8.0
    _, _, grad_norm = shape.fit_gradient_descent(losses.huber, x, y)
    assert grad_norm < 1e-10  # at rate 1 the second row diverges: its curvature bound is above 2


def test_fitted_accuracy_scores_each_rows_own_fit_on_other_points():
    x, y = data()
    x_test, y_test = data(points=400)
    for key in shape.LOSSES:
        theta, _ = shape.minima(key, x, y)
        expected = shape.accuracy(theta[:, :1], theta[:, 1:], x_test, y_test)[:, 0]
        np.testing.assert_array_equal(shape.fitted_accuracy(key, x, y, x_test, y_test), expected)
    assert np.all(shape.fitted_accuracy("ce", x, 1 - y, x_test, y_test) < 0.2)  # every label wrong


def test_figures_are_saved_with_alt_text(tmp_path):
    results = snippet.Results("demo", tmp_path)
    programs = {"squared": losses.sigmoid_squared_error, "ce": losses.binary_cross_entropy_from_logits}
    shape.logit_gradient_figure(results, "logits", programs, np.linspace(-5, 5, 11), -2.0)
    grids = {("gd", "ce"): np.array([[3.0, 4.0], [np.inf, 2.0]])}
    shape.tuning_figure(results, "tuning", [0.1, 1.0], grids, 2000)
    assert {"logits", "tuning"} <= set(results.figures)
    assert all((tmp_path / f"{key}.svg").exists() for key in ("logits", "tuning"))


def test_per_point_norms_are_each_points_own_gradient_and_shares_sum_to_one():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(2, 7)), rng.normal(size=(2, 7))
    slopes, intercepts = np.array([0.3, -1.0]), np.array([0.1, 0.2])
    norms = shape.per_point_gradient_norms(losses.squared_error, slopes, intercepts, x, y)
    residual = slopes[:, None] * x + intercepts[:, None] - y
    np.testing.assert_allclose(norms, np.abs(residual) * np.hypot(x, 1.0), rtol=1e-12)
    mask = np.arange(7) < 3
    np.testing.assert_allclose(shape.share(norms, mask) + shape.share(norms, ~mask), 1.0, rtol=1e-12)
    (g,) = engine.grad(lambda p: ops.sum(losses.squared_error(p[0] * x[0] - y[0])), [np.full(7, 0.3)])
    np.testing.assert_allclose(np.abs(g), np.abs(0.3 * x[0] - y[0]) * np.abs(x[0]), rtol=1e-12)


def leverage_data(seeds=(1, 2, 3), points=40, outliers=3):
    """The chapter's line with --outlier-x 5: outliers at x = 5, moved by -8 in y."""
    x, y = [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        xi = np.sort(rng.uniform(-1, 1, points))
        xi[-outliers:] = 5.0
        x.append(xi)
        y.append(
            2.0 * xi + 0.5 + 0.3 * rng.normal(size=points) - 8.0 * (np.arange(points) >= points - outliers)
        )
    return np.array(x), np.array(y)


def test_least_median_of_squares_ignores_leverage_outliers_and_passes_through_two_points():
    x, y = leverage_data()
    slopes, intercepts, scales = shape.least_median_of_squares(x, y)
    assert np.all(np.abs(slopes - 2.0) < 0.5) and np.all(np.abs(intercepts - 0.5) < 0.3)
    assert np.all((scales > 0.1) & (scales < 0.6))  # about the noise's 0.3
    residuals = slopes[:, None] * x + intercepts[:, None] - y
    assert np.all(np.sum(np.abs(residuals) < 1e-9, axis=1) >= 2)  # an elemental fit: through two points


def test_biweight_fit_depends_on_its_start():
    x, y = leverage_data()  # seeds on which the start decides
    *line, scales = shape.least_median_of_squares(x, y)
    good = shape.biweight_fit(x, y, line, scales)
    bad = shape.biweight_fit(x, y, shape.fit_least_squares(x, y), scales)
    assert np.all(np.abs(good[0] - 2.0) < 0.2)
    assert np.all(np.abs(bad[0] - 2.0) > 1.0)  # from least squares the leverage points look like inliers
    clean_x, clean_y = x[:, :-3], y[:, :-3]  # a huge scale: every weight near 1, the least-squares fit
    wide = shape.biweight_fit(clean_x, clean_y, (np.zeros(3), np.zeros(3)), np.full(3, 1e6))
    np.testing.assert_allclose(wide, shape.fit_least_squares(clean_x, clean_y), rtol=1e-6)


def test_flip_price_matches_fitted_accuracy_on_one_draw():
    price = shape.flip_price([7], 0.1, draws=2, points=50, test_points=500)
    rng = np.random.default_rng([7, 1])  # the second data set, drawn as flip_price draws it
    x, noise = rng.normal(size=50), rng.normal(size=50)
    y = (x + 0.3 * noise > 0).astype(float)
    y_noisy = np.where(rng.random(50) < 0.1, 1 - y, y)
    x_test, noise_test = rng.normal(size=500), rng.normal(size=500)
    y_test = (x_test + 0.3 * noise_test > 0).astype(float)
    ce, squared = (
        shape.fitted_accuracy(key, x[None], y_noisy[None], x_test[None], y_test[None])
        for key in ("ce", "squared")
    )
    assert price.shape == (2,) and price[1] == (ce - squared)[0]


def test_record_price_records_mean_and_standard_error(tmp_path):
    results = snippet.Results("demo", tmp_path)
    values = shape.record_price(results, [0], 0.2, draws=4, points=50, test_points=200)
    price = 100 * shape.flip_price([0], 0.2, draws=4, points=50, test_points=200)
    assert values["draws"] == 4 and np.isclose(values["mean"], price.mean())
    assert np.isclose(values["se"], price.std(ddof=1) / 2)
    assert results.numbers["price_mean"]["value"] == values["mean"]
