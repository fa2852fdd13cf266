"""Exact Littlestone dimension, optimal splits and shattered trees (UML section 21.1.1).

Ldim(V) = 0 if no instance splits V, else max over splitting x of
1 + min(Ldim(V_x^0), Ldim(V_x^1)) (docs/theory.md). A version space V is a bitset over the
class's hypotheses (a Python ``int``: bit h set iff hypothesis h is in V).

:class:`LdimSolver` computes it exactly with the prunings of docs/theory.md:

- memoised on the *canonical form* of the version space, keeping a lower and an upper
  bound per form: only the instances that split V, each flipped so that V's first
  hypothesis reads 0, hypotheses distinct, both in their order. Version spaces that are
  the same up to translation (intervals inside [2, 9) and inside [40, 47)) share one
  entry;
- unions: when every hypothesis but the first reads 1 (after the flips) on one group of
  consecutive instances only, V is the union of its groups' version spaces, and its key
  is theirs, sorted: the same groups in another order share one entry (the gaps that
  negative labels leave between intervals);
- products: when V is A x B over two groups of instances (|V| = |A| |B|, the groups
  found by independence from the first instance), Ldim(V) = Ldim(A) + Ldim(B), with no
  search (intervals that must contain a point are a product of two threshold classes);
- the ceiling Ldim(V) <= floor(log2 |V|): a split that reaches it ends the search;
- splits tried from the most balanced down; x is skipped once
  1 + floor(log2 min(|V0|, |V1|)) cannot beat the best found, and so is every later x;
  instances that split V alike are tried once;
- the smaller side is solved first, and the other side only up to its value (a capped
  solve), so the larger side is often never solved exactly;
- large version spaces are bit matrices, a row of 64-bit words per hypothesis (numpy:
  a split gathers rows; counts, flips and the dropping of columns work on the words);
  from ``SMALL`` hypotheses down, a form's sub-version-spaces are Python-int bitsets over
  its own hypotheses, memoised per form.

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

import contextlib
import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import MATRIX_BUDGET, FiniteClass, HypothesisClass, make_class
from littlestone.games.errors import BeyondBudget, BudgetExceeded, SpecError

if TYPE_CHECKING:  # networkx is imported where a tree is built: not on every start
    import networkx as nx

__all__ = [
    "LDIM_BUDGET",
    "SOLVER_CACHE_BYTES",
    "TREE_DEPTH_LIMIT",
    "LdimProgress",
    "LdimSolver",
    "bitset",
    "bitset_indices",
    "bound_new_solvers",
    "checks_per_second",
    "class_ldim",
    "ldim",
    "shared_solver_bytes",
    "shattered_tree",
    "solver_for",
    "solver_within_budget",
    "too_large",
    "verify_shattered",
]

#: Deepest shattered tree that :func:`shattered_tree` will build (2^depth leaves).
TREE_DEPTH_LIMIT = 16
#: Default budget of one exact Ldim computation, in instance checks (one check asks
#: whether one instance splits one version space, or, on a large version space, 512 of
#: its hypotheses: about 0.1-2 microseconds here, so the default stops a computation
#: after a minute or two rather than let it run for hours).
LDIM_BUDGET = 50_000_000
#: Instance checks between two calls of :attr:`LdimSolver.progress` (and two looks at
#: the calling thread's CPU clock, against :attr:`LdimSolver.cpu_deadline`).
PROGRESS_EVERY = 1 << 15
#: Bytes of solvers (their truth tables and caches, :attr:`LdimSolver.nbytes`) that the
#: process-wide cache of :func:`solver_for` keeps at most: the least recently used go
#: first. A solver in use by its owner stays alive with it; it is only no longer shared.
SOLVER_CACHE_BYTES = 256 << 20
#: Estimated bytes of one cache entry beside its key (a dict slot, the key's object,
#: the bounds' tuple), for :attr:`LdimSolver.nbytes`.
_ENTRY_BYTES = 160


@dataclass(frozen=True)
class LdimProgress:
    """How far a long exact-Ldim computation has come: instance checks spent of the
    budget, and version spaces cached."""

    spent: int
    budget: int
    cached: int


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


#: Version spaces of at most this many distinct hypotheses are solved on Python ints
#: (local bitsets of their own), larger ones on numpy bit matrices.
SMALL = 512

_WORD = np.dtype("<u8")
#: At most this many rows are summed byte by byte before a byte could overflow.
_LANE_ROWS = 255
#: Up to this many runs of dropped columns are shifted out of a form's packed rows;
#: beyond it its columns are gathered from its unpacked matrix.
_SHIFT_RUNS = 8


def _pack(matrix: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """The rows of a boolean matrix as bits in 64-bit words: column i is bit i % 64 of
    word i // 64, the padding clear, at least one word a row.

    >>> _pack(np.array([[True, False, True], [False, True, False]])).ravel().tolist()
    [5, 2]
    """
    rows, cols = matrix.shape
    out = np.zeros((rows, 8 * max(1, -(-cols // 64))), dtype=np.uint8)
    out[:, : -(-cols // 8)] = np.packbits(matrix, axis=1, bitorder="little")
    return out.view(_WORD)


def _unpack(words: NDArray[np.uint64], count: int) -> NDArray[np.bool_]:
    """The first ``count`` columns of packed rows, as a boolean matrix (:func:`_pack`
    undone)."""
    raw = np.ascontiguousarray(words, dtype=_WORD).view(np.uint8)
    return np.unpackbits(raw, axis=1, count=count, bitorder="little").astype(np.bool_)


def _bytes(words: NDArray[np.uint64]) -> NDArray[np.uint8]:
    """The bytes of words, least significant first whatever the machine."""
    return np.ascontiguousarray(words, dtype=_WORD).view(np.uint8)


def _bit_counts(words: NDArray[np.uint64]) -> NDArray[np.int64]:
    """How many rows have each bit set: one count per column of the packed rows.

    The rows are unpacked to one byte a column and summed in blocks of 255 rows as
    whole 64-bit words (eight columns a word, no byte overflowing into the next).

    >>> _bit_counts(_pack(np.array([[1, 0, 1], [1, 1, 0]], dtype=bool)))[:3].tolist()
    [2, 1, 1]
    """
    rows = len(words)
    lanes = np.unpackbits(_bytes(words), axis=1, bitorder="little").view(_WORD)
    full = rows - rows % _LANE_ROWS
    out = np.zeros(8 * lanes.shape[1], dtype=np.int64)
    if full:
        sums = np.add.reduce(lanes[:full].reshape(-1, _LANE_ROWS, lanes.shape[1]), axis=1)
        out += _bytes(sums).sum(axis=0, dtype=np.int64)
    if full < rows:
        out += _bytes(lanes[full:].sum(axis=0, dtype=np.uint64)[None])[0]
    return out


def _shift_down(words: NDArray[np.uint64], n: int) -> NDArray[np.uint64]:
    """Packed rows with every column moved n places down (column i + n to i), the top
    filled with zeros."""
    q, t = divmod(n, 64)
    width = words.shape[1]
    if q >= width:
        return np.zeros_like(words)
    src = words[:, q:]
    if t == 0:
        out = src.copy()
    else:
        out = src >> np.uint64(t)
        out[:, :-1] |= src[:, 1:] << np.uint64(64 - t)
    if q:
        out = np.concatenate([out, np.zeros((len(words), q), dtype=_WORD)], axis=1)
    return out


def _compact(words: NDArray[np.uint64], kept: NDArray[np.intp]) -> NDArray[np.uint64]:
    """The packed rows with the kept columns (in order) moved to the front; past them
    lie only columns that were not kept (those after the last kept one, shifted down
    alike, or none).

    Each run of dropped columns below the last kept one is shifted out (a few word
    operations a run); with many runs, the kept columns are gathered unpacked.
    """
    width = len(kept)
    last = int(kept[-1]) if width else -1
    if last + 1 == width:
        return words
    # the runs of dropped columns: where the kept columns jump
    gaps = np.flatnonzero(np.diff(kept, prepend=-1) > 1)
    if len(gaps) > _SHIFT_RUNS:
        return _select_columns(words, kept)
    starts = np.concatenate([[-1], kept])[gaps] + 1
    lengths = kept[gaps] - starts
    out = words
    for start, length in zip(starts[::-1].tolist(), lengths[::-1].tolist(), strict=True):
        q, b = divmod(start, 64)
        tail = _shift_down(out[:, q:], length)
        if b:  # the columns below the run, in its first word, stay
            low = np.uint64((1 << b) - 1)
            tail[:, 0] = (out[:, q] & low) | (tail[:, 0] & ~low)
        out = np.concatenate([out[:, :q], tail], axis=1) if q else tail
    return out


def _select_columns(words: NDArray[np.uint64], columns: NDArray[np.intp]) -> NDArray[np.uint64]:
    """The packed rows restricted to the given columns, in that order."""
    count = int(columns.max()) + 1 if len(columns) else 0
    return _pack(_unpack(words, count)[:, columns])


def _column(words: NDArray[np.uint64], j: int) -> NDArray[np.bool_]:
    """Column j of packed rows."""
    return ((words[:, j >> 6] >> np.uint64(j & 63)) & np.uint64(1)).astype(np.bool_)


class _Form:
    """The canonical form of a version space, from its packed hypotheses-by-instances
    rows ``words`` (:func:`_pack`; r >= 2 distinct rows, in order) and, when known, how
    many of them read 1 on each column (:func:`_bit_counts`).

    Only the instances that split it are kept, in order, each flipped so that the first
    hypothesis reads 0 (a flipped instance splits alike); hypotheses keep their order.
    Two version spaces with the same form (an interval class and the same class
    translated along the line, say) have the same Ldim. ``x`` is the form's own packed
    matrix (r rows, ``width`` columns); ``ones`` counts the hypotheses that read 1 on
    each column. With ``unions``, a form that is a union over groups of its instances
    (:func:`_groups`) is keyed by its groups' keys, sorted; otherwise ``key`` is r, the
    width and the bits of ``x``.
    """

    __slots__ = ("key", "ones", "r", "union", "width", "x")

    def __init__(self, words: NDArray[np.uint64], counts: NDArray[np.int64] | None = None,
                 unions: bool = False) -> None:
        self.r = r = len(words)
        if counts is None:
            counts = _bit_counts(words)
        kept = np.flatnonzero((counts > 0) & (counts < r))
        self.width = width = len(kept)
        first = words[0]
        flips = (first[kept >> 6] >> (kept & 63).astype(np.uint64)) & np.uint64(1) != 0
        self.ones = np.where(flips, r - counts[kept], counts[kept])
        x = _compact(words, kept)
        used = max(1, -(-width // 64))
        # the columns past the width are constant: the flip by the first row clears them
        self.x = x = x[:, :used] ^ x[0, :used]
        groups = _groups(x, width) if unions else None
        #: whether it is a union over groups of its instances, keyed by theirs
        self.union = groups is not None
        self.key = _FORM + _key(x, width) if groups is None else _UNION + b"".join(sorted(groups))


#: The first byte of a form's key, and of a union form's.
_FORM, _UNION = b"F", b"U"


def _key(x: NDArray[np.uint64], width: int) -> bytes:
    """r, the width and the bits of a form's packed matrix (its padding clear)."""
    return (len(x).to_bytes(4, "little") + width.to_bytes(4, "little")
            + _bytes(x)[:, : -(-width // 8)].tobytes())


def _groups(x: NDArray[np.uint64], width: int) -> list[bytes] | None:
    """The keys of the groups of a form that is a union over groups of consecutive
    instances, else ``None``.

    The first row of ``x`` is all zeros (z). Cut the instances between two neighbours
    that no hypothesis's span (its first to its last instance read 1) covers; when
    that leaves several groups, every other hypothesis reads 1 on one group only, and
    V is the union of the B_i = {z} + the hypotheses that read 1 on group i. The B_i's
    forms (as on their own: z first, no flip), sorted, determine V up to the order of
    its instances and hypotheses, and so its Ldim: unions met in different orders (the
    intervals of the gaps that negative labels leave, whatever their order on the line)
    share one key.
    """
    rows = x[1:]
    low, high = _spans(rows)
    covered = np.cumsum(np.bincount(low, minlength=width) - np.bincount(high, minlength=width))
    cuts = np.flatnonzero(covered[: width - 1] == 0) + 1  # the first column of a group
    if not len(cuts):
        return None
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [width]])
    group_of = np.searchsorted(cuts, low, side="right")
    order = np.argsort(group_of, kind="stable")
    sizes = np.bincount(group_of, minlength=len(starts))
    keys = []
    for members, start, end in zip(np.split(order, np.cumsum(sizes)[:-1]), starts.tolist(),
                                   ends.tolist(), strict=True):
        part = _shift_down(np.concatenate([x[:1], rows[members]]), start)
        keys.append(_key(part[:, : -(-(end - start) // 64)], end - start))
    return keys


def _spans(words: NDArray[np.uint64]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The first column each row reads 1 on, and its last (every row not all zeros)."""
    nonzero = words != 0
    rows = np.arange(len(words))
    first = nonzero.argmax(axis=1)
    last = words.shape[1] - 1 - nonzero[:, ::-1].argmax(axis=1)
    lowest = words[rows, first]
    lowest &= ~lowest + np.uint64(1)  # its lowest bit alone
    highest = words[rows, last]
    for s in (1, 2, 4, 8, 16, 32):  # every bit below the highest set
        highest |= highest >> np.uint64(s)
    return (64 * first + np.bitwise_count(lowest - np.uint64(1)).astype(np.intp),
            64 * last + np.bitwise_count(highest).astype(np.intp) - 1)


def _product(x: NDArray[np.uint64], ones: NDArray[np.int64]
             ) -> tuple[NDArray[np.uint64], NDArray[np.uint64]] | None:
    """(A, B) when the version space with packed rows ``x`` (distinct hypotheses by
    instances, ``ones`` per column, the first row all zeros) is the product A x B of the
    distinct hypotheses of two groups of its instances, else ``None``.

    The group of the first instance is the instances that are not independent of it
    (over the hypotheses); the rest is the other group. A is read off the rows that are
    zero on the other group and B off the rows that are zero on the first: V is A x B
    exactly when |V| = |A| |B| and every row is made of a row of A and a row of B. Then
    Ldim(V) = Ldim(A) + Ldim(B): a shattered tree of A with one of B grafted at each
    leaf gives >=, and induction on a shattered tree of V gives <= (docs/theory.md).
    """
    r, width = len(x), len(ones)
    if width < 2:
        return None
    both = _bit_counts(x[_column(x, 0)])[:width]
    dependent = both * r != ones[0] * ones
    if dependent.all():
        return None
    pad = np.zeros(64 * x.shape[1] - width, np.bool_)
    parts, factors = [], []
    for group in (dependent, ~dependent):
        mask = _pack(np.concatenate([group, pad])[None])[0]
        parts.append(x & mask)
    for other in (parts[1], parts[0]):
        factors.append(np.flatnonzero(_zero_rows(other)))
    if len(factors[0]) * len(factors[1]) != r:
        return None
    if not _in_product_order(parts, factors):
        for part, rows in zip(parts, factors, strict=True):
            if not _rows_among(part, part[rows]):
                return None
    return (_select_columns(x[factors[0]], np.flatnonzero(dependent)),
            _select_columns(x[factors[1]], np.flatnonzero(~dependent)))


def _zero_rows(words: NDArray[np.uint64]) -> NDArray[np.bool_]:
    """Which packed rows are all zeros."""
    seen = words[:, 0].copy()
    for w in range(1, words.shape[1]):
        seen |= words[:, w]
    return seen == 0  # type: ignore[no-any-return]


def _in_product_order(parts: list[NDArray[np.uint64]], factors: list[NDArray[np.intp]]
                      ) -> bool:
    """Whether the rows are the pairs of A's and B's rows in order, A's or B's varying
    slowest (the order of a class of pairs, like intervals that contain a point): then
    every row is made of a row of A and a row of B, with no look-up."""
    (left, right), (a, b) = parts, factors
    for outer, inner, outer_rows, inner_rows in ((left, right, a, b), (right, left, b, a)):
        step = len(inner_rows)
        if (len(outer_rows) > 1 and outer_rows[1] == step and inner_rows[-1] == step - 1
                and np.array_equal(outer, np.repeat(outer[outer_rows], step, axis=0))
                and np.array_equal(inner, np.tile(inner[inner_rows], (len(outer_rows), 1)))):
            return True
    return False


def _rows_among(words: NDArray[np.uint64], members: NDArray[np.uint64]) -> bool:
    """Whether every row of ``words`` is one of the rows of ``members`` (each row
    looked up by its hash, then compared word for word: a hash collision can only
    answer ``False``)."""
    found, member_hashes = _row_hashes(words), _row_hashes(members)
    order = np.argsort(member_hashes, kind="stable")
    at = np.minimum(np.searchsorted(member_hashes[order], found), len(order) - 1)
    match = order[at]
    return bool((member_hashes[match] == found).all() and (words == members[match]).all())


_WEIGHTS = np.random.default_rng(0).integers(1, 1 << 63, size=1 << 13).astype(np.uint64) | 1
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _row_hashes(words: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """A 64-bit hash of each row: its words mixed and summed with fixed odd weights."""
    width = words.shape[1]
    weights = _WEIGHTS[:width] if width <= len(_WEIGHTS) else np.resize(_WEIGHTS, width)
    mixed = words * weights
    mixed ^= mixed >> np.uint64(29)  # high bits down: a sum of products alone loses them
    mixed *= _MIX
    return mixed.sum(axis=1, dtype=np.uint64)  # type: ignore[no-any-return]


def _distinct(words: NDArray[np.uint64]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The index of the first of each distinct row of ``words`` (in order), and which
    distinct row each row is. Rows are grouped by a hash (their words mixed and summed
    with fixed odd weights) and the grouping is checked word for word; on a collision,
    an exact sort of the rows decides."""
    _, first, inverse = np.unique(_row_hashes(words), return_index=True, return_inverse=True)
    if not (words == words[first[inverse]]).all():  # pragma: no cover - a collision
        raw = _bytes(words)
        _, first, inverse = np.unique(raw.view(np.dtype((np.void, raw.shape[1]))).ravel(),
                                      return_index=True, return_inverse=True)
    return first, inverse.ravel()


class LdimSolver:
    """Exact Ldim of a finite class and of every version space in it, with one cache."""

    def __init__(self, matrix: NDArray[np.bool_], small: int = SMALL) -> None:
        m = np.asarray(matrix, dtype=np.bool_)
        self._small_size = small
        self.n_hypotheses, self.n_instances = m.shape
        self.full = (1 << self.n_hypotheses) - 1
        #: hypotheses by instances, packed (:func:`_pack`)
        self._words = _pack(m)
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
        # hypotheses with the same row count once (Ldim cannot tell them apart)
        self._row_class: NDArray[np.intp] | None = None
        if len(m) > 1:
            first, inverse = _distinct(self._words)
            if len(first) < len(m):
                self._row_class = inverse
        #: Exact Ldim of the version spaces asked from outside, by bitset.
        self._exact: dict[int, int] = {}
        #: Lower and upper bounds of large version spaces, by canonical form.
        self._cache: dict[bytes, tuple[int, int]] = {}
        #: Small version spaces, by canonical form: (their instances as bitsets over
        #: their own rows, the memo of their sub-version-spaces by such bitsets).
        self._small: dict[bytes, tuple[list[int], dict[int, tuple[int, int]]]] = {}
        self._work_left = self._budget = self._next_report = 0
        #: Called now and then during a long :meth:`ldim` with what it has spent so far
        #: (:class:`LdimProgress`); it may raise to stop the computation (the cache stays).
        self.progress: Callable[[LdimProgress], None] | None = None
        #: Look-ups from outside (SOA, the tree adversary) that a cache answered with no
        #: search, and all of them.
        self.hits = self.lookups = 0
        self._expansions = 0
        #: An estimate of the bytes the solver holds: its packed truth table, its columns
        #: and every cache entry (counted as they are made).
        self.nbytes = 2 * self._words.nbytes + sum(
            28 + (c.bit_length() + 7) // 8 for c in self.columns) + 64 * len(self.columns)
        #: The most :attr:`nbytes` may grow to (None: no bound): a question that would
        #: cache more raises BudgetExceeded (what it cached so far stays).
        self.max_bytes: int | None = _new_solver_max_bytes
        #: The calling thread's CPU clock (:func:`time.thread_time`) past which a question
        #: raises BudgetExceeded (None: no bound; :meth:`cpu_limit` sets it).
        self.cpu_deadline: float | None = None
        #: One question at a time (a solver is shared by the threads of a process).
        self._lock = threading.RLock()
        self._depth = 0

    @contextlib.contextmanager
    def _question(self, budget: int) -> Iterator[None]:
        """One question from outside (:meth:`ldim`, :meth:`split_ldims`,
        :meth:`best_split`): its instance checks, together, are within ``budget``."""
        with self._lock:
            if self._depth == 0:
                self._work_left = self._budget = budget
                self._next_report = budget - PROGRESS_EVERY
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1

    @contextlib.contextmanager
    def limits(self, cpu_s: float | None = None, max_bytes: int | None = None
               ) -> Iterator[None]:
        """Questions asked in the block stop (BudgetExceeded) once the calling thread
        has spent ``cpu_s`` seconds of CPU in it (checked every :data:`PROGRESS_EVERY`
        instance checks), or once the caches would hold more than ``max_bytes`` (at
        most what :attr:`max_bytes` allows already). The block holds the solver: no
        other thread asks it meanwhile.

        >>> from littlestone.games.classes import make_class
        >>> solver = LdimSolver(make_class("intervals:n=200").matrix())
        >>> with solver.limits(cpu_s=0.01):
        ...     solver.ldim()
        Traceback (most recent call last):
        ...
        littlestone.games.errors.BudgetExceeded: exact Ldim needs more CPU time than ...
        """
        with self._lock:
            before = self.cpu_deadline, self.max_bytes
            if cpu_s is not None:
                self.cpu_deadline = time.thread_time() + cpu_s
            if max_bytes is not None:
                self.max_bytes = max_bytes if self.max_bytes is None else min(
                    max_bytes, self.max_bytes)
            try:
                yield
            finally:
                self.cpu_deadline, self.max_bytes = before

    def ldim(self, version_space: int | None = None, budget: int = LDIM_BUDGET) -> int:
        """Ldim of the version space (a bitset; the whole class by default).

        Raises :class:`BudgetExceeded` rather than make more than ``budget`` instance
        checks on version spaces not yet in the cache; what was learnt stays cached for
        the next call.
        """
        v = self.full if version_space is None else version_space
        with self._question(budget):
            return self._ldim(v)

    def _ldim(self, v: int) -> int:
        self.lookups += 1
        known = self._exact.get(v)
        if known is not None:
            self.hits += 1
            return known
        expansions = self._expansions
        rows = self._rows(v)
        words = self._words if len(rows) == self.n_hypotheses else self._words[rows]
        value = self._child(words, self.n_hypotheses + 1, unions=True)
        self.hits += expansions == self._expansions
        self._exact[v] = value
        self.nbytes += _ENTRY_BYTES + (v.bit_length() >> 3)
        return value

    @property
    def spent(self) -> int:
        """Instance checks that the last computation of :meth:`ldim` made (a look-up
        that a cache answered is not one)."""
        return self._budget - self._work_left

    def _rows(self, v: int) -> NDArray[np.intp]:
        """The hypotheses of bitset v, one of each distinct row."""
        raw = np.frombuffer(v.to_bytes((self.n_hypotheses + 7) // 8, "little"), dtype=np.uint8)
        rows = np.flatnonzero(np.unpackbits(raw, count=self.n_hypotheses, bitorder="little"))
        if self._row_class is not None and len(rows) > 1:
            _, first = np.unique(self._row_class[rows], return_index=True)
            rows = rows[np.sort(first)]
        return rows

    def split(self, version_space: int, x: int) -> tuple[int, int]:
        """(V_x^0, V_x^1): the hypotheses of V that label ``x`` with 0 and with 1."""
        one = version_space & self.columns[x]
        return version_space ^ one, one

    def split_ldims(self, version_space: int, x: int, budget: int = LDIM_BUDGET
                    ) -> tuple[int, int]:
        """(Ldim(V_x^0), Ldim(V_x^1)), with Ldim of the empty set taken as -1: both
        within one ``budget`` of instance checks.

        This is what SOA predicts from: argmax_r Ldim(V_x^r) (UML p. 292).
        """
        zero, one = self.split(version_space, x)
        with self._question(budget):
            return (self._ldim(zero) if zero else -1, self._ldim(one) if one else -1)

    def best_split(self, version_space: int | None = None, budget: int = LDIM_BUDGET
                   ) -> tuple[int, int, int]:
        """An instance x attaining Ldim(V) = 1 + min(Ldim(V0), Ldim(V1)), with both Ldims,
        found within one ``budget`` of instance checks.

        Raises ``ValueError`` when no instance splits V (Ldim(V) = 0).
        """
        v = self.full if version_space is None else version_space
        with self._question(budget):
            target = self._ldim(v)
            if target == 0:
                raise ValueError("no instance splits this version space")
            for column in self._splitting(v, self._roots):
                zero, one = v ^ (v & column), v & column
                if min(zero.bit_count(), one.bit_count()).bit_length() < target:
                    continue  # 1 + floor(log2 min) < target
                low0, low1 = self._ldim(zero), self._ldim(one)
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

    def _spend(self, checks: int) -> None:
        self._work_left -= checks
        if self._work_left < self._next_report:
            self._next_report = self._work_left - PROGRESS_EVERY
            if self.progress is not None:
                self.progress(LdimProgress(self._budget - self._work_left, self._budget,
                                           len(self._cache) + len(self._small)))
            if self.cpu_deadline is not None and time.thread_time() > self.cpu_deadline:
                raise BudgetExceeded("exact Ldim needs more CPU time than its budget; "
                                     f"{self._cached()} version spaces are cached so far")
        if self._work_left < 0:
            raise BudgetExceeded(
                "exact Ldim needs more instance checks than the budget; "
                f"{self._cached()} version spaces are cached so far"
            )
        if self.max_bytes is not None and self.nbytes > self.max_bytes:
            raise BudgetExceeded(
                f"exact Ldim's caches would hold more than {self.max_bytes >> 20} MiB; "
                f"{self._cached()} version spaces are cached so far")

    def _cached(self) -> int:
        return len(self._cache) + len(self._small)

    def _child(self, words: NDArray[np.uint64], cap: int,
               counts: NDArray[np.int64] | None = None, unions: bool = False) -> int:
        """min(Ldim(V), cap) for the version space whose packed hypotheses-by-instances
        rows are ``words`` (its hypotheses distinct; ``counts``: their
        :func:`_bit_counts`, when known; ``unions``: whether a large one is worth
        looking at as a union of groups, :func:`_groups`)."""
        r = len(words)
        if r <= 1 or cap <= 0:
            return 0
        if _trivial(r, cap):
            return 1  # two distinct hypotheses differ somewhere, and floor(log2 3) = 1
        form = _Form(words, counts, unions=unions and r > self._small_size)
        if r > self._small_size:
            return self._solve_large(form, cap)
        entry = self._small.get(form.key)
        if entry is None:
            packed = np.packbits(_unpack(form.x, form.width).T, axis=1, bitorder="little")
            entry = ([int.from_bytes(p.tobytes(), "little") for p in packed], {})
            self._small[form.key] = entry
            self.nbytes += _ENTRY_BYTES + len(form.key) + form.width * (64 + (r >> 3))
        columns, memo = entry
        return self._solve_small(memo, (1 << r) - 1, cap, columns)

    def _solve_large(self, form: _Form, cap: int) -> int:
        """min(Ldim, cap) of a large version space in canonical form (numpy)."""
        r, key = form.r, form.key
        bounds = self._cache.get(key)
        lo, hi = bounds if bounds is not None else (1, _ceiling_of(r))
        if lo >= cap:
            return cap
        if lo == hi:
            return lo
        self._expansions += 1
        if bounds is None:  # (an entry for it is made below, whatever happens)
            self.nbytes += _ENTRY_BYTES + len(key)
        x, ones = form.x, form.ones
        self._spend(len(ones) * (1 + r // 512))
        target = min(cap, hi)
        if not form.union:  # a union is never a product (docs/theory.md)
            parts = _product(x, ones)
            if parts is not None:  # Ldim(A x B) = Ldim(A) + Ldim(B)
                a = self._child(parts[0], cap)
                b = self._child(parts[1], cap - a) if a < cap else 0
                if a + b < cap:
                    self._cache[key] = (a + b, a + b)
                    return a + b
                self._cache[key] = (cap, hi)
                return cap
        smaller = np.minimum(ones, r - ones)
        order = np.argsort(-smaller, kind="stable")
        best = lo
        seen: set[bytes] = set()
        totals = np.zeros(64 * x.shape[1], dtype=np.int64)
        totals[: len(ones)] = ones
        for j, size in zip(order.tolist(), smaller[order].tolist(), strict=True):
            if size.bit_length() <= best:
                break  # 1 + floor(log2 min) <= best, here and for every later split
            side = _column(x, j)
            if ones[j] != size:
                side = ~side
            split = np.packbits(side).tobytes()  # instances that split alike: once
            if split in seen:
                continue
            seen.add(split)
            small = x[side]
            # the larger side's counts are the form's less the smaller side's
            counts = None if _trivial(len(small), target - 1) else _bit_counts(small)
            a = self._child(small, target - 1, counts, unions=bool(side[0]))
            if a + 1 <= best:
                continue
            if counts is not None:
                counts = totals - counts
            b = self._child(x[~side], a, counts, unions=not side[0])
            value = 1 + min(a, b)
            if value > best:
                best = value
                if best >= target:
                    break
        if best >= target:
            self._cache[key] = (best, best) if target == hi else (best, hi)
            return min(best, cap)
        self._cache[key] = (best, best)
        return best

    def _solve_small(self, memo: dict[int, tuple[int, int]], v: int, cap: int,
                     candidates: list[int]) -> int:
        """min(Ldim(v), cap) on bitsets over a small version space's own rows (all
        distinct, so that any two of them are split by some instance)."""
        bounds = memo.get(v)
        n = v.bit_count()
        lo, hi = bounds if bounds is not None else (1 if n > 1 else 0, _ceiling_of(n))
        if lo >= cap:
            return cap
        if lo == hi:
            return lo
        self._expansions += 1
        if bounds is None:
            self.nbytes += _ENTRY_BYTES + (v.bit_length() >> 3)
        self._spend(len(candidates))
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
        splits.sort(key=lambda s: s[0], reverse=True)
        target = min(cap, hi)
        best = lo
        for smaller, small, large in splits:
            if smaller.bit_length() <= best:
                break  # 1 + floor(log2 min) <= best, here and for every later split
            a = 1 if target == 2 else self._solve_small(memo, small, target - 1, live)
            if a + 1 <= best:
                continue
            b = 1 if a == 1 else self._solve_small(memo, large, a, live)
            value = 1 + min(a, b)
            if value > best:
                best = value
                if best >= target:
                    break
        if best >= target:
            memo[v] = (best, best) if target == hi else (best, hi)
            return min(best, cap)
        memo[v] = (best, best)
        return best


def _trivial(r: int, cap: int) -> bool:
    """Whether min(Ldim, cap) of r >= 2 distinct hypotheses is 1 with no search."""
    return cap == 1 or r <= 3


def _ceiling_of(n: int) -> int:
    """floor(log2 n), the most Ldim of n hypotheses can be."""
    return n.bit_length() - 1


#: The :attr:`LdimSolver.max_bytes` of solvers made from now on (:func:`bound_new_solvers`).
_new_solver_max_bytes: int | None = None


def bound_new_solvers(max_bytes: int | None) -> None:
    """Every solver this process makes from now on may hold at most ``max_bytes``
    (:attr:`LdimSolver.max_bytes`; None: no bound). A server's agent host sets it."""
    global _new_solver_max_bytes
    _new_solver_max_bytes = max_bytes


#: The process's shared solvers by their class's fingerprint, least recently used first.
_SHARED: OrderedDict[str, LdimSolver] = OrderedDict()
_SHARED_LOCK = threading.Lock()


def solver_for(hclass: FiniteClass) -> LdimSolver:
    """The shared solver of a class (one per truth table); BudgetExceeded if too large.
    The process keeps solvers up to :data:`SOLVER_CACHE_BYTES` in all, by their
    :attr:`~LdimSolver.nbytes` as they grow; the least recently used go first."""
    try:
        key = hclass.fingerprint
    except TypeError:  # pragma: no cover - unhashable class: no sharing
        return LdimSolver(hclass.matrix())
    with _SHARED_LOCK:
        solver = _SHARED.get(key)
        if solver is not None:
            _SHARED.move_to_end(key)
    if solver is None:
        made = LdimSolver(hclass.matrix())  # (slow: outside the lock)
        with _SHARED_LOCK:
            solver = _SHARED.setdefault(key, made)
            _SHARED.move_to_end(key)
    with _SHARED_LOCK:
        total = sum(s.nbytes for s in _SHARED.values())
        while _SHARED and total > SOLVER_CACHE_BYTES:
            _, old = _SHARED.popitem(last=False)
            total -= old.nbytes
    return solver


def shared_solver_bytes() -> int:
    """The bytes the process's shared solvers hold now (at most about
    :data:`SOLVER_CACHE_BYTES`, give or take the one asked last)."""
    with _SHARED_LOCK:
        return sum(s.nbytes for s in _SHARED.values())


#: The class the solver's speed is measured on (:func:`checks_per_second`): large
#: version spaces, the slowest checks there are (numpy bit matrices, docs/theory.md).
CALIBRATION_CLASS = "intervals:n=160"
#: Instance checks the measure spends: about 0.04 s here, and its figure varies by about
#: 3% from one process to the next (200,000 checks, 0.15 s, were no steadier).
CALIBRATION_CHECKS = 50_000


@functools.cache
def checks_per_second() -> float:
    """The instance checks exact Ldim makes in one CPU second on this machine, on its
    slowest kind of check (measured once a process, in the calling thread: a server
    turns its budgets in CPU seconds into checks with it, instead of assuming a speed).

    >>> checks_per_second() > 1000
    True
    """
    solver = LdimSolver(make_class(CALIBRATION_CLASS).matrix())  # type: ignore[attr-defined]
    started = time.thread_time()
    with contextlib.suppress(BudgetExceeded):
        solver.ldim(budget=CALIBRATION_CHECKS)
    cpu = max(time.thread_time() - started, 1e-6)
    return solver.spent / cpu


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


def ldim(hclass: HypothesisClass | str, budget: int = LDIM_BUDGET) -> int:
    """Ldim(H), the Littlestone dimension of a finite class (or of the class a spec
    names): exact by the recursion, or by its closed form when the class is beyond the
    matrix budget (:func:`class_ldim` says which). BudgetExceeded when neither can be
    had within ``budget`` instance checks; SpecError for an infinite class.

    >>> ldim("thresholds:n=7"), ldim("monotone-disjunctions:n=20")  # exact, by theorem
    (3, 20)
    """
    if isinstance(hclass, str):
        hclass = make_class(hclass)
    if not isinstance(hclass, FiniteClass):
        raise SpecError(f"{hclass.spec} is an infinite class: its Ldim is not computed")
    return class_ldim(hclass, budget)[0]


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
        raise BeyondBudget(
            f"{who} cannot play {hclass.spec}: exact Ldim is beyond its budget "
            f"(budget={budget} instance checks; {exc})"
        ) from None


def shattered_tree(solver: LdimSolver, hclass: FiniteClass | None = None,
                   budget: int = LDIM_BUDGET) -> nx.DiGraph:
    """A shattered tree of depth Ldim(H) (UML Definition 21.4) as a networkx DiGraph.

    Node ids are paths: ``"t"`` is the root and ``"t01"`` the node reached by labels 0
    then 1. An internal node carries ``instance`` (and ``depth``); an edge carries
    ``label``; a leaf carries ``hypothesis``, one h in H that realises its path. The
    graph attribute ``ldim`` is the depth. Refused beyond :data:`TREE_DEPTH_LIMIT`;
    BudgetExceeded when a node's split needs more than ``budget`` instance checks.
    """
    depth = solver.ldim(budget=budget)
    if depth > TREE_DEPTH_LIMIT:
        raise BudgetExceeded(
            f"shattered tree of depth {depth} has {2**depth} leaves, over the limit of "
            f"depth {TREE_DEPTH_LIMIT}"
        )
    import networkx as nx

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
        x, _, _ = solver.best_split(v, budget)
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
