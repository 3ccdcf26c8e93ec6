"""Helpers for the "leaks" chapters: programs that differ from their function, and updates that
never land.

`primal` lets one program build a mask (``x > 0``) under every differentiation method;
`update_norms` and `frozen_parameters` are the check that catches an optimizer step that
silently did nothing: after a step, every trained parameter must have moved.
"""

import numpy as np

from .engine import Tensor
from .forward import Dual


def primal(x):
    """The value a program branches on: a Tensor's data, a Dual's value, the real part of an
    array (so a complex-step evaluation branches exactly like a real one)."""
    if isinstance(x, Tensor):
        return x.data
    if isinstance(x, Dual):
        return x.val
    return np.real(x)


def update_norms(before, after):
    """||p_after - p_before|| (Frobenius) for each parameter, as a list of floats."""
    if len(before) != len(after):
        raise ValueError(f"{len(before)} parameters before the step, {len(after)} after")
    return [
        float(np.linalg.norm(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)))
        for b, a in zip(before, after, strict=True)
    ]


def frozen_parameters(before, after, names):
    """The names of the parameters whose update norm is exactly zero: a step that did nothing.

    A zero update can be legitimate (a zero gradient, a frozen layer); a trained parameter
    that never moves is the signature of an update written somewhere else (a copy, a
    temporary that was never written back)."""
    norms = update_norms(before, after)
    if len(names) != len(norms):
        raise ValueError(f"{len(names)} names for {len(norms)} parameters")
    return [name for name, norm in zip(names, norms, strict=True) if norm == 0.0]
