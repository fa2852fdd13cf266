"""Ratings from a bounded number of games: a model of learner skill, adversary strength
and class difficulty fitted on the stored scores, each entrant's rating with its
interval, and the leaderboard a sampled tournament shows.

The model is additive on the ranking's own figure (a game's normalised expected score,
:func:`.ranking.figures`): a learner's score in a game is

    y = mu + skill[learner] + strength[adversary] + difficulty[class] + noise,

fitted by least squares with a small ridge (:data:`RIDGE`, which keeps an entrant with
few games, or none, near the field's mean, with a wide interval), in numpy, on every
game scored for the learner; an adversary's figure (which differs where a fault ended
the game, :data:`.ranking.SCORING`) is fitted the same way on the games scored for it.
An entrant's **rating** is the score the model expects of it against the field's
average opponent on the average class: ``mu + skill + mean(strength) +
mean(difficulty)`` for a learner (lower is better), the same with the roles swapped
for an adversary (higher is better), so ratings read on the scale of the round robin's
scores. Its **interval** is the rating +- :data:`Z` standard errors of the model (the
residual variance times the diagonal of the inverse normal matrix): 95% if the noise
were Gaussian and the model right.

Under an additive model, a learner's worst adversary is the same adversary for every
learner, so ranking learners by skill is ranking them by their worst adversary's score,
as the round robin does (:func:`.ranking.rank`); adversaries rank by a median, as the
round robin ranks them (:func:`ranking_keys`). The model leaves out what a pair does
beyond its two ratings (an adversary that exploits one learner), which is what a
sampled ranking can get wrong, and why the round robin stays the exact mode. When every
game of a field has been played, :func:`rank_sampled` ranks as the round robin does and
only adds the ratings.

Imports numpy and the ranking.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from littlestone.server.records.rows import Skipped, TournamentGame
from littlestone.server.tournament.ranking import (
    ADVERSARY,
    LEARNER,
    Figures,
    Role,
    Standing,
    TournamentReport,
    fault,
    figures,
    rank,
)

__all__ = [
    "PAYOFF_MAX",
    "RIDGE",
    "Rating",
    "RatingModel",
    "Z",
    "agreement",
    "fit",
    "kendall_tau",
    "rank_sampled",
    "space_of",
]

#: The ridge on every effect, in squared score units: the model's prior makes an effect
#: of one score unit as likely as the noise of one game, enough to keep an entrant
#: without games at the field's mean and to let the normal equations be solved always.
RIDGE = 0.01
#: Standard errors each side of a rating: its interval (95% under Gaussian noise).
Z = 1.96
#: The most learner x adversary cells a sampled leaderboard's payoff matrix shows (a
#: course of 1,000 students would draw a million cells, nearly all unplayed).
PAYOFF_MAX = 2500


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


def complete(rows: Sequence[TournamentGame], learners: Sequence[str],
             adversaries: Sequence[str], spaces: int, seeds: int) -> bool:
    """Whether ``rows`` hold every game of the field (each learner x adversary x space
    x seed once): then the round robin's ranking is exact."""
    played = {(r["learner"], r["adversary"], space_of(r), r["seed"]) for r in rows}
    return len(played) >= len(learners) * len(adversaries) * spaces * seeds


def rank_sampled(name: str, rows: list[TournamentGame], skipped: list[Skipped],
                 learners: Sequence[str], adversaries: Sequence[str],
                 spaces: int, seeds: int) -> TournamentReport:
    """A sampled tournament's leaderboard: every entrant rated by the model
    (``rating``, ``rating_low``, ``rating_high``, ``rating_games`` in its line),
    learners by rating (lower is better), adversaries by rating (higher is better),
    equal ratings sharing a rank; ``worst`` and ``median`` over the games it played.
    When ``rows`` hold the whole field, the order and ranks are the round robin's
    (:func:`.ranking.rank`), the ratings shown beside. The payoff matrix is shown up to
    :data:`PAYOFF_MAX` cells."""
    small = len(learners) * len(adversaries) <= PAYOFF_MAX
    exact = complete(rows, learners, adversaries, spaces, seeds)
    report = rank(name, rows, skipped) if (small or exact) else _played_board(name, rows,
                                                                             skipped)
    if not small:
        report.payoff, report.payoff_realised = {}, {}
    for role, entries in ((LEARNER, report.learners), (ADVERSARY, report.adversaries)):
        seen = observations(rows, role)
        model = fit(seen)
        rated = model.ratings(role, [e[role] for e in entries])
        keys = ranking_keys(model, seen, role)
        for entry in entries:
            mine = rated[entry[role]]
            key = keys.get(entry[role])
            entry["rating"] = round(mine.rating if key is None else key[1], 6)
            half = Z * mine.error
            entry["rating_low"] = round(entry["rating"] - half, 6) if math.isfinite(half) \
                else None
            entry["rating_high"] = round(entry["rating"] + half, 6) if math.isfinite(half) \
                else None
            entry["rating_games"] = mine.games
        if not exact:
            scored = sorted((e for e in entries if e[role] in keys),
                            key=lambda e: (keys[e[role]][0], e[role]))
            for position, entry in enumerate(scored):
                mine_key = keys[entry[role]][0]
                before = scored[position - 1] if position else None
                entry["rank"] = (before["rank"] if before is not None
                                 and keys[before[role]][0] == mine_key else position + 1)
                entry["tied_with"] = [o[role] for o in scored
                                      if o is not entry and keys[o[role]][0] == mine_key]
            unrated = sorted((e for e in entries if e[role] not in keys), key=lambda e: e[role])
            for entry in unrated:
                entry["rank"], entry["tied_with"] = None, []
            if role == LEARNER:
                report.learners = scored + unrated
            else:
                report.adversaries = scored + unrated
    return report


