"""The round robin's own ranking estimated from a sample of its games: every unplayed
game predicted by a model, and the round robin's ranking rule applied to the table of
played and predicted games.

A round robin (:func:`.ranking.rank`) ranks learners by their worst adversary's score,
then by their median over adversaries, and adversaries by the median score they force
over learners, a pair's score being the mean over its classes and seeds. A sampled
tournament (:mod:`.schedule`) plays a few of those games; :func:`complete` fills in the
rest:

- each game's figure (the learner's, or the adversary's: :data:`.ranking.SCORING`) is
  read on a signed log scale, ``sign(y) log(1 + |y|)`` (a game a crash ended scores
  tens of times a played one: on the raw scale it would pull every estimate);
- the additive model of :mod:`.ratings` (learner skill, adversary strength, class
  difficulty) is fitted on it, and each played pair's own deviation from the model
  (what a pair does beyond its two ratings: an adversary that exploits one learner) is
  its residuals' mean, shrunk towards zero by ``n / (n + lambda)`` (``n`` its games,
  ``lambda`` the ratio of a game's noise to the pairs' spread, estimated from the pairs
  that played more than once: :func:`_shrinkage`);
- each pair's score is then the mean of its played games as scored (those not scored
  for the side left out, as the round robin leaves them out) and of its unplayed games
  as predicted, one prediction for each (class, seed) it has not played.

The table's keys are the round robin's (:func:`keys`): with every game played, no game
is predicted and the ranking is the round robin's, ties included. A learner whose worst
case was played (against the adversary that forces Ldim on every learner, say) ties
exactly with the others that played theirs.

Each entrant's **interval** is a parametric bootstrap: :data:`REPLICATES` times, every
pair's predicted part is drawn again, its error Gaussian with the model's variance (the
pair's deviation as uncertain as its shrinkage leaves it, plus a game's noise for each
predicted game), mapped back from the log scale by its slope, and the entrant's shown
figure (a learner's worst score, an adversary's median) computed again; the interval is
the middle 95% of the draws. A pair whose every game was played has no error: an
entrant whose figure rests on played games only has a point for an interval.

:func:`rank_sampled` is a sampled tournament's leaderboard: the estimated keys rank it,
each line shows its estimated figure and interval.

Imports numpy, the ranking and the ratings' model.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Sequence
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
from littlestone.server.tournament.ratings import fit, observations, space_of

__all__ = ["DIGITS", "PAYOFF_MAX", "REPLICATES", "Completed", "Estimate", "complete",
           "is_complete", "keys", "rank_sampled", "signed_log"]

#: The most learner x adversary cells a sampled leaderboard's payoff matrix shows (a
#: course of 1,000 students would draw a million cells, nearly all unplayed).
PAYOFF_MAX = 2500
#: Bootstrap draws of each interval (fewer on a field of more than a million pairs'
#: worth of draws: :func:`_replicates`).
REPLICATES = 200
#: Keys are rounded to this many digits, so that entrants with the same played games
#: tie (the round robin's exact ties, computed in floats).
DIGITS = 9
#: The share of draws each side of an interval leaves out (95%).
TAIL = 0.025


def signed_log(y: NDArray[np.float64]) -> NDArray[np.float64]:
    """The model's scale: ``sign(y) log(1 + |y|)``, monotone, and linear near 0.

    >>> signed_log(np.array([-1.0, 0.0, math.e - 1])).round(6).tolist()
    [-0.693147, 0.0, 1.0]
    """
    out: NDArray[np.float64] = np.sign(y) * np.log1p(np.abs(y))
    return out


def _signed_exp(x: NDArray[np.float64]) -> NDArray[np.float64]:
    out: NDArray[np.float64] = np.sign(x) * np.expm1(np.abs(x))
    return out


@dataclass
class Completed:
    """One side's completed table: each pair's score (``pair[i, j]``: learner i against
    adversary j; ``nan``: no game of the pair scored for the side, none predicted),
    the standard error of each (0 where every game was played) and whether each entrant
    has a game scored for the side (entrants without one are not ranked)."""

    role: Role
    learners: list[str]
    adversaries: list[str]
    pair: NDArray[np.float64]
    error: NDArray[np.float64]
    rated: NDArray[np.bool_]


@dataclass(frozen=True)
class Estimate:
    """An entrant's estimated round-robin key (smaller is better; ``None``: not
    ranked), the figure the leaderboard shows (a learner's worst score, an adversary's
    median) and that figure's interval."""

    key: tuple[float, ...] | None
    shown: float | None
    low: float | None
    high: float | None


