"""Decision trees over {0, 1}^d (UML ch. 18): the class of trees with at most k leaves,
ID3 with its three gain measures, the MDL bound (18.1), pruning and random forests.

An instance is the bit mask of its true variables (bit i is x_{i+1}), as in the other
boolean classes. A tree is a leaf, ``0`` or ``1``, or a node ``(i, low, high)``: it
asks 1[x_{i+1} = 1] and goes to ``high`` when the answer is yes.

**The class.** ``decision-trees:d=D,leaves=K`` holds every function {0, 1}^D -> {0, 1}
some tree of at most K leaves computes, each function once (:func:`tree_functions`).
A tree with K leaves separates K instances into K cells, so VCdim >= K while K <= 2^D,
and with 2^D leaves every function is a tree (UML Exercise 18.1): VCdim = 2^D. The book's
summary says that the VC dimension of trees with k leaves *is* k: over {0, 1}^d it can be
more (stumps on {0, 1}^3 shatter 3 instances with 2 leaves). The description language of
UML 18.1 codes a tree of n nodes in (n + 1) log2(d + 3) bits, so |H| <= (d + 3)^(2K) and
VCdim <= 2K log2(d + 3).

>>> H = DecisionTrees(3, 2)
>>> H.size  # the constants and the 6 literals
8
>>> from littlestone.games.vcdim import vcdim
>>> vcdim(H.matrix())
3

**ID3 and the MDL bound.** :func:`id3` grows a tree as UML 18.2 does, with the train
error, the information gain or the Gini index as the gain; :func:`mdl_bound` is the
right-hand side of (18.1), which holds for every tree at once with probability 1 - delta;
:func:`prune` is UML's generic bottom-up pruning with it as f(T, m).

>>> xs = np.array([0b111, 0b001, 0b011, 0b100])  # Exercise 18.2's set: x1 is bit 0
>>> ys = np.array([1, 1, 0, 0])
>>> tree = id3(xs, ys, 3, "entropy", depth=2)
>>> float(training_error(tree, xs, ys)) >= 0.25
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, Union

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import SpecError
from littlestone.games.hypotheses import (
    BoolArray,
    FloatArray,
    TruthTableClass,
)
from littlestone.games.spec import format_spec

__all__ = [
    "GAINS",
    "DecisionTrees",
    "Tree",
    "forest_predict",
    "id3",
    "mdl_bound",
    "nodes",
    "predict",
    "prune",
    "random_forest",
    "training_error",
    "tree_functions",
]

Tree = Union[int, tuple[int, "Tree", "Tree"]]  # noqa: UP007 - a recursive alias needs Union
Masks = NDArray[np.int64]
#: The largest d of the class: a function's truth table is one int64 of 2^d bits (16 at most).
MAX_TREE_VARIABLES = 4


def _train_error(a: FloatArray) -> FloatArray:
    return np.minimum(a, 1 - a)


def _entropy(a: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -a * np.log(a) - (1 - a) * np.log(1 - a)
    return np.nan_to_num(h)


def _gini(a: FloatArray) -> FloatArray:
    return 2 * a * (1 - a)


#: The gain measures of UML 18.2.1, by name: C(a), a the fraction of labels 1.
GAINS: dict[str, Callable[[FloatArray], FloatArray]] = {
    "train-error": _train_error, "entropy": _entropy, "gini": _gini,
}


def _spread(tables: Masks, r: int, i: int, value: int) -> Masks:
    """Tables of functions of r - 1 variables, read as functions of r variables on the
    points whose variable i is ``value`` (the others' bits in order), 0 elsewhere."""
    out = np.zeros_like(tables)
    for p in range(1 << r):
        if (p >> i) & 1 == value:
            rest = (p & ((1 << i) - 1)) | ((p >> (i + 1)) << i)  # p without bit i
            out |= ((tables >> rest) & 1) << p
    return out


@functools.cache
def _tree_tables(r: int, leaves: int) -> Masks:
    """The tables of the functions of r variables that trees of <= ``leaves`` leaves
    compute. A tree that asks x_i and asks it again below can lose the second question,
    so below the root's x_i the subtrees are functions of the r - 1 other variables; the
    set does not depend on which r variables they are."""
    if leaves == 1 or r == 0:
        return np.array([0, (1 << (1 << r)) - 1], dtype=np.int64)
    if leaves >= 1 << r:  # every function (Exercise 18.1): a leaf per instance
        return np.arange(1 << (1 << r), dtype=np.int64)
    found = [_tree_tables(r, leaves - 1)]
    for a in range(1, leaves):
        high, low = _tree_tables(r - 1, a), _tree_tables(r - 1, leaves - a)
        for i in range(r):
            found.append((_spread(high, r, i, 1)[:, None] | _spread(low, r, i, 0)[None, :]).ravel())
    return np.unique(np.concatenate(found))


def tree_functions(d: int, leaves: int) -> NDArray[np.int64]:
    """The truth tables (bit x is f(x)) of every function {0, 1}^d -> {0, 1} that a tree
    of at most ``leaves`` leaves computes, sorted.

    >>> tree_functions(1, 2).tolist()  # 0, x1, not x1, 1
    [0, 1, 2, 3]
    """
    if not 0 <= d <= MAX_TREE_VARIABLES or leaves < 1:
        raise SpecError(f"decision-trees: d={d} must be in 1..{MAX_TREE_VARIABLES} and "
                        f"leaves={leaves} >= 1")
    return _tree_tables(d, leaves)


class DecisionTrees(TruthTableClass):
    """The functions {0, 1}^d -> {0, 1} computed by a decision tree of at most k leaves
    whose nodes ask 1[x_i = 1] (UML 18.1); hypothesis h is the h-th truth table in order.

    >>> H = DecisionTrees(2, 4)
    >>> H.size, H.domain_size  # every function of 2 bits
    (16, 4)
    >>> H.evaluate(0b01)[:4].astype(int).tolist()  # tables 0..3 on x = (1, 0)
    [0, 0, 1, 1]
    """

    name = "decision-trees"

    def __init__(self, d: int, leaves: int) -> None:
        if not 1 <= d <= MAX_TREE_VARIABLES:
            raise SpecError(f"decision-trees: d={d} must be in 1..{MAX_TREE_VARIABLES}")
        if leaves < 1:
            raise SpecError(f"decision-trees: leaves={leaves} must be >= 1")
        self.d = self.n_features = d
        self.leaves = leaves
        self.spec = format_spec(self.name, {"d": d, "leaves": leaves})
        self._set_tables(d, tree_functions(d, leaves))

    def description_bound(self) -> float:
        """log2 of the most trees of at most k leaves UML's language codes: 2k log2(d + 3)
        bits (2k - 1 nodes and the end), a bound on log2 |H| and so on VCdim."""
        return 2 * self.leaves * math.log2(self.d + 3)


# -- trees as data --------------------------------------------------------------------


def predict(tree: Tree, xs: Masks) -> BoolArray:
    """The tree's label of every instance of ``xs`` (bit masks).

    >>> predict((0, 0, (1, 1, 0)), np.array([0, 1, 3])).astype(int).tolist()
    [0, 1, 0]
    """
    if isinstance(tree, int):
        return np.full(len(xs), bool(tree))
    i, low, high = tree
    return np.where((xs >> i) & 1 == 1, predict(high, xs), predict(low, xs))


def nodes(tree: Tree) -> int:
    """The number of nodes n, leaves included (UML 18.1's description has n + 1 blocks)."""
    return 1 if isinstance(tree, int) else 1 + nodes(tree[1]) + nodes(tree[2])


def training_error(tree: Tree, xs: Masks, ys: NDArray[Any]) -> float:
    """L_S(h): the fraction of the sample the tree labels wrongly."""
    return float(np.mean(predict(tree, xs) != (np.asarray(ys) == 1))) if len(xs) else 0.0


def mdl_bound(tree: Tree, xs: Masks, ys: NDArray[Any], d: int, delta: float) -> float:
    """UML (18.1): L_S(h) + sqrt(((n + 1) log2(d + 3) + ln(2/delta)) / (2m)), which bounds
    L_D(h) for every tree h at once with probability >= 1 - delta over the sample.

    >>> round(mdl_bound(1, np.array([1, 2]), np.array([1, 1]), 2, 0.1), 3)
    1.382
    """
    m = len(xs)
    bits = (nodes(tree) + 1) * math.log2(d + 3)
    return training_error(tree, xs, ys) + math.sqrt((bits + math.log(2 / delta)) / (2 * m))


def _majority(ys: NDArray[Any], default: int) -> int:
    if len(ys) == 0:
        return default
    return 1 if 2 * int(np.count_nonzero(ys)) >= len(ys) else 0  # a tie: 1


def id3(xs: Masks, ys: NDArray[Any], d: int, gain: str = "entropy", depth: int | None = None,
        features: Callable[[list[int]], list[int]] | None = None) -> Tree:
    """ID3 (UML 18.2): a leaf when the labels agree or no feature is left, else a split on
    the feature of largest Gain(S, i) = C(P[y = 1]) - sum_b P[x_i = b] C(P[y = 1 | x_i = b])
    (the first on a tie), and ID3 again on each side without it. ``depth`` stops the
    recursion there with majority leaves (Exercise 18.2); ``features`` picks the features
    a split may choose from among those left (a random forest's I_t). An empty side is
    a leaf of its parent's majority; a tied majority is 1.

    >>> id3(np.array([0, 1, 2, 3]), np.array([0, 1, 1, 0]), 2, "train-error")  # xor
    (0, (1, 0, 1), (1, 1, 0))
    """
    if gain not in GAINS:
        raise SpecError(f"gain={gain!r} must be one of {', '.join(GAINS)}")
    cost = GAINS[gain]
    xs, labels = np.asarray(xs, dtype=np.int64), np.asarray(ys) == 1

    def grow(rows: NDArray[np.intp], left: list[int], level: int, default: int) -> Tree:
        y = labels[rows]
        vote = _majority(y, default)
        if len(rows) == 0 or y.all() or not y.any() or not left or level == depth:
            return vote
        allowed = features(left) if features is not None else left
        bits = (xs[rows][:, None] >> np.array(allowed)) & 1 == 1  # rows x allowed
        ones = bits.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            high = np.where(ones > 0, (bits & y[:, None]).sum(axis=0) / ones, 0.0)
            low = np.where(ones < len(rows), (~bits & y[:, None]).sum(axis=0)
                           / (len(rows) - ones), 0.0)
        share = ones / len(rows)
        after = share * cost(high) + (1 - share) * cost(low)
        before = cost(np.array([y.mean()]))[0]
        j = allowed[int(np.argmax(before - after))]
        rest = [i for i in left if i != j]
        side = (xs[rows] >> j) & 1 == 1
        low_tree = grow(rows[~side], rest, level + 1, vote)
        return (j, low_tree, grow(rows[side], rest, level + 1, vote))

    return grow(np.arange(len(xs)), list(range(d)), 0, 1)


def prune(tree: Tree, xs: Masks, ys: NDArray[Any], d: int, delta: float) -> Tree:
    """UML 18.2.2's generic pruning with f(T, m) = :func:`mdl_bound`: walk the nodes from
    the leaves up, and replace each by whichever of a leaf 1, a leaf 0, its left subtree,
    its right subtree or itself gives the whole tree the least f (the first on a tie:
    itself first). f never grows.

    >>> xs, ys = np.array([0, 1, 2, 3] * 5), np.array([0, 1, 1, 1] * 4 + [1, 1, 1, 1])
    >>> prune((0, (1, 0, 1), 1), xs, ys, 2, 0.1)  # x1 or x2 errs 4 times: a leaf 1 once
    1
    """

    xs, labels = np.asarray(xs, dtype=np.int64), np.asarray(ys) == 1
    m = len(xs)
    if m == 0:
        return tree
    confidence = math.log(2 / delta)
    # the whole tree's mistakes on S and nodes, kept as subtrees are replaced: a
    # replacement changes them only through the examples that reach its node
    whole = [int(np.count_nonzero(predict(tree, xs) != labels)), nodes(tree)]

    def bound(mistakes: int, size: int) -> float:
        return mistakes / m + math.sqrt(((size + 1) * math.log2(d + 3) + confidence) / (2 * m))

    def walk(node: Tree, rows: NDArray[np.intp]) -> Tree:
        if isinstance(node, int):
            return node
        i, low, high = node
        side = (xs[rows] >> i) & 1 == 1
        node = (i, walk(low, rows[~side]), walk(high, rows[side]))
        here = labels[rows]
        mistakes = int(np.count_nonzero(predict(node, xs[rows]) != here))
        size = nodes(node)
        options: list[Tree] = [node, 1, 0, node[1], node[2]]
        scores = []
        for option in options:
            changed = int(np.count_nonzero(predict(option, xs[rows]) != here))
            scores.append(bound(whole[0] - mistakes + changed, whole[1] - size + nodes(option)))
        best = options[int(np.argmin(scores))]
        whole[0] += int(np.count_nonzero(predict(best, xs[rows]) != here)) - mistakes
        whole[1] += nodes(best) - size
        return best

    return walk(tree, np.arange(m))


def random_forest(xs: Masks, ys: NDArray[Any], d: int, trees: int, k: int, gain: str,
                  rng: np.random.Generator) -> list[Tree]:
    """Breiman's random forest as UML 18.3 builds it: each tree is ID3 on a resample of S
    (m draws with replacement), every split choosing among k features drawn at random
    (without replacement) from those left.

    >>> forest = random_forest(np.array([0, 1, 2, 3]), np.array([0, 1, 1, 1]), 2, 3, 1,
    ...                        "gini", np.random.default_rng(0))
    >>> len(forest)
    3
    """

    def pick(left: list[int]) -> list[int]:
        if len(left) <= k:
            return left
        return sorted(int(i) for i in rng.choice(left, size=k, replace=False))

    out = []
    for _ in range(trees):
        rows = rng.integers(0, len(xs), size=len(xs)) if len(xs) else np.arange(0)
        out.append(id3(np.asarray(xs)[rows], np.asarray(ys)[rows], d, gain, features=pick))
    return out


def forest_predict(forest: list[Tree], xs: Masks) -> BoolArray:
    """The majority vote of the trees on every instance (a tie: 1). It errs on x only when
    at least half the trees do, so L_D(vote) <= 2 x the trees' mean L_D (Markov).

    >>> forest_predict([0, 1, (0, 0, 1)], np.array([0, 1])).astype(int).tolist()
    [0, 1]
    """
    votes = np.sum([predict(t, xs) for t in forest], axis=0)
    return votes * 2 >= len(forest)  # type: ignore[no-any-return]  # numpy comparison
