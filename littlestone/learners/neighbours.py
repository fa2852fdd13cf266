"""Nearest-neighbour learners (UML ch. 19): the k-NN rule on the examples told so far, in
the Euclidean metric of the class's features (:meth:`HypothesisClass.encode`). Online,
each prediction is the rule's label of x from the examples before it; in batch, its
output on a sample. They print no mistake bound: UML's guarantees are on the expected
true error under a c-Lipschitz eta (games.neighbours).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import HypothesisClass
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.neighbours import knn_predict
from littlestone.learners.base import Learner, register

__all__ = ["KNearestNeighbours", "NearestNeighbour"]


@register
class KNearestNeighbours(Learner):
    """The k-NN rule (UML 19.1): predict the majority label of the k examples nearest x (the
    earlier on equal distances; a tied vote, or no example yet, is 1).

    >>> from littlestone.games.classes import make_class
    >>> knn = KNearestNeighbours(k=3)
    >>> knn.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=8")), seed=0)
    >>> for x, y in ((0, 1), (1, 1), (6, 0), (7, 0)): knn.update(x, y)
    >>> knn.predict(2), knn.predict(5)
    (1.0, 0.0)
    """

    id = "k-nn"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, k: int = 5) -> None:
        if k < 1:
            raise SpecError(f"k-nn: k={k} must be >= 1")
        self.k = k
        self._hclass: HypothesisClass | None = None
        self._points: list[NDArray[np.float64]] = []
        self._labels: list[int] = []

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and game.hclass is None:
            return "it needs a class whose instances have features"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._hclass = game.hclass
        self._points, self._labels = [], []

    def predict_all(self, xs: Iterable[Any]) -> NDArray[np.bool_]:
        """The rule's label of every instance of ``xs`` from the examples so far."""
        assert self._hclass is not None, "start() first"
        width = self._hclass.n_features
        queries = [self._hclass.encode(x) for x in xs]
        return knn_predict(np.array(self._points, dtype=np.float64).reshape(-1, width),
                           np.array(self._labels, dtype=np.int64),
                           np.array(queries, dtype=np.float64).reshape(-1, width), self.k)

    def predict(self, x: Any) -> float:
        return 1.0 if self.predict_all([x])[0] else 0.0

    def update(self, x: Any, y: int) -> None:
        assert self._hclass is not None, "start() first"
        self._points.append(self._hclass.encode(x))
        self._labels.append(int(y))


@register
class NearestNeighbour(KNearestNeighbours):
    """The 1-NN rule (UML 19.1): predict the label of the example nearest x (the earlier on
    equal distances; 1 before any example). Thm 19.3 bounds its expected error by twice
    the Bayes error plus 4 c sqrt(d) m^(-1/(d+1)).

    >>> from littlestone.games.classes import make_class
    >>> nn = NearestNeighbour()
    >>> nn.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=8")), seed=0)
    >>> nn.update(1, 1); nn.update(6, 0)
    >>> nn.predict(3), nn.predict(4)
    (1.0, 0.0)
    """

    id = "1-nn"

    def __init__(self) -> None:
        super().__init__(k=1)

    def log_hypotheses(self, game: GameSpec) -> float | None:
        """ln |H| = |X| ln 2 on a finite domain whose features tell its instances apart: it
        is consistent there (each instance its own nearest), with outputs among all
        labellings; ``littlestone pac`` then plays it as a consistent learner."""
        hclass = game.hclass
        if hclass is None or hclass.domain_size is None:
            return None
        codes = {hclass.encode(x).tobytes() for x in range(hclass.domain_size)}
        return hclass.domain_size * math.log(2) if len(codes) == hclass.domain_size else None
