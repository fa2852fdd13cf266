"""What every hypothesis class is: the base classes, the version space and the limits.

:class:`HypothesisClass` is the H of both games; a :class:`FiniteClass` enumerates its
hypotheses and keeps a :class:`VersionSpace` (the referee's V_t). The families are in
:mod:`.families` and :mod:`.halfspaces`; :mod:`.classes` builds them from spec strings.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import BudgetExceeded

__all__ = ["HYPOTHESIS_LIMIT", "MATRIX_BUDGET", "MAX_VARIABLES", "UNIT_TOLERANCE",
           "FiniteClass", "HypothesisClass", "Instance", "TruthTableClass", "VersionSpace"]

#: Largest number of hypotheses a finite class may have (its evaluation arrays are |H| long).
HYPOTHESIS_LIMIT = 1 << 24
#: Largest |H| x |X| a class may materialise as a matrix (for exact Ldim, trees).
MATRIX_BUDGET = 1 << 26
#: How far from 1 the norm of a halfspace instance or target may be.
UNIT_TOLERANCE = 1e-6
#: Largest number of boolean variables (instances are bit masks that fit an int64).
MAX_VARIABLES = 62

Instance = int | NDArray[np.float64]
BoolArray = NDArray[np.bool_]
IndexArray = NDArray[np.intp]
FloatArray = NDArray[np.float64]



class HypothesisClass(abc.ABC):
    """A hypothesis class H over a domain X, known to both players."""

    #: The spec name (``thresholds``, ``halfspaces`` ...).
    name: ClassVar[str]
    #: The canonical spec string this class was made from.
    spec: str
    #: |H|, or ``None`` for an infinite class.
    size: int | None
    #: |X|, or ``None`` for an infinite domain.
    domain_size: int | None
    #: Length of :meth:`encode`'s feature vectors.
    n_features: int

    @property
    def finite(self) -> bool:
        """Whether the hypotheses can be enumerated (and a version space held)."""
        return self.size is not None

    @abc.abstractmethod
    def check_instance(self, x: object) -> Instance:
        """Return ``x`` in canonical form, or raise ``ValueError`` saying why it is not in X."""

    @abc.abstractmethod
    def encode(self, x: Instance) -> FloatArray:
        """The feature vector of instance ``x`` (for Perceptron, Winnow and adapters)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"


class FiniteClass(HypothesisClass):
    """A finite class on the integer domain ``0..domain_size-1``.

    >>> from littlestone.games.classes import make_class
    >>> H = make_class("thresholds:n=3")
    >>> isinstance(H, FiniteClass), H.size, H.domain_size
    (True, 4, 3)
    >>> H.evaluate(1).tolist(), H.hypothesis(2)  # h(1) for every h; the third h
    ([False, False, True, True], 'x < 2')
    """

    size: int
    domain_size: int

    def check_instance(self, x: object) -> int:
        if isinstance(x, bool) or not isinstance(x, int | np.integer):
            raise ValueError(f"instance {x!r} is not an integer")
        xi = int(x)
        if not 0 <= xi < self.domain_size:
            raise ValueError(f"instance {xi} is outside the domain 0..{self.domain_size - 1}")
        return xi

    #: Per-hypothesis parameter arrays (first axis: hypotheses) that :meth:`_test` reads.
    _arrays: tuple[NDArray[Any], ...]

    @abc.abstractmethod
    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        """h(x) for the hypotheses whose parameters are ``arrays``, vectorised."""

    def evaluate(self, x: int, hypotheses: IndexArray | None = None) -> BoolArray:
        """h(x) for every hypothesis (or for the given hypothesis indices), vectorised."""
        if hypotheses is None:
            return self._test(self._arrays, x)
        return self._test(tuple(a[hypotheses] for a in self._arrays), x)

    def version_space(self) -> VersionSpace:
        """A fresh version space holding all of H."""
        return VersionSpace(self)

    def hypothesis(self, h: int) -> str:
        """A readable name of hypothesis ``h``."""
        return f"h{h}"

    def known_ldim(self) -> int | None:
        """Ldim(H) from a theorem of docs/theory.md, where one applies; else ``None``."""
        return None

    def sample_instances(self, rng: np.random.Generator, n: int) -> list[int]:
        """``n`` instances drawn uniformly from the domain."""
        return rng.integers(0, self.domain_size, size=n, dtype=np.int64).tolist()  # type: ignore[no-any-return]  # numpy's tolist is untyped

    def matrix(self) -> BoolArray:
        """The |H| x |X| truth table; refused beyond :data:`MATRIX_BUDGET` cells."""
        cells = self.size * self.domain_size
        if cells > MATRIX_BUDGET:
            raise BudgetExceeded(
                f"{self.spec}: |H| x |X| = {self.size} x {self.domain_size} = {cells} cells "
                f"exceeds the matrix budget of {MATRIX_BUDGET}"
            )
        out = np.empty((self.size, self.domain_size), dtype=np.bool_)
        for x in range(self.domain_size):
            out[:, x] = self.evaluate(x)
        return out

    @property
    def fingerprint(self) -> str:
        """A key that identifies the class's truth table (for shared caches)."""
        return self.spec

    def _one_hot(self, x: int) -> FloatArray:
        v = np.zeros(self.n_features)
        v[x] = 1.0
        return v



