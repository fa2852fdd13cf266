"""A full disk at a direct-link game's header (issue 41's red team): the game is the
server's fault, recorded ``aborted:storage`` (scored for nobody) with the disk named in
the server's log, the tournament goes on, and its next run plays the pairing again.
(Before: the error left the game unrecorded and stopped the whole tournament.)"""

from __future__ import annotations

import errno
import logging
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.game import GameSpec
from littlestone.learners import LEARNERS
from littlestone.server.records.logged import play_logged
from littlestone.server.records.logs import read_log
from littlestone.server.records.logs import writer as log_writer
from littlestone.server.records.store import STORAGE_STATUS, Store
from littlestone.server.tournament import load_config, run_tournament
from littlestone.server.tournament.direct import play_direct
from littlestone.server.tournament.pairing import Pairing, candidates, file_digests, rules
from littlestone.server.tournament.run import _key_of
from tests.server.tournament.test_tournament import write_config


def _full_at_the_header(monkeypatch: pytest.MonkeyPatch) -> None:
    opened = log_writer.LogWriter.__init__

    def full(self: Any, path: Path, *args: Any, **kwargs: Any) -> None:
        opened(self, path, *args, **kwargs)
        self._file.close()  # (the header's bytes: refused, as a full disk refuses them)
        raise log_writer.LogWriteError(path, OSError(errno.ENOSPC, "No space left on device"))

    monkeypatch.setattr(log_writer.LogWriter, "__init__", full)


def test_a_full_disk_at_a_direct_games_header_is_recorded_as_the_servers_fault(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
        ) -> None:
    config = load_config(write_config(tmp_path, "full", ["halving"], ["random-target"]))
    data = tmp_path / "data"
    _full_at_the_header(monkeypatch)
    pairing = Pairing("mistake-bound", "thresholds:n=31", "halving", "random-target", 0)
    with caplog.at_level(logging.ERROR):
        game_id = play_direct(config, pairing, {}, {}, data)  # (main: LogWriteError)
    row = Store(data).game(game_id)
    assert row is not None and row["status"] == STORAGE_STATUS and row["chain_sha256"] is None
    assert "No space left on device" in caplog.text and game_id in caplog.text
    assert list((data / "games").glob("*.lslog")) == []  # (no log left half-begun)


def test_a_game_the_full_disk_stopped_is_played_again_at_the_next_run(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, "again", ["halving"], ["random-target"],
                                      seeds=1))
    data = tmp_path / "data"
    run_tournament(config, data, 1, progress=False)
    store = Store(data)
    (row,) = store.tournament_games("again")
    store.drop_tournament_games("again", [_key_of(row)])
    store.add_tournament_game("again", _key_of(row), {
        **row, "game_id": None, "status": STORAGE_STATUS, "result": {"status": STORAGE_STATUS}})
    run_tournament(config, data, 1, progress=False)
    (again,) = Store(data).tournament_games("again")
    assert again["status"] == "complete"  # (main: the aborted:storage row stayed)


# -- a full index at a game's end ------------------------------------------------------

def _index_full_once(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The index refuses the next game's end, as SQLite refuses a write on a full disk."""
    refused: list[str] = []
    finish = Store.finish_game

    def full(self: Store, game_id: str, *args: Any, **kwargs: Any) -> None:
        if not refused:
            refused.append(game_id)
            raise sqlite3.OperationalError("database or disk is full")
        finish(self, game_id, *args, **kwargs)

    monkeypatch.setattr(Store, "finish_game", full)
    return refused


def test_a_row_a_full_index_left_running_is_ended_at_the_next_chance(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refused = _index_full_once(monkeypatch)
    game = GameSpec("mistake-bound", 5, make_class("thresholds:n=4"))
    with pytest.raises(sqlite3.OperationalError):
        play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 0,
                    tmp_path)
    (first,) = refused
    row = Store(tmp_path).game(first)
    assert row is not None and row["status"] == "running"  # (its log has its footer)
    assert read_log(Path(str(row["log"]))).status == "complete"
    play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 1, tmp_path)
    row = Store(tmp_path).game(first)  # (main: running for ever, or interrupted)
    assert row is not None and row["status"] == "complete"
    assert row["chain_sha256"] == read_log(Path(str(row["log"]))).chain.hex()


def test_a_restart_ends_such_a_row_from_its_footer_and_does_not_play_it_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(write_config(tmp_path, "full", ["halving"], ["random-target"],
                                      seeds=1))
    data = tmp_path / "data"
    (pairing,), _ = candidates(config, file_digests(config))
    with pytest.MonkeyPatch.context() as patch:
        refused = _index_full_once(patch)
        with pytest.raises(sqlite3.OperationalError):
            play_logged(rules(config, pairing), LEARNERS.make(pairing.learner),
                        ADVERSARIES.make(pairing.adversary), pairing.seed, data,
                        source=f"tournament:{config.name}")
    with sqlite3.connect(data / "littlestone.db") as db:  # (its process is gone)
        db.execute("UPDATE games SET owner = ? WHERE game_id = ?",
                   (f"{socket.gethostname()}:{2 ** 22 + 1}:0", refused[0]))
    run_tournament(config, data, 1, progress=False)
    store = Store(data)
    (row,) = store.tournament_games("full")
    assert row["game_id"] == refused[0] and row["status"] == "complete"
    assert len(store.games(limit=10)) == 1  # (main: the pairing played a second time)
    game = store.game(refused[0])
    assert game is not None and game["status"] == "complete" and game["chain_sha256"]
