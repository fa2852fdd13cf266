"""A classroom server under careless and curious peers (the hardening issue): token roles,
connection limits, the lifecycle of games and of the server, on real loopback sockets.

Each attack is tried from outside and shown to fail with the code PROTOCOL.md names,
while an honest game on the same server goes on.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from littlestone.cli import main
from littlestone.client import ServerError, play_remote, watch_remote
from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.server.net.settings import LOBBY_FAULTS, ConnectionLimits
from littlestone.server.records.logs import ForeignLog, read_log
from littlestone.server.records.rows import GameRow
from littlestone.server.records.store import Store
from littlestone.transport import connect as connect_raw
from tests.support.servers import running_server, until

GAME = GameSpec(MISTAKE_BOUND, 40, make_class("thresholds:n=63"))
CHALLENGE = {"type": "challenge", "opponent": "random-target", "seed": 3,
             "rules": {"game": "mistake-bound", "class": "thresholds:n=63", "experts": None,
                       "rounds": 40, "horizon": 40}}


def hello(token: str | None, role: str = "learner", agent: str = "raw") -> bytes:
    return msgpack.packb({"type": "hello", "version": 1, "role": role, "agent": agent,
                          "token": token, "capabilities": []})


async def session(server, token, role="learner", agent="raw"):
    """A raw connection that has said hello and read the answer."""
    ws = await connect(server.url, compression=None, proxy=None)
    await ws.send(hello(token, role, agent))
    return ws, msgpack.unpackb(await ws.recv())


async def receive(ws):
    return msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10))


async def closed_after(ws, code, close_code=None):
    """The connection is told ``code`` (fatal) and closed."""
    message = await receive(ws)
    assert message["type"] == "error" and message["code"] == code and message["fatal"], message
    with pytest.raises(ConnectionClosed) as info:
        await asyncio.wait_for(ws.recv(), 10)
    if close_code is not None:
        assert info.value.rcvd is not None and info.value.rcvd.code == close_code


async def honest_game(server, token):
    out = await play_remote(server.url, LEARNERS.make("halving"), "random-target", GAME, seed=5,
                            token=token)
    assert out["status"] == "complete" and out["rounds"] == 40
    return out


async def hand_played(server, token):
    """A learner played by hand over a raw connection: its game lasts until
    :func:`finish` plays it out."""
    ws, _ = await session(server, token)
    await ws.send(msgpack.packb(CHALLENGE))
    start = await receive(ws)
    assert start["type"] == "start"
    return ws, start


async def finish(ws):
    """Predict 0 until the end; returns the ``end``."""
    while True:
        message = await receive(ws)
        if message["type"] == "end":
            return message
        if message["type"] == "instance":
            await ws.send(msgpack.packb({"type": "predict", "t": message["t"], "p": 0}))


# -- roles --------------------------------------------------------------------------------

def test_token_commands_add_list_revoke_and_refuse(tmp_path, capsys):
    data = str(tmp_path)
    assert main(["token", "add", "ann", "--data", data]) == 0
    first = capsys.readouterr().out.strip()
    assert main(["token", "add", "ann", "--data", data]) == 2  # no silent replacement
    assert "has a token already" in capsys.readouterr().err
    assert main(["token", "add", "ann", "--role", "admin", "--replace", "--data", data]) == 0
    second = capsys.readouterr().out.strip()
    assert second != first
    assert main(["token", "add", "eve", "--role", "root", "--data", data]) == 2
    assert main(["token", "add", "", "--data", data]) == 2
    assert main(["token", "add", "viewer", "--role", "spectator", "--data", data]) == 0
    capsys.readouterr()
    assert main(["token", "list", "--json", "--data", data]) == 0
    text = capsys.readouterr().out
    listed = json.loads(text)["tokens"]
    assert [(t["name"], t["role"]) for t in listed] == [("ann", "admin"), ("viewer", "spectator")]
    assert second not in text and first not in text  # never shown again, nor its hash
    assert Store(tmp_path).token_account("x") is None
    assert main(["token", "revoke", "viewer", "--data", data]) == 0
    assert main(["token", "revoke", "viewer", "--data", data]) == 2
    assert "no token named" in capsys.readouterr().err
    # the database holds hashes only
    raw = (tmp_path / "littlestone.db").read_bytes()
    assert second.encode() not in raw


def test_tokens_never_come_from_the_command_line(tmp_path, capsys):
    assert main(["connect", "ws://127.0.0.1:9", "--learner", "halving", "--vs", "x",
                 "--rounds", "3", "--token", "ls_secret"]) == 2
    assert "a token is never given on the command line" in capsys.readouterr().err


async def test_roles_each_refusal_has_its_code(tmp_path):
    async with running_server(tmp_path) as server:
        store = server.store
        viewer = store.add_token("viewer", "spectator")
        admin = store.add_token("boss", "admin")
        other = store.add_token("carol")
        # a spectator's token cannot play
        ws, answer = await session(server, viewer, "learner")
        assert answer["code"] == "unauthorized" and answer["fatal"]
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 10)
        # a player cannot revoke: unauthorized, and closed
        ws, welcome = await session(server, other)
        assert welcome["type"] == "welcome"
        await ws.send(msgpack.packb({"type": "revoke", "name": "bob"}))
        await closed_after(ws, "unauthorized", 1008)
        # a game of bob's: carol (a player) cannot watch it, a spectator and bob can
        bob, start = await hand_played(server, server.token)
        game_id = start["game_id"]
        with pytest.raises(ServerError, match="not_found"):
            await watch_remote(server.url, game_id, token=other)
        seen: list[dict] = []
        watching = asyncio.ensure_future(watch_remote(server.url, game_id, token=viewer,
                                                      on_message=seen.append))
        own = asyncio.ensure_future(watch_remote(server.url, game_id, token=server.token))
        await until(lambda: seen)
        assert seen[0]["type"] == "watching"
        # the admin revokes bob over the network: bob's running game goes on, a new
        # connection of bob's is refused
        ws, _ = await session(server, admin, "spectator")
        await ws.send(msgpack.packb({"type": "revoke", "name": "bob"}))
        assert (await receive(ws)) == {"type": "revoked", "name": "bob"}
        await ws.send(msgpack.packb({"type": "revoke", "name": "nobody"}))
        assert (await receive(ws))["code"] == "not_found"
        await ws.close()
        with pytest.raises(ServerError, match="unauthorized"):
            await honest_game(server, server.token)
        assert (await finish(bob))["status"] == "complete"
        assert (await watching)["status"] == "complete"
        assert (await own)["status"] == "complete"
        await honest_game(server, other)


async def test_a_name_with_escape_codes_is_refused_at_hello(tmp_path):
    async with running_server(tmp_path) as server:
        _, answer = await session(server, server.token, agent="\x1b]0;pwned\x07")
        assert answer["code"] == "bad_message" and answer["fatal"]
        _, answer = await session(server, server.token, agent="x" * 65)
        assert answer["code"] == "bad_message"
        await honest_game(server, server.token)


def test_names_from_the_index_are_shown_without_their_control_codes(tmp_path, capsys):
    store = Store(tmp_path)
    game_id = store.start_game({"game": "mistake-bound", "class": "thresholds:n=4",
                                "learner": "\x1b[2J\x1b[31mevil", "adversary": "a\rb",
                                "seed": 0, "horizon": 5}, log="x.lslog")
    store.finish_game(game_id, {"status": "complete", "rounds": 5, "mistakes": 1})
    assert main(["games", "--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\\x1b[2J" in out
    assert main(["games", "--data", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["games"][0]["learner"] == "\x1b[2J\x1b[31mevil"


async def test_enter_without_a_token_is_refused_and_closed(tmp_path):
    async with running_server(tmp_path, anonymous=True) as server:
        ws, welcome = await session(server, None)
        assert welcome["type"] == "welcome"
        await ws.send(msgpack.packb({"type": "enter", "tournament": "t"}))
        await closed_after(ws, "unauthorized", 1008)
        await honest_game(server, None)


# -- limits -------------------------------------------------------------------------------

def limits(**changes):
    return ConnectionLimits(**changes)


async def test_no_hello_and_an_idle_lobby_time_out(tmp_path):
    async with running_server(tmp_path, connections=limits(handshake_s=0.3,
                                                           lobby_idle_s=0.5)) as server:
        silent = await connect(server.url, compression=None, proxy=None)
        await closed_after(silent, "timeout")
        ws, welcome = await session(server, server.token)
        assert welcome["limits"]["lobby_idle_ms"] == 500
        started = time.monotonic()
        await closed_after(ws, "timeout")
        assert 0.4 < time.monotonic() - started < 5
        # a session that keeps playing is not idle
        out = await honest_game(server, server.token)
        assert out["mistakes"] <= 6


async def test_connections_per_token_per_address_and_in_all(tmp_path):
    async with running_server(tmp_path, connections=limits(per_token=2, per_address=6,
                                                           max_connections=4)) as server:
        held = [(await session(server, server.token))[0] for _ in range(2)]
        ws, answer = await session(server, server.token)
        assert answer["code"] == "over_budget" and "connections of this token" in answer["message"]
        other = server.store.add_token("dora")
        held.append((await session(server, other))[0])
        held.append((await session(server, other))[0])
        # a fifth connection: the server is full (4), told so and closed with 1013
        ws = await connect(server.url, compression=None, proxy=None)
        await closed_after(ws, "over_budget", 1013)
        # sockets from one address beyond per_address (6) are dropped before any handshake
        raw = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(4)]
        try:
            await asyncio.sleep(0.2)
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            with pytest.raises(ConnectionResetError):  # dropped at once, nothing said
                assert await asyncio.wait_for(reader.read(1), 5) == b""
                raise ConnectionResetError
            writer.close()
        finally:
            for s in raw:
                s.close()
        for ws in held:
            await ws.close()
        await asyncio.sleep(0.2)
        await honest_game(server, server.token)


async def test_games_per_token(tmp_path):
    async with running_server(tmp_path, connections=limits(games_per_token=1)) as server:
        creator, _ = await session(server, server.token)
        await creator.send(msgpack.packb({**CHALLENGE, "type": "create"}))
        assert (await receive(creator))["type"] == "created"
        ws, _ = await session(server, server.token)
        await ws.send(msgpack.packb(CHALLENGE))
        answer = await receive(ws)
        assert answer["code"] == "over_budget" and not answer["fatal"]
        await creator.close()
        await until(lambda: not server.open_games)  # (its game closed with it)
        await ws.send(msgpack.packb(CHALLENGE))  # the slot is free again
        assert (await receive(ws))["type"] == "start"


async def test_the_lobby_message_rate(tmp_path):
    async with running_server(tmp_path, connections=limits(message_rate=1.0,
                                                           message_burst=3)) as server:
        ws, _ = await session(server, server.token)
        bad_join = msgpack.packb({"type": "join", "game_id": "nope"})
        codes = []
        for _ in range(3 + LOBBY_FAULTS):
            await ws.send(bad_join)
        with pytest.raises(ConnectionClosed):
            while True:
                codes.append((await receive(ws))["code"])
        assert codes[:3] == ["not_found"] * 3
        assert "over_budget" in codes[3:]
        await honest_game(server, server.token)


@pytest.mark.slow
async def test_a_peer_that_pings_and_never_reads_cannot_grow_the_server(tmp_path):
    async with running_server(tmp_path) as server, connect_raw(server.url) as client:
        client.transport.pause_reading()  # the pongs are never read
        for _ in range(160):  # 20 MB of pings
            for _ in range(1000):
                client.protocol.send_ping(bytes(125))
            client._write()
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.3)
        (connection,) = server._server.connections
        # the server stopped reading the pings: what it holds stays small (it held
        # ~21 MB of pongs when it read on regardless), the peer keeps its own bytes
        assert connection.transport.get_write_buffer_size() < 1 << 20
        assert client.transport.get_write_buffer_size() > 10 << 20
        await honest_game(server, server.token)
        client.transport.abort()  # (a closing handshake would wait behind the unread pongs)


@pytest.mark.parametrize("argv", [
    ["--move-deadline", "-1"], ["--move-deadline", "nan"], ["--max-frame", "0"],
    ["--time-bank", "-3"], ["--lobby-idle", "0"], ["--per-token", "-2"],
    ["--max-connections", "x"], ["--message-rate", "inf"],
])
def test_serve_refuses_limits_that_are_not_positive(argv, capsys):
    assert main(["serve", "--port", "0", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and argv[0] in err


# -- the lifecycle of games ---------------------------------------------------------------

async def test_an_abandoned_created_game_expires_and_a_leaving_creator_takes_it(tmp_path):
    async with running_server(tmp_path, connections=limits(create_expiry_s=0.5)) as server:
        ws, _ = await session(server, server.token)
        await ws.send(msgpack.packb({**CHALLENGE, "type": "create"}))
        game_id = (await receive(ws))["game_id"]
        expired = await receive(ws)
        assert expired["code"] == "timeout" and not expired["fatal"]
        assert game_id not in server.open_games
        joiner, _ = await session(server, server.token, "adversary")
        await joiner.send(msgpack.packb({"type": "join", "game_id": game_id}))
        assert (await receive(joiner))["code"] == "not_found"
        # the creator is back in the lobby: it may create again, then leave
        await ws.send(msgpack.packb({**CHALLENGE, "type": "create"}))
        second = (await receive(ws))["game_id"]
        await ws.close()
        await until(lambda: second not in server.open_games)
        await honest_game(server, server.token)


async def test_stop_ends_games_and_open_ones_within_seconds(tmp_path):
    server_cm = running_server(tmp_path)
    server = await server_cm.__aenter__()
    creator, _ = await session(server, server.token)
    await creator.send(msgpack.packb({**CHALLENGE, "type": "create"}))
    await receive(creator)
    _idle, _ = await session(server, server.token)
    game = asyncio.ensure_future(play_remote(
        server.url, LEARNERS.make("halving"), "random-target",
        GameSpec(MISTAKE_BOUND, 1_000_000, make_class("thresholds:n=63")), seed=5,
        token=server.token))
    while not server.running:
        await asyncio.sleep(0.01)
    (game_id,) = server.running
    await asyncio.sleep(0.2)
    started = time.monotonic()
    await asyncio.wait_for(server_cm.__aexit__(None, None, None), 15)
    assert time.monotonic() - started < 10
    with pytest.raises(Exception):  # noqa: B017 - the client sees the connection close
        await game
    row = Store(tmp_path).game(game_id)
    assert row["status"] == "aborted:shutdown" and row["rounds"] > 0
    log = read_log(Path(row["log"]))
    assert log.status == "aborted:shutdown" and log.n_rounds == row["rounds"]


async def test_an_internal_error_ends_its_game_with_a_footer_and_the_server_goes_on(
        tmp_path, monkeypatch):
    import littlestone.server.net.hosting as server_module

    real = server_module.run_game

    async def broken(game, seeds, learner, adversary, writer):
        if game.rounds == 13:
            writer.rounds(1, [1, 2], [0.0, 1.0], [0, 1], [0, 1])
            raise RuntimeError("a bug")
        return await real(game, seeds, learner, adversary, writer)

    monkeypatch.setattr(server_module, "run_game", broken)
    async with running_server(tmp_path) as server:
        out = await play_remote(server.url, LEARNERS.make("halving"), "random-target",
                                GameSpec(MISTAKE_BOUND, 13, make_class("thresholds:n=63")),
                                seed=1, token=server.token)
        assert out["status"] == "aborted:internal"
        (row,) = Store(tmp_path).games(status="aborted:internal")
        assert row["rounds"] == 2
        assert read_log(Path(row["log"])).status == "aborted:internal"
        await honest_game(server, server.token)


def serve_process(data: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--port", "0",
                             "--data", str(data), "--anonymous", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    banner = proc.stdout.readline()
    return proc, banner.split()[3]


def long_game(url: str, data: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "littlestone", "connect", url, "--learner",
                             "perceptron", "--vs", "random-target", "--class",
                             "halfspaces:d=20,margin=0.1", "--rounds", "1000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_rounds(data: Path, at_least: int = 1000) -> GameRow:
    for _ in range(600):
        rows = Store(data).games(status="running")
        if rows and Path(str(rows[0]["log"])).exists():
            try:
                if read_log(Path(str(rows[0]["log"]))).n_rounds >= at_least:
                    return rows[0]
            except ForeignLog:  # not even its header written yet
                pass
        time.sleep(0.05)
    raise AssertionError("the game did not start")


@pytest.mark.slow
def test_kill_9_then_restart_marks_the_game_interrupted(tmp_path):
    data = tmp_path / "data"
    proc, url = serve_process(data)
    client = long_game(url, data)
    try:
        row = wait_for_rounds(data)
        proc.kill()
        proc.wait(10)
    finally:
        client.kill()
        client.wait(10)
    assert Store(data).game(row["game_id"])["status"] == "running"  # as it was left
    proc, url = serve_process(data)
    try:
        swept = Store(data).game(row["game_id"])
        log = read_log(Path(swept["log"]))
        assert swept["status"] == "interrupted" and log.status == "incomplete"
        assert swept["rounds"] == log.n_rounds >= 1000
        # a game of a live process is left alone by a second server's sweep
        client = long_game(url, data)
        live = wait_for_rounds(data, 1)
        second, _ = serve_process(data)
        second.send_signal(signal.SIGTERM)
        second.communicate(timeout=20)
        assert Store(data).game(live["game_id"])["status"] == "running"
        client.kill()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "server stopped" in err


@pytest.mark.slow
def test_sigterm_ends_the_server_within_seconds_with_every_game_recorded(tmp_path):
    data = tmp_path / "data"
    proc, url = serve_process(data)
    client = long_game(url, data)
    creator = subprocess.Popen([sys.executable, "-m", "littlestone", "connect", url,
                                "--learner", "halving", "--create", "--class",
                                "thresholds:n=63", "--rounds", "10"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        row = wait_for_rounds(data)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
        assert time.monotonic() - started < 10
    finally:
        client.kill()
        creator.kill()
    assert proc.returncode == 0 and "Traceback" not in err
    assert Store(data).game(row["game_id"])["status"] == "aborted:shutdown"


def test_play_killed_with_sigterm_records_the_game_aborted(tmp_path):
    data = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-m", "littlestone", "play", "--learner",
                             "perceptron", "--adversary", "random-target", "--class",
                             "halfspaces:d=50,margin=0.1", "--rounds", "1000000", "--data",
                             str(data), "--log", "full"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_for_rounds(data, 1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 143 and "terminated" in err and "Traceback" not in err
    (row,) = Store(data).games()
    assert row["status"] == "aborted"


async def test_a_negative_exact_ldim_budget_is_refused_not_an_internal_error(tmp_path):
    async with running_server(tmp_path) as server:
        with pytest.raises(ServerError, match=r"over_budget: .*budget=-1 is not a whole number"):
            await play_remote(server.url, LEARNERS.make("halving"), "shattered-tree:budget=-1",
                              GAME, seed=1, token=server.token)
        assert Store(tmp_path).games(status="aborted:internal") == []
        await honest_game(server, server.token)


async def test_a_revoked_token_is_refused_at_its_next_request_on_an_open_connection(tmp_path):
    """Revoking a token (over the wire or with ``token revoke``: the same row) stops the
    connections it already has: the next lobby request is ``unauthorized``, and closed.
    A game it is playing goes on to its end; other tokens play on."""
    async with running_server(tmp_path) as server:
        other = server.store.add_token("carol")
        ws, welcome = await session(server, server.token)
        assert welcome["type"] == "welcome"
        bob, _ = await hand_played(server, server.token)
        assert server.store.revoke_token("bob")
        await ws.send(msgpack.packb(CHALLENGE))
        await closed_after(ws, "unauthorized", 1008)
        assert (await finish(bob))["status"] == "complete"  # its running game ends well
        await honest_game(server, other)
        # a name given a new token: the old token's connections stop too
        ws, _ = await session(server, other)
        server.store.add_token("carol", replace=True)
        await ws.send(msgpack.packb(CHALLENGE))
        await closed_after(ws, "unauthorized", 1008)
