"""Players behind a connection: the server's side of a remote learner or adversary.

:class:`RemoteLearner` and :class:`RemoteAdversary` answer the game loop's moves
(:data:`littlestone.games.loop.Move`: the agent's method, called with the round first)
from protocol messages, under the loop's move clock and fault ladder (PROTOCOL.md 6), so
that the driver (:mod:`.driver`) treats them like local agents. Against an oblivious
built-in adversary a remote learner's queued rounds are answered from the connection's
callback (:class:`_FastRounds`; :class:`_FastExperts` in the experts game with
class-derived experts), scored by the loop's own steps; anything unusual goes the
round-by-round way.

Imports the game loop, the protocol, the referees' checks and the transport; nothing of
the server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
from websockets.exceptions import ConnectionClosed

from littlestone.games.commitment import MIN_SALT_BYTES
from littlestone.games.errors import (
    Disconnected,
    Forfeit,
    IllegalMove,
    LittlestoneError,
    ProtocolError,
)
from littlestone.games.experts import check_vector, check_weights
from littlestone.games.game import ExpertsRecord
from littlestone.games.loop import (
    FAULT,
    FAULTS_TO_FORFEIT,
    Commit,
    ExpertsOutcome,
    FaultLadder,
    MoveClock,
    QueuedExperts,
    QueuedRounds,
)
from littlestone.games.mistake_bound import check_label, check_probability
from littlestone.protocol import build
from littlestone.protocol.codec import encode
from littlestone.protocol.errors import Code
from littlestone.protocol.messages import (
    instance_from_wire,
    instance_to_wire,
    instances_to_wire,
    vector_from_wire,
    vector_to_wire,
)
from littlestone.protocol.session import ServerSession
from littlestone.protocol.wire import (
    Advice,
    AdviceRequest,
    ClientMessage,
    Costs,
    Instance,
    InstanceRequest,
    Label,
    LabelOf,
    OutcomeOf,
    Predict,
    Reveal,
    ServerMessage,
    Weights,
)
from littlestone.protocol.wire import (
    Commit as CommitMessage,
)
from littlestone.server.net.settings import ServerSettings
from littlestone.transport import Connection, Deadline

__all__ = ["FAULT", "LATE_MOVES", "Disconnected", "Forfeit", "MoveWait", "RemoteAdversary",
           "RemoteLearner", "RemotePlayer", "Verdict", "commit_of", "probability", "revealed"]

#: Late moves (for rounds the player faulted, PROTOCOL.md 6) dropped while one move is
#: awaited; the next is ``out_of_turn``: a player has faulted two rounds at most.
LATE_MOVES = FAULTS_TO_FORFEIT - 1

#: The messages a move may be made of (:meth:`RemotePlayer.receive`'s ``accept`` takes
#: those of the kinds it expects).
Move = TypeVar("Move", bound=ClientMessage)


class Verdict(NamedTuple):
    """What a message, or the deadline passing, decides of a move awaited: ``decided``,
    the move is ``move`` (:data:`FAULT` after a fault that ends it); ``fault``, the
    player's fault, to tell it and to put on its ladder (:meth:`MoveWait.record`)."""

    decided: bool
    move: Any
    fault: ProtocolError | None


