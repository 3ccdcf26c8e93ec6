"""Where a program stops being finite: evaluate it along a ray of inputs c * direction, measure its
error against a reference, and find by bisection the largest scale c at which it is finite.

Used by the stable-formulations chapter (snippets/stable_softmax.py).
"""

import numpy as np


def evaluate(program, c, direction, dtype):
    """program(c * direction) in `dtype`, returned as float64; overflow warnings silenced."""
    with np.errstate(all="ignore"):
        return np.asarray(program((c * np.asarray(direction)).astype(dtype)), dtype=np.float64)


def relative_error(value, reference):
    """||value - reference|| / ||reference|| (the absolute error where the reference is 0), and
    inf where value is not finite."""
    if not np.all(np.isfinite(value)):
        return np.inf
    size = np.linalg.norm(reference)
    difference = np.linalg.norm(value - reference)
    return difference / size if size > 0 else difference


def largest_finite_scale(program, direction, dtype, grid, iterations=60):
    """The largest c on the increasing `grid` (refined by bisection between the last finite and
    the first non-finite grid point) at which program(c * direction) is finite; grid[-1] if it is
    finite over the whole grid. Assumes one switch from finite to non-finite."""

    def finite(c):
        return bool(np.all(np.isfinite(evaluate(program, c, direction, dtype))))

    flags = [finite(c) for c in grid]
    if all(flags):
        return grid[-1]
    first_bad = flags.index(False)
    if first_bad == 0:
        return np.nan
    low, high = grid[first_bad - 1], grid[first_bad]
    for _ in range(iterations):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if finite(middle) else (low, middle)
    return low