def _shrinkage(residual: NDArray[np.float64], pair: NDArray[np.int64], pairs: int
               ) -> float:
    """``lambda``: a game's noise over the pairs' spread (the variance of a pair's
    deviation), by the method of moments on the residuals of the pairs with two games
    or more; 1 when no pair has (a pair's deviation then counts half)."""
    count = np.bincount(pair, minlength=pairs).astype(float)
    total = np.bincount(pair, weights=residual, minlength=pairs)
    squares = np.bincount(pair, weights=residual * residual, minlength=pairs)
    repeated = count >= 2
    if not repeated.any() or len(residual) < 2:
        return 1.0
    within = float((squares[repeated] - total[repeated] ** 2 / count[repeated]).sum()
                   / (count[repeated] - 1).sum())
    overall = float(np.mean(residual * residual))
    spread = max(overall - within, 0.05 * overall, 1e-12)
    return max(within, 1e-12) / spread


def complete(rows: Sequence[TournamentGame], role: Role, learners: Sequence[str],
             adversaries: Sequence[str], spaces: Sequence[str], seeds: int) -> Completed:
    """``role``'s completed table of the field (``spaces``: its game spaces as
    :func:`.ratings.space_of` names them; ``seeds``: the seeds of each), from the
    played ``rows`` (those of other entrants or spaces are left out)."""
    li = {s: i for i, s in enumerate(learners)}
    ai = {s: i for i, s in enumerate(adversaries)}
    si = {s: i for i, s in enumerate(spaces)}
    n_l, n_a, n_s = len(learners), len(adversaries), len(spaces)
    played = np.zeros((n_l, n_a, n_s))
    scored_sum = np.zeros((n_l, n_a))
    scored = np.zeros((n_l, n_a))
    observations: list[tuple[str, str, str, float]] = []
    cells: list[tuple[int, int, int]] = []
    values: list[float] = []
    for row in rows:
        i, j = li.get(row["learner"]), ai.get(row["adversary"])
        s = si.get(space_of(row))
        if i is None or j is None or s is None:
            continue
        played[i, j, s] += 1
        value = row.get("score") if role == LEARNER else row.get("forcing")
        if value is None:
            continue
        scored_sum[i, j] += value
        scored[i, j] += 1
        cells.append((i, j, s))
        values.append(float(value))
    rated = np.zeros(n_l if role == LEARNER else n_a, dtype=bool)
    for i, j, _ in cells:
        rated[i if role == LEARNER else j] = True
    unplayed = np.maximum(seeds - played, 0.0)  # (L, A, S)
    missing = unplayed.sum(axis=2)
    counted = scored + missing
    if not cells:
        nan = np.full((n_l, n_a), np.nan)
        return Completed(role, list(learners), list(adversaries), nan, nan.copy(), rated)
    y = signed_log(np.asarray(values))
    for (i, j, s), value in zip(cells, y, strict=True):
        observations.append((learners[i], adversaries[j], spaces[s], float(value)))
    model = fit(observations)
    beta, index = model.estimate, model.index

    def effects(prefix: str, names: Sequence[str]) -> NDArray[np.float64]:
        return np.array([float(beta[index[f"{prefix}:{n}"]]) if f"{prefix}:{n}" in index
                         else 0.0 for n in names])

    skill, strength = effects("learner", learners), effects("adversary", adversaries)
    difficulty = effects("space", spaces)
    ix = np.asarray(cells, dtype=np.int64)
    fitted = (float(beta[0]) + skill[ix[:, 0]] + strength[ix[:, 1]] + difficulty[ix[:, 2]])
    residual = y - fitted
    flat = ix[:, 0] * n_a + ix[:, 1]
    lam = _shrinkage(residual, flat, n_l * n_a)
    n_pair = np.bincount(flat, minlength=n_l * n_a).astype(float).reshape(n_l, n_a)
    deviation = (np.bincount(flat, weights=residual, minlength=n_l * n_a).reshape(n_l, n_a)
                 / (n_pair + lam))
    # (a game's noise, and what is left of a pair's deviation after its games)
    noise = max(model.variance * lam / (1.0 + lam), 1e-12)
    spread = noise / lam
    left = spread * lam / (n_pair + lam)
    eta = (float(beta[0]) + skill[:, None, None] + strength[None, :, None]
           + difficulty[None, None, :] + deviation[:, :, None])  # (L, A, S)
    predicted = _signed_exp(eta)
    predicted_sum = (predicted * unplayed).sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        pair = np.where(counted > 0, (scored_sum + predicted_sum) / counted, np.nan)
        # (the slope of the way back from the log scale, at each prediction, weighted by
        # the unplayed games it stands for)
        slope = np.where(missing > 0, (np.exp(np.abs(eta)) * unplayed).sum(axis=2)
                         / np.maximum(missing, 1), 0.0)
        part = np.where(counted > 0, missing / counted, 0.0)
        variance = left + noise / np.maximum(missing, 1)
        error = np.where(missing > 0, part * slope * np.sqrt(variance), 0.0)
    return Completed(role, list(learners), list(adversaries), pair, error, rated)


