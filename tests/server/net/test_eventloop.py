"""The server's event loop (server/net/eventloop.py): uvloop when installed, asyncio's on
request, and the same games, records and answers on either."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.server.net.eventloop import EVENT_LOOP_VARIABLE, loop_name, run
from littlestone.server.records.logs import read_log
from littlestone.server.records.store import Store

uvloop = pytest.importorskip("uvloop")


def test_uvloop_is_the_default_when_installed_and_asyncio_on_request(monkeypatch):
    monkeypatch.delenv(EVENT_LOOP_VARIABLE, raising=False)
    assert loop_name() == "uvloop"
    assert run(_loop_kind()) == "uvloop"
    monkeypatch.setenv(EVENT_LOOP_VARIABLE, "asyncio")
    assert loop_name() == "asyncio"
    assert run(_loop_kind()) == "asyncio"
    monkeypatch.setenv(EVENT_LOOP_VARIABLE, "tokio")
    with pytest.raises(ValueError, match="use asyncio or uvloop"):
        loop_name()


async def _loop_kind() -> str:
    return "uvloop" if isinstance(asyncio.get_running_loop(), uvloop.Loop) else "asyncio"


def test_serve_with_an_unknown_event_loop_is_one_line_and_exit_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "littlestone", "serve", "--port", "0",
                          "--data", str(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, EVENT_LOOP_VARIABLE: "tokio"}, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"littlestone: error: serve: {EVENT_LOOP_VARIABLE}='tokio': use asyncio or uvloop"]


@pytest.mark.parametrize("kind", ["uvloop", "asyncio"])
async def test_a_server_on_either_loop_plays_the_local_drivers_games(tmp_path, kind):
    data = tmp_path / "data"
    server = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--anonymous",
                               "--port", "0", "--data", str(data), "--no-web"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, EVENT_LOOP_VARIABLE: kind})
    assert server.stdout is not None
    line = server.stdout.readline()
    assert line.startswith("littlestone serving on "), line
    url = line.split()[3]
    games = [(GameSpec(MISTAKE_BOUND, 300, make_class("thresholds:n=63")), "halving"),
             (GameSpec(EXPERTS, 300, make_class("thresholds:n=31")), "hedge")]
    try:
        outs = await asyncio.gather(*(
            play_remote(url, LEARNERS.make(learner), "random-target", game, seed)
            for seed in range(3) for game, learner in games))
    finally:
        server.terminate()
        assert server.wait(timeout=30) == 0
    store = Store(data)
    for (game, learner), out, seed in zip(games * 3, outs, [s for s in range(3) for _ in games],
                                          strict=True):
        assert out["status"] == "complete"
        local: list[object] = []
        play(game, LEARNERS.make(learner), ADVERSARIES.make("random-target"), seed,
             key=bytes.fromhex(out["game_key"]), on_record=local.append)
        row = store.game(out["game_id"])
        assert row is not None
        logged = list(read_log(Path(row["log"])).records())
        assert [_plain(r) for r in logged] == [_plain(r) for r in local]


def _plain(record: object) -> list[object]:
    return [v.tolist() if hasattr(v, "tolist") else v for v in record]  # type: ignore[attr-defined]
