"""Fuzzing (hypothesis): the sans-I/O cores directly (tests/support/fuzzing.py: the codec, the
message checks, the rules and opponents a peer asks for, the session state machine, both
referees, whole games through the remote players and the driver over a connection in
memory), then a few hundred mutated frames mid-game over real loopback sockets.

Every property asserts that nothing but the typed error escapes and that the state
after it is consistent. The examples are derandomized (the same cases on every run);
``python -m tests.support.fuzz_long --cases N`` runs fresh ones for as long as one likes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.records.store import Store
from tests.support.fuzzing import frames, messages, run

#: Hypothesis examples per property, and the inputs (frames, messages, rules, moves)
#: they must hold at least: over 10,000 in all.
BUDGET = {
    "codec": (550, 2200),                   # 4 frames an example
    "messages": (400, 1600),                # 4 messages an example
    "rules": (300, 900),                    # 3 rules maps an example
    "opponents": (150, 450),                # 3 opponent specs an example
    "session": (500, 750),                  # frames vary: ~2 an example
    "mistake-bound referee": (500, 1000),   # moves vary: ~3 an example
    "experts referee": (450, 800),          # moves vary: ~2.7 an example
    "driver": (250, 1200),                  # frames the remote players send: ~7 a game
    "remote checks = referee": (300, 1200),  # 4 vectors an example
    "commit and reveal": (250, 750),        # 3 games an example
}
assert sum(least for _, least in BUDGET.values()) >= 10_000


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BUDGET))
def test_fuzz_the_sans_io_cores(name: str) -> None:
    examples, least = BUDGET[name]
    ran, inputs = run(name, examples)
    assert ran >= examples and inputs >= least, (ran, inputs)


# -- over real sockets ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GameServer]:
    """A server on its own event loop in a thread, for synchronous clients."""
    loop = asyncio.new_event_loop()
    data = tmp_path_factory.mktemp("fuzz-data")
    server = GameServer(ServerSettings(port=0, data=data, move_deadline=0.3, time_bank=0.0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
    server.token = server.store.add_token("fuzz")  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


GAMES: dict[str, tuple[str, dict[str, Any], str]] = {
    "learner-mb": ("learner", {"game": "mistake-bound", "class": "thresholds:n=8",
                               "rounds": 4}, "random-target"),
    "learner-experts": ("learner", {"game": "experts", "class": None, "experts": 3,
                                    "rounds": 4}, "cover-flip"),
    "adversary-mb": ("adversary", {"game": "mistake-bound", "class": "thresholds:n=8",
                                   "rounds": 4}, "halving"),
    "adversary-experts": ("adversary", {"game": "experts", "class": None, "experts": 3,
                                        "rounds": 4}, "hedge"),
}
FIRST = {"adversary-mb": {"type": "instance", "t": 1, "x": 1},
         "adversary-experts": {"type": "advice", "t": 1, "advice": [0.0, 1.0, 0.5]}}
IN_GAME_CODES = {"bad_message", "out_of_turn", "illegal_move", "timeout"}
SENT = {"frames": 0}


def _send(ws: ClientConnection, message: dict[str, Any]) -> None:
    ws.send(msgpack.packb(message, use_bin_type=True))


def _good_moves(kind: str, message: dict[str, Any], rounds: int) -> list[dict[str, Any]]:
    """The well-behaved answer to a server message (an adversary labels by target 4)."""
    if kind == "learner-mb" and message["type"] == "instance":
        return [{"type": "predict", "t": message["t"], "p": 0.5}]
    if kind == "learner-experts" and message["type"] == "advice":
        return [{"type": "weights", "t": message["t"], "w": [1 / 3] * 3}]
    if kind == "adversary-mb" and message["type"] == "prediction":
        t = message["t"]
        moves = [{"type": "label", "t": t, "y": int(t % 8 < 4)}]
        if t < rounds:
            moves.append({"type": "instance", "t": t + 1, "x": (t + 1) % 8})
        return moves
    if kind == "adversary-experts" and message["type"] == "answer":
        t = message["t"]
        moves = [{"type": "costs", "t": t, "v": [1.0, 0.0, 0.5]}]
        if t < rounds:
            moves.append({"type": "advice", "t": t + 1, "advice": [0.0, 1.0, 0.5]})
        return moves
    return []


@settings(max_examples=60, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(sorted(GAMES)),
       junk=st.lists(st.lists(st.one_of(frames(), messages()), max_size=2), min_size=6,
                     max_size=6))
def _fuzz_one_game(live: GameServer, kind: str, junk: list[list[Any]]) -> None:
    role, rules, opponent = GAMES[kind]
    with connect(live.url, compression=None, proxy=None, open_timeout=10) as ws:
        _send(ws, {"type": "hello", "version": 1, "role": role, "agent": "fuzz",
                   "token": live.token, "capabilities": []})  # type: ignore[attr-defined]
        assert msgpack.unpackb(ws.recv(10))["type"] == "welcome"
        _send(ws, {"type": "challenge", "rules": rules, "opponent": opponent, "seed": 1})
        start = msgpack.unpackb(ws.recv(10))
        assert start["type"] == "start", start
        pending = [FIRST[kind]] if kind in FIRST else []
        step = 0
        while True:
            for frame in junk[step % len(junk)] if step < len(junk) else []:
                ws.send(frame if isinstance(frame, bytes | str) else
                        msgpack.packb(frame, use_bin_type=True))
                SENT["frames"] += 1
            step += 1
            for move in pending:
                _send(ws, move)
            message: dict[str, Any] = msgpack.unpackb(ws.recv(10))
            if message["type"] == "end":
                break
            if message["type"] == "error":
                assert message["code"] in IN_GAME_CODES and not message["fatal"], message
                if message["code"] != "timeout":
                    pending = []  # the good move, if any, is on its way already
                continue
            pending = _good_moves(kind, message, rules["rounds"])
    status = message["status"]
    assert status == "complete" or status.split(":")[0] in (
        "forfeit", "rule_violation", "illegal_move"), status
    assert "internal" not in status and "crash" not in status
    row = Store(live.settings.data).game(message["game_id"])
    assert row is not None and row["status"] == status


@pytest.mark.slow
def test_fuzzed_frames_mid_game_over_real_sockets(live: GameServer) -> None:
    """Mutated, truncated, reordered and random frames between good moves, in each role
    and game:
    every answer is a typed, non-fatal error; each game ends with a status of the rules
    (never internal), indexed; the server then plays an honest game."""
    SENT["frames"] = 0
    _fuzz_one_game(live)
    assert SENT["frames"] >= 200, SENT
    game = GameSpec(MISTAKE_BOUND, 30, make_class("thresholds:n=31"))
    out = asyncio.run(play_remote(live.url, LEARNERS.make("halving"), "random-target", game, 1,
                                  live.token))  # type: ignore[attr-defined]
    assert out["status"] == "complete"


def test_the_socket_fuzz_sends_frames_the_server_can_read(tmp_path: Path) -> None:
    """The frames strategy makes frames of every kind the codec sees (a guard on the
    fuzzer itself: not only text, not only valid msgpack)."""
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, database=None, derandomize=True)
    @given(frames())
    def sample(frame: bytes | str) -> None:
        if isinstance(frame, str):
            seen.add("text")
            return
        try:
            value = msgpack.unpackb(frame, raw=False, strict_map_key=False)
        except Exception:
            seen.add("undecodable")
            return
        seen.add("map" if isinstance(value, dict) else "other")

    sample()
    assert seen == {"text", "undecodable", "map", "other"}, seen


def test_a_connection_closed_by_the_server_is_not_a_hang(live: GameServer) -> None:
    """A peer that sends a text frame before hello is answered and closed at once."""
    with connect(live.url, compression=None, proxy=None, open_timeout=10) as ws:
        ws.send("hello?")
        error = msgpack.unpackb(ws.recv(10))
        assert (error["code"], error["fatal"]) == ("bad_message", True)
        with pytest.raises(ConnectionClosed):
            ws.recv(10)
