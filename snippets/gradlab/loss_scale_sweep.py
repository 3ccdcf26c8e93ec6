"""The frames of precision.py's interactive figure: what a loss scale S does to each layer's
float16 weight gradient (zero entries, entries lifted above the smallest normal, overflow).

``frames(runs, ref, scales, seed)`` takes the scaled float16 gradients of one network at every
scale (``runs[i]`` = [S dL/dW_1, S dL/db_1, ...] at ``scales[i]``, as
``scaling.mlp_scaled_grads`` returns them), the float64 reference gradients ``ref`` and returns
the keyword arguments of ``Results.frames``.
"""

import numpy as np

SMALLEST_NORMAL = float(np.finfo(np.float16).smallest_normal)


def layer_shares(grads, ref, scale):
    """Per weight matrix: (share zero where ref is not, share of |g| >= smallest normal, share inf/NaN)."""
    zero, normal, bad = [], [], []
    for g, r in zip(grads[0::2], ref[0::2], strict=True):
        g = np.asarray(g, dtype=np.float64)
        finite = np.isfinite(g)
        zero.append(float(np.mean((g == 0) & (r != 0))))
        normal.append(float(np.mean(finite & (np.abs(g) >= SMALLEST_NORMAL))))
        bad.append(float(np.mean(~finite)))
    return zero, normal, bad


def frames(runs, ref, scales, seed):
    """Keyword arguments for ``Results.frames``: one frame per scale, x = weight matrix 1..L."""
    exponents = [int(np.rint(np.log2(s))) for s in scales]
    shares = [layer_shares(grads, ref, s) for grads, s in zip(runs, scales, strict=True)]
    layers = len(shares[0][0])
    descriptions = []
    for k, (zero, normal, bad) in zip(exponents, shares, strict=True):
        overflow = (
            f"; {np.mean(bad):.1%} of all weight-gradient entries overflow to inf or NaN" if max(bad) else ""
        )
        descriptions.append(
            f"S = 2^{k}: in float16, {zero[0]:.0%} of layer 1's weight-gradient entries are zero and "
            f"{normal[0]:.0%} above the smallest normal; layer {layers}'s: {zero[-1]:.0%} zero, "
            f"{normal[-1]:.0%} normal{overflow}."
        )
    return dict(
        parameter="log2 of the loss scale S",
        values=exponents,
        default=0,
        x=list(range(1, layers + 1)),
        series={
            "zero, non-zero in float64": [z for z, _, _ in shares],
            "at or above the smallest normal": [n for _, n, _ in shares],
            "inf or NaN (overflow)": [b for _, _, b in shares],
        },
        description=descriptions,
        command=f"python snippets/precision.py --seed {seed}  # computes every S = 2^0 .. 2^{exponents[-1]}",
        title=f"float16 weight gradients scaled by S, per layer (seed {seed})",
        xlabel="weight matrix (1 = nearest the input)",
        ylabel="share of the matrix's entries",
        value_format="d",
    )
