"""A minimal learner to copy: the majority vote of the hypotheses still consistent.

Check it before you submit it::

    littlestone check examples/minimal_learner.py:MajorityVote

and play it::

    littlestone play --learner examples/minimal_learner.py:MajorityVote \\
        --adversary shattered-tree --class thresholds:n=63 --rounds 20
"""

from __future__ import annotations

from typing import Any

import numpy as np

from littlestone import FiniteClass, GameSpec, Learner


class MajorityVote(Learner):
    """Predict 1 when at least half of the consistent hypotheses say 1.

    >>> from littlestone import make_class
    >>> learner = MajorityVote()
    >>> learner.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=8")), seed=0)
    >>> learner.predict(0), learner.predict(7)
    (1.0, 0.0)
    """

    games = frozenset({"mistake-bound"})

    def __init__(self) -> None:
        self.alive = np.zeros(0, dtype=bool)  # which hypotheses are still consistent
        self.hclass: FiniteClass | None = None

    def unsupported(self, game: GameSpec) -> str | None:
        if not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self.hclass = game.hclass
        self.alive = np.ones(game.hclass.size, dtype=bool)  # a fresh start for every game

    def predict(self, x: Any) -> float:
        assert self.hclass is not None
        votes = self.hclass.evaluate(x)[self.alive]
        return 1.0 if 2 * int(votes.sum()) >= len(votes) else 0.0

    def update(self, x: Any, y: int) -> None:
        assert self.hclass is not None
        agree = self.hclass.evaluate(x) == bool(y)
        if (self.alive & agree).any():  # never empty the set, even on a noisy label
            self.alive &= agree