def keys(table: Completed, draws: int | None = None, seed: str = ""
         ) -> dict[str, Estimate]:
    """Each entrant's :class:`Estimate` from its side's completed table: the round
    robin's key (a learner's (worst, median), an adversary's (-median,)), rounded to
    :data:`DIGITS`, and its shown figure's interval from ``draws`` bootstrap draws
    (:data:`REPLICATES` by default; ``seed`` seeds them).

    Three learners against two adversaries, every game played: the round robin's keys,
    each interval a point:

    >>> pair = np.array([[1.0, 0.5], [1.0, 0.25], [2.0, 0.0]])
    >>> table = Completed("learner", ["a", "b", "c"], ["u", "v"], pair,
    ...                   np.zeros_like(pair), np.ones(3, dtype=bool))
    >>> [(n, e.key, e.low, e.high) for n, e in keys(table).items()]
    [('a', (1.0, 0.75), 1.0, 1.0), ('b', (1.0, 0.625), 1.0, 1.0), ('c', (2.0, 1.0), 2.0, 2.0)]
    """
    learner = table.role == LEARNER
    pair = table.pair if learner else table.pair.T  # (entrants, opponents)
    error = table.error if learner else table.error.T
    names = table.learners if learner else table.adversaries
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (rows without a score)
        worst = np.nanmax(pair, axis=1)
        median = np.nanmedian(pair, axis=1)
        shown = worst if learner else median
        n = draws if draws is not None else _replicates(pair.size)
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(
            f"{seed}|{pair.shape}".encode()).digest()[:8], "big"))
        low, high = shown.copy(), shown.copy()
        uncertain = (error > 0).any(axis=1)
        if n and uncertain.any():
            rows = np.flatnonzero(uncertain)
            sub, sub_error = pair[rows], error[rows]
            samples = np.empty((n, len(rows)))
            for b in range(n):
                drawn = sub + sub_error * rng.standard_normal(sub.shape)
                samples[b] = (np.nanmax(drawn, axis=1) if learner
                              else np.nanmedian(drawn, axis=1))
            low[rows] = np.quantile(samples, TAIL, axis=0)
            high[rows] = np.quantile(samples, 1 - TAIL, axis=0)
            low[rows] = np.minimum(low[rows], shown[rows])
            high[rows] = np.maximum(high[rows], shown[rows])
    out: dict[str, Estimate] = {}
    for i, name in enumerate(names):
        if not table.rated[i] or not math.isfinite(float(shown[i])):
            out[name] = Estimate(None, None, None, None)
            continue
        key = ((round(float(worst[i]), DIGITS), round(float(median[i]), DIGITS)) if learner
               else (round(-float(median[i]), DIGITS),))
        out[name] = Estimate(key, float(shown[i]), float(low[i]), float(high[i]))
    return out


