"""Which games a tournament plays: every one (the round robin, exact), or for fields too
big for it a bounded number of each version's games, chosen as the ratings come in
(the sampled schedule, adaptive).

A tournament file chooses (``[tournament]``)::

    schedule = "auto"          # or "round-robin", "sampled"
    games_per_version = 48     # k: the sampled schedule's games of each entrant

``auto`` (the default) is the round robin up to :data:`ROUND_ROBIN_MAX` games, and
sampled beyond. A round robin rates a version against every entrant: a class of 40
students costs some 20,000 games, a course of 1,000 some 9 million. The sampled
schedule gives each entrant (each learner and each adversary: a new or re-submitted
version is a new entrant) at least k games, in :data:`STAGES` stages: each stage refits
the model of :mod:`.ratings` on every stored score, and each entrant short of the
stage's share of k games takes the games that reduce the uncertainty of the ratings
most. A game of entrant e against opponent o on class c adds one row x to the model's
design; with ``M`` the inverse of the regularised normal matrix (the ratings'
covariance, in units of the noise), it reduces the variance of e's effect by
``(M x)_e^2 / (1 + x' M x)``, and the opponent's likewise (counted while the opponent is
short of its own k games too). From the second stage on, that gain is weighed by what
the pair can still change in the round robin's ranking as estimated (:mod:`.completion`,
:class:`_Relevance`): a pair that could be its learner's worst case, or sits near its
learner's or its adversary's median, within its standard error. So an entrant plays
opponents whose ratings are already well known, and unrated opponents that need games
themselves, on the classes it has played least; a pair plays again only on another
class or seed (the first seed it has not played), and an opponent is chosen past
:data:`CAP` times k games only when nothing else is left. A stage weighs
:data:`CANDIDATES` opponents for each entrant, drawn at random (the generator seeded by
the tournament's name and what is stored, so a run is reproducible). Games both sides
decline, and games that failed to be stored, are not chosen twice in one run.

Remote agents play only in a round robin: a sampled stage cannot wait for them (a
tournament file that names one with ``schedule = "sampled"`` is refused).

Imports numpy, the tournament's pairings and the ratings' model.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from littlestone.server.records.rows import TournamentGame
from littlestone.server.tournament.completion import complete
from littlestone.server.tournament.config import (
    GAMES_PER_VERSION,
    SCHEDULES,
    TournamentConfig,
)
from littlestone.server.tournament.pairing import Pairing, spaces, version
from littlestone.server.tournament.ratings import RIDGE, RatingModel, fit, observations

__all__ = ["CANDIDATES", "CAP", "GAMES_PER_VERSION", "ROUND_ROBIN_MAX", "SCHEDULES", "STAGES",
           "SampledSchedule", "current_keys", "field_games", "is_sampled"]

#: ``auto``: the round robin up to this many games (a class of 40 students plays some
#: 20,000), the sampled schedule beyond.
ROUND_ROBIN_MAX = 25_000
#: Stages of the sampled schedule: the model is refitted between two.
STAGES = 3
#: Opponents weighed for an entrant's games in one stage.
CANDIDATES = 64
#: From the second stage on, a game's worth to the ratings is weighed by its pair's
#: worth to the estimated round-robin ranking (:class:`_Relevance`) plus this floor.
FLOOR = 0.05
#: An opponent is chosen while it has fewer than CAP x k games (then only if no other
#: is left): the builtins, well rated early, would otherwise play every game.
CAP = 2


def field_games(config: TournamentConfig) -> int:
    """The games of the tournament's round robin."""
    return (len(spaces(config)) * len(config.learners) * len(config.adversaries)
            * len(config.seeds))


def is_sampled(config: TournamentConfig) -> bool:
    """Whether the tournament plays the sampled schedule (``auto``: past
    :data:`ROUND_ROBIN_MAX` games)."""
    if config.schedule == "auto":
        return field_games(config) > ROUND_ROBIN_MAX
    return config.schedule == "sampled"


def current_keys(config: TournamentConfig, digests: Mapping[str, str | None],
                 rows: Iterable[TournamentGame]) -> set[str]:
    """The keys of the stored ``rows`` that are still games of the tournament (their
    entrants, game space and seed in it, their :func:`.pairing.version` current),
    without listing the field's every game (a course's are millions)."""
    learners, adversaries = set(config.learners), set(config.adversaries)
    allowed = set(spaces(config))
    seeds = set(config.seeds)
    stamps: dict[tuple[str, str], str] = {}
    out = set()
    for row in rows:
        learner, adversary = row["learner"], row["adversary"]
        if learner not in learners or adversary not in adversaries or row["seed"] not in seeds \
                or (row["game"], row["class"]) not in allowed:
            continue
        stamp = stamps.get((learner, adversary))
        if stamp is None:
            stamp = stamps[(learner, adversary)] = version(config, learner, adversary, digests)
        pairing = Pairing(row["game"], row["class"], learner, adversary, row["seed"],
                          version=stamp)
        if (row.get("version") or "") == stamp:
            out.add(pairing.key)
    return out


