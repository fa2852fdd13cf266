"""The VC dimension of a finite class, exactly (UML Def. 6.5; Thm 21.9: VCdim <= Ldim).

A set of instances is shattered when the class realises all 2^|S| labellings of it.
Shattered sets are closed under subsets, so :func:`vcdim` grows them level by level
(a set of size k + 1 is tried only when all its subsets of size k are shattered),
from the distinct non-constant columns of the truth table, and stops at
floor(log2 |H|) (2^|S| labellings need as many hypotheses).

>>> from littlestone.games.classes import make_class
>>> vcdim(make_class("intervals:n=6").matrix()), vcdim(make_class("thresholds:n=9").matrix())
(2, 1)
>>> class_vcdim(make_class("monotone-disjunctions:n=22"))
(22, 'theorem')
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import Disjunctions, FiniteClass, Singletons, Thresholds
from littlestone.games.errors import BudgetExceeded

__all__ = ["VC_BUDGET", "class_vcdim", "shattered", "vcdim"]

#: Default budget of one computation: how many candidate sets it may test.
VC_BUDGET = 1_500_000


def shattered(matrix: NDArray[np.bool_], columns: tuple[int, ...]) -> bool:
    """Whether the rows of ``matrix`` realise every labelling of ``columns``.

    >>> shattered(np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=bool), (0, 1))
    True
    """
    if not columns:
        return len(matrix) > 0
    weights = np.left_shift(1, np.arange(len(columns)), dtype=np.int64)
    patterns = matrix[:, list(columns)].astype(np.int64) @ weights
    return len(np.unique(patterns)) == 1 << len(columns)


def vcdim(matrix: NDArray[np.bool_], budget: int = VC_BUDGET) -> int:
    """VCdim of the class whose truth table is ``matrix`` (rows hypotheses); BudgetExceeded
    beyond ``budget`` split checks.

    A depth-first search over shattered sets S, holding H split into the 2^|S| classes
    of hypotheses that agree on S (bitsets): x extends S iff it splits every class, and
    only the instances that still do are handed down (a check is one instance against
    one class). A branch stops once
    |S| + min over classes of floor(log2 |class|) cannot beat the best found.
    """
    m = np.asarray(matrix, dtype=np.bool_)
    if m.shape[0] == 0:
        return 0
    ceiling = m.shape[0].bit_length() - 1  # 2^d <= |H|
    full = (1 << m.shape[0]) - 1
    packed = np.packbits(m, axis=0, bitorder="little")
    columns, seen = [], set()
    for x in range(m.shape[1]):
        column = int.from_bytes(packed[:, x].tobytes(), "little")
        if column not in seen and 0 < column < full:
            seen.add(column)
            columns.append(column)
    best = 0
    work = 0

    def grow(classes: list[int], candidates: list[int], depth: int) -> None:
        nonlocal best, work
        best = max(best, depth)
        room = min(c.bit_count() for c in classes).bit_length() - 1
        if best >= ceiling or depth + room <= best:
            return
        for i, column in enumerate(candidates):  # each splits every class
            split = [part for c in classes for part in (c & column, c & ~column)]
            rest = candidates[i + 1:]
            work += len(rest) * len(split)
            if work > budget:
                raise BudgetExceeded(f"VCdim needs more than {budget} split checks "
                                     f"(shattered so far: {best})")
            grow(split, [x for x in rest if all(c & x and c & ~x for c in split)], depth + 1)
            if best >= ceiling:
                return

    grow([full], columns, 0)
    return best


def class_vcdim(hclass: FiniteClass, budget: int = VC_BUDGET) -> tuple[int, str]:
    """(VCdim(H), ``"exact"`` or ``"theorem"``): computed within ``budget``, else the
    closed form for thresholds (1), singletons (1 from two points) and monotone
    disjunctions (n); BudgetExceeded when neither applies."""
    try:
        return vcdim(hclass.matrix(), budget), "exact"
    except BudgetExceeded:
        known = _known(hclass)
        if known is None:
            raise
        return known, "theorem"


def _known(hclass: FiniteClass) -> int | None:
    if isinstance(hclass, Thresholds):
        return 1
    if isinstance(hclass, Singletons):
        return min(1, hclass.size - 1)
    if isinstance(hclass, Disjunctions) and hclass.k == hclass.n:
        return hclass.n
    return None


def brute_force_vcdim(matrix: NDArray[np.bool_]) -> int:
    """Every subset of columns, largest first (for tests of small classes).

    >>> brute_force_vcdim(np.eye(3, dtype=bool))
    1
    """
    m = np.asarray(matrix, dtype=np.bool_)
    for size in range(m.shape[1], 0, -1):
        if any(shattered(m, c) for c in itertools.combinations(range(m.shape[1]), size)):
            return size
    return 0
