"""The optimal randomised learner of the realizable game (games.randomized)."""

from __future__ import annotations

from typing import Any

from littlestone.games.classes import FiniteClass
from littlestone.games.errors import BudgetExceeded
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.games.ldim import too_large
from littlestone.games.randomized import (
    RANDOMIZED_BUDGET,
    RandomizedValue,
    randomized_solver_for,
    randomized_within_budget,
)
from littlestone.learners.base import Learner, register


@register
class RandomizedSOA(Learner):
    """The optimal randomised learner: expected mistakes <= v_T(H), the randomised
    Littlestone value (games.randomized; Ldim(H)/2 <= v(H) <= min(Ldim(H), ln|H|)).

    On x it answers p = (1 + v(V_x^1) - v(V_x^0)) / 2 clipped to [0, 1], the values
    taken with one round less than it has left (T announced; else unbounded), which
    makes |p - y| + v(V_x^y) <= v(V) whatever the label: the expected mistakes
    sum_t |p_t - y_t| stay <= v_T(H) on every sequence. The ``randomized-value``
    adversary forces exactly v_T(H) on it. It refuses before round 1, naming the budget,
    a class whose value it cannot compute within ``budget`` (in exact Ldim's units: one of
    its checks counts games.randomized.CHECK_COST).

    >>> from littlestone.games.classes import make_class
    >>> learner = RandomizedSOA()
    >>> learner.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=3")), seed=0)
    >>> learner.predict(1), learner.predict(0)  # 1/2 + 1/2 against 1/2 + 1/2; 3/4 vs 0
    (0.5, 0.875)
    >>> learner.bound(GameSpec("mistake-bound", 5, make_class("thresholds:n=3"))).value
    1.0
    """

    id = "randomized-soa"
    games = frozenset({MISTAKE_BOUND})
    deterministic = False
    slow_moves = True

    def __init__(self, budget: int = RANDOMIZED_BUDGET) -> None:
        if budget < 1:
            raise ValueError(f"budget={budget} must be >= 1")
        self.budget = budget
        self._solver: RandomizedValue | None = None
        self._v = 0
        self._left: int | None = None

    def unsupported(self, game: GameSpec) -> str | None:
        hclass = game.hclass
        if game.game == MISTAKE_BOUND and not isinstance(hclass, FiniteClass):
            return "it needs a finite class to compute the randomised value on"
        reason = too_large(hclass) or super().unsupported(game)
        if reason is None and isinstance(hclass, FiniteClass):
            try:
                randomized_solver_for(hclass).scaled(horizon=game.horizon, budget=self.budget)
            except BudgetExceeded as exc:
                return f"the exact randomised value is beyond its budget ({self.budget}): {exc}"
        return reason

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._solver = randomized_within_budget(game.hclass, game.horizon, self.budget, self.id)
        self._v = self._solver.full
        self._left = game.horizon

    def predict(self, x: Any) -> float:
        assert self._solver is not None, "start() first"
        return self._solver.prediction(self._v, x, self._left, self.budget)

    def update(self, x: Any, y: int) -> None:
        assert self._solver is not None, "start() first"
        survivors = self._solver.split(self._v, x)[y]
        if survivors:  # a label that would empty V is ignored
            self._v = survivors
        if self._left is not None:
            self._left = max(0, self._left - 1)

    def bound(self, game: GameSpec) -> Bound | None:
        if not isinstance(game.hclass, FiniteClass) or self._solver is None:
            return None
        value = randomized_solver_for(game.hclass).value(horizon=game.horizon,
                                                          budget=self.budget)
        return Bound(float(value), f"expected mistakes <= v_T(H) = {value}, the randomised "
                     "Littlestone value (docs/theory.md)")
