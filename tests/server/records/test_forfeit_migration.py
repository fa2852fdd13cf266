"""An index written before issue 44's scoring (a learner's fault credited to its
adversary) is re-scored once when it is opened: its rows' ``forcing`` cleared and its
stored cells rebuilt, so that its board is the one its games rank to today."""

from __future__ import annotations

import sqlite3
from fractions import Fraction

from littlestone.server.records import scores
from littlestone.server.records.rows import TournamentGame
from littlestone.server.records.store import Store
from littlestone.server.tournament import ranking
from littlestone.server.web import data


def _old_landed(row: TournamentGame) -> scores.Landed:
    """The rule before: a learner's fault credited its figure to the adversary."""
    part = ranking.landed(row)
    if row["fault"] == "learner":
        return scores.Landed(part.learner, part.adversary, part.status,
                             part.learner_figures, part.learner_figures)
    return part


def _row(key: int, learner: str, adversary: str, status: str, mistakes: int
         ) -> TournamentGame:
    fault = ranking.fault(status)
    figure = (mistakes + (10 - 3 if fault == "learner" else 0)) / 4
    return {"game_id": None, "status": status, "game": "mistake-bound",
            "class": "thresholds:n=15", "learner": learner, "adversary": adversary,
            "seed": key, "horizon": 10, "normaliser_value": 4.0, "fault": fault,
            "score": figure, "score_realised": figure,
            "forcing": figure if fault != "adversary" else 0.0,  # (the old credit)
            "forcing_realised": figure if fault != "adversary" else 0.0,
            "result": {"rounds": 3 if fault == "learner" else 10, "mistakes": mistakes}}


def _board(store: Store) -> list[tuple[str, object, object]]:
    data._BOARDS.clear()
    board = data.tournament(store, "t")
    assert board is not None
    return [(a["adversary"], a.get("forcing_exact"), a.get("won_by_forfeit"))
            for a in board["adversaries"]]


def test_an_old_index_is_rescored_once_at_open(tmp_path):
    scores.set_scorer(_old_landed)
    try:
        store = Store(tmp_path)
        store.start_tournament("t", "x")
        rows = [_row(0, "soa", "tree", "complete", 4),
                _row(1, "crashy", "tree", "crash:learner:ZeroDivisionError", 2),
                _row(2, "soa", "easy", "complete", 1),
                _row(3, "crashy", "easy", "complete", 3)]
        for key, row in enumerate(rows):
            store.add_tournament_game("t", f"k{key}", row)
        store._db.execute("DELETE FROM migrations WHERE name = 'forfeits-not-credited'")
        old = _board(store)
        store.close()
    finally:
        scores.set_scorer(ranking.landed)
    # the old credit: tree's median over soa (1) and crashy (9/4, credited) is 13/8
    assert ("tree", str(Fraction(13, 8)), 0) in old
    store = Store(tmp_path)
    games = store.tournament_games("t")
    assert [g["forcing"] for g in games if g["fault"] == "learner"] == [None]
    assert [g["forcing"] for g in games if g["fault"] != "learner"] == [1.0, 0.25, 0.75]
    fresh = ranking.Tally("t", ranking.TIED_NAMED)
    for cell in scores.cells_of(games, ranking.landed):
        fresh.put(cell)
    board = _board(store)
    assert board == [(a["adversary"], a.get("forcing_exact"), a.get("won_by_forfeit"))
                     for a in fresh.report().adversaries]
    assert ("tree", "1", 1) in board  # (only soa's game scored; crashy's won by forfeit)
    store.close()
    db = sqlite3.connect(tmp_path / "littlestone.db")
    assert db.execute("SELECT COUNT(*) FROM migrations WHERE name = "
                      "'forfeits-not-credited'").fetchone() == (1,)
    generation = db.execute("SELECT generation FROM score_stamps").fetchone()
    db.close()
    Store(tmp_path).close()  # (once: a second open rebuilds nothing)
    db = sqlite3.connect(tmp_path / "littlestone.db")
    assert db.execute("SELECT generation FROM score_stamps").fetchone() == generation
    db.close()
