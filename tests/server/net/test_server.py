"""The WebSocket server and client, on real loopback sockets (pytest-asyncio)."""

from __future__ import annotations

import asyncio
import contextlib
import math
from pathlib import Path

import msgpack
import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from littlestone.adversaries import ADVERSARIES
from littlestone.client import ServerError, play_remote
from littlestone.games.classes import make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec, game_seeds
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.protocol.codec import Limits
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.net.settings import LOBBY_FAULTS
from littlestone.server.records.logs import read_log
from littlestone.server.records.store import Store
from tests.support.servers import running_server

HELLO = {"type": "hello", "version": 1, "role": "learner", "agent": "raw", "token": None,
         "capabilities": []}


@pytest.fixture
async def server(tmp_path):
    settings = ServerSettings(port=0, data=tmp_path / "data", anonymous=False,
                              move_deadline=2.0, time_bank=0.5, limits=Limits(max_frame=1 << 16))
    game_server = GameServer(settings)
    await game_server.start()
    game_server.token = game_server.store.add_token("alice")
    yield game_server
    await game_server.stop()


def local_records(game, learner, adversary, seed, key=None):
    rows = []
    play(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), seed, key=key,
         on_record=lambda r: rows.append([v.tolist() if isinstance(v, np.ndarray) else v
                                          for v in r]))
    return rows


def logged_records(server, game_id):
    row = Store(server.settings.data).game(game_id)
    log = read_log(Path(row["log"]))
    return [[v.tolist() if isinstance(v, np.ndarray) else v for v in r] for r in log.records()]


PAIRS = [
    ("learner", MISTAKE_BOUND, "thresholds:n=255", None, "halving", "random-target", 300),
    ("learner", MISTAKE_BOUND, "halfspaces:d=6,margin=0.2", None, "perceptron", "random-target",
     300),
    ("learner", EXPERTS, "singletons:n=8", None, "hedge", "noisy:rate=0.2", 100),
    ("learner", EXPERTS, None, 3, "weighted-majority", "cover-flip", 50),
    ("adversary", MISTAKE_BOUND, "thresholds:n=63", None, "soa", "shattered-tree", 20),
    ("adversary", MISTAKE_BOUND, "halfspaces:d=9,margin=0.34", None, "perceptron",
     "perceptron-margin", 20),
    ("adversary", EXPERTS, None, 2, "hedge", "cover-flip", 40),
]


@pytest.mark.parametrize(("remote", "name", "spec", "d", "learner", "adversary", "rounds"),
                         PAIRS)
async def test_remote_and_local_games_have_the_same_records(server, remote, name, spec, d,
                                                            learner, adversary, rounds):
    game = GameSpec(name, rounds, make_class(spec) if spec else None, d)
    if remote == "learner":
        out = await play_remote(server.url, LEARNERS.make(learner), adversary, game, seed=11,
                                token=server.token)
    else:
        out = await play_remote(server.url, ADVERSARIES.make(adversary), learner, game, seed=11,
                                token=server.token)
    assert out["status"] == "complete", out
    # the server's game key is secret until the end, then revealed: with it, the same
    # records as the local driver's
    key = bytes.fromhex(out["game_key"])
    assert key != game_seeds(11).key
    assert logged_records(server, out["game_id"]) == local_records(game, learner, adversary, 11,
                                                                   key)
    local = play(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), 11, key=key)
    assert out["mistakes"] == local.mistakes and out["rounds"] == rounds


async def raw_client(server, hello):
    ws = await connect(server.url, compression=None, proxy=None)
    await ws.send(msgpack.packb(hello))
    return ws


async def receive(ws):
    return msgpack.unpackb(await ws.recv())


