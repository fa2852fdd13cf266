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
``halfspaces:d=D,margin=G``           [<w, x> > 0], w a unit vector, with    unit vectors
                                      |<w, x>| >= G on every instance played in R^D
``halfspaces:d=D,margin=G,            the same, labels unconstrained: the    unit vectors
agnostic=true``                       revealed w is the comparator, and the  in R^D
                                      referee measures its hinge deficiency
                                      TD_G (the non-separable game)
``matrix:path=FILE``                  rows of a 0/1 matrix (.npy or .csv)    its columns
``quadratic:n=N``                     sign(q(z)) for quadratics q, on N      0..N-1
                                      points z of [-1, 1] (games.polynomial)
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
>>> D = make_class("monotone-disjunctions:n=3")
>>> D.evaluate(0b010, np.array([0, 2, 3])).astype(int).tolist()
[0, 1, 1]
>>> D.encode(0b110).tolist()
[0.0, 1.0, 1.0]
"""

from __future__ import annotations

import abc
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import BudgetExceeded, SpecError
from littlestone.games.spec import Params, format_spec, parse_spec

__all__ = [
    "CLASSES",
    "HYPOTHESIS_LIMIT",
    "MATRIX_BUDGET",
    "PEER_BUDGET",
    "UNIT_TOLERANCE",
    "UNLIMITED",
    "ClassBudget",
    "FiniteClass",
    "HalfspaceClass",
    "HypothesisClass",
    "Instance",
    "MatrixClass",
    "SparseDisjunctions",
    "VersionSpace",
    "make_class",
]

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
    """A finite class on the integer domain ``0..domain_size-1``."""

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


class Thresholds(FiniteClass):
    """h_a(x) = [x < a] for a in 0..n, on the domain 0..n-1 (UML Example 21.4)."""

    name = "thresholds"

    def __init__(self, n: int) -> None:
        self.spec = format_spec(self.name, {"n": n})
        self.size, self.domain_size, self.n_features = n + 1, n, max(n - 1, 1)
        self._arrays = (np.arange(n + 1),)
        self._levels = np.arange(1, n)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        return arrays[0] > x

    def encode(self, x: Instance) -> FloatArray:
        return (self._levels <= x).astype(np.float64)

    def hypothesis(self, h: int) -> str:
        return f"x < {h}"

    def known_ldim(self) -> int:
        return int(self.size).bit_length() - 1  # floor(log2(n + 1))


class Singletons(FiniteClass):
    """h_j(x) = [x = j] for j in 0..n-1."""

    name = "singletons"

    def __init__(self, n: int) -> None:
        self.spec = format_spec(self.name, {"n": n})
        self.size = self.domain_size = self.n_features = n
        self._arrays = (np.arange(n),)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        return cast(BoolArray, arrays[0] == x)

    def encode(self, x: Instance) -> FloatArray:
        return self._one_hot(int(x))

    def hypothesis(self, h: int) -> str:
        return f"x = {h}"

    def known_ldim(self) -> int:
        return 1 if self.size >= 2 else 0


class Intervals(FiniteClass):
    """h_ab(x) = [a <= x < b] for 0 <= a < b <= n, plus the empty interval (hypothesis 0)."""

    name = "intervals"

    def __init__(self, n: int) -> None:
        self.spec = format_spec(self.name, {"n": n})
        lo, hi = np.triu_indices(n + 1, k=1)
        self._lo = np.concatenate([[0], lo])
        self._hi = np.concatenate([[0], hi])
        self._arrays = (self._lo, self._hi)
        self.size, self.domain_size, self.n_features = len(self._lo), n, max(n - 1, 1)
        self._levels = np.arange(1, n)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        return (arrays[0] <= x) & (x < arrays[1])

    def encode(self, x: Instance) -> FloatArray:
        return (self._levels <= x).astype(np.float64)

    def hypothesis(self, h: int) -> str:
        return "empty" if h == 0 else f"{self._lo[h]} <= x < {self._hi[h]}"


class _BooleanClass(FiniteClass):
    """A class over n boolean variables; an instance is the bit mask of the true ones."""

    n: int

    def _set_domain(self, n: int) -> None:
        self.n = self.n_features = n
        self.domain_size = 1 << n
        self._bits = np.arange(n, dtype=np.int64)
        # int32 masks halve the memory traffic of evaluate() when every mask fits
        self._mask_dtype: type[np.signedinteger[Any]] = np.int32 if n <= 31 else np.int64

    def encode(self, x: Instance) -> FloatArray:
        if self.n > MAX_VARIABLES:
            return self.bits(int(x)).astype(np.float64)
        return ((int(x) >> self._bits) & 1).astype(np.float64)

    def bits(self, x: int) -> NDArray[np.uint8]:
        """x_1 .. x_n of the instance ``x`` (a bit mask of any length)."""
        raw = np.frombuffer(x.to_bytes((self.n + 7) // 8, "little"), dtype=np.uint8)
        return np.unpackbits(raw, bitorder="little")[: self.n]

    def sample_instances(self, rng: np.random.Generator, n: int) -> list[int]:
        if self.n <= MAX_VARIABLES:
            return super().sample_instances(rng, n)
        packed = np.packbits(rng.integers(0, 2, size=(n, self.n), dtype=np.uint8), axis=1,
                             bitorder="little")
        return [int.from_bytes(row.tobytes(), "little") for row in packed]

    def _literals(self, mask: int, prefix: str = "") -> list[str]:
        return [f"{prefix}x{i + 1}" for i in range(self.n) if mask >> i & 1]


class Disjunctions(_BooleanClass):
    """h_S(x) = OR_{i in S} x_i over every S with |S| <= k (all S for monotone-disjunctions).

    Hypothesis h is numbered by the order of its mask in ``masks``; for
    ``monotone-disjunctions`` hypothesis h *is* the mask S.
    """

    name = "monotone-disjunctions"

    def __init__(self, n: int, k: int | None = None) -> None:
        self._set_domain(n)
        if k is None or k >= n:
            self.spec = format_spec(self.name, {"n": n})
            self.masks = np.arange(1 << n, dtype=self._mask_dtype)
        else:
            self.spec = format_spec("k-disjunctions", {"n": n, "k": k})
            masks = [
                sum(1 << i for i in c) for r in range(k + 1) for c in combinations(range(n), r)
            ]
            self.masks = np.array(sorted(masks), dtype=self._mask_dtype)
        self._arrays = (self.masks,)
        self.k = n if k is None else min(k, n)
        self.size = len(self.masks)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        return cast(BoolArray, (arrays[0] & x) != 0)

    def hypothesis(self, h: int) -> str:
        return " ∨ ".join(self._literals(int(self.masks[h]))) or "false"

    def known_ldim(self) -> int | None:
        return self.n if self.k == self.n else None


class SparseDisjunctions(_BooleanClass):
    """``k-disjunctions`` over more variables than an int64 mask holds (n > 62): each
    hypothesis is the list of its at most k variables, evaluated on the instance's bits.

    >>> H = make_class("k-disjunctions:n=100,k=1")
    >>> H.size, H.evaluate(1 << 99)[[0, 1, 100]].tolist()
    (101, [False, False, True])
    """

    name = "k-disjunctions"

    def __init__(self, n: int, k: int) -> None:
        self._set_domain(n)
        self.spec = format_spec(self.name, {"n": n, "k": k})
        self.k = k
        rows = [list(c) + [n] * (k - r) for r in range(k + 1) for c in combinations(range(n), r)]
        #: variables[h]: the variables of hypothesis h, padded with n (a variable always 0)
        self.variables = np.array(rows, dtype=np.intp).reshape(len(rows), k)
        self._arrays = (self.variables,)
        self.size = len(rows)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        bits = np.append(self.bits(x), 0).astype(np.bool_)
        if self.k == 1:
            return cast(BoolArray, bits[arrays[0][:, 0]])
        return cast(BoolArray, bits[arrays[0]].any(axis=1))

    def hypothesis(self, h: int) -> str:
        return " ∨ ".join(f"x{i + 1}" for i in self.variables[h] if i < self.n) or "false"


class Conjunctions(_BooleanClass):
    """AND of literals: each variable positive, negated or absent (3^n), plus always-false.

    Hypothesis 0 is the always-false conjunction x1 AND NOT x1.
    """

    name = "conjunctions"

    def __init__(self, n: int) -> None:
        self._set_domain(n)
        self.spec = format_spec(self.name, {"n": n})
        index = np.arange(3**n, dtype=np.int64)
        pos = np.zeros_like(index)
        neg = np.zeros_like(index)
        for i in range(n):
            digit = (index // 3**i) % 3
            pos |= (digit == 1).astype(np.int64) << i
            neg |= (digit == 2).astype(np.int64) << i
        self.positive = np.concatenate([[1], pos]).astype(self._mask_dtype)
        self.negative = np.concatenate([[1], neg]).astype(self._mask_dtype)
        self._arrays = (self.positive, self.negative)
        self.size = len(self.positive)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        pos, neg = arrays
        return cast(BoolArray, ((pos & x) == pos) & ((neg & x) == 0))

    def hypothesis(self, h: int) -> str:
        if h == 0:
            return "false"
        lits = self._literals(int(self.positive[h])) + self._literals(
            int(self.negative[h]), "¬"
        )
        return " ∧ ".join(lits) or "true"


class MatrixClass(FiniteClass):
    """Rows of a 0/1 matrix are the hypotheses, columns the instances; duplicates allowed.

    >>> H = MatrixClass(np.array([[0, 1], [1, 1]]))
    >>> H.size, H.domain_size, H.evaluate(0).tolist()
    (2, 2, [False, True])
    """

    name = "matrix"

    def __init__(self, matrix: NDArray[np.generic], spec: str | None = None) -> None:
        m = np.asarray(matrix)
        if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] == 0:
            raise SpecError(f"matrix: expected a non-empty 2-D 0/1 matrix, got shape {m.shape}")
        if m.dtype != np.bool_ and (
            not np.issubdtype(m.dtype, np.number) or not np.isin(m, (0, 1)).all()
        ):
            raise SpecError("matrix: entries must all be 0 or 1")
        self._m = np.ascontiguousarray(m.astype(np.bool_))
        self._arrays = (self._m,)
        self.size, self.domain_size = self._m.shape
        self.n_features = self.domain_size
        self.spec = spec or format_spec(self.name, {"shape": f"{self.size}x{self.domain_size}"})
        digest = hashlib.sha256(np.packbits(self._m).tobytes()).hexdigest()[:16]
        self._fingerprint = f"matrix:{self.size}x{self.domain_size}:{digest}"

    @classmethod
    def load(cls, path: str) -> MatrixClass:
        """Read a ``.npy`` or ``.csv`` file of 0/1 (errors are :class:`SpecError`)."""
        file = Path(path)
        spec = format_spec(cls.name, {"path": path})
        if not file.is_file():
            raise SpecError(f"matrix: no such file {path!r}")
        try:
            if file.suffix.lower() == ".npy":
                data = np.load(file, allow_pickle=False)
            elif file.suffix.lower() == ".csv":
                data = read_matrix_csv(file)
            else:
                raise SpecError(f"matrix: {path!r} must end in .npy or .csv")
        except SpecError:
            raise
        except (OSError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise SpecError(f"matrix: cannot read {path!r}: {first}") from None
        return cls(data, spec=spec)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        return arrays[0][:, x]

    def matrix(self) -> BoolArray:
        return self._m

    def encode(self, x: Instance) -> FloatArray:
        return self._one_hot(int(x))

    @property
    def fingerprint(self) -> str:
        return self._fingerprint


def read_matrix_csv(file: Path) -> NDArray[np.float64]:
    r"""A 0/1 matrix from a CSV file: separated by commas, semicolons, tabs or spaces; a
    header row (a row with a cell that is not a number) is skipped, and with it the index
    column pandas writes (an empty first header cell). ValueError naming the problem.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "m.csv"
    >>> _ = path.write_text(",a,b,c\n0,1,0,1\n1,0,1,1\n")  # pandas' to_csv()
    >>> read_matrix_csv(path).tolist()
    [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
    >>> _ = path.write_text("1;0\n0;1\n")
    >>> read_matrix_csv(path).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    import csv

    lines = [line for line in file.read_text().splitlines() if line.strip()]
    if not lines:
        raise ValueError("the file is empty: one row per hypothesis, one 0/1 column per "
                         "instance")
    separator = next((sep for sep in (",", ";", "\t") if sep in lines[0]), None)
    if separator is None:
        rows = [line.split() for line in lines]  # spaces, or one column
    else:
        rows = [[cell.strip() for cell in row]
                for row in csv.reader(lines, delimiter=separator)]

    def number(cell: str) -> bool:
        try:
            float(cell)
        except ValueError:
            return False
        return True

    index_column = False
    if not all(number(cell) for cell in rows[0]):
        index_column = rows[0][0] == ""
        rows = rows[1:]
    if index_column:
        rows = [row[1:] for row in rows]
    if not rows:
        raise ValueError("no rows below the header")
    width = len(rows[0])
    for i, row in enumerate(rows, 1):
        if len(row) != width:
            raise ValueError(f"row {i} has {len(row)} cells, row 1 has {width}")
        for j, cell in enumerate(row, 1):
            if not number(cell):
                raise ValueError(f"row {i}, column {j}: {cell!r} is not a number")
    return np.array([[float(cell) for cell in row] for row in rows], dtype=np.float64)


class HalfspaceClass(HypothesisClass):
    """Homogeneous halfspaces h_w(x) = [<w, x> > 0] over unit vectors of R^d, margin ``margin``.

    Infinite: the referee cannot hold the version space, so an adversary commits to its
    unit target w before round 1 and reveals it at the end; the referee then checks that
    every label is h_w(x_t) and every |<w, x_t>| >= margin (docs/design.md 1.1).

    With ``agnostic`` (``agnostic=true``, margin > 0) the labels are free: the revealed w
    is the comparator the learner is measured against, and the referee reports its total
    hinge deficiency TD_G(w) = sum_t max(0, G - y_t <w, x_t>), y_t in {-1, +1}, and its
    mistakes, instead of checking labels and margins (the Perceptron's non-separable
    bound is 1/G^2 + (2/G) TD_G).

    >>> H = make_class("halfspaces:d=2,margin=0.5")
    >>> H.check_instance([0.6, 0.8]).tolist()
    [0.6, 0.8]
    >>> H.label(np.array([1.0, 0.0]), np.array([0.6, 0.8]))
    1
    """

    name = "halfspaces"
    size = None
    domain_size = None

    def __init__(self, d: int, margin: float, agnostic: bool = False) -> None:
        self.d = self.n_features = d
        self.margin = margin
        #: Labels need not agree with the revealed target (games.mistake_bound measures
        #: its total hinge deficiency TD_margin instead of refusing the labels).
        self.agnostic = agnostic
        params: dict[str, object] = {"d": d, "margin": margin}
        if agnostic:
            params["agnostic"] = True
        self.spec = format_spec(self.name, params)

    def check_instance(self, x: object) -> FloatArray:
        if type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (self.d,):
            v: FloatArray = x
        else:
            try:
                v = np.asarray(x, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError("instance is not a vector of numbers") from None
            if v.shape != (self.d,):
                raise ValueError(f"instance has shape {v.shape}, expected ({self.d},)")
        norm2 = float(v @ v)
        if not abs(norm2 - 1.0) <= 2 * UNIT_TOLERANCE:  # also rejects nan and inf
            shown = math.sqrt(norm2) if norm2 >= 0 else norm2
            raise ValueError(f"instance has norm {shown}, expected 1")
        return v

    def check_target(self, w: object) -> FloatArray:
        """A revealed target: a unit vector of R^d (once a game: a hostile one's huge
        coordinates are refused without numpy's overflow warning)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return self.check_instance(w)

    def encode(self, x: Instance) -> FloatArray:
        return np.asarray(x, dtype=np.float64)

    @staticmethod
    def label(w: FloatArray, x: FloatArray) -> int:
        """h_w(x) = [<w, x> > 0]."""
        return int(float(w @ x) > 0.0)

    def sample_target(self, rng: np.random.Generator) -> FloatArray:
        """A uniformly random unit vector."""
        w = rng.standard_normal(self.d)
        return w / np.linalg.norm(w)

    def sample_instances(
        self, rng: np.random.Generator, w: FloatArray, n: int
    ) -> FloatArray:
        """``n`` unit instances with |<w, x>| >= margin, crowding the margin as points of
        the sphere do: a random sign, a component along w of margin + |g| / sqrt(d) with g
        standard normal (capped at 1), and the rest along a random direction orthogonal
        to w (drawn from the cube [-1, 1]^d, five times cheaper than a Gaussian)."""
        if self.d == 1:
            return rng.choice([-1.0, 1.0], size=(n, 1))
        along = np.minimum(self.margin + np.abs(rng.standard_normal(n)) / np.sqrt(self.d), 1.0)
        along *= rng.choice([-1.0, 1.0], size=n)
        x = rng.random((n, self.d))
        x -= 0.5
        x -= np.outer(x @ w, w)  # the part orthogonal to w ...
        x *= (np.sqrt(1.0 - along**2) / np.linalg.norm(x, axis=1))[:, None]  # ... of norm
        x += np.outer(along, w)  # sqrt(1 - along^2), plus along * w: a unit vector
        return x


class VersionSpace:
    """V_t: the hypotheses of a finite class consistent with every label so far.

    Kept as the class's per-hypothesis parameter arrays restricted to the survivors
    (compacted when at least half are gone, masked until then), so that a vote costs
    one vectorised pass over |V_t| and never a |H| x |X| matrix. The values on the last
    instance asked about are cached, so ``votes(x)`` then ``restrict(x, y)`` evaluate once.

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
    from littlestone.games.polynomial import make_quadratic  # it subclasses FiniteClass

    n = p.int("n", minimum=1, maximum=2000)
    budget.hypotheses(p, n * (n + 1))
    return make_quadratic(n)


#: Every class name and how to build it from its parameters, within a budget.
CLASSES: dict[str, Callable[[Params, ClassBudget], HypothesisClass]] = {
    "thresholds": _thresholds,
    "singletons": _singletons,
    "intervals": _intervals,
    "monotone-disjunctions": _monotone,
    "k-disjunctions": _k_disjunctions,
    "conjunctions": _conjunctions,
    "halfspaces": _halfspaces,
    "matrix": _matrix,
    "quadratic": _quadratic,
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
