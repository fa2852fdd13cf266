"""A minimal adversary to copy: random instances, labelled against the learner whenever
some consistent hypothesis allows it (so the game stays realizable).

    littlestone check examples/minimal_adversary.py:Contrarian
"""

from __future__ import annotations

from typing import Any

import numpy as np

from littlestone import Adversary, FiniteClass, GameSpec


class Contrarian(Adversary):
    """Label against the learner's likelier prediction while some hypothesis agrees.

    >>> from littlestone import make_class
    >>> adversary = Contrarian()
    >>> adversary.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=8")), seed=0)
    >>> x = adversary.instance(); adversary.label(x, 1.0) in (0, 1)
    True
    """

    games = frozenset({"mistake-bound"})

    def __init__(self) -> None:
        self.alive = np.zeros(0, dtype=bool)
        self.hclass: FiniteClass | None = None
        self.rng = np.random.default_rng(0)

    def unsupported(self, game: GameSpec) -> str | None:
        if not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self.hclass = game.hclass
        self.alive = np.ones(game.hclass.size, dtype=bool)
        self.rng = np.random.default_rng(seed)  # every choice comes from the game's seed

    def instance(self) -> int:
        assert self.hclass is not None
        return int(self.rng.integers(self.hclass.domain_size))

    def label(self, x: Any, p: float) -> int:
        assert self.hclass is not None
        values = self.hclass.evaluate(x)
        wanted = 0 if p >= 0.5 else 1
        if not (self.alive & (values == bool(wanted))).any():
            wanted = 1 - wanted  # the other label keeps some hypothesis consistent
        self.alive &= values == bool(wanted)
        return wanted
