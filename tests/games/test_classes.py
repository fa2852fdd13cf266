from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from littlestone.games.classes import (
    HYPOTHESIS_LIMIT,
    FiniteClass,
    HalfspaceClass,
    MatrixClass,
    make_class,
)
from littlestone.games.errors import BudgetExceeded, SpecError

FINITE_SPECS = [
    "thresholds:n=9",
    "singletons:n=6",
    "intervals:n=6",
    "monotone-disjunctions:n=4",
    "k-disjunctions:n=5,k=2",
    "conjunctions:n=3",
]


def brute_force_table(spec: str) -> np.ndarray:
    """The truth table from each class's definition, written independently."""
    name = spec.split(":")[0]
    params = dict(kv.split("=") for kv in spec.split(":")[1].split(","))
    n = int(params["n"])
    if name == "thresholds":
        return np.array([[x < a for x in range(n)] for a in range(n + 1)])
    if name == "singletons":
        return np.array([[x == j for x in range(n)] for j in range(n)])
    if name == "intervals":
        rows = [[False] * n] + [[a <= x < b for x in range(n)]
                                for a in range(n + 1) for b in range(a + 1, n + 1)]
        return np.array(rows)
    bits = [[(x >> i) & 1 for i in range(n)] for x in range(2**n)]
    if name in ("monotone-disjunctions", "k-disjunctions"):
        k = int(params.get("k", n))
        subsets = [s for s in range(2**n) if bin(s).count("1") <= k]
        return np.array([[any(b[i] for i in range(n) if s >> i & 1) for b in bits]
                         for s in subsets])
    if name == "conjunctions":
        rows = [[False] * 2**n]
        for code in range(3**n):
            digits = [(code // 3**i) % 3 for i in range(n)]
            rows.append([all((d != 1 or b[i]) and (d != 2 or not b[i])
                             for i, d in enumerate(digits)) for b in bits])
        return np.array(rows)
    raise AssertionError(name)


@pytest.mark.parametrize("spec", FINITE_SPECS)
def test_truth_table_matches_definition(spec):
    hclass = make_class(spec)
    assert isinstance(hclass, FiniteClass)
    table = brute_force_table(spec)
    assert hclass.matrix().shape == (hclass.size, hclass.domain_size)
    # same multiset of rows (hypothesis numbering is the class's own)
    assert sorted(map(tuple, hclass.matrix().astype(int))) == sorted(map(tuple, table.astype(int)))
    subset = np.array([0, hclass.size - 1])
    for x in range(hclass.domain_size):
        assert np.array_equal(hclass.evaluate(x), hclass.matrix()[:, x])
        assert np.array_equal(hclass.evaluate(x, subset), hclass.matrix()[subset, x])


@pytest.mark.parametrize(
    ("spec", "size", "domain"),
    [
        ("thresholds:n=1023", 1024, 1023),
        ("singletons:n=7", 7, 7),
        ("intervals:n=10", 56, 10),
        ("monotone-disjunctions:n=20", 2**20, 2**20),
        ("k-disjunctions:n=20,k=2", 1 + 20 + 190, 2**20),
        ("conjunctions:n=4", 3**4 + 1, 16),
    ],
)
def test_sizes(spec, size, domain):
    hclass = make_class(spec)
    assert (hclass.size, hclass.domain_size) == (size, domain)


def test_large_class_evaluates_without_a_matrix():
    hclass = make_class("monotone-disjunctions:n=20")
    assert isinstance(hclass, FiniteClass)
    x = 0b1011
    values = hclass.evaluate(x)
    assert values.shape == (2**20,)
    assert values.sum() == 2**20 - 2**17  # every subset but those avoiding 3 variables
    with pytest.raises(BudgetExceeded):
        hclass.matrix()


def test_encodings():
    assert make_class("thresholds:n=4").encode(2).tolist() == [1.0, 1.0, 0.0]
    assert make_class("singletons:n=3").encode(1).tolist() == [0.0, 1.0, 0.0]
    assert make_class("conjunctions:n=3").encode(0b101).tolist() == [1.0, 0.0, 1.0]
    h = make_class("halfspaces:d=3,margin=0.1")
    assert h.encode(np.array([1.0, 0.0, 0.0])).tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("bad", [-1, 9, 2.0, "3", True, None])
def test_finite_instance_outside_domain(bad):
    with pytest.raises(ValueError):
        make_class("thresholds:n=9").check_instance(bad)


@pytest.mark.parametrize(
    "bad", [[1.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [float("nan"), 0, 0], "abc",
            [[1.0, 0.0, 0.0]]]
)
def test_halfspace_instance_must_be_unit_vector(bad):
    with pytest.raises(ValueError):
        make_class("halfspaces:d=3").check_instance(bad)


@pytest.mark.parametrize("d,margin,seed", [(2, 0.5, 0), (10, 0.1, 1), (100, 0.05, 2)])
def test_halfspace_samples_keep_margin(d, margin, seed):
    hclass = make_class(f"halfspaces:d={d},margin={margin}")
    assert isinstance(hclass, HalfspaceClass)
    rng = np.random.default_rng(seed)
    w = hclass.sample_target(rng)
    xs = hclass.sample_instances(rng, w, 500)
    assert np.allclose(np.linalg.norm(xs, axis=1), 1.0, atol=1e-9)
    assert np.all(np.abs(xs @ w) >= margin - 1e-12)
    assert 0 < np.mean(xs @ w > 0) < 1  # both labels occur


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("circles:r=1", "unknown class 'circles'"),
        ("thresholds", "missing parameter n"),
        ("thresholds:n=0", "must be at least 1"),
        ("thresholds:n=4,m=2", "unknown parameter m"),
        ("halfspaces:d=3,margin=2", "must be at most 1"),
        ("k-disjunctions:n=60,k=30", "over the limit"),
        ("monotone-disjunctions:n=40", "must be at most"),
        ("matrix:path=/nonexistent.npy", "no such file"),
    ],
)
def test_bad_specs(spec, message):
    with pytest.raises(SpecError, match=message):
        make_class(spec)


def test_matrix_files(tmp_path):
    m = np.array([[0, 1, 1], [1, 1, 0], [0, 1, 1]])
    np.save(tmp_path / "m.npy", m)
    np.savetxt(tmp_path / "m.csv", m, delimiter=",", fmt="%d")
    for name in ("m.npy", "m.csv"):
        hclass = make_class(f"matrix:path={tmp_path / name}")
        assert isinstance(hclass, MatrixClass)
        assert (hclass.size, hclass.domain_size) == (3, 3)  # duplicate rows kept
        assert hclass.evaluate(0).tolist() == [False, True, False]
    (tmp_path / "bad.csv").write_text("0,1\n2,0\n")
    (tmp_path / "ragged.csv").write_text("0,1\n1\n")
    (tmp_path / "text.csv").write_text("a,b\n")
    (tmp_path / "m.txt").write_text("0,1\n")
    (tmp_path / "broken.npy").write_bytes(b"not numpy at all")
    np.save(tmp_path / "flat.npy", np.array([0, 1, 1]))
    for name, message in [("bad.csv", "0 or 1"), ("ragged.csv", "cannot read"),
                          ("text.csv", "cannot read"), ("m.txt", "must end in"),
                          ("broken.npy", "cannot read"), ("flat.npy", "2-D")]:
        with pytest.raises(SpecError, match=message):
            make_class(f"matrix:path={tmp_path / name}")


@settings(max_examples=60, deadline=None)
@given(
    table=st.integers(1, 12).flatmap(
        lambda rows: st.lists(st.lists(st.booleans(), min_size=5, max_size=5),
                              min_size=rows, max_size=rows)
    ),
    moves=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 1)), max_size=8),
)
def test_version_space_matches_brute_force(table, moves):
    hclass = MatrixClass(np.array(table))
    space = hclass.version_space()
    alive = set(range(hclass.size))
    for x, y in moves:
        ones = {h for h in alive if table[h][x]}
        assert space.votes(x) == len(ones)
        after = ones if y else alive - ones
        assert space.restrict(x, y) == len(after)
        if after:
            alive = after
        assert sorted(space.indices().tolist()) == sorted(alive)
        assert space.size == len(alive)


def test_limits_are_consistent():
    assert HYPOTHESIS_LIMIT >= 2**20
    assert math.comb(20, 2) + 21 == make_class("k-disjunctions:n=20,k=2").size
