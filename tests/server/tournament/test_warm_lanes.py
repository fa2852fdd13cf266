"""The warm rating lanes (issue 41: a rating's fixed cost): a lane's process is started
once and rates each version in a child it forks, which dies with it, as the lane dies
with the server, ``kill -9`` included; a version accepted is claimed at once, not at the
lane's next poll; a child's fork server is forked from it, not started cold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from littlestone.cli import main
from littlestone.sandbox import Sandbox
from littlestone.sandbox.kernel import descendants
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition import Rater, config, load_competition, rater
from tests.server.tournament.test_rating_lanes import (
    COMPETITION,
    HONEST,
    SLOWISH,
    _accepted,
    _alive,
    own_game_running,
)

pytestmark = pytest.mark.slow


def _rated(store: Store, idents: list[int], seconds: float = 180) -> dict[int, str]:
    deadline = time.monotonic() + seconds
    while True:
        ratings = {i: str(row["rating"]) if (row := store.submission(i)) else "None"
                   for i in idents}
        if set(ratings.values()) <= {"rated", "failed"}:
            return ratings
        assert time.monotonic() < deadline, ratings
        time.sleep(0.05)


def test_one_warm_lane_rates_every_version_in_a_child_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lane's process is started once: two versions are rated by two children of the
    same lane process, each the leader of its own group (what the server kills when a
    version's time is up), and the lane lives on after them."""
    config_path = tmp_path / "c.toml"
    config_path.write_text(COMPETITION)
    data = tmp_path / "data"
    honest = HONEST.replace("Honest", "Slowish")
    first, second = _accepted(data, "ann", honest), _accepted(data, "bob", honest)
    children: list[tuple[int, int, int]] = []  # (lane, child, child's group)

    class Watched(rater.WarmLane):
        def _line(self, seconds: float | None) -> str | None:
            line = super()._line(seconds)
            if line is not None and line.startswith("started "):
                child = int(line.split()[1])
                group, until = 0, time.monotonic() + 10
                while group != child and time.monotonic() < until:  # (it sets it first)
                    group = os.getpgid(child)
                children.append((self.process.pid, child, group))
            return line

    monkeypatch.setattr(rater, "WarmLane", Watched)
    lanes = Rater(load_competition(config_path), data, Sandbox.unavailable() is not None,
                  lambda: Store(data), lambda: None, lanes=1)
    lanes.start()
    try:
        store = Store(data)
        assert _rated(store, [first, second]) == {first: "rated", second: "rated"}
        warm = lanes._lanes[0]
        assert warm.process.poll() is None  # (still warm)
    finally:
        lanes.stop()
    assert [lane for lane, _, _ in children] == [warm.process.pid] * 2
    assert len({child for _, child, _ in children}) == 2
    assert all(group == child for _, child, group in children)
    assert warm.process.poll() is not None  # (stopped with the rater)
    assert "Traceback" not in (data / "competitions" / "week-5" / "rating.log").read_text()


# the server's stand-in, idle: its warm lanes wait for a version
IDLE_SERVER = """
import sys, time
from pathlib import Path
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition import Rater, load_competition

config, data = load_competition(sys.argv[1]), Path(sys.argv[2])
rater = Rater(config, data, True, lambda: Store(data), lambda: None, lanes=2)
rater.start()
time.sleep(600)
"""


