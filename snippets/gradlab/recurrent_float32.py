"""A tanh RNN's forward pass in float32 beside float64: how far the precision most training uses
ends from the float64 state, and the float32 spacing of the loss.

The network and its draws are `recurrent`'s; every operation here (products, sums, `np.tanh`)
runs in float32, so the result depends on the float32 `tanh` of the machine's math library.
"""

import numpy as np

from . import recurrent as rec


def float32_gap(net, W, input_scale):
    """{"float32_gap": max |h_T(float32) - h_T(float64)|, "loss_spacing_float32": the float32
    spacing at L = v^T h_T} for `recurrent.unpack(net, W, input_scale)`."""
    params, xs, h0, v = rec.unpack(net, W, input_scale)
    h, (W_hh, W_xh, b) = h0.astype(np.float32), (p.astype(np.float32) for p in params)
    for x in xs.astype(np.float32):
        h = np.tanh(W_hh @ h + W_xh @ x + b)
    h_T = rec.states(*params, xs, h0)[-1]
    return {
        "float32_gap": float(np.abs(h - h_T).max()),
        "loss_spacing_float32": np.spacing(np.float32(abs(v @ h_T))),
    }