async def test_an_independent_client_written_from_protocol_md(server):
    """Raw websockets and msgpack only, following PROTOCOL.md sections 3-5.1 and 9."""
    ws = await raw_client(server, dict(HELLO, token=server.token))
    welcome = await receive(ws)
    assert welcome["type"] == "welcome" and welcome["version"] == 1
    await ws.send(msgpack.packb({"type": "challenge", "opponent": "random-target", "seed": 7,
                                 "rules": {"game": "mistake-bound", "class": "thresholds:n=4",
                                           "experts": None, "rounds": 50, "horizon": 50}}))
    start = await receive(ws)
    assert start["type"] == "start" and start["role"] == "learner"
    alive = list(range(5))  # halving over h_a(x) = [x < a], a = 0..4
    last_x = None
    while True:
        message = await receive(ws)
        if message.get("label") is not None:
            y = message["label"]["y"]
            alive = [a for a in alive if int(last_x < a) == y] or alive
        if message["type"] == "end":
            break
        assert message["type"] == "instance"
        last_x = message["x"]
        votes = sum(last_x < a for a in alive)
        await ws.send(msgpack.packb({"type": "predict", "t": message["t"],
                                     "p": 1.0 if 2 * votes >= len(alive) else 0.0}))
    assert message["status"] == "complete"
    assert message["result"]["rounds"] == 50
    assert message["result"]["mistakes"] <= math.log2(5)
    await ws.close()


async def assert_closed_with_error(ws, code, close_code=None):
    message = await receive(ws)
    assert message["type"] == "error" and message["code"] == code and message["fatal"]
    with pytest.raises(ConnectionClosed) as info:
        await ws.recv()
    if close_code is not None:
        assert info.value.rcvd is not None and info.value.rcvd.code == close_code


async def well_behaved_game_completes(server):
    game = GameSpec(MISTAKE_BOUND, 30, make_class("thresholds:n=31"))
    out = await play_remote(server.url, LEARNERS.make("halving"), "random-target", game, 1,
                            server.token)
    assert out["status"] == "complete"


async def test_handshake_errors(server):
    ws = await raw_client(server, dict(HELLO, version=2, token=server.token))
    await assert_closed_with_error(ws, "unsupported_version", 1002)
    ws = await raw_client(server, HELLO)  # no token
    await assert_closed_with_error(ws, "unauthorized", 1008)
    ws = await raw_client(server, dict(HELLO, token="wrong"))
    await assert_closed_with_error(ws, "unauthorized", 1008)
    ws = await connect(server.url, compression=None, proxy=None)
    await ws.send(b"\xc1\xc1")
    await assert_closed_with_error(ws, "bad_message")
    ws = await connect(server.url, compression=None, proxy=None)
    await ws.send("a text frame")
    await assert_closed_with_error(ws, "bad_message")
    ws = await connect(server.url, compression=None, proxy=None)
    await ws.send(msgpack.packb({"type": "join", "game_id": "x"}))
    await assert_closed_with_error(ws, "out_of_turn")
    await well_behaved_game_completes(server)


async def test_errors_after_the_handshake_are_not_fatal(server):
    ws = await raw_client(server, dict(HELLO, token=server.token))
    assert (await receive(ws))["type"] == "welcome"
    for frame, code in [(b"\xc1", "bad_message"), ("text", "bad_message"),
                        (msgpack.packb({"type": "frobnicate"}), "bad_message"),
                        (msgpack.packb({"type": "predict", "t": 1, "p": 0.5}), "out_of_turn"),
                        (msgpack.packb({"type": "challenge", "opponent": "nosuch", "seed": 1,
                                        "rules": {"game": "mistake-bound",
                                                  "class": "thresholds:n=4", "rounds": 3}}),
                         "unsupported_game"),
                        (msgpack.packb({"type": "challenge", "opponent": "random-target",
                                        "seed": 1, "rules": {"game": "chess", "rounds": 3}}),
                         "bad_message"),
                        (msgpack.packb({"type": "join", "game_id": "g"}), "not_found")]:
        await ws.send(frame)
        message = await receive(ws)
        assert message["type"] == "error" and message["code"] == code, (frame, message)
        assert message["fatal"] is False
    # still usable: a game on the same connection
    await ws.send(msgpack.packb({"type": "challenge", "opponent": "random-target", "seed": 2,
                                 "rules": {"game": "mistake-bound", "class": "thresholds:n=4",
                                           "rounds": 2}}))
    assert (await receive(ws))["type"] == "start"
    await ws.close()


