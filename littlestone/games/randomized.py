"""The randomised Littlestone value: the minimax expected number of mistakes of the
realizable game on a finite class, exactly.

The learner answers p (the probability of predicting 1) and the adversary, who sees p
but not the coin, picks a label that keeps the version space non-empty. With t rounds
left the value of version space V is

    v_0(V) = 0,   v_t(V) = max(0, max over x splitting V of f(v_{t-1}(V_x^0), v_{t-1}(V_x^1))),
    f(a, b) = (1 + a + b) / 2 when |a - b| <= 1, else max(a, b),

because min_p max(p + a, 1 - p + b) is reached at p = (1 + b - a) / 2, clipped to
[0, 1] (a non-splitting x costs an optimal learner nothing). Every round that splits V
removes a hypothesis, so v_t(V) = v(V) once t >= |V| - 1. By induction
Ldim(V)/2 <= v(V) <= Ldim(V), and v(V) <= ln |V| (randomised halving), so v is at most
the smaller of the two; singletons on n points have v = 1 - 2^-(n-1), thresholds on
2^L - 1 points v = L/2 (docs/theory.md).

Values are dyadic rationals of denominator at most 2^(|V|-1); :class:`RandomizedValue`
keeps them as integers scaled by 2^|H|, so they are exact, and hands them out as
:class:`fractions.Fraction`.

>>> from littlestone.games.classes import make_class
>>> solver = randomized_solver_for(make_class("thresholds:n=3"))
>>> solver.value(), solver.value(horizon=1)
(Fraction(1, 1), Fraction(1, 2))
>>> randomized_solver_for(make_class("singletons:n=4")).value()
Fraction(7, 8)
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import FiniteClass
from littlestone.games.errors import BeyondBudget, BudgetExceeded

__all__ = [
    "RANDOMIZED_BUDGET",
    "RandomizedValue",
    "class_randomized_value",
    "randomized_solver_for",
    "randomized_within_budget",
]

#: What one of our instance checks (does this instance split this version space, with
#: the values' bookkeeping) costs in the units of games.ldim's budget, which a server
#: caps for every agent's ``budget`` (20 to 40 times an exact-Ldim check, measured).
CHECK_COST = 32
#: Default budget of one computation, in games.ldim's units (400,000 of our checks).
RANDOMIZED_BUDGET = 400_000 * CHECK_COST


class RandomizedValue:
    """Exact v_t(V) for every version space V (a bitset, as in games.ldim) of one class.

    ``horizon`` None means as many rounds as it takes (the value v(V)).
    """

    def __init__(self, matrix: NDArray[np.bool_]) -> None:
        m = np.asarray(matrix, dtype=np.bool_)
        self.n_hypotheses, self.n_instances = m.shape
        self.full = (1 << self.n_hypotheses) - 1
        #: 1 in the integer scale of the values (exact: depths are < |H|).
        self.one: int = 1 << int(self.n_hypotheses)
        packed = np.packbits(m, axis=0, bitorder="little")
        self.columns: list[int] = [
            int.from_bytes(packed[:, x].tobytes(), "little") for x in range(self.n_instances)
        ]
        seen: set[int] = set()
        self._roots: list[int] = []
        for column in self.columns:
            key = min(column, self.full ^ column)
            if key and key not in seen:
                seen.add(key)
                self._roots.append(column)
        self._cache: dict[tuple[int, int], int] = {}
        self._work_left = 0
        self._lock = threading.RLock()
        #: The largest budget that failed, per (version space, rounds): not retried below it.
        self._failed: dict[tuple[int, int], int] = {}

    @property
    def nbytes(self) -> int:
        """About the bytes the solver holds: its columns and its caches (measured with
        tracemalloc: 140 to 200 bytes an entry, for 37 to 200 hypotheses)."""
        width = int(self.n_hypotheses) // 8
        return (int(self.n_instances) * (28 + width)
                + (len(self._cache) + len(self._failed)) * (160 + 2 * width))

    # -- values ----------------------------------------------------------------------

    def scaled(self, version_space: int | None = None, horizon: int | None = None,
               budget: int = RANDOMIZED_BUDGET) -> int:
        """v_t(V) times :attr:`one` (an exact integer); BudgetExceeded beyond ``budget``."""
        v = self.full if version_space is None else version_space
        if v == 0:
            return 0
        t = self._rounds(v, horizon)
        key = (v, t)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        with self._lock:  # (one computation at a time: the budget is the solver's)
            if self._failed.get(key, -1) >= budget:
                raise BudgetExceeded(
                    f"the randomised value needs more than {budget} instance checks")
            self._work_left = budget
            try:
                return self._solve(v, t, self._roots)
            except BudgetExceeded:
                self._failed[key] = budget
                raise

    def value(self, version_space: int | None = None, horizon: int | None = None,
              budget: int = RANDOMIZED_BUDGET) -> Fraction:
        """v_t(V) as a fraction (t = ``horizon``; None: unbounded)."""
        return Fraction(self.scaled(version_space, horizon, budget), self.one)

    def split(self, version_space: int, x: int) -> tuple[int, int]:
        """(V_x^0, V_x^1)."""
        one = version_space & self.columns[x]
        return version_space ^ one, one

    def prediction(self, version_space: int, x: int, rounds_left: int | None,
                   budget: int = RANDOMIZED_BUDGET) -> float:
        """The optimal learner's p on x with ``rounds_left`` rounds to play (this one
        included): (1 + v1 - v0)/2 clipped to [0, 1], v_r the value of V_x^r with one
        round less; the label every hypothesis agrees on when x does not split V."""
        zero, one = self.split(version_space, x)
        if not one or not zero:
            return 1.0 if one else 0.0
        later = None if rounds_left is None else rounds_left - 1
        a = self.scaled(zero, later, budget)
        b = self.scaled(one, later, budget)
        p = Fraction(self.one + b - a, 2 * self.one)
        return float(min(max(p, Fraction(0)), Fraction(1)))

    def label(self, version_space: int, x: int, p: float, rounds_left: int | None,
              budget: int = RANDOMIZED_BUDGET) -> int:
        """The forcing adversary's label: argmax_y |p - y| + v(V_x^y) over the labels
        that keep V non-empty (0 on a tie)."""
        zero, one = self.split(version_space, x)
        if not one or not zero:
            return 1 if one else 0
        later = None if rounds_left is None else rounds_left - 1
        exact = Fraction(p)
        a = exact + Fraction(self.scaled(zero, later, budget), self.one)
        b = 1 - exact + Fraction(self.scaled(one, later, budget), self.one)
        return 1 if b > a else 0

    def best_instance(self, version_space: int, rounds_left: int | None,
                      budget: int = RANDOMIZED_BUDGET) -> int | None:
        """An instance x attaining v_t(V) = f(v_{t-1}(V0), v_{t-1}(V1)) (the first such
        in instance order), or None when v_t(V) = 0."""
        target = self.scaled(version_space, rounds_left, budget)
        if target == 0:
            return None
        later = None if rounds_left is None else rounds_left - 1
        for x, column in enumerate(self.columns):
            one = version_space & column
            if one == 0 or one == version_space:
                continue
            a, b = self._cached(version_space ^ one, later), self._cached(one, later)
            if a is not None and b is not None and self._f(a, b) == target:
                return x  # the best split was solved with v_t(V): its sides are cached
        raise AssertionError("no split attains the value")  # pragma: no cover - a solver bug

    # -- the recursion ---------------------------------------------------------------

    def _rounds(self, v: int, horizon: int | None) -> int:
        """The rounds that matter: min(horizon, |V| - 1)."""
        useful = v.bit_count() - 1
        return useful if horizon is None else max(0, min(horizon, useful))

    def _cached(self, v: int, horizon: int | None) -> int | None:
        t = self._rounds(v, horizon)
        return 0 if t <= 0 else self._cache.get((v, t))

    def _f(self, a: int, b: int) -> int:
        if abs(a - b) <= self.one:
            return (self.one + a + b) >> 1  # exact: a, b and one are even
        return max(a, b)

    def _upper(self, n: int) -> float:
        """An upper bound on v(V) for |V| = n: min(floor(log2 n), ln n)."""
        return min(float(n.bit_length() - 1), math.log(n)) if n > 1 else 0.0

    def _solve(self, v: int, t: int, candidates: list[int]) -> int:
        n = v.bit_count()
        t = min(t, n - 1)
        if t <= 0:
            return 0
        key = (v, t)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        self._work_left -= CHECK_COST * len(candidates)
        if self._work_left < 0:
            raise BudgetExceeded(
                "the randomised value needs more instance checks than the budget; "
                f"{len(self._cache)} version spaces are cached so far")
        splits = []
        seen: set[int] = set()
        live = []
        for column in candidates:
            one = v & column
            if one == 0 or one == v:
                continue
            zero = v ^ one
            pair = one if one < zero else zero
            if pair in seen:
                continue
            seen.add(pair)
            live.append(column)
            n1 = one.bit_count()
            splits.append((min(n1, n - n1), one, zero))
        splits.sort(key=lambda s: s[0], reverse=True)  # the most balanced first
        best = 0
        cap = (n.bit_length() - 1) * self.one  # v <= Ldim <= floor(log2 |V|)
        for _, one, zero in splits:
            u0, u1 = self._upper(zero.bit_count()), self._upper(one.bit_count())
            ceiling = (1 + u0 + u1) / 2 if abs(u0 - u1) <= 1 else max(u0, u1)
            if ceiling < best / self.one * (1 - 1e-12):
                continue  # f is monotone: this split cannot beat the best found
            value = self._f(self._solve(zero, t - 1, live), self._solve(one, t - 1, live))
            if value > best:
                best = value
                if best >= cap:
                    break
        self._cache[key] = best
        return best


#: The solvers a process keeps, by their class's truth table: at most this many, and
#: their :attr:`~RandomizedValue.nbytes` at most :data:`SOLVER_CACHE_BYTES` in all (as
#: exact Ldim's); the least recently used go first. A solver in use by a game stays alive
#: with it; it is only no longer shared.
SOLVERS_KEPT = 16
SOLVER_CACHE_BYTES = 256 << 20
_SHARED: OrderedDict[str, RandomizedValue] = OrderedDict()
_SHARED_LOCK = threading.Lock()


def randomized_solver_for(hclass: FiniteClass) -> RandomizedValue:
    """The shared solver of a class (one per truth table, whichever object carries it:
    every game of a tournament's worker makes its class again); BudgetExceeded if its
    truth table is beyond the matrix budget.

    >>> from littlestone.games.classes import make_class
    >>> a, b = make_class("thresholds:n=5"), make_class("thresholds:n=5")
    >>> randomized_solver_for(a) is randomized_solver_for(b)
    True
    """
    key = hclass.fingerprint
    with _SHARED_LOCK:
        solver = _SHARED.get(key)
    if solver is None:
        made = RandomizedValue(hclass.matrix())  # (outside the lock: it may be slow)
        with _SHARED_LOCK:
            solver = _SHARED.setdefault(key, made)
    with _SHARED_LOCK:  # (its caches grow as games ask: counted at each call)
        if key in _SHARED:
            _SHARED.move_to_end(key)
        total = sum(kept.nbytes for kept in _SHARED.values())
        while _SHARED and (len(_SHARED) > SOLVERS_KEPT or total > SOLVER_CACHE_BYTES):
            total -= _SHARED.popitem(last=False)[1].nbytes
    return solver


#: Instance checks `ldim` (and a result's ``randomized_value``) spend on the randomised
#: value before printing null.
LDIM_EXTRAS_BUDGET = 1_600_000


def class_randomized_value(hclass: FiniteClass, horizon: int | None = None,
                           budget: int = RANDOMIZED_BUDGET) -> Fraction:
    """v_T(H) (v(H) when ``horizon`` is None); BudgetExceeded beyond ``budget``.

    >>> from littlestone.games.classes import make_class
    >>> class_randomized_value(make_class("thresholds:n=7"))
    Fraction(3, 2)
    """
    return randomized_solver_for(hclass).value(horizon=horizon, budget=budget)


def randomized_within_budget(hclass: FiniteClass, horizon: int | None, budget: int,
                             who: str) -> RandomizedValue:
    """The class's shared solver with v_T(H) computed, or UnsupportedGame naming the
    budget (what the randomised learner and adversary refuse with before round 1)."""
    try:
        solver = randomized_solver_for(hclass)
        solver.scaled(horizon=horizon, budget=budget)
        return solver
    except BudgetExceeded as exc:
        raise BeyondBudget(
            f"{who} cannot play {hclass.spec}: the exact randomised value is beyond its "
            f"budget (budget={budget} instance checks; {exc})") from None