class VersionSpace:
    """V_t: the hypotheses of a finite class consistent with every label so far.

    Kept as the class's per-hypothesis parameter arrays restricted to the survivors
    (compacted when at least half are gone, masked until then), so that a vote costs
    one vectorised pass over |V_t| and never a |H| x |X| matrix. The values on the last
    instance asked about are cached, so ``votes(x)`` then ``restrict(x, y)`` evaluate once.

    >>> from littlestone.games.classes import make_class
    >>> V = make_class("thresholds:n=8").version_space()
    >>> V.votes(3), V.size
    (5, 9)
    >>> V.restrict(3, 0), V.indices().tolist()
    (4, [0, 1, 2, 3])
    >>> V.restrict(0, 0)
    1
    >>> V.restrict(0, 1), V.size  # a label that would empty V leaves it as it was
    (0, 1)
    """

    #: Compact the arrays once the survivors are at most this fraction of them.
    COMPACT_AT = 0.5

    def __init__(self, hclass: FiniteClass) -> None:
        self.hclass = hclass
        self.size = hclass.size
        self._arrays = hclass._arrays
        self._indices: IndexArray | None = None  # None: all of 0..|H|-1
        self._alive: BoolArray | None = None  # None: every row of _arrays
        self._cached_x: int | None = None
        self._cached: BoolArray | None = None

    def values(self, x: int) -> BoolArray:
        """h(x) for the rows held (survivors and, before compaction, some eliminated)."""
        if self._cached is None or x != self._cached_x:
            self._cached = self.hclass._test(self._arrays, x)
            self._cached_x = x
        return self._cached

    def votes(self, x: int) -> int:
        """How many hypotheses of V label x with 1."""
        values = self.values(x)
        if self._alive is not None:
            values = values & self._alive
        return int(np.count_nonzero(values))

    def restrict(self, x: int, y: int) -> int:
        """V <- {h in V : h(x) = y}; returns the new size. A label that would empty V
        returns 0 and leaves V unchanged (the caller decides what that means)."""
        values = self.values(x)
        keep = values if y else ~values
        if self._alive is not None:
            keep = keep & self._alive
        survivors = int(np.count_nonzero(keep))
        if survivors == 0 or survivors == self.size:
            return survivors
        self.size = survivors
        if survivors <= self.COMPACT_AT * len(keep):
            rows = np.flatnonzero(keep)
            self._arrays = tuple(a[rows] for a in self._arrays)
            self._indices = rows if self._indices is None else self._indices[rows]
            self._alive = None
        else:
            self._alive = keep.copy() if keep is values else keep
        self._cached = None
        return survivors

    def indices(self) -> IndexArray:
        """The indices of the hypotheses in V, ascending."""
        rows = np.arange(len(self._arrays[0])) if self._indices is None else self._indices
        return rows if self._alive is None else rows[self._alive]

    def __contains__(self, h: object) -> bool:
        if isinstance(h, bool) or not isinstance(h, int | np.integer):
            return False
        return bool(np.isin(int(h), self.indices()).any())

    def __len__(self) -> int:
        return self.size


class TruthTableClass(FiniteClass):
    """A finite class over {0, 1}^n given by its hypotheses' truth tables: ``tables[h]``
    holds h(x) as its bit x (instances are the bit masks 0..2^n-1); the decision trees'
    and the threshold networks' classes (UML ch. 18, 20) are of this kind."""

    def _set_tables(self, n: int, tables: NDArray[np.int64]) -> None:
        self.domain_size = 1 << n
        self.tables = tables
        self._arrays = (tables,)
        self.size = len(tables)
        self._bits = np.arange(n, dtype=np.int64)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        return ((arrays[0] >> x) & 1).astype(np.bool_)

    def encode(self, x: Instance) -> FloatArray:
        return ((int(x) >> self._bits) & 1).astype(np.float64)

    def hypothesis(self, h: int) -> str:
        return f"table {int(self.tables[h]):0{self.domain_size}b}"
