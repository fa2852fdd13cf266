"""The Perceptron (Rosenblatt; UML section 9.1.2; Novikoff 1962)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import HalfspaceClass
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.learners.base import Learner, register


@register
class Perceptron(Learner):
    """Predict [<w, x> > 0]; on a mistake w += (2y - 1) x: at most (R/gamma)^2 mistakes on
    data separable with margin gamma, 1/gamma^2 + (2/gamma) TD_gamma(u) on any data.

    The bound holds when the data are separable by a unit w* with margin gamma and
    ||x|| <= R; on ``halfspaces:d=D,margin=G`` instances are unit vectors (R = 1). On
    ``halfspaces:d=D,margin=G,agnostic=true`` the labels are free, and it prints
    1/gamma^2 + (2/gamma) TD_gamma(u) for the target u the adversary revealed.
    ``normalize=true`` divides each instance by its norm first. It reports the radius R
    it saw (the largest norm of an instance it updated on) and its number of updates,
    so that (R/gamma)^2 can be checked on any separable stream.

    >>> from littlestone.games.classes import make_class
    >>> from littlestone.games.game import GameSpec
    >>> perceptron = Perceptron()
    >>> perceptron.start(GameSpec("mistake-bound", 2, make_class("halfspaces:d=2,margin=0.5")), 0)
    >>> x = np.array([0.6, 0.8])
    >>> perceptron.predict(x)
    0.0
    >>> perceptron.update(x, 1); perceptron.predict(x)
    1.0
    """

    id = "perceptron"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, normalize: bool = False) -> None:
        self.normalize = normalize
        self.w: NDArray[np.float64] = np.zeros(0)
        self.radius = 0.0
        self.mistakes = 0
        self._encode: Any = None
        self._last_x: Any = None
        self._last_z: NDArray[np.float64] = np.zeros(0)
        self._score = 0.0
        self._plain = False

    def reset(self, game: GameSpec, seed: int) -> None:
        assert game.hclass is not None
        self.w = np.zeros(game.hclass.n_features)
        self.radius = 0.0
        self.mistakes = 0
        hclass = game.hclass
        self._encode = None if isinstance(hclass, HalfspaceClass) else hclass.encode
        self._plain = self._encode is None and not self.normalize
        self._last_x = None
        self._score = 0.0

    def _features(self, x: Any) -> NDArray[np.float64]:
        if x is self._last_x:
            return self._last_z
        z = x if self._encode is None else self._encode(x)
        if self.normalize:
            norm = float(np.linalg.norm(z))
            if norm > 0:
                z = z / norm
        self._last_x, self._last_z = x, z
        return self._last_z

    def predict(self, x: Any) -> float:
        if self._plain:  # unit instances of halfspaces: no encoding, no normalising
            self._last_x = z = x
        else:
            z = self._features(x)
        self._score = score = float(self.w @ z)
        return 1.0 if score > 0.0 else 0.0

    def update(self, x: Any, y: int) -> None:
        if x is self._last_x:  # the x just predicted: its score is known
            z, score = (x if self._plain else self._last_z), self._score
        else:
            z = self._features(x)
            score = float(self.w @ z)
        if (score > 0.0) != (y == 1):
            self.w += z if y == 1 else -z
            self.mistakes += 1
            self.radius = max(self.radius, float(np.sqrt(z @ z)))

    def report(self) -> dict[str, float]:
        return {"radius": self.radius, "updates": self.mistakes}

    def bound(self, game: GameSpec) -> Bound | None:
        hclass = game.hclass
        if isinstance(hclass, HalfspaceClass) and hclass.margin > 0 and not hclass.agnostic:
            radius = 1.0
            return Bound(math.floor((radius / hclass.margin) ** 2 + 1e-9),
                         "(R/gamma)^2 with R = 1, gamma = margin (Perceptron convergence)")
        return None

    def final_bound(self, game: GameSpec, measured: Mapping[str, Any]) -> Bound | None:
        """On ``halfspaces:...,agnostic=true``: 1/gamma^2 + (2/gamma) TD_gamma(u) for the
        revealed u, TD_gamma as the referee measured it (``hinge_deficiency``; the
        Perceptron notes: M <= 1/gamma^2 + (2/gamma) TD_gamma for every unit u)."""
        hclass = game.hclass
        deficiency = measured.get("hinge_deficiency")
        if not (isinstance(hclass, HalfspaceClass) and hclass.agnostic):
            return self.bound(game)
        if not isinstance(deficiency, int | float):  # no target revealed: no comparator
            return None
        gamma = hclass.margin
        return Bound(1 / gamma**2 + 2 * deficiency / gamma,
                     f"1/gamma^2 + (2/gamma) TD_gamma(u), u the revealed target, gamma = "
                     f"{gamma:g}, TD_gamma = {deficiency:.4g} (non-separable Perceptron)")
