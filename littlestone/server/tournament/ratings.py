"""Ratings from a bounded number of games: a model of learner skill, adversary strength
and class difficulty fitted on the stored scores, each entrant's rating with its
interval, and how far two rankings agree.

The model is additive on the ranking's own figure (a game's normalised expected score,
:func:`.ranking.figures`): a learner's score in a game is

    y = mu + skill[learner] + strength[adversary] + difficulty[class] + noise,

fitted by least squares with a small ridge (:data:`RIDGE`, which keeps an entrant with
few games, or none, near the field's mean, with a wide interval), in numpy, on every
game scored for the learner; an adversary's figure (which differs where a fault ended
the game, :data:`.ranking.SCORING`) is fitted the same way on the games scored for it.
An entrant's **rating** under this model is the score it expects against the field's
average opponent on the average class, with an interval of +- :data:`Z` standard errors
(:meth:`RatingModel.ratings`); the schedule reads what a game is worth from the
model's inverse normal matrix (:mod:`.schedule`).

The leaderboard of a sampled tournament (:func:`.completion.rank_sampled`) does not
rank by these ratings: a round robin ranks learners by their worst adversary and their
median, and an additive model orders by something like a mean. It estimates the round
robin's own keys instead (:mod:`.completion`: the model, on a log scale and with each pair's own
deviation, predicts every unplayed game, and the round robin's rule ranks the table of
played and predicted games), and shows each entrant's estimated round-robin figure with
a bootstrap interval. When every game of a field has been played, it ranks as the round
robin does.

Agreement with a round robin is measured by Kendall's tau-b (:func:`kendall_tau`) on
the two rankings' ranks, ties as ties: a pair the round robin ties and the estimate
orders counts against the estimate (and the other way round), as tau-b counts them;
:func:`agreement` leaves those pairs out and is shown beside it.

Imports numpy and the ranking.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from littlestone.server.records.rows import TournamentGame
from littlestone.server.tournament.ranking import (
    LEARNER,
    Role,
)

__all__ = [
    "RIDGE",
    "Rating",
    "RatingModel",
    "Z",
    "agreement",
    "fit",
    "kendall_tau",
    "space_of",
]

#: The ridge on every effect, in squared score units: the model's prior makes an effect
#: of one score unit as likely as the noise of one game, enough to keep an entrant
#: without games at the field's mean and to let the normal equations be solved always.
RIDGE = 0.01
#: Standard errors each side of a rating: its interval (95% under Gaussian noise).
Z = 1.96


def space_of(row: TournamentGame) -> str:
    """A row's game space (its game and class), as the model's class effect names it."""
    return f"{row['game']}|{row['class']}"


@dataclass(frozen=True)
class Rating:
    """An entrant's rating: the score the model expects of it against the average
    opponent and class, its interval, its standard error and the games it rests on."""

    rating: float
    low: float
    high: float
    error: float
    games: int


@dataclass
class RatingModel:
    """An additive model fitted on one side's figures (:func:`fit`): the parameters'
    index (``mu``, then ``learner:SPEC``, ``adversary:SPEC``, ``space:GAME|CLASS``), the
    estimates, the inverse of the regularised normal matrix (``inverse``, what the
    schedule reads the gain of a game from) and the residual variance."""

    index: dict[str, int]
    estimate: NDArray[np.float64]
    inverse: NDArray[np.float64]
    variance: float
    games: dict[str, int]

    def rating(self, role: Role, spec: str) -> Rating:
        """``spec``'s rating as ``role``: against the average opponent and class."""
        return self.ratings(role, [spec])[spec]

    def ratings(self, role: Role, specs: Iterable[str]) -> dict[str, Rating]:
        """Every one of ``specs``' ratings as ``role``, in one pass (as :meth:`rating`)."""
        other = "adversary" if role == LEARNER else "learner"
        h = np.zeros(len(self.estimate))
        h[0] = 1.0
        for prefix in (other, "space"):
            keys = [i for name, i in self.index.items() if name.startswith(prefix + ":")]
            if keys:
                h[keys] += 1.0 / len(keys)
        base = float(h @ self.estimate)
        spread_h = self.inverse @ h
        common = float(h @ spread_h)
        out = {}
        for spec in specs:
            key = f"{role}:{spec}"
            i = self.index.get(key)
            if i is None:
                out[spec] = Rating(base, -math.inf, math.inf, math.inf, 0)
                continue
            value = base + float(self.estimate[i])
            spread = (float(self.inverse[i, i]) + 2 * float(spread_h[i]) + common) * self.variance
            error = math.sqrt(max(spread, 0.0))
            out[spec] = Rating(value, value - Z * error, value + Z * error, error,
                               self.games.get(key, 0))
        return out


