"""The modified Perceptron of the halfspace notes (Blum, Frieze, Kannan & Vempala 1996;
Dunagan & Vempala 2004): a random start w_1 and an update that projects, at most
ln(1/c^2)/ln(1/(1 - sigma^2)) updates whatever the target's margin, c = cos(w*, w_1) > 0
(<= ln(d)/sigma^2 only when c >= 1/sqrt(d); no bound when c <= 0)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import HalfspaceClass
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.learners.base import Learner, register

__all__ = ["ModifiedPerceptron", "update_bound"]

FloatArray = NDArray[np.float64]


def update_bound(sigma: float, cosine: float) -> float:
    """The most updates from a start w_1 with cos(w*, w_1) = ``cosine`` > 0:
    ln(1/cosine^2) / ln(1/(1 - sigma^2)) (<= 2 ln(1/cosine)/sigma^2; ln(d)/sigma^2 when
    cosine >= 1/sqrt(d)).

    >>> round(update_bound(0.1, 1 / math.sqrt(100)), 2), round(math.log(100) / 0.1**2, 2)
    (458.21, 460.52)
    """
    if not cosine > 0:
        return math.inf
    return max(0.0, math.log(1 / cosine**2) / -math.log1p(-sigma**2))


@register
class ModifiedPerceptron(Learner):
    """The modified Perceptron: predict [<w, x> > 0] from a random unit start w_1; on a
    mistake on x with |cos(w, x)| >= sigma, project: w <- w - <w, u> u, u = x/||x||. At most
    ln(1/c^2)/ln(1/(1 - sigma^2)) updates, c = cos(w*, w_1) > 0, for every unit w* that
    labels the data, with any margin, 0 included; that is <= ln(d)/sigma^2 (the halfspace
    notes: "log n / sigma^2 mistakes") only when c >= 1/sqrt(d).

    A mistake with a = (2y - 1) u means <a, w> <= -sigma ||w|| and <a, w*> >= 0. The
    projection then keeps <w*, w> from falling (it adds -<a, w><a, w*> >= 0) and shrinks
    ||w||^2 by <a, w>^2 >= sigma^2 ||w||^2; cos(w*, w) <= 1 bounds the updates by the form
    above. A random start has c >= 1/sqrt(d) with a constant probability (about 1/8 or
    more) against a target fixed in advance; an adversary that knows the start (it comes
    from the learner's seed) can pick w* of any small cosine with it, or label against it
    (c <= 0, and no bound). Mistakes with |cos(w, x)| < sigma are not bounded and cause no
    update: it promises to be right where its own hypothesis is sure, not everywhere.

    It prints no mistake bound. It reports ``updates``, ``unsure_mistakes``, its
    ``start_vector`` w_1 and, once the target w* is revealed, ``start_cosine`` c and
    ``update_bound``, the bound of that c (``None`` when c <= 0: none applies). Instances
    are unit vectors on ``halfspaces`` (any class's features elsewhere).

    >>> from littlestone.games.classes import make_class
    >>> learner = ModifiedPerceptron(sigma=0.5)
    >>> learner.start(GameSpec("mistake-bound", 2, make_class("halfspaces:d=2,margin=0.1")), 0)
    >>> learner.w = np.array([0.6, 0.8]); x = np.array([0.0, 1.0])
    >>> learner.predict(x), learner.update(x, 0), learner.w.tolist()  # cos 0.8: projected
    (1.0, None, [0.6, 0.0])
    """

    id = "modified-perceptron"
    games = frozenset({MISTAKE_BOUND})
    deterministic = False  # its start is drawn from its seed

    def __init__(self, sigma: float = 0.1) -> None:
        if not 0 < sigma < 1:
            raise ValueError(f"sigma={sigma} must be in (0, 1)")
        self.sigma = sigma
        self.w: FloatArray = np.zeros(0)
        self.start_vector: FloatArray = np.zeros(0)
        self.updates = self.unsure_mistakes = 0
        self.start_cosine: float | None = None  # cos(w*, w_1), once w* is revealed
        self._encode: Any = None

    def reset(self, game: GameSpec, seed: int) -> None:
        assert game.hclass is not None
        d = game.hclass.n_features
        w = np.random.default_rng(seed).standard_normal(d)
        self.w = w / np.linalg.norm(w)
        self.start_vector = self.w.copy()
        self.updates = self.unsure_mistakes = 0
        self.start_cosine = None
        hclass = game.hclass
        self._encode = None if isinstance(hclass, HalfspaceClass) else hclass.encode

    def _features(self, x: Any) -> FloatArray:
        return np.asarray(x if self._encode is None else self._encode(x), dtype=np.float64)

    def predict(self, x: Any) -> float:
        return 1.0 if float(self.w @ self._features(x)) > 0.0 else 0.0

    def update(self, x: Any, y: int) -> None:
        z = self._features(x)
        score = float(self.w @ z)
        if (score > 0.0) == (y == 1):
            return
        scale = float(np.linalg.norm(self.w)) * float(np.linalg.norm(z))
        if scale > 0 and abs(score) >= self.sigma * scale:
            u = z / float(np.linalg.norm(z))
            self.w = self.w - float(self.w @ u) * u
            self.updates += 1
        else:
            self.unsure_mistakes += 1

    def final_bound(self, game: GameSpec, measured: Mapping[str, Any]) -> Bound | None:
        """No mistake bound; reads c = cos(w*, w_1) off the revealed ``target`` (a
        halfspace game's; the reported ``update_bound`` is that c's)."""
        target = measured.get("target")
        if isinstance(target, list) and len(target) == len(self.start_vector):
            w_star = np.asarray(target, dtype=np.float64)
            size = float(np.linalg.norm(w_star))
            self.start_cosine = float(w_star @ self.start_vector) / size if size > 0 else None
        return None

    def report(self) -> dict[str, int | float | list[float] | None]:
        """The updates and unsure mistakes, the start w_1, and, with the target revealed,
        c = cos(w*, w_1) and the update bound of that c (``None`` when c <= 0)."""
        c = self.start_cosine
        bound = None if c is None else update_bound(self.sigma, c)
        return {"updates": self.updates, "unsure_mistakes": self.unsure_mistakes,
                "start_vector": [float(v) for v in self.start_vector], "start_cosine": c,
                "update_bound": bound if bound is not None and math.isfinite(bound) else None}
