"""Halving with a prior (the mistake-bound notes): the vote of the version space weighted
by a prior p over H, and its randomised version."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import FiniteClass
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.games.priors import PRIORS, entropy_bits, prior
from littlestone.learners.base import Learner, register

__all__ = ["RandomizedHalving", "WeightedHalving"]

FloatArray = NDArray[np.float64]


class _PriorVote(Learner):
    """The version space V_t and the prior mass of each side of an instance."""

    games = frozenset({MISTAKE_BOUND})

    def __init__(self, prior: str = "zipf", s: float = 1.0) -> None:
        if prior not in PRIORS:
            raise ValueError(f"prior={prior!r} must be one of {', '.join(PRIORS)}")
        if not s > 0 or math.isinf(s):
            raise ValueError(f"s={s} must be a positive number")
        self.prior, self.s = prior, s
        self.prior_p: FloatArray = np.zeros(0)
        self.labels = 0
        self._hclass: FiniteClass | None = None
        #: V as the indices of its hypotheses and their prior: a round costs |V|, as
        #: Halving's, not |H| (the vote over all of H made a round 400 times Halving's)
        self._rows: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._rows_p: FloatArray = np.zeros(0)
        self._x: Any = None
        self._values: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class to put a prior on"
        if isinstance(game.hclass, FiniteClass):
            try:
                prior(game.hclass.size, self.prior, self.s)
            except SpecError as exc:
                return str(exc)
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._hclass = game.hclass
        self.prior_p = prior(game.hclass.size, self.prior, self.s)
        self._rows = np.arange(game.hclass.size, dtype=np.int64)
        self._rows_p = self.prior_p
        self.labels = 0
        self._x = None

    @property
    def alive(self) -> NDArray[np.bool_]:
        """V_t as a mask over H."""
        mask = np.zeros(len(self.prior_p), dtype=np.bool_)
        mask[self._rows] = True
        return mask

    def _split(self, x: Any) -> tuple[float, float]:
        """(mass of V voting 1 on x, mass of V)."""
        assert self._hclass is not None, "start() first"
        if self._x is None or x != self._x:
            whole = len(self._rows) == len(self.prior_p)
            self._values = self._hclass.evaluate(x, None if whole else self._rows)
            self._x = x
        return float(self._rows_p[self._values].sum()), float(self._rows_p.sum())

    def update(self, x: Any, y: int) -> None:
        self._split(x)
        keep = self._values == bool(y)
        if keep.any() and not keep.all():  # a label that would empty V is ignored
            self._rows, self._rows_p = self._rows[keep], self._rows_p[keep]
            self._x = None
        self.labels += 1

    def _likeliest_left(self) -> float:
        """max p(h) over V_T after a game; min p(h) over H before any label (the bound for
        every target, which online-to-batch needs)."""
        return float(self._rows_p.max() if self.labels else self.prior_p.min())

    def report(self) -> dict[str, float]:
        return {"prior_entropy_bits": entropy_bits(self.prior_p) if len(self.prior_p) else 0.0}


@register
class WeightedHalving(_PriorVote):
    """Halving with a prior p over H: predict 1 when the prior mass of V_t voting 1 is at
    least half of V_t's; at most log2(1/p(h*)) mistakes, and H(p) in expectation when h*
    is drawn from p (the mistake-bound notes).

    Each mistake leaves at most half of V_t's mass, and V_t keeps h*, so p(h*) <=
    2^-mistakes. It prints the bound for the likeliest hypothesis left, log2(1/max p(h)
    over V_T), which holds since every h in V_T could be the target (log2(1/min_H p)
    before any label). ``prior``: uniform (Halving), zipf (p(h) ~ (h + 1)^-s),
    geometric (p(h) ~ 2^(-s h)), by hypothesis index. With h* ~ p and the instances
    chosen without knowing h*, the expected mistakes are at most H(p)/2 bits: on each
    round the chance of a mistake is min(q, 1 - q), q the posterior mass voting 1, and
    min(q, 1 - q) <= h2(q)/2, whose sum is at most the information H(p).

    >>> from littlestone.games.classes import make_class
    >>> learner = WeightedHalving(prior="geometric", s=1.0)
    >>> learner.start(GameSpec("mistake-bound", 3, make_class("thresholds:n=3")), seed=0)
    >>> learner.predict(0)  # h_0 = [x < 0] alone says 0, with mass 8/15
    0.0
    >>> learner.update(0, 0); round(learner.bound(None).value, 3)  # only h_0 left
    0.907
    """

    id = "weighted-halving"

    def predict(self, x: Any) -> float:
        ones, mass = self._split(x)
        return 1.0 if 2 * ones >= mass else 0.0

    def bound(self, game: GameSpec | None) -> Bound | None:
        if not len(self.prior_p):
            return None
        value = math.log2(1 / self._likeliest_left())
        return Bound(value, "mistakes <= log2(1/p(h)) for every h consistent with the labels: "
                     f"log2(1/max p(h) over V_T), prior {self.prior} (the mistake-bound "
                     "notes, weighted Halving)")


@register
class RandomizedHalving(_PriorVote):
    """Randomised weighted Halving: predict 1 with probability q, the prior mass of V_t
    voting 1 over V_t's; expected mistakes <= ln(1/p(h*)) on every sequence, and <= H(p)/2
    bits in expectation when h* is drawn from p.

    On every sequence: the label keeps the fraction q (y = 1) or 1 - q (y = 0) of V_t's
    mass, and |q - y| <= ln(1/fraction kept) (1 - q <= -ln q), so the expected mistakes
    sum to at most ln(1/p(h*)); it prints that for the likeliest hypothesis left. With
    h* ~ p and instances chosen without knowing it, a round costs 2 q (1 - q) in
    expectation, at most half its information h2(q) (h2(q) >= 4 q (1 - q)): at most
    H(p)/2 bits in all (the entropy form of the notes, halved).

    >>> from littlestone.games.classes import make_class
    >>> learner = RandomizedHalving(prior="uniform")
    >>> learner.start(GameSpec("mistake-bound", 3, make_class("thresholds:n=3")), seed=0)
    >>> learner.predict(0), learner.predict(2)  # 3 of 4 thresholds say 1 on 0; 1 on 2
    (0.75, 0.25)
    """

    id = "randomized-halving"
    deterministic = False

    def predict(self, x: Any) -> float:
        ones, mass = self._split(x)
        return min(1.0, max(0.0, ones / mass))

    def bound(self, game: GameSpec | None) -> Bound | None:
        if not len(self.prior_p):
            return None
        value = math.log(1 / self._likeliest_left())
        return Bound(value, "expected mistakes <= ln(1/p(h)) for every h consistent with the "
                     f"labels: ln(1/max p(h) over V_T), prior {self.prior} (randomised "
                     "weighted Halving)")
