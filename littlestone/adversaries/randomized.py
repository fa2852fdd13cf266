"""The adversary that forces the randomised Littlestone value (games.randomized)."""

from __future__ import annotations

from typing import Any

import numpy as np

from littlestone.adversaries.base import Adversary, register
from littlestone.games.classes import FiniteClass
from littlestone.games.errors import BudgetExceeded
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import too_large
from littlestone.games.randomized import (
    RANDOMIZED_BUDGET,
    RandomizedValue,
    randomized_solver_for,
    randomized_within_budget,
)


@register
class RandomizedValueAdversary(Adversary):
    """Forces v_T(H) expected mistakes on every learner, deterministic or not: the
    randomised Littlestone value of the realizable game (games.randomized).

    With t rounds left it plays an instance x attaining v_t(V) = f(v_{t-1}(V_x^0),
    v_{t-1}(V_x^1)) and, having seen p, the label y that maximises |p - y| + v_{t-1}(V_x^y)
    among those that keep V non-empty, so the expected mistakes sum_t |p_t - y_t| plus
    v(V) never drop below v_T(H). ``randomized-soa`` gives exactly v_T(H) against it;
    once the value is spent (nothing splits V) it plays random instances. ``forcing`` is
    v_T(H), a float.

    >>> from littlestone.games.classes import make_class
    >>> adversary = RandomizedValueAdversary()
    >>> adversary.start(GameSpec("mistake-bound", 3, make_class("thresholds:n=3")), seed=0)
    >>> adversary.forcing, adversary.instance()
    (1.0, 1)
    >>> adversary.label(1, 0.5)  # a tie: 1/2 + v({0, 1}) = 1/2 + v({2, 3})
    0
    >>> adversary.instance()  # V = {h_0, h_1}: only x = 0 splits it
    0
    """

    id = "randomized-value"
    games = frozenset({MISTAKE_BOUND})
    slow_moves = True

    def __init__(self, budget: int = RANDOMIZED_BUDGET) -> None:
        if budget < 1:
            raise ValueError(f"budget={budget} must be >= 1")
        self.budget = budget
        self.forcing = 0.0
        self._solver: RandomizedValue | None = None
        self._hclass: FiniteClass | None = None
        self._v = 0
        self._left = 0
        self._rng = np.random.default_rng(0)

    def unsupported(self, game: GameSpec) -> str | None:
        hclass = game.hclass
        if game.game == MISTAKE_BOUND and not isinstance(hclass, FiniteClass):
            return "it needs a finite class to compute the randomised value on"
        reason = too_large(hclass) or super().unsupported(game)
        if reason is None and isinstance(hclass, FiniteClass):
            try:
                randomized_solver_for(hclass).scaled(horizon=game.rounds, budget=self.budget)
            except BudgetExceeded as exc:
                return f"the exact randomised value is beyond its budget ({self.budget}): {exc}"
        return reason

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._hclass = game.hclass
        self._solver = randomized_within_budget(game.hclass, game.rounds, self.budget, self.id)
        self.forcing = float(self._solver.value(horizon=game.rounds, budget=self.budget))
        self._v = self._solver.full
        self._left = game.rounds
        self._rng = np.random.default_rng(seed)

    def instance(self) -> int:
        assert self._solver is not None and self._hclass is not None, "start() first"
        x = self._solver.best_instance(self._v, self._left, self.budget)
        if x is None:
            return int(self._rng.integers(self._hclass.domain_size))
        return x

    def label(self, x: Any, p: float) -> int:
        assert self._solver is not None, "start() first"
        y = self._solver.label(self._v, x, p, self._left, self.budget)
        self._v = self._solver.split(self._v, x)[y]
        self._left = max(0, self._left - 1)
        return y
