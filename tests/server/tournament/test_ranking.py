"""Scoring and ranking tournament games: faults lose the rounds not played, the side
not at fault is not penalised, expected figures rank, ties are exact."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.cli import main
from littlestone.cli.tournaments import leaderboard_lines
from littlestone.games.classes import make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.server.records.rows import GameOutcome, ResultRow, TournamentGame
from littlestone.server.tournament import rank
from littlestone.server.tournament.ranking import score
from tests.support.agents_for_tests import CrashingLearner, OutOfRangeLearner, OutsideAdversary

T = 30
CLASS = "thresholds:n=15"  # Ldim 4


def row(learner: str, adversary: str, status: str = "complete", rounds: int = T,
        mistakes: float = 4, expected: float | None = None, *, seed: int = 0,
        hclass: str = CLASS) -> TournamentGame:
    """A tournament row as run.py records it, scored by ranking.score."""
    result: ResultRow = {"status": status, "rounds": rounds, "mistakes": mistakes,
                         "expected_mistakes": mistakes if expected is None else expected}
    outcome: GameOutcome = {"game_id": None, "status": status, "result": result}
    return cast("TournamentGame", {  # (mypy takes no ** into a TypedDict with optional keys)
        "game_id": None, "status": status, "message": "", "game": MISTAKE_BOUND,
        "class": hclass, "learner": learner, "adversary": adversary, "seed": seed,
        **score(GameSpec(MISTAKE_BOUND, T, make_class(hclass)), outcome), "result": result})


def by_name(entries: list[dict[str, Any]], role: str) -> dict[str, dict[str, Any]]:
    return {e[role]: e for e in entries}


LEARNER_FAULTS = [
    # (status, rounds played, mistakes made before the end)
    ("crash:learner:ZeroDivisionError", 0, 0),
    ("illegal_move:learner:p_range", 0, 0),
    ("forfeit:learner:timeout", 2, 2),  # the ladder's two faulted rounds were mistakes
    ("disconnected:learner", 1, 0),  # also how a memory blow-up ends over the network
    ("crash:learner:no_game", 0, 0),
    ("absent:learner", 0, 0),
]


@pytest.mark.parametrize(("status", "rounds", "mistakes"), LEARNER_FAULTS)
def test_a_learner_ending_its_games_by_its_own_fault_ranks_below_an_honest_one(
        status, rounds, mistakes):
    rows = []
    for adversary in ("random-target", "shattered-tree"):
        rows.append(row("honest", adversary, mistakes=4))  # Ldim mistakes: score 1
        rows.append(row("faulty", adversary, status, rounds, mistakes))
    board = rank("t", rows, [])
    assert [(e["learner"], e["rank"]) for e in board.learners] == [("honest", 1),
                                                                   ("faulty", 2)]
    faulty = by_name(board.learners, "learner")["faulty"]
    # every round it did not play counts as a mistake: (mistakes + T - rounds) / Ldim
    assert faulty["worst_exact"] == str(Fraction(mistakes + T - rounds, 4))
    assert faulty["failed"] == 2 and faulty["failures"] == [status]
    assert faulty["scored"] == 2 and faulty["unscored"] == 0


def test_a_game_without_a_result_counts_every_round_lost():
    """A row with no figures at all (an entrant that never loaded) scores T mistakes."""
    outcome = {"game_id": None, "status": "load_failed:learner",
               "result": {"status": "load_failed:learner"}}
    fields = score(GameSpec(MISTAKE_BOUND, T, make_class(CLASS)), outcome)
    assert fields["fault"] == "learner" and fields["score"] == T / 4
    assert fields["forcing"] is None  # (its adversary won by forfeit: not scored for it)


def test_an_adversary_at_fault_forces_nothing_and_ranks_below_an_honest_one():
    rows = [
        row("soa", "honest", mistakes=4),
        row("halving", "honest", mistakes=3),
        # a commitment that fails after round T: it labelled every round against the learner
        row("soa", "cheat", "rule_violation:adversary:commitment", T, T),
        # an instance outside the domain in round 2, after forcing one mistake
        row("halving", "cheat", "rule_violation:adversary:instance_domain", 1, 1),
    ]
    board = rank("t", rows, [])
    adversaries = by_name(board.adversaries, "adversary")
    assert adversaries["cheat"]["forcing_exact"] == "0"  # no credit, not even T - rounds
    assert adversaries["cheat"]["failed"] == 2
    assert [e["adversary"] for e in board.adversaries] == ["honest", "cheat"]
    assert adversaries["honest"]["forcing_exact"] == str(Fraction(4 + 3, 2 * 4))


def test_an_adversary_crashing_or_leaving_forces_nothing():
    rows = [row("soa", "honest", mistakes=1),
            row("soa", "crashes", "crash:adversary:KeyError", 3, 3),
            row("soa", "leaves", "disconnected:adversary", 10, 4),
            row("soa", "slow", "forfeit:adversary:timeout", 10, 4)]
    board = rank("t", rows, [])
    assert [(e["adversary"], e["forcing"]) for e in board.adversaries] == [
        ("honest", 0.25), ("crashes", 0.0), ("leaves", 0.0), ("slow", 0.0)]
    assert [e["rank"] for e in board.adversaries] == [1, 2, 2, 2]


def test_a_learner_is_not_penalised_for_its_adversarys_fault():
    rows = [
        row("a", "tree", mistakes=4), row("b", "tree", mistakes=4),
        row("a", "cheat", "rule_violation:adversary:commitment", T, T),  # spoiled for a
        row("b", "cheat", mistakes=4),
    ]
    board = rank("t", rows, [])
    learners = by_name(board.learners, "learner")
    assert board.payoff["a"]["cheat"] is None  # the spoiled game is not scored for a
    assert learners["a"]["unscored"] == 1 and learners["a"]["failed"] == 0
    assert learners["a"]["unscored_statuses"] == ["rule_violation:adversary:commitment"]
    assert learners["a"]["worst_exact"] == learners["b"]["worst_exact"] == "1"
    assert learners["a"]["rank"] == learners["b"]["rank"] == 1
    assert learners["a"]["tied_with"] == ["b"]


def test_a_broken_learners_forfeits_do_not_lift_the_adversaries_that_met_it():
    """Issue 44 item 8: a game a learner ended by its own fault is won by forfeit, counted
    apart, and not scored for the adversary: a weak adversary that happened to meet a
    broken student does not overtake a strong one (it did: credited T / Ldim)."""
    rows = [row(learner, "tree", mistakes=4) for learner in ("soa", "halving")]
    rows += [row(learner, "weak", mistakes=1) for learner in ("soa", "halving")]
    rows += [row("broken", "weak", "crash:learner:ZeroDivisionError", 0, 0),
             row("slow", "weak", "forfeit:learner:timeout", 2, 2),
             row("broken", "tree", "crash:learner:ZeroDivisionError", 0, 0)]
    board = rank("t", rows, [])
    adversaries = by_name(board.adversaries, "adversary")
    assert [e["adversary"] for e in board.adversaries] == ["tree", "weak"]
    assert adversaries["weak"]["forcing_exact"] == "1/4"
    assert adversaries["weak"]["won_by_forfeit"] == 2
    assert adversaries["tree"]["won_by_forfeit"] == 1
    assert adversaries["weak"]["games"] == 4 and adversaries["weak"]["scored"] == 2
    # (credited, the two broken learners' 30/4 made weak's median 31/8, over tree's 1)
    assert board.payoff["slow"]["weak"] == Fraction(2 + T - 2, 4)  # the learner still loses
    learners = by_name(board.learners, "learner")
    assert learners["broken"]["failed"] == 2 and learners["broken"]["won_by_forfeit"] == 0
    assert learners["broken"]["rank"] == learners["slow"]["rank"] == 3
    lines = leaderboard_lines(board)
    weak = next(line for line in lines if " weak " in line)
    assert "2 won by forfeit" in weak and "not scored" not in weak


def test_a_learner_wins_by_forfeit_what_its_adversary_spoiled():
    board = rank("t", [row("soa", "cheat", "rule_violation:adversary:commitment", T, T),
                       row("soa", "tree", mistakes=4),
                       row("soa", "quits", "aborted:shutdown", 3, 0)], [])
    soa = board.learners[0]
    assert (soa["won_by_forfeit"], soa["unscored"]) == (1, 2)
    line = next(line for line in leaderboard_lines(board) if " soa " in line)
    assert "1 won by forfeit; 1 not scored (aborted:shutdown)" in line, line


def test_exact_ties_share_a_rank():
    """Two learners whose median pair scores 13/60 exactly: summed as floats in their own
    orders the pair's four games give 0.21666666666666667 and 0.21666666666666665 (the
    shipped demo once printed SOA third for such a difference)."""
    ldim = {"thresholds:n=63": 6, "monotone-disjunctions:n=5": 5}
    mistakes = {  # (class, seed) -> mistakes, per learner and adversary
        ("halving", "contrarian"): [0, 1, 1, 3], ("soa", "contrarian"): [0, 1, 3, 1],
        ("halving", "random-target"): [0, 0, 0, 0], ("soa", "random-target"): [0, 0, 0, 0],
        ("halving", "shattered-tree"): [5, 5, 6, 6], ("soa", "shattered-tree"): [5, 5, 6, 6],
    }
    games = [("monotone-disjunctions:n=5", 0), ("monotone-disjunctions:n=5", 1),
             ("thresholds:n=63", 0), ("thresholds:n=63", 1)]
    rows = [row(learner, adversary, mistakes=m, hclass=c, seed=s)
            for (learner, adversary), ms in mistakes.items()
            for (c, s), m in zip(games, ms, strict=True)]
    floats = {learner: sum(m / ldim[c] for (c, _), m in zip(games, mistakes[(learner,
                                                                              "contrarian")],
                                                            strict=True)) / 4
              for learner in ("halving", "soa")}
    assert floats["halving"] != floats["soa"]  # the float arithmetic would split them
    board = rank("demo", rows, [])
    assert [(e["learner"], e["rank"], e["median_exact"], e["tied_with"])
            for e in board.learners] == [("halving", 1, "13/60", ["soa"]),
                                         ("soa", 1, "13/60", ["halving"])]


def test_a_learner_throwing_its_games_to_a_friend_does_not_rank_the_friend_first():
    """A classmate's learner errs every round against its friend's adversary (it knows it
    by a signal in the instances): the friend's forcing, a median over learners, does not
    move, and the thrower ranks itself last."""
    learners = ["a", "b", "c", "d", "e"]
    honest = {"strong": 4, "friend": 2}  # mistakes each adversary forces on everyone
    rows = [row(lrn, adv, mistakes=m) for lrn in learners for adv, m in honest.items()]
    before = by_name(rank("t", rows, []).adversaries, "adversary")
    thrown = [r for r in rows if (r["learner"], r["adversary"]) != ("e", "friend")]
    thrown.append(row("e", "friend", mistakes=T))
    board = rank("t", thrown, [])
    after = by_name(board.adversaries, "adversary")
    assert after["friend"]["forcing_exact"] == before["friend"]["forcing_exact"] == "1/2"
    assert [e["adversary"] for e in board.adversaries] == ["strong", "friend"]
    assert board.learners[-1]["learner"] == "e"
    # the mean over learners it replaced would have ranked the friend first
    mean_forcing = sum(board.payoff[lrn]["friend"] for lrn in learners) / len(learners)
    assert mean_forcing > after["strong"]["forcing"]


def test_an_adversary_going_easy_on_a_friend_does_not_lift_the_friend():
    """A classmate's adversary lets its friend's learner make no mistake: the friend's
    worst is still its strongest adversary's, and its median is not moved below the
    others' by one friendly pair."""
    adversaries = {"strong": 4, "mid": 3, "weak": 2}
    rows = [row(lrn, adv, mistakes=m) for lrn in ("friend", "other")
            for adv, m in adversaries.items()]
    rows = [r for r in rows if (r["learner"], r["adversary"]) != ("friend", "weak")]
    rows.append(row("friend", "weak", mistakes=0))  # the gift
    board = rank("t", rows, [])
    learners = by_name(board.learners, "learner")
    assert learners["friend"]["worst_exact"] == learners["other"]["worst_exact"] == "1"
    assert learners["friend"]["median_exact"] == learners["other"]["median_exact"] == "3/4"
    assert learners["friend"]["rank"] == learners["other"]["rank"] == 1


