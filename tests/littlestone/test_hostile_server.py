"""A server is a peer of its clients, and a client treats what it says as hostile too:
a student who connects to a classmate's server must not have the client open a file the
server names, nor play other rules than it asked for. Real sockets on loopback."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.asyncio.server import serve

from littlestone.client import play_remote
from littlestone.games.classes import MatrixClass, make_class
from littlestone.games.errors import LittlestoneError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.protocol.codec import decode, encode
from littlestone.protocol.messages import rules_to_wire

GAME = GameSpec(MISTAKE_BOUND, 10, make_class("thresholds:n=15"))


@contextlib.asynccontextmanager
async def hostile_server(rules: dict[str, Any]) -> AsyncIterator[str]:
    """A server that welcomes a client, then starts a game with ``rules`` whatever the
    client asked for."""

    async def handler(ws: Any) -> None:
        decode(await ws.recv())  # hello
        await ws.send(encode({"type": "welcome", "version": 1, "session": "s",
                              "server": "hostile", "limits": {}}))
        request = decode(await ws.recv())
        if request["type"] == "create":
            await ws.send(encode({"type": "created", "game_id": "g"}))
        await ws.send(encode({"type": "start", "game_id": "g", "role": "learner",
                              "rules": rules, "seed": 1, "commitment": None}))
        await ws.close()  # (and never plays a round)

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}"


@pytest.fixture
def no_file_opened(monkeypatch):
    opened: list[str] = []

    def load(path: str) -> MatrixClass:
        opened.append(path)
        raise AssertionError(f"the client opened {path!r} for the server")

    monkeypatch.setattr(MatrixClass, "load", staticmethod(load))
    return opened


@pytest.mark.parametrize("how", ["challenge", "create", "join"])
async def test_a_server_cannot_make_the_client_open_a_file(tmp_path, no_file_opened, how):
    secret = tmp_path / "grades.csv"
    secret.write_text("1,0\n0,1\n")
    rules = {**rules_to_wire(GAME), "class": f"matrix:path={secret}"}
    async with hostile_server(rules) as url:
        with pytest.raises(LittlestoneError, match="file") as raised:
            await play_remote(url, LEARNERS.make("halving"),
                              "random-target" if how == "challenge" else None, GAME,
                              join="g" if how == "join" else None)
    assert not no_file_opened
    assert "grades" not in str(raised.value) or "matrix" in str(raised.value)


@pytest.mark.parametrize("changed", [{"class": "thresholds:n=1023"}, {"rounds": 10**6},
                                     {"game": "experts"}])
@pytest.mark.parametrize("how", ["challenge", "create"])
async def test_a_server_cannot_start_other_rules_than_the_client_asked(changed, how):
    rules = {**rules_to_wire(GAME), **changed}
    async with hostile_server(rules) as url:
        with pytest.raises(LittlestoneError, match="other rules than"):
            await play_remote(url, LEARNERS.make("halving"),
                              "random-target" if how == "challenge" else None, GAME)


async def test_the_rules_asked_for_are_played(tmp_path):
    """(The check above compares parsed rules: the server's canonical spelling passes.)"""
    rules = {**rules_to_wire(GAME), "class": "thresholds:n=015"}
    async with hostile_server(rules) as url:
        with pytest.raises(Exception) as raised:  # the fake server never plays a round
            await play_remote(url, LEARNERS.make("halving"), "random-target", GAME)
    assert "other rules than" not in str(raised.value)


async def test_a_server_that_answers_a_challenge_with_no_start_is_one_line():
    """A well-formed message of another type where ``start`` is due (mypy's check of the
    client's keys found it read ``rules`` of whatever came): a ServerError, no KeyError."""

    async def handler(ws: Any) -> None:
        decode(await ws.recv())  # hello
        await ws.send(encode({"type": "welcome", "version": 1, "session": "s",
                              "server": "hostile", "limits": {}}))
        decode(await ws.recv())  # challenge
        await ws.send(encode({"type": "created", "game_id": "g"}))
        await ws.close()

    async with serve(handler, "127.0.0.1", 0) as server:
        url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        with pytest.raises(LittlestoneError, match="expected start, got created"):
            await play_remote(url, LEARNERS.make("halving"), "random-target", GAME)
