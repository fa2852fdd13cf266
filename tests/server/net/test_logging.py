"""The operator's log (issue 24): ``serve`` logs where it listens, each game's start,
faults and end, every refusal with its code, the budgets hit and its shutdown, as text or
as JSON lines, on standard error; never a token, never a game key.

A real ``serve`` process on loopback plays a game with a fault and refuses a peer; the
assertions read its standard error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from websockets.sync.client import connect as connect_sync

from littlestone.cli import main
from littlestone.server.net.peers import REFUSALS_LOGGED
from littlestone.server.net.settings import ConnectionLimits
from littlestone.server.records.store import Store
from tests.support.servers import running_server

RULES = {"game": "mistake-bound", "class": "thresholds:n=8", "experts": None, "rounds": 6,
         "horizon": 6}


def hello(token: str | None, agent: str = "raw") -> bytes:
    return msgpack.packb({"type": "hello", "version": 1, "role": "learner", "agent": agent,
                          "token": token, "capabilities": []})


def serve(data: Path, *options: str) -> tuple[subprocess.Popen[str], str]:
    """A ``serve`` process (no web page) and its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--port", "0",
                             "--data", str(data), "--no-web", *options],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    banner = proc.stdout.readline()
    assert banner.startswith("littlestone serving on "), banner
    return proc, banner.split()[3]


def game_with_a_fault(url: str, token: str) -> dict[str, Any]:
    """A learner played by hand whose first prediction is out of [0, 1] (a fault:
    illegal_move, PROTOCOL.md 6); returns the ``end``, with the game's key."""
    with connect_sync(url, compression=None, proxy=None) as ws:
        ws.send(hello(token))
        assert msgpack.unpackb(ws.recv(timeout=10))["type"] == "welcome"
        ws.send(msgpack.packb({"type": "challenge", "rules": RULES, "seed": 3,
                               "opponent": "random-target"}))
        errors = []
        while (message := msgpack.unpackb(ws.recv(timeout=10)))["type"] != "end":
            if message["type"] == "instance":
                p = 2.0 if message["t"] == 1 else 0.5
                ws.send(msgpack.packb({"type": "predict", "t": message["t"], "p": p}))
            elif message["type"] == "error":
                errors.append(message["code"])
        assert errors == ["illegal_move"]
        return dict(message)


def refused(url: str, token: str | None) -> dict[str, Any]:
    """A hello the server refuses; returns its error."""
    with connect_sync(url, compression=None, proxy=None) as ws:
        ws.send(hello(token))
        return dict(msgpack.unpackb(ws.recv(timeout=10)))


def run_and_stop(tmp_path: Path, *options: str) -> tuple[str, dict[str, Any], str]:
    """A server that plays a game with a fault, refuses an unknown token, and is stopped
    with SIGTERM: its standard error, the game's end, and the good token."""
    data = tmp_path / "data"
    token = Store(data).add_token("alice")
    proc, url = serve(data, *options)
    try:
        end = game_with_a_fault(url, token)
        assert refused(url, "ls1_not-a-token")["code"] == "unauthorized"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return err, end, token


def no_secret(err: str, token: str, end: dict[str, Any]) -> None:
    """Neither the token nor the game key is in the log."""
    assert token not in err
    key = end["key"]
    assert key.hex() not in err and repr(key) not in err


@pytest.mark.slow
def test_the_text_log_shows_a_games_start_fault_and_end_and_a_refusal(tmp_path):
    err, end, token = run_and_stop(tmp_path)
    game_id = end["game_id"]
    lines = err.splitlines()

    def line(*words: str) -> str:
        found = [x for x in lines if all(w in x for w in words)]
        assert len(found) == 1, (words, err)
        return found[0]

    assert " INFO littlestone.server.net.server: listening on ws://127.0.0.1:" in line(
        "listening on", "no TLS")
    started = line(f"game {game_id} started")
    assert "mistake-bound, thresholds:n=8, 6 rounds" in started
    assert "learner remote:raw (alice from 127.0.0.1), adversary random-target" in started
    assert "fault of the learner in round 1: illegal_move" in line(f"game {game_id}: fault")
    assert f"game {game_id} ended: complete after 6 rounds, mistakes " in line(
        f"game {game_id} ended")
    assert line("refused").endswith(" INFO littlestone.server.net.lobby: 127.0.0.1: refused: "
                                    "unauthorized: unknown token (closed)")
    assert "SIGTERM received" in line("SIGTERM")
    assert line(": stopped").endswith(" INFO littlestone.server.net.server: stopped")
    assert lines[-1] == "littlestone: server stopped"
    no_secret(err, token, end)


