"""The recurrent helpers agree with the library's RNN and reverse mode, and their bounds hold."""

import numpy as np
import pytest
from gradlab import engine, models, ops
from gradlab import recurrent as rec


@pytest.fixture
def net():
    return rec.draw_network(3, hidden=6, inputs=2, steps=12)


def test_orthogonal_is_orthogonal():
    Q = rec.orthogonal(5, np.random.default_rng(0))
    np.testing.assert_allclose(Q.T @ Q, np.eye(5), atol=1e-12)


def test_states_match_the_library_rnn(net):
    params, xs, h0, _ = rec.unpack(net, 1.5, 1.0)
    np.testing.assert_allclose(rec.states(*params, xs, h0)[-1], models.rnn(params, xs, h0), rtol=1e-13)


def test_jacobian_norms_match_reverse_mode(net):
    params, xs, h0, _ = rec.unpack(net, 2.0, 1.0)
    run = rec.jacobian_summary(net, 2.0, 1.0)
    rows = [engine.grad(lambda p, i=i: models.rnn(params, xs, p[0])[i], [h0])[0] for i in range(len(h0))]
    assert run["norm"] == pytest.approx(np.linalg.norm(np.array(rows), 2), rel=1e-10)
    assert run["rate"] == pytest.approx(run["norm"] ** (1 / len(xs)))


def test_jacobian_norm_respects_the_bound(net):
    """||dh_T/dh_0|| <= (gamma sigma_max)^T with gamma = 1 for tanh."""
    for scale in (0.5, 1.0, 3.0):
        assert rec.jacobian_summary(net, scale, 1.0)["norm"] <= scale ** len(net["xs"]) * (1 + 1e-12)


def test_additive_cell_stays_between_its_bounds(net):
    f, scale, T = 0.9, 2.0, len(net["xs"])
    norm = rec.jacobian_summary(net, scale, 1.0, forget=f)["norm"]
    assert max(f - (1 - f) * scale, 0) ** T <= norm <= (f + (1 - f) * scale) ** T


def test_lag_terms_sum_to_reverse_mode(net):
    params, xs, h0, v = rec.unpack(net, 1.2, 1.0)
    terms = rec.weight_gradient_by_lag(*params, xs, h0, v)
    expected = engine.grad(lambda p: ops.sum(models.rnn(p, xs, h0) * v), params)[0]
    np.testing.assert_allclose(terms.sum(axis=0), expected, rtol=1e-10, atol=1e-14)
    assert rec.lag_summary(net, 1.2, 1.0, 4)["lag_sum_error"] < 1e-12


def test_truncation_error_is_the_share_beyond(net):
    params, xs, h0, v = rec.unpack(net, 1.2, 1.0)
    terms = rec.weight_gradient_by_lag(*params, xs, h0, v)
    full, cut = terms.sum(axis=0), rec.truncated(terms, 3)
    assert np.linalg.norm(full - cut) / np.linalg.norm(full) == pytest.approx(rec.share_beyond(terms, 3))
    assert rec.share_beyond(terms, 0) == pytest.approx(1.0)
    summary = rec.lag_summary(net, 1.2, 1.0, 3)
    assert summary["truncated_norm"] == pytest.approx(np.linalg.norm(cut))
    assert summary["truncated_cosine"] == pytest.approx(
        np.sum(cut * full) / np.linalg.norm(cut) / np.linalg.norm(full)
    )


def test_shifted_diagonal_has_radius_rho_and_grows_transiently():
    M = rec.shifted_diagonal(8, 0.9, 0.5)
    summary = rec.power_summary(M, steps=5, horizon=500)
    assert summary["radius"] == pytest.approx(0.9)
    assert summary["sigma"] > 1 and summary["peak"] > 1
    assert summary["below_one_step"] > summary["peak_step"]
    assert rec.power_norms(M, 500)[-1] < 1


def test_verdict():
    assert rec.verdict([1e-5, 1e-3]) == "vanishes"
    assert rec.verdict(1e3) == "explodes"
    assert rec.verdict([0.5, 2.0]) == "neither"
    assert rec.verdict([1e-5, 1e5]) == "mixed"


def test_gradient_checks_agree_on_a_tame_network(net):
    result = rec.gradient_checks(net, 0.9, 1.0)
    assert result["forward"] < 1e-12 and result["complex"] < 1e-12 and result["central"] < 1e-6


def test_norm_clipping_keeps_the_direction_and_value_clipping_does_not(net):
    summary = rec.clip_summary(net, 3.0, 1.0, 1e-3)
    assert summary["ratio_spread"] < 1e-14 and summary["cosine_norm_clip"] == pytest.approx(1.0)
    assert summary["clipped_fraction"] > 0 and summary["cosine_value_clip"] < 1 - 1e-6


def test_per_seed_and_record_collect_and_spread(net):
    class Results:
        def __init__(self):
            self.spreads = {}

        def spread(self, key, values, about, **tolerance):
            self.spreads[key] = (list(values), tolerance)

    stats = rec.per_seed([net, net], rec.jacobian_summary, 0.5, 1.0)
    assert len(stats["norm"]) == 2 and stats["norm"][0] == stats["norm"][1]
    results = Results()
    arrays = rec.record(results, "weak_", {"norm": stats["norm"]}, suffix="_0.5")
    assert set(results.spreads) == {"weak_norm_0p5"} and results.spreads["weak_norm_0p5"][1] == {"rtol": 1e-3}
    assert arrays["norm"].shape == (2,)


def test_jacobian_norms_every_kth_step_are_the_same_numbers(net):
    full = rec.jacobian_summary(net, 1.5, 1.0)
    for every in (2, 5):  # T = 12: the last step is always measured
        part = rec.jacobian_summary(net, 1.5, 1.0, every=every)
        measured = np.isfinite(part["norms"])
        assert set(np.flatnonzero(measured)) == {*range(every - 1, 12, every), 11}
        np.testing.assert_array_equal(part["norms"][measured], full["norms"][measured])
        assert part["norm"] == full["norm"] and part["mean_slope"] == full["mean_slope"]
