"""The experts game with a remote learner against an oblivious built-in adversary: rounds
answered from the connection's callback (server/net/players.py, _FastExperts) keep the
records, checks and fault ladder of the round-by-round way."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgpack
import numpy as np
import pytest
from websockets.asyncio.client import connect

from littlestone.adversaries import ADVERSARIES
from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.server.net import players
from littlestone.server.net.settings import REMOTE_BLOCK
from littlestone.server.records.logs import read_log
from littlestone.server.records.store import Store
from tests.support.servers import running_server

HELLO = {"type": "hello", "version": 1, "role": "learner", "agent": "raw", "token": None,
         "capabilities": []}


def as_lists(record):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in record]


def counting_callbacks(monkeypatch):
    """Record whether each frame the fast path saw was taken (True) or handed over."""
    taken: list[bool] = []
    original = players._FastExperts.__call__

    def counting(self, frame):
        answer = original(self, frame)
        taken.append(answer)
        return answer

    monkeypatch.setattr(players._FastExperts, "__call__", counting)
    return taken


@pytest.mark.parametrize(("learner", "adversary", "spec", "rounds", "seed"), [
    ("hedge", "random-target", "thresholds:n=15", 2 * REMOTE_BLOCK + 37, 5),
    ("weighted-majority", "iid:dist=zipf", "intervals:n=6", 90, 5),  # answers p, not weights
    ("hedge", "noisy:rate=0.3", "singletons:n=8", 120, 5),  # a committed sequence, revealed
    ("hedge", "random-target", "thresholds:n=99", REMOTE_BLOCK + 1, 11),  # blocks of 256, 1
    ("hedge", "noisy:rate=0.1", "intervals:n=12", 3 * REMOTE_BLOCK, 12),
])
async def test_queued_experts_rounds_have_the_round_by_round_records(
        tmp_path, monkeypatch, learner, adversary, spec, rounds, seed):
    taken = counting_callbacks(monkeypatch)
    game = GameSpec(EXPERTS, rounds, make_class(spec))
    async with running_server(tmp_path) as server:
        out = await play_remote(server.url, LEARNERS.make(learner), adversary, game, seed=seed,
                                token=server.token)
    assert out["status"] == "complete", out
    key = bytes.fromhex(out["game_key"])
    local_rows: list[list[object]] = []
    local = play(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), seed, key=key,
                 on_record=lambda r: local_rows.append(as_lists(r)))
    log = read_log(Path(Store(tmp_path).game(out["game_id"])["log"]))
    assert [as_lists(r) for r in log.records()] == local_rows
    assert out["expected_regret"] == pytest.approx(local.expected_regret, abs=0)
    assert out["rounds"] == rounds
    # every round but the first of each block came through the callback
    assert taken.count(True) >= rounds - (rounds // REMOTE_BLOCK + 1)


async def raw_experts_game(server, rounds):
    ws = await connect(server.url, compression=None, proxy=None)
    await ws.send(msgpack.packb(dict(HELLO, token=server.token)))
    msgpack.unpackb(await ws.recv())
    await ws.send(msgpack.packb({"type": "challenge", "opponent": "random-target", "seed": 3,
                                 "rules": {"game": "experts", "class": "thresholds:n=3",
                                           "experts": None, "rounds": rounds}}))
    start = msgpack.unpackb(await ws.recv())
    assert start["type"] == "start", start
    return ws, start["game_id"]


UNIFORM = np.full(4, 0.25).astype("<f8").tobytes()


async def test_faults_in_queued_experts_rounds_hand_over_and_back(tmp_path, monkeypatch):
    """A bad move, a late one for the round it faulted, a silent round: each faulted round
    is charged the maximal loss (p = 1 - y), the good ones keep their weights, and the
    callback takes the rounds up again after each."""
    taken = counting_callbacks(monkeypatch)
    async with running_server(tmp_path, move_deadline=1.0, time_bank=0.0) as server:
        ws, game_id = await raw_experts_game(server, 10)
        script = {3: [{"type": "predict", "t": 3, "p": 7.0}],           # illegal: a fault
                  4: [{"type": "weights", "t": 3, "w": UNIFORM},       # late for a
                      {"type": "weights", "t": 4, "w": UNIFORM}],      # faulted round: dropped
                  7: []}                                               # silent: timeout
        errors = []
        while True:
            message = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10))
            if message["type"] == "end":
                break
            if message["type"] == "error":
                errors.append(message["code"])
                continue
            assert message["type"] == "advice" and message["advice"] is None
            t = message["t"]
            if t > 1:
                assert message["outcome"]["t"] == t - 1
            for move in script.get(t, [{"type": "weights", "t": t, "w": UNIFORM}]):
                await ws.send(msgpack.packb(move))
        await ws.close()
    assert errors == ["illegal_move", "timeout"]
    assert message["status"] == "complete"
    records = list(read_log(Path(Store(tmp_path).game(game_id)["log"])).records())
    assert [r.t for r in records] == list(range(1, 11))
    for r in records:
        if r.t in (3, 7):
            assert r.weights is None and r.p == 1.0 - r.y and r.loss == 1.0
        else:
            assert r.weights.tolist() == [0.25] * 4 and r.expected_loss == pytest.approx(
                float(np.mean(r.costs)))
    assert taken.count(True) >= 5 and False in taken  # the callback, and hand-overs


async def test_weights_the_referee_rejects_end_the_game_as_round_by_round(tmp_path):
    async with running_server(tmp_path) as server:
        ws, game_id = await raw_experts_game(server, 6)
        while True:
            message = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10))
            if message["type"] == "end":
                break
            t = message["t"]
            w = UNIFORM if t < 4 else np.full(4, 0.5).astype("<f8").tobytes()  # sums to 2
            await ws.send(msgpack.packb({"type": "weights", "t": t, "w": w}))
        await ws.close()
    assert message["status"] == "illegal_move:learner:weights_distribution"
    assert message["result"]["rounds"] == 3
    assert Store(tmp_path).game(game_id)["rounds"] == 3
