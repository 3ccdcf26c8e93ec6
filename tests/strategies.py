"""Shared Hypothesis strategies: shapes, broadcastable pairs, repeated indices, safe arrays."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
matrix_shapes = hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=4)
broadcastable_pairs = hnp.mutually_broadcastable_shapes(
    num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=4
).map(lambda result: result.input_shapes)


def arrays(shape, low=-2.0, high=2.0, dtype=np.float64):
    """Floats in [low, high], well inside any domain the caller chooses."""
    elements = st.floats(low, high, allow_nan=False, allow_infinity=False, width=64)
    return hnp.arrays(dtype, shape, elements=elements)


def away_from_zero(shape, low=0.1, high=2.0):
    """|x| in [low, high] with random signs: away from the kinks of relu, abs, leaky_relu."""
    return st.tuples(arrays(shape, low, high), hnp.arrays(bool, shape)).map(
        lambda pair: np.where(pair[1], pair[0], -pair[0])
    )


def positive(shape, low=0.5, high=2.0):
    """Inside the domains of log and sqrt, away from 0."""
    return arrays(shape, low, high)


def separated_pair(shape, gap=0.1):
    """Two arrays that differ by at least `gap` everywhere: no ties for maximum/minimum."""
    return st.tuples(arrays(shape), away_from_zero(shape, gap, 1.0)).map(
        lambda pair: (pair[0], pair[0] + pair[1])
    )


@st.composite
def gather_indices(draw, size=5, max_len=8):
    """(length, indices) with indices in [0, length), drawn so that repeats are common."""
    length = draw(st.integers(1, size))
    indices = draw(st.lists(st.integers(0, length - 1), min_size=1, max_size=max_len))
    return length, np.array(indices)
