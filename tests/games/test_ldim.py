from __future__ import annotations

import functools
import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from littlestone.games.classes import FiniteClass, MatrixClass, make_class
from littlestone.games.errors import BudgetExceeded
from littlestone.games.ldim import (
    LDIM_BUDGET,
    SMALL,
    LdimProgress,
    LdimSolver,
    _bit_counts,
    _compact,
    _Form,
    _pack,
    _shift_down,
    _spans,
    _unpack,
    bitset,
    bitset_indices,
    class_ldim,
    shattered_tree,
    solver_for,
    verify_shattered,
)


def brute_ldim(table: tuple[tuple[bool, ...], ...], rows: frozenset[int]) -> int:
    """The definition of docs/theory.md, straight: no memo, no pruning."""
    best = 0
    for x in range(len(table[0]) if table else 0):
        ones = frozenset(h for h in rows if table[h][x])
        zeros = rows - ones
        if ones and zeros:
            best = max(best, 1 + min(brute_ldim(table, ones), brute_ldim(table, zeros)))
    return best


def vc_dimension(matrix: np.ndarray) -> int:
    """Largest shattered set of columns, by exhaustion."""
    best = 0
    cols = matrix.shape[1]
    for size in range(1, cols + 1):
        found = False
        for subset in itertools.combinations(range(cols), size):
            patterns = {tuple(row) for row in matrix[:, subset]}
            if len(patterns) == 2**size:
                found = True
                break
        if not found:
            break
        best = size
    return best


@settings(max_examples=120, deadline=None)
@given(
    st.integers(1, 10).flatmap(
        lambda rows: st.integers(1, 6).flatmap(
            lambda cols: st.lists(
                st.lists(st.booleans(), min_size=cols, max_size=cols),
                min_size=rows, max_size=rows,
            )
        )
    )
)
def test_agrees_with_brute_force(table):
    matrix = np.array(table, dtype=bool)
    for small in (SMALL, 1):  # Python-int bitsets, and numpy matrices all the way down
        _agrees_with_brute_force(table, matrix, LdimSolver(matrix, small=small))


def _agrees_with_brute_force(table, matrix, solver):
    frozen = tuple(tuple(row) for row in table)
    everyone = frozenset(range(len(table)))
    expected = brute_ldim(frozen, everyone)
    assert solver.ldim() == expected
    # every version space reached by one or two labels, from the same (warm) cache
    for x in range(matrix.shape[1]):
        for y in (0, 1):
            rows = frozenset(h for h in everyone if table[h][x] == y)
            if rows:
                v = bitset([h in rows for h in range(len(table))])
                assert solver.ldim(v) == brute_ldim(frozen, rows)


@pytest.mark.parametrize("seed", range(6))
def test_between_vc_and_log_size_on_random_matrices(seed):
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 2, size=(int(rng.integers(8, 40)), 7)).astype(bool)
    value = LdimSolver(matrix).ldim()
    distinct = len({tuple(r) for r in matrix})
    assert vc_dimension(matrix) <= value <= math.floor(math.log2(distinct))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 100, 255, 256, 1023])
def test_thresholds(n):
    value, method = class_ldim(make_class(f"thresholds:n={n}"))
    assert (value, method) == (math.floor(math.log2(n + 1)), "exact")


@pytest.mark.parametrize("n", [1, 2, 5, 64])
def test_singletons(n):
    assert class_ldim(make_class(f"singletons:n={n}"))[0] == (1 if n >= 2 else 0)


@pytest.mark.parametrize("n", [1, 2, 4, 6, 8, 10])
def test_monotone_disjunctions(n):
    assert class_ldim(make_class(f"monotone-disjunctions:n={n}")) == (n, "exact")


def test_closed_form_beyond_the_matrix_budget():
    assert class_ldim(make_class("monotone-disjunctions:n=20")) == (20, "theorem")
    with pytest.raises(BudgetExceeded):
        class_ldim(make_class("conjunctions:n=13"))


def test_closed_forms_agree_with_the_recursion():
    for spec in ["thresholds:n=40", "singletons:n=9", "monotone-disjunctions:n=7"]:
        hclass = make_class(spec)
        assert isinstance(hclass, FiniteClass)
        assert hclass.known_ldim() == LdimSolver(hclass.matrix()).ldim()


def test_budget_is_enforced_and_cache_survives():
    rng = np.random.default_rng(0)
    matrix = rng.integers(0, 2, size=(256, 16)).astype(bool)
    solver = LdimSolver(matrix)
    with pytest.raises(BudgetExceeded):
        solver.ldim(budget=3)
    assert solver.ldim() == LdimSolver(matrix).ldim()