class MoveWait:
    """One move awaited from a player behind a connection (PROTOCOL.md 6), sans I/O: the
    transport receives until :attr:`deadline` (times on its own clock) and hands over
    what came, or that the deadline passed; this says what it decides. A move read in
    time is charged to the clock (``clock``: the per-move deadline and the time bank)
    and taken; a late, malformed, out-of-turn or illegal one is a fault on ``ladder``
    (a learner's ends the move, an adversary's move is waited for again, the third
    forfeits); a move for a round already decided is dropped, :data:`LATE_MOVES` of them
    while one move is awaited (a player faults two rounds at most before it forfeits:
    more are no late answers, and each would cost the referee a frame's decoding for
    free), the next is ``out_of_turn``; a fatal error is the player gone
    (:class:`~littlestone.games.loop.Disconnected`).

    >>> wait = MoveWait(MoveClock(move_deadline=2.0, time_bank=10.0), FaultLadder("learner"),
    ...                 t=7, started=100.0)
    >>> wait.deadline
    112.0
    >>> wait.received(105.0, lambda: 0.25), wait.clock.bank
    (Verdict(decided=True, move=0.25, fault=None), 7.0)
    >>> decided, move, fault = wait.timed_out(); (decided, move, fault.code.value)
    (True, FAULT, 'timeout')
    >>> wait.record(fault, 120.0); wait.ladder.faults[0]["t"], wait.clock.bank
    (7, 0.0)
    """

    def __init__(self, clock: MoveClock, ladder: FaultLadder, t: int | None,
                 started: float) -> None:
        self.clock, self.ladder, self.t, self.started = clock, ladder, t, started
        #: The late moves dropped so far (moves for rounds the player faulted).
        self.late = 0

    @property
    def deadline(self) -> float:
        """When the move is late: the per-move deadline plus what is left in the bank."""
        return self.clock.deadline(self.started)

    def timed_out(self) -> Verdict:
        """The deadline passed: the bank is spent, and it is a fault."""
        self.clock.timed_out()
        move = "the reveal" if self.t is None else f"round {self.t}"
        return self._fault(ProtocolError(Code.TIMEOUT,
                                         f"no move within the deadline for {move}"))

    def received(self, now: float, read: Callable[[], Any]) -> Verdict | None:
        """A message came at ``now``: ``read()`` makes it the move, or raises
        ProtocolError or IllegalMove. ``None``: it was a stale move, dropped."""
        try:
            move = read()
        except ProtocolError as exc:
            return self.rejected(now, exc)
        except IllegalMove as exc:
            return self.rejected(now, ProtocolError(Code.ILLEGAL_MOVE, exc.message))
        self.clock.charge(self.started, now)
        return Verdict(True, move, None)

    def rejected(self, now: float, error: ProtocolError) -> Verdict | None:
        """A message came at ``now`` that is no move: ``error`` (``None``: it was a move
        for a round already decided, dropped)."""
        if error.fatal:
            raise Disconnected(self.ladder.role) from None
        if error.stale:
            self.late += 1
            if self.late <= LATE_MOVES:
                return None
            error = ProtocolError(Code.OUT_OF_TURN, f"{error.message} (more than "
                                  f"{LATE_MOVES} late moves while one move is awaited)")
        self.clock.charge(self.started, now)
        return self._fault(error)

    def _fault(self, error: ProtocolError) -> Verdict:
        return Verdict(self.ladder.ends_move, FAULT, error)

    def record(self, fault: ProtocolError, now: float) -> None:
        """Put the fault told to the player on its ladder (the last raises
        :class:`~littlestone.games.loop.Forfeit`); a move waited for again is timed
        from ``now``."""
        self.ladder.fault(self.t, fault.code.value, fault.message)
        self.started = now


class RemotePlayer:
    """Receiving moves from a connection, under the per-move deadline and the time bank
    (``clock``) and the fault ladder (``ladder``: the game loop's, set by the driver),
    as :class:`MoveWait` decides them."""

    def __init__(self, ws: Connection, session: ServerSession, settings: ServerSettings,
                 role: str) -> None:
        self.ws, self.session, self.settings, self.role = ws, session, settings, role
        self.ladder = FaultLadder(role)
        self.clock = MoveClock(settings.move_deadline, settings.time_bank)
        #: The game's class and number of experts (set by the driver before round 1).
        self.hclass: Any = None
        self.n_experts: int | None = None

    async def send(self, message: ServerMessage) -> None:
        frame = encode(message)
        if self.ws.send_nowait(frame):
            return
        try:
            await self.ws.send(frame)
        except ConnectionClosed:
            raise Disconnected(self.role) from None

    async def receive(self, *kinds: str, t: int | None,
                      accept: Callable[[Move], Any],
                      started: float | None = None) -> Any:
        """The next acceptable move: ``accept`` turns a message into a move or raises
        IllegalMove/ProtocolError, and :class:`MoveWait` judges it (each fault is told
        to the player). The clock runs from ``started`` (loop time; default now). The
        session lets only messages of ``kinds`` through: ``accept`` takes those."""
        self.session.expect(*kinds, t=t)
        ws, session = self.ws, self.session
        wait = MoveWait(self.clock, self.ladder, t,
                        ws.loop.time() if started is None else started)
        while True:
            try:
                frame = await ws.recv(wait.deadline)
            except TimeoutError:
                verdict: Verdict | None = wait.timed_out()
            except ConnectionClosed:
                raise Disconnected(self.role) from None
            else:
                verdict = wait.received(ws.loop.time(), lambda: accept(
                    cast("Move", session.receive(frame))))  # noqa: B023 - called at once
            if verdict is None:
                continue  # a stale move: it does not restart the clock
            if verdict.fault is not None:
                session.fault(t)
                with contextlib.suppress(Disconnected):
                    await self.send(build.error_of(verdict.fault))
                wait.record(verdict.fault, ws.loop.time())
            if verdict.decided:
                return verdict.move

