"""The consistent learners of the PAC notes: monotone conjunctions (elimination), k-CNF
(the reduction to a conjunction over the k-clauses) and decision lists (the greedy rule
finder).

Each outputs a hypothesis consistent with every example it was told when the target is
in its class, from a counted class H (:meth:`log_hypotheses` is ln |H|), so that
m >= (1/epsilon)(ln |H| + ln(1/delta)) examples make it PAC (games.pac, ``littlestone
pac``). They also play the mistake-bound game, predicting with the hypothesis of the
examples so far; their labels of many instances at once come from ``predict_all``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.concepts import (
    CLAUSE_LIMIT,
    KCNF,
    DecisionList,
    MonotoneConjunctions,
    clause_count,
    clause_table,
    decision_list_log_count,
    satisfied,
)
from littlestone.games.families import Conjunctions, Disjunctions
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.games.hypotheses import MAX_VARIABLES
from littlestone.learners.base import Learner, register

__all__ = ["DecisionListLearner", "KCNFLearner", "MonotoneConjunctionLearner"]

BoolArray = NDArray[np.bool_]
Masks = NDArray[np.int64]
#: Cells of the instances x clauses table evaluated at once.
CHUNK_CELLS = 1 << 22


def _variables(game: GameSpec) -> int | None:
    """n when the game's instances are the bit masks of n <= 62 boolean variables."""
    hclass = game.hclass
    if hclass is None:
        return None
    n = hclass.n_features
    return n if n <= MAX_VARIABLES and hclass.domain_size == 1 << n else None


class _BooleanLearner(Learner):
    games = frozenset({MISTAKE_BOUND})
    n = 0

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and _variables(game) is None:
            return "it needs a class over at most 62 boolean variables (instances as bit masks)"
        return super().unsupported(game)

    def predict_all(self, xs: Masks) -> BoolArray:
        """The current hypothesis on every instance of ``xs`` (bit masks)."""
        raise NotImplementedError

    def predict(self, x: Any) -> float:
        return 1.0 if self.predict_all(np.array([int(x)], dtype=np.int64))[0] else 0.0


@register
class MonotoneConjunctionLearner(_BooleanLearner):
    """The AND of the variables no positive example has had at 0 (the PAC notes): the
    most specific monotone conjunction consistent with the positives, consistent with
    the negatives too when the target is a monotone conjunction; ln |H| = n ln 2.

    It starts from x_1 AND ... AND x_n and errs only on positives (its variables always
    include the target's), each such mistake dropping at least one variable: at most n
    mistakes on ``monotone-conjunctions``.

    >>> from littlestone.games.concepts import MonotoneConjunctions
    >>> learner = MonotoneConjunctionLearner()
    >>> learner.start(GameSpec("mistake-bound", 5, MonotoneConjunctions(3)), seed=0)
    >>> learner.predict(0b011), learner.update(0b011, 1), learner.predict(0b011)
    (0.0, None, 1.0)
    >>> learner.mask  # x1 AND x2
    3
    """

    id = "monotone-conjunction"

    def __init__(self) -> None:
        self.mask = 0

    def reset(self, game: GameSpec, seed: int) -> None:
        self.n = _variables(game) or 0
        self.mask = (1 << self.n) - 1

    def update(self, x: Any, y: int) -> None:
        if y == 1:
            self.mask &= int(x)

    def predict(self, x: Any) -> float:
        return 1.0 if int(x) & self.mask == self.mask else 0.0

    def predict_all(self, xs: Masks) -> BoolArray:
        return (xs & self.mask) == self.mask  # type: ignore[no-any-return]  # numpy comparison

    def log_hypotheses(self, game: GameSpec) -> float | None:
        n = _variables(game)
        return None if n is None else n * math.log(2)

    def bound(self, game: GameSpec) -> Bound | None:
        if isinstance(game.hclass, MonotoneConjunctions):
            return Bound(game.hclass.n, "n: each mistake is on a positive and drops a variable "
                         "(elimination, the PAC notes)")
        return None


