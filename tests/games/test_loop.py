"""The game loop, fed by hand: moves in, statuses, records and faults out
(games/loop.py). Plain synchronous code, no agents and no runner: each test answers the
loop's moves itself, or throws in what a player raised."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

from littlestone.games.classes import make_class
from littlestone.games.commitment import digest
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameResult, GameSpec, game_seeds
from littlestone.games.loop import (
    FAULT,
    FAULTS_TO_FORFEIT,
    Commit,
    Crash,
    Disconnected,
    FaultLadder,
    Forfeit,
    GameLoop,
    MoveClock,
    QueuedExperts,
    QueuedRounds,
)

COIN = game_seeds(0).referee
SALT = bytes(range(16))


class Move(NamedTuple):
    """A move the loop asked (the loop's plain tuple, named for the tests)."""

    role: str
    name: str
    t: int
    args: tuple[Any, ...]
    extra: tuple[Any, ...]


class Thrown:
    """An answer that is not one: the player raised this, and the runner throws it in."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def drive(loop: GameLoop, answer: Callable[[Move], Any]) -> tuple[GameResult, list[Move]]:
    """Answer every move the loop asks with ``answer(move)``; the result, and the moves."""
    moves, asked = loop.moves(), []
    try:
        move = Move(*next(moves))
        while True:
            asked.append(move)
            reply = answer(move)
            move = Move(*(moves.throw(reply.error) if isinstance(reply, Thrown)
                          else moves.send(reply)))
    except StopIteration as stop:
        return stop.value, asked


def thresholds(rounds: int, **options: Any) -> GameLoop:
    """A mistake-bound game on thresholds:n=8 (h_k(x) = [x < k], k = 0..8)."""
    return GameLoop(GameSpec(MISTAKE_BOUND, rounds, make_class("thresholds:n=8")), COIN,
                    **options)


def learner_says(predictions: dict[int, Any], default: Any = 1.0,
                 adversary: Callable[[Move], Any] | None = None) -> Callable[[Move], Any]:
    """Instances x_t = 2, labels 1; the learner's p from ``predictions`` by round."""
    def answer(move: Move) -> Any:
        if move.name == "instance":
            return 2
        if move.name == "label":
            return 1
        if move.name == "predict":
            return predictions.get(move.t, default)
        if adversary is not None:
            return adversary(move)
        return None

    return answer


# -- the fault ladder and the clock -------------------------------------------------------

def test_the_third_fault_forfeits_and_only_the_learners_fault_ends_its_move():
    learner, adversary = FaultLadder("learner"), FaultLadder("adversary")
    assert learner.ends_move and not adversary.ends_move
    for t in range(1, FAULTS_TO_FORFEIT):
        learner.fault(t, "timeout", "late")
    with pytest.raises(Forfeit) as info:
        learner.fault(9, "illegal_move", "p = 2")
    assert info.value.status == "forfeit:learner:illegal_move"
    assert [f["t"] for f in learner.faults] == [1, 2, 9]
    assert {f["role"] for f in learner.faults} == {"learner"}


def test_the_clock_charges_lateness_to_the_bank_never_below_zero():
    clock = MoveClock(move_deadline=2.0, time_bank=5.0)
    clock.charge(0.0, 1.5)  # within the move deadline: free
    assert clock.bank == 5.0 and clock.deadline(10.0) == 17.0
    clock.charge(0.0, 6.0)
    assert clock.bank == 1.0
    clock.charge(0.0, 100.0)
    assert clock.bank == 0.0 and clock.deadline(10.0) == 12.0


# -- round by round -----------------------------------------------------------------------

def test_a_bad_prediction_loses_the_round_and_the_third_forfeits():
    result, asked = drive(thresholds(10), learner_says({2: 1.5, 4: "x", 5: float("nan")}))
    assert result.status == "forfeit:learner:illegal_move"
    assert result.rounds == 4  # round 5's fault forfeits before it is scored
    assert result.mistakes == 2  # rounds 2 and 4: p = 1 - y
    assert [f["t"] for f in result.extra["faults"]] == [2, 4, 5]
    shown = [m.args[1] for m in asked if m.name == "label"]
    assert shown == [1.0, 0.5, 1.0, 0.5]  # the adversary is shown 1/2 after a fault


def test_a_fault_counted_by_the_player_is_scored_a_mistake():
    kept: list[Any] = []
    result, _ = drive(thresholds(3, in_process=False, on_record=kept.append),
                      learner_says({2: FAULT}))
    assert result.status == "complete" and "faults" not in result.extra  # (the player's)
    assert [r.p for r in kept] == [1.0, 0.0, 1.0] and [r.mistake for r in kept] == [
        False, True, False]


def test_a_commitment_in_place_of_the_first_move_is_taken_and_the_move_asked_again():
    hclass = make_class("thresholds:n=8")
    committed = digest(hclass, 5, SALT)

    def adversary(move: Move) -> Any:
        if move.name == "reveal":
            return 5, SALT
        return None

    instances = iter([Commit(committed), 2, 3])

    def answer(move: Move) -> Any:
        if move.name == "instance":
            return next(instances)
        return learner_says({}, adversary=adversary)(move)

    result, asked = drive(thresholds(2), answer)
    assert result.status == "complete" and result.revealed == 5
    assert [(m.name, m.t) for m in asked if m.role == "adversary"] == [
        ("commitment", 0), ("instance", 1), ("instance", 1), ("label", 1), ("instance", 2),
        ("label", 2), ("reveal", 3)]


def test_a_commitment_after_round_one_ends_the_game_against_the_adversary():
    instances = iter([2, Commit(bytes(32))])
    answer = learner_says({})

    def late(move: Move) -> Any:
        return next(instances) if move.name == "instance" else answer(move)

    result, _ = drive(thresholds(3), late)
    assert (result.status, result.rounds) == ("illegal_move:adversary:commit", 1)


def test_a_revealed_target_that_contradicts_the_labels_is_a_rule_violation():
    hclass = make_class("thresholds:n=8")

    def adversary(move: Move) -> Any:
        return {"commitment": digest(hclass, 1, SALT), "reveal": (1, SALT)}.get(move.name)

    result, _ = drive(thresholds(2), learner_says({}, adversary=adversary))  # x = 2 labelled 1
    assert result.status == "rule_violation:adversary:target_label"


@pytest.mark.parametrize("in_process", [True, False])
def test_what_a_player_raises_ends_the_game_against_it(in_process):
    answer = learner_says({})

    def crashes(move: Move) -> Any:
        if move.name == "update" and move.t == 2:
            return Thrown(ZeroDivisionError("in update"))
        return answer(move)

    if in_process:  # in process, the loop charges the error to the player whose move it is
        result, _ = drive(thresholds(5), crashes)
        assert (result.status, result.rounds) == ("crash:learner:ZeroDivisionError", 2)
        assert "in update" in result.message
    else:  # a server's runner throws in a Crash; anything else is its own and propagates
        with pytest.raises(ZeroDivisionError):
            drive(thresholds(5, in_process=False), crashes)
        crash = Crash("learner", ZeroDivisionError("secret"), detailed=False)
        result, _ = drive(thresholds(5, in_process=False), lambda m: Thrown(crash)
                          if m.name == "update" else answer(m))
        assert (result.status, result.message) == ("crash:learner:ZeroDivisionError",
                                                   "learner raised ZeroDivisionError")


def test_a_disconnect_ends_the_game_with_the_rounds_played():
    answer = learner_says({})
    result, _ = drive(thresholds(5, in_process=False), lambda m: Thrown(Disconnected(
        "adversary")) if m.name == "label" and m.t == 3 else answer(m))
    assert (result.status, result.rounds) == ("disconnected:adversary", 2)


# -- queued blocks ------------------------------------------------------------------------

def queued(block: int, play: Callable[[QueuedRounds], Any], rounds: int = 10,
           ys: list[int] | None = None, **options: Any) -> GameResult:
    """A game of ``rounds`` whose oblivious adversary offers y = 1 (or ``ys``) in blocks
    of ``block``, on x = 1 (x = 7 when y = 0); ``play`` plays each queued block."""
    labels = ys if ys is not None else [1] * rounds

    def answer(move: Move) -> Any:
        if move.name == "moves":
            (n,) = move.args
            block = labels[move.t - 1 : move.t - 1 + n]
            return [1 if y else 7 for y in block], block
        if move.name == "play_queued":
            return play(move.args[0])
        return None

    return drive(thresholds(rounds, block=block, **options), answer)[0]


def test_a_crash_mid_block_is_scored_up_to_the_crash():
    def crashes(block: QueuedRounds) -> Any:
        for i in range(len(block.ys)):
            if block.t0 + i == 7:
                return Thrown(ZeroDivisionError("round 7"))
            block.answer(1.0)
        return None

    result = queued(4, crashes)
    assert (result.status, result.rounds) == ("crash:learner:ZeroDivisionError", 6)


def test_faults_in_queued_rounds_climb_the_same_ladder():
    def faults(block: QueuedRounds) -> Any:
        for i in range(len(block.ys)):
            t = block.t0 + i
            try:
                block.answer(FAULT if t == 2 else 7.0 if t in (5, 8, 9) else 1.0)
            except Forfeit as forfeit:
                return Thrown(forfeit)
        return None

    result = queued(4, faults)
    assert (result.status, result.rounds) == ("forfeit:learner:illegal_move", 8)
    assert result.mistakes == 3  # rounds 2, 5 and 8, scored p = 1 - y
    assert [f["t"] for f in result.extra["faults"]] == [5, 8, 9]  # (FAULT: the player's)


def test_queued_rounds_have_the_records_of_round_by_round():
    ys = [1, 1, 0, 1, 0, 0, 1, 1, 0, 1]
    ps = [1.0, 0.5, 0.25, FAULT, 0.0, 1.0, 0.75, 1.0, FAULT, 0.5]

    def plays(block: QueuedRounds) -> None:
        for i in range(len(block.ys)):
            block.answer(ps[block.t0 + i - 1])

    in_blocks: list[Any] = []
    result = queued(3, plays, ys=ys, on_record=in_blocks.append)
    one_by_one: list[Any] = []

    def answer(move: Move) -> Any:
        if move.t > len(ys):
            return None
        return {"instance": 1 if ys[move.t - 1] else 7, "predict": ps[move.t - 1],
                "label": ys[move.t - 1]}.get(move.name)

    drive(thresholds(10, on_record=one_by_one.append), answer)
    assert result.status == "complete" and result.mistakes >= 2
    assert in_blocks == one_by_one


def test_an_oblivious_adversary_that_stops_offering_moves_crashes():
    offers = iter([([2, 2], [1, 1]), None])

    def answer(move: Move) -> Any:
        if move.name == "moves":
            return next(offers)
        if move.name == "play_queued":
            for _ in move.args[0].ys:
                move.args[0].answer(1.0)
        return None

    result, _ = drive(thresholds(5, block=2), answer)
    assert (result.status, result.rounds) == ("crash:adversary:RuntimeError", 2)


# -- the experts game ---------------------------------------------------------------------

def test_an_experts_fault_shows_the_adversary_one_half_and_charges_the_worst_expert():
    loop = GameLoop(GameSpec(EXPERTS, 2, experts=3), COIN)

    def answer(move: Move) -> Any:
        if move.name == "weights":
            return [1.0, 0.0, 0.0] if move.t == 1 else 2.0  # round 2: p outside [0, 1]
        if move.name == "costs":
            return [0.0, 1.0, 0.5]
        return None

    result, asked = drive(loop, answer)
    costs = [m for m in asked if m.name == "costs"]
    assert [m.args[0] for m in costs] == [[1.0, 0.0, 0.0], 0.5]
    assert [m.extra for m in costs] == [(False,), (True,)]  # (what a remote adversary is told)
    assert result.status == "complete" and result.learner_loss == 1.0  # round 2: the worst
    assert [f["t"] for f in result.extra["faults"]] == [2]


def test_queued_experts_rounds_have_the_records_of_round_by_round():
    hclass = make_class("thresholds:n=3")
    game = GameSpec(EXPERTS, 5, hclass)
    xs, ys = [0, 2, 1, 2, 0], [1, 0, 1, 1, 0]
    answers: list[Any] = [[0.25] * 4, 0.5, FAULT, [0.0, 0.0, 1.0, 0.0], 1.0]
    one_by_one: list[Any] = []

    def round_by_round(move: Move) -> Any:
        if not 1 <= move.t <= 5:
            return None
        return {"instance": xs[move.t - 1], "weights": answers[move.t - 1],
                "label": ys[move.t - 1]}.get(move.name)

    drive(GameLoop(game, COIN, on_record=one_by_one.append), round_by_round)
    in_blocks: list[Any] = []

    def blocks(move: Move) -> Any:
        if move.name == "moves":
            (n,) = move.args
            return xs[move.t - 1 : move.t - 1 + n], ys[move.t - 1 : move.t - 1 + n]
        if move.name == "play_queued_experts":
            block: QueuedExperts = move.args[0]
            while block.i < len(block.ys):
                block.next_round()
                block.answer(answers[block.t - 1])
        return None

    result, asked = drive(GameLoop(game, COIN, block=2, on_record=in_blocks.append), blocks)
    assert result.status == "complete" and len(in_blocks) == 5
    assert [m.name for m in asked].count("play_queued_experts") == 3  # blocks of 2, 2, 1
    plain = [[v.tolist() if hasattr(v, "tolist") else v for v in r] for r in one_by_one]
    assert plain == [[v.tolist() if hasattr(v, "tolist") else v for v in r] for r in in_blocks]


def test_a_rounds_weights_are_let_go_before_the_next_are_asked():
    """(A vector of 10^5 weights held one round longer made every round's copy fresh
    memory: page faults, twice the CPU of the game.)"""
    moves = GameLoop(GameSpec(EXPERTS, 4, experts=3), COIN).moves()
    previous: weakref.ref[Any] | None = None
    move = next(moves)
    while True:
        answer: Any = None
        if move[1] == "weights":
            assert previous is None or previous() is None
            answer = np.full(3, 1 / 3)
            previous = weakref.ref(answer)
        elif move[1] == "costs":
            answer = [0.0, 1.0, 0.5]
        try:
            move = moves.send(answer)
        except StopIteration as stop:
            assert stop.value.status == "complete" and stop.value.rounds == 4
            break
