"""Adversaries: the base class, the registry and the built-in constructions.

Importing this package registers every built-in adversary in :data:`ADVERSARIES`.
"""

from __future__ import annotations

from littlestone.adversaries import (
    agnostic,
    flips,
    lower_bounds,
    nonseparable,
    prior,
    random_target,
    randomized,
    shattered_tree,
)
from littlestone.adversaries.base import ADVERSARIES, Adversary, register

__all__ = [
    "ADVERSARIES",
    "Adversary",
    "agnostic",
    "flips",
    "lower_bounds",
    "nonseparable",
    "prior",
    "random_target",
    "randomized",
    "register",
    "shattered_tree",
]

# one import name per file: the top-level adversaries/ is a link kept for the design card's
# layout, so ``import adversaries`` from a clone's root would load a second copy of every module
if __name__ != "littlestone.adversaries":  # pragma: no cover
    raise ImportError(f"import littlestone.adversaries, not {__name__}")
