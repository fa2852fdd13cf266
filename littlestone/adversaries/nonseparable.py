"""Non-separable data for the Perceptron (the Perceptron notes: M <= 1/gamma^2 +
(2/gamma) TD_gamma): label noise against a committed halfspace, and the margin
adversary that goes on forcing mistakes at the least hinge cost.

Both play ``halfspaces:d=D,margin=G,agnostic=true``, where labels are free and the
referee measures the revealed target's total hinge deficiency TD_G(u) = sum_t max(0,
G - y_t <u, x_t>) (games.mistake_bound).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.adversaries.base import register
from littlestone.adversaries.lower_bounds import PerceptronMargin
from littlestone.adversaries.random_target import RandomTarget
from littlestone.games.classes import HalfspaceClass
from littlestone.games.game import MISTAKE_BOUND, GameSpec

__all__ = ["NoisyHalfspace", "NoisyMargin", "expected_deficiency"]

AGNOSTIC = "halfspaces:d=D,margin=G,agnostic=true"


def _agnostic_halfspaces(game: GameSpec) -> str | None:
    """Why ``game`` is not on an agnostic halfspace class (``None`` if it is)."""
    hclass = game.hclass
    if not isinstance(hclass, HalfspaceClass):
        return f"it plays {AGNOSTIC}"
    if not hclass.agnostic:
        return f"its labels contradict its target: it plays {AGNOSTIC}"
    return None


def expected_deficiency(rounds: int, rate: float, margin: float, d: int) -> float:
    """E[TD_G(w*)] of :class:`NoisyHalfspace`: each flipped label costs G + |<w*, x>|,
    and |<w*, x>| = min(G + |g| / sqrt(d), 1) with g standard normal
    (games.classes.HalfspaceClass.sample_instances), whose mean is close to
    G + sqrt(2 / (pi d)) while that stays below 1.

    >>> round(expected_deficiency(1000, 0.1, 0.2, 100), 2)  # 100 flips of ~0.48 each
    47.98
    """
    along = min(margin + math.sqrt(2 / (math.pi * d)), 1.0) if d > 1 else 1.0
    return rounds * rate * (margin + along)


@register
class NoisyHalfspace(RandomTarget):
    """A committed unit target w* and instances with |<w*, x>| >= G (as random-target),
    each label flipped with probability ``rate``: the data are not separable, and every
    flip adds G + |<w*, x>| >= 2G to TD_G(w*), which the referee measures from the
    revealed w* (about ``expected_deficiency``). Oblivious; it commits to w*.

    >>> from littlestone.games.classes import make_class
    >>> adversary = NoisyHalfspace(rate=1.0)
    >>> hclass = make_class("halfspaces:d=3,margin=0.2,agnostic=true")
    >>> adversary.start(GameSpec("mistake-bound", 4, hclass), seed=0)
    >>> x = adversary.instance()
    >>> adversary.label(x, 0.5) != hclass.label(adversary.hypothesis, x)  # always flipped
    True
    """

    id = "noisy-halfspace"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, rate: float = 0.1) -> None:
        super().__init__()
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate={rate} must be in [0, 1]")
        self.rate = rate

    def unsupported(self, game: GameSpec) -> str | None:
        return _agnostic_halfspaces(game) or super().unsupported(game)

    def _refill(self) -> None:
        super()._refill()
        flips = self._rng.random(len(self._labels)) < self.rate
        self._labels = [y ^ int(f) for y, f in zip(self._labels, flips, strict=True)]


@register
class NoisyMargin(PerceptronMargin):
    """The margin adversary's m = floor(1/G^2) basis vectors, then e_{m+1} over and over,
    every round labelled against the learner: a deterministic learner errs on all T
    rounds, while the revealed w* = (s_1 e_1 + ... + s_m e_m) / sqrt(m) keeps margin
    1/sqrt(m) >= G on the first m and has <w*, e_{m+1}> = 0, so TD_G(w*) = G (T - m).

    The Perceptron's printed bound is then m + 2 (T - m) against its T mistakes; the
    sharper root of sqrt(M) >= G M - TD_G, ((1 + sqrt(1 + 4 G TD_G)) / (2 G))^2, is
    about (T - m) + sqrt(m (T - m)) + m/2, which T approaches (the bound is tight up to
    its factor 2 on TD_G). Adaptive: it commits to nothing and reveals w*.

    >>> from littlestone.games.classes import make_class
    >>> adversary = NoisyMargin()
    >>> hclass = make_class("halfspaces:d=5,margin=0.5,agnostic=true")
    >>> adversary.start(GameSpec("mistake-bound", 6, hclass), seed=0)
    >>> adversary.forcing
    4
    >>> [int(np.argmax(adversary.instance())) for _ in range(6)]  # e_1 .. e_4, then e_5
    [0, 1, 2, 3, 4, 4]
    """

    id = "noisy-margin"

    def unsupported(self, game: GameSpec) -> str | None:
        reason = _agnostic_halfspaces(game)
        if reason is not None:
            return reason
        assert isinstance(game.hclass, HalfspaceClass)
        gamma = self.gamma if self.gamma is not None else game.hclass.margin
        if gamma > 0 and math.floor(1 / gamma**2 + 1e-9) >= game.hclass.d:
            return (f"it needs a spare coordinate: floor(1/gamma^2) = "
                    f"{math.floor(1 / gamma**2 + 1e-9)} must be below d = {game.hclass.d}")
        return super().unsupported(game)

    def instance(self) -> NDArray[np.float64]:
        if self._t < self.forcing:
            return super().instance()
        self._t += 1
        x = np.zeros(self._d)
        x[self.forcing] = 1.0
        return x

    def label(self, x: Any, p: float) -> int:
        if self._t <= self.forcing:
            return super().label(x, p)
        return 1 if p < 0.5 else 0
