"""The ladder (issue 41): standings kept ranked game by game equal the ranking rebuilt
from the games, whatever the order the games land and leave in."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from littlestone.server.records.rows import TournamentGame
from littlestone.server.records.scores import Cell, cells_of
from littlestone.server.records.store import Store
from littlestone.server.tournament.ladder import Ladder
from littlestone.server.tournament.ranking import TIED_NAMED, Tally, landed, rank

STATUSES = ("complete", "complete", "complete", "crash:learner:ValueError",
            "timeout:adversary", "aborted", "illegal:adversary:label")


def _game(rng: random.Random, learners: int, adversaries: int, seed: int) -> TournamentGame:
    status = rng.choice(STATUSES)
    mistakes = rng.choice((0, 1, 2, 2, 3))
    return {"game_id": None, "status": status, "game": "mistake-bound", "class": None,
            "learner": f"l{rng.randrange(learners)}",
            "adversary": f"a{rng.randrange(adversaries)}", "seed": seed, "horizon": 6,
            "normaliser_value": 2.0,
            "result": {"rounds": 6 if status == "complete" else 2, "mistakes": mistakes,
                       "expected_mistakes": mistakes - rng.choice((0, 0.5))}}


def _boards(ladder: Ladder) -> tuple[list[object], list[object]]:
    report = ladder.report()
    return list(report.learners), list(report.adversaries)


@pytest.mark.parametrize("trial", range(6))
def test_a_ladder_fed_game_by_game_equals_the_ranking_of_its_games(trial: int) -> None:
    rng = random.Random(trial)
    rows: dict[int, TournamentGame] = {}
    ladder, cells = Ladder("t"), dict[tuple[str, str], Cell]()
    for step in range(120):
        if rows and rng.random() < 0.25:  # a game forgotten (its cell loses it)
            gone = rows.pop(rng.choice(sorted(rows)))
            part, sign = landed(gone), -1
        else:
            row = rows[step] = _game(rng, 5 + trial, 3 + trial % 3, step)
            part, sign = landed(row), 1
        pair = (part.learner, part.adversary)
        cell = cells.setdefault(pair, Cell(*pair))
        cell.add(part, sign)
        ladder.put(Cell.read(*pair, cell.stored()))  # (a copy, as the index hands it)
        if step % 10 == 9:
            rebuilt = rank("t", list(rows.values()), [])
            assert _boards(ladder) == (rebuilt.learners, rebuilt.adversaries), step
    assert ladder.report().learners  # (the field was not empty: the check checked)


def test_a_ladder_names_ties_as_the_tally_does_and_ranks_by_bisection() -> None:
    rng = random.Random(7)
    rows = [_game(rng, 30, 2, seed) for seed in range(200)]
    for i in range(12):  # (twelve equal learners: a tie that names five of eleven)
        rows.append({**_game(rng, 1, 1, 0), "learner": f"same{i}", "status": "complete",
                     "result": {"rounds": 6, "mistakes": 1, "expected_mistakes": 1}})
    ladder, tally = Ladder("t", TIED_NAMED), Tally("t", TIED_NAMED)
    for cell in cells_of(rows, landed):
        ladder.put(cell)
        tally.put(cell)
    report, expected = ladder.report(), tally.report()
    assert (report.learners, report.adversaries) == (expected.learners, expected.adversaries)
    assert any(len(r["tied_with"]) == TIED_NAMED and r["tied"] > TIED_NAMED
               for r in report.learners)
    for line in expected.learners:
        assert ladder.rank_of("learner", line["learner"]) == line["rank"]


def test_stored_cells_read_as_games_land_equal_a_ladder_of_the_rebuilt_cells(
        tmp_path: Path) -> None:
    rng = random.Random(3)
    store = Store(tmp_path)
    followed, seen = Ladder("t"), -1
    keys: list[str] = []
    for step in range(60):
        if keys and rng.random() < 0.2:
            store.drop_tournament_games("t", [keys.pop(rng.randrange(len(keys)))])
        else:
            keys.append(f"k{step}")
            store.add_tournament_game("t", keys[-1], _game(rng, 6, 3, step))
        seen, _, changed = store.score_changes("t", seen)
        for cell in changed:
            followed.put(cell)
    rebuilt = rank("t", store.tournament_games("t"), [])
    assert _boards(followed) == (rebuilt.learners, rebuilt.adversaries)
    store.close()
