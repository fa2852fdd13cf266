"""A competition's rating and checks against the deadline night's attacks (issue 41):
the server killed with ``kill -9`` mid-rating leaves no process behind and no game
recorded twice; the raters are lanes, fair across students, and a slow student slows
only itself."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, cast

import pytest

from benchmarks import students
from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.protocol.wire import Submit, Submitted
from littlestone.sandbox import Sandbox
from littlestone.sandbox.kernel import descendants
from littlestone.server.records.logged import play_logged
from littlestone.server.records.rows import TournamentGame
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition import (
    Competition,
    Rater,
    load_competition,
    rate_version,
)
from littlestone.server.tournament.run import _key_of as _key
from tests.support.competitions import competition_file

# a field of one built-in learner and one adversary; a version's rating is two games
LIMITS = {"move_deadline": 1.0, "time_bank": 0.5}
COMPETITION = competition_file(limits=LIMITS)

# a learner that takes a tenth of a second a move: a game of 40 rounds lasts seconds
SLOWISH = '''"""Halving, slowly."""
import time

from littlestone.learners.halving import Halving


class Slowish(Halving):
    """Halving, a tenth of a second a move."""

    def predict(self, x):
        time.sleep(0.1)
        return super().predict(x)
'''

# the server's stand-in: its rater rates the one accepted version, until killed
SERVER = """
import sys, time
from pathlib import Path
from littlestone.server.records.rows import TournamentGame
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition import Rater, load_competition

