"""Huber's threshold delta as the parameter of an interactive figure: the fitted line, frame by frame.

`fit_with_sweep` fits the Huber loss by gradient descent on every row of the data at the chapter's
delta and, in the same vectorized run, on the first row at every delta of a sweep (one set of
gradient-descent steps for both, so the sweep costs little). `record` turns the sweep into the
frames of `Results.frames`: the Huber line against the least-squares line and the true line.
"""

import matplotlib.pyplot as plt
import numpy as np

from . import losses, plot, shape


def fit_with_sweep(x, y, delta, deltas, **options):
    """Huber fits by `shape.fit_gradient_descent`: ((slopes, intercepts, largest final gradient
    norm) over the rows of x, y at `delta`; (slopes, intercepts, largest final gradient norm) of the
    first row at each of `deltas`)."""
    rows = len(x)
    every = np.concatenate([np.full(rows, float(delta)), np.asarray(deltas, dtype=float)])[:, None]
    xs = np.concatenate([x, np.repeat(x[:1], len(deltas), axis=0)])
    ys = np.concatenate([y, np.repeat(y[:1], len(deltas), axis=0)])
    slopes, intercepts, _ = shape.fit_gradient_descent(lambda r: losses.huber(r, every), xs, ys, **options)
    norms = np.hypot(*shape_gradient(xs, ys, slopes, intercepts, every))
    main = (slopes[:rows], intercepts[:rows], float(norms[:rows].max()))
    return main, (slopes[rows:], intercepts[rows:], float(norms[rows:].max()))


def shape_gradient(x, y, slopes, intercepts, deltas):
    """The gradient of the mean Huber loss (threshold per row) w.r.t. (slope, intercept), per row."""
    residual = slopes[:, None] * x + intercepts[:, None] - y
    pull = np.clip(residual, -deltas, deltas)
    return (pull * x).mean(axis=1), pull.mean(axis=1)


def record(results, key, x, y, is_outlier, deltas, sweep, least_squares, truth, *, default, seed):
    """Frames ``key`` over ``deltas`` for the first row of x, y: the Huber line of each delta
    (``sweep`` = slopes, intercepts, final gradient norm) against the least-squares line and the
    true line (``(slopes, intercepts)`` per row, and ``(slope, intercept)``) on x in [-1, 1];
    ``seed`` is the snippet's ``--seed``, whose first seed's figure each frame reproduces.
    Returns the numbers behind the sentences: the slope errors, the outliers' shares at each fit,
    and how the largest delta's fit compares with least squares."""
    deltas = np.asarray(deltas, dtype=float)
    slopes, intercepts, grad_norm = sweep
    rows = np.repeat(x[:1], len(deltas), axis=0), np.repeat(y[:1], len(deltas), axis=0)
    norms = shape.per_point_gradient_norms(
        lambda r: losses.huber(r, deltas[:, None]), slopes, intercepts, *rows
    )
    shares = shape.share(norms, is_outlier)
    ls_slope, ls_intercept = least_squares[0][0], least_squares[1][0]
    errors = np.abs(slopes - truth[0])
    grid = [-1.0, 1.0]

    def line(slope, intercept):
        return [slope * g + intercept for g in grid]

    results.frames(
        key,
        parameter="Huber threshold δ",
        values=[float(d) for d in deltas],
        default=default,
        x=grid,
        series={
            "Huber fit": [line(a, b) for a, b in zip(slopes, intercepts, strict=True)],
            "squared-error fit": [line(ls_slope, ls_intercept)] * len(deltas),
            "true line": [line(*truth)] * len(deltas),
        },
        description=[
            f"δ = {d:g}: the Huber line's slope misses the true slope by {e:.3f} (least squares: "
            f"{abs(ls_slope - truth[0]):.3f}); the outliers own {s:.1%} of the summed per-point "
            "gradient norms at its fit"
            for d, e, s in zip(deltas, errors, shares, strict=True)
        ],
        command=f"python snippets/loss_shape.py --delta {{value}} --seed {seed}",  # the first seed
        title="The Huber fit as its threshold δ grows (one seed)",
        xlabel="x",
        ylabel="fitted y",
    )
    largest_residual = np.abs(ls_slope * x[0] + ls_intercept - y[0]).max()
    results.number("sweep_largest_residual", largest_residual, "first seed: largest |r_i| of least squares")
    results.number("sweep_grad_norm", grad_norm, "δ sweep: largest final gradient norm", atol=1e-8)
    return {
        "errors": errors,
        "shares": shares,
        "squared_error": abs(ls_slope - truth[0]),
        "largest_residual": largest_residual,
        "to_least_squares": abs(slopes[-1] - ls_slope),
        "grad_norm": grad_norm,
    }


def figure(results, key, x, y, is_outlier, fits, truth, *, seed, offset):
    """Figure ``key``: the first row's points, its outliers and the first row's line of each fit in
    ``fits`` (name -> (slopes, intercepts); the names "squared", "huber", "squared_clean") against the
    true line ``truth`` = (slope, intercept); ``seed`` is that row's seed, ``offset`` the outliers' shift."""
    fig, ax = plt.subplots()
    # hollow markers: in the dark theme the data's sky blue is close to the squared-error line's blue
    ax.plot(x[0, ~is_outlier], y[0, ~is_outlier], "o", color=plot.PALETTE[5], mfc="none", ms=4, label="data")
    ax.plot(
        x[0, is_outlier], y[0, is_outlier], "x", color=plot.PALETTE[3], markersize=7, mew=2, label="outliers"
    )
    grid = np.array([-1.0, 1.0])
    labels = {"squared": "squared error", "huber": "Huber", "squared_clean": "squared error, no outliers"}
    for (name, (slope, intercept)), style, color in zip(fits.items(), "--:", plot.PALETTE[:3], strict=True):
        ax.plot(grid, slope[0] * grid + intercept[0], style, color=color, label=labels[name])
    ax.plot(grid, truth[0] * grid + truth[1], color=plot.PALETTE[4], lw=1, label="true line")
    outliers = int(is_outlier.sum())
    ax.set(title=f"{outliers} outliers tilt the squared-error fit (seed {seed})", xlabel="x", ylabel="y")
    ax.legend(loc="lower left")
    errors = "; ".join(f"{labels[name]}: {abs(fit[0][0] - truth[0]):.2f}" for name, fit in fits.items())
    results.figure(
        fig,
        key,
        alt=f"Seed {seed}: noisy points along a line and {outliers} outliers moved by {offset:g} in y at the "
        f"right end. Slope error of each fitted line: {errors}.",
    )
