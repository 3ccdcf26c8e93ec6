"""gradlab.loss_scale_sweep: the per-layer shares behind precision.py's slider."""

import numpy as np
from gradlab import loss_scale_sweep


def test_layer_shares_counts_zero_normal_and_overflow():
    ref = [np.array([1e-9, 1e-9, 1.0, 1.0]), np.zeros(1)]
    grads = [np.array([0.0, 1e-7, 1.0, np.inf], dtype=np.float16), np.zeros(1)]
    zero, normal, bad = loss_scale_sweep.layer_shares(grads, ref, 1.0)
    assert zero == [0.25] and normal == [0.25] and bad == [0.25]


def test_frames_one_distinct_description_per_scale():
    ref = [np.full((2, 2), 1e-8), np.zeros(2), np.ones((2, 1)), np.zeros(1)]
    scales = [1.0, 2.0**10, 2.0**20]
    runs = [[(S * r).astype(np.float16) for r in ref] for S in scales]
    kwargs = loss_scale_sweep.frames(runs, ref, scales, seed=0)
    assert kwargs["values"] == [0, 10, 20] and kwargs["x"] == [1, 2]
    assert len(set(kwargs["description"])) == 3
    zeros = kwargs["series"]["zero, non-zero in float64"]
    assert zeros[0][0] == 1.0 and zeros[1][0] == 0.0  # 1e-8 rounds to 0 in float16; 1e-8 * 2^10 does not