def probability(message: Predict) -> float:
    """A learner's p from its ``predict`` (checked: IllegalMove outside [0, 1])."""
    p = message["p"]
    if type(p) is float and 0.0 <= p <= 1.0:  # the usual move needs no more checks
        return p
    return check_probability(p)


class RemoteLearner(RemotePlayer):
    """A learner behind a connection. Its ``update`` only remembers the label, which then
    rides with the next instance (PROTOCOL.md 5.1): one round trip per round."""

    def __init__(self, ws: Connection, session: ServerSession,
                 settings: ServerSettings) -> None:
        super().__init__(ws, session, settings, "learner")
        #: What the learner is told of the round before with the next request: its label
        #: (mistake-bound game) or its outcome (experts game).
        self.pending: LabelOf | OutcomeOf | None = None

    async def predict(self, t: int, x: Any) -> Any:
        """p in [0, 1], or FAULT."""
        await self.send(self._instance(t, instance_to_wire(self.hclass, x)))
        return await self.receive("predict", t=t, accept=probability)

    async def update(self, t: int, x: Any, y: int) -> None:
        self.pending = {"t": t, "y": y}

    async def play_queued(self, t0: int, queued: QueuedRounds) -> None:
        """Play the queued rounds t0, t0 + 1, ...: send each instance with the label
        before it, hand each move to ``queued`` (which keeps p, or the fault). The same
        messages, checks and fault ladder as :meth:`predict` round by round; rounds that
        go as expected are answered from the connection's callback (:class:`_FastRounds`),
        anything else (a fault, a stale move, a timeout, a closed connection, a peer that
        does not read) takes the way of :meth:`receive`."""
        wires = instances_to_wire(self.hclass, queued.xs)
        predictions, n = queued.predictions, len(queued.ys)
        while (i := len(predictions)) < n:
            await self.send(self._instance(t0 + i, wires[i]))
            fast = _FastRounds(self, queued, wires, self.ws.loop.time())
            started, sent = await fast.run()
            i = len(predictions)
            if i < n and sent:  # round i's instance is out: its move comes the slow way
                p = await self.receive("predict", t=t0 + i, accept=probability,
                                       started=started)
                self.pending = {"t": t0 + i, "y": queued.answer(p)}

    def _instance(self, t: int, wire: Any) -> InstanceRequest:
        """Round t's instance (as on the wire), with the label of the round before."""
        return build.instance_request(  # (a mistake-bound game's pending label)
            t, wire, cast("LabelOf | None", self.pending))

    async def weights(self, t: int, advice: Any, x: Any) -> Any:
        """Weights or p (checked: a bad move is a fault), or FAULT; ``x`` the instance of
        class-derived experts (the learner evaluates its class on it)."""
        outcome = cast("OutcomeOf | None", self.pending)  # (an experts game's)
        if x is not None:
            await self.send(build.advice_request(t, None, instance_to_wire(self.hclass, x),
                                                 outcome))
        else:
            await self.send(build.advice_request(
                t, None if advice is None else vector_to_wire(advice), outcome=outcome))

        d = self.n_experts

        def accept(m: Predict | Weights) -> Any:
            # the referee's checks, made before the move is played: a bad move is a fault
            # (the round is scored against the learner), not the end of the game
            if m["type"] == "predict":
                if advice is None:
                    raise IllegalMove("learner", "prediction", "no advice this round: send "
                                      "weights")
                return check_probability(m["p"])
            w = vector_from_wire(m["w"])
            if d is not None:
                check_weights(w, d)
            return w

        return await self.receive("predict", "weights", t=t, accept=accept)

    async def update_costs(self, t: int, costs: Any, y: int | None) -> None:
        self.pending = {"t": t, "costs": vector_to_wire(costs), "y": y}

    async def play_queued_experts(self, t: int, queued: QueuedExperts) -> None:
        """Play queued rounds of the experts game with class-derived experts: for each,
        the referee takes the instance, the learner gets it with the outcome before it,
        and ``queued`` scores its weights (or p) against the queued label. The same
        messages, checks, records and fault ladder as :meth:`weights` round by round;
        rounds that go as expected are answered from the connection's callback
        (:class:`_FastExperts`), anything else takes the way of :meth:`receive`. A move
        the referee rejects ends the game (MoveError), as round by round."""
        wires = instances_to_wire(self.hclass, queued.xs)
        n = len(queued.ys)
        while queued.i < n:
            i = queued.next_round()  # (the callback may have taken it already)
            await self.send(self._advice(queued.t, wires[i]))
            fast = _FastExperts(self, queued, wires, self.ws.loop.time())
            started, sent = await fast.run()
            if queued.i < n and sent:  # round i's advice is out: its move comes the slow way
                answer = await self.receive("predict", "weights", t=queued.t,
                                            accept=_experts_answer, started=started)
                self.told(queued.answer(answer))

    def _advice(self, t: int, wire: Any) -> AdviceRequest:
        """Round t's instance of class-derived experts, with the outcome before it."""
        return build.advice_request(  # (an experts game's pending outcome)
            t, None, wire, cast("OutcomeOf | None", self.pending))

    def told(self, record: ExpertsRecord | ExpertsOutcome) -> None:
        """A queued round was answered: its outcome rides with the next advice."""
        self.pending = {"t": record.t, "costs": vector_to_wire(record.costs), "y": record.y}