def test_best_split_and_split_ldims():
    hclass = make_class("intervals:n=12")
    assert isinstance(hclass, FiniteClass)
    solver = solver_for(hclass)
    assert solver_for(hclass) is solver  # one shared cache per class
    target = solver.ldim()
    x, low0, low1 = solver.best_split()
    assert 1 + min(low0, low1) == target
    assert solver.split_ldims(solver.full, x) == (low0, low1)
    # a version space with no split
    single = 1 << 5
    assert solver.ldim(single) == 0
    assert solver.split_ldims(single, 0)[0] in (-1, 0)
    with pytest.raises(ValueError):
        solver.best_split(single)


def test_bitsets():
    assert bitset([]) == 0
    assert bitset_indices(bitset([True, False, False, True, True])) == [0, 3, 4]


@pytest.mark.parametrize(
    "spec", ["thresholds:n=15", "singletons:n=5", "monotone-disjunctions:n=4", "intervals:n=9",
             "conjunctions:n=3"]
)
def test_shattered_tree(spec, tmp_path):
    hclass = make_class(spec)
    assert isinstance(hclass, FiniteClass)
    solver = solver_for(hclass)
    tree = shattered_tree(solver, hclass)
    depth = solver.ldim()
    leaves = [n for n in tree if tree.out_degree(n) == 0]
    assert len(leaves) == 2**depth
    assert all(len(leaf) - 1 == depth for leaf in leaves)
    assert verify_shattered(tree, hclass)
    path = tmp_path / "tree.graphml"
    nx.write_graphml(tree, path)
    loaded = nx.read_graphml(path)
    assert loaded.number_of_nodes() == tree.number_of_nodes()
    assert verify_shattered(loaded, hclass)


def test_verify_shattered_detects_a_bad_tree():
    hclass = make_class("thresholds:n=7")
    assert isinstance(hclass, FiniteClass)
    tree = shattered_tree(solver_for(hclass), hclass)
    leaf = next(n for n in tree if tree.out_degree(n) == 0)
    other = next(n for n in tree if tree.out_degree(n) == 0 and n != leaf)
    tree.nodes[leaf]["hypothesis"] = tree.nodes[other]["hypothesis"]
    assert not verify_shattered(tree, hclass)


def test_duplicate_rows_do_not_change_ldim(random_matrix_class):
    base = random_matrix_class(10, 6, seed=3)
    doubled = MatrixClass(np.vstack([base.matrix(), base.matrix()]))
    assert LdimSolver(base.matrix()).ldim() == LdimSolver(doubled.matrix()).ldim()


def memoised_ldim(matrix: np.ndarray) -> int:
    """The definition memoised on the set of rows: no pruning, no canonical forms."""
    rows = [tuple(r) for r in matrix.astype(bool)]

    @functools.cache
    def solve(v: frozenset[int]) -> int:
        best = 0
        for x in range(matrix.shape[1]):
            ones = frozenset(h for h in v if rows[h][x])
            if ones and ones != v:
                best = max(best, 1 + min(solve(ones), solve(v - ones)))
        return best

    return solve(frozenset(range(len(rows))))


tables = st.integers(1, 5).flatmap(
    lambda rows: st.integers(1, 3).flatmap(
        lambda cols: st.lists(st.lists(st.booleans(), min_size=cols, max_size=cols),
                              min_size=rows, max_size=rows)))


@settings(max_examples=60, deadline=None)
@given(tables, tables)
def test_products_add_their_ldims(left, right):
    """V = A x B over disjoint instances: the solver finds the product (Ldim(A) + Ldim(B)),
    and the value equals the definition's."""
    a, b = np.array(left, dtype=bool), np.array(right, dtype=bool)
    product = np.array([np.concatenate([x, y]) for x in a for y in b])
    expected = memoised_ldim(product)
    assert expected == memoised_ldim(a) + memoised_ldim(np.unique(b, axis=0))
    for small in (SMALL, 1):
        assert LdimSolver(product, small=small).ldim() == expected


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["intervals:n=7", "intervals:n=10", "thresholds:n=20",
                                  "monotone-disjunctions:n=4"])
