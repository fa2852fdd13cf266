"""Hypothesis classes: the H of both games, named by spec strings.

====================================  =====================================  ==============
spec                                  hypotheses                             instances
====================================  =====================================  ==============
``thresholds:n=N``                    h_a(x) = [x < a], a in 0..N            0..N-1
``singletons:n=N``                    h_j(x) = [x = j], j in 0..N-1          0..N-1
``intervals:n=N``                     h_ab(x) = [a <= x < b], and the empty  0..N-1
``monotone-disjunctions:n=N``         OR of any subset of x_1..x_N           N-bit vectors
``k-disjunctions:n=N,k=K``            OR of at most K of x_1..x_N            N-bit vectors
``conjunctions:n=N``                  AND of literals x_i / not x_i, and the N-bit vectors
                                      always-false conjunction
``monotone-conjunctions:n=N``         AND of any subset of x_1..x_N          N-bit vectors
                                      (games.concepts; N <= 20)
``halfspaces:d=D,margin=G``           [<w, x> > 0], w a unit vector, with    unit vectors
                                      |<w, x>| >= G on every instance played in R^D
``halfspaces:d=D,margin=G,            the same, labels unconstrained: the    unit vectors
agnostic=true``                       revealed w is the comparator, and the  in R^D
                                      referee measures its hinge deficiency
                                      TD_G (the non-separable game)
``matrix:path=FILE``                  rows of a 0/1 matrix (.npy or .csv)    its columns
``quadratic:n=N``                     sign(q(z)) for quadratics q, on N      0..N-1
                                      points z of [-1, 1] (games.polynomial)
``decision-trees:d=D,leaves=K``       functions of a tree of <= K leaves     D-bit vectors
                                      asking 1[x_i = 1] (games.trees)
``threshold-networks:n=N,hidden=H``   a threshold network with N inputs, H   N-bit vectors
                                      hidden neurons, one output
                                      (games.networks)
====================================  =====================================  ==============

An instance of a finite-domain class is an ``int`` in ``0..domain_size-1``; for the
classes over N boolean variables it is the bit mask of the true variables (bit i is
x_{i+1}). :meth:`HypothesisClass.encode` turns an instance into the feature vector that
Perceptron and Winnow see: the N bits for boolean classes, the unary code
``[x >= 1], ..., [x >= N-1]`` for thresholds and intervals, one-hot for singletons and
matrices. An instance of ``halfspaces`` is a float vector of norm 1 (within
:data:`UNIT_TOLERANCE`); the hypotheses are not enumerable, so the referee checks a
committed target instead of a version space.

Hypotheses are numbered ``0..size-1``; :meth:`FiniteClass.evaluate` gives all of them
(or a chosen subset) on one instance at once, without a |H| x |X| matrix:

>>> H = make_class("thresholds:n=4")
>>> H.size, H.domain_size
(5, 4)
>>> H.evaluate(2).astype(int).tolist()
[0, 0, 0, 1, 1]
>>> import numpy as np
>>> D = make_class("monotone-disjunctions:n=3")
>>> D.evaluate(0b010, np.array([0, 2, 3])).astype(int).tolist()
[0, 1, 1]
>>> D.encode(0b110).tolist()
[0.0, 1.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from littlestone.games.concepts import MAX_CONCEPT_VARIABLES, MonotoneConjunctions
from littlestone.games.errors import BudgetExceeded, SpecError
from littlestone.games.families import (
    Conjunctions,
    Disjunctions,
    Intervals,
    MatrixClass,
    Singletons,
    SparseDisjunctions,
    Thresholds,
    read_matrix_csv,
)
from littlestone.games.halfspaces import HalfspaceClass
from littlestone.games.hypotheses import (
    HYPOTHESIS_LIMIT,
    MATRIX_BUDGET,
    MAX_VARIABLES,
    UNIT_TOLERANCE,
    FiniteClass,
    HypothesisClass,
    Instance,
    VersionSpace,
)
from littlestone.games.networks import ThresholdNetworks
from littlestone.games.polynomial import make_quadratic
from littlestone.games.spec import Params, parse_spec
from littlestone.games.trees import DecisionTrees

__all__ = [
    "CLASSES",
    "HYPOTHESIS_LIMIT",
    "MATRIX_BUDGET",
    "MAX_VARIABLES",
    "PEER_BUDGET",
    "UNIT_TOLERANCE",
    "UNLIMITED",
    "ClassBudget",
    "Conjunctions",
    "Disjunctions",
    "FiniteClass",
    "HalfspaceClass",
    "HypothesisClass",
    "Instance",
    "Intervals",
    "MatrixClass",
    "Singletons",
    "SparseDisjunctions",
    "Thresholds",
    "VersionSpace",
    "make_class",
    "read_matrix_csv",
]


@dataclass(frozen=True)
class ClassBudget:
    """What a class spec may ask for, checked before anything is built: the number of
    hypotheses (every evaluation array is |H| long), the dimension of a halfspace, and
    whether a parameter may name a file (a server refuses those from its peers).

    >>> make_class("conjunctions:n=15", ClassBudget(max_hypotheses=1 << 20))
    Traceback (most recent call last):
    ...
    littlestone.games.errors.BudgetExceeded: conjunctions:n=15 has 14348908 hypotheses, ...
    """

    max_hypotheses: int = HYPOTHESIS_LIMIT
    max_dimension: int = 1 << 20
    files: bool = True

    def hypotheses(self, p: Params, count: int) -> None:
        """Refuse a class of ``count`` hypotheses beyond the budget."""
        if count > self.max_hypotheses:
            raise BudgetExceeded(f"{p.spec()} has {count} hypotheses, over the budget of "
                                 f"{self.max_hypotheses}")

    def dimension(self, p: Params, d: int) -> None:
        """Refuse a halfspace of dimension ``d`` beyond the budget."""
        if d > self.max_dimension:
            raise BudgetExceeded(f"{p.spec()} has dimension {d}, over the budget of "
                                 f"{self.max_dimension}")


#: No budget beyond the absolute limits of each class.
UNLIMITED = ClassBudget()
#: What a class named by the other end of a connection may ask for: a server's default
#: budgets for a peer (PROTOCOL.md 1.2), and never a file. A log nothing anchors is
#: re-simulated within it; a client parses the rules a server starts within
#: ``ClassBudget(files=False)``.
PEER_BUDGET = ClassBudget(max_hypotheses=1 << 22, max_dimension=4096, files=False)


def _thresholds(p: Params, budget: ClassBudget) -> FiniteClass:
    n = p.int("n", minimum=1, maximum=HYPOTHESIS_LIMIT - 1)
    budget.hypotheses(p, n + 1)
    return Thresholds(n)


def _singletons(p: Params, budget: ClassBudget) -> FiniteClass:
    n = p.int("n", minimum=1, maximum=HYPOTHESIS_LIMIT)
    budget.hypotheses(p, n)
    return Singletons(n)


def _intervals(p: Params, budget: ClassBudget) -> FiniteClass:
    n = p.int("n", minimum=1, maximum=5000)
    budget.hypotheses(p, n * (n + 1) // 2 + 1)
    return Intervals(n)


def _monotone(p: Params, budget: ClassBudget) -> FiniteClass:
    n = p.int("n", minimum=1, maximum=HYPOTHESIS_LIMIT.bit_length() - 1)
    budget.hypotheses(p, 1 << n)
    return Disjunctions(n)


def _k_disjunctions(p: Params, budget: ClassBudget) -> FiniteClass:
    n = p.int("n", minimum=1, maximum=1 << 16)
    k = p.int("k", minimum=0, maximum=n)
    count, term = 0, 1  # sum of C(n, r), r <= k, stopped once past the limit
    for r in range(k + 1):
        count += term
        if count > HYPOTHESIS_LIMIT:
            break
        term = term * (n - r) // (r + 1)
    if count > HYPOTHESIS_LIMIT:
        raise SpecError(
            f"k-disjunctions: n={n}, k={k} gives more hypotheses than allowed: over the "
            f"limit of {HYPOTHESIS_LIMIT}"
        )
    budget.hypotheses(p, count)
    if n > MAX_VARIABLES:
        return SparseDisjunctions(n, k)
    return Disjunctions(n, k)


def _conjunctions(p: Params, budget: ClassBudget) -> FiniteClass:
    n = p.int("n", minimum=1, maximum=15)
    budget.hypotheses(p, 3**n + 1)
    return Conjunctions(n)


def _monotone_conjunctions(p: Params, budget: ClassBudget) -> FiniteClass:
    n = p.int("n", minimum=1, maximum=MAX_CONCEPT_VARIABLES)
    literals = p.int("literals", 2, minimum=0, maximum=n)  # the PAC game's targets
    budget.hypotheses(p, 1 << n)
    return MonotoneConjunctions(n, literals)


def _halfspaces(p: Params, budget: ClassBudget) -> HypothesisClass:
    d = p.int("d", minimum=1, maximum=1 << 20)
    margin = p.float("margin", 0.1, minimum=0.0, maximum=1.0)
    agnostic = p.bool("agnostic")
    if agnostic and margin == 0.0:
        raise SpecError("halfspaces: agnostic=true measures the hinge deficiency at the "
                        "margin, which must then be > 0")
    budget.dimension(p, d)
    return HalfspaceClass(d, margin, agnostic)


def _matrix(p: Params, budget: ClassBudget) -> HypothesisClass:
    if not budget.files:  # before the path is even looked at
        raise SpecError("matrix: a class read from a file is not served here")
    hclass = MatrixClass.load(p.str("path"))
    budget.hypotheses(p, hclass.size)
    return hclass


def _quadratic(p: Params, budget: ClassBudget) -> FiniteClass:
    n = p.int("n", minimum=1, maximum=2000)
    budget.hypotheses(p, n * (n + 1))
    return make_quadratic(n)


def _decision_trees(p: Params, budget: ClassBudget) -> FiniteClass:
    d = p.int("d", minimum=1, maximum=4)
    leaves = p.int("leaves", minimum=1, maximum=1 << d)
    budget.hypotheses(p, min(1 << (1 << d), (d + 3) ** (2 * leaves)))  # 2^(2^d), UML 18.1
    return DecisionTrees(d, leaves)


def _threshold_networks(p: Params, budget: ClassBudget) -> FiniteClass:
    n = p.int("n", minimum=1, maximum=3)
    hidden = p.int("hidden", minimum=0, maximum=min(4, 6 // n))
    return ThresholdNetworks(n, hidden)


#: Every class name and how to build it from its parameters, within a budget.
CLASSES: dict[str, Callable[[Params, ClassBudget], HypothesisClass]] = {
    "thresholds": _thresholds,
    "singletons": _singletons,
    "intervals": _intervals,
    "monotone-disjunctions": _monotone,
    "k-disjunctions": _k_disjunctions,
    "conjunctions": _conjunctions,
    "monotone-conjunctions": _monotone_conjunctions,
    "halfspaces": _halfspaces,
    "matrix": _matrix,
    "quadratic": _quadratic,
    "decision-trees": _decision_trees,
    "threshold-networks": _threshold_networks,
}


def make_class(spec: str, budget: ClassBudget = UNLIMITED) -> HypothesisClass:
    """Build a hypothesis class from its spec; unknown names and bad values are SpecError,
    a class beyond ``budget`` BudgetExceeded (raised before anything is allocated).

    >>> make_class("singletons:n=3").size
    3
    >>> make_class("circles:r=1")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.SpecError: unknown class 'circles' (known: ...)
    """
    name, raw = parse_spec(spec)
    build = CLASSES.get(name)
    if build is None:
        known = ", ".join(sorted(CLASSES))
        raise SpecError(f"unknown class {name!r} (known: {known})")
    params = Params(name, raw)
    hclass = build(params, budget)
    params.finish()
    return hclass
