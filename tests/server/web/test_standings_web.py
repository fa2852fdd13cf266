"""Issue 41, part A: a competition's standings kept as games land (the index's stored
cells, rebuilt equal from the games), read without the games and answered 304 while
nothing changed; large answers paged; and the smaller attacks on the page: the server's
path in names, another account's running rating game, the banner of a closed
competition, a request with a body, a cookie's ticket without Origin, scores' digits,
the CSV's standing and ``competition export`` without ``--data``."""

from __future__ import annotations

import contextlib
import csv
import importlib
import io
import json
import random
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks.standings import build_field
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.records.rows import TournamentGame
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition import Competition, export, load_competition
from littlestone.server.tournament.competition.config import version_spec
from littlestone.server.tournament.ranking import rank, rank_cells
from littlestone.server.web import attach
from littlestone.server.web.pages import competition_board
from tests.server.web.test_web import _raw, get
from tests.support.competitions import competition_file

standings_module = importlib.import_module("littlestone.server.tournament.competition.standings")

NAME = "week-5"


def game(learner: str, adversary: str, seed: int, status: str = "complete",
         mistakes: float = 2.0, game_id: str | None = None) -> TournamentGame:
    return {"game_id": game_id, "status": status, "message": "", "game": "mistake-bound",
            "class": "thresholds:n=15", "learner": learner, "adversary": adversary,
            "seed": seed, "horizon": 30, "normaliser_value": 4.0,
            "result": {"rounds": 30 if status == "complete" else 3, "mistakes": mistakes,
                       "expected_mistakes": mistakes - 0.5}}


def board_of(report: Any) -> Any:
    return ([(e["learner"], e["rank"], e["worst_exact"], e["median_exact"], e["games"],
              e["failed"], e["failures"], e["unscored"]) for e in report.learners],
            [(e["adversary"], e["rank"], e["forcing_exact"], e["games"], e["unscored"])
             for e in report.adversaries], report.payoff)


def test_the_stored_cells_equal_the_games_as_they_land_are_forgotten_and_are_rebuilt(
        tmp_path: Path) -> None:
    """Each game updates its cell once, in the transaction that records it; a pairing
    forgotten takes its part out; a second write of a pairing counts nothing; and the
    cells rebuilt from the games (an old data folder) rank exactly as the games do."""
    store = Store(tmp_path)
    chance = random.Random(41)
    statuses = ["complete"] * 5 + ["crash:learner:E", "rule_violation:adversary:x",
                                   "aborted:shutdown"]
    rows: dict[str, TournamentGame] = {}
    for i in range(60):
        row = game(f"l{chance.randrange(6)}", f"a{chance.randrange(3)}", i,
                   chance.choice(statuses), chance.randrange(9) + chance.random())
        rows[f"k{i}"] = row
        store.add_tournament_game(NAME, f"k{i}", row)
    store.add_tournament_game(NAME, "k0", game("l9", "a9", 0))  # a second write: ignored
    dropped = [f"k{i}" for i in range(0, 60, 7)]
    store.drop_tournament_games(NAME, dropped)
    kept = [r for k, r in rows.items() if k not in dropped]
    expected = board_of(rank(NAME, kept, []))
    assert board_of(rank_cells(NAME, store.score_cells(NAME), [])) == expected
    # an index written before the cells: its games rebuilt once, equal
    with sqlite3.connect(tmp_path / "littlestone.db") as db:
        db.execute("DELETE FROM score_cells")
        db.execute("DELETE FROM score_stamps")
    assert board_of(rank_cells(NAME, Store(tmp_path).score_cells(NAME), [])) == expected


def test_ties_are_grouped_not_compared_pair_by_pair() -> None:
    """Equal exact scores share a rank and name each other; the next is ranked after
    them all (1, 1, 1, 1, 5)."""
    rows = [game(f"l{i}", "a", 0, mistakes=2.0) for i in range(4)]
    rows.append(game("odd", "a", 0, mistakes=2.5))
    board = rank(NAME, rows, [])
    assert [(e["learner"], e["rank"], len(e["tied_with"])) for e in board.learners] == [
        ("l0", 1, 3), ("l1", 1, 3), ("l2", 1, 3), ("l3", 1, 3), ("odd", 5, 0)]


class Reads:
    """The statements a store's connection runs (sqlite3's trace callback)."""

    def __init__(self, store: Store) -> None:
        self.statements: list[str] = []
        store._db.set_trace_callback(self.statements.append)

    @contextlib.contextmanager
    def counting(self) -> Iterator[list[str]]:
        self.statements.clear()
        yield self.statements


