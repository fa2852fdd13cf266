"""A sampled tournament's live page ranks it as its run does (each line's rating and
interval, ``schedule`` "sampled"), once a stamp of its stored scores; a round robin's
says "exact"."""

from __future__ import annotations

import json
from pathlib import Path

from littlestone.server.records.store import Store
from littlestone.server.tournament import load_config, run_tournament
from littlestone.server.web import data
from littlestone.server.web.pages import leaderboard as leaderboard_html

LEARNERS = ["halving", "soa", "consistent", "hedge"]
ADVERSARIES = ["random-target", "shattered-tree", "iid", "randomized-value"]


def _run(folder: Path, schedule: str) -> Store:
    path = folder / f"{schedule}.toml"
    path.write_text(
        f"learners = {json.dumps(LEARNERS)}\nadversaries = {json.dumps(ADVERSARIES)}\n"
        f'[tournament]\nname = "small"\nrounds = 12\nseeds = 1\nschedule = "{schedule}"\n'
        'games_per_version = 2\n[[classes]]\nspec = "thresholds:n=15"\n')
    run_tournament(load_config(path), folder / "data", 1, progress=False)
    return Store(folder / "data")


def test_a_sampled_tournaments_page_shows_its_intervals(tmp_path, monkeypatch):
    store = _run(tmp_path, "sampled")
    field = store.tournament_schedule("small")
    assert field is not None and field["learners"] == LEARNERS and field["spaces"] == 1
    assert len(store.tournament_games("small")) < len(LEARNERS) * len(ADVERSARIES)
    board = data.tournament(store, "small")
    assert board is not None and board["schedule"] == "sampled"
    rated = [e for e in board["learners"] if e.get("rating") is not None]
    assert rated and all(e["rating_low"] <= e["rating"] <= e["rating_high"] for e in rated)
    html = leaderboard_html(board)
    assert ">exact<" not in html and " [" in html
    ranked = []  # (once a stamp: a second look, nothing changed, ranks nothing again)
    monkeypatch.setattr(data, "rank_sampled", lambda *a: ranked.append(a))
    assert data.tournament(store, "small") == board and ranked == []


def test_a_round_robins_page_says_exact(tmp_path):
    store = _run(tmp_path, "round-robin")
    assert store.tournament_schedule("small") is None
    board = data.tournament(store, "small")
    assert board is not None and "schedule" not in board
    assert ">exact<" in leaderboard_html(board)


def test_a_sampled_board_is_ranked_again_at_most_every_few_seconds(tmp_path, monkeypatch):
    """Games landing faster than the model is fitted (a big sampled field) do not keep
    a core fitting for a page open on it: a new stamp within ``SAMPLED_EVERY_S`` of the
    last ranking is answered with the board as ranked then; after it, ranked again."""
    store = _run(tmp_path, "sampled")
    assert data.tournament(store, "small") is not None
    ranked = []
    real = data.rank_sampled
    monkeypatch.setattr(data, "rank_sampled", lambda *a: ranked.append(a) or real(*a))
    stamp = store.score_stamp("small")
    monkeypatch.setattr(Store, "score_stamp", lambda self, name: stamp + 1)  # (a game landed)
    assert data.tournament(store, "small") is not None and ranked == []
    key = (str(store.data), "small")
    seen, _, board = data._SAMPLED[key]
    data._SAMPLED[key] = (seen, 0.0, board)  # (its time has come)
    assert data.tournament(store, "small") is not None and len(ranked) == 1
