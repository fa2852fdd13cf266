"""Halving: predict the majority vote of the version space (UML Thm 21.3)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import FiniteClass, VersionSpace
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, Bound, GameSpec
from littlestone.learners.base import Learner, register


@register
class Halving(Learner):
    """Majority vote of the hypotheses consistent so far: at most log2 |H| mistakes.

    On a tie it predicts 1 (docs/theory.md). In the experts game the experts are the class's
    hypotheses, or any d experts with 0/1 advice: it predicts the majority of the experts
    that have made no mistake yet (a cost >= 1/2), and starts over with all of them if
    none is left; without advice it spreads its weight evenly over them.

    >>> from littlestone.games.classes import make_class
    >>> from littlestone.games.game import GameSpec
    >>> halving = Halving()
    >>> halving.start(GameSpec("mistake-bound", 3, make_class("thresholds:n=8")), seed=0)
    >>> [halving.predict(x) for x in (0, 4, 7)]  # 8, 4 and 1 of the 9 thresholds vote 1
    [1.0, 0.0, 0.0]
    >>> halving.update(4, 1); halving.predict(3)  # a > 4 now: all of them vote 1 on 3
    1.0
    """

    id = "halving"
    games = frozenset({MISTAKE_BOUND, EXPERTS})

    def __init__(self) -> None:
        self._version_space: VersionSpace | None = None
        self._alive: NDArray[np.bool_] | None = None

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class to take a majority vote over"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        hclass = game.hclass
        self._version_space = hclass.version_space() if isinstance(hclass, FiniteClass) else None
        self._alive = np.ones(game.n_experts, dtype=np.bool_) if game.game == EXPERTS else None

    def predict(self, x: Any) -> float:
        assert self._version_space is not None, "start() first"
        return 1.0 if 2 * self._version_space.votes(x) >= self._version_space.size else 0.0

    def update(self, x: Any, y: int) -> None:
        assert self._version_space is not None, "start() first"
        self._version_space.restrict(x, y)  # a non-realizable label (V would empty) is ignored

    def weights(self, advice: NDArray[np.float64] | None) -> NDArray[np.float64] | float:
        assert self._alive is not None, "start() first"
        if advice is None:  # free experts, costs only: uniform over those without a mistake
            return self._alive / float(np.count_nonzero(self._alive))
        ones = int(np.count_nonzero(advice[self._alive] >= 0.5))
        return 1.0 if 2 * ones >= int(np.count_nonzero(self._alive)) else 0.0

    def update_costs(self, costs: NDArray[np.float64], y: int | None) -> None:
        assert self._alive is not None, "start() first"
        self._alive &= costs < 0.5
        if not self._alive.any():
            self._alive[:] = True

    def bound(self, game: GameSpec) -> Bound | None:
        if game.game == MISTAKE_BOUND and isinstance(game.hclass, FiniteClass):
            return Bound(math.log2(game.hclass.size), "log2|H| (UML Thm 21.3)")
        return None