def fit(observations: Sequence[tuple[str, str, str, float]]) -> RatingModel:
    """The additive model fitted on ``observations`` (learner, adversary, space, score).

    Two learners, one a mistake better than the other in every game, against two
    adversaries on one class:

    >>> games = [("a", x, "c", s + d) for x, d in (("u", 0.0), ("v", 1.0))
    ...          for s in (1.0, 1.1)] + [("b", x, "c", s + d + 1) for x, d in
    ...          (("u", 0.0), ("v", 1.0)) for s in (1.0, 1.1)]
    >>> model = fit(games)
    >>> a, b = model.rating("learner", "a"), model.rating("learner", "b")
    >>> round(b.rating - a.rating, 2), a.low < a.rating < a.high, a.games
    (1.0, True, 4)
    """
    index: dict[str, int] = {"mu": 0}
    games: dict[str, int] = {}
    rows = np.zeros((len(observations), 4), dtype=np.int64)
    y = np.zeros(len(observations))
    for n, (learner, adversary, space, value) in enumerate(observations):
        keys = (f"learner:{learner}", f"adversary:{adversary}", f"space:{space}")
        for j, key in enumerate(keys, 1):
            rows[n, j] = index.setdefault(key, len(index))
        games[keys[0]] = games.get(keys[0], 0) + 1
        games[keys[1]] = games.get(keys[1], 0) + 1
        y[n] = value
    p = len(index)
    normal = np.zeros((p, p))
    for a in range(4):
        for b in range(4):
            np.add.at(normal, (rows[:, a], rows[:, b]), 1.0)
    right = np.zeros(p)
    for a in range(4):
        np.add.at(right, rows[:, a], y)
    ridge = np.full(p, RIDGE)
    ridge[0] = 1e-9  # (the mean is free)
    inverse: NDArray[np.float64] = np.asarray(np.linalg.inv(normal + np.diag(ridge)),
                                              dtype=np.float64)
    estimate = inverse @ right
    residual = y - estimate[rows].sum(axis=1)
    # (the residual variance on n - p degrees of freedom; with fewer games than
    # parameters, the scores' own variance: wide intervals, as they should be)
    variance = float(residual @ residual) / (len(y) - p) if len(y) > p else (
        float(np.var(y)) if len(y) > 1 else 1.0)
    return RatingModel(index, estimate, inverse, max(variance, 1e-12), games)


def observations(rows: Iterable[TournamentGame], role: Role
                 ) -> list[tuple[str, str, str, float]]:
    """Each row scored for ``role`` as (learner, adversary, space, its figure)."""
    out = []
    for row in rows:
        value = row.get("score") if role == LEARNER else row.get("forcing")
        if value is not None:
            out.append((row["learner"], row["adversary"], space_of(row), float(value)))
    return out


def kendall_tau(first: Sequence[float], second: Sequence[float]) -> float:
    """Kendall's tau-b between two scorings of the same items (ties counted as tau-b
    counts them; 1.0 when either has no untied pair).

    >>> kendall_tau([1, 2, 3, 4], [1, 2, 3, 4]), kendall_tau([1, 2, 3], [3, 2, 1])
    (1.0, -1.0)
    >>> round(kendall_tau([1, 1, 2, 3], [1, 2, 3, 4]), 3)
    0.913
    """
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    da = np.sign(a[:, None] - a[None, :])
    db = np.sign(b[:, None] - b[None, :])
    upper = np.triu_indices(len(a), 1)
    da, db = da[upper], db[upper]
    pairs_a, pairs_b = np.count_nonzero(da), np.count_nonzero(db)
    if not pairs_a or not pairs_b:
        return 1.0
    return float((da * db).sum() / math.sqrt(pairs_a * pairs_b))


def agreement(reference: Sequence[float], other: Sequence[float]) -> float:
    """Kendall's tau on the pairs ``reference`` orders: (concordant - discordant) / the
    pairs it orders, a pair ``other`` ties counting neither. A round robin ties entrants
    whose scores are exactly equal (a class's copies of one agent): any order of them
    agrees with it, which tau-b (:func:`kendall_tau`) counts against a ranking that
    orders them.

    >>> agreement([1, 1, 2, 3], [1, 2, 3, 4]), round(kendall_tau([1, 1, 2, 3], [1, 2, 3, 4]), 3)
    (1.0, 0.913)
    >>> agreement([1, 2, 3], [1, 3, 2])
    0.3333333333333333
    """
    a, b = np.asarray(reference, dtype=float), np.asarray(other, dtype=float)
    upper = np.triu_indices(len(a), 1)
    da = np.sign(a[:, None] - a[None, :])[upper]
    db = np.sign(b[:, None] - b[None, :])[upper]
    ordered = np.count_nonzero(da)
    return 1.0 if not ordered else float((da * db).sum() / ordered)
