"""Decision-tree learners (UML ch. 18): ID3 with its gain measures and MDL pruning, and a
random forest. Both are batch learners made online: each prediction is the output of the
algorithm on the examples told so far (grown again after each new label), so they play
the mistake-bound game and the PAC experiments on classes over boolean variables. They
print no mistake bound: UML gives them none.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.hypotheses import MAX_VARIABLES
from littlestone.games.trees import (
    GAINS,
    Tree,
    forest_predict,
    id3,
    predict,
    random_forest,
)
from littlestone.games.trees import prune as prune_tree
from littlestone.learners.base import Learner, register

__all__ = ["ID3", "RandomForest"]


class _TreeLearner(Learner):
    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self.d = 0
        self._xs: list[int] = []
        self._ys: list[int] = []
        self._stale = True

    def unsupported(self, game: GameSpec) -> str | None:
        hclass = game.hclass
        n = None if hclass is None else hclass.n_features
        if game.game == MISTAKE_BOUND and (
                n is None or n > MAX_VARIABLES or hclass is None or hclass.domain_size != 1 << n):
            return "it needs a class over boolean variables (instances as bit masks)"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert game.hclass is not None
        self.d = game.hclass.n_features
        self.seed = seed
        self._xs, self._ys, self._stale = [], [], True

    def update(self, x: Any, y: int) -> None:
        self._xs.append(int(x))
        self._ys.append(int(y))
        self._stale = True

    def sample(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The examples told so far, as arrays (instances, labels)."""
        return np.array(self._xs, dtype=np.int64), np.array(self._ys, dtype=np.int64)

    def _grow(self) -> None:
        raise NotImplementedError

    def predict_all(self, xs: NDArray[np.int64]) -> NDArray[np.bool_]:
        """The current output's label of every instance of ``xs`` (bit masks)."""
        raise NotImplementedError

    def predict(self, x: Any) -> float:
        return 1.0 if self.predict_all(np.array([int(x)], dtype=np.int64))[0] else 0.0


def _check_gain(gain: str) -> None:
    if gain not in GAINS:
        raise SpecError(f"gain={gain!r} must be one of {', '.join(GAINS)}")


@register
class ID3(_TreeLearner):
    """ID3 (UML 18.2): grow a tree greedily, splitting each leaf on the feature of largest
    gain, with C(a) = min(a, 1 - a) (``train-error``), the entropy (``entropy``) or
    2a(1 - a) (``gini``); ``depth`` stops it there (0: no limit), ``prune`` then prunes
    it bottom-up against the MDL bound (18.1) at confidence ``delta``.

    Unlimited, it is consistent with every sample a function labels (each leaf is one
    instance at worst), so it learns every function of d bits, as the 2^d-leaf trees do.

    >>> from littlestone.games.classes import make_class
    >>> learner = ID3(gain="gini")
    >>> learner.start(GameSpec("mistake-bound", 4, make_class("decision-trees:d=2,leaves=4")), 0)
    >>> for x, y in ((0, 0), (1, 1), (2, 1), (3, 0)): learner.update(x, y)
    >>> [learner.predict(x) for x in range(4)], learner.tree  # xor
    ([0.0, 1.0, 1.0, 0.0], (0, (1, 0, 1), (1, 1, 0)))
    """

    id = "id3"

    def __init__(self, gain: str = "entropy", depth: int = 0, prune: bool = False,
                 delta: float = 0.05) -> None:
        super().__init__()
        _check_gain(gain)
        if depth < 0 or not 0 < delta < 1:
            raise SpecError(f"id3: depth={depth} must be >= 0 and delta={delta} in (0, 1)")
        self.gain, self.depth, self.prune, self.delta = gain, depth, prune, delta
        self.tree: Tree = 1

    def _grow(self) -> None:
        xs, ys = self.sample()
        tree = id3(xs, ys, self.d, self.gain, depth=self.depth or None)
        self.tree = prune_tree(tree, xs, ys, self.d, self.delta) if self.prune and len(xs) else tree
        self._stale = False

    def predict_all(self, xs: NDArray[np.int64]) -> NDArray[np.bool_]:
        if self._stale:
            self._grow()
        return predict(self.tree, xs)

    def log_hypotheses(self, game: GameSpec) -> float | None:
        """ln |H| = 2^d ln 2, every function of d bits, when it is consistent (no depth
        limit, no pruning): ``littlestone pac`` then plays it as a consistent learner."""
        if self.depth or self.prune or self.unsupported(game) is not None:
            return None
        assert game.hclass is not None
        return (1 << game.hclass.n_features) * math.log(2)


@register
class RandomForest(_TreeLearner):
    """A random forest (Breiman; UML 18.3): the majority vote of ``trees`` ID3 trees, each
    grown on a resample of the examples with every split choosing among ``k`` features
    drawn at random. The vote errs on x only when half the trees do, so its error is at
    most twice the trees' mean error.

    >>> from littlestone.games.classes import make_class
    >>> forest = RandomForest(trees=5, k=1)
    >>> forest.start(GameSpec("mistake-bound", 8, make_class("monotone-disjunctions:n=3")), 0)
    >>> for x in range(8): forest.update(x, int(x & 1))
    >>> [forest.predict(x) for x in range(4)]
    [0.0, 1.0, 0.0, 1.0]
    """

    id = "random-forest"
    deterministic = False

    def __init__(self, trees: int = 11, k: int = 2, gain: str = "entropy") -> None:
        super().__init__()
        _check_gain(gain)
        if trees < 1 or k < 1:
            raise SpecError(f"random-forest: trees={trees} and k={k} must be >= 1")
        self.trees, self.k, self.gain = trees, k, gain
        self.forest: list[Tree] = []
        self.seed = 0

    def _grow(self) -> None:
        xs, ys = self.sample()
        rng = np.random.default_rng([self.seed, len(xs)])  # one forest per sample, seeded
        self.forest = random_forest(xs, ys, self.d, self.trees, self.k, self.gain, rng)
        self._stale = False

    def predict_all(self, xs: NDArray[np.int64]) -> NDArray[np.bool_]:
        if self._stale:
            self._grow()
        return forest_predict(self.forest, xs)
