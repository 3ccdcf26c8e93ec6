"""Convergence curves on the quadratic f(x) = x^T diag(1, kappa) x / 2 over a sweep of kappa.

For the interactive figure of docs/small-gradients.md: at each condition number kappa, the
gradient norm per iteration of the three methods `snippets/ill_conditioning.py --kappa K` runs on
the quadratic from x0 = (sqrt(kappa), 1): gradient descent with the best fixed step
2 / (1 + kappa), the heavy ball with Polyak's parameters, and BFGS with the strong-Wolfe search.
The two fixed-step methods take grad f = A x directly (as the snippet's sweep does); BFGS gets
f and grad f from the engine's reverse mode.
"""

import numpy as np

from gradlab import optim


def fixed_step_norms(kappa, lr, beta, gtol, max_iter):
    """||grad f|| at iterations 0, 1, ... of x_{k+1} = x_k - lr A x_k + beta (x_k - x_{k-1}),
    until ||grad f|| <= gtol, a non-finite x, or max_iter steps (as `optim._run` stops)."""
    A = np.array([1.0, kappa])
    x = previous = np.array([np.sqrt(kappa), 1.0])
    norms = [float(np.linalg.norm(A * x))]
    for _ in range(max_iter):
        if norms[-1] <= gtol or not np.all(np.isfinite(x)):
            break
        x, previous = x - lr * (A * x) + beta * (x - previous), x
        norms.append(float(np.linalg.norm(A * x)))
    return norms


def curves(kappa, gtol, max_iter):
    """{method: ||grad f|| per iteration} for the fixed step, the heavy ball and BFGS."""
    A = np.diag([1.0, kappa])
    fun = optim.reverse_mode(lambda params: 0.5 * (params[0] @ (A @ params[0])))
    bfgs = optim.bfgs(fun, np.array([np.sqrt(kappa), 1.0]), gtol=gtol, max_iter=max_iter)
    return {
        "gradient descent, best fixed step": fixed_step_norms(kappa, 2 / (1 + kappa), 0.0, gtol, max_iter),
        "heavy ball, Polyak's parameters": fixed_step_norms(
            kappa, *optim.heavy_ball_parameters(1.0, kappa), gtol, max_iter
        ),
        "BFGS + Wolfe search": list(bfgs.grad_norms),
    }


def sample(norms, at):
    """norms[k - 1] for each k in ``at`` (iteration + 1), None after the run ended."""
    return [norms[k - 1] if k - 1 < len(norms) else None for k in at]


KAPPAS = (10, 30, 100, 300, 1000, 3000, 10000)  # the slider's stops (and the page's kappa)


def record(results, default, gtol, max_iter, table):
    """Record the sweep as ``results.frames("kappa_sweep", ...)``, and claim that the frame at
    ``default`` shows the iteration counts ``table`` ({"gd", "heavy_ball", "bfgs": count}) of the
    snippet's own runs at that kappa. Returns {kappa: {method: iterations}}."""
    kappas = sorted({*KAPPAS, default})
    at = sorted({int(k) for k in np.geomspace(1, max_iter + 1, 60)})  # iteration + 1, log-spaced
    runs = {float(k): curves(k, gtol, max_iter) for k in kappas}
    series = {m: [sample(run[m], at) for run in runs.values()] for m in next(iter(runs.values()))}
    counts = {k: {m: len(norms) - 1 for m, norms in run.items()} for k, run in runs.items()}
    description = []
    for k, count in counts.items():
        gd, hb, bfgs = count.values()
        capped = " (the cap)" if gd == max_iter else ""
        description.append(
            f"kappa {k:g}: to |grad f| <= {gtol:g}, the best fixed step takes {gd:,} iterations{capped}, "
            f"the heavy ball {hb:,}, BFGS {bfgs}."
        )
    results.frames(
        "kappa_sweep",
        parameter="condition number kappa",
        values=[float(k) for k in kappas],
        default=float(default),
        x=at,
        series=series,
        description=description,
        command="python snippets/ill_conditioning.py --kappa {value}",
        title="The same gradients, three optimizers, as the valley narrows",
        xlabel="iteration + 1 (log scale)",
        ylabel="|grad f| (log scale)",
        xscale="log",
        yscale="log",
        hlines=[(gtol, "tolerance")],
    )
    shown = list(counts[float(default)].values())
    holds = shown == [table["gd"], table["heavy_ball"], table["bfgs"]]
    claim = "the slider's frame at the page's kappa shows the table's iteration counts on the quadratic"
    results.claim("sweep_frame_matches_table", holds, claim, {"frame": shown, "table": table})
    first, last = counts[float(kappas[0])], counts[float(kappas[-1])]
    bfgs = max(count["BFGS + Wolfe search"] for count in counts.values())
    gd = [first["gradient descent, best fixed step"], last["gradient descent, best fixed step"]]
    results.number("sweep_frames_gd_first", gd[0], "slider: fixed-step iterations at the smallest kappa")
    results.number("sweep_frames_bfgs_max", bfgs, "slider: most BFGS iterations over the sweep")
    claim = "over the slider's sweep the fixed step's count rises to the cap while BFGS never needs over 10"
    results.claim(
        "sweep_bfgs_flat", gd[1] == max_iter > gd[0] and bfgs <= 10, claim, {"gd": gd, "bfgs": bfgs}
    )
    return counts
