"""Winnow (Littlestone 1988) and Balanced Winnow: multiplicative updates on
boolean features, a mistake bound logarithmic in the number of irrelevant variables."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import Disjunctions, FiniteClass, SparseDisjunctions
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.learners.base import Learner, register

FloatArray = NDArray[np.float64]
VARIANTS = ("elimination", "demotion")


class _BooleanFeatures(Learner):
    """Shared plumbing: finite classes only, features from the class's ``encode``
    (0/1 vectors for every finite class), the last instance's features cached."""

    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self._encode: Any = None
        self._last_x: Any = None
        self._last_z: FloatArray = np.zeros(0)
        self.n = 0

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and not isinstance(game.hclass, FiniteClass):
            return "it learns over boolean features: it needs a finite class"
        return super().unsupported(game)

    def _features(self, x: Any) -> FloatArray:
        if x is not self._last_x and x != self._last_x:
            self._last_z = self._encode(x)
            self._last_x = x
        return self._last_z

    def _prepare(self, game: GameSpec) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._encode = game.hclass.encode
        self.n = game.hclass.n_features
        self._last_x = None


@register
class Winnow(_BooleanFeatures):
    """Winnow (Littlestone 1988), on a k-literal monotone disjunction over n variables:
    at most alpha k (log_alpha theta + 1) + n/theta mistakes (elimination), and
    (alpha + 1) k (log_alpha theta + 1) + alpha n / ((alpha - 1) theta) with
    ``variant=demotion`` (Winnow2); theta >= 1/alpha.

    It predicts [sum_i w_i x_i > theta]; promotes (w_i *= alpha on x_i = 1) after a
    missed 1; after a false 1, eliminates (w_i = 0 on x_i = 1; ``variant=elimination``,
    the Winnow1 of Littlestone 1988) or demotes (w_i /= alpha; ``variant=demotion``,
    Winnow2). The defaults alpha = 2, theta = n give 2k (log2 n + 1) + 1 (elimination)
    and 3k (log2 n + 1) + 2 (demotion). k is the class's k (``k-disjunctions``) or n
    (``monotone-disjunctions``).

    Winnow2's proof (Littlestone 1988, the Winnow2 theorem): the target's weights are never demoted
    (a negative instance has all of them 0) and each is promoted only while <= theta, so
    promotions u <= k (log_alpha theta + 1); a promotion adds at most (alpha - 1) theta
    to W = sum_i w_i, a demotion removes more than (1 - 1/alpha) theta, and W stays
    > 0 from W = n: demotions v < alpha n / ((alpha - 1) theta) + alpha u.

    >>> from littlestone.games.classes import make_class
    >>> winnow = Winnow()
    >>> winnow.start(GameSpec("mistake-bound", 9, make_class("monotone-disjunctions:n=4")), 0)
    >>> winnow.predict(0b0011)  # 1 + 1 <= theta = 4
    0.0
    >>> winnow.update(0b0011, 1); winnow.w.tolist()
    [2.0, 2.0, 1.0, 1.0]
    """

    id = "winnow"

    def __init__(
        self, alpha: float = 2.0, theta: float | None = None, variant: str = "elimination"
    ) -> None:
        super().__init__()
        if not alpha > 1.0:
            raise ValueError(f"alpha={alpha} must be > 1")
        if theta is not None and not theta > 0:
            raise ValueError(f"theta={theta} must be > 0")
        if variant not in VARIANTS:
            raise ValueError(f"variant={variant!r} must be one of {', '.join(VARIANTS)}")
        self.alpha, self.theta, self.variant = alpha, theta, variant
        #: The weights w_1 .. w_n.
        self.w: FloatArray = np.zeros(0)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._prepare(game)
        self.w = np.ones(self.n)
        self._theta = float(self.n) if self.theta is None else self.theta

    def predict(self, x: Any) -> float:
        return 1.0 if float(self.w @ self._features(x)) > self._theta else 0.0

    def update(self, x: Any, y: int) -> None:
        z = self._features(x)
        predicted = float(self.w @ z) > self._theta
        if predicted == bool(y):
            return
        active = z > 0
        if y:
            self.w[active] *= self.alpha
        elif self.variant == "elimination":
            self.w[active] = 0.0
        else:
            self.w[active] /= self.alpha

    def bound(self, game: GameSpec) -> Bound | None:
        hclass = game.hclass
        theta = float(hclass.n_features) if self.theta is None and hclass else self.theta
        if (not isinstance(hclass, Disjunctions | SparseDisjunctions)
                or theta is None or not theta * self.alpha >= 1):
            return None
        k, n, a = hclass.k, hclass.n, self.alpha
        promotions = k * (math.log(theta) / math.log(a) + 1)
        if self.variant == "elimination":
            return Bound(a * promotions + n / theta,
                         f"alpha k (log_alpha theta + 1) + n/theta, k = {k} (Littlestone 1988)")
        return Bound((a + 1) * promotions + a * n / ((a - 1) * theta),
                     f"(alpha+1) k (log_alpha theta + 1) + alpha n/((alpha-1) theta), k = {k} "
                     "(Winnow2, Littlestone 1988)")