def test_structured_classes_agree_with_the_definition(spec):
    """Classes whose version spaces repeat up to translation and split into products:
    the canonical forms and the product rule give the definition's values."""
    hclass = make_class(spec)
    assert isinstance(hclass, FiniteClass)
    matrix = hclass.matrix()
    expected = memoised_ldim(matrix)
    for small in (SMALL, 1, 8):
        solver = LdimSolver(matrix, small=small)
        assert solver.ldim() == expected
        # every version space one label away, from the same (warm) cache
        for x in range(matrix.shape[1]):
            for v in solver.split(solver.full, x):
                if v:
                    rows = matrix[bitset_indices(v)]
                    assert solver.ldim(v) == memoised_ldim(rows)


@pytest.mark.parametrize("seed", range(4))
def test_numpy_path_agrees_on_random_matrices(seed):
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 2, size=(int(rng.integers(20, 60)), 6)).astype(bool)
    expected = memoised_ldim(matrix)
    assert {LdimSolver(matrix, small=s).ldim() for s in (SMALL, 1, 8)} == {expected}


def test_intervals_exact_values():
    """Ldim of intervals on n points, computed exactly (docs/theory.md)."""
    values = {n: class_ldim(make_class(f"intervals:n={n}"))[0] for n in (1, 2, 3, 4, 8, 16, 64)}
    assert values == {1: 1, 2: 2, 3: 2, 4: 3, 8: 4, 16: 6, 64: 10}


@pytest.mark.slow
@pytest.mark.parametrize("spec,expected", [("intervals:n=128", 12), ("intervals:n=200", 13),
                                           ("intervals:n=256", 14), ("intervals:n=300", 14)])
def test_intervals_exact_values_at_the_frontier(spec, expected):
    """The larger values of docs/theory.md, which the union forms now reach in seconds."""
    assert class_ldim(make_class(spec)) == (expected, "exact")


# -- the packed words of large version spaces ------------------------------------------

@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 63), (254, 64), (255, 65), (256, 130),
                                       (600, 200), (511, 7)])