def _replicates(cells: int) -> int:
    """The bootstrap's draws: :data:`REPLICATES`, fewer past 10 million cells drawn."""
    return max(20, min(REPLICATES, 10_000_000 // max(cells, 1)))


def is_complete(rows: Sequence[TournamentGame], learners: Sequence[str],
             adversaries: Sequence[str], spaces: int, seeds: int) -> bool:
    """Whether ``rows`` hold every game of the field (each learner x adversary x space
    x seed once): then the round robin's ranking is exact."""
    played = {(r["learner"], r["adversary"], space_of(r), r["seed"]) for r in rows}
    return len(played) >= len(learners) * len(adversaries) * spaces * seeds


def rank_sampled(name: str, rows: list[TournamentGame], skipped: list[Skipped],
                 learners: Sequence[str], adversaries: Sequence[str],
                 spaces: int, seeds: int) -> TournamentReport:
    """A sampled tournament's leaderboard: the round robin's ranking estimated from the
    games played (:mod:`.completion`: every unplayed game predicted by the model, the
    round robin's keys applied to the completed table), each entrant's estimated
    figure (``rating``: a learner's worst score, an adversary's median) with its
    interval (``rating_low``, ``rating_high``) and the games it rests on
    (``rating_games``) in its line; equal keys share a rank; ``worst`` and ``median``
    over the games it played. When ``rows`` hold the whole field, no game is predicted:
    the order and ranks are the round robin's (:func:`.ranking.rank`), each interval a
    point. The payoff matrix is shown up to :data:`PAYOFF_MAX` cells."""
    small = len(learners) * len(adversaries) <= PAYOFF_MAX
    exact = is_complete(rows, learners, adversaries, spaces, seeds)
    report = rank(name, rows, skipped) if (small or exact) else _played_board(name, rows,
                                                                             skipped)
    if not small:
        report.payoff, report.payoff_realised = {}, {}
    names = sorted({space_of(r) for r in rows})
    names += [f"(unplayed space {n})" for n in range(spaces - len(names))]
    everyone = {LEARNER: sorted(set(learners) | {r["learner"] for r in rows}),
                ADVERSARY: sorted(set(adversaries) | {r["adversary"] for r in rows})}
    for role, entries in ((LEARNER, report.learners), (ADVERSARY, report.adversaries)):
        table = complete(rows, role, everyone[LEARNER], everyone[ADVERSARY], names,
                               seeds)
        estimates = keys(table, seed=f"{name}|{len(rows)}|{role}")
        games: dict[str, int] = {}
        for learner, adversary, _, _ in observations(rows, role):
            whose = learner if role == LEARNER else adversary
            games[whose] = games.get(whose, 0) + 1
        for entry in entries:
            estimate = estimates.get(entry[role])
            entry["rating_games"] = games.get(entry[role], 0)
            if estimate is None or estimate.shown is None:
                entry["rating_low"], entry["rating_high"] = None, None
                continue
            entry["rating"] = round(estimate.shown, 6)
            entry["rating_low"] = None if estimate.low is None else round(estimate.low, 6)
            entry["rating_high"] = None if estimate.high is None else round(estimate.high, 6)
        if exact:
            continue
        keyed = {e[role]: found.key for e in entries
                 if (found := estimates.get(e[role])) is not None and found.key is not None}
        scored = sorted((e for e in entries if e[role] in keyed),
                        key=lambda e: (keyed[e[role]], e[role]))
        for position, entry in enumerate(scored):
            before = scored[position - 1] if position else None
            entry["rank"] = (before["rank"] if before is not None
                             and keyed[before[role]] == keyed[entry[role]] else position + 1)
            entry["tied_with"] = [o[role] for o in scored
                                  if o is not entry and keyed[o[role]] == keyed[entry[role]]]
            entry["tied"] = len(entry["tied_with"])
        unrated = sorted((e for e in entries if e[role] not in keyed), key=lambda e: e[role])
        for entry in unrated:
            entry["rank"], entry["tied_with"], entry["tied"] = None, [], 0
        if role == LEARNER:
            report.learners = scored + unrated
        else:
            report.adversaries = scored + unrated
    return report


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
