"""One rule book and one output contract for every driver: the same agent, played in
process (``play``) and over the network (``connect``), gets the same statuses, the same
records and faults, and the same printed keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from littlestone import local
from littlestone.adversaries import ADVERSARIES
from littlestone.cli import main
from littlestone.client import AgentCrashed, play_remote
from littlestone.games.classes import make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners import Learner
from littlestone.local import play
from littlestone.server.net import FAULTS_TO_FORFEIT
from littlestone.server.records.logs import read_log
from littlestone.server.records.store import Store
from tests.support.servers import running_server


class OutOfRange(Learner):
    """Answers p = 1.5 in the rounds ``bad`` (comma-separated), else 0.

    >>> OutOfRange(bad="2").predict(0), OutOfRange(bad="1").predict(0)
    (0.0, 1.5)
    """

    games = frozenset({MISTAKE_BOUND, EXPERTS})

    def __init__(self, bad: str = "") -> None:
        self.bad = {int(t) for t in bad.split(",") if t}
        self.t = 0

    def reset(self, game: GameSpec, seed: int) -> None:
        self.t = 0

    def predict(self, x: Any) -> float:
        self.t += 1
        return 1.5 if self.t in self.bad else 0.0

    def weights(self, advice: Any) -> float:
        return self.predict(None)

    def update(self, x: Any, y: int) -> None:
        pass

    def update_costs(self, costs: Any, y: int | None) -> None:
        pass


class Crashes(OutOfRange):
    """Raises in round 2."""

    def predict(self, x: Any) -> float:
        self.t += 1
        if self.t == 2:
            raise ZeroDivisionError("round 2")
        return 0.0


def records(rows: Any) -> list[list[Any]]:
    return [[v.tolist() if isinstance(v, np.ndarray) else v for v in r] for r in rows]


def test_the_ladder_has_one_home():
    """The local runner keeps no ladder of its own; the server's number and its players'
    ladder are the game loop's."""
    from littlestone.games import loop
    from littlestone.server.net import players

    assert FAULTS_TO_FORFEIT is loop.FAULTS_TO_FORFEIT
    assert not hasattr(local, "FAULTS_TO_FORFEIT") and not hasattr(local, "_Ladder")
    assert players.FaultLadder is loop.FaultLadder


GAMES = [  # (game, class, adversary): the local driver's block path, round path, experts
    (MISTAKE_BOUND, "thresholds:n=31", "random-target"),
    (MISTAKE_BOUND, "thresholds:n=31", "shattered-tree"),
    (EXPERTS, "singletons:n=8", "random-target"),
]


@pytest.mark.parametrize(("name", "spec", "adversary"), GAMES)
@pytest.mark.parametrize(("bad", "status"), [("3", "complete"), ("2,4,5", "forfeit:learner:"
                                                                          "illegal_move")])
async def test_a_bad_prediction_follows_one_ladder_locally_and_remotely(
        tmp_path, name, spec, adversary, bad, status):
    game = GameSpec(name, 12, make_class(spec))
    async with running_server(tmp_path) as server:
        out = await play_remote(server.url, OutOfRange(bad=bad), adversary, game, seed=4,
                                token=server.token)
        row = Store(server.settings.data).game(out["game_id"])
        remote = records(read_log(Path(row["log"])).records())
    key = bytes.fromhex(out["game_key"])
    kept: list[Any] = []
    result = play(game, OutOfRange(bad=bad), ADVERSARIES.make(adversary), 4, key=key,
                  on_record=kept.append)
    here = result.to_dict()
    assert out["status"] == here["status"] == (status if status != "complete"
                                                else "complete")
    assert records(kept) == remote
    assert [f["t"] for f in here["faults"]] == [int(t) for t in bad.split(",")][:3]
    assert [f["code"] for f in out["faults"]] == [f["code"] for f in here["faults"]]
    # the server's result lists the faults with their rounds (PROTOCOL.md 5.5)
    assert [(f["t"], f["role"]) for f in out["faults"]] == [
        (f["t"], f["role"]) for f in here["faults"]]
    assert out["mistakes"] == here["mistakes"] and out["rounds"] == here["rounds"]
    # and the blocks of the vectorised path score the same as round by round
    assert play(game, OutOfRange(bad=bad), ADVERSARIES.make(adversary), 4, key=key,
                blocks=False).to_dict()["status"] == here["status"]


async def test_a_crash_is_the_same_status_with_its_file_and_line(tmp_path):
    game = GameSpec(MISTAKE_BOUND, 6, make_class("thresholds:n=7"))
    local_result = play(game, Crashes(), ADVERSARIES.make("random-target"), 1)
    assert local_result.status == "crash:learner:ZeroDivisionError"
    async with running_server(tmp_path) as server:
        with pytest.raises(AgentCrashed) as info:
            await play_remote(server.url, Crashes(), "random-target", game, seed=1,
                              token=server.token)
    assert info.value.status == local_result.status
    assert "test_parity.py" in str(info.value) and "in predict" in local_result.message
    assert "test_parity.py" in local_result.message


def test_play_and_connect_print_the_same_keys(tmp_path, capsys):
    """README: connect prints what play prints (and game_key): the same keys, in the same
    order, ``bound`` an integer when whole, ``experts`` in the experts game, no empty
    ``message``; a joiner prints the rules it played, not its own."""
    import asyncio
    import threading

    from littlestone.server.net import GameServer, ServerSettings

    loop = asyncio.new_event_loop()
    server = GameServer(ServerSettings(port=0, data=tmp_path / "srv", anonymous=True))
    loop.run_until_complete(server.start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        for game in (["--class", "thresholds:n=15", "--game",
                      "mistake-bound"],
                     ["--game", "experts", "--class", "thresholds:n=15"],
                     ["--game", "experts", "--experts", "4"]):
            common = ["--learner", "hedge", "--rounds", "20", "--seed", "5", "--json", *game]
            opponent = ("cover-flip" if "--experts" in game else "random-target"
                        if "experts" in game else "shattered-tree")
            assert main(["play", *common, "--adversary", opponent, "--data",
                         str(tmp_path / "d")]) == 0
            played = json.loads(capsys.readouterr().out)
            assert main(["connect", server.url, *common, "--vs", opponent]) == 0
            connected = json.loads(capsys.readouterr().out)
            assert list(connected) == [k for k in played if k != "seconds"] + [
                "game_key", "seconds"], (list(played), list(connected))
            assert type(connected["bound"]) is type(played["bound"])
            assert connected["seed"] == 5 and connected["log"] is None
            # one canonical name: main's connect said shattered-tree, play
            # shattered-tree:budget=50000000 (issue 44 item 12)
            assert connected["adversary"] == played["adversary"], (connected, played)
        assert main(["connect", server.url, "--learner", "halving", "--join", "x",
                     "--class", "thresholds:n=13", "--rounds", "5"]) == 2
        assert "drop --class, --rounds" in capsys.readouterr().err
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