def test_kill_9_of_an_idle_server_ends_its_warm_lanes(tmp_path: Path) -> None:
    """The lanes are warm before any version comes, and ``kill -9`` of the server ends
    them within 2 s (each dies with the server: its death signal)."""
    config_path = tmp_path / "c.toml"
    config_path.write_text(COMPETITION)
    server = subprocess.Popen([sys.executable, "-c", textwrap.dedent(IDLE_SERVER),
                               str(config_path), str(tmp_path / "data")], cwd=Path.cwd(),
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            lanes = [p for p in descendants(server.pid, bubblewrap=False, living=True)
                     if b"--lane" in Path(f"/proc/{p}/cmdline").read_bytes()]
            if len(lanes) == 2:
                break
            assert time.monotonic() < deadline and server.poll() is None, lanes
            time.sleep(0.05)
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        gone_by = time.monotonic() + 2.0
        while _alive(lanes) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert _alive(lanes) == []
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_a_version_accepted_is_claimed_without_waiting_for_a_poll(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The door wakes the lanes when it accepts a version: with an hour between two
    polls, a version accepted while the lane waits is still rated."""
    monkeypatch.setattr(rater, "RATER_POLL_S", 3600.0)
    config_path = tmp_path / "c.toml"
    config_path.write_text(COMPETITION)
    data = tmp_path / "data"
    Store(data)
    waiting = threading.Event()
    lanes = Rater(load_competition(config_path), data, Sandbox.unavailable() is not None,
                  lambda: Store(data), waiting.set, lanes=1)
    lanes.start()
    try:
        assert waiting.wait(120)  # (the lane found nothing: it waits for an hour)
        ident = _accepted(data, "ann", HONEST.replace("Honest", "Slowish"))
        lanes.wake()
        assert _rated(Store(data), [ident]) == {ident: "rated"}
    finally:
        lanes.stop()


# a process that forks its fork server, has a worker run, and waits to be killed
FORKED = """
import os, sys, time
from littlestone.server.net.hosts import fork_server
from littlestone.server.tournament.competition.lane import fork_server_here

server = fork_server_here()
with fork_server().Pool(1) as pool:
    worker = pool.apply(os.getppid)
print(server, worker, flush=True)
time.sleep(600)
"""


def test_a_childs_fork_server_is_forked_from_it_and_dies_with_it() -> None:
    """A version's child forks multiprocessing's fork server from itself (its modules
    imported already) rather than starting a new Python: the fork server is its child,
    the workers come from it, and it dies with the child, ``kill -9`` included."""
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(FORKED)],
                             stdout=subprocess.PIPE, cwd=Path.cwd(), start_new_session=True)
    try:
        assert child.stdout is not None
        server, worker = map(int, child.stdout.readline().split())
        stat = Path(f"/proc/{server}/stat").read_text().rpartition(")")[2].split()
        assert int(stat[1]) == child.pid  # (its parent: the child, not a new Python's)
        assert worker == server
        cmdline = Path(f"/proc/{server}/cmdline").read_bytes()
        assert b"forkserver" not in cmdline  # (a cold one runs `-c ...forkserver...`)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        gone_by = time.monotonic() + 2.0
        while _alive([server]) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert _alive([server]) == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_competition_rate_needs_a_version_or_the_lane(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    config_path = tmp_path / "c.toml"
    config_path.write_text(COMPETITION)
    assert main(["competition", "rate", str(config_path), "--data", str(tmp_path)]) == 2
    assert "--version N" in capsys.readouterr().err


def test_a_competition_has_two_more_rating_lanes_than_cores() -> None:
    """(A lane whose version waits on its moves holds no core: the teacher guide.)"""
    assert config.default_raters() == (os.cpu_count() or 1) + 2


def test_a_stopping_rater_ends_the_games_in_flight_interrupted_with_their_footers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server stops mid-rating (its SIGTERM: ``Rater.stop``): the version's child
    gets SIGTERM, not SIGKILL, so each game in flight ends ``interrupted`` with its
    footer and anchored row; the version is not marked failed, and the next start
    rates it again, each pairing recorded once. (Before: the lane was killed and the
    game stayed ``running`` without a footer.)"""
    from littlestone.server.records.logs import read_log

    # (the server's wait for the versions it stops, a setting: generous here, as a
    # loaded machine needs; it failed twice at load 8 with the 15 s of a server)
    monkeypatch.setattr(rater, "STOP_WAIT_S", 120.0)
    config_path = tmp_path / "c.toml"
    config_path.write_text(COMPETITION)
    data = tmp_path / "data"
    ident = _accepted(data, "ann", SLOWISH)
    unsafe = Sandbox.unavailable() is not None
    lanes = Rater(load_competition(config_path), data, unsafe, lambda: Store(data),
                  lambda: None, lanes=1)
    lanes.start()
    store = Store(data)
    try:
        own_game_running(store)
    finally:
        lanes.stop()
    games = store.games(limit=100)
    assert not [g for g in games if g["status"] == "running"], games
    stopped = [g for g in games if g["status"] == "interrupted"]
    assert stopped, games
    for game in stopped:
        log = read_log(data / "games" / f"{game['game_id']}.lslog")
        assert log.status == "interrupted"
        assert game["chain_sha256"] == log.chain.hex()
    row = store.submission(ident)
    assert row is not None and row["rating"] not in ("failed", "rated")
    again = Rater(load_competition(config_path), data, unsafe, lambda: Store(data),
                  lambda: None, lanes=1)
    store.resume_submissions("week-5")  # (what a competition's start does)
    again.start()
    try:
        assert _rated(store, [ident]) == {ident: "rated"}
    finally:
        again.stop()
    rows = store.tournament_games("week-5")
    assert rows and {r["status"] for r in rows} == {"complete"}
    recorded = [g["pairing"] for g in store.games(limit=100) if g["pairing"]]
    assert len(recorded) == len(set(recorded)) == len(rows)