def test_competition_ranking_and_ties_listed_by_name():
    rows = [row("d", "tree", mistakes=8), row("c", "tree", mistakes=4),
            row("b", "tree", mistakes=4), row("a", "tree", mistakes=2)]
    board = rank("t", rows, [])
    assert [(e["learner"], e["rank"], e["tied_with"]) for e in board.learners] == [
        ("a", 1, []), ("b", 2, ["c"]), ("c", 2, ["b"]), ("d", 4, [])]


def test_the_median_breaks_a_tie_on_the_worst():
    rows = [row("steady", "tree", mistakes=4), row("steady", "target", mistakes=4),
            row("quick", "tree", mistakes=4), row("quick", "target", mistakes=1)]
    board = rank("t", rows, [])
    assert [(e["learner"], e["rank"], e["tied_with"]) for e in board.learners] == [
        ("quick", 1, []), ("steady", 2, [])]


def test_coin_luck_does_not_decide_the_rank():
    """The same expected mistakes, different coins: a tie, with the realised figures shown."""
    rows = [row("lucky", "tree", mistakes=2, expected=2.5),
            row("unlucky", "tree", mistakes=3, expected=2.5)]
    board = rank("t", rows, [])
    learners = by_name(board.learners, "learner")
    assert learners["lucky"]["rank"] == learners["unlucky"]["rank"] == 1
    assert learners["lucky"]["worst_exact"] == learners["unlucky"]["worst_exact"] == "5/8"
    assert (learners["lucky"]["worst_realised"], learners["unlucky"]["worst_realised"]) == (
        0.5, 0.75)
    assert board.payoff_realised == {"lucky": {"tree": 0.5}, "unlucky": {"tree": 0.75}}


