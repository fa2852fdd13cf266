"""One logged game (records.logged.GameRecording): however a game ends, its log and its
index row agree; and every place that plays a logged game goes through it."""

from __future__ import annotations

import ast
import asyncio
import errno
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import littlestone
from littlestone.games.classes import make_class
from littlestone.games.errors import UnsupportedGame
from littlestone.games.game import GameResult, GameSpec, game_seeds
from littlestone.learners.base import Learner
from littlestone.server.records.anchors import anchoring, locate
from littlestone.server.records.folder import log_file
from littlestone.server.records.logged import (
    ABORTED,
    INTERNAL,
    SHUTDOWN,
    GameRecording,
    play_logged,
    recorded,
)
from littlestone.server.records.logs import LogWriteError, read_log
from littlestone.server.records.rows import AgentIdentity
from littlestone.server.records.store import STORAGE_STATUS, Store

GAME = GameSpec("mistake-bound", 5, make_class("thresholds:n=4"))
WHO: AgentIdentity = {"spec": "halving", "sha256": "-"}


def result(rounds: int, mistakes: float) -> GameResult:
    return GameResult(game="mistake-bound", status="complete", rounds=rounds,
                      mistakes=mistakes, expected_mistakes=mistakes, regret=float("nan"),
                      expected_regret=float("nan"))


def two_rounds(writer):
    writer.rounds(1, [3, 5], np.array([1.0, 0.0]), [0, 1], np.array([1, 0]))
    writer.flush()


def record(data: Path, body, level: str = "full") -> tuple[GameRecording, dict]:
    """A game recorded around ``body(recording, writer)``; its recording and its row."""
    store = Store(data)
    recording = GameRecording(data, GAME, game_seeds(7), 7, WHO, WHO, "play", level)
    try:
        with recorded(recording, store) as writer:
            body(recording, writer)
    finally:
        row = store.game(recording.game_id)
        store.close()
    return recording, dict(row) if row is not None else {}


def test_a_complete_game_ends_its_log_and_its_row_alike_and_anchored(tmp_path):
    def body(recording, writer):
        two_rounds(writer)
        recording.end(result(2, 1.0))

    recording, row = record(tmp_path, body)
    log = read_log(recording.log)
    assert (row["status"], row["rounds"], row["mistakes"]) == ("complete", 2, 1.0)
    assert log.status == "complete" and log.n_rounds == 2
    assert row["chain_sha256"] == log.chain.hex()
    assert anchoring(log, tmp_path).anchored is True


@pytest.mark.parametrize(("error", "status"), [
    (RuntimeError("a bug of the referee's"), INTERNAL),
    (KeyboardInterrupt(), SHUTDOWN),
    (asyncio.CancelledError(), SHUTDOWN),
])
def test_a_game_cut_short_has_a_footer_and_a_row_that_agree(tmp_path, error, status):
    def body(recording, writer):
        two_rounds(writer)
        raise error

    with pytest.raises(type(error)):
        record(tmp_path, body)
    (row,) = Store(tmp_path).games()
    log = read_log(Path(row["log"]))
    assert (row["status"], row["rounds"], log.status, log.n_rounds) == (status, 2, status, 2)
    assert log.footer is not None and log.footer["key"]  # the game key, for replays
    assert row["chain_sha256"] == log.chain.hex()
    assert anchoring(log, tmp_path).anchored is True


def test_a_log_that_cannot_be_written_ends_the_game_aborted_storage_without_an_anchor(
        tmp_path):
    def body(recording, writer):
        two_rounds(writer)
        raise LogWriteError(recording.path, OSError(errno.ENOSPC, "No space left on device"))

    with pytest.raises(LogWriteError):
        record(tmp_path, body)
    (row,) = Store(tmp_path).games()
    log = read_log(Path(row["log"]))
    assert (row["status"], row["rounds"], row["chain_sha256"]) == (STORAGE_STATUS, 2, None)
    assert log.footer is None and log.n_rounds == 2
    found = anchoring(log, tmp_path)
    assert found.anchored is None and "the disk was full" in found.message