@register
class Elimination(_BooleanFeatures):
    """The elimination algorithm for monotone disjunctions: at most n mistakes (n - |S|
    on the target OR_{i in S} x_i; Littlestone 1988).

    It starts from the disjunction of all n variables and predicts with the variables
    it keeps; after a false 1 it drops every variable on in the instance. The target's
    variables are never dropped (a 0-labelled instance has all of them off), so it never
    misses a 1, and each false 1 drops at least one variable. ``winnow-lower-bound``
    forces n mistakes on it (and on every deterministic learner) on
    ``monotone-disjunctions:n=N``.

    >>> from littlestone.games.classes import make_class
    >>> learner = Elimination()
    >>> learner.start(GameSpec("mistake-bound", 9, make_class("monotone-disjunctions:n=4")), 0)
    >>> learner.predict(0b0110)
    1.0
    >>> learner.update(0b0110, 0); learner.kept.tolist(), learner.predict(0b0100)
    ([True, False, False, True], 0.0)
    """

    id = "elimination"

    def __init__(self) -> None:
        super().__init__()
        #: The variables still in the hypothesis.
        self.kept: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and not isinstance(game.hclass,
                                                         Disjunctions | SparseDisjunctions):
            return "it learns monotone disjunctions (monotone-disjunctions, k-disjunctions)"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._prepare(game)
        self.kept = np.ones(self.n, dtype=np.bool_)

    def predict(self, x: Any) -> float:
        return 1.0 if bool((self._features(x)[self.kept] > 0).any()) else 0.0

    def update(self, x: Any, y: int) -> None:
        if not y:
            self.kept &= ~(self._features(x) > 0)

    def bound(self, game: GameSpec) -> Bound | None:
        if isinstance(game.hclass, Disjunctions | SparseDisjunctions):
            return Bound(game.hclass.n, "n (elimination, Littlestone 1988)")
        return None

    def log_hypotheses(self, game: GameSpec) -> float | None:
        """ln |H| = n ln 2 of its outputs, the monotone disjunctions (the PAC notes:
        consistent with every sample of one, so PAC by consistency)."""
        hclass = game.hclass
        return hclass.n * math.log(2) if isinstance(hclass, Disjunctions) else None


@register
class BalancedWinnow(_BooleanFeatures):
    """Balanced Winnow: weights w+ and w- on the features and a constant 1, predict
    [sum_i (w+_i - w-_i) x_i > theta]; on a missed 1, w+ *= alpha and w- /= alpha on the
    active features, the reverse on a false 1. Learns non-monotone targets (negated
    literals); no bound is printed.

    >>> from littlestone.games.classes import make_class
    >>> learner = BalancedWinnow()
    >>> learner.start(GameSpec("mistake-bound", 9, make_class("conjunctions:n=3")), 0)
    >>> learner.predict(0b101)
    0.0
    >>> learner.update(0b101, 1); learner.predict(0b101)
    1.0
    """

    id = "balanced-winnow"

    def __init__(self, alpha: float = 1.5, theta: float = 0.0) -> None:
        super().__init__()
        if not alpha > 1.0:
            raise ValueError(f"alpha={alpha} must be > 1")
        self.alpha, self.theta = alpha, theta
        self.positive: FloatArray = np.zeros(0)
        self.negative: FloatArray = np.zeros(0)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._prepare(game)
        self.positive = np.ones(self.n + 1)
        self.negative = np.ones(self.n + 1)

    def _features(self, x: Any) -> FloatArray:
        if x is not self._last_x and x != self._last_x:
            self._last_z = np.append(self._encode(x), 1.0)
            self._last_x = x
        return self._last_z

    def _score(self, z: FloatArray) -> float:
        return float((self.positive - self.negative) @ z)

    def predict(self, x: Any) -> float:
        return 1.0 if self._score(self._features(x)) > self.theta else 0.0

    def update(self, x: Any, y: int) -> None:
        z = self._features(x)
        predicted = self._score(z) > self.theta
        if predicted == bool(y):
            return
        active = z > 0
        up, down = (self.positive, self.negative) if y else (self.negative, self.positive)
        up[active] *= self.alpha
        down[active] /= self.alpha