def test_entrants_with_no_scored_game_come_last_by_name():
    rows = [row("mid", "tree", mistakes=4),
            row("zed", "tree", "aborted:shutdown", 3, 1),
            row("abe", "tree", "incomplete", 3, 1),  # an unknown status: not scored
            row("mid", "gone", "aborted:shutdown", 3, 1)]
    legacy = row("old", "tree")
    del legacy["horizon"]  # recorded before these rules: not scored
    board = rank("t", [*rows, legacy], [])
    assert [(e["learner"], e["rank"]) for e in board.learners] == [
        ("mid", 1), ("abe", None), ("old", None), ("zed", None)]
    zed = by_name(board.learners, "learner")["zed"]
    assert (zed["failed"], zed["unscored"], zed["worst"]) == (0, 1, None)
    assert [(e["adversary"], e["rank"]) for e in board.adversaries] == [("tree", 1),
                                                                         ("gone", None)]


def test_experts_scoring_of_faults():
    rules = GameSpec(EXPERTS, T, None, 4)
    norm = math.sqrt(T * math.log(4))
    crashed = score(rules, {"status": "crash:learner:ValueError", "result": {
        "rounds": 10, "mistakes": 6.0, "regret": 1.5, "expected_regret": 1.25}})
    # loss 1 in each of the 20 rounds it did not play, the best expert losing nothing more
    assert crashed["score"] == float(Fraction(1.25 + 20) / Fraction(norm))
    assert crashed["score_realised"] == float(Fraction(1.5 + 20) / Fraction(norm))
    assert crashed["raw"] == 1.5  # as played
    spoiled = score(rules, {"status": "illegal_move:adversary:costs_range", "result": {
        "rounds": 10, "mistakes": 3.0, "regret": -2.0, "expected_regret": 0.5}})
    assert spoiled["score"] is None  # not scored for the learner
    # the adversary forced nothing, or less when its regret so far is negative
    assert (spoiled["forcing"], spoiled["forcing_realised"]) == (0.0, float(
        Fraction(-2) / Fraction(norm)))