def commit_of(message: CommitMessage) -> Commit:
    """An adversary's commitment, before round 1 (checked: SHA-256 is 32 bytes)."""
    digest = message["digest"]
    if not isinstance(digest, bytes) or len(digest) != 32:
        raise IllegalMove("adversary", "commitment", "a commitment is 32 bytes (SHA-256), "
                          f"not {len(digest) if isinstance(digest, bytes) else digest!r}")
    return Commit(digest)


def revealed(message: Reveal, committed: bool) -> tuple[Any, bytes]:
    """An adversary's reveal after round T: its target (a vector decoded) and its salt
    (checked: at least MIN_SALT_BYTES after a commitment)."""
    target: Any = message["target"]
    if isinstance(target, bytes | list):
        target = vector_from_wire(target)
    salt = message["salt"]
    if not isinstance(salt, bytes):
        raise IllegalMove("adversary", "salt", "the salt is bytes")
    if committed and len(salt) < MIN_SALT_BYTES:
        raise IllegalMove("adversary", "salt", f"salt must be >= {MIN_SALT_BYTES} bytes")
    return target, salt


def _experts_answer(m: Predict | Weights) -> Any:
    """A learner's move in the experts game: p (checked) or its weights (decoded; the
    referee checks them)."""
    if m["type"] == "predict":
        return probability(m)
    return vector_from_wire(m["w"])


def _label(m: Label) -> int:
    """An adversary's label y_t (checked)."""
    return check_label(m["y"])


