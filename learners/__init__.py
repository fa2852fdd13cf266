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
    experts,
    halving,
    kernel,
    perceptron,
    randomized,
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
    "experts",
    "halving",
    "kernel",
    "perceptron",
    "randomized",
    "register",
    "winnow",
]
