"""gradlab/recurrent_float32.py: the float32 forward pass beside float64."""

import numpy as np
from gradlab import recurrent as rec
from gradlab import recurrent_float32


def test_float32_gap_is_float32_rounding_when_contracting_and_spacing_is_float32s():
    net = rec.draw_network(0, 8, 2, 20)
    out = recurrent_float32.float32_gap(net, 0.5, 1.0)
    assert 0 < out["float32_gap"] < 1e-5  # float32 rounding, not amplified by a contracting map
    loss = net["v"] @ rec.states(*rec.unpack(net, 0.5, 1.0)[0], 1.0 * net["xs"], net["h0"])[-1]
    assert out["loss_spacing_float32"] == np.spacing(np.float32(abs(loss)))
    assert out["loss_spacing_float32"] > 1e6 * np.spacing(abs(loss))