async def test_an_oversized_frame_closes_the_connection(server):
    ws = await raw_client(server, dict(HELLO, token=server.token))
    await receive(ws)
    await ws.send(msgpack.packb({"type": "join", "game_id": "x" * (1 << 17)}))
    with pytest.raises(ConnectionClosed) as info:
        await receive(ws)
    assert info.value.rcvd is not None and info.value.rcvd.code == 1009
    await well_behaved_game_completes(server)


async def start_raw_game(server, rounds=5):
    ws = await raw_client(server, dict(HELLO, token=server.token))
    await receive(ws)
    await ws.send(msgpack.packb({"type": "challenge", "opponent": "random-target", "seed": 3,
                                 "rules": {"game": "mistake-bound", "class": "thresholds:n=8",
                                           "rounds": rounds}}))
    start = await receive(ws)
    return ws, start["game_id"]


async def until_end(ws, answer):
    """Collect the server's messages until ``end``, answering each instance with the next
    of ``answer`` (None: stay silent)."""
    seen = []
    moves = iter(answer)
    while True:
        message = await asyncio.wait_for(receive(ws), 10)
        seen.append(message)
        if message["type"] == "end":
            return seen
        if message["type"] == "instance":
            move = next(moves, None)
            for one in move if isinstance(move, list) else [move] if move else []:
                await ws.send(msgpack.packb(one))


async def test_faults_cost_the_round_then_forfeit(server):
    ws, game_id = await start_raw_game(server, rounds=10)
    seen = await until_end(ws, [{"type": "predict", "t": 1, "p": 1.5},  # illegal move
                                {"type": "predict", "t": 9, "p": 0.5},  # a round not yet due
                                {"type": "label", "t": 3, "y": 0}])      # not a learner's move
    errors = [m for m in seen if m["type"] == "error"]
    assert [e["code"] for e in errors] == ["illegal_move", "out_of_turn", "out_of_turn"]
    assert not any(e["fatal"] for e in errors)
    end = seen[-1]
    assert end["status"] == "forfeit:learner:out_of_turn"
    # rounds 1 and 2 were scored against the learner, as mistakes
    assert end["result"]["rounds"] == 2 and end["result"]["mistakes"] == 2
    row = Store(server.settings.data).game(game_id)
    assert row["status"] == "forfeit:learner:out_of_turn"
    log = read_log(Path(row["log"]))
    assert [r.mistake for r in log.records()] == [True, True]
    await ws.close()
    await well_behaved_game_completes(server)


async def test_a_late_move_is_dropped_not_charged_twice(server):
    ws, _ = await start_raw_game(server, rounds=3)
    seen = await until_end(ws, [{"type": "predict", "t": 1, "p": 7.0},   # fault: round 1 lost
                                [{"type": "predict", "t": 1, "p": 0.0},  # stale: dropped
                                 {"type": "predict", "t": 2, "p": 0.0}],
                                {"type": "predict", "t": 3, "p": 0.0}])
    assert [m["code"] for m in seen if m["type"] == "error"] == ["illegal_move"]
    assert seen[-1]["status"] == "complete"
    await ws.close()


async def test_deadline_overrun(tmp_path):
    async with running_server(tmp_path, move_deadline=0.2, time_bank=0.1) as fast:
        ws, game_id = await start_raw_game(fast)
        # deadline 0.2 s + bank 0.1 s, then 0.2 s a round: each timeout costs the round,
        # the third forfeits
        seen = await until_end(ws, [])
        assert [m["code"] for m in seen if m["type"] == "error"] == ["timeout"] * 3
        end = seen[-1]
        assert end["status"] == "forfeit:learner:timeout"
        assert end["result"]["rounds"] == 2 and end["result"]["mistakes"] == 2
        assert Store(tmp_path).game(game_id)["status"] == "forfeit:learner:timeout"
        await ws.close()
        await well_behaved_game_completes(fast)


