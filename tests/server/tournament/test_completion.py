"""The round robin's ranking estimated from a sample (:mod:`.completion`): the unplayed
games predicted, the round robin's keys applied, ties kept, intervals that are points
where nothing is predicted."""

from __future__ import annotations

import math

import numpy as np

from littlestone.server.records.rows import TournamentGame
from littlestone.server.tournament.completion import Completed, complete, keys, rank_sampled
from littlestone.server.tournament.ranking import rank

SPACE = "mistake-bound|thresholds:n=15"


def game(learner: str, adversary: str, seed: int, mistakes: float,
         status: str = "complete") -> TournamentGame:
    return {"game_id": None, "status": status, "message": "", "game": "mistake-bound",
            "class": "thresholds:n=15", "learner": learner, "adversary": adversary,
            "seed": seed, "horizon": 30, "normaliser_value": 4.0,
            "score": mistakes / 4 if status == "complete" else None,
            "forcing": mistakes / 4,
            "result": {"rounds": 30, "mistakes": mistakes, "expected_mistakes": mistakes}}


def field(skip: frozenset[tuple[str, str, int]] = frozenset()) -> list[TournamentGame]:
    # learner i makes 2 + i mistakes against "easy", 4 against "tree" (Ldim: every
    # deterministic learner's worst case), adversary "mid" in between
    rows = []
    for i, learner in enumerate(["a", "b", "c", "d"]):
        for adversary, mistakes in (("easy", 1 + 0.5 * i), ("mid", 2 + 0.5 * i),
                                    ("tree", 4.0)):
            for seed in (0, 1):
                if (learner, adversary, seed) not in skip:
                    rows.append(game(learner, adversary, seed, mistakes))
    return rows


def test_with_every_game_played_nothing_is_predicted_and_ties_stay_ties():
    rows = field()
    table = complete(rows, "learner", ["a", "b", "c", "d"], ["easy", "mid", "tree"],
                     [SPACE], 2)
    assert not table.error.any()
    estimates = keys(table)
    exact = rank("t", rows, [])
    assert [e["learner"] for e in exact.learners] == sorted(
        estimates, key=lambda n: (estimates[n].key, n))
    # every learner's worst case is "tree", played: the four tie exactly on it
    assert {(estimates[n].key or ())[0] for n in estimates} == {1.0}
    assert all(estimates[n].low == estimates[n].high == 1.0 for n in estimates)


def test_an_unplayed_pair_is_predicted_from_the_model_and_has_an_interval():
    # "d" never met "mid": its score there comes from d's skill and mid's strength
    rows = field(frozenset({("d", "mid", 0), ("d", "mid", 1)}))
    table = complete(rows, "learner", ["a", "b", "c", "d"], ["easy", "mid", "tree"],
                     [SPACE], 2)
    i, j = 3, 1
    assert table.error[i, j] > 0 and table.error[0, j] == 0
    assert table.pair[i, j] > table.pair[2, j]  # (d is the weakest learner elsewhere)
    report = rank_sampled("t", rows, [], ["a", "b", "c", "d"], ["easy", "mid", "tree"], 1, 2)
    assert [e["learner"] for e in report.learners] == ["a", "b", "c", "d"]
    adversaries = {e["adversary"]: e for e in report.adversaries}
    mid, easy = adversaries["mid"], adversaries["easy"]
    assert mid["rating_low"] <= mid["rating"] <= mid["rating_high"]
    assert easy["rating_low"] == easy["rating"] == easy["rating_high"]  # (all played)


def test_an_entrant_without_a_scored_game_is_not_ranked():
    rows = [*field(), game("e", "tree", 0, 0, status="crash:adversary:E")]
    report = rank_sampled("t", rows, [], ["a", "b", "c", "d", "e"],
                          ["easy", "mid", "tree"], 1, 2)
    last = report.learners[-1]
    assert last["learner"] == "e" and last["rank"] is None and last["rating_low"] is None


def test_the_bootstrap_is_seeded_and_its_interval_holds_the_estimate():
    pair = np.array([[0.5, 1.0, np.nan], [0.25, 0.75, 1.5]])
    table = Completed("adversary", ["a", "b"], ["u", "v", "w"], pair,
                      np.array([[0.1, 0.0, 0.0], [0.2, 0.1, 0.3]]), np.ones(3, dtype=bool))
    first, again = keys(table, seed="s"), keys(table, seed="s")
    assert first == again
    for estimate in first.values():
        assert estimate.low is not None and estimate.high is not None
        assert estimate.low <= (estimate.shown or math.nan) <= estimate.high
    assert first["w"].key == (-1.5,) and first["w"].low < 1.5 < first["w"].high