def test_faults_played_through_the_local_driver_rank_as_the_rules_say():
    """Real statuses from the referee: a crash in round 1 and p = 1.5 from round 1 (a
    forfeit at the third fault, as over the network), an instance
    outside the domain in round 2."""
    rules = GameSpec(MISTAKE_BOUND, T, make_class(CLASS))
    learners = {"halving": lambda: LEARNERS.make("halving"),
                "crashes": lambda: CrashingLearner(at=1),
                "p=1.5": lambda: OutOfRangeLearner(at=1)}
    adversaries = {"shattered-tree": lambda: ADVERSARIES.make("shattered-tree"),
                   "outside": OutsideAdversary}
    rows = []
    for lname, learner in learners.items():
        for aname, adversary in adversaries.items():
            result = play(rules, learner(), adversary(), seed=0).to_dict()
            outcome = {"game_id": None, "status": result["status"], "result": result}
            rows.append({"game": MISTAKE_BOUND, "class": CLASS, "learner": lname,
                         "adversary": aname, "seed": 0, "status": result["status"],
                         **score(rules, outcome), "result": result})
    statuses = {(r["learner"], r["adversary"]): r["status"] for r in rows}
    assert statuses[("crashes", "shattered-tree")] == "crash:learner:ZeroDivisionError"
    assert statuses[("p=1.5", "shattered-tree")] == "forfeit:learner:illegal_move"
    assert statuses[("halving", "outside")] == "rule_violation:adversary:instance_domain"
    board = rank("t", rows, [])
    assert [(e["learner"], e["rank"]) for e in board.learners] == [
        ("halving", 1), ("crashes", 2), ("p=1.5", 2)]
    assert board.learners[0]["worst"] == 1.0  # Ldim mistakes against the tree
    assert board.payoff["halving"]["outside"] is None
    assert [e["adversary"] for e in board.adversaries] == ["shattered-tree", "outside"]