async def test_disconnect_mid_game(server):
    ws, game_id = await start_raw_game(server, rounds=50)
    assert (await receive(ws))["type"] == "instance"
    await ws.close()
    for _ in range(600):  # (a state to reach: seconds however loaded)
        row = Store(server.settings.data).game(game_id)
        if row["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert row["status"] == "disconnected:learner"
    log = read_log(Path(row["log"]))
    assert log.status == "disconnected:learner"
    await well_behaved_game_completes(server)


async def test_concurrent_games(server):
    game = GameSpec(MISTAKE_BOUND, 200, make_class("thresholds:n=127"))
    outs = await asyncio.gather(*[
        play_remote(server.url, LEARNERS.make("halving"), "random-target", game, seed,
                    server.token) for seed in range(8)])
    assert all(o["status"] == "complete" for o in outs)
    assert [o["mistakes"] for o in outs] == [
        play(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), s,
             key=bytes.fromhex(o["game_key"])).mistakes for s, o in enumerate(outs)]


async def test_graceful_shutdown_while_games_run(tmp_path):
    settings = ServerSettings(port=0, data=tmp_path, anonymous=True, move_deadline=5.0)
    game_server = GameServer(settings)
    await game_server.start()
    url = f"ws://127.0.0.1:{game_server.port}"
    ws = await connect(url, compression=None, proxy=None)
    await ws.send(msgpack.packb(HELLO))
    await receive(ws)
    await ws.send(msgpack.packb({"type": "challenge", "opponent": "random-target", "seed": 1,
                                 "rules": {"game": "mistake-bound", "class": "thresholds:n=8",
                                           "rounds": 100}}))
    game_id = (await receive(ws))["game_id"]
    await receive(ws)  # round 1 waits for our move: the game is running
    spectator = await connect(url, compression=None, proxy=None)
    await spectator.send(msgpack.packb(dict(HELLO, role="spectator")))
    await receive(spectator)
    await spectator.send(msgpack.packb({"type": "watch", "game_id": game_id}))
    assert (await receive(spectator))["type"] == "watching"
    await game_server.stop()
    row = Store(tmp_path).game(game_id)
    assert row["status"] == "aborted:shutdown"
    assert read_log(Path(row["log"])).status == "aborted:shutdown"
    end = await receive(spectator)
    assert end["type"] == "end" and end["status"] == "aborted:shutdown"
    for peer in (ws, spectator):
        with pytest.raises(ConnectionClosed):
            for _ in range(3):
                await peer.recv()


async def test_two_remote_agents_paired_by_game_id(server):
    game = GameSpec(MISTAKE_BOUND, 15, make_class("thresholds:n=63"))
    created: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    learner_side = asyncio.create_task(play_remote(
        server.url, LEARNERS.make("halving"), None, game, seed=5, token=server.token,
        on_created=created.set_result))
    game_id = await asyncio.wait_for(created, 60)  # (seconds: however loaded)
    adversary_side = await play_remote(server.url, ADVERSARIES.make("shattered-tree"), None,
                                       game, token=server.token, join=game_id)
    learner_out = await asyncio.wait_for(learner_side, 60)
    assert learner_out["status"] == adversary_side["status"] == "complete"
    assert learner_out["mistakes"] == adversary_side["mistakes"] >= 6  # Ldim of thresholds:n=63
    assert learner_out["game_id"] == adversary_side["game_id"] == game_id
    local = play(game, LEARNERS.make("halving"), ADVERSARIES.make("shattered-tree"), 5)
    assert learner_out["mistakes"] == local.mistakes
    row = Store(server.settings.data).game(game_id)
    assert row["learner"] == "remote:littlestone-client" and row["status"] == "complete"
    with pytest.raises(ServerError, match="not_found"):
        await play_remote(server.url, LEARNERS.make("halving"), None, game, token=server.token,
                          join="no-such-game")


