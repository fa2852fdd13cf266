"""Spectators: the broadcast of a running game (littlestone.server.net.spectators) and ``watch``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from littlestone.server.net.spectators import Broadcast
from littlestone.server.records.store import Store
from tests.support import ROOT


class Spectator:
    """A connection that takes a message only when ``ready``."""

    def __init__(self, ready: bool = True) -> None:
        self.ready = ready
        self.frames: list[bytes] = []

    def send_nowait(self, frame: bytes) -> bool:
        if self.ready:
            self.frames.append(frame)
        return self.ready


def rounds_frame(t0, ps, ys, drawn):
    return ({"kind": "rounds", "t0": t0, "n": len(ys)},
            [("p", np.array(ps, dtype=float)), ("y", np.array(ys, dtype=np.int8)),
             ("prediction", np.array(drawn, dtype=np.int8)), ("x", np.arange(len(ys)))])


def test_a_spectator_that_does_not_keep_up_misses_batches_but_not_the_totals():
    import msgpack

    broadcast = Broadcast("g", {"game": "mistake-bound"}, "halving", "random-target")
    fast, slow = Spectator(), Spectator(ready=False)
    broadcast.spectators |= {fast, slow}
    broadcast(*rounds_frame(1, [1.0, 0.0], [0, 0], [1, 0]))   # 1 mistake
    slow.ready = True
    broadcast(*rounds_frame(3, [0.5, 1.0], [1, 1], [0, 1]))   # 1 mistake
    broadcast({"kind": "footer", "status": "complete",
               "result": {"mistakes": 2, "rounds": 4, "curve": [1, 2]}}, [])
    seen = [msgpack.unpackb(f) for f in slow.frames]
    assert [m["type"] for m in seen] == ["rounds", "end"]
    assert seen[0]["t0"] == 3 and seen[0]["t"] == 4 and seen[0]["mistakes"] == 2
    assert seen[0]["expected_mistakes"] == 1.0 + 0.0 + 0.5 + 0.0
    assert seen[1]["result"] == {"mistakes": 2, "rounds": 4}  # lists are left out
    assert len(fast.frames) == 3
    broadcast.finish("aborted", {})  # once only
    assert len(fast.frames) == 3


def test_experts_rounds_carry_losses_and_regret():
    import msgpack

    broadcast = Broadcast("g", {"game": "experts"}, "hedge", "cover-flip")
    spectator = Spectator()
    broadcast.spectators.add(spectator)
    for t, loss, regret in [(1, 1.0, 1.0), (2, 0.0, 0.5)]:
        broadcast({"kind": "expert", "t": t, "p": 0.5, "y": 1, "drawn": 0, "loss": loss,
                   "expected_loss": 0.5, "regret": regret, "expected_regret": regret / 2}, [])
    last = msgpack.unpackb(spectator.frames[-1])
    assert last["t"] == 2 and last["loss"] == 1.0 and last["expected_loss"] == 1.0
    assert last["regret"] == 0.5 and last["expected_regret"] == 0.25
    assert last["round_loss"] == [0.0] and last["round_expected_loss"] == [0.5]
    assert broadcast.watching()["t"] == 2


@pytest.mark.slow
def test_the_watch_command_follows_a_game_to_its_end(tmp_path, capsys):
    from littlestone.cli import main

    server = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--anonymous",
                               "--port", "0", "--data", str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    player = None
    try:
        url = server.stdout.readline().split()[3]
        agents = ROOT / "tests" / "support" / "agents_for_tests.py"
        gate = tmp_path / "watched"  # (the learner waits before round 100 until it exists)
        player = subprocess.Popen(
            [sys.executable, "-m", "littlestone", "connect", url, "--learner",
             f"{agents}:GatedLearner:at=100,gate={gate}", "--vs", "random-target",
             "--class", "thresholds:n=63", "--rounds", "700", "--seed", "2", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        game_id = None
        for _ in range(200):
            rows = Store(tmp_path).games(status="running")
            if rows:
                game_id = rows[0]["game_id"]
                break
            time.sleep(0.05)
        assert game_id is not None
        watched: list[int] = []
        watcher = threading.Thread(target=lambda: watched.append(
            main(["watch", url, game_id, "--json"])))
        watcher.start()
        out = ""
        for _ in range(600):  # the game is held until the watch says it is watching
            out += capsys.readouterr().out
            if out or not watcher.is_alive():
                break
            time.sleep(0.05)
        gate.touch()
        watcher.join(60)
        assert watched == [0]
        lines = [json.loads(line) for line in (out + capsys.readouterr().out).splitlines()]
        played = json.loads(player.communicate(timeout=60)[0])
        assert lines[0]["type"] == "watching" and lines[-1]["type"] == "end"
        assert lines[-1]["result"]["mistakes"] == played["mistakes"]
        assert lines[-2]["t"] == 700 and lines[-2]["mistakes"] == played["mistakes"]
        assert main(["watch", url, game_id]) == 2  # over now
        assert "not_found" in capsys.readouterr().err
    finally:
        for proc in (player, server):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=20)