@pytest.mark.parametrize("students", [4, 40])
def test_the_standings_read_no_game_and_a_repeat_reads_only_the_stamp(
        tmp_path: Path, students: int) -> None:
    """The work of a request does not grow with the games: the standings never read the
    games table; asked again with nothing changed, one statement (the stamp); after a
    game lands, only the cells changed since (one), whatever the field's size."""
    data = tmp_path / "data"
    config = load_competition(build_field(data, NAME, students, 3))
    standings_module._FOLLOWED.clear()
    store = Store(data)
    reads = Reads(store)
    with reads.counting() as statements:
        first = standings_module.standings(store, config, data)
    assert not [s for s in statements if "tournament_games" in s]
    assert len(first["versions"]) == students * 3
    with reads.counting() as statements:
        again = standings_module.standings(store, config, data)
    assert again["ranking"] == first["ranking"]
    assert len(statements) == 1 and "score_stamps" in statements[0]
    Store(data).add_tournament_game(NAME, "late", game("halving", "random-target", 99))
    cells: list[int] = []
    original = Store.score_changes

    def spy(self: Store, name: str, since: int) -> Any:
        found = original(self, name, since)
        cells.append(len(found[2]))
        return found

    with reads.counting() as statements, pytest.MonkeyPatch.context() as patch:
        patch.setattr(Store, "score_changes", spy)
        after = standings_module.standings(store, config, data)
    assert cells == [1]  # the one cell that changed, of 3 x (students x 3 + 1)
    assert not [s for s in statements if "tournament_games" in s]
    assert after["games"] == first["games"] + 1
    # and the incremental standings equal the ones computed from scratch
    standings_module._FOLLOWED.clear()
    assert standings_module.standings(Store(data), config, data)["ranking"] == \
        after["ranking"]


# -- a served competition --------------------------------------------------------------

COMPETITION = competition_file(rounds=30, closes=datetime(2026, 12, 2, 8, tzinfo=UTC))


@contextlib.asynccontextmanager
async def served(tmp_path: Path, now: datetime | None = None) -> AsyncIterator[Any]:
    """A server with the competition and its page; ann's rated version v1 with one game
    (its score 0.375 then 2/3 of it), a token each for ann, bob and an admin."""
    data = tmp_path / "data"
    config_path = tmp_path / "week-5.toml"
    config_path.write_text(COMPETITION)
    store = Store(data)
    row = store.add_submission(NAME, "ann", "v1.py:Good", "ab" * 32, 10)
    store.set_verdict(row["id"], "accepted", "learner", None, {"message": "ok"})
    store.set_rating(row["id"], "rated")
    store.start_tournament(NAME, "x")
    spec = version_spec(data.resolve(), row)
    store.add_tournament_game(NAME, "g1", game(spec, "random-target", 0, mistakes=2 / 3 + 1,
                                               game_id="g-ann"))
    server = GameServer(ServerSettings(port=0, data=data))
    clock = (lambda: now) if now is not None else (lambda: datetime.now(UTC))
    competition = Competition(load_competition(config_path), data, unsafe=True, now=clock)
    competition.attach(server)
    server.web = attach(server)  # type: ignore[attr-defined]
    await server.start()
    server.tokens = {who: store.add_token(who) for who in ("ann", "bob")}  # type: ignore[attr-defined]
    server.tokens["admin"] = store.add_token("teacher", "admin")  # type: ignore[attr-defined]
    server.spec, server.config_path = spec, config_path  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        competition.close()
        await server.stop()
        server.web.close()  # type: ignore[attr-defined]


def bearer(server: Any, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.tokens[who]}"}