async def test_client_errors(server):
    game = GameSpec(MISTAKE_BOUND, 5, make_class("thresholds:n=8"))
    with pytest.raises(ServerError, match="unauthorized"):
        await play_remote(server.url, LEARNERS.make("halving"), "random-target", game, 1, "bad")
    with pytest.raises(ServerError, match="unsupported_game"):
        await play_remote(server.url, LEARNERS.make("halving"), "cover-flip", game, 1,
                          server.token)


@pytest.mark.slow
def test_serve_connect_and_token_commands(tmp_path, capsys, monkeypatch):
    import json
    import signal
    import subprocess
    import sys

    from littlestone.cli import main

    assert main(["token", "add", "carol", "--data", str(tmp_path)]) == 0
    token = capsys.readouterr().out.strip()
    proc = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--port", "0",
                             "--data", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stdout.readline()
        assert "tokens required" in banner
        url = banner.split()[3]
        monkeypatch.setenv("LITTLESTONE_TOKEN", token)
        assert main(["connect", url, "--learner", "halving", "--vs", "random-target",
                     "--class", "thresholds:n=63", "--rounds", "100", "--seed", "4",
                     "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["status"] == "complete" and out["ldim"] == 6 and out["bound"] == 6
        monkeypatch.setenv("LITTLESTONE_TOKEN", "nope")
        assert main(["connect", url, "--learner", "halving", "--vs", "random-target",
                     "--class", "thresholds:n=63", "--rounds", "5"]) == 2
        assert "unauthorized" in capsys.readouterr().err
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "server stopped" in err
    monkeypatch.delenv("LITTLESTONE_TOKEN")
    assert main(["connect", url, "--learner", "halving", "--vs", "random-target", "--class",
                 "thresholds:n=63", "--rounds", "5"]) == 2
    assert "connect:" in capsys.readouterr().err


async def test_faults_in_the_middle_of_queued_rounds_hand_over_and_back(tmp_path, monkeypatch):
    """Rounds answered from the connection's callback, then an illegal move, stale and
    early moves, a timeout: each bad round is scored as a mistake (p = 1 - y), the good
    ones with their p, and the callback takes the rounds up again after each."""
    from littlestone.server.net import players

    answered = []
    original = players._FastRounds.__call__

    def counting(self, frame):
        taken = original(self, frame)
        answered.append(taken)
        return taken

    monkeypatch.setattr(players._FastRounds, "__call__", counting)
    async with running_server(tmp_path, move_deadline=1.0, time_bank=0.0) as game_server:
        ws, game_id = await start_raw_game(game_server, rounds=12)
        script = {5: [{"type": "predict", "t": 5, "p": 7.0}],             # illegal
                  6: [{"type": "predict", "t": 5, "p": 0.0},              # stale: dropped
                      {"type": "predict", "t": 6, "p": 0.25}],
                  8: [],                                                  # silent: timeout
                  9: [{"type": "predict", "t": 10, "p": 0.0},             # early: a fault
                      ]}
        errors = []
        while True:
            message = await asyncio.wait_for(receive(ws), 10)
            if message["type"] == "end":
                break
            if message["type"] == "error":
                errors.append((message["code"], message.get("fatal")))
                continue
            t = message["t"]
            for move in script.get(t, [{"type": "predict", "t": t, "p": 0.25}]):
                await ws.send(msgpack.packb(move))
        await ws.close()
        assert errors == [("illegal_move", False), ("timeout", False), ("out_of_turn", False)]
        assert message["status"] == "forfeit:learner:out_of_turn"
        log = read_log(Path(Store(tmp_path).game(game_id)["log"]))
        records = list(log.records())
        assert [r.t for r in records] == list(range(1, 9))  # forfeited in round 9
        for r in records:
            expected = 1.0 - r.y if r.t in (5, 8) else 0.25
            assert r.p == expected, r
        assert sum(answered) >= 4  # rounds 2-4 and 7 at least came through the callback
        assert False in answered   # and it handed over


async def test_a_learner_that_raises_mid_game_raises_out_of_play_remote(server):
    from littlestone.learners.halving import Halving

    class Fails(Halving):
        def predict(self, x):
            if self.rounds_seen == 5:
                raise ZeroDivisionError("round 5")
            self.rounds_seen += 1
            return super().predict(x)

    learner = Fails()
    learner.rounds_seen = 0
    game = GameSpec(MISTAKE_BOUND, 40, make_class("thresholds:n=31"))
    from littlestone.client import AgentCrashed

    with pytest.raises(AgentCrashed, match="round 5") as info:  # as play says it
        await play_remote(server.url, learner, "random-target", game, 1, server.token)
    assert isinstance(info.value.error, ZeroDivisionError)
    assert info.value.status == "crash:learner:ZeroDivisionError"
    for _ in range(600):  # (a state to reach: seconds however loaded)
        rows = Store(server.settings.data).games(limit=1)
        if rows and rows[0]["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert rows[0]["status"] == "disconnected:learner" and rows[0]["rounds"] == 5
    await well_behaved_game_completes(server)


async def test_stale_moves_do_not_restart_the_clock(tmp_path):
    async with running_server(tmp_path, move_deadline=0.4, time_bank=0.0) as game_server:
        ws, _ = await start_raw_game(game_server, rounds=3)
        assert (await receive(ws))["t"] == 1
        await ws.send(msgpack.packb({"type": "predict", "t": 1, "p": 7.0}))  # a fault
        assert (await receive(ws))["code"] == "illegal_move"
        assert (await receive(ws))["t"] == 2
        loop = asyncio.get_running_loop()
        asked = loop.time()
        seen = None
        while seen is None and loop.time() - asked < 3:
            await ws.send(msgpack.packb({"type": "predict", "t": 1, "p": 0.0}))  # late: dropped
            with contextlib.suppress(TimeoutError):
                seen = await asyncio.wait_for(receive(ws), 0.1)
        # the round ends ~0.4 s after it was asked (never, if each stale move restarted
        # the clock: they keep coming for 3 s): by its timeout, or sooner by the third
        # late move, a fault (two are dropped while one move is awaited, PROTOCOL.md 6)
        assert seen is not None and seen["code"] in ("timeout", "out_of_turn")
        assert seen["code"] == "timeout" or "more than 2 late moves" in seen["message"]
        assert loop.time() - asked < 2.0
        await ws.close()


async def test_a_spectator_watches_a_running_game_to_its_end(server):
    ws, game_id = await start_raw_game(server, rounds=600)
    first = await receive(ws)
    assert first["type"] == "instance" and first["t"] == 1
    spectator = await raw_client(server, dict(HELLO, role="spectator", token=server.token))
    assert (await receive(spectator))["type"] == "welcome"
    await spectator.send(msgpack.packb({"type": "watch", "game_id": game_id}))
    watching = await receive(spectator)
    assert watching["type"] == "watching" and watching["game_id"] == game_id
    assert watching["rules"]["rounds"] == 600 and watching["t"] == 0
    assert watching["learner"] == "remote:raw" and watching["adversary"] == "random-target"
    message = first  # the learner: always predict 1
    while message["type"] != "end":
        await ws.send(msgpack.packb({"type": "predict", "t": message["t"], "p": 1.0}))
        message = await receive(ws)
    played = message
    seen, t = [], 0
    while True:
        update = await asyncio.wait_for(receive(spectator), 10)
        if update["type"] == "end":
            break
        assert update["type"] == "rounds" and update["t0"] == t + 1, update
        t = update["t"]
        assert t == update["t0"] + update["n"] - 1 == update["t0"] + len(update["y"]) - 1
        seen.append(update)
    assert t == 600 and len(seen) >= 3  # blocks of 256 rounds
    assert update["status"] == played["status"] == "complete"
    assert update["result"] == played["result"]
    assert seen[-1]["mistakes"] == played["result"]["mistakes"]
    assert sum(y == 0 for s in seen for y in s["y"]) == played["result"]["mistakes"]
    assert math.isclose(seen[-1]["expected_mistakes"], played["result"]["expected_mistakes"])
    # back in the lobby: another watch of a game that has ended is not_found
    await spectator.send(msgpack.packb({"type": "watch", "game_id": game_id}))
    error = await receive(spectator)
    assert error["type"] == "error" and error["code"] == "not_found" and not error["fatal"]
    await spectator.close()
    await ws.close()


async def test_watch_is_for_spectators_and_a_spectator_leaving_changes_nothing(server):
    ws, game_id = await start_raw_game(server, rounds=40)
    player = await raw_client(server, dict(HELLO, token=server.token))
    await receive(player)
    await player.send(msgpack.packb({"type": "watch", "game_id": game_id}))
    error = await receive(player)
    assert error["code"] == "out_of_turn" and "spectator" in error["message"]
    spectator = await raw_client(server, dict(HELLO, role="spectator", token=server.token))
    await receive(spectator)
    await spectator.send(msgpack.packb({"type": "challenge", "opponent": "random-target",
                                        "seed": 1, "rules": {"game": "mistake-bound",
                                                             "class": "thresholds:n=4",
                                                             "rounds": 3}}))
    assert (await receive(spectator))["code"] == "out_of_turn"
    await spectator.send(msgpack.packb({"type": "watch", "game_id": "no-such-game"}))
    assert (await receive(spectator))["code"] == "not_found"
    await spectator.send(msgpack.packb({"type": "watch", "game_id": game_id}))
    assert (await receive(spectator))["type"] == "watching"
    await spectator.close()  # leaves mid-game
    seen = await until_end(ws, [{"type": "predict", "t": t, "p": 0.0} for t in range(1, 41)])
    assert seen[-1]["status"] == "complete" and seen[-1]["result"]["rounds"] == 40
    await player.close()
    await ws.close()
    await well_behaved_game_completes(server)


def garbage_frames(seed: int, n: int) -> list[bytes | str]:
    """Frames a careless or hostile client might send: random bytes, text, maps of the
    right and wrong types, moves for the wrong round, deep nesting, huge numbers."""
    import random

    rng = random.Random(seed)
    values = [None, True, -1, 0, 1, 2**64 - 1, 1.5, float("nan"), "", "x" * 50, b"\x00" * 9,
              [], [1, 2], {}, {"t": 1}]
    kinds = ["predict", "weights", "label", "instance", "commit", "reveal", "hello",
             "challenge", "join", "watch", "frobnicate", 7]
    frames: list[bytes | str] = []
    for _ in range(n):
        choice = rng.randrange(6)
        if choice == 0:
            frames.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))))
        elif choice == 1:
            frames.append("text " * rng.randrange(1, 5))
        elif choice == 2:
            nested: object = 1
            for _ in range(rng.randrange(5, 30)):
                nested = [nested]
            frames.append(msgpack.packb({"type": "predict", "t": 1, "p": 0.5, "z": nested}))
        else:
            message = {"type": rng.choice(kinds)}
            for key in rng.sample(["t", "p", "w", "y", "x", "game_id", "rules", "digest"],
                                  rng.randrange(4)):
                message[key] = rng.choice(values)
            if choice == 5:
                message = {"type": "predict", "t": rng.randrange(-2, 60),
                           "p": rng.choice([0.0, 1.0, 0.5, -0.1, 2.0, "1"])}
            frames.append(msgpack.packb(message, use_bin_type=True))
    return frames


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_garbage_in_the_lobby_and_mid_game_gets_typed_answers(server, seed):
    codes = set()
    # in the lobby: every frame is answered with a typed error (or a game), non-fatal but
    # for the LOBBY_FAULTS-th, which closes a connection that only sends garbage
    ws = await raw_client(server, dict(HELLO, token=server.token))
    await receive(ws)
    errors = 0
    for frame in garbage_frames(seed, 60):
        await ws.send(frame)
        message = await asyncio.wait_for(receive(ws), 5)
        if message["type"] == "error":
            codes.add(message["code"])
            errors += 1
            assert message["fatal"] is (errors == LOBBY_FAULTS), (errors, message)
            if message["fatal"]:
                break
    assert errors == LOBBY_FAULTS
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(receive(ws), 5)
    # mid-game: garbage between good moves; the game ends with a status, never internal
    ws, game_id = await start_raw_game(server, rounds=50)
    frames = iter(garbage_frames(seed + 100, 200))
    while True:
        message = await asyncio.wait_for(receive(ws), 10)
        if message["type"] == "end":
            break
        if message["type"] == "error":
            codes.add(message["code"])
            continue
        await ws.send(next(frames))
        await ws.send(msgpack.packb({"type": "predict", "t": message["t"], "p": 0.5}))
    assert message["status"] in ("complete", "forfeit:learner:bad_message",
                                 "forfeit:learner:out_of_turn",
                                 "forfeit:learner:illegal_move"), message
    assert Store(server.settings.data).game(game_id)["status"] == message["status"]
    assert "internal" not in codes and codes <= {"bad_message", "out_of_turn",
                                                 "illegal_move", "not_found",
                                                 "unsupported_game", "unauthorized"}
    await ws.close()
    await well_behaved_game_completes(server)


