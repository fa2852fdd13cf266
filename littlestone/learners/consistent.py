"""Consistent and SOA: the two version-space learners of UML section 21.1.1."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from littlestone.games.classes import FiniteClass, VersionSpace
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.games.ldim import LDIM_BUDGET, LdimSolver, solver_within_budget, too_large
from littlestone.learners.base import Learner, register


@register
class Consistent(Learner):
    """Predict with the first hypothesis still consistent: at most |H| - 1 mistakes.

    "First" is the lowest hypothesis index in the version space (UML Cor. 21.2).

    >>> from littlestone.games.classes import make_class
    >>> learner = Consistent()
    >>> learner.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=4")), seed=0)
    >>> learner.predict(0)  # h_0(x) = [x < 0]
    0.0
    >>> learner.update(0, 1); learner.predict(0), learner.predict(1)  # now h_1 = [x < 1]
    (1.0, 0.0)
    """

    id = "consistent"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self._space: VersionSpace | None = None
        self._hclass: FiniteClass | None = None
        self._current = np.zeros(1, dtype=np.intp)

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class to pick a consistent hypothesis from"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._hclass = game.hclass
        self._space = game.hclass.version_space()
        self._current = np.zeros(1, dtype=np.intp)

    def predict(self, x: Any) -> float:
        assert self._hclass is not None, "start() first"
        return float(self._hclass.evaluate(x, self._current)[0])

    def update(self, x: Any, y: int) -> None:
        assert self._hclass is not None and self._space is not None, "start() first"
        wrong = int(self._hclass.evaluate(x, self._current)[0]) != y
        self._space.restrict(x, y)  # a label that would empty V is ignored
        if wrong:
            self._current = self._space.indices()[:1]

    def bound(self, game: GameSpec) -> Bound | None:
        if isinstance(game.hclass, FiniteClass):
            return Bound(game.hclass.size - 1, "|H| - 1 (UML Cor. 21.2)")
        return None

    def log_hypotheses(self, game: GameSpec) -> float | None:
        """ln |H|: it outputs a hypothesis of H consistent with every example (games.pac)."""
        return math.log(game.hclass.size) if isinstance(game.hclass, FiniteClass) else None


@register
class SOA(Learner):
    """The Standard Optimal Algorithm: predict the label r whose version space
    V_t(r) = {h in V_t : h(x) = r} has the larger Littlestone dimension (1 on a tie);
    at most Ldim(H) mistakes (UML Lemma 21.7).

    It computes Ldim exactly through the class's shared cache (games.ldim.solver_for),
    and refuses before round 1, naming the budget, a class whose Ldim it cannot compute
    within ``budget`` instance checks or whose truth table exceeds the matrix budget;
    each prediction asks within ``budget`` too (BudgetExceeded beyond).

    >>> from littlestone.games.classes import make_class
    >>> soa = SOA()
    >>> soa.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=7")), seed=0)
    >>> soa.predict(3), soa.predict(0), soa.predict(6)  # Ldim 2 against 2: a tie; 3 vs 0
    (1.0, 1.0, 0.0)
    """

    id = "soa"
    games = frozenset({MISTAKE_BOUND})
    slow_moves = True  # each prediction asks exact Ldim of both halves

    def __init__(self, budget: int = LDIM_BUDGET) -> None:
        if budget < 1:
            raise ValueError(f"budget={budget} must be >= 1")
        self.budget = budget
        self._solver: LdimSolver | None = None
        self._v = 0
        self.ldim = 0

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class to compute Littlestone dimensions on"
        return too_large(game.hclass) or super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._solver, self.ldim = solver_within_budget(game.hclass, self.budget, "soa")
        self._v = self._solver.full

    def predict(self, x: Any) -> float:
        assert self._solver is not None, "start() first"
        ldim0, ldim1 = self._solver.split_ldims(self._v, x, self.budget)
        return 1.0 if ldim1 >= ldim0 else 0.0

    def update(self, x: Any, y: int) -> None:
        assert self._solver is not None, "start() first"
        survivors = self._solver.split(self._v, x)[y]
        if survivors:  # a label that would empty V is ignored
            self._v = survivors

    def bound(self, game: GameSpec) -> Bound | None:
        if isinstance(game.hclass, FiniteClass) and self._solver is not None:
            return Bound(self.ldim, "Ldim(H) (UML Lemma 21.7)")
        return None