@dataclass
class SampledSchedule:
    """The sampled schedule of one run: :meth:`next_games` is the next stage's games,
    given what is stored (empty: every entrant has its k games, or none is left)."""

    config: TournamentConfig
    digests: Mapping[str, str | None]
    k: int
    stage: int = 0
    #: (learner, adversary, space index, seed) chosen in this run.
    tried: set[tuple[str, str, int, int]] = field(default_factory=set)

    def next_games(self, rows: list[TournamentGame]) -> list[Pairing]:
        config, k = self.config, self.k
        space_list = spaces(config)
        space_index = {space: i for i, space in enumerate(space_list)}
        names = [f"{g}|{c}" for g, c in space_list]
        learners, adversaries = list(config.learners), list(config.adversaries)
        played: dict[tuple[str, str, int], set[int]] = {}
        count: dict[tuple[str, str], int] = {}
        by_space: dict[tuple[str, str, int], int] = {}
        pair_count: dict[tuple[str, str], int] = {}
        for row in rows:
            s = space_index.get((row["game"], row["class"]))
            if s is None:
                continue
            played.setdefault((row["learner"], row["adversary"], s), set()).add(row["seed"])
            for role in ("learner", "adversary"):
                count[(role, row[role])] = count.get((role, row[role]), 0) + 1
                by_space[(role, row[role], s)] = by_space.get((role, row[role], s), 0) + 1
            pair_count[(row["learner"], row["adversary"])] = pair_count.get(
                (row["learner"], row["adversary"]), 0) + 1
        for learner, adversary, s, seed in self.tried:
            played.setdefault((learner, adversary, s), set()).add(seed)
        stage = min(self.stage, STAGES - 1)
        target = min(k, math.ceil(k * (stage + 1) / STAGES))
        self.stage += 1
        model = fit(observations(rows, "learner")) if rows else None
        weigh = _Weights(model, names)
        relevance = _Relevance(rows, learners, adversaries, names, len(config.seeds)) \
            if rows and self.stage > 1 else None
        digest = hashlib.sha256(f"{config.name}|{len(rows)}|{self.stage}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
        planned: dict[tuple[str, str], int] = {}

        def have(role: str, spec: str) -> int:
            return count.get((role, spec), 0) + planned.get((role, spec), 0)

        chosen: list[Pairing] = []
        choosers = [("learner", s) for s in learners] + [("adversary", s) for s in adversaries]
        choosers.sort(key=lambda e: (have(*e), e[0], e[1]))
        seeds = config.seeds
        for role, spec in choosers:
            need = target - have(role, spec)
            if need <= 0:
                continue
            other_role = "adversary" if role == "learner" else "learner"
            others = adversaries if role == "learner" else learners
            open_ = [o for o in others if have(other_role, o) < CAP * k]
            pool = open_ if len(open_) >= need else others
            if len(pool) > CANDIDATES:
                pool = [pool[i] for i in rng.choice(len(pool), CANDIDATES, replace=False)]
            options = []
            for o in pool:
                learner, adversary = (spec, o) if role == "learner" else (o, spec)
                for s in range(len(space_list)):
                    done = played.get((learner, adversary, s), set())
                    first = next((x for x in seeds if x not in done), None)
                    if first is not None:
                        options.append((learner, adversary, s, first, o))
            if not options:
                continue
            gain = weigh.gain([(o[0], o[1], o[2]) for o in options], role,
                              [have(other_role, o[4]) < k for o in options])
            if relevance is not None:
                gain = gain * relevance.of([(o[0], o[1]) for o in options])
            gain = gain * (1.0 + 1e-9 * rng.random(len(gain)))  # (ties: at random)
            repeats = np.array([pair_count.get((o[0], o[1]), 0) for o in options], dtype=float)
            spread = np.array([by_space.get((role, spec, o[2]), 0) for o in options],
                              dtype=float)
            pair_of = np.array([hash((o[0], o[1])) for o in options])
            space_of = np.array([o[2] for o in options])
            taken = np.zeros(len(options), dtype=bool)
            for _ in range(need):
                value = np.where(taken, -np.inf, gain / (1.0 + repeats) / (1.0 + spread))
                best = int(np.argmax(value))
                if taken[best]:
                    break
                taken[best] = True
                learner, adversary, s, seed, o = options[best]
                repeats[pair_of == pair_of[best]] += 1  # (this pair again: less worth)
                spread[space_of == s] += 1
                planned[(role, spec)] = planned.get((role, spec), 0) + 1
                planned[(other_role, o)] = planned.get((other_role, o), 0) + 1
                pair_count[(learner, adversary)] = pair_count.get((learner, adversary), 0) + 1
                played.setdefault((learner, adversary, s), set()).add(seed)
                self.tried.add((learner, adversary, s, seed))
                game, hclass = space_list[s]
                chosen.append(Pairing(game, hclass, learner, adversary, seed,
                                      version=version(config, learner, adversary,
                                                      self.digests)))
        if not chosen and self.stage < STAGES:
            return self.next_games(rows)
        return chosen


class _Relevance:
    """What a pair's next game is worth to the round robin's ranking as estimated
    (:mod:`.completion`), from the second stage on: a pair matters to its learner's key
    if it could be the learner's worst case or sits near its median over adversaries,
    and to its adversary's if it sits near the adversary's median over learners, each
    ``exp(-z^2 / 2)``, ``z`` the distance in the pair's standard errors; a pair the
    estimate already rests on played games for is worth nothing more. The schedule's
    gain of a game (:class:`_Weights`) is multiplied by :data:`FLOOR` plus the two."""

    def __init__(self, rows: list[TournamentGame], learners: list[str],
                 adversaries: list[str], spaces: list[str], seeds: int) -> None:
        self.learner_index = {s: i for i, s in enumerate(learners)}
        self.adversary_index = {s: i for i, s in enumerate(adversaries)}
        worth = np.zeros((len(learners), len(adversaries)))
        for role in ("learner", "adversary"):
            table = complete(rows, "learner" if role == "learner" else "adversary",
                             learners, adversaries, spaces, seeds)
            pair, error = table.pair, table.error
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # (entrants without a score)
                scale = np.where(error > 0, error, np.inf)
                if role == "learner":
                    worst = np.nanmax(pair, axis=1, keepdims=True)
                    median = np.nanmedian(pair, axis=1, keepdims=True)
                    near = (np.exp(-0.5 * ((pair - worst) / scale) ** 2)
                            + np.exp(-0.5 * ((pair - median) / scale) ** 2))
                else:
                    median = np.nanmedian(pair, axis=0, keepdims=True)
                    near = np.exp(-0.5 * ((pair - median) / scale) ** 2)
            worth += np.nan_to_num(near, nan=1.0)
        self.worth = worth

    def of(self, pairs: list[tuple[str, str]]) -> NDArray[np.float64]:
        """Each pair's weight: :data:`FLOOR` plus its worth (1 for an entrant the
        estimate has not seen)."""
        out = np.ones(len(pairs))
        for n, (learner, adversary) in enumerate(pairs):
            i, j = self.learner_index.get(learner), self.adversary_index.get(adversary)
            if i is not None and j is not None:
                out[n] = float(self.worth[i, j])
        weights: NDArray[np.float64] = FLOOR + out
        return weights


class _Weights:
    """What a game is worth to the ratings (:class:`SampledSchedule`): the reduction
    of the variance of its entrants' effects, read from the model's inverse normal
    matrix; an entrant or class the model has not seen counts as a parameter of prior
    variance 1 / RIDGE, independent of the others."""

    def __init__(self, model: RatingModel | None, spaces: list[str]) -> None:
        self.model = model
        p = len(self.model.index) if self.model is not None else 1
        self.p = p
        inverse = np.zeros((p + 3, p + 3))
        if self.model is not None:
            inverse[:p, :p] = self.model.inverse
        else:
            inverse[0, 0] = 1.0 / RIDGE
        for j in range(3):  # (one unseen parameter in each slot: learner, adversary, class)
            inverse[p + j, p + j] = 1.0 / RIDGE
        self.inverse = inverse
        self.spaces = spaces

    def _index(self, key: str, slot: int) -> int:
        if self.model is None:
            return self.p + slot
        return self.model.index.get(key, self.p + slot)

    def gain(self, options: list[tuple[str, str, int]], role: str,
             opponent_needs: list[bool]) -> NDArray[np.float64]:
        """The worth of each (learner, adversary, space) to ``role``'s entrant, plus to
        the opponent's where it needs games."""
        rows = np.array([[0, self._index(f"learner:{learner}", 0),
                          self._index(f"adversary:{adversary}", 1),
                          self._index(f"space:{self.spaces[s]}", 2)]
                         for learner, adversary, s in options], dtype=np.int64)
        m = self.inverse
        block = m[rows[:, :, None], rows[:, None, :]]  # (n, 4, 4)
        quad = block.sum(axis=(1, 2))
        mine, theirs = (1, 2) if role == "learner" else (2, 1)
        own = block[:, mine, :].sum(axis=1)
        other = block[:, theirs, :].sum(axis=1)
        needs = np.asarray(opponent_needs, dtype=float)
        worth: NDArray[np.float64] = (own ** 2 + needs * other ** 2) / (1.0 + quad)
        return worth
