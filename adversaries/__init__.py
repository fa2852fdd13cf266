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