@register
class KCNFLearner(_BooleanLearner):
    """The AND of the clauses of at most k literals that no positive example has falsified
    (the PAC notes' reduction: a monotone conjunction over the c = sum_{i <= k} C(n, i) 2^i
    clauses as variables); ln |H| = c ln 2.

    ``k`` defaults to the class's k on ``k-cnf``, and to 2 elsewhere. Its clauses always
    include the target's, so it errs only on positives, each mistake dropping a clause:
    at most c mistakes on a k-CNF target (``monotone-conjunctions``, ``conjunctions`` and
    disjunctions of at most k variables among them). k = 1 is the conjunctions with
    negations (the notes' reduction of x_i and not x_i to 2n variables): at most 2n.

    >>> from littlestone.games.concepts import KCNF
    >>> learner = KCNFLearner()
    >>> learner.start(GameSpec("mistake-bound", 5, KCNF(2, 2)), seed=0)
    >>> learner.clauses  # x1, not x1, x2, not x2, and the 4 clauses of two literals
    8
    >>> learner.update(0b00, 1); learner.update(0b01, 1)
    >>> int(learner.alive.sum())  # not x2, and x1 or not x1, and not x1 or not x2
    3
    >>> learner.predict(0b10), learner.predict(0b01)
    (0.0, 1.0)
    """

    id = "k-cnf"

    def __init__(self, k: int | None = None) -> None:
        if k is not None and k < 1:
            raise ValueError(f"k={k} must be >= 1")
        self.k = k
        self.clauses = 0
        self.alive: BoolArray = np.zeros(0, dtype=np.bool_)
        self._positive: Masks = np.zeros(0, dtype=np.int64)
        self._negative: Masks = np.zeros(0, dtype=np.int64)

    def _k(self, game: GameSpec) -> int:
        if self.k is not None:
            return self.k
        return game.hclass.k if isinstance(game.hclass, KCNF) else 2

    def unsupported(self, game: GameSpec) -> str | None:
        n = _variables(game)
        if n is not None:
            k = self._k(game)
            if isinstance(game.hclass, KCNF) and game.hclass.k > k:
                return f"its clauses have at most k = {k} literals, the class's {game.hclass.k}"
            if clause_count(n, k) > CLAUSE_LIMIT:
                return (f"n = {n}, k = {k} gives {clause_count(n, k)} clauses, over the limit "
                        f"of {CLAUSE_LIMIT}")
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self.n = _variables(game) or 0
        self._positive, self._negative = clause_table(self.n, self._k(game))
        self.clauses = len(self._positive)
        self.alive = np.ones(self.clauses, dtype=np.bool_)

    def update(self, x: Any, y: int) -> None:
        if y == 1:
            self.alive &= satisfied(self._positive, self._negative,
                                    np.array([int(x)], dtype=np.int64))[0]

    def predict_all(self, xs: Masks) -> BoolArray:
        positive, negative = self._positive[self.alive], self._negative[self.alive]
        out = np.ones(len(xs), dtype=np.bool_)
        step = max(1, CHUNK_CELLS // max(len(positive), 1))
        for start in range(0, len(xs), step):
            chunk = xs[start : start + step]
            out[start : start + step] = satisfied(positive, negative, chunk).all(axis=1)
        return out

    def log_hypotheses(self, game: GameSpec) -> float | None:
        n = _variables(game)
        return None if n is None else clause_count(n, self._k(game)) * math.log(2)

    def bound(self, game: GameSpec) -> Bound | None:
        """c mistakes on every class of k-CNF formulas of at most its k: k-CNF itself,
        (monotone) conjunctions (clauses of one literal; always-false is x1 AND NOT x1)
        and disjunctions of at most k variables (one clause)."""
        hclass, k = game.hclass, self._k(game)
        if (isinstance(hclass, MonotoneConjunctions | Conjunctions)
                or (isinstance(hclass, KCNF) and hclass.k <= k)
                or (isinstance(hclass, Disjunctions) and hclass.k <= k)):
            return Bound(self.clauses, f"c = {self.clauses} clauses: each mistake is on a "
                         "positive and drops a clause (the PAC notes' reduction)")
        return None


@register
class DecisionListLearner(_BooleanLearner):
    """The greedy decision list of the PAC notes: repeatedly append a rule "if literal then
    b" that fires on some example left and agrees with all of them, and drop the examples
    it decides; consistent whenever some decision list is. ln |H| = ln(2 sum_{j <= n}
    n!/(n-j)! 4^j), the lists of rules on distinct variables and a default.

    A rule on a variable already used would fire on every example left (they all have
    the other value), so the rules use distinct variables, and the list ends with the
    default once the examples left agree. In the mistake-bound game it predicts with the
    list of the examples so far, rebuilt only after an example contradicts it; it
    prints no mistake bound, and a server does not serve it (an adversary that contradicts
    it every round makes a game cost O(T^2 n)). If no rule is consistent (a target that
    is not a decision list), the default is the majority label of the examples left.

    >>> from littlestone.games.concepts import DecisionLists
    >>> learner = DecisionListLearner()
    >>> learner.start(GameSpec("mistake-bound", 9, DecisionLists(3)), seed=0)
    >>> for x, y in [(0b001, 1), (0b011, 1), (0b010, 0), (0b110, 1)]:
    ...     learner.update(x, y)
    >>> print(learner.decision_list())
    if x1 then 1, else if x3 then 1, else 0
    """

    id = "decision-list"
    slow_moves = True  # a contradicted list is rebuilt from every example: O(t n)
    #: Not built for a peer: an adversary that contradicts it every round makes a game
    #: of T rounds cost O(T^2 n).
    served = False

    def __init__(self) -> None:
        self._xs: list[int] = []
        self._ys: list[int] = []
        self._list = DecisionList((), 0)
        self._stale = False

    def reset(self, game: GameSpec, seed: int) -> None:
        self.n = _variables(game) or 0
        self._xs, self._ys = [], []
        self._list = DecisionList((), 0)
        self._stale = False

    def update(self, x: Any, y: int) -> None:
        self._xs.append(int(x))
        self._ys.append(int(y))
        if not self._stale:  # rebuilt when next asked, if this example contradicts it
            self._stale = bool(self._list.labels(np.array([int(x)], dtype=np.int64))[0]) != (
                y == 1)

    def decision_list(self) -> DecisionList:
        """The current hypothesis."""
        if self._stale:
            self._list = self._greedy()
            self._stale = False
        return self._list

    def _greedy(self) -> DecisionList:
        xs = np.array(self._xs, dtype=np.int64)
        ys = np.array(self._ys, dtype=np.bool_)
        bits = ((xs[:, None] >> np.arange(self.n)) & 1).astype(np.bool_)
        used = np.zeros(self.n, dtype=np.bool_)
        rules: list[tuple[int, int, int]] = []
        while True:
            if len(ys) == 0 or ys.all() or not ys.any():
                return DecisionList(tuple(rules), int(len(ys) > 0 and bool(ys[0])))
            rule = self._rule(bits, ys, used)
            if rule is None:  # no decision list is consistent: the majority left
                return DecisionList(tuple(rules), int(2 * int(ys.sum()) >= len(ys)))
            variable, value, _ = rule
            rules.append(rule)
            used[variable] = True
            keep = bits[:, variable] != bool(value)
            bits, ys = bits[keep], ys[keep]

    @staticmethod
    def _rule(bits: BoolArray, ys: BoolArray, used: BoolArray) -> tuple[int, int, int] | None:
        """The first rule (variable, value, output), value 1 before 0, that fires on some
        example left and agrees with every one it fires on."""
        for value in (1, 0):
            fires = bits if value else ~bits
            count = fires.sum(axis=0)
            ones = (fires & ys[:, None]).sum(axis=0)
            good = (count > 0) & ((ones == count) | (ones == 0)) & ~used
            if good.any():
                variable = int(np.argmax(good))
                return variable, value, int(ones[variable] == count[variable])
        return None

    def predict_all(self, xs: Masks) -> BoolArray:
        return self.decision_list().labels(xs)

    def log_hypotheses(self, game: GameSpec) -> float | None:
        n = _variables(game)
        return None if n is None else decision_list_log_count(n)