def test_packed_words_agree_with_numpy(seed, rows, cols):
    rng = np.random.default_rng(seed)
    matrix = rng.random((rows, cols)) < rng.random()
    words = _pack(matrix)
    assert words.shape == (rows, max(1, -(-cols // 64)))
    assert np.array_equal(_unpack(words, cols), matrix)
    assert np.array_equal(_bit_counts(words)[:cols], matrix.sum(axis=0))
    assert not _bit_counts(words)[cols:].any()  # the padding stays clear
    for n in (0, 1, 5, 63, 64, 65, 130):
        shifted = np.zeros_like(matrix)
        shifted[:, : max(0, cols - n)] = matrix[:, n:]
        assert np.array_equal(_unpack(_shift_down(words, n), cols), shifted)
    # dropped columns: one, a run, several runs, more runs than are shifted
    for kept in (np.delete(np.arange(cols), rng.integers(cols)),
                 np.flatnonzero(rng.random(cols) < 0.7), np.arange(cols // 3, cols),
                 np.flatnonzero(np.arange(cols) % 3 != 1)):
        if len(kept):
            got = _compact(words, kept)
            assert np.array_equal(_unpack(got, len(kept)), matrix[:, kept])
            # past them: only columns that were not kept (the ones after the last,
            # shifted down alike, or nothing when the kept ones were gathered)
            after = matrix[:, kept[-1] + 1:]
            rest = _unpack(got, got.shape[1] * 64)[:, len(kept): len(kept) + after.shape[1]]
            assert np.array_equal(rest, after) or not rest.any()
    nonzero = matrix.any(axis=1)
    low, high = _spans(words[nonzero])
    assert np.array_equal(low, matrix[nonzero].argmax(axis=1))
    assert np.array_equal(high, cols - 1 - matrix[nonzero][:, ::-1].argmax(axis=1))


# -- unions: every hypothesis but the first reads 1 on one group of instances ----------

def union_of(groups: list[np.ndarray]) -> np.ndarray:
    """The all-zeros hypothesis, then each group's hypotheses on its own instances
    (consecutive), zeros elsewhere."""
    cols = sum(g.shape[1] for g in groups)
    rows = [np.zeros(cols, dtype=bool)]
    at = 0
    for g in groups:
        for row in g:
            if row.any():
                full = np.zeros(cols, dtype=bool)
                full[at: at + g.shape[1]] = row
                rows.append(full)
        at += g.shape[1]
    return np.array(rows)


def random_group(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    table = rng.random((rows, cols)) < 0.5
    return np.unique(table[table.any(axis=1)], axis=0)


@pytest.mark.parametrize("seed", range(6))
def test_unions_agree_with_the_definition(seed):
    """Unions of random classes on groups of instances, with a group repeated so that
    the search meets the same union in several orders: the union keys give the
    definition's values, with the first hypothesis the shared one and without."""
    rng = np.random.default_rng(seed)
    group = random_group(rng, int(rng.integers(8, 16)), 4)
    other = random_group(rng, int(rng.integers(3, 8)), 3)
    matrix = union_of([group, other, group])
    expected = memoised_ldim(matrix)
    one_label = {v: memoised_ldim(matrix[bitset_indices(v)])
                 for x in range(matrix.shape[1])
                 for v in LdimSolver(matrix).split((1 << len(matrix)) - 1, x) if v}
    shuffled = matrix[rng.permutation(len(matrix))]
    for small in (1, 8, SMALL):
        solver = LdimSolver(matrix, small=small)
        assert solver.ldim() == expected
        for v, value in one_label.items():  # every version space one label away
            assert solver.ldim(v) == value
        if small == 1:  # the numpy path all the way down: the unions were keyed as such
            assert any(key.startswith(b"U") for key in solver._cache)
        assert LdimSolver(shuffled, small=small).ldim() == expected


@pytest.mark.parametrize("seed", range(6))
def test_union_keys_ignore_the_order_of_the_groups(seed):
    rng = np.random.default_rng(seed)
    groups = [random_group(rng, int(rng.integers(2, 8)), int(rng.integers(1, 5)))
              for _ in range(3)]
    forward = _Form(_pack(union_of(groups)), unions=True)
    backward = _Form(_pack(union_of(groups[::-1])), unions=True)
    assert forward.union and backward.union
    assert forward.key == backward.key
    # one group alone is not a union, and is keyed by its bits
    alone = _Form(_pack(union_of(groups[:1])), unions=True)
    assert not alone.union
    assert alone.key != forward.key


def test_a_union_and_its_groups_differ_from_a_product():
    """A product of two classes over two groups is one group (docs/theory.md), so it is
    never keyed as a union; its Ldim is the sum."""
    a = np.array([[0, 0], [1, 0], [1, 1]], dtype=bool)
    b = np.array([[0], [1]], dtype=bool)
    product = np.array([np.concatenate([x, y]) for x in a for y in b])
    assert not _Form(_pack(product), unions=True).union
    assert LdimSolver(product, small=1).ldim() == memoised_ldim(product) == 2


@settings(max_examples=40, deadline=None)
@given(tables, tables, st.sampled_from(["left outer", "right outer", "shuffled"]),
       st.randoms(use_true_random=False))
def test_products_in_any_order_add_their_ldims(left, right, order, rnd):
    """A product found whatever the order of its hypotheses and instances: in the order
    of its pairs (either factor varying slowest) with no look-up, otherwise by one."""
    a = np.unique(np.array(left, dtype=bool), axis=0)
    b = np.unique(np.array(right, dtype=bool), axis=0)
    if order == "left outer":
        rows = [np.concatenate([x, y]) for x in a for y in b]
    else:
        rows = [np.concatenate([x, y]) for y in b for x in a]
    if order == "shuffled":
        rnd.shuffle(rows)
    product = np.array(rows)
    columns = list(range(product.shape[1]))
    rnd.shuffle(columns)
    product = product[:, columns]
    expected = memoised_ldim(product)
    assert expected == memoised_ldim(a) + memoised_ldim(b)
    for small in (SMALL, 1):
        assert LdimSolver(product, small=small).ldim() == expected


def test_progress_reports_and_can_stop_the_computation():
    matrix = make_class("intervals:n=128").matrix()
    solver = LdimSolver(matrix)
    seen: list[LdimProgress] = []
    solver.progress = seen.append
    value = solver.ldim()
    assert seen, "a computation of more than PROGRESS_EVERY checks reports"
    spent = [p.spent for p in seen]
    assert spent == sorted(spent) and spent[-1] <= seen[-1].budget == LDIM_BUDGET
    assert all(p.cached > 0 for p in seen)

    stopped = LdimSolver(matrix)

    def stop(progress: LdimProgress) -> None:
        raise KeyboardInterrupt

    stopped.progress = stop
    with pytest.raises(KeyboardInterrupt):
        stopped.ldim()
    stopped.progress = None
    assert stopped.ldim() == value  # what was cached before the stop stays good


def test_no_instance_splits_a_class_without_instances():
    """Hypotheses that no instance tells apart count once: Ldim 0 (it was 1 with two or
    three of them and no instances at all)."""
    for rows in (1, 2, 3, 5):
        assert LdimSolver(np.zeros((rows, 0), dtype=bool)).ldim() == 0
        assert LdimSolver(np.ones((rows, 4), dtype=bool), small=1).ldim() == 0
