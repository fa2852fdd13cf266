"""The tournament page's games filter costs the same at any field size (issue 41's
budget on issue 44's filter): one filtered page's SQLite steps do not grow when the
tournament's games grow tenfold, and it answers what the filter's rules say."""

from __future__ import annotations

from littlestone.server.records.store import Store
from littlestone.server.web import filters

STATUSES = ("complete", "complete", "crash:learner:ZeroDivisionError", "forfeit:adversary:timeout")


def _tournament(store: Store, name: str, games: int) -> None:
    for key in range(games):
        store.add_tournament_game(name, f"k{key:06}", {
            "game_id": None, "status": STATUSES[key % 4], "game": "mistake-bound",
            "class": f"thresholds:n={key % 3}", "learner": f"/srv/l{key % 7}.py:L",
            "adversary": f"a{key % 5}", "seed": key, "result": {}})


def _steps(store: Store, run) -> int:
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    store._db.set_progress_handler(count, 10)
    try:
        run()
    finally:
        store._db.set_progress_handler(None, 10)
    return steps[0]


ASKED: list[filters.GameFilters] = [
    {"entrant": "l3.py:L"}, {"status": "failed"}, {"status": "crash:*", "entrant": "a2"},
    {"class": "thresholds:n=1", "status": "complete"}, {}]


def test_one_filtered_page_reads_as_much_at_ten_times_the_games(tmp_path, monkeypatch):
    monkeypatch.setattr(filters, "COUNT_CAP", 10)  # (both counted past it)
    store = Store(tmp_path)
    _tournament(store, "small", 300)
    _tournament(store, "large", 3000)
    for asked in ASKED:
        small = _steps(store, lambda a=asked: filters.tournament_games(store, "small", a, 2, 10))
        large = _steps(store, lambda a=asked: filters.tournament_games(store, "large", a, 2, 10))
        assert large < 1.5 * small, (asked, small, large)  # (the old scan: 10x)
    page = filters.tournament_games(store, "large", {"status": "complete"}, 1, 10)
    assert (page["total"], page.get("more")) == (10, True)


def test_the_indexed_filter_answers_as_the_rules_say(tmp_path):
    store = Store(tmp_path)
    _tournament(store, "t", 120)
    every = store.tournament_games("t")
    for asked in ASKED:
        shown = [g for g in every if filters.matches(g, asked, (
            g["learner"].removeprefix("/srv/"), g["adversary"]))]
        page = filters.tournament_games(store, "t", asked, 2, 7)
        assert page["total"] == len(shown) and "more" not in page, asked
        assert [g["seed"] for g in page["games"]] == [g["seed"] for g in shown[7:14]], asked
    assert filters.tournament_games(store, "t", {})["statuses"] == sorted(set(STATUSES))
    assert filters.tournament_games(store, "t", {"entrant": "nobody"})["total"] == 0


def test_an_older_index_gains_the_indexes(tmp_path):
    store = Store(tmp_path)
    names = {r["name"] for r in store._db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tournament_games'")}
    assert {"tournament_games_status", "tournament_games_learner",
            "tournament_games_adversary", "tournament_games_class"} <= names
    plan = " ".join(r[3] for r in store._db.execute(
        "EXPLAIN QUERY PLAN SELECT row FROM tournament_games WHERE tournament = 't' AND "
        "json_extract(row, '$.learner') IN ('x') ORDER BY key LIMIT 3"))
    assert "tournament_games_learner" in plan, plan


def test_a_deep_page_reads_no_more_than_the_counted_games(tmp_path, monkeypatch):
    """``?page=1000000`` cannot make one request step through every game before it: the
    page stops at the one holding the ``COUNT_CAP``-th game (before: a deep page read the
    whole index, the old scan's cost, for each request)."""
    monkeypatch.setattr(filters, "COUNT_CAP", 20)
    store = Store(tmp_path)
    _tournament(store, "large", 3000)
    near = _steps(store, lambda: filters.tournament_games(store, "large", {}, 3, 10))
    deep = _steps(store, lambda: filters.tournament_games(store, "large", {}, 1_000_000, 10))
    assert deep < 1.5 * near, (near, deep)
    assert filters.tournament_games(store, "large", {}, 1_000_000, 10)["page"] == 3
