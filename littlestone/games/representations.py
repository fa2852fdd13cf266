"""The representations of the PAC notes and the halfspace notes, written out and checked:
a k-term DNF as a k-CNF (the k-CNF learner's targets may be k-term DNF), a k-DNF's
complement as a k-CNF of negated literals (the dual reduction), and conjunctions,
disjunctions and decision lists as halfspaces, with exponentially decreasing weights
for the lists.

A term or a clause is a pair of bit masks (positive variables, negated variables), as in
:mod:`littlestone.games.concepts`; a halfspace is (w, b), labelling x in {0, 1}^n by
[<w, x> + b > 0].
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import Any, Protocol, cast

import numpy as np
from numpy.typing import NDArray

from littlestone.games.concepts import DecisionList, satisfied
from littlestone.games.game import GameSpec

__all__ = [
    "DECISION_LIST_BASE",
    "Complement",
    "cnf_labels",
    "conjunction_halfspace",
    "decision_list_halfspace",
    "disjunction_halfspace",
    "dnf_complement_as_cnf",
    "dnf_labels",
    "halfspace_labels",
    "term_dnf_as_cnf",
]

Masks = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]
#: A term (an AND of literals) or a clause (an OR): (positive mask, negated mask).
Literals = tuple[int, int]
#: The ratio of a decision list's consecutive weights: the least that always works (each
#: rule's weight exceeds the sum of all later ones and the default's).
DECISION_LIST_BASE = 2.0


def dnf_labels(terms: Sequence[Literals], xs: Masks) -> BoolArray:
    """The OR of the terms on every instance of ``xs`` (bit masks).

    >>> dnf_labels([(0b011, 0), (0, 0b100)], np.arange(8)).astype(int).tolist()  # x1x2 v ¬x3
    [1, 1, 1, 1, 0, 0, 0, 1]
    """
    out = np.zeros(len(xs), dtype=np.bool_)
    for positive, negative in terms:
        out |= ((xs & positive) == positive) & ((xs & negative) == 0)
    return out


def term_dnf_as_cnf(terms: Sequence[Literals]) -> tuple[Masks, Masks]:
    """The k-CNF equal to a k-term DNF (the PAC notes): T_1 v ... v T_k is the AND, over
    every choice of one literal from each term, of the OR of the chosen literals; each such
    clause has at most k literals on distinct variables. Tautologies (x and ¬x) are dropped,
    and repeats; the empty DNF (false) is the empty clause, x1 AND ¬x1 written as two.

    >>> pos, neg = term_dnf_as_cnf([(0b011, 0), (0b1100, 0)])  # x1x2 v x3x4
    >>> sorted(zip(pos.tolist(), neg.tolist()))  # (x1 v x3)(x1 v x4)(x2 v x3)(x2 v x4)
    [(5, 0), (6, 0), (9, 0), (10, 0)]
    """
    if not terms:
        return np.array([1, 0], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    literal_lists = [[(1 << v, 0) for v in range(positive.bit_length()) if positive >> v & 1]
                     + [(0, 1 << v) for v in range(negative.bit_length()) if negative >> v & 1]
                     for positive, negative in terms]
    if any(not literals for literals in literal_lists):  # an empty term is true: so is the DNF
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    clauses: set[Literals] = set()
    for choice in product(*literal_lists):
        positive = negative = 0
        for p, q in choice:
            positive |= p
            negative |= q
        if positive & negative == 0:
            clauses.add((positive, negative))
    ordered = sorted(clauses)
    return (np.array([c[0] for c in ordered], dtype=np.int64),
            np.array([c[1] for c in ordered], dtype=np.int64))


def dnf_complement_as_cnf(terms: Sequence[Literals]) -> tuple[Masks, Masks]:
    """The dual reduction: NOT(T_1 v ... v T_s) = AND_j NOT T_j, and NOT T_j is the clause
    of T_j's literals negated, so a k-DNF's complement is a k-CNF of negated literals.

    >>> dnf_complement_as_cnf([(0b01, 0b10)])  # NOT(x1 ¬x2) = ¬x1 v x2
    (array([2]), array([1]))
    """
    return (np.array([negative for _, negative in terms], dtype=np.int64),
            np.array([positive for positive, _ in terms], dtype=np.int64))


def cnf_labels(clauses: tuple[Masks, Masks], xs: Masks) -> BoolArray:
    """The AND of the clauses on every instance of ``xs``."""
    return cast(BoolArray, satisfied(clauses[0], clauses[1], xs).all(axis=1))


class _Learner(Protocol):
    def start(self, game: GameSpec, seed: int) -> None: ...
    def predict(self, x: Any) -> float: ...
    def update(self, x: Any, y: int) -> None: ...


class Complement:
    """A learner of the complements: it tells ``inner`` the flipped labels and flips its
    predictions. With a k-CNF learner inside it learns k-DNF (the PAC notes' dual
    reduction), with the same mistake bound and PAC sample: a mistake of one is a mistake
    of the other, and the complement of a consistent output is consistent."""

    def __init__(self, inner: _Learner) -> None:
        self.inner = inner

    def start(self, game: GameSpec, seed: int) -> None:
        self.inner.start(game, seed)

    def predict(self, x: Any) -> float:
        return 1.0 - self.inner.predict(x)

    def update(self, x: Any, y: int) -> None:
        self.inner.update(x, 1 - int(y))

    def predict_all(self, xs: Masks) -> BoolArray:
        inner_all = getattr(self.inner, "predict_all", None)
        if inner_all is not None:
            return ~np.asarray(inner_all(xs), dtype=np.bool_)
        return np.array([self.predict(int(x)) >= 0.5 for x in xs])


def halfspace_labels(w: FloatArray, b: float, xs: Masks) -> BoolArray:
    """[<w, x> + b > 0] on every bit mask of ``xs`` (x_i the i-th bit)."""
    bits = (xs[:, None] >> np.arange(len(w))) & 1
    labels: BoolArray = bits @ w + b > 0
    return labels


def _signed(n: int, literals: Literals) -> tuple[FloatArray, int]:
    """w with +1 on the positive variables, -1 on the negated, and how many are negated:
    <w, x> + (negated) counts the true literals."""
    positive, negative = literals
    w = np.array([(positive >> i & 1) - (negative >> i & 1) for i in range(n)],
                 dtype=np.float64)
    return w, bin(negative).count("1")


def conjunction_halfspace(n: int, term: Literals) -> tuple[FloatArray, float]:
    """An AND of literals as (w, b): its true literals number all of them, L, so
    [(true literals) - L + 1/2 > 0].

    >>> w, b = conjunction_halfspace(2, (0b01, 0b10))  # x1 ¬x2
    >>> w.tolist(), b, halfspace_labels(w, b, np.arange(4)).tolist()
    ([1.0, -1.0], -0.5, [False, True, False, False])
    """
    w, negated = _signed(n, term)
    literals = bin(term[0]).count("1") + negated
    return w, float(negated - literals) + 0.5


def disjunction_halfspace(n: int, clause: Literals) -> tuple[FloatArray, float]:
    """An OR of literals as (w, b): some literal is true, [(true literals) - 1/2 > 0].

    >>> w, b = disjunction_halfspace(2, (0b01, 0b10))  # x1 v ¬x2
    >>> halfspace_labels(w, b, np.arange(4)).tolist()
    [True, True, False, True]
    """
    w, negated = _signed(n, clause)
    return w, float(negated) - 0.5


def decision_list_halfspace(n: int, dl: DecisionList,
                            base: float = DECISION_LIST_BASE) -> tuple[FloatArray, float]:
    """A decision list of L rules as (w, b): rule j (from 0) adds +-base^(L - j) when its
    literal is true, the default +-1 (+ for the output 1). With base 2 the first rule that
    fires outweighs every later one and the default (2^(L-j) > 2^(L-j) - 2 + 1), so the
    sign is its output: the halfspace notes' exponentially decreasing weights. A smaller
    base fails on some list (:func:`decision_list_halfspace` with ``base`` below 2 is the
    weak variant the tests show failing).

    >>> dl = DecisionList(((0, 1, 0), (1, 0, 1)), default=0)  # x1 -> 0, ¬x2 -> 1, else 0
    >>> w, b = decision_list_halfspace(2, dl)
    >>> w.tolist(), b
    ([-4.0, -2.0], 1.0)
    >>> halfspace_labels(w, b, np.arange(4)).tolist() == dl.labels(np.arange(4)).tolist()
    True
    """
    w = np.zeros(n, dtype=np.float64)
    b = 1.0 if dl.default else -1.0
    length = len(dl.rules)
    for j, (variable, value, output) in enumerate(dl.rules):
        weight = (1.0 if output else -1.0) * base ** (length - j)
        if value:  # the literal x_v
            w[variable] += weight
        else:  # the literal 1 - x_v
            b += weight
            w[variable] -= weight
    return w, b
