"""docs/theory.md's row for the number of halfspaces on the cube (issue 45; the halfspace
notes): the distinct labellings of {0, 1}^d by [<w, x> > theta], counted by brute force,
against the notes' C(2^d, d) <= 2^(d^2) and Cover's count 2 sum_{i <= d} C(2^d - 1, i)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

#: The threshold functions of d variables (Muroga; OEIS A000609), d = 1 .. 4.
KNOWN = {1: 4, 2: 14, 3: 104, 4: 1882}


def threshold_functions(d: int, weight: int) -> set[int]:
    """Every labelling of {0, 1}^d (a 2^d-bit mask) by [<w, x> > theta] with integer
    weights |w_i| <= ``weight`` and theta a half-integer: all of them once ``weight`` is
    large enough (integer weights realise every halfspace on the cube)."""
    cube = np.array(list(itertools.product((0, 1), repeat=d)), dtype=np.int64)  # 2^d x d
    weights = np.array(list(itertools.product(range(-weight, weight + 1), repeat=d)),
                       dtype=np.int64)
    scores = weights @ cube.T  # |W| x 2^d
    bits = 1 << np.arange(len(cube), dtype=np.int64)
    out: set[int] = set()
    for theta in np.arange(-d * weight - 0.5, d * weight + 1.0, 1.0):
        out.update(((scores > theta).astype(np.int64) @ bits).tolist())
    return out


def cover_count(d: int) -> int:
    """2 sum_{i <= d} C(N - 1, i), N = 2^d: the most dichotomies of N points of R^d by
    affine halfspaces (Cover 1965), a bound on the cube's."""
    return 2 * sum(math.comb(2**d - 1, i) for i in range(d + 1))


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_the_halfspaces_on_the_cube_are_counted_and_bounded(d):
    """The count is stable in the weight range (so complete) and the known one; it is
    within Cover's count (equal at d <= 2) and within 2^(d^2) from d = 2 on. The notes'
    C(2^d, d) is below it for d <= 4 (6 < 14, 56 < 104, 1820 < 1882): not a bound; and
    2^(d^2) fails at d = 1 (the 4 functions 0, 1, x, not x against 2)."""
    count = len(threshold_functions(d, 3 if d == 4 else 4))
    assert count == len(threshold_functions(d, 4 if d == 4 else 6)) == KNOWN[d]
    assert count <= cover_count(d)
    assert (count == cover_count(d)) == (d <= 2)
    assert (count <= 2 ** (d * d)) == (d >= 2)
    assert math.comb(2**d, d) < count


def test_cover_count_stays_within_two_to_the_d_squared():
    """2 sum_{i <= d} C(2^d - 1, i) <= 2^(d^2) for 2 <= d <= 40 (exact integers): the
    notes' log |H| = d^2 holds from d = 2 on, through the right count."""
    assert all(cover_count(d) <= 2 ** (d * d) for d in range(2, 41))
    assert cover_count(1) > 2
