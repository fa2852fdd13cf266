"""The boolean concept classes of the PAC notes: monotone conjunctions, k-CNF formulas
and decision lists over n variables, for the PAC game (games.pac).

Each class draws the target of a PAC run (:meth:`sample_target`), labels instances by
it in one vectorised pass (:meth:`labels`), and counts the hypotheses its consistent
learner outputs from: ln |H| of the bound m >= (1/epsilon)(ln |H| + ln(1/delta)).

====================================  =============================  ====================
spec                                  targets drawn                  ln |H| (the outputs)
====================================  =============================  ====================
``monotone-conjunctions:n=N``         AND of ``literals`` variables  n ln 2
``k-cnf:n=N,k=K``                     AND of ``clauses`` clauses of  c ln 2, c = sum_{i<=k}
                                      exactly K literals             C(n, i) 2^i clauses
``decision-lists:n=N``                ``length`` rules on distinct   ln(2 sum_{j<=n}
                                      variables, then a default      n!/(n-j)! 4^j)
====================================  =============================  ====================

An instance is the bit mask of the true variables (bit i is x_{i+1}), as for the
boolean classes of games.classes; a clause is a pair of masks (its positive and its
negated variables), satisfied when x meets the first or misses part of the second.

>>> C = make_concepts("monotone-conjunctions:n=4")
>>> C.labels(0b0011, np.array([0b0111, 0b0101])).tolist()  # x1 AND x2
[True, False]
>>> round(make_concepts("k-cnf:n=3,k=2").log_size() / math.log(2))  # 6 + 12 clauses
18
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations, product
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import SpecError
from littlestone.games.hypotheses import (
    BoolArray,
    FiniteClass,
    FloatArray,
    HypothesisClass,
    Instance,
)
from littlestone.games.spec import Params, format_spec, parse_spec

__all__ = [
    "CLAUSE_LIMIT",
    "CONCEPTS",
    "KCNF",
    "MAX_CONCEPT_VARIABLES",
    "DecisionList",
    "DecisionLists",
    "MonotoneConjunctions",
    "clause_count",
    "clause_table",
    "decision_list_log_count",
    "make_concepts",
    "satisfied",
]

Masks = NDArray[np.int64]
#: Most variables of a concept class: the PAC game's true error enumerates the 2^n
#: instances.
MAX_CONCEPT_VARIABLES = 20
#: Most clauses of a k-CNF class (its learner keeps one flag a clause).
CLAUSE_LIMIT = 1 << 12


def _bits(n: int, x: Instance) -> FloatArray:
    return ((int(x) >> np.arange(n)) & 1).astype(np.float64)


def _check_mask(n: int, x: object) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer):
        raise ValueError(f"instance {x!r} is not an integer")
    if not 0 <= int(x) < 1 << n:
        raise ValueError(f"instance {int(x)} is outside the domain 0..{(1 << n) - 1}")
    return int(x)


def clause_count(n: int, k: int) -> int:
    """c = sum_{i=1..k} C(n, i) 2^i: the clauses of 1 to k literals on distinct variables.

    >>> clause_count(3, 2), clause_count(10, 1)
    (18, 20)
    """
    return sum(math.comb(n, i) * 2**i for i in range(1, min(k, n) + 1))


def clause_table(n: int, k: int) -> tuple[Masks, Masks]:
    """The positive and the negated masks of every clause counted by :func:`clause_count`,
    by size, then variables, then signs.

    >>> pos, neg = clause_table(2, 1)
    >>> pos.tolist(), neg.tolist()  # x1, not x1, x2, not x2
    ([1, 0, 2, 0], [0, 1, 0, 2])
    """
    positive, negative = [], []
    for size in range(1, min(k, n) + 1):
        for variables in combinations(range(n), size):
            for signs in product((1, 0), repeat=size):
                positive.append(sum(1 << v for v, s in zip(variables, signs, strict=True) if s))
                negative.append(sum(1 << v for v, s in zip(variables, signs, strict=True)
                                    if not s))
    return np.array(positive, dtype=np.int64), np.array(negative, dtype=np.int64)


def satisfied(positive: Masks, negative: Masks, xs: Masks) -> BoolArray:
    """Which clauses each instance satisfies: a len(xs) x len(positive) table.

    >>> satisfied(np.array([1, 0]), np.array([0, 1]), np.array([0, 1])).tolist()
    [[False, True], [True, False]]
    """
    xs = xs[:, None]
    return cast(BoolArray, ((xs & positive) != 0) | ((~xs & negative) != 0))


def decision_list_log_count(n: int) -> float:
    """ln(2 sum_{j=0..n} n!/(n-j)! 4^j): decision lists of rules on distinct variables
    (each a literal and an output) and a default output.

    >>> round(math.exp(decision_list_log_count(1)))  # the 2 constants, and 4 x 2 lists
    10
    """
    terms = [math.lgamma(n + 1) - math.lgamma(n - j + 1) + j * math.log(4) for j in range(n + 1)]
    top = max(terms)
    return math.log(2) + top + math.log(sum(math.exp(t - top) for t in terms))


@dataclass(frozen=True)
class DecisionList:
    """"if x_i = v then b, else if ... else default": rules (variable, value, output).

    >>> dl = DecisionList(((0, 1, 0), (2, 0, 1)), default=0)  # x1 -> 0, not x3 -> 1, else 0
    >>> dl.labels(np.array([0b001, 0b000, 0b100])).tolist()
    [False, True, False]
    """

    rules: tuple[tuple[int, int, int], ...]
    default: int

    def labels(self, xs: Masks) -> BoolArray:
        out = np.full(len(xs), bool(self.default))
        undecided = np.ones(len(xs), dtype=np.bool_)
        for variable, value, output in self.rules:
            fires = undecided & (((xs >> variable) & 1) == value)
            out[fires] = bool(output)
            undecided &= ~fires
        return out

    def __str__(self) -> str:
        parts = [f"if {'' if value else '¬'}x{variable + 1} then {output}"
                 for variable, value, output in self.rules]
        return ", else ".join([*parts, f"{self.default}"])


class MonotoneConjunctions(FiniteClass):
    """h_S(x) = AND_{i in S} x_i over every S (2^n, the empty S always 1); the targets
    drawn are ANDs of ``literals`` random variables. Hypothesis h *is* the mask S.

    >>> C = MonotoneConjunctions(3)
    >>> C.size, C.evaluate(0b011, np.array([0b001, 0b100])).tolist()
    (8, [True, False])
    """

    name = "monotone-conjunctions"

    def __init__(self, n: int, literals: int = 2) -> None:
        self.n = self.n_features = n
        self.literals = literals
        self.spec = format_spec(self.name, {"n": n} if literals == 2 else
                                {"n": n, "literals": literals})
        self.size = self.domain_size = 1 << n
        self.masks = np.arange(1 << n, dtype=np.int64)
        self._arrays = (self.masks,)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        return cast(BoolArray, (arrays[0] & x) == arrays[0])

    def encode(self, x: Instance) -> FloatArray:
        return _bits(self.n, x)

    def hypothesis(self, h: int) -> str:
        return " ∧ ".join(f"x{i + 1}" for i in range(self.n) if h >> i & 1) or "true"

    def labels(self, target: int, xs: Masks) -> BoolArray:
        return cast(BoolArray, (xs & target) == target)

    def sample_target(self, rng: np.random.Generator) -> int:
        chosen = rng.choice(self.n, size=self.literals, replace=False)
        return int(sum(1 << int(i) for i in chosen))

    def log_size(self) -> float:
        return self.n * math.log(2)


class _BooleanConcepts(HypothesisClass):
    """A class over n variables whose hypotheses are not enumerated (size None)."""

    size = None
    n: int

    def _set_domain(self, n: int) -> None:
        self.n = self.n_features = n
        self.domain_size = 1 << n

    def check_instance(self, x: object) -> int:
        return _check_mask(self.n, x)

    def encode(self, x: Instance) -> FloatArray:
        return _bits(self.n, x)


class KCNF(_BooleanConcepts):
    """k-CNF formulas: ANDs of clauses of at most k literals (the PAC notes: a conjunction
    over the c clauses, learnt by the reduction to conjunctions); the targets drawn are
    ANDs of ``clauses`` random clauses of exactly k literals on distinct variables.

    >>> C = KCNF(3, 2)
    >>> target = (np.array([0b011]), np.array([0]))  # x1 OR x2
    >>> C.labels(target, np.array([0b000, 0b100, 0b010])).tolist()
    [False, False, True]
    """

    name = "k-cnf"

    def __init__(self, n: int, k: int, clauses: int = 2) -> None:
        self._set_domain(n)
        self.k, self.clauses = k, clauses
        self.spec = format_spec(self.name, {"n": n, "k": k} if clauses == 2 else
                                {"n": n, "k": k, "clauses": clauses})

    def labels(self, target: tuple[Masks, Masks], xs: Masks) -> BoolArray:
        return cast(BoolArray, satisfied(target[0], target[1], xs).all(axis=1))

    def sample_target(self, rng: np.random.Generator) -> tuple[Masks, Masks]:
        positive, negative = [], []
        for _ in range(self.clauses):
            variables = rng.choice(self.n, size=min(self.k, self.n), replace=False)
            signs = rng.integers(0, 2, size=len(variables))
            positive.append(sum(1 << int(v) for v, s in zip(variables, signs, strict=True) if s))
            negative.append(sum(1 << int(v) for v, s in zip(variables, signs, strict=True)
                                if not s))
        return np.array(positive, dtype=np.int64), np.array(negative, dtype=np.int64)

    def log_size(self) -> float:
        return clause_count(self.n, self.k) * math.log(2)


class DecisionLists(_BooleanConcepts):
    """Decision lists over n variables, rules on distinct variables (the PAC notes'
    greedy learner outputs them); the targets drawn have ``length`` rules on random
    distinct variables, random values and outputs, and a random default.

    >>> C = DecisionLists(3, length=1)
    >>> C.labels(DecisionList(((1, 1, 1),), 0), np.array([0b010, 0b101])).tolist()
    [True, False]
    """

    name = "decision-lists"

    def __init__(self, n: int, length: int = 4) -> None:
        self._set_domain(n)
        self.length = min(length, n)
        self.spec = format_spec(self.name, {"n": n} if length == 4 else
                                {"n": n, "length": length})

    def labels(self, target: DecisionList, xs: Masks) -> BoolArray:
        return target.labels(xs)

    def sample_target(self, rng: np.random.Generator) -> DecisionList:
        variables = rng.choice(self.n, size=self.length, replace=False)
        bits = rng.integers(0, 2, size=(self.length, 2))
        rules = tuple((int(v), int(b[0]), int(b[1])) for v, b in zip(variables, bits,
                                                                      strict=True))
        return DecisionList(rules, int(rng.integers(0, 2)))

    def log_size(self) -> float:
        return decision_list_log_count(self.n)


def _monotone(p: Params) -> HypothesisClass:
    n = p.int("n", minimum=1, maximum=MAX_CONCEPT_VARIABLES)
    return MonotoneConjunctions(n, p.int("literals", 2, minimum=0, maximum=n))


def _k_cnf(p: Params) -> HypothesisClass:
    n = p.int("n", minimum=1, maximum=MAX_CONCEPT_VARIABLES)
    k = p.int("k", minimum=1, maximum=n)
    if clause_count(n, k) > CLAUSE_LIMIT:
        raise SpecError(f"k-cnf: n={n}, k={k} gives {clause_count(n, k)} clauses, over the "
                        f"limit of {CLAUSE_LIMIT}")
    return KCNF(n, k, p.int("clauses", 2, minimum=0, maximum=64))


def _decision_lists(p: Params) -> HypothesisClass:
    n = p.int("n", minimum=1, maximum=MAX_CONCEPT_VARIABLES)
    return DecisionLists(n, p.int("length", 4, minimum=0, maximum=n))


#: The concept classes of the PAC game, by spec name.
CONCEPTS: dict[str, Callable[[Params], HypothesisClass]] = {
    "monotone-conjunctions": _monotone,
    "k-cnf": _k_cnf,
    "decision-lists": _decision_lists,
}


def make_concepts(spec: str) -> MonotoneConjunctions | KCNF | DecisionLists:
    """Build a concept class of the PAC game from its spec (SpecError if it is none).

    >>> make_concepts("decision-lists:n=5,length=2").spec
    'decision-lists:n=5,length=2'
    >>> make_concepts("k-cnf:n=20,k=3")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.SpecError: k-cnf: n=20, k=3 gives 9920 clauses, over the limit of 4096
    """
    name, raw = parse_spec(spec)
    build = CONCEPTS.get(name)
    if build is None:
        raise SpecError(f"unknown concept class {name!r} (known: {', '.join(CONCEPTS)})")
    params = Params(name, raw)
    concepts = build(params)
    params.finish()
    assert isinstance(concepts, MonotoneConjunctions | KCNF | DecisionLists)
    return concepts