@pytest.fixture
def certificates(tmp_path):
    """A throwaway certificate authority and a server certificate for 127.0.0.1."""
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    paths = {"ca": tmp_path / "ca.pem", "cert": tmp_path / "server.pem"}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    cert.private_key_and_cert_chain_pem.write_to_path(str(paths["cert"]))
    return paths


async def test_a_tls_server_plays_over_wss_and_refuses_what_it_should(tmp_path, certificates):
    import ssl

    from littlestone.transport import client_tls, server_tls

    async with running_server(tmp_path / "data",
                              tls=server_tls(certificates["cert"])) as secure:
        assert secure.url.startswith("wss://")
        game = GameSpec(MISTAKE_BOUND, 300, make_class("thresholds:n=63"))
        out = await play_remote(secure.url, LEARNERS.make("halving"), "random-target", game, 3,
                                secure.token, tls=client_tls(certificates["ca"]))
        local = play(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 3,
                     key=bytes.fromhex(out["game_key"]))
        assert out["status"] == "complete" and out["mistakes"] == local.mistakes
        with pytest.raises(ssl.SSLCertVerificationError):  # not signed by a trusted CA
            await play_remote(secure.url, LEARNERS.make("halving"), "random-target", game, 3,
                              secure.token)
        with pytest.raises(InvalidHandshake):  # plain ws:// to a TLS port
            await play_remote(secure.url.replace("wss", "ws"), LEARNERS.make("halving"),
                              "random-target", game, 3, secure.token)
        out = await play_remote(secure.url, LEARNERS.make("halving"), "random-target", game, 3,
                                secure.token, tls=client_tls(certificates["ca"]))
        assert out["status"] == "complete"  # and it goes on


