"""One render of the web page's game and tournament pages on the Jinja2 templates
(``server/web/templates``), next to the f-string renderer they replaced
(:mod:`benchmarks.fstring_pages`), in the same run: ``python -m benchmarks.pages``.

The game page: a finished game's summary, its curve (2,000 points, drawn as SVG) and a
page of 20 replay rows. The tournament page: a leaderboard of 48 entrants (24 learners,
24 adversaries, a 24 x 24 payoff heatmap) and 96 failed games listed. Both renderers
get the same data; the text they show is checked equal before anything is timed.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from benchmarks import fstring_pages
from littlestone.server.tournament.ranking import rank
from littlestone.server.web import pages

if TYPE_CHECKING:
    from littlestone.server.records.rows import TournamentGame
    from littlestone.server.tournament.report import Curve
    from littlestone.server.web.data import Board, PageGame, Rounds

#: Entrants on each side of the tournament (48 in all).
SIDE = 24


def game_data() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A finished 2,000-round game: its row, its curve and a page of its rounds."""
    rounds = 2000
    game = {"game_id": "20261124T120000000000Z-0a1b2c", "game": "mistake-bound",
            "class": "thresholds:n=1023", "learner": "remote:alice", "adversary": "shattered-tree",
            "experts": None, "horizon": rounds, "round": rounds, "mistakes": 10.0,
            "expected_mistakes": 9.75, "regret": None, "expected_regret": None,
            "status": "complete", "seed": 7, "tournament": None, "started": "2026-11-24T12:00Z",
            "finished": "2026-11-24T12:01Z", "bound": 10.0,
            "bound_name": "Ldim(H), the minimax value (UML Thm 21.7)", "tree": False,
            "live": False}
    ts = list(range(1, rounds + 1))
    curve = {"t": ts, "value": [float(min(10, t.bit_length())) for t in ts],
             "expected": [min(9.75, t.bit_length() * 0.97) for t in ts]}
    records = {"game_id": game["game_id"], "rounds": rounds, "start": 41, "status": "complete",
               "records": [{"t": t, "x": (t * 37) % 1024, "p": 0.5, "y": t % 2,
                            "prediction": 1, "mistakes": 7, "version_space": 1024 >> (t % 10)}
                           for t in range(41, 61)]}
    return game, curve, records


def tournament_rows() -> list[dict[str, Any]]:
    """The games of a tournament of 24 learners and 24 adversaries (one game a pair;
    96 of them failed), as its index keeps them."""
    rows = []
    for i in range(SIDE):
        for j in range(SIDE):
            failed = (i * SIDE + j) % 6 == 0
            mistakes = (i + j) % 13
            rows.append({
                "game_id": f"g{i}-{j}", "status": "crash:learner:ValueError" if failed
                else "complete", "game": "mistake-bound", "class": "thresholds:n=1023",
                "learner": f"student{i:02d}.py:Learner", "adversary": f"team{j:02d}.py:Adv",
                "seed": 1, "horizon": 100, "normaliser_value": 10.0, "message": "",
                "result": {"rounds": 100 if not failed else 3, "mistakes": mistakes,
                           "expected_mistakes": mistakes - 0.5}})
    return rows


def tournament_board() -> dict[str, Any]:
    """That tournament's board, as the page's data module makes it."""
    rows = tournament_rows()
    board = dict(rank("cup", cast("list[TournamentGame]", rows), []).leaderboard())
    board["games"] = len(rows)
    return board


def board_data_seconds(repeat: int) -> float:
    """For scale: the data work of the same tournament's page request (its 576 games
    read from a data folder's index and ranked: ``data.tournament``), best of
    ``repeat``."""
    from littlestone.server.records.store import Store
    from littlestone.server.web import data

    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder))
        store.start_tournament("cup", "x")
        for row in tournament_rows():
            store.add_tournament_game("cup", row["game_id"], cast("TournamentGame", row))
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            data.tournament(store, "cup")
            best = min(best, time.perf_counter() - started)
        store.close()
    return best


def text_of(page: str) -> str:
    """What a page shows: its text, unescaped, whitespace collapsed (quotes and
    whitespace between tags differ between the two renderers; the text may not)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def best_of(repeat: int, count: int, render: Callable[[], str]) -> float:
    """The shortest time of one render, over ``repeat`` runs of ``count`` renders."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(count):
            render()
        best = min(best, (time.perf_counter() - started) / count)
    return best


def bench_pages(repeat: int = 5, count: int = 50
                ) -> list[tuple[str, float, float, int, int]]:
    """(page, seconds a render on the templates, seconds with the f-strings, and the
    page's bytes each way)."""
    game, curve, records = game_data()
    board = tournament_board()
    cases = {
        "game page (2,000-point curve, 20 replay rows)": (
            lambda: pages.game_page(cast("PageGame", game), cast("Curve", curve),
                                    cast("Rounds", records), "alice"),
            lambda: fstring_pages.game_page(game, curve, records, "alice")),
        f"tournament page ({2 * SIDE} entrants, {SIDE} x {SIDE} heatmap)": (
            lambda: pages.tournament_page("cup", cast("Board", board), "alice"),
            lambda: fstring_pages.tournament_page("cup", board, "alice")),
    }
    out = []
    for label, (ours, theirs) in cases.items():
        assert text_of(ours()) == text_of(theirs()), label  # the same page, both ways
        # alternate, so that a noisy moment hits both
        times = [(best_of(1, count, ours), best_of(1, count, theirs)) for _ in range(repeat)]
        out.append((label, min(t[0] for t in times), min(t[1] for t in times),
                    len(ours().encode()), len(theirs().encode())))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer renders")
    args = parser.parse_args(argv)
    rows = bench_pages(2, 10) if args.quick else bench_pages()
    print(f"{'page render':<52} {'templates':>11} {'f-strings':>11} {'ratio':>7}  bytes")
    for label, ours, theirs, size, their_size in rows:
        print(f"{label:<52} {ours * 1000:>9.3f}ms {theirs * 1000:>9.3f}ms "
              f"{theirs / ours:>6.2f}x  {size:,} vs {their_size:,}")
    print("ratio: the f-strings' time over the templates' (> 1: the templates are faster)")
    print(f"for scale, the tournament page's data (576 games from the index, ranked): "
          f"{board_data_seconds(2 if args.quick else 5) * 1000:.1f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
