"""The finite families: thresholds, singletons, intervals, the boolean classes and a
matrix's rows (their specs in :mod:`.classes`)."""

from __future__ import annotations

import hashlib
from itertools import combinations
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import SpecError
from littlestone.games.hypotheses import (
    MAX_VARIABLES,
    BoolArray,
    FiniteClass,
    FloatArray,
    Instance,
)
from littlestone.games.spec import format_spec

__all__ = ["Conjunctions", "Disjunctions", "Intervals", "MatrixClass", "Singletons",
           "SparseDisjunctions", "Thresholds", "read_matrix_csv"]


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

    >>> from littlestone.games.classes import make_class
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