@pytest.mark.slow
def test_serve_and_connect_over_tls_from_the_command_line(tmp_path, certificates, capsys):
    import json
    import signal
    import subprocess
    import sys

    from littlestone.cli import main

    assert main(["serve", "--tls-cert", str(tmp_path / "nope.pem")]) == 2
    assert "cannot use the TLS certificate" in capsys.readouterr().err
    assert main(["serve", "--tls-key", str(certificates["cert"])]) == 2
    assert "--tls-key needs --tls-cert" in capsys.readouterr().err
    proc = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--port", "0",
                             "--anonymous", "--data", str(tmp_path / "data"), "--tls-cert",
                             str(certificates["cert"])], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().split()[3]
        assert url.startswith("wss://127.0.0.1:")
        assert main(["connect", url, "--learner", "halving", "--vs", "random-target",
                     "--class", "thresholds:n=63", "--rounds", "50", "--tls-ca",
                     str(certificates["ca"]), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["status"] == "complete"
        assert main(["connect", url, "--learner", "halving", "--vs", "random-target",
                     "--class", "thresholds:n=63", "--rounds", "50"]) == 2
        assert "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().err
        assert main(["watch", url, "some-game", "--tls-ca", str(tmp_path / "no-ca.pem")]) == 2
        assert "cannot use the certificate authority" in capsys.readouterr().err
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