@pytest.mark.slow
def test_the_json_log_has_the_same_with_their_fields_and_debug_no_secret(tmp_path):
    err, end, token = run_and_stop(tmp_path, "--log-format", "json", "--log-level", "debug")
    game_id = end["game_id"]
    records = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    assert len(records) == len(err.splitlines()) - 1  # and "littlestone: server stopped"
    assert {r["level"] for r in records} >= {"debug", "info"}
    assert all({"time", "level", "logger", "message"} <= r.keys() for r in records)

    def record(**fields: Any) -> dict[str, Any]:
        found = [r for r in records if all(r.get(k) == v for k, v in fields.items())]
        assert len(found) == 1, (fields, err)
        return found[0]

    started = record(game_id=game_id, learner="remote:raw")
    assert (started["game"], started["class"], started["rounds"]) == (
        "mistake-bound", "thresholds:n=8", 6)
    assert (started["adversary"], started["learner_token_name"], started["learner_peer"]) == (
        "random-target", "alice", "127.0.0.1")
    fault = record(game_id=game_id, code="illegal_move")
    assert (fault["role"], fault["round"]) == ("learner", 1)
    ended = record(game_id=game_id, status="complete")
    assert ended["rounds"] == 6 and ended["faults"] == 1
    assert ended["mistakes"] == end["result"]["mistakes"] and ended["seconds"] >= 0
    refusal = record(code="unauthorized")
    assert refusal["peer"] == "127.0.0.1" and refusal["fatal"] is True
    # the session's connection-level lines (debug) name the token's name, not the token
    assert any(r.get("token_name") == "alice" and r["level"] == "debug" for r in records)
    no_secret(err, token, end)


def test_serve_refuses_a_log_level_it_does_not_know(capsys):
    assert main(["serve", "--log-level", "loud"]) == 2
    assert "--log-level: invalid choice: 'loud'" in capsys.readouterr().err


# -- in process: the budgets hit ------------------------------------------------------------

async def test_budgets_hit_are_logged_with_their_names_and_drops_once_a_minute(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="littlestone")
    limits = ConnectionLimits(per_token=1, per_address=3, max_connections=2,
                              message_rate=1.0, message_burst=1)
    async with running_server(tmp_path, connections=limits) as server:
        url = server.url

        def sessions() -> None:
            with connect_sync(url, compression=None, proxy=None) as held:
                held.send(hello(server.token))
                assert msgpack.unpackb(held.recv(timeout=10))["type"] == "welcome"
                # a second connection of the token: over per_token
                assert refused(url, server.token)["code"] == "over_budget"
                # the lobby's rate: the second message at once is over it
                for _ in range(2):
                    held.send(msgpack.packb({"type": "join", "game_id": "nope"}))
                codes = [msgpack.unpackb(held.recv(timeout=10))["code"] for _ in range(2)]
                assert codes == ["not_found", "over_budget"]
                # sockets from this address over per_address (3) are dropped unanswered:
                # at least four of these six (one line says so, a minute's worth)
                raw = [socket.create_connection(("127.0.0.1", server.port))
                       for _ in range(6)]
                for _ in range(200):
                    if any(getattr(r, "budget", None) == "per_address"
                           for r in caplog.records):
                        break
                    time.sleep(0.05)
                time.sleep(0.2)  # (the later drops are not logged: counted)
                for s in raw:
                    s.close()

        await asyncio.to_thread(sessions)
    hit = [(r.levelname, getattr(r, "budget", None), getattr(r, "code", None))
           for r in caplog.records if getattr(r, "budget", None)]
    assert ("INFO", "per_token", "over_budget") in hit
    assert ("INFO", "message_rate", "over_budget") in hit
    drops = [r for r in caplog.records if getattr(r, "budget", None) == "per_address"]
    assert len(drops) == 1 and drops[0].levelname == "WARNING"
    assert drops[0].peer == "127.0.0.1"
    assert "not_found" in [getattr(r, "code", None) for r in caplog.records]


async def test_a_peer_that_hammers_is_logged_at_most_so_many_lines_a_minute(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="littlestone")
    async with running_server(tmp_path) as server:
        url = server.url

        def hammer() -> None:
            for _ in range(REFUSALS_LOGGED + 5):
                assert refused(url, "ls1_guess")["code"] == "unauthorized"

        await asyncio.to_thread(hammer)
    lines = [r for r in caplog.records if getattr(r, "code", None) == "unauthorized"]
    assert len(lines) == REFUSALS_LOGGED


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_traceback_goes_with_its_line_in_either_format(form):
    """An internal error's traceback: after its line (text), in ``exc_info`` (JSON)."""
    import io

    from littlestone.cli.common import operator_log

    stream = io.StringIO()
    with operator_log("info", form, stream):
        try:
            raise RuntimeError("a bug")
        except RuntimeError:
            logging.getLogger("littlestone.server.net.lobby").exception("internal error")
    out = stream.getvalue()
    if form == "json":
        (line,) = out.splitlines()
        record = json.loads(line)
        assert record["level"] == "error" and "RuntimeError: a bug" in record["exc_info"]
    else:
        assert out.splitlines()[0].endswith("ERROR littlestone.server.net.lobby: internal error")
        assert "RuntimeError: a bug" in out
