"""The loop driving itself (games/loop.py: Driver, drive, drive_async): moves in by
hand, plain synchronous code, no agents and no transport; what a runner's ``answer``
returns is sent, what it raises is thrown in, and the result comes out once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec, game_seeds
from littlestone.games.loop import (
    FAULT,
    Disconnected,
    Driver,
    GameLoop,
    Move,
    drive,
    drive_async,
)

GAME = GameSpec(MISTAKE_BOUND, 3, make_class("thresholds:n=4"))
COIN = game_seeds(0).referee


def _loop(**kwargs: Any) -> GameLoop:
    return GameLoop(GAME, COIN, **kwargs)


def test_the_driver_steps_the_loop_move_by_move_to_its_result():
    driver = Driver(_loop())
    assert driver.move == ("adversary", "commitment", 0, (), ())
    asked = []
    answers = {"commitment": None, "instance": 3, "predict": 1.0, "label": 0, "update": None}
    move = driver.move
    while move is not None:
        asked.append(move[:3])
        move = driver.send(answers[move[1]])
    assert asked[:5] == [("adversary", "commitment", 0), ("adversary", "instance", 1),
                         ("learner", "predict", 1), ("adversary", "label", 1),
                         ("learner", "update", 1)]
    assert len(asked) == 1 + 4 * GAME.rounds
    assert driver.move is None and driver.result is not None
    assert (driver.result.status, driver.result.mistakes) == ("complete", 3)  # p=1, y=0


def test_what_a_player_raised_is_thrown_in_and_the_loop_judges_it():
    driver = Driver(_loop(in_process=False))
    driver.send(None)
    driver.send(2)  # the learner is asked round 1's p
    assert driver.throw(Disconnected("learner")) is None
    assert driver.result is not None and driver.result.status == "disconnected:learner"
    with pytest.raises(RuntimeError, match="the runner's own"):  # not the loop's to take
        Driver(_loop(in_process=False)).throw(RuntimeError("the runner's own"))


def test_drive_sends_answers_and_throws_errors_until_the_result():
    seen: list[Move] = []

    def answer(move: Move) -> Any:
        seen.append(move)
        if move[1] == "predict" and move[2] == 2:
            raise ZeroDivisionError("round 2")  # an agent in process: its crash
        return {"instance": 1, "predict": FAULT if move[2] == 1 else 0.0, "label": 1}.get(
            move[1])

    result = drive(_loop(), answer)
    assert result.status == "crash:learner:ZeroDivisionError"
    assert result.rounds == 1 and result.mistakes == 1  # round 1 lost to the fault
    assert seen[-1][1:3] == ("predict", 2)


def test_the_async_twin_plays_the_same_game_and_sends_some_answers_apart():
    answers = {"instance": 2, "predict": 0.0, "label": 1}
    apart: list[Any] = []

    async def answer(move: Move) -> Any:
        return answers.get(move[1])

    async def send(how: Any, value: Any) -> Any:
        apart.append(value)
        return how(value)

    result = asyncio.run(drive_async(_loop(), answer, send=send, send_apart=("label",)))
    same = drive(_loop(), lambda move: answers.get(move[1]))
    assert (result.status, result.mistakes) == (same.status, same.mistakes) == ("complete", 3)
    assert apart == [1, 1, 1]  # every label, and nothing else
