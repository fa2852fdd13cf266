"""Exact Littlestone dimension, optimal splits and shattered trees (UML section 21.1.1).

Ldim(V) = 0 if no instance splits V, else max over splitting x of
1 + min(Ldim(V_x^0), Ldim(V_x^1)) (docs/theory.md). A version space V is a bitset over the
class's hypotheses (a Python ``int``: bit h set iff hypothesis h is in V).

:class:`LdimSolver` computes it exactly with the prunings of docs/theory.md:

- memoised on the version space, keeping a lower and an upper bound per bitset;
- the ceiling Ldim(V) <= floor(log2 |V|): a split that reaches it ends the search;
- splits tried from the most balanced down; x is skipped once
  1 + floor(log2 min(|V0|, |V1|)) cannot beat the best found, and so is every later x;
- the smaller side is solved first, and the other side only up to its value (a capped
  solve), so the larger side is often never solved exactly;
- instances that split V identically (same pair {V0, V1}) are tried once, and only the
  instances that split V are handed down to its sub-version-spaces.

SOA and the shattered-tree adversary share one solver per class through
:func:`solver_for`, so its cache is filled once.

>>> from littlestone.games.classes import make_class
>>> solver = solver_for(make_class("thresholds:n=7"))
>>> solver.ldim()
3
>>> x, below, above = solver.best_split()
>>> below, above
(2, 2)
>>> tree = shattered_tree(solver)
>>> tree.number_of_nodes()  # 7 internal nodes and 8 leaves
15
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import MATRIX_BUDGET, FiniteClass
from littlestone.games.errors import BudgetExceeded, UnsupportedGame

__all__ = [
    "LDIM_BUDGET",
    "TREE_DEPTH_LIMIT",
    "LdimProgress",
    "LdimSolver",
    "bitset",
    "bitset_indices",
    "class_ldim",
    "shattered_tree",
    "solver_for",
    "solver_within_budget",
    "too_large",
    "verify_shattered",
]

#: Instance checks between two calls of :attr:`LdimSolver.progress`.
PROGRESS_EVERY = 1 << 15


@dataclass(frozen=True)
class LdimProgress:
    """How far a long exact-Ldim computation has come: instance checks spent of the
    budget, version spaces cached, and splits of the whole class begun of all."""

    spent: int
    budget: int
    cached: int
    root_done: int
    root_total: int


#: Deepest shattered tree that :func:`shattered_tree` will build (2^depth leaves).
TREE_DEPTH_LIMIT = 16
#: Default budget of one exact Ldim computation, in instance checks (one check asks
#: whether one instance splits one version space: about 0.1-0.2 microseconds here, so
#: the default stops a computation after some seconds rather than let it run for hours).
LDIM_BUDGET = 50_000_000


def bitset(mask: NDArray[np.bool_] | Iterable[bool]) -> int:
    """The bitset of a boolean mask over hypotheses.

    >>> bitset([True, False, True])
    5
    """
    packed = np.packbits(np.asarray(mask, dtype=np.bool_), bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


def bitset_indices(v: int) -> list[int]:
    """The hypothesis indices in bitset ``v``.

    >>> bitset_indices(0b10110)
    [1, 2, 4]
    """
    out = []
    while v:
        low = v & -v
        out.append(low.bit_length() - 1)
        v ^= low
    return out


def _ceiling(v: int) -> int:
    """floor(log2 |V|), the most Ldim(V) can be."""
    return v.bit_count().bit_length() - 1


class LdimSolver:
    """Exact Ldim of a finite class and of every version space in it, with one cache."""

    def __init__(self, matrix: NDArray[np.bool_]) -> None:
        m = np.asarray(matrix, dtype=np.bool_)
        self.n_hypotheses, self.n_instances = m.shape
        self.full = (1 << self.n_hypotheses) - 1
        packed = np.packbits(m, axis=0, bitorder="little")
        #: columns[x]: bitset of the hypotheses that label instance x with 1.
        self.columns: list[int] = [
            int.from_bytes(packed[:, x].tobytes(), "little") for x in range(self.n_instances)
        ]
        self._instance_of: dict[int, int] = {}
        roots: list[int] = []
        for x, column in enumerate(self.columns):
            key = min(column, self.full ^ column)
            if key and key not in self._instance_of:
                self._instance_of[key] = x
                self._instance_of[self.full ^ key] = x
                roots.append(column)
        self._roots = roots
        self._cache: dict[int, tuple[int, int]] = {}
        self._work_left = 0
        self._budget = 0
        #: Called now and then during a long :meth:`ldim` with what it has spent so far
        #: (:class:`LdimProgress`); it may raise to stop the computation (the cache stays).
        self.progress: Callable[[LdimProgress], None] | None = None
        self._next_report = 0
        #: Splits of the root version space settled so far, and in all (for progress).
        self._root = [0, 0]
        #: Version-space look-ups answered by the cache, and all look-ups.
        self.hits = self.lookups = 0

    def ldim(self, version_space: int | None = None, budget: int = LDIM_BUDGET) -> int:
        """Ldim of the version space (a bitset; the whole class by default).

        Raises :class:`BudgetExceeded` rather than make more than ``budget`` instance
        checks on version spaces not yet in the cache; what was learnt stays cached for
        the next call.
        """
        v = self.full if version_space is None else version_space
        self._work_left = self._budget = budget
        self._next_report = budget - PROGRESS_EVERY
        self._root = [0, 0]
        return self._solve(v, self.n_hypotheses + 1, self._roots, root=True)

    def split(self, version_space: int, x: int) -> tuple[int, int]:
        """(V_x^0, V_x^1): the hypotheses of V that label ``x`` with 0 and with 1."""
        one = version_space & self.columns[x]
        return version_space ^ one, one

    def split_ldims(self, version_space: int, x: int) -> tuple[int, int]:
        """(Ldim(V_x^0), Ldim(V_x^1)), with Ldim of the empty set taken as -1.

        This is what SOA predicts from: argmax_r Ldim(V_x^r) (UML p. 292).
        """
        zero, one = self.split(version_space, x)
        return (self.ldim(zero) if zero else -1, self.ldim(one) if one else -1)

    def best_split(self, version_space: int | None = None) -> tuple[int, int, int]:
        """An instance x attaining Ldim(V) = 1 + min(Ldim(V0), Ldim(V1)), with both Ldims.

        Raises ``ValueError`` when no instance splits V (Ldim(V) = 0).
        """
        v = self.full if version_space is None else version_space
        target = self.ldim(v)
        if target == 0:
            raise ValueError("no instance splits this version space")
        for column in self._splitting(v, self._roots):
            zero, one = v ^ (v & column), v & column
            if min(zero.bit_count(), one.bit_count()).bit_length() < target:
                continue  # 1 + floor(log2 min) < target
            low0, low1 = self.ldim(zero), self.ldim(one)
            if 1 + min(low0, low1) == target:
                return self._instance_for(column), low0, low1
        raise AssertionError("no split attains Ldim(V)")  # pragma: no cover - a solver bug

    def _instance_for(self, column: int) -> int:
        key = min(column, self.full ^ column)
        return self._instance_of[key]

    def _splitting(self, v: int, candidates: list[int]) -> list[int]:
        """The candidate columns that split v, one per distinct split."""
        out = []
        seen: set[int] = set()
        for column in candidates:
            one = v & column
            if one == 0 or one == v:
                continue
            zero = v ^ one
            key = one if one < zero else zero
            if key not in seen:
                seen.add(key)
                out.append(column)
        return out

    def _report(self) -> None:
        self._next_report = self._work_left - PROGRESS_EVERY
        if self.progress is not None:
            self.progress(LdimProgress(self._budget - self._work_left, self._budget,
                                       len(self._cache), *self._root))

    def _solve(self, v: int, cap: int, candidates: list[int], root: bool = False) -> int:
        """min(Ldim(v), cap), filling the cache with what it learns."""
        bounds = self._cache.get(v)
        lo, hi = bounds if bounds is not None else (0, _ceiling(v))
        self.lookups += 1
        if lo >= cap:
            self.hits += bounds is not None
            return cap
        if lo == hi:
            self.hits += bounds is not None
            return lo
        self._work_left -= len(candidates)
        if self._work_left < 0:
            raise BudgetExceeded(
                "exact Ldim needs more instance checks than the budget; "
                f"{len(self._cache)} version spaces are cached so far"
            )
        if self._work_left < self._next_report:
            self._report()
        n = v.bit_count()
        splits = []
        seen: set[int] = set()
        live = []
        for column in candidates:
            one = v & column
            if one == 0 or one == v:
                continue
            zero = v ^ one
            key = one if one < zero else zero
            if key in seen:
                continue
            seen.add(key)
            live.append(column)
            n1 = one.bit_count()
            if n1 <= n - n1:
                splits.append((n1, one, zero))
            else:
                splits.append((n - n1, zero, one))
        if not splits:
            self._cache[v] = (0, 0)
            return 0
        splits.sort(key=lambda s: s[0], reverse=True)
        target = min(cap, hi)
        best = max(lo, 1)
        if root:
            self._root[1] = len(splits)
        if best < target:
            for smaller, small, large in splits:
                if root:
                    self._root[0] += 1
                if smaller.bit_length() <= best:
                    break  # 1 + floor(log2 min) <= best, here and for every later split
                a = self._solve(small, target - 1, live)
                if a + 1 <= best:
                    continue
                b = self._solve(large, a, live)
                value = 1 + min(a, b)
                if value > best:
                    best = value
                    if best >= target:
                        break
        if best >= target:
            self._cache[v] = (best, best) if target == hi else (best, hi)
            return min(best, cap)
        self._cache[v] = (best, best)
        return best


@functools.lru_cache(maxsize=16)
def _solver_for_fingerprint(fingerprint: str, hclass: FiniteClass) -> LdimSolver:
    return LdimSolver(hclass.matrix())


def solver_for(hclass: FiniteClass) -> LdimSolver:
    """The shared solver of a class (one per truth table); BudgetExceeded if too large."""
    try:
        return _solver_for_fingerprint(hclass.fingerprint, hclass)
    except TypeError:  # pragma: no cover - unhashable class: no sharing
        return LdimSolver(hclass.matrix())


def class_ldim(hclass: FiniteClass, budget: int = LDIM_BUDGET) -> tuple[int, str]:
    """(Ldim(H), how it was obtained): ``"exact"`` by the recursion, or ``"theorem"``
    (the closed form of docs/theory.md) when the class is beyond the matrix budget.

    >>> from littlestone.games.classes import make_class
    >>> class_ldim(make_class("monotone-disjunctions:n=20"))
    (20, 'theorem')
    """
    try:
        solver = solver_for(hclass)
    except BudgetExceeded:
        known = hclass.known_ldim()
        if known is None:
            raise
        return known, "theorem"
    try:
        return solver.ldim(budget=budget), "exact"
    except BudgetExceeded as exc:
        raise BudgetExceeded(f"{hclass.spec}: {exc} ({budget})") from None


def too_large(hclass: object) -> str | None:
    """Why exact Ldim cannot even start on this class (its truth table is beyond
    MATRIX_BUDGET), or ``None``."""
    if isinstance(hclass, FiniteClass) and hclass.size * hclass.domain_size > MATRIX_BUDGET:
        return (f"the truth table of {hclass.spec} exceeds the matrix budget "
                f"({MATRIX_BUDGET} cells) of exact Ldim")
    return None


def solver_within_budget(hclass: FiniteClass, budget: int, who: str) -> tuple[LdimSolver, int]:
    """The class's shared solver and Ldim(H), or UnsupportedGame naming the budget (what
    SOA and the shattered-tree adversary refuse with before round 1)."""
    try:
        solver = solver_for(hclass)
        return solver, solver.ldim(budget=budget)
    except BudgetExceeded as exc:
        raise UnsupportedGame(
            f"{who} cannot play {hclass.spec}: exact Ldim is beyond its budget "
            f"(budget={budget} instance checks; {exc})"
        ) from None


def shattered_tree(solver: LdimSolver, hclass: FiniteClass | None = None) -> nx.DiGraph:
    """A shattered tree of depth Ldim(H) (UML Definition 21.4) as a networkx DiGraph.

    Node ids are paths: ``"t"`` is the root and ``"t01"`` the node reached by labels 0
    then 1. An internal node carries ``instance`` (and ``depth``); an edge carries
    ``label``; a leaf carries ``hypothesis``, one h in H that realises its path. The
    graph attribute ``ldim`` is the depth. Refused beyond :data:`TREE_DEPTH_LIMIT`.
    """
    depth = solver.ldim()
    if depth > TREE_DEPTH_LIMIT:
        raise BudgetExceeded(
            f"shattered tree of depth {depth} has {2**depth} leaves, over the limit of "
            f"depth {TREE_DEPTH_LIMIT}"
        )
    tree = nx.DiGraph(ldim=depth)
    if hclass is not None:
        tree.graph["class"] = hclass.spec

    def grow(node: str, v: int, remaining: int) -> None:
        if remaining == 0:
            witness = (v & -v).bit_length() - 1
            tree.add_node(node, hypothesis=witness, depth=depth - remaining)
            if hclass is not None:
                tree.nodes[node]["name"] = hclass.hypothesis(witness)
            return
        x, _, _ = solver.best_split(v)
        tree.add_node(node, instance=x, depth=depth - remaining)
        for label, child in zip((0, 1), solver.split(v, x), strict=True):
            tree.add_edge(node, node + str(label), label=label)
            grow(node + str(label), child, remaining - 1)

    grow("t", solver.full, depth)
    return tree


def verify_shattered(tree: nx.DiGraph, hclass: FiniteClass) -> bool:
    """Whether every root-to-leaf path of ``tree`` is realised by its leaf's hypothesis."""
    for leaf in (n for n in tree.nodes if "hypothesis" in tree.nodes[n]):
        h = int(tree.nodes[leaf]["hypothesis"])
        for depth in range(len(leaf) - 1):
            node, label = leaf[: depth + 1], int(leaf[depth + 1])
            x = int(tree.nodes[node]["instance"])
            if int(hclass.evaluate(x, np.array([h]))[0]) != label:
                return False
    return True
