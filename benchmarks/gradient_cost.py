"""Gradient cost benchmark: one reverse-mode gradient against one forward pass and central differences.

Run with ``.venv/bin/python benchmarks/gradient_cost.py``. Times an MLP of sizes 256-256-256-64
(tanh, squared error, a batch of 64) with ``time.perf_counter``, median of a few repeats:

* one forward pass on plain numpy arrays (``gradlab.ops``, no graph);
* one forward pass building the reverse-mode graph (``gradlab.engine.Tensor``), without backward;
* one gradient by reverse mode (``gradlab.engine.value_and_grad``: graph, then backward);
* central differences on a few hundred coordinates, extrapolated to all n (2 evaluations each).

Prints a table; asserts nothing. The cheap-gradient principle says gradient / forward is a small
constant independent of n; the flop count of this engine predicts about 3.
"""

import os
import statistics
import sys
import time
from pathlib import Path

# One BLAS thread unless told otherwise: timings of small matmuls are steadier, and the ratios
# compare like with like. Set OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) to override.
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "snippets"))
from gradlab import engine, flops, models, ops  # noqa: E402

SIZES = [256, 256, 256, 64]
BATCH = 64
REPEATS = 21
COORDINATES = 300  # central differences actually timed; the rest is extrapolated


def median_seconds(function, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    params = models.init_mlp(SIZES, "glorot", rng)
    X = rng.normal(size=(BATCH, SIZES[0]))
    y = rng.normal(size=(BATCH, SIZES[-1]))
    n = sum(p.size for p in params)

    def loss(params):
        return ops.mean((models.mlp(params, X) - y) ** 2)

    def graph_only():
        return loss([engine.Tensor(p) for p in params])

    forward_time = median_seconds(lambda: loss(params))
    graph_time = median_seconds(graph_only)
    gradient_time = median_seconds(lambda: engine.value_and_grad(loss, params))

    # Central differences: time COORDINATES coordinates of the first weight matrix, 2 evaluations each.
    W = params[0]
    step = np.finfo(np.float64).eps ** (1 / 3)

    def some_central_differences():
        for k in range(COORDINATES):
            original = W.flat[k]
            W.flat[k] = original + step
            plus = loss(params)
            W.flat[k] = original - step
            minus = loss(params)
            W.flat[k] = original
            _ = (plus - minus) / (2 * step)

    central_time = median_seconds(some_central_differences, repeats=3) * n / COORDINATES

    with flops.counting() as one:
        loss(params)
    with flops.counting() as reverse:
        engine.value_and_grad(loss, params)

    print(f"MLP {'-'.join(map(str, SIZES))}, tanh, batch {BATCH}: n = {n:,} parameters")
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    print(
        f"median of {REPEATS} runs, {threads} BLAS thread(s); central differences: "
        f"3 runs of {COORDINATES} coordinates\n"
    )
    rows = [
        ("forward pass, numpy (no graph)", forward_time, 1.0),
        ("forward pass, building the graph", graph_time, graph_time / forward_time),
        ("gradient, reverse mode", gradient_time, gradient_time / forward_time),
        (
            f"gradient, central diff. (extrapolated from {COORDINATES})",
            central_time,
            central_time / forward_time,
        ),
    ]
    for name, seconds, ratio in rows:
        print(f"{name:<52} {seconds * 1e3:12.2f} ms  {ratio:12.1f} x forward")
    print()
    print(f"{'flops: reverse-mode gradient / forward pass':<52} {reverse.total / one.total:12.2f}")
    print(f"{'time: backward part / forward pass':<52} {(gradient_time - graph_time) / forward_time:12.2f}")
    print(f"{'time: central differences / reverse mode':<52} {central_time / gradient_time:12.0f}")


if __name__ == "__main__":
    main()
