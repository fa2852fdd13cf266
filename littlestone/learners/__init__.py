"""Learners: the base class, the registry and the built-in algorithms.

Importing this package registers every built-in learner in :data:`LEARNERS`.
"""

from __future__ import annotations

from littlestone.learners import (
    adapters,
    agnostic,
    conservative,
    consistency,
    consistent,
    convex,
    experts,
    halving,
    kernel,
    modified_perceptron,
    neighbours,
    perceptron,
    randomized,
    trees,
    weighted_halving,
    winnow,
)
from littlestone.learners.base import LEARNERS, Learner, register

__all__ = [
    "LEARNERS",
    "Learner",
    "adapters",
    "agnostic",
    "conservative",
    "consistency",
    "consistent",
    "convex",
    "experts",
    "halving",
    "kernel",
    "modified_perceptron",
    "neighbours",
    "perceptron",
    "randomized",
    "register",
    "trees",
    "weighted_halving",
    "winnow",
]

# one import name per file: the top-level learners/ is a link kept for the design card's
# layout, so ``import learners`` from a clone's root would load a second copy of every module
if __name__ != "littlestone.learners":  # pragma: no cover
    raise ImportError(f"import littlestone.learners, not {__name__}")