class _FastRounds:
    """Queued rounds answered from the connection's callback: a good ``predict`` for
    the round awaited is checked, charged against the clock and answered with the next
    instance in the same callback, without waking the game's task (one round trip costs
    the server a few microseconds less: benchmarks/README.md). Any other message, a
    deadline passing, a peer that stops reading or a closed connection stops it:
    :meth:`run` then returns (its clock's start, whether the next round's instance was
    sent) and :meth:`RemoteLearner.play_queued` takes over."""

    def __init__(self, learner: RemoteLearner, queued: QueuedRounds, wires: list[Any],
                 started: float) -> None:
        self.learner, self.queued, self.wires = learner, queued, wires
        self.started, self.sent = started, True
        ws = learner.ws
        self.deadline = Deadline(ws.loop, ws.stop_answering)

    async def run(self) -> tuple[float, bool]:
        learner = self.learner
        learner.session.expect("predict", t=self.queued.t0 + len(self.queued.predictions))
        self.deadline.set(learner.clock.deadline(self.started))
        try:
            await learner.ws.answer(self)
        finally:
            self.deadline.cancel()
        return self.started, self.sent

    def __call__(self, frame: bytes | str) -> bool:
        learner = self.learner
        try:
            p = probability(cast("Predict", learner.session.receive(frame)))  # (expected)
        except (ProtocolError, IllegalMove):
            return False  # declined: the slow way receives the frame again
        ws = learner.ws
        now = ws.loop.time()
        learner.clock.charge(self.started, now)
        queued = self.queued
        t = queued.t0 + len(queued.predictions)
        learner.pending = {"t": t, "y": queued.answer(p)}
        if len(queued.predictions) == len(queued.ys):
            ws.stop_answering()
        elif ws.send_nowait(encode(learner._instance(t + 1, self.wires[t + 1 - queued.t0]))):
            self.started = now
            learner.session.expect("predict", t=t + 1)
            self.deadline.set(learner.clock.deadline(now))
        else:
            self.sent = False
            ws.stop_answering()
        return True


class _FastExperts:
    """Queued experts rounds answered from the connection's callback, as
    :class:`_FastRounds` does for the mistake-bound game: a good ``weights`` (or
    ``predict``) for the round awaited is charged against the clock, scored, and the
    next round's advice goes out in the same callback. A frame it cannot read as that
    move, a deadline, a peer that does not read or a closed connection stops it; a move
    the referee rejects stops it too, and :meth:`run` raises that error."""

    def __init__(self, learner: RemoteLearner, queued: QueuedExperts, wires: list[Any],
                 started: float) -> None:
        self.learner, self.queued, self.wires = learner, queued, wires
        self.started, self.sent = started, True
        #: What stopped the block from inside the callback (a move the referee rejects,
        #: a log that cannot be written), raised by :meth:`run`.
        self.error: LittlestoneError | None = None
        ws = learner.ws
        self.deadline = Deadline(ws.loop, ws.stop_answering)

    async def run(self) -> tuple[float, bool]:
        learner = self.learner
        learner.session.expect("predict", "weights", t=self.queued.t)
        self.deadline.set(learner.clock.deadline(self.started))
        try:
            await learner.ws.answer(self)
        finally:
            self.deadline.cancel()
        if self.error is not None:
            raise self.error
        return self.started, self.sent

    def __call__(self, frame: bytes | str) -> bool:
        learner, queued = self.learner, self.queued
        try:
            answer = _experts_answer(cast("Predict | Weights",  # (what it expects)
                                          learner.session.receive(frame)))
        except (ProtocolError, IllegalMove):
            return False  # declined: the slow way receives the frame again
        ws = learner.ws
        now = ws.loop.time()
        learner.clock.charge(self.started, now)
        try:
            learner.told(queued.answer(answer))
            if queued.i < len(queued.ys):
                queued.next_round()
        except LittlestoneError as exc:  # (MoveError; a log that cannot be written)
            self.error = exc
            ws.stop_answering()
            return True
        if queued.i == len(queued.ys):
            ws.stop_answering()
        elif ws.send_nowait(encode(learner._advice(queued.t, self.wires[queued.i]))):
            self.started = now
            learner.session.expect("predict", "weights", t=queued.t)
            self.deadline.set(learner.clock.deadline(now))
        else:
            self.sent = False
            ws.stop_answering()
        return True


