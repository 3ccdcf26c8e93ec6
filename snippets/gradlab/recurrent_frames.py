"""A tanh RNN's Jacobian norm through time as the frames of an interactive figure over sigma_max.

Each frame is ||dh_t/dh_0||_2 for t = 1..T (`recurrent.jacobian_summary`), the median over the
nets (seeds) at every step, for each input drive; the nets are `recurrent.draw_network` draws.
"""

import numpy as np

from . import recurrent as rec


def sigma_sweep(results, key, nets, values, drives, *, default, command, every=2, measured=None):
    """Record frames ``key`` over sigma_max = ``values`` for the drives ``{prefix: input scale}``
    (the first is the strong drive); the curves show every ``every``-th step, and only those
    steps' norms are computed. ``measured``: ``{(prefix, value): rec.per_seed(nets,
    rec.jacobian_summary, value, scale, None, every)}`` the caller has already computed, reused
    instead of recomputed. Returns ``{prefix: array [value, net]}`` of ||dh_T/dh_0|| after the
    last step T."""
    measured = measured or {}

    def runs_at(d, v):
        return measured.get((d, v)) or rec.per_seed(nets, rec.jacobian_summary, v, drives[d], None, every)

    runs = {d: [runs_at(d, v) for v in values] for d in drives}
    shown_norms = [np.array(r["norms"])[:, every - 1 :: every] for d in drives for r in runs[d]]
    if not all(np.isfinite(n).all() for n in shown_norms):
        raise ValueError(f"sigma_sweep: a measured run lacks the norm at a shown step (every {every})")
    ends = {d: np.array([r["norm"] for r in runs[d]], dtype=float) for d in drives}
    curves = {d: [np.median(np.array(r["norms"], dtype=float), axis=0) for r in runs[d]] for d in drives}
    steps = len(curves[next(iter(drives))][0])
    shown = np.arange(1, steps + 1)[every - 1 :: every]
    median = {d: np.median(ends[d], axis=1) for d in drives}
    results.frames(
        key,
        parameter="σ_max",
        values=values,
        default=default,
        x=shown,
        series={f"input scale {x:g}": [c[every - 1 :: every] for c in curves[d]] for d, x in drives.items()},
        description=[
            f"σ_max {v:g}: after {steps} steps ||dh_T/dh_0|| is "
            + " and ".join(f"{median[d][i]:.1e} at input scale {x:g}" for d, x in drives.items())
            + f" (median of {len(nets)} seeds)"
            for i, v in enumerate(values)
        ],
        command=command,
        title=f"tanh RNN: Jacobian norm through time (median of {len(nets)} seeds)",
        xlabel="time steps T",
        ylabel="||dh_T/dh_0||",
        yscale="log",
        hlines=[(1.0, "1")],
    )
    return ends
