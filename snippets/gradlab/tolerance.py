"""How to compare two gradients: the mixed tolerance test and the random-direction check.

`mixed_close` is the test of ``numpy.isclose`` and ``torch.allclose``,
|a - b| <= atol + rtol |b|: relative for large entries, absolute near zero, where a pure
relative test fails correct entries whose size is at the check's noise level.
`directional_check` compares one directional derivative instead of every entry: central
differences along a random direction v against <grad f, v>, two evaluations of f in all
(the idea of ``jax.test_util.check_grads`` and of ``torch.autograd.gradcheck(fast_mode=True)``).
"""

import numpy as np

from . import engine, flops


def mixed_close(a, b, rtol, atol):
    """Elementwise |a - b| <= atol + rtol |b| (b is the reference), as numpy.isclose."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.abs(a - b) <= atol + rtol * np.abs(b)


def all_close(grads, reference, rtol, atol):
    """`mixed_close` over lists of gradients: True if every entry passes. ``atol=0`` is a pure
    relative test, ``rtol=0`` a pure absolute one."""
    if len(grads) != len(reference):
        raise ValueError(f"{len(grads)} gradients vs {len(reference)}")
    return all(bool(np.all(mixed_close(g, r, rtol, atol))) for g, r in zip(grads, reference, strict=True))


def random_direction(params, rng):
    """A direction v (one array per parameter) drawn uniformly on the unit sphere."""
    v = [rng.normal(size=np.shape(p)) for p in params]
    norm = np.sqrt(sum(np.sum(x**2) for x in v))
    return [x / norm for x in v]


def directional_check(f, params, direction, grads=None, h=None):
    """(finite-difference slope, <grads, v>) along `direction` v.

    The slope is (f(p + h v) - f(p - h v)) / (2h), two evaluations of f whatever the number of
    parameters; `grads` defaults to the engine's reverse-mode gradient. A wrong entry of the
    gradient changes <grads, v> unless v happens to be orthogonal to the error, which for a
    random v has probability 0."""
    params = [np.asarray(p, dtype=np.float64) for p in params]
    grads = engine.grad(f, params) if grads is None else grads
    h = (
        np.finfo(np.float64).eps ** (1 / 3) * max(1.0, max(np.abs(p).max() for p in params))
        if h is None
        else h
    )
    values = []
    for sign in (1, -1):
        flops.count_call()
        values.append(
            float(np.asarray(f([p + sign * h * v for p, v in zip(params, direction, strict=True)])))
        )
    slope = (values[0] - values[1]) / (2 * h)
    return slope, float(sum(np.sum(g * v) for g, v in zip(grads, direction, strict=True)))
