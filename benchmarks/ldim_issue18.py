"""The exact-Ldim solver as issue 18 left it (games/ldim.py at commit 0c806a0), kept
verbatim in substance as the same-run baseline of the Ldim benches of issue 32: canonical
forms on numpy boolean matrices of instances by hypotheses, products, Python-int bitsets
from 512 hypotheses down. Not part of the package; ``benchmarks/run.py`` times it beside
``littlestone.games.ldim.LdimSolver``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import BudgetExceeded
from littlestone.games.ldim import LDIM_BUDGET, PROGRESS_EVERY, LdimProgress

#: Version spaces of at most this many distinct hypotheses are solved on Python ints
#: (local bitsets of their own), larger ones on numpy boolean matrices.
SMALL = 512


class _Form:
    """The canonical form of a version space, from its instances-by-hypotheses matrix
    ``t`` (row x: the labels of the distinct hypotheses on instance x; r >= 2 columns).

    Only the instances that split it are kept, each flipped so that the first
    hypothesis reads 0 (a flipped instance splits alike), and of instances that then
    agree, the first; instances and hypotheses keep their order. Two version spaces
    with the same form (an interval class and the same class translated along the
    line, say) have the same Ldim. ``key`` is r, k and the kept rows packed as bits;
    the reduced matrix itself is built only when the form is expanded.
    """

    __slots__ = ("_flips", "_kept", "_t", "key", "ones", "packed", "r")

    def __init__(self, t: NDArray[np.bool_]) -> None:
        self._t = t
        self.r = r = t.shape[1]
        packed = np.packbits(t, axis=1)
        ones = np.bitwise_count(packed).sum(axis=1, dtype=np.int64)
        kept = np.flatnonzero((ones > 0) & (ones < r))
        flips = t[kept, 0]
        packed = packed[kept] ^ (flips.astype(np.uint8) * np.uint8(255))[:, None]
        ones = np.where(flips, r - ones[kept], ones[kept])
        if len(kept) > 1:
            first = np.sort(_distinct(packed)[0])
            if len(first) < len(kept):
                kept, flips, packed, ones = kept[first], flips[first], packed[first], ones[first]
        self._kept, self._flips, self.ones = kept, flips, ones
        if r % 8:  # the padding bits of the last byte (flipped rows have them set)
            packed[:, -1] &= np.uint8((0xFF << (8 - r % 8)) & 0xFF)
        #: The kept rows packed as bits (big-endian within a byte, padding cleared).
        self.packed = packed
        self.key = (r.to_bytes(4, "little") + len(kept).to_bytes(4, "little")
                    + packed.tobytes())

    def matrix(self) -> NDArray[np.bool_]:
        """The reduced matrix: kept instances by hypotheses, flipped."""
        if len(self._kept) == len(self._t) and not self._flips.any():
            return self._t  # read only: splits index it into new arrays
        return self._t[self._kept] ^ self._flips[:, None]


def _product(t: NDArray[np.bool_], ones: NDArray[np.int64], packed: NDArray[np.uint8]
             ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]] | None:
    """(A, B) when the version space ``t`` (instances by distinct hypotheses) is the
    product A x B of the distinct hypotheses of two groups of its instances, else
    ``None`` (``packed``: the rows of ``t`` packed as bits, padding clear).

    The group of the first instance is the instances that are not independent of it
    (over the hypotheses); the rest is the other group. V lies within A x B, so it is
    A x B exactly when |V| = |A| |B|. Then Ldim(V) = Ldim(A) + Ldim(B): a shattered
    tree of A with one of B grafted at each leaf gives >=, and induction on a
    shattered tree of V gives <= (docs/theory.md).
    """
    k, r = t.shape
    if k < 2:
        return None
    both = np.bitwise_count(packed & packed[0]).sum(axis=1, dtype=np.int64)
    dependent = both * r != ones[0] * ones
    if dependent.all():
        return None
    left, right = t[dependent], t[~dependent]
    hyps_left = _distinct(np.packbits(np.ascontiguousarray(left.T), axis=1))[0]
    hyps_right = _distinct(np.packbits(np.ascontiguousarray(right.T), axis=1))[0]
    if len(hyps_left) * len(hyps_right) != r:
        return None
    return left[:, np.sort(hyps_left)], right[:, np.sort(hyps_right)]


_WEIGHTS = np.random.default_rng(0).integers(1, 1 << 63, size=1 << 13).astype(np.uint64) | 1
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _distinct(packed: NDArray[np.uint8]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The index of the first of each distinct row of ``packed`` (in order), and which
    distinct row each row is. Rows are grouped by a hash (their 64-bit words mixed and
    summed with fixed odd weights) and the grouping is checked byte for byte; on a
    collision, an exact sort of the rows decides."""
    width = packed.shape[1]
    words = -(-width // 8)
    padded = packed
    if words * 8 != width:
        padded = np.zeros((len(packed), words * 8), dtype=np.uint8)
        padded[:, :width] = packed
    weights = _WEIGHTS[:words] if words <= len(_WEIGHTS) else np.resize(_WEIGHTS, words)
    mixed = np.ascontiguousarray(padded).view(np.uint64) * weights
    mixed ^= mixed >> np.uint64(29)  # high bits down: a sum of products alone loses them
    mixed *= _MIX
    _, first, inverse = np.unique(mixed.sum(axis=1), return_index=True, return_inverse=True)
    if not (packed == packed[first[inverse]]).all():  # pragma: no cover - a collision
        _, first, inverse = np.unique(packed.view(np.dtype((np.void, width))).ravel(),
                                      return_index=True, return_inverse=True)
    return first, inverse.ravel()


class LdimSolver:
    """Exact Ldim of a finite class and of every version space in it, with one cache."""

    def __init__(self, matrix: NDArray[np.bool_], small: int = SMALL) -> None:
        m = np.asarray(matrix, dtype=np.bool_)
        self._small_size = small
        self.n_hypotheses, self.n_instances = m.shape
        self.full = (1 << self.n_hypotheses) - 1
        #: instances by hypotheses
        self._matrix_t = np.ascontiguousarray(m.T)
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
        if len(m) > 1 and self.n_instances:
            first, inverse = _distinct(np.packbits(m, axis=1))
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

    def ldim(self, version_space: int | None = None, budget: int = LDIM_BUDGET) -> int:
        """Ldim of the version space (a bitset; the whole class by default).

        Raises :class:`BudgetExceeded` rather than make more than ``budget`` instance
        checks on version spaces not yet in the cache; what was learnt stays cached for
        the next call.
        """
        v = self.full if version_space is None else version_space
        self.lookups += 1
        known = self._exact.get(v)
        if known is not None:
            self.hits += 1
            return known
        self._work_left = self._budget = budget
        self._next_report = budget - PROGRESS_EVERY
        expansions = self._expansions
        rows = self._rows(v)
        t = self._matrix_t if len(rows) == self.n_hypotheses else self._matrix_t[:, rows]
        value = self._child(t, self.n_hypotheses + 1)
        self.hits += expansions == self._expansions
        self._exact[v] = value
        return value

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

    def _spend(self, checks: int) -> None:
        self._work_left -= checks
        if self._work_left < self._next_report:
            self._next_report = self._work_left - PROGRESS_EVERY
            if self.progress is not None:
                self.progress(LdimProgress(self._budget - self._work_left, self._budget,
                                           len(self._cache) + len(self._small)))
        if self._work_left < 0:
            raise BudgetExceeded(
                "exact Ldim needs more instance checks than the budget; "
                f"{len(self._cache) + len(self._small)} version spaces are cached so far"
            )

    def _child(self, t: NDArray[np.bool_], cap: int) -> int:
        """min(Ldim(V), cap) for the version space whose instances-by-hypotheses matrix
        is ``t`` (its hypotheses distinct)."""
        r = t.shape[1]
        if r <= 1 or cap <= 0:
            return 0
        if cap == 1 or r <= 3:
            return 1  # two distinct hypotheses differ somewhere, and floor(log2 3) = 1
        form = _Form(t)
        if r > self._small_size:
            return self._solve_large(form, cap)
        entry = self._small.get(form.key)
        if entry is None:
            packed = np.packbits(form.matrix(), axis=1, bitorder="little")
            entry = ([int.from_bytes(p.tobytes(), "little") for p in packed], {})
            self._small[form.key] = entry
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
        t, ones = form.matrix(), form.ones
        self._spend(len(ones) * (1 + r // 512))
        parts = _product(t, ones, form.packed)
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
        target = min(cap, hi)
        best = lo
        for j, size in zip(order.tolist(), smaller[order].tolist(), strict=True):
            if size.bit_length() <= best:
                break  # 1 + floor(log2 min) <= best, here and for every later split
            row = t[j]
            side = row if ones[j] == size else ~row
            a = self._child(t[:, side], target - 1)
            if a + 1 <= best:
                continue
            b = self._child(t[:, ~side], a)
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


def _ceiling_of(n: int) -> int:
    """floor(log2 n), the most Ldim of n hypotheses can be."""
    return n.bit_length() - 1