class RemoteAdversary(RemotePlayer):
    """An adversary behind a connection (PROTOCOL.md 5.3). Its commitment comes with its
    first move (:class:`~littlestone.games.loop.Commit`), not asked for apart."""

    def __init__(self, ws: Connection, session: ServerSession,
                 settings: ServerSettings) -> None:
        super().__init__(ws, session, settings, "adversary")
        #: Whether this adversary committed (a second commit is out of turn, and its
        #: reveal needs a salt).
        self.committed = False
        #: Whether its move this round was advice (a label needs advice).
        self._advised = False

    def _may_commit(self, t: int) -> tuple[str, ...]:
        """``commit`` is expected before round 1 only, once (else out of turn: a fault)."""
        return ("commit",) if t == 1 and not self.committed else ()

    def _commit(self, m: CommitMessage) -> Commit:
        commit = commit_of(m)
        self.committed = True
        return commit

    async def commitment(self, t: int) -> None:
        """None: a remote adversary commits with its first move."""
        return None

    async def instance(self, t: int) -> Any:
        """x_t (or a :class:`Commit` before round 1); in the experts game, the instance
        whose hypotheses' values are the advice."""
        if self.n_experts is not None:
            return await self.advice(t)
        return await self.receive("instance", *self._may_commit(t), t=t, accept=self._instance)

    def _instance(self, m: Instance | CommitMessage) -> Any:
        if m["type"] == "commit":
            return self._commit(m)
        return instance_from_wire(self.hclass, m["x"])

    async def label(self, t: int, x: Any, p: float, shown: Any = None,
                    faulted: bool = False) -> Any:
        """y_t, having seen p; in the experts game, the outcome having seen the answer as
        ``shown`` (:meth:`costs`)."""
        if self.n_experts is not None:
            return await self.costs(t, shown, faulted)
        await self.send(build.prediction(t, p))
        y = await self.receive("label", t=t, accept=_label)
        return int(y)

    async def advice(self, t: int) -> Any:
        """The advice a_t (or None), the instance of class-derived experts, or a
        :class:`Commit` before round 1."""
        def accept(m: Advice | Instance | CommitMessage) -> Any:
            if m["type"] == "commit":
                return self._commit(m)
            if m["type"] == "instance":
                if self.hclass is None:
                    raise IllegalMove("adversary", "instance", "this game has no class: send "
                                      "advice")
                self._advised = True
                return instance_from_wire(self.hclass, m["x"])
            if self.hclass is not None:
                raise IllegalMove("adversary", "advice", "class-derived experts: send an "
                                  "instance")
            if m["advice"] is None:
                self._advised = False
                return None
            advice = vector_from_wire(m["advice"])
            if self.n_experts is not None:
                check_vector(advice, self.n_experts, "adversary", "advice")
            self._advised = True
            return advice

        return await self.receive("advice", "instance", *self._may_commit(t), t=t,
                                  accept=accept)

    async def costs(self, t: int, answer: Any, faulted: bool = False) -> Any:
        """The outcome of round t (costs, or a label after advice), after showing the
        learner's answer (weights or p; p = 1/2 after the learner's fault, ``faulted``)."""
        await self.send(build.answer(t, w=vector_to_wire(answer)) if isinstance(answer, np.ndarray)
                        else build.answer(t, p=float(answer)))

        predicted = not isinstance(answer, np.ndarray) and not faulted

        def accept(m: Label | Costs) -> Any:
            if m["type"] == "label":
                if not self._advised:
                    raise IllegalMove("adversary", "label", "no advice this round: send costs")
                return check_label(m["y"])
            if predicted:
                raise IllegalMove("adversary", "costs", "the learner predicted p: send a label")
            v = vector_from_wire(m["v"])
            if self.n_experts is not None:
                check_vector(v, self.n_experts, "adversary", "costs")
            return v

        return await self.receive("label", "costs", t=t, accept=accept)

    async def reveal(self, t: int) -> tuple[Any, bytes]:
        await self.send(build.reveal_asked())

        def accept(m: Reveal) -> tuple[Any, bytes]:
            return revealed(m, self.committed)

        target, salt = await self.receive("reveal", t=None, accept=accept)
        return target, salt
