"""One filtered page of a tournament's games (the page's games table, issue 44) at 20,000
games, CPU ms a call, beside the same page computed the way the filter did before
(every game read from the index and filtered in Python), in the same run
(``python -m benchmarks.games_filter [--games 20000] [--repeat 20]``).

The tournament is written synthetically (its rows straight through the store); the
figures are this process's CPU (``time.process_time``) around ``--repeat`` calls of
each filter. Tests never time anything: tests/server/web/test_games_filter_cost.py
asserts that one page's SQLite steps do not grow with the tournament.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from littlestone.server.records.rows import TournamentGame
from littlestone.server.records.store import Store
from littlestone.server.web import filters
from littlestone.server.web.data import entrant_name

STATUSES = ("complete", "complete", "complete", "crash:learner:ZeroDivisionError",
            "forfeit:adversary:timeout")
ASKED: list[filters.GameFilters] = [
    {}, {"entrant": "l7.py:Mine"}, {"status": "failed"}, {"status": "crash:*"},
    {"entrant": "a3", "class": "thresholds:n=15"}]


def build(store: Store, games: int) -> None:
    """A tournament of ``games`` games between 40 learner files and 25 adversaries."""
    for key in range(games):
        store.add_tournament_game("t", f"{key:07}", {
            "game_id": None, "status": STATUSES[key % 5], "game": "mistake-bound",
            "class": f"thresholds:n={7 + 8 * (key % 2)}", "learner": f"/srv/l{key % 40}.py:Mine",
            "adversary": f"a{key % 25}", "seed": key, "result": {"rounds": 10, "mistakes": 2}})


def scan(store: Store, asked: filters.GameFilters) -> int:
    """The page as the filter made it before: every game read, filtered in Python."""
    kept: list[TournamentGame] = []
    for row in store.tournament_games("t"):
        shown = (entrant_name(row["learner"], store.data),
                 entrant_name(row["adversary"], store.data))
        if filters.matches(row, asked, shown):
            kept.append(row)
    return len(kept[:100])


def cpu_ms(call: object, repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        call()  # type: ignore[operator]  # (a zero-argument callable)
    return (time.process_time() - start) / repeat * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder))
        build(store, args.games)
        print(f"{args.games} games, load average {os.getloadavg()[0]:.1f}")
        for asked in ASKED:
            new = cpu_ms(lambda a=asked: filters.tournament_games(store, "t", a), args.repeat)
            old = cpu_ms(lambda a=asked: scan(store, a), max(1, args.repeat // 5))
            print(f"{asked!s:50} indexed {new:7.2f} ms   scan (before) {old:7.1f} ms")
        print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
