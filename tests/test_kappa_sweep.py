"""gradlab.kappa_sweep: the slider's curves are the runs ill_conditioning.py makes at each kappa."""

import numpy as np
import pytest
from gradlab import kappa_sweep, optim


@pytest.mark.parametrize("kappa", [10.0, 300.0])
def test_fixed_step_curves_match_the_engine_runs(kappa):
    A = np.diag([1.0, kappa])
    fun = optim.reverse_mode(lambda params: 0.5 * (params[0] @ (A @ params[0])))
    x0 = np.array([np.sqrt(kappa), 1.0])
    curves = kappa_sweep.curves(kappa, 1e-6, 2000)
    gd = optim.gradient_descent(fun, x0, 2 / (1 + kappa), gtol=1e-6, max_iter=2000)
    hb = optim.momentum(fun, x0, *optim.heavy_ball_parameters(1.0, kappa), gtol=1e-6, max_iter=2000)
    for label, trace in (("gradient descent, best fixed step", gd), ("heavy ball, Polyak's parameters", hb)):
        assert len(curves[label]) - 1 == trace.iterations
        np.testing.assert_allclose(curves[label], trace.grad_norms, rtol=1e-9)


def test_sample_leaves_a_gap_after_the_run():
    assert kappa_sweep.sample([3.0, 2.0, 1.0], [1, 2, 3, 4]) == [3.0, 2.0, 1.0, None]
