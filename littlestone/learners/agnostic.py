"""Agnostic online learning of a class of finite Ldim (UML Lemma 21.13, Thm 21.10): Hedge
over the experts that simulate SOA with its mistakes forced at chosen rounds, and Thm
21.10 whole: Hedge over H or over those experts, whichever bound is smaller."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import FiniteClass
from littlestone.games.errors import UnsupportedGame
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, Bound, GameSpec
from littlestone.games.ldim import LDIM_BUDGET, LdimSolver, bitset, solver_within_budget, too_large
from littlestone.learners.base import Learner, register
from littlestone.learners.experts import Hedge

FloatArray = NDArray[np.float64]

__all__ = ["Agnostic", "SOAExperts", "log_flip_sets", "soa_experts_bound_name"]

#: Groups of experts whose weight falls below exp(-PRUNE) of the heaviest are dropped
#: (their share of any prediction is then below 1e-30 per group).
PRUNE = 70.0


@functools.lru_cache(maxsize=65536)
def log_flip_sets(rounds: int, flips: int) -> float:
    """ln N(R, b), N(R, b) = sum_{l <= b} C(R, l): the sets of at most b rounds among R.

    >>> round(math.exp(log_flip_sets(10, 2)))  # 1 + 10 + 45
    56
    """
    if flips < 0:
        return -math.inf
    return math.log(sum(math.comb(rounds, size) for size in range(min(flips, rounds) + 1)))


def soa_experts_bound_name(rounds: int, ldim: int) -> str:
    """The printed form of soa-experts' bound: Sauer's lemma form only where it holds.

    >>> soa_experts_bound_name(2, 3).partition("; ")[2]
    'N = 2^T here (T = 2 < Ldim = 3: every set of rounds, and (eT/Ldim)^Ldim does not bound N)'
    """
    head = (f"expected regret <= sqrt(2 T ln N), N = sum_(l <= {ldim}) C(T, l) the SOA experts "
            "(UML Lemma 21.13, Thm 21.10)")
    if rounds >= ldim:
        return (f"{head}; N <= (eT/Ldim)^Ldim here (T = {rounds} >= Ldim = {ldim}, Sauer's "
                "lemma form): <= sqrt(2 Ldim T ln(eT/Ldim))")
    return (f"{head}; N = 2^T here (T = {rounds} < Ldim = {ldim}: every set of rounds, and "
            "(eT/Ldim)^Ldim does not bound N)")


@register
class SOAExperts(Learner):
    """Hedge over the experts Expert(i_1 .. i_L), L <= Ldim(H), that run SOA but predict
    against it at rounds i_1 < ... < i_L: expected regret <= sqrt(2 T ln N) against the
    best h in H, N = sum_{l <= Ldim} C(T, l) (UML Lemma 21.13, Thm 21.10).

    N is the number of experts. Sauer's lemma form N <= (eT/L)^L, L = Ldim(H), needs
    T >= L: then the bound is <= sqrt(2 L T ln(eT/L)). Below it N = 2^T (every set of
    rounds is a flip set) while (eT/L)^L can be smaller (thresholds:n=15, T = 2: N = 4,
    (2e/4)^4 = 3.41), so the printed form says which case it is. N <= (eT)^L for every
    T >= 1, which is UML's Ldim ln(eT).

    Expert(I) keeps a version space V (V_1 = H), predicts SOA's label ỹ = argmax_r
    Ldim(V^r) (1 on a tie) except at the rounds in I, where it predicts 1 - ỹ, and moves
    to the side it predicted. For every h some expert predicts as h on the whole
    sequence (flip exactly where h disagrees with SOA: each flip lowers Ldim(V)), so
    Hedge with eta = sqrt(2 ln N / T) over the N experts has the regret above against H,
    whatever the labels (the experts game over a class, noisy labels included). The
    bound beats Hedge over H, sqrt(2 T ln |H|), when |H| is large beside T^Ldim(H)
    (singletons on many points: ln(T + 1) against ln |H|).

    The experts are never listed: those in the same state (V, flips used) predict alike
    from then on, so it keeps one weight per state, each counting the N(R, b) ways to
    place the b flips left among the R rounds left. T must be announced; the class's
    exact Ldim must be within ``budget`` (as SOA's).

    >>> from littlestone.games.classes import make_class
    >>> learner = SOAExperts()
    >>> learner.start(GameSpec("experts", 4, make_class("singletons:n=3")), seed=0)
    >>> learner.experts  # flip sets of at most Ldim = 1 round among T = 4
    5
    >>> learner.weights(np.array([0.0, 1.0, 0.0]))  # SOA says 0; 1 expert in 5 flips to 1
    0.2
    """

    id = "soa-experts"
    games = frozenset({EXPERTS, MISTAKE_BOUND})
    deterministic = False
    slow_moves = True

    def __init__(self, budget: int = LDIM_BUDGET) -> None:
        if budget < 1:
            raise ValueError(f"budget={budget} must be >= 1")
        self.budget = budget
        self.experts = 0
        self.ldim = 0
        self._solver: LdimSolver | None = None
        self._groups: dict[tuple[int, int], float] = {}
        self._empty = -math.inf
        self._parts: list[tuple[int, int, int, float]] = []
        self._eta = 0.0
        self._left = 0
        self._column = 0

    def unsupported(self, game: GameSpec) -> str | None:
        if not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class (its experts simulate SOA on it)"
        if game.horizon is None:
            return "it needs the horizon T announced (its experts are flip sets within T)"
        return too_large(game.hclass) or super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._solver, self.ldim = solver_within_budget(game.hclass, self.budget, self.id)
        T = game.rounds
        log_n = log_flip_sets(T, self.ldim)
        self.experts = round(math.exp(log_n)) if log_n < 700 else 0
        self._log_n = log_n
        self._eta = math.sqrt(2 * log_n / T) if T and log_n > 0 else 0.0
        self._groups = {(self._solver.full, 0): log_n}
        self._empty = -math.inf
        self._parts = []
        self._left = T

    # -- one round -------------------------------------------------------------------

    def _soa(self, v: int, column: int) -> int:
        assert self._solver is not None
        one = v & column
        zero = v ^ one
        ldim1 = self._solver.ldim(one, self.budget) if one else -1
        ldim0 = self._solver.ldim(zero, self.budget) if zero else -1
        return 1 if ldim1 >= ldim0 else 0

    def _predict_column(self, column: int) -> float:
        """p: the weight of the experts predicting 1; keeps each part for the update."""
        R = max(self._left, 1)
        parts = []  # (version space, flips used, predicted label, log weight)
        for (v, j), log_m in self._groups.items():
            b = self.ldim - j
            y = self._soa(v, column)
            log_total = log_flip_sets(R, b)
            parts.append((v, j, y, log_m + log_flip_sets(R - 1, b) - log_total))
            if b > 0:
                parts.append((v, j + 1, 1 - y, log_m + log_flip_sets(R - 1, b - 1) - log_total))
        self._parts = parts
        self._column = column
        logs = np.array([p[3] for p in parts] + [self._empty])
        top = float(logs.max())
        weights = np.exp(logs - top)
        ones = float(sum(w for w, part in zip(weights, parts, strict=False) if part[2] == 1))
        return min(1.0, max(0.0, ones / float(weights.sum())))

    def _update_label(self, y: int) -> None:
        groups: dict[tuple[int, int], list[float]] = {}
        empty = [self._empty - self._eta * (y != 0)]  # an emptied expert predicts 0
        for v, j, label, log_w in self._parts:
            log_w -= self._eta * (label != y)
            side = v & self._column if label else v & ~self._column
            if side:
                groups.setdefault((side, j), []).append(log_w)
            else:
                empty.append(log_w)
        merged = {key: float(np.logaddexp.reduce(logs)) for key, logs in groups.items()}
        self._empty = float(np.logaddexp.reduce(empty))
        top = max([*merged.values(), self._empty])
        self._groups = {key: w for key, w in merged.items() if w >= top - PRUNE}
        self._parts = []
        self._left -= 1

    # -- the games -------------------------------------------------------------------

    def predict(self, x: Any) -> float:
        assert self._solver is not None, "start() first"
        return self._predict_column(self._solver.columns[x])

    def update(self, x: Any, y: int) -> None:
        self._update_label(y)

    def weights(self, advice: FloatArray | None) -> float:
        if advice is None:
            raise ValueError("soa-experts needs the class's advice (an instance per round)")
        return self._predict_column(bitset(advice >= 0.5))

    def update_costs(self, costs: FloatArray, y: int | None) -> None:
        if y is None:
            raise ValueError("soa-experts needs a label each round")
        self._update_label(y)

    def bound(self, game: GameSpec) -> Bound | None:
        if self._solver is None or not game.rounds:
            return None
        T, L = game.rounds, self.ldim
        value = math.sqrt(2 * T * self._log_n)
        return Bound(value, soa_experts_bound_name(T, L))


@register
class Agnostic(Learner):
    """UML Thm 21.10 whole: expected regret <= sqrt(2 T min(ln |H|, ln N)) <=
    sqrt(2 min{ln |H|, Ldim(H) ln(eT)} T) against the best h in H, by Hedge over H where
    |H| <= N and Hedge over the SOA experts (``soa-experts``, N of them) otherwise.

    N = sum_{l <= Ldim} C(T, l) <= (eT)^Ldim. Small classes pay ln |H| (thresholds:n=15:
    ln 16 against ln N = 13.2 at T = 150); large ones of small Ldim pay ln N (singletons
    on 2000 points, T = 300: ln 301 against ln 2000). When ln |H| <= ln(T + 1), the
    least ln N of a class with Ldim >= 1, it takes Hedge over H without computing Ldim
    (Ldim = 0 makes ln N = 0, but then every hypothesis agrees everywhere and no learner
    has any regret); when exact Ldim is beyond ``budget`` it takes Hedge over H too.
    ``experts`` says which: ``class`` or ``soa`` (``hedge_over`` in the result). T must be
    announced (both tunings need it).

    >>> from littlestone.games.classes import make_class
    >>> learner = Agnostic()
    >>> learner.start(GameSpec("experts", 150, make_class("thresholds:n=15")), seed=0)
    >>> game = GameSpec("experts", 150, make_class("thresholds:n=15"))
    >>> learner.experts, round(learner.bound(game).value, 2)  # sqrt(2 T ln 16)
    ('class', 28.84)
    >>> learner.start(GameSpec("experts", 300, make_class("singletons:n=2000")), seed=0)
    >>> learner.experts
    'soa'
    """

    id = "agnostic"
    games = frozenset({EXPERTS, MISTAKE_BOUND})
    deterministic = False
    slow_moves = True

    def __init__(self, budget: int = LDIM_BUDGET) -> None:
        if budget < 1:
            raise ValueError(f"budget={budget} must be >= 1")
        self.budget = budget
        self.experts = ""
        self._inner: Learner = Hedge(schedule="tuned")
        self._log_size = self._log_n = 0.0
        self._why = ""

    def unsupported(self, game: GameSpec) -> str | None:
        if not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class (Hedge over H, or the SOA experts of H)"
        if game.horizon is None:
            return "it needs the horizon T announced (both tunings use it)"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        T = game.rounds
        self._log_size = math.log(game.hclass.size)
        self._log_n = math.inf
        self._why = "not computed: ln|H| <= ln(T + 1) <= ln N"
        if self._log_size > math.log(T + 1):
            self._why = "not computed: exact Ldim beyond the budget"
            if too_large(game.hclass) is None:
                try:
                    _, ldim = solver_within_budget(game.hclass, self.budget, self.id)
                    self._log_n = log_flip_sets(T, ldim)
                except UnsupportedGame:
                    pass  # Ldim beyond the budget: Hedge over H
        if self._log_n < self._log_size:
            self.experts, self._inner = "soa", SOAExperts(budget=self.budget)
        else:
            self.experts, self._inner = "class", Hedge(schedule="tuned")
        self._inner.start(game, seed)

    def predict(self, x: Any) -> float:
        return self._inner.predict(x)

    def update(self, x: Any, y: int) -> None:
        self._inner.update(x, y)

    def weights(self, advice: FloatArray | None) -> FloatArray | float:
        if advice is None:
            raise ValueError("agnostic needs the class's advice (an instance per round)")
        return self._inner.weights(advice)

    def update_costs(self, costs: FloatArray, y: int | None) -> None:
        self._inner.update_costs(costs, y)

    def report(self) -> dict[str, str]:
        return {"hedge_over": self.experts}

    def bound(self, game: GameSpec) -> Bound | None:
        inner = self._inner.bound(game) if self.experts else None
        if inner is None:
            return None
        chosen = "Hedge over H" if self.experts == "class" else "Hedge over the SOA experts"
        shown_n = self._why if math.isinf(self._log_n) else f"{self._log_n:.4g}"
        return Bound(inner.value, "expected regret <= sqrt(2 T min(ln|H|, ln N)) <= "
                     "sqrt(2 min{ln|H|, Ldim ln(eT)} T) (UML Thm 21.10): "
                     f"{chosen}, ln|H| = {self._log_size:.4g}, ln N = {shown_n}")
