"""Bad input on the wire, on real loopback sockets: each gets the typed error of
PROTOCOL.md section 6 and follows the fault ladder (a fault costs the round or the move;
the third forfeits), never ``internal``; an honest game on the same server goes on."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.commitment import digest
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.protocol.messages import vector_to_wire
from littlestone.server.net import GameServer
from littlestone.server.records.logs import read_log
from littlestone.server.records.store import Store
from tests.support.servers import running_server

MB = {"game": "mistake-bound", "class": "thresholds:n=8", "rounds": 6}
EXPERTS3 = {"game": "experts", "class": None, "experts": 3, "rounds": 6}


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[GameServer]:
    async with running_server(tmp_path, move_deadline=3.0, time_bank=0.0) as game_server:
        yield game_server


@contextlib.asynccontextmanager
async def peer(server: GameServer, role: str = "learner", token: Any = "server"
               ) -> AsyncIterator[ClientConnection]:
    ws = await connect(server.url, compression=None, proxy=None)
    hello = {"type": "hello", "version": 1, "role": role, "agent": "raw",
             "token": server.token if token == "server" else token,  # type: ignore[attr-defined]
             "capabilities": []}
    await ws.send(msgpack.packb(hello))
    assert (await receive(ws))["type"] == "welcome"
    try:
        yield ws
    finally:
        await ws.close()


async def send(ws: ClientConnection, message: dict[str, Any]) -> None:
    await ws.send(msgpack.packb(message, use_bin_type=True))


async def receive(ws: ClientConnection) -> dict[str, Any]:
    return dict(msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10)))


async def honest_game(server: GameServer) -> None:
    """The server and its other games go on: a whole game on it completes."""
    game = GameSpec(MISTAKE_BOUND, 30, make_class("thresholds:n=31"))
    out = await play_remote(server.url, LEARNERS.make("halving"), "random-target", game, 1,
                            server.token)  # type: ignore[attr-defined]
    assert out["status"] == "complete"


def log_of(server: GameServer, game_id: str) -> Any:
    row = Store(server.settings.data).game(game_id)
    assert row is not None
    return read_log(Path(str(row["log"])))


def fault_codes(server: GameServer, game_id: str) -> list[str]:
    footer = log_of(server, game_id).footer
    assert footer is not None
    return [f["code"] for f in footer["result"].get("faults", [])]


# -- out of range in the lobby: bad_message, never internal ------------------------------

OUT_OF_RANGE = [
    {"type": "challenge", "rules": MB, "opponent": "random-target", "seed": 1 << 63},
    {"type": "challenge", "rules": MB, "opponent": "random-target", "seed": (1 << 64) - 1},
    {"type": "create", "rules": MB, "seed": 1 << 63},
    {"type": "challenge", "rules": {**MB, "rounds": 1 << 63}, "opponent": "random-target",
     "seed": 1},
    {"type": "challenge", "rules": {**MB, "rounds": (1 << 64) - 1}, "opponent": "random-target",
     "seed": 1},
    {"type": "create", "rules": {**MB, "rounds": 1 << 63}, "seed": None},
    {"type": "challenge", "rules": {**MB, "rounds": -1}, "opponent": "random-target", "seed": 1},
    {"type": "challenge", "rules": {**MB, "horizon": (1 << 64) - 1}, "opponent": "random-target",
     "seed": 1},
    {"type": "challenge", "rules": {**EXPERTS3, "experts": 1 << 63}, "opponent": "cover-flip",
     "seed": 1},
    {"type": "challenge", "rules": {**MB, "rounds": True}, "opponent": "random-target",
     "seed": 1},
    {"type": "predict", "t": -1, "p": 0.5},
    {"type": "predict", "t": 1 << 63, "p": 0.5},
]


async def test_seeds_rounds_and_rounds_numbers_out_of_range_are_bad_messages(server):
    async with peer(server) as ws:
        for message in OUT_OF_RANGE:
            await send(ws, message)
            answer = await receive(ws)
            assert answer["type"] == "error" and answer["code"] == "bad_message", (message,
                                                                                    answer)
            assert answer["fatal"] is False
        # the connection is still good for a game
        await send(ws, {"type": "challenge", "rules": MB, "opponent": "random-target",
                        "seed": 3})
        assert (await receive(ws))["type"] == "start"
    await honest_game(server)


@pytest.mark.parametrize("seed", [-1, -(1 << 63), (1 << 63) - 1])
async def test_every_signed_64_bit_seed_plays_a_whole_game(server, seed):
    """PROTOCOL.md 4: a seed is a signed 64-bit integer; negative ones are seeds too (the
    index keeps them as they are), never ``internal``."""
    async with peer(server) as ws:
        await send(ws, {"type": "challenge", "rules": MB, "opponent": "random-target",
                        "seed": seed})
        start = await receive(ws)
        assert start["type"] == "start", start
        while (message := await receive(ws))["type"] != "end":
            await send(ws, {"type": "predict", "t": message["t"], "p": 0.5})
        assert message["status"] == "complete" and message["result"]["rounds"] == 6
        assert Store(server.settings.data).game(start["game_id"])["seed"] == seed


# -- round numbers: a typed fault, never silently dropped -----------------------------------

async def test_a_move_not_for_the_current_round_is_a_fault_not_dropped(server):
    """t = 0, a round already answered, a round to come: each is a fault (bad_message for
    a t that names no round, out_of_turn for another round than this one) that costs the
    round; only a late move for a round the learner faulted in is dropped."""
    async with peer(server) as ws:
        await send(ws, {"type": "challenge", "rules": MB, "opponent": "random-target",
                        "seed": 5})
        game_id = (await receive(ws))["game_id"]
        plan = {1: [{"type": "predict", "t": 0, "p": 0.5}],            # no such round
                2: [{"type": "predict", "t": 1, "p": 0.5},            # late after a fault:
                    {"type": "predict", "t": 2, "p": 0.5}],           # dropped; then good
                3: [{"type": "predict", "t": 2, "p": 0.5}],           # answered: a fault
                }
        errors, rounds = [], []
        while (message := await receive(ws))["type"] != "end":
            if message["type"] == "error":
                errors.append((message["code"], message["fatal"]))
                continue
            rounds.append(message["t"])
            for move in plan.get(message["t"], [{"type": "predict", "t": message["t"],
                                                 "p": 0.5}]):
                await send(ws, move)
        assert errors == [("bad_message", False), ("out_of_turn", False)]
        assert message["status"] == "complete" and rounds == [1, 2, 3, 4, 5, 6]
    records = list(log_of(server, game_id).records())
    assert [r.p for r in records] == [1.0 - records[0].y, 0.5, 1.0 - records[2].y, 0.5, 0.5,
                                      0.5]  # each fault scored p = 1 - y
    assert fault_codes(server, game_id) == ["bad_message", "out_of_turn"]
    await honest_game(server)


# -- experts weights: faults that cost the round, the third forfeits ------------------------

BAD_WEIGHTS = {
    "wrong length": vector_to_wire(np.array([0.5, 0.5])),
    "nan": vector_to_wire(np.array([np.nan, 0.5, 0.5])),
    "inf": [float("inf"), 0.0, 0.0],
    "negative": [-0.5, 1.0, 0.5],
    "all zero": [0.0, 0.0, 0.0],
}


@pytest.mark.parametrize("bad", list(BAD_WEIGHTS))
async def test_bad_experts_weights_are_faults_that_cost_the_round(server, bad):
    async with peer(server) as ws:
        await send(ws, {"type": "challenge", "rules": EXPERTS3, "opponent": "cover-flip",
                        "seed": 2})
        game_id = (await receive(ws))["game_id"]
        errors = []
        while (message := await receive(ws))["type"] != "end":
            if message["type"] == "error":
                errors.append((message["code"], message["fatal"]))
                continue
            assert message["type"] == "advice"
            w = BAD_WEIGHTS[bad] if message["t"] in (2, 4) else [1 / 3, 1 / 3, 1 / 3]
            await send(ws, {"type": "weights", "t": message["t"], "w": w})
        assert errors == [("illegal_move", False)] * 2
        assert message["status"] == "complete" and message["result"]["rounds"] == 6
        # a faulted round is charged the costliest expert: loss 1 under cover-flip's 0/1
        # costs, whatever the draw
        rounds = log_of(server, game_id).expert_rounds
        assert [r["loss"] for r in rounds if r["t"] in (2, 4)] == [1.0, 1.0]
        assert [r["expected_loss"] for r in rounds if r["t"] in (2, 4)] == [1.0, 1.0]
    assert fault_codes(server, game_id) == ["illegal_move", "illegal_move"]
    await honest_game(server)


async def test_the_third_bad_weights_forfeit_the_game(server):
    async with peer(server) as ws:
        await send(ws, {"type": "challenge", "rules": EXPERTS3, "opponent": "cover-flip",
                        "seed": 2})
        bad = iter(BAD_WEIGHTS.values())
        while (message := await receive(ws))["type"] != "end":
            if message["type"] == "advice":
                await send(ws, {"type": "weights", "t": message["t"], "w": next(bad)})
        assert message["status"] == "forfeit:learner:illegal_move"
        assert message["result"]["rounds"] == 2  # rounds 1, 2 scored; forfeited in 3
    await honest_game(server)


# -- an adversary's faults: the move is asked again ------------------------------------------

async def test_a_bad_digest_and_a_second_commit_are_faults_the_game_goes_on(server):
    hclass = make_class("thresholds:n=8")
    target, salt = 3, bytes(range(16))
    async with peer(server, role="adversary") as ws:
        await send(ws, {"type": "challenge", "rules": MB, "opponent": "halving", "seed": 4})
        game_id = (await receive(ws))["game_id"]
        await send(ws, {"type": "commit", "digest": b"\x01" * 16})       # not 32 bytes
        assert (await receive(ws))["code"] == "illegal_move"
        await send(ws, {"type": "commit", "digest": digest(hclass, target, salt)})
        await send(ws, {"type": "commit", "digest": digest(hclass, target, salt)})  # twice
        error = await receive(ws)
        assert (error["code"], error["fatal"]) == ("out_of_turn", False)
        for t in range(1, 7):
            x = t % 8
            await send(ws, {"type": "instance", "t": t, "x": x})
            assert (await receive(ws))["type"] == "prediction"
            await send(ws, {"type": "label", "t": t, "y": int(x < target)})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": target, "salt": salt})
        end = await receive(ws)
        assert end["type"] == "end" and end["status"] == "complete", end
    assert fault_codes(server, game_id) == ["illegal_move", "out_of_turn"]
    await honest_game(server)


async def test_a_commit_after_round_1_and_a_short_salt_are_faults(server):
    hclass = make_class("thresholds:n=8")
    target, salt = 5, bytes(range(20))
    async with peer(server, role="adversary") as ws:
        await send(ws, {"type": "challenge", "rules": {**MB, "rounds": 2}, "opponent": "halving",
                        "seed": 4})
        game_id = (await receive(ws))["game_id"]
        await send(ws, {"type": "commit", "digest": digest(hclass, target, salt)})
        await send(ws, {"type": "instance", "t": 1, "x": 2})
        assert (await receive(ws))["type"] == "prediction"
        await send(ws, {"type": "label", "t": 1, "y": 1})
        await send(ws, {"type": "commit", "digest": digest(hclass, target, salt)})  # too late
        assert (await receive(ws))["code"] == "out_of_turn"
        await send(ws, {"type": "instance", "t": 2, "x": 6})
        assert (await receive(ws))["type"] == "prediction"
        await send(ws, {"type": "label", "t": 2, "y": 0})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": target, "salt": salt[:4]})  # short salt
        assert (await receive(ws))["code"] == "illegal_move"
        await send(ws, {"type": "reveal", "target": target, "salt": salt})
        end = await receive(ws)
        assert end["status"] == "complete", end
    assert fault_codes(server, game_id) == ["out_of_turn", "illegal_move"]
    await honest_game(server)


async def test_bad_advice_and_costs_are_faults_of_the_adversary(server):
    """Advice of the wrong length, costs outside [0, 1] and a label with no advice are
    faults: the adversary is asked again, the learner is never charged; the third
    forfeits."""
    async with peer(server, role="adversary") as ws:
        await send(ws, {"type": "challenge", "rules": {**EXPERTS3, "rounds": 2},
                        "opponent": "hedge", "seed": 6})
        game_id = (await receive(ws))["game_id"]
        await send(ws, {"type": "advice", "t": 1, "advice": [0.0, 1.0]})      # 2 of 3
        assert (await receive(ws))["code"] == "illegal_move"
        await send(ws, {"type": "advice", "t": 1, "advice": [0.0, 1.0, 0.5]})
        assert (await receive(ws))["type"] == "answer"
        await send(ws, {"type": "costs", "t": 1, "v": [0.0, 2.0, 0.5]})       # outside [0, 1]
        assert (await receive(ws))["code"] == "illegal_move"
        await send(ws, {"type": "costs", "t": 1, "v": [0.0, 1.0, 0.5]})
        await send(ws, {"type": "advice", "t": 2, "advice": None})
        assert (await receive(ws))["type"] == "answer"
        await send(ws, {"type": "label", "t": 2, "y": 1})                    # no advice
        error = await receive(ws)
        assert (error["code"], error["fatal"]) == ("illegal_move", False)
        end = await receive(ws)
        assert end["status"] == "forfeit:adversary:illegal_move", end
        assert end["result"]["rounds"] == 1 and end["result"]["learner_loss"] <= 1
    assert fault_codes(server, game_id) == ["illegal_move"] * 3
    await honest_game(server)


# -- enter without a token --------------------------------------------------------------------

async def test_enter_without_a_token_is_unauthorized_and_closes(tmp_path):
    async with running_server(tmp_path, anonymous=True) as server:
        async with peer(server, token=None) as ws:
            await send(ws, {"type": "enter", "tournament": "week-3"})
            error = await receive(ws)
            assert (error["code"], error["fatal"]) == ("unauthorized", True)
            with pytest.raises(ConnectionClosed) as info:
                await receive(ws)
            assert info.value.rcvd is not None and info.value.rcvd.code == 1008
        await honest_game(server)