def ranking_keys(model: RatingModel, seen: Sequence[tuple[str, str, str, float]],
                 role: Role) -> dict[str, tuple[float, ...]]:
    """Each entrant's ranking key (smaller is better) and the rating it shows, as
    (key, shown). A learner's key is its skill: under the model every learner's worst
    adversary is the same, so its worst score is its skill plus a constant, the round
    robin's first key. An adversary's is its median, over the games it played, of its
    score less what the model credits its learner and the class with (a step of
    Tukey's median polish), as the round robin ranks adversaries by their median over
    the learners (so an adversary that exploits one learner, or crashes in a few
    games, moves its key no more than its median moves). Rounded to 9 digits, so that
    entrants with the same games tie.

    >>> model = fit([("a", "u", "c", 1.0), ("b", "u", "c", 2.0), ("a", "v", "c", 0.0),
    ...              ("b", "v", "c", 1.0)])
    >>> keys = ranking_keys(model, [], "learner")
    >>> keys["a"][0] < keys["b"][0]
    True
    """
    index, beta = model.index, model.estimate
    spaces = [i for k, i in index.items() if k.startswith("space:")]
    learners = [i for k, i in index.items() if k.startswith("learner:")]
    base = float(beta[0]) + (float(beta[spaces].mean()) if spaces else 0.0)
    if role == LEARNER:
        adversaries = [i for k, i in index.items() if k.startswith("adversary:")]
        shift = base + (float(beta[adversaries].mean()) if adversaries else 0.0)
        return {k.removeprefix("learner:"): (round(float(beta[i]), 9), shift + float(beta[i]))
                for k, i in index.items() if k.startswith("learner:")}
    residuals: dict[str, list[float]] = {}
    for learner, adversary, space, value in seen:
        residuals.setdefault(adversary, []).append(
            value - float(beta[0]) - float(beta[index[f"learner:{learner}"]])
            - float(beta[index[f"space:{space}"]]))
    shift = base + (float(beta[learners].mean()) if learners else 0.0)
    return {adversary: (round(-float(np.median(r)), 9), shift + float(np.median(r)))
            for adversary, r in residuals.items()}


def _played_board(name: str, rows: list[TournamentGame], skipped: list[Skipped]
                  ) -> TournamentReport:
    """The leaderboard's lines of a large sampled field in one pass over its rows (each
    entrant's counts, and its worst and median over the pairs it played), without the
    payoff matrix."""
    report = TournamentReport(name, rows, skipped)
    cells: dict[tuple[str, str], tuple[list[Figures], list[Figures]]] = {}
    own: dict[tuple[Role, str], list[TournamentGame]] = {}
    for row in rows:
        mine, theirs = figures(row)
        cell = cells.setdefault((row["learner"], row["adversary"]), ([], []))
        if mine is not None:
            cell[0].append(mine)
        if theirs is not None:
            cell[1].append(theirs)
        own.setdefault((LEARNER, row["learner"]), []).append(row)
        own.setdefault((ADVERSARY, row["adversary"]), []).append(row)
    means: dict[tuple[Role, str], list[Figures]] = {}
    for (learner, adversary), (mine_list, theirs_list) in cells.items():
        if mine_list:
            means.setdefault((LEARNER, learner), []).append(Figures.mean(mine_list))
        if theirs_list:
            means.setdefault((ADVERSARY, adversary), []).append(Figures.mean(theirs_list))
    for (role, spec), games in sorted(own.items()):
        column = "score" if role == LEARNER else "forcing"
        unscored = [g["status"] for g in games if g.get(column) is None]
        entry: Standing = {"learner": spec} if role == LEARNER else {"adversary": spec}
        entry.update({"games": len(games), "scored": len(games) - len(unscored),
                      "failed": sum(fault(g["status"]) == role for g in games),
                      "failures": sorted({g["status"] for g in games
                                          if fault(g["status"]) == role}),
                      "unscored": len(unscored), "unscored_statuses": sorted(set(unscored))})
        values = means.get((role, spec), [])
        if role == LEARNER:
            worst = max((v.expected for v in values), default=None)
            median = Figures.median(values) if values else None
            entry["worst"] = None if worst is None else float(worst)
            entry["worst_exact"] = None if worst is None else str(worst)
            entry["worst_realised"] = (None if not values
                                       else float(max(v.realised for v in values)))
            entry["median"] = None if median is None else float(median.expected)
            entry["median_exact"] = None if median is None else str(median.expected)
            entry["median_realised"] = None if median is None else float(median.realised)
            report.learners.append(entry)
        else:
            forcing = Figures.median(values) if values else None
            entry["forcing"] = None if forcing is None else float(forcing.expected)
            entry["forcing_exact"] = None if forcing is None else str(forcing.expected)
            entry["forcing_realised"] = None if forcing is None else float(forcing.realised)
            report.adversaries.append(entry)
    return report