def test_a_small_tournament_shows_exact_ties_as_ties(tmp_path: Path, capsys):
    config = tmp_path / "ties.toml"
    config.write_text(
        'learners = ["halving", "soa", "follow-the-leader"]\n'
        'adversaries = ["random-target", "shattered-tree"]\n\n'
        f'[tournament]\nname = "ties"\nrounds = {T}\nseeds = 2\ngames = ["mistake-bound"]\n\n'
        f'[[classes]]\nspec = "{CLASS}"\n')
    data = tmp_path / "data"
    assert main(["tournament", str(config), "--data", str(data), "--workers", "1",
                 "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert "exact fractions" in board["rules"]
    learners = {e["learner"]: e for e in board["learners"]}
    assert learners["halving"]["rank"] == learners["soa"]["rank"] == 1
    assert learners["halving"]["tied_with"] == ["soa"]
    assert learners["halving"]["median_exact"] == learners["soa"]["median_exact"]
    assert learners["halving"]["worst_exact"] == learners["soa"]["worst_exact"] == "1"
    assert learners["follow-the-leader"]["rank"] == 3
    # the terminal and the report say so too (a second run plays nothing, ranks again)
    assert main(["tournament", str(config), "--data", str(data), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "1=  halving" in out and "(tied with soa)" in out and "1=  soa" in out
    page = (data / "reports" / "ties.html").read_text()
    assert "tied with soa (exactly equal: worst 1, median " in page
