"""One remote player's verdicts, sans I/O (server/net/players.py: MoveWait): the time
and what came in, the move, the clock's charge and the fault out, as both the WebSocket
player and the direct link's player take them. Plain synchronous code: no connection."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from littlestone.games.errors import IllegalMove
from littlestone.games.loop import FAULT, Disconnected, FaultLadder, Forfeit, MoveClock
from littlestone.protocol.errors import Code, ProtocolError
from littlestone.server.net.players import MoveWait, Verdict


def _wait(role: str = "learner", t: int | None = 4, bank: float = 10.0) -> MoveWait:
    return MoveWait(MoveClock(move_deadline=2.0, time_bank=bank), FaultLadder(role), t,
                    started=100.0)


def _raising(error: Exception) -> Callable[[], object]:
    """A message that reads as no move: reading it raises ``error``."""
    def read() -> object:
        raise error
    return read


_illegal = _raising(IllegalMove("learner", "prediction", "p is 1.5"))


def test_a_move_in_time_is_taken_and_only_lateness_is_charged():
    wait = _wait()
    assert wait.deadline == 112.0  # 2 s a move, and the bank of 10 s
    assert wait.received(101.5, lambda: 0.25) == Verdict(True, 0.25, None)
    assert wait.clock.bank == 10.0
    wait = _wait()
    assert wait.received(105.0, lambda: 0.75).move == 0.75
    assert wait.clock.bank == 7.0 and wait.ladder.faults == []


def test_a_timeout_spends_the_bank_and_costs_a_learner_its_move():
    wait = _wait()
    decided, move, fault = wait.timed_out()
    assert (decided, move) == (True, FAULT)
    assert fault is not None and fault.code is Code.TIMEOUT and "round 4" in fault.message
    assert wait.clock.bank == 0.0
    wait.record(fault, 112.5)
    assert wait.ladder.faults == [{"t": 4, "code": "timeout", "role": "learner",
                                   "message": "no move within the deadline for round 4"}]


def test_an_adversarys_bad_move_is_a_fault_and_its_move_is_waited_for_again():
    wait = _wait("adversary", t=1)
    verdict = wait.received(103.0, _raising(IllegalMove("adversary", "label", "label 2")))
    assert verdict is not None and not verdict.decided
    assert verdict.fault is not None and verdict.fault.code is Code.ILLEGAL_MOVE
    assert wait.clock.bank == 9.0  # the bad move's lateness is charged
    wait.record(verdict.fault, 103.5)
    assert wait.started == 103.5 and wait.deadline == 103.5 + 2.0 + 9.0
    assert wait.received(104.0, lambda: 1) == Verdict(True, 1, None)


def test_stale_moves_are_dropped_and_fatal_errors_are_the_player_gone():
    wait = _wait()
    stale = ProtocolError(Code.OUT_OF_TURN, "predict for round 3: this is round 4")
    stale.stale = True
    assert wait.rejected(150.0, stale) is None
    assert wait.clock.bank == 10.0 and wait.ladder.faults == []  # not charged, no fault
    out_of_turn = wait.rejected(101.0, ProtocolError(Code.OUT_OF_TURN, "label out of turn"))
    assert out_of_turn is not None and out_of_turn.decided and out_of_turn.move is FAULT
    with pytest.raises(Disconnected):
        wait.rejected(101.0, ProtocolError(Code.BAD_MESSAGE, "too large", fatal=True))


def test_late_moves_beyond_two_a_move_are_out_of_turn():
    """A player faults two rounds at most before it forfeits: a third late move while
    one move is awaited is no late answer but a frame sent for free, a fault."""
    wait = _wait()
    for now in (101.0, 101.5):
        stale = ProtocolError(Code.OUT_OF_TURN, "predict for round 3: this is round 4")
        stale.stale = True
        assert wait.rejected(now, stale) is None
    stale = ProtocolError(Code.OUT_OF_TURN, "predict for round 3: this is round 4")
    stale.stale = True
    verdict = wait.rejected(102.0, stale)
    assert verdict is not None and verdict.decided and verdict.move is FAULT
    assert verdict.fault is not None and verdict.fault.code is Code.OUT_OF_TURN
    assert "more than 2 late moves" in verdict.fault.message


def test_the_third_fault_forfeits_once_it_is_recorded():
    wait = _wait()
    for now in (101.0, 102.0):
        verdict = wait.received(now, _illegal)
        assert verdict is not None and verdict.fault is not None
        wait.record(verdict.fault, now)
    verdict = wait.received(103.0, _illegal)
    assert verdict is not None and verdict.fault is not None  # told first, then recorded
    with pytest.raises(Forfeit, match="learner forfeits after 3 faults"):
        wait.record(verdict.fault, 103.0)
