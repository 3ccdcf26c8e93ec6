"""gradlab: one gradient, four independent ways to compute it, and the models the site studies."""

from . import check, engine, flops, forward, models, numerical, ops  # noqa: F401
