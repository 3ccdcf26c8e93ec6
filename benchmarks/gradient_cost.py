"""Gradient cost benchmark: one reverse-mode gradient against one forward pass and central differences.

Run with ``.venv/bin/python benchmarks/gradient_cost.py``. Times an MLP of sizes 256-256-256-64
(tanh, squared error, a batch of 64) with ``time.perf_counter``, median of a few repeats:

* one forward pass on plain numpy arrays (``gradlab.ops``, no graph);
* one forward pass building the reverse-mode graph (``gradlab.engine.Tensor``), without backward;
* one gradient by reverse mode (``gradlab.engine.value_and_grad``: graph, then backward);
* central differences on a few hundred coordinates, extrapolated to all n (2 evaluations each).

Prints a table; asserts nothing. The cheap-gradient principle says gradient / forward is a small
constant independent of n; the flop count of this engine predicts about 2 here, where the input
batch needs no gradient (3 if it did).

Then gradlab's gradient of a 784-128-128-10 MLP (tanh, squared error, a batch of 256) against the
same gradient written by hand in numpy (one line per product of the backward pass), timed two
ways: in blocks (all gradlab runs, then all numpy runs) and alternately (gradlab, numpy, gradlab,
...), so that a drift in the machine's speed hits both. On a shared machine the minimum of the
repeats is the steadiest estimate of the work itself; medians are printed beside it.
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


def hand_written_gradient(params, X, y):
    """The MLP's loss and gradient by hand: the forward pass keeps z and h, the backward pass is
    the chain rule written out (dL/dW_l = h_{l-1}^T dL/dz_l, dL/dh_{l-1} = dL/dz_l W_l^T)."""
    weights, biases = params[0::2], params[1::2]
    hs = [X]
    for W, b in zip(weights[:-1], biases[:-1], strict=True):
        hs.append(np.tanh(hs[-1] @ W + b))
    error = hs[-1] @ weights[-1] + biases[-1] - y
    grad_z = 2 * error / error.size
    grads = []
    for layer in reversed(range(len(weights))):
        grads[:0] = [hs[layer].T @ grad_z, grad_z.sum(axis=0)]
        if layer:  # the input X needs no gradient
            grad_z = (grad_z @ weights[layer].T) * (1 - hs[layer] ** 2)
    return float(np.mean(error**2)), grads


def against_hand_written(sizes=(784, 128, 128, 10), batch=256, repeats=41):
    """Times of gradlab's value_and_grad and the hand-written gradient, in blocks and alternated."""
    rng = np.random.default_rng(0)
    params = models.init_mlp(list(sizes), "glorot", rng)
    X, y = rng.normal(size=(batch, sizes[0])), rng.normal(size=(batch, sizes[-1]))

    def gradlab():
        return engine.value_and_grad(lambda p: ops.mean((models.mlp(p, X) - y) ** 2), params)

    def by_hand():
        return hand_written_gradient(params, X, y)

    (value, grads), (value_hand, grads_hand) = gradlab(), by_hand()
    worst = max(float(np.max(np.abs(a - b))) for a, b in zip(grads, grads_hand, strict=True))
    assert abs(value - value_hand) <= 1e-12 * value and worst <= 1e-12, "not the same gradient"

    def once(function):
        start = time.perf_counter()
        function()
        return time.perf_counter() - start

    for _ in range(3):  # warm up caches and the allocator
        gradlab(), by_hand()
    blocks = [once(gradlab) for _ in range(repeats)], [once(by_hand) for _ in range(repeats)]
    alternated = ([], [])
    for _ in range(repeats):
        alternated[0].append(once(gradlab))
        alternated[1].append(once(by_hand))
    with flops.counting() as counted:
        gradlab()

    print(
        f"\nMLP {'-'.join(map(str, sizes))}, tanh, batch {batch}: gradlab against hand-written numpy backprop"
    )
    print(f"(same gradient to {worst:.1e}; {repeats} runs each; gradlab's flop count: {counted.total:,})")
    print(f"{'':<24} {'gradlab ms':>11} {'by hand ms':>11} {'ratio (min)':>12} {'ratio (median)':>15}")
    for name, (ours, theirs) in (("in blocks", blocks), ("alternated", alternated)):
        print(
            f"{name:<24} {min(ours) * 1e3:11.2f} {min(theirs) * 1e3:11.2f} {min(ours) / min(theirs):12.3f}"
            f" {statistics.median(ours) / statistics.median(theirs):15.3f}"
        )


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
    against_hand_written()


if __name__ == "__main__":
    main()
