"""Gradient clipping: two optimizer remedies for a large gradient, and how to compare them.

Both act on the gradient AFTER it is computed, so they change the update, not the function or
its gradient. Gradients are lists of numpy arrays (one per parameter), as the drivers return.

* `clip_by_norm` rescales the whole list when its global norm exceeds a threshold
  (Pascanu, Mikolov & Bengio 2013): g <- g * min(1, max_norm / ||g||). The direction is kept.
* `clip_by_value` clips every entry to [-limit, limit]. Entries are clipped by different
  factors, so the direction changes.
"""

import numpy as np


def global_norm(grads):
    """||g||_2 over every entry of every array in the list."""
    return float(np.sqrt(sum(np.sum(np.square(g)) for g in grads)))


def clip_by_norm(grads, max_norm):
    """g * min(1, max_norm / ||g||) for the list g; returns (clipped grads, norm before).

    A gradient whose norm is at most max_norm comes back unchanged (as copies).
    """
    if not max_norm > 0:
        raise ValueError(f"max_norm must be positive, got {max_norm}")
    norm = global_norm(grads)
    factor = min(1.0, max_norm / norm) if norm > 0 else 1.0
    return [np.asarray(g) * factor for g in grads], norm


def clip_by_value(grads, limit):
    """Every entry clipped to [-limit, limit]."""
    if not limit > 0:
        raise ValueError(f"limit must be positive, got {limit}")
    return [np.clip(g, -limit, limit) for g in grads]


def cosine(grads_a, grads_b):
    """<a, b> / (||a|| ||b||) over the flattened lists: 1 means the same direction."""
    dot = sum(float(np.sum(a * b)) for a, b in zip(grads_a, grads_b, strict=True))
    return dot / (global_norm(grads_a) * global_norm(grads_b))


def clipped_fraction(grads, limit):
    """#{entries with |g| > limit} / #{entries}: the share of entries that clip_by_value changes."""
    changed = sum(int(np.sum(np.abs(g) > limit)) for g in grads)
    return changed / sum(np.size(g) for g in grads)