config, data, unsafe = load_competition(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1"
rater = Rater(config, data, unsafe, lambda: Store(data), lambda: None)
rater.start()
time.sleep(600)
"""


def _accepted(data: Path, account: str, source: str) -> int:
    """A version stored and accepted, as the door leaves it (its check skipped)."""
    store = Store(data)
    row = store.add_submission("week-5", account, "mine.py:Slowish", "ab" * 32, len(source))
    path = data / row["path"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    store.set_verdict(row["id"], "accepted", "learner", None, {"checks": []})
    return int(row["id"])


class Version(NamedTuple):
    """A version accepted in a competition's data folder, not rated yet."""

    config: Path
    data: Path
    ident: int
    unsafe: bool


def slowish_version(tmp_path: Path) -> Version:
    """ann's :data:`SLOWISH` accepted in ``tmp_path``'s competition (its rating, two games
    of some seconds each, is long enough to be caught mid-game)."""
    config = tmp_path / "c.toml"
    config.write_text(COMPETITION)
    data = tmp_path / "data"
    return Version(config, data, _accepted(data, "ann", SLOWISH),
                   Sandbox.unavailable() is not None)


def own_game_running(store: Store, each_turn: Callable[[], object] = lambda: None,
                     seconds: float = 120) -> None:
    """Wait until a version's own game runs: not the field's built-in pair, halving
    against random-target, which is played first and ends in a blink. ``each_turn``
    runs between two looks (it may assert, or skip the test)."""
    deadline = time.monotonic() + seconds
    while not any(g["status"] == "running" and g["learner"] != "halving"
                  for g in store.games(limit=20)):
        assert time.monotonic() < deadline, "no game of the version started"
        each_turn()
        time.sleep(0.02)


def until_its_game_runs(data: Path, rating: subprocess.Popen[bytes]) -> None:
    """Wait until the version's own game runs in ``data``, played by ``rating`` (a
    process that rates it, which must not have ended meanwhile)."""

    def alive() -> None:
        assert rating.poll() is None

    own_game_running(Store(data), alive)


def each_pairing_recorded_once(data: Path) -> Store:
    """After the restart: the version's two games are complete, and each of its pairings
    is recorded by one game (returns the store)."""
    store = Store(data)
    rows = store.tournament_games("week-5")
    assert len(rows) == 2 and {r["status"] for r in rows} == {"complete"}
    recorded = [g["pairing"] for g in store.games(limit=100) if g["pairing"]]
    assert sorted(recorded) == sorted(f"week-5|{_key(r)}" for r in rows)
    return store


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` that still run (a zombie has ended)."""
    living = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.append(pid)
    return living


@pytest.mark.slow
def test_kill_9_of_the_server_mid_rating_leaves_no_process_and_no_double(
        tmp_path: Path) -> None:
    """The issue's attack: the rating's worker is a grandchild through the fork server,
    which the rating process's death signal did not reach; it refereed on after the
    server died. Now every level dies with the one above it; the restart plays what is
    missing, and no pairing is recorded twice."""
    version = slowish_version(tmp_path)
    server = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SERVER),
                               str(version.config), str(version.data),
                               "1" if version.unsafe else "0"], cwd=Path.cwd(),
                              start_new_session=True)
    try:
        until_its_game_runs(version.data, server)
        tree = [p for p in descendants(server.pid, bubblewrap=False, living=True)
                if p != server.pid]
        assert len(tree) >= 3  # the rating process, its fork server, a field worker
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        gone_by = time.monotonic() + 30.0  # (at once when idle; a loaded machine's slack)
        while _alive(tree) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert _alive(tree) == []  # (main: the fork server and its workers live on)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    # the restart: the version is queued again and rated; each pairing once
    assert Store(version.data).resume_submissions("week-5") == 1
    rate_version(load_competition(version.config), version.data, version.ident,
                 unsafe=version.unsafe)
    row = each_pairing_recorded_once(version.data).submission(version.ident)
    assert row is not None and row["rating"] == "rated"


def test_a_pairing_is_recorded_by_one_game_at_most(tmp_path: Path) -> None:
    """A second game of a recorded pairing (a killed server's orphan, a second rater) is
    not the pairing's: ``games.pairing`` is unique, and a second write is ignored."""
    game = GameSpec(MISTAKE_BOUND, 8, make_class("thresholds:n=7"))
    first, second = (play_logged(game, LEARNERS.make("halving"),
                                 ADVERSARIES.make("random-target"), 1, tmp_path).game_id
                     for _ in range(2))
    store = Store(tmp_path)

    def row(game_id: str) -> TournamentGame:
        return cast(TournamentGame, {
            "game_id": game_id, "status": "complete", "game": "mistake-bound", "horizon": 8,
            "normaliser_value": 3.0, "learner": "halving", "adversary": "random-target",
            "seed": 1, "class": "thresholds:n=7", "result": {"rounds": 8, "mistakes": 1}})

    assert store.add_tournament_game("t", "k", row(first))
    assert not store.add_tournament_game("t", "k", row(second))
    games = {g["game_id"]: g["pairing"] for g in store.games(limit=10)}
    assert games == {first: "t|k", second: None}
    db = sqlite3.connect(tmp_path / "littlestone.db")
    try:
        with pytest.raises(sqlite3.IntegrityError):
            db.execute("UPDATE games SET pairing = 't|k' WHERE game_id = ?", (second,))
    finally:
        db.close()


# a learner that answers each move just under the deadline (1 s): honest, and slow (0.3 s
# to spare a move: a loaded machine's slack, which the time bank alone would not give)
SLOW = students.slow_rating("Slowish", 0.7, after=0)
HONEST = students.honest("Slowish")


@pytest.mark.slow
def test_a_slow_student_holds_one_lane_and_pays_its_own_overrun(tmp_path: Path) -> None:
    """The issue's attack: a version that answers each move just under the deadline held
    the one rater for rounds x deadline a game, and everyone queued behind it. Now the
    other lane rates the honest version meanwhile, and the slow one's rating stops at
    ``rating_seconds``: its games not played by then are its fault (``over_time``).
    (The test lasts ``rating_seconds``: the slow version's rating is cut there.)"""
    config_path = tmp_path / "c.toml"
    # (a slow game lasts 40 x 0.7 s: over the 20 s; an honest rating, some 2 s on
    # an idle machine, under 10 s at load 30 (benchmarks/README.md: deadline, alone))
    config_path.write_text(competition_file(limits=LIMITS, rating_seconds=20))
    config = load_competition(config_path)
    data = tmp_path / "data"
    slow = _accepted(data, "sam", SLOW)
    honest = _accepted(data, "ann", HONEST)
    rater = Rater(config, data, Sandbox.unavailable() is not None, lambda: Store(data),
                  lambda: None, lanes=2)
    rater.start()
    try:
        store = Store(data)
        seen_both = False
        deadline = time.monotonic() + 240
        while True:
            ratings = {ident: got["rating"] if (got := store.submission(ident)) else None
                       for ident in (slow, honest)}
            seen_both = seen_both or set(ratings.values()) == {"rating"}
            if set(ratings.values()) <= {"rated", "failed"}:
                break
            assert time.monotonic() < deadline, ratings
            time.sleep(0.05)
    finally:
        rater.stop()
    assert seen_both  # (main: one rater, one version at a time)
    assert ratings == {slow: "rated", honest: "rated"}
    by_learner: dict[str, set[str]] = {}
    for row in store.tournament_games("week-5"):
        if "/" not in row["learner"]:
            continue  # (the built-in's game)
        by_learner.setdefault(row["learner"].rpartition("/")[0].rpartition("/")[2],
                              set()).add(row["status"])
    assert by_learner == {"sam": {"over_time:learner"}, "ann": {"complete"}}


def test_the_next_version_rated_is_the_oldest_waiting_students(tmp_path: Path) -> None:
    """Fair lanes: a token's newer version supersedes its older one still queued (and
    keeps its place); once a token's version is taken, the others who waited go first."""
    store = Store(tmp_path)

    def accepted(account: str) -> int:
        row = store.add_submission("week-5", account, "a.py:A", account * 32, 10)
        store.set_verdict(row["id"], "accepted", "learner", None, {})
        return int(row["id"])

    ann1, ann2 = accepted("ann"), accepted("ann")
    bob1 = accepted("bob")
    superseded = store.submission(ann1)
    assert superseded is not None and superseded["rating"] == "superseded"
    first = store.claim_next("week-5")
    assert first is not None and first["id"] == ann2  # (ann waited since her first)
    ann3 = accepted("ann")
    second, third = store.claim_next("week-5"), store.claim_next("week-5")
    assert [second and second["id"], third and third["id"]] == [bob1, ann3]
    assert store.claim_next("week-5") is None


# fast in its own checks (run with --in-sandbox), 0.5 s a move in the refereed check games
def slow_in_check_games(tag: str = "") -> str:
    return students.slow_check("Slowish", 0.5, tag=tag)


class _Disk:
    """The lobby's disk ledger, with room for everything."""

    def check(self, accounts: object, estimate: int, what: str = "game") -> None:
        pass


@pytest.mark.slow
def test_two_tokens_slow_in_their_check_games_hold_up_no_honest_check(
        tmp_path: Path) -> None:
    """The issue's attack: two tokens whose files answer fast in their own checks and
    slowly in the refereed check games held both check workers, and an honest submit
    waited a minute. Now each holds one lane (one check a token), and the honest
    verdict comes back while theirs are still being checked."""
    config_path = tmp_path / "c.toml"
    # (the slow checks are cut at check_seconds: the test lasts that long; an honest
    # check is some 1 s on an idle machine, 3 s at load 30 (benchmarks/README.md))
    config_path.write_text(competition_file(limits=LIMITS, check_seconds=12))
    competition = Competition(load_competition(config_path), tmp_path / "data",
                              unsafe=Sandbox.unavailable() is not None)

    def message(source: str) -> Submit:
        return {"type": "submit", "competition": None, "agent": "mine.py:Slowish",
                "source": source.encode()}

    async def rush() -> tuple[Submitted, list[str]]:
        slow = [asyncio.ensure_future(competition.submit(
            account, message(slow_in_check_games(account)),
            _Disk()))  # type: ignore[arg-type]
            for account in ("sam", "sue")]
        store = Store(tmp_path / "data")
        while len(store.submissions("week-5")) < 2:  # (both checks under way)
            await asyncio.sleep(0.05)
        honest = await competition.submit("ann", message(HONEST),
                                          _Disk())  # type: ignore[arg-type]
        states = [v["verdict"] for v in store.submissions("week-5") if v["account"] != "ann"]
        await asyncio.gather(*slow)
        return honest, states

    try:
        honest, slow_states = asyncio.run(rush())
    finally:
        competition.close()
    assert honest["verdict"] == "accepted"
    assert slow_states == ["checking", "checking"]  # (main: ann waited behind both)


# the server's stand-in for a check: its door checks one file, until killed
CHECKING_SERVER = """
import sys
from pathlib import Path
from littlestone.server.tournament.competition import Competition, load_competition

competition = Competition(load_competition(sys.argv[1]), Path(sys.argv[2]),
                          unsafe=sys.argv[3] == "1")
competition.enter("sam", "mine.py:Slowish", Path(sys.argv[4]).read_bytes())
"""


@pytest.mark.slow
def test_kill_9_of_the_server_mid_check_leaves_no_process_and_loses_no_version(
        tmp_path: Path) -> None:
    config_path = tmp_path / "c.toml"
    config_path.write_text(COMPETITION)
    data = tmp_path / "data"
    source = tmp_path / "mine.py"
    source.write_text(slow_in_check_games())
    unsafe = Sandbox.unavailable() is not None
    server = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHECKING_SERVER),
                               str(config_path), str(data), "1" if unsafe else "0",
                               str(source)], start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        tree: list[int] = []
        while len(tree) < 2:  # (its sandbox and the check game's opponent's host)
            assert time.monotonic() < deadline, "no check started"
            assert server.poll() is None
            time.sleep(0.2)
            tree = [p for p in descendants(server.pid, bubblewrap=False, living=True)
                    if p != server.pid]
        time.sleep(1.0)  # (into the check games)
        tree = [p for p in descendants(server.pid, bubblewrap=False, living=True)
                if p != server.pid]
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        gone_by = time.monotonic() + 30.0  # (at once when idle; a loaded machine's slack)
        while _alive(tree) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert _alive(tree) == []
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    store = Store(data)
    store.resume_submissions("week-5")
    (row,) = store.submissions("week-5")  # (kept, refused as interrupted: sent again)
    assert (row["verdict"], row["reason"]) == ("refused", "interrupted")
    assert store.submitted_since("week-5", "sam", 24) == 0