async def test_the_page_api_and_csv_answer_304_while_nothing_changed(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        base = f"http://127.0.0.1:{server.port}"
        for path in (f"/competitions/{NAME}?part=board", f"/api/competitions/{NAME}",
                     f"/competitions/{NAME}/ranking.csv"):
            status, headers, body = await get(base + path, headers=bearer(server, "bob"))
            assert status == 200 and headers["ETag"], path
            tag = headers["ETag"]
            status, again, body = await get(base + path, headers={
                **bearer(server, "bob"), "If-None-Match": tag})
            assert (status, body, again["ETag"]) == (304, b"", tag), path
            # another viewer's copy is another entity
            status, _, _ = await get(base + path, headers={**bearer(server, "ann"),
                                                           "If-None-Match": tag})
            assert status == 200, path
        # a game lands: the stamp moves, the copy is stale
        Store(tmp_path / "data").add_tournament_game(
            NAME, "g2", game("halving", "random-target", 0))
        status, headers, _ = await get(base + f"/competitions/{NAME}?part=board",
                                       headers={**bearer(server, "bob"), "If-None-Match": tag})
        assert status == 200
        # the page's script sends If-None-Match
        script = (Path(__file__).parents[3] / "littlestone/server/web/static/littlestone.js")
        assert '"If-None-Match": tag' in script.read_text()


async def test_large_answers_are_paged(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        base = f"http://127.0.0.1:{server.port}"
        store = Store(tmp_path / "data")
        for i in range(5):
            store.add_tournament_game(NAME, f"h{i}", game(f"l{i}", "random-target", 0))
        status, _, body = await get(f"{base}/api/tournaments/{NAME}?limit=2&page=2",
                                    headers=bearer(server, "bob"))
        board = json.loads(body)
        assert status == 200 and (board["page"], board["limit"]) == (2, 2)
        assert len(board["learners"]) == 2 and board["learners_total"] == 6
        assert set(board["payoff"]) == {e["learner"] for e in board["learners"]}
        status, _, body = await get(f"{base}/api/tournaments/{NAME}?limit=100000",
                                    headers=bearer(server, "bob"))
        assert json.loads(body)["limit"] == 500  # at most
        status, _, body = await get(f"{base}/api/competitions/{NAME}?limit=1",
                                    headers=bearer(server, "bob"))
        answer = json.loads(body)
        assert len(answer["ranking"]) == 1 and answer["ranking_total"] == 2  # ann, the adversary


async def test_no_name_shows_the_servers_data_path(tmp_path: Path) -> None:
    """Break (fixed): a version's games named it by the server's absolute path
    (``/DATA/competitions/week-5/ann/v1.py:Good``) on /api/games, the pages and the
    tournament's board; now ``ann/v1.py:Good``."""
    async with served(tmp_path) as server:
        base = f"http://127.0.0.1:{server.port}"
        store = Store(tmp_path / "data")
        store.start_game({"game": "mistake-bound", "class": "thresholds:n=15",
                          "learner": server.spec, "adversary": "random-target", "seed": 0,
                          "horizon": 30}, None, "g-ann")
        store.finish_game("g-ann", {"status": "complete", "rounds": 30, "mistakes": 1})
        secret = str((tmp_path / "data").resolve())
        for path in ("/api/games", "/", "/games/g-ann", "/api/games/g-ann",
                     f"/api/tournaments/{NAME}", f"/tournaments/{NAME}", "/class",
                     f"/competitions/{NAME}"):
            status, _, body = await get(base + path, headers=bearer(server, "bob"))
            assert status == 200, path
            assert secret.encode() not in body, path
        games = json.loads((await get(base + "/api/games", headers=bearer(server, "bob")))[2])
        assert games["games"][0]["learner"] == "ann/v1.py:Good"


async def test_another_accounts_running_rating_game_does_not_exist(tmp_path: Path) -> None:
    """Break (fixed): a rating game runs in the rater's process, which the server does not
    broadcast, so another student saw it running, and its rounds. Now it is its
    student's and an admin's only until it ends."""
    async with served(tmp_path) as server:
        base = f"http://127.0.0.1:{server.port}"
        Store(tmp_path / "data").start_game({
            "game": "mistake-bound", "class": "thresholds:n=15", "learner": server.spec,
            "adversary": "random-target", "seed": 1, "horizon": 30}, None, "g-running")
        for who, sees in (("bob", False), ("ann", True), ("admin", True)):
            games = json.loads((await get(base + "/api/games",
                                          headers=bearer(server, who)))[2])["games"]
            assert ("g-running" in [g["game_id"] for g in games]) is sees, who
            for path in ("/api/games/g-running", "/games/g-running",
                         "/api/games/g-running/records", "/api/games/g-running/curve"):
                status, _, _ = await get(base + path, headers=bearer(server, who))
                assert (status != 404) is sees or path.endswith(("records", "curve")), \
                    (who, path, status)


async def test_a_closed_competitions_page_does_not_say_open(tmp_path: Path) -> None:
    """Break (fixed): after the close, until the last version was rated, the page said
    "Open until ..."; and ``serve`` said "submissions open"."""
    closes = datetime(2026, 12, 2, 8, tzinfo=UTC)
    async with served(tmp_path, now=closes + timedelta(hours=1)) as server:
        base = f"http://127.0.0.1:{server.port}"
        Store(tmp_path / "data").add_submission(NAME, "bob", "v1.py:X", "cd" * 32, 10)
        _, _, body = await get(f"{base}/competitions/{NAME}", headers=bearer(server, "bob"))
        assert b"Open until" not in body and b"Closed" in body
    from littlestone.cli.network import competition_banner

    class Door:
        name, config = NAME, load_competition(server.config_path)

        @staticmethod
        def now() -> datetime:
            return closes

    said = competition_banner(Door, "ws://h:1", "http://h:1/")
    assert "open" not in said.replace("opens", "") and "closed" in said


async def test_a_request_with_a_body_gets_a_status(tmp_path: Path) -> None:
    """Break (fixed): any request with a body was dropped without a status."""
    async with served(tmp_path) as server:
        host = f"127.0.0.1:{server.port}"
        answer = await _raw(server.port, (f"POST /login HTTP/1.1\r\nHost: {host}\r\n"
                                          "Content-Length: 5\r\n\r\nhello").encode())
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:100]
        answer = await _raw(server.port, (f"POST /login HTTP/1.1\r\nHost: {host}\r\n"
                                          "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                                          ).encode())
        assert answer.startswith(b"HTTP/1.1 400 "), answer[:100]


async def test_a_cookies_ticket_needs_origin_or_sec_fetch_site(tmp_path: Path) -> None:
    """Break (fixed): a cookie's request that said neither Origin nor Sec-Fetch-Site got
    a play ticket; PROTOCOL.md 3.2 refuses it 403."""
    async with served(tmp_path) as server:
        host = f"127.0.0.1:{server.port}"
        cookie = f"Cookie: littlestone_token={server.tokens['bob']}\r\n"

        async def ask(extra: str) -> bytes:
            return await _raw(server.port, (f"POST /api/play/ticket HTTP/1.1\r\nHost: {host}"
                                            f"\r\n{cookie}{extra}\r\n").encode())

        assert (await ask("")).startswith(b"HTTP/1.1 403 ")
        assert (await ask("Sec-Fetch-Site: same-origin\r\n")).startswith(b"HTTP/1.1 200 ")
        assert (await ask(f"Origin: http://{host}\r\n")).startswith(b"HTTP/1.1 200 ")


def test_scores_show_fixed_digits_and_the_csv_says_provisional_or_final() -> None:
    board: Any = {"competition": NAME, "final": False, "frozen": None, "games": 1,
                  "mode": "last", "closes": None, "versions": [],
                  "ranking": [{"role": "learner", "rank": 1, "entrant": "ann", "version": 1,
                               "score": 2 / 3, "median": 1 / 7, "games": 1, "failed": 0,
                               "sha256": "ab", "builtin": False}]}
    html = competition_board(NAME, board)
    assert "0.6667" in html and "0.6666666" not in html
    rows = list(csv.DictReader(io.StringIO(export(board, "csv"))))
    assert (rows[0]["score"], rows[0]["median"], rows[0]["standing"]) == (
        "0.6667", "0.1429", "provisional")
    assert json.loads(export(board, "json"))["ranking"][0]["score"] == 2 / 3
    final = csv.DictReader(io.StringIO(export({**board, "final": True}, "csv")))
    assert next(final)["standing"] == "final"


def test_export_without_the_competitions_data_folder_is_refused(tmp_path: Path) -> None:
    """Break (fixed): ``competition export week-5.toml`` without ``--data`` printed an
    empty CSV and exited 0 (the default folder holds no such competition)."""
    (tmp_path / "week-5.toml").write_text(COMPETITION)
    Store(tmp_path / "littlestone-data")  # (an index, but not the competition's)
    found = subprocess.run([sys.executable, "-m", "littlestone", "competition", "export",
                            "week-5.toml", "--data", "littlestone-data"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert found.returncode == 2 and found.stdout == ""
    assert len(found.stderr.strip().splitlines()) == 1 and "--data" in found.stderr


def test_an_old_index_gains_the_score_tables(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "littlestone.db") as db:
        db.execute("CREATE TABLE tournament_games (tournament TEXT NOT NULL, key TEXT NOT "
                   "NULL, game_id TEXT, status TEXT NOT NULL, row TEXT NOT NULL, finished "
                   "TEXT NOT NULL, PRIMARY KEY (tournament, key))")
        db.execute("INSERT INTO tournament_games VALUES (?, 'k', NULL, 'complete', ?, 'x')",
                   (NAME, json.dumps(game("l", "a", 0))))
    store = Store(tmp_path)
    assert [(c.learner, c.games) for c in store.score_cells(NAME)] == [("l", 1)]
    store.add_tournament_game(NAME, "k2", game("l", "a", 1))
    assert [(c.learner, c.games) for c in store.score_cells(NAME)] == [("l", 2)]
