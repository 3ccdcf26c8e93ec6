"""Clipping by norm keeps the direction and bounds the norm; clipping by value bounds entries."""

import numpy as np
import pytest
import strategies as S
from gradlab import clipping
from hypothesis import given, settings
from hypothesis import strategies as st


def gradient_lists():
    return st.lists(S.shapes.flatmap(lambda s: S.arrays(s, -100.0, 100.0)), min_size=1, max_size=3)


def test_global_norm_of_a_list():
    assert clipping.global_norm([np.array([3.0]), np.array([[4.0]])]) == pytest.approx(5.0)


def test_small_gradient_is_unchanged_by_norm_clipping():
    grads = [np.array([0.3, -0.4])]
    clipped, norm = clipping.clip_by_norm(grads, 1.0)
    assert norm == pytest.approx(0.5)
    np.testing.assert_array_equal(clipped[0], grads[0])


def test_value_clipping_changes_the_direction():
    grads = [np.array([10.0, 0.8])]
    clipped = clipping.clip_by_value(grads, 1.0)
    np.testing.assert_array_equal(clipped[0], [1.0, 0.8])
    assert clipping.cosine(grads, clipped) < 0.9


def test_thresholds_must_be_positive():
    with pytest.raises(ValueError):
        clipping.clip_by_norm([np.ones(2)], 0.0)
    with pytest.raises(ValueError):
        clipping.clip_by_value([np.ones(2)], -1.0)


@settings(max_examples=40, deadline=None)
@given(gradient_lists(), st.floats(0.01, 10.0))
def test_norm_clipping_keeps_direction_and_bounds_norm(grads, max_norm):
    clipped, norm = clipping.clip_by_norm(grads, max_norm)
    assert norm == pytest.approx(clipping.global_norm(grads))
    assert clipping.global_norm(clipped) <= max_norm * (1 + 1e-12) or norm <= max_norm
    if norm > 0:
        assert clipping.cosine(grads, clipped) == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(gradient_lists(), st.floats(0.01, 10.0))
def test_value_clipping_bounds_every_entry(grads, limit):
    clipped = clipping.clip_by_value(grads, limit)
    for g, c in zip(grads, clipped, strict=True):
        assert np.all(np.abs(c) <= limit)
        np.testing.assert_array_equal(np.where(np.abs(g) <= limit, g, c), c)


@settings(max_examples=50, deadline=None)
@given(grads=gradient_lists(), limit=st.floats(0.1, 50.0))
def test_clipped_fraction_is_the_share_of_entries_value_clipping_changes(grads, limit):
    changed = sum(
        int(np.sum(c != g)) for c, g in zip(clipping.clip_by_value(grads, limit), grads, strict=True)
    )
    assert clipping.clipped_fraction(grads, limit) == changed / sum(g.size for g in grads)
