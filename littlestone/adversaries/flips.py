"""Adaptive adversaries of the expert-advice game: Cover's flip and the flip against the
weighted majority."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.adversaries.base import Adversary, register
from littlestone.games.game import EXPERTS, GameSpec

FloatArray = NDArray[np.float64]


def likelier_prediction(answer: FloatArray | float, advice: FloatArray) -> float:
    """The learner's probability of predicting 1: p itself, or <w, a> for weights w."""
    if isinstance(answer, np.ndarray):
        return float(answer @ advice)
    return float(answer)


class _FreeExperts(Adversary):
    games = frozenset({EXPERTS})

    def unsupported(self, game: GameSpec) -> str | None:
        if game.hclass is not None:
            return "it plays d free experts (--experts D), not a class's hypotheses"
        return super().unsupported(game)


@register
class CoverFlip(_FreeExperts):
    """Cover's flip (UML section 21.2): constant experts (expert i always advises i mod 2;
    the experts 0 and 1 when d = 2) and the label opposite to the learner's likelier
    prediction (0 when p >= 1/2). A deterministic learner loses every round while the
    best constant expert loses at most T/2: regret >= ceil(T/2). A learner whose coin is
    hidden, Hedge, keeps its expected regret <= sqrt(2 T ln d).

    >>> adversary = CoverFlip()
    >>> adversary.start(GameSpec("experts", 3, experts=2), seed=0)
    >>> adversary.advice().tolist(), adversary.costs(np.array([1.0, 0.0])), adversary.costs(0.7)
    ([0.0, 1.0], 1, 0)
    """

    id = "cover-flip"

    def __init__(self) -> None:
        self._advice = np.zeros(0)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._advice = (np.arange(game.n_experts) % 2).astype(np.float64)

    def advice(self) -> FloatArray:
        return self._advice

    def costs(self, answer: FloatArray | float) -> int:
        return 0 if likelier_prediction(answer, self._advice) >= 0.5 else 1


@register
class WeightedMajorityFlip(_FreeExperts):
    """Random 0/1 advice, labelled against the weighted majority vote of the experts with
    weights beta^(mistakes) (the adversary keeps them itself, so it is the same
    sequence for any learner): Weighted-Majority with the same beta errs every round, and
    its mistakes T can be set against the bound (m log2(1/beta) + log2 d) /
    log2(2/(1+beta)) with m the best expert's mistakes (about T/2).

    >>> adversary = WeightedMajorityFlip()
    >>> adversary.start(GameSpec("experts", 5, experts=3), seed=0)
    >>> advice = adversary.advice(); adversary.costs(0.0) == (0 if advice.sum() >= 1.5 else 1)
    True
    """

    id = "wm-flip"

    def __init__(self, beta: float = 0.5) -> None:
        if not 0.0 < beta < 1.0:
            raise ValueError(f"beta={beta} must be in (0, 1)")
        self.beta = beta
        self._rng = np.random.default_rng(0)
        self._log_weights = np.zeros(0)
        self._advice = np.zeros(0)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._log_weights = np.zeros(game.n_experts)

    def advice(self) -> FloatArray:
        self._advice = self._rng.integers(0, 2, len(self._log_weights)).astype(np.float64)
        return self._advice

    def costs(self, answer: Any) -> int:
        w = np.exp(self._log_weights - self._log_weights.max())
        ones = float(w @ self._advice)
        y = 0 if ones >= float(w.sum()) - ones else 1  # against the majority (1 on a tie)
        self._log_weights[self._advice != y] += math.log(self.beta)
        return y