def test_a_refused_game_leaves_no_log_and_a_refused_row(tmp_path):
    def body(recording, writer):
        raise UnsupportedGame("halving plays no experts game")

    with pytest.raises(UnsupportedGame):
        record(tmp_path, body)
    (row,) = Store(tmp_path).games()
    assert row["status"] == "refused" and row["chain_sha256"] is None
    assert not Path(row["log"]).exists()


def test_a_game_without_a_log_indexes_no_log_and_no_anchor(tmp_path):
    def body(recording, writer):
        recording.end(result(0, 0.0))

    recording, row = record(tmp_path, body, level="none")
    assert recording.log is None and not (tmp_path / "games").exists()
    assert (row["status"], row["log"], row["chain_sha256"]) == ("complete", None, None)


def test_a_game_the_index_cannot_take_leaves_no_log(tmp_path):
    store = Store(tmp_path)
    store.close()  # (a closed connection: the row cannot be written)
    recording = GameRecording(tmp_path, GAME, game_seeds(7), 7, WHO, WHO, "play")
    with pytest.raises(sqlite3.ProgrammingError), recorded(recording, store):
        pass
    assert not recording.path.exists() and recording.outcome is None


class Interrupted(Learner):
    """Halving until round 3, then the user's Ctrl-C."""

    games = frozenset({"mistake-bound"})

    def predict(self, x):
        if self.t >= 3:
            raise KeyboardInterrupt
        self.t += 1
        return 0.0

    def update(self, x, y):
        pass

    def start(self, game, seed):
        super().start(game, seed)
        self.t = 0


def test_play_records_a_game_it_did_not_end_aborted_and_anchored(tmp_path):
    from littlestone.adversaries import ADVERSARIES

    with pytest.raises(KeyboardInterrupt):
        play_logged(GAME, Interrupted(), ADVERSARIES.make("random-target"), 0, tmp_path,
                    level="full")
    (row,) = Store(tmp_path).games()
    log = read_log(Path(row["log"]))
    assert row["status"] == log.status == ABORTED
    assert anchoring(log, tmp_path).anchored is True


def test_one_function_finds_a_games_log_from_a_relative_data_folder(tmp_path, monkeypatch):
    """The store's rows, the report, the web room and anchors find a log by
    folder.log_file: a row's log, found again, is the same file."""
    from littlestone.adversaries import ADVERSARIES
    from littlestone.learners import LEARNERS

    monkeypatch.chdir(tmp_path)
    done = play_logged(GAME, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 0,
                       Path("data"))
    row = Store(Path("data")).game(done.game_id)
    assert row is not None and Path(row["log"]).is_absolute()
    assert log_file("data", row["log"]) == Path(row["log"]) == (tmp_path / done.log)
    assert locate(done.game_id, "data") == (Path(row["log"]), done.game_id)


PACKAGE = Path(littlestone.__file__).parent
#: The one place a logged game's log is opened and its row written.
LIFECYCLE = PACKAGE / "server" / "records" / "logged.py"


def calls(name: str) -> list[str]:
    """The places in the package that call ``name`` with arguments (a log's writer, or
    the index's start_game/finish_game; a protocol session's start_game takes none)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not (node.args or node.keywords):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called == name:
                found.append(f"{os.path.relpath(path, PACKAGE)}:{node.lineno}")
    return found


@pytest.mark.parametrize("name", ["LogWriter", "start_game", "finish_game"])
def test_every_logged_game_goes_through_the_one_lifecycle(name):
    where = {place.rsplit(":", 1)[0] for place in calls(name)}
    assert where == {str(LIFECYCLE.relative_to(PACKAGE))}, calls(name)


def test_no_other_way_to_find_a_log_remains():
    assert calls("log_path") == []


def test_a_game_played_on_another_node_lands_anchored_under_this_folders_key(tmp_path):
    from littlestone.adversaries import ADVERSARIES
    from littlestone.learners import LEARNERS
    from littlestone.server.tournament.field import land, ship

    node, home = tmp_path / "node", tmp_path / "home"
    done = play_logged(GAME, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 3,
                       node)
    shipped = ship(Store(node), done.game_id)
    store = Store(home)
    land(store, shipped)
    row = store.game(done.game_id)
    assert row is not None and row["status"] == "complete"
    assert anchoring(read_log(Path(row["log"])), home).anchored is True
