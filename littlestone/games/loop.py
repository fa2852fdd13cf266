"""The game loop, sans-I/O: turn order, the fault ladder, the move clock (docs/design.md 2).

A :class:`GameLoop` plays one game of either kind through its referee. It never calls a
player: :meth:`GameLoop.moves` is a generator that yields each :data:`Move` it needs
(who moves, which move, the round, the arguments) and is sent the answer. A runner
answers the moves its own way: :func:`littlestone.local.play` calls in-process agents
directly; the server's driver (:mod:`littlestone.server.net.driver`) awaits players
behind a connection; a tournament's direct link (:mod:`littlestone.server.tournament.direct`)
waits for them in its thread. None of them resumes the loop itself: :func:`drive` (and its
async twin :func:`drive_async`) hands each move to the runner's ``answer`` and sends back
what it returns, or throws in what it raised, until the game is over (a :class:`Driver`
for a runner that steps it by hand). Everything that decides a game is here, once: the commitment
before round 1 and the reveal after round T, the order of the moves, the fault ladder of
PROTOCOL.md 6, a crash, a forfeit, a disconnect; the referees score.

An oblivious adversary's rounds may be played in blocks (``block``): the loop asks for
``moves(n)``, queues them with the referee and yields one ``play_queued`` move (a
:class:`QueuedRounds`, or :class:`QueuedExperts` in the experts game) that the runner
plays its own fast way; the loop scores what was answered, even when the block ends
early. The records are the same as round by round.

>>> from littlestone.games.classes import make_class
>>> from littlestone.games.game import GameSpec, game_seeds
>>> game = GameSpec("mistake-bound", 2, make_class("thresholds:n=4"))
>>> moves = GameLoop(game, game_seeds(0).referee).moves()
>>> next(moves)                                     # (role, name, t, args, extra)
('adversary', 'commitment', 0, (), ())
>>> moves.send(None)[1], moves.send(3)              # no commitment; x_1 = 3
('instance', ('learner', 'predict', 1, (3,), ()))
>>> moves.send(1.5)[1:4]                            # p_1 = 1.5: a fault, the round lost
('label', 1, (3, 0.5))
>>> moves.send(1)[1], moves.send(None)[1]           # y_1 = 1, told to the learner
('update', 'instance')
>>> moves.send(0)[1], moves.send(1.0)[1], moves.send(1)[1]      # round 2: 0, 1.0, 1
('predict', 'label', 'update')
>>> try:
...     moves.send(None)
... except StopIteration as stop:
...     result = stop.value
>>> result.status, result.mistakes, [f["t"] for f in result.extra["faults"]]
('complete', 1, [1])

A game that ends against a player raises one of (from :mod:`littlestone.games.errors`,
with every other exception of the package)::

    GameEnded                 the game ends against a player: its status and message
    ├── Forfeit               the fault that forfeits (FAULTS_TO_FORFEIT)
    ├── Disconnected          a player behind a connection went away
    └── Crash                 an agent raised
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, Final, NamedTuple, Protocol

import numpy as np

from littlestone.games.classes import FiniteClass
from littlestone.games.errors import (
    FAULTS_TO_FORFEIT,
    Crash,
    Disconnected,
    Forfeit,
    GameEnded,
    IllegalMove,
    MoveError,
)
from littlestone.games.experts import SCORE_CELLS, ExpertsBlock, ExpertsReferee
from littlestone.games.experts import Phase as ExpertsPhase
from littlestone.games.game import (
    EXPERTS,
    ExpertsRecord,
    Fault,
    GameResult,
    GameSpec,
    RoundRecord,
)
from littlestone.games.mistake_bound import (
    MistakeBoundReferee,
    Phase,
    check_probability,
    faulted_prediction,
)

__all__ = ["ADVERSARY", "FAULT", "FAULTS_TO_FORFEIT", "LEARNER", "Commit", "Crash",
           "Disconnected", "Driver", "ExpertsOutcome", "FaultLadder", "Forfeit", "GameEnded",
           "GameLoop", "Move", "MoveClock", "QueuedExperts", "QueuedRounds", "RecordSink",
           "RoundLog", "drive", "drive_async"]

#: The roles, as moves, faults and statuses name them.
LEARNER, ADVERSARY = "learner", "adversary"

#: Receives every record as its round is scored.
RecordSink = Callable[[Any], None]


class RoundLog(Protocol):
    """Where scored rounds are written as they are played (a game log's writer,
    :class:`littlestone.server.records.logs.LogWriter`): one round, a whole block of
    queued rounds (the referee's ``last_block``), or one round or a scored block of the
    experts game."""

    def round(self, record: RoundRecord) -> None: ...

    def rounds(self, t0: int, xs: Any, ps: Any, ys: Any, predictions: Any) -> None: ...

    def expert(self, record: ExpertsRecord) -> None: ...

    def expert_block(self, block: ExpertsBlock) -> None: ...


# -- the fault ladder and the move clock (PROTOCOL.md 6) --------------------------------

class _Fault:
    def __repr__(self) -> str:
        return "FAULT"


#: A learner's move after a fault already counted (a late or bad move over the network):
#: the round is scored against it.
FAULT: Final = _Fault()


class FaultLadder:
    """The fault ladder of one player (PROTOCOL.md 6): every late or bad move is recorded
    ({t, code, message, role}); the :data:`FAULTS_TO_FORFEIT`-th forfeits the game. A
    learner's fault costs it the round (scored as a mistake: the move ends); an
    adversary's move is asked again (the round is not played without it).

    >>> ladder = FaultLadder("adversary")
    >>> ladder.fault(4, "timeout", "no move"); ladder.ends_move
    False
    >>> ladder.fault(5, "illegal_move", "label 2"); ladder.fault(5, "timeout", "no move")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.Forfeit: adversary forfeits after 3 faults (timeout: no move)
    """

    def __init__(self, role: str) -> None:
        self.role = role
        self.faults: list[Fault] = []
        #: Whether a fault ends the move (a learner's) or the move is asked again.
        self.ends_move = role == LEARNER

    def fault(self, t: int | None, code: str, message: str) -> None:
        """Record a fault in round ``t``; raise :class:`Forfeit` on the last."""
        self.faults.append({"t": t, "code": code, "message": message, "role": self.role})
        if len(self.faults) >= FAULTS_TO_FORFEIT:
            raise Forfeit(self.role, code, message)


class MoveClock:
    """A player's per-move deadline and its time bank (PROTOCOL.md 6), times given as
    numbers (seconds on the runner's clock): a move asked for at ``started`` is late at
    :meth:`deadline`; time beyond the per-move deadline comes out of the bank; a
    timeout empties it.

    >>> clock = MoveClock(move_deadline=10.0, time_bank=60.0)
    >>> clock.deadline(100.0)
    170.0
    >>> clock.charge(100.0, 125.0); clock.bank
    45.0
    >>> clock.timed_out(); clock.deadline(200.0)
    210.0
    """

    def __init__(self, move_deadline: float, time_bank: float) -> None:
        self.move_deadline, self.bank = move_deadline, time_bank

    def deadline(self, started: float) -> float:
        """When a move asked for at ``started`` is late: the per-move deadline plus what
        is left in the bank."""
        return started + self.move_deadline + self.bank

    def charge(self, started: float, now: float) -> None:
        """A move asked for at ``started`` came at ``now``: charge the bank any lateness."""
        late = now - started - self.move_deadline
        if late > 0:
            self.bank = max(0.0, self.bank - late)

    def timed_out(self) -> None:
        """The deadline passed: the bank is spent."""
        self.bank = 0.0


# -- what the loop asks -------------------------------------------------------------------

#: A move the loop asks of a player, ``(role, name, t, args, extra)``: ``role`` plays
#: round ``t`` (0: before round 1; T + 1: after round T) by its agent's method ``name``
#: (:class:`~littlestone.learners.Learner`, :class:`~littlestone.adversaries.Adversary`)
#: with ``args``. A player behind a connection is asked ``(t, *args, *extra)``: ``extra``
#: is what its messages carry beyond the in-process call (in the experts game, the
#: instance sent with the advice; the learner's answer as shown, and whether it
#: faulted). Two moves have no agent method: ``play_queued`` and ``play_queued_experts``
#: (a block of queued rounds, played by the runner). A plain tuple: the loop makes four
#: a round, and a named tuple costs twice as much to make.
Move = tuple[str, str, int, tuple[Any, ...], tuple[Any, ...]]


class Commit(NamedTuple):
    """An adversary's commitment sent in place of its first move (over the network the
    commitment comes with round 1's move); the loop takes it, then asks the move again."""

    digest: bytes


_NONE: tuple[Any, ...] = ()


class QueuedRounds:
    """A block of queued rounds of the mistake-bound game (``play_queued``): for each,
    the learner is shown ``xs[i]``, answers p, and is told ``ys[i]``. The runner hands
    each answer to :meth:`answer` (or, for a number in [0, 1], appends it to
    ``predictions`` itself); the loop scores the block when it ends, early or not."""

    def __init__(self, t0: int, xs: Any, ys: Sequence[int], ladder: FaultLadder) -> None:
        self.t0, self.xs, self.ys, self.ladder = t0, xs, ys, ladder
        #: The learner's p for rounds t0, t0 + 1, ... (after a fault, the p it is scored).
        self.predictions: list[float] = []

    def answer(self, p: object) -> int:
        """The learner's move for the next round of the block: p, :data:`FAULT`, or (from
        an agent in process) anything else: checked, a bad p is a fault. Returns the
        round's label, which the learner is told next."""
        i = len(self.predictions)
        y = int(self.ys[i])
        if type(p) is float and 0.0 <= p <= 1.0:
            self.predictions.append(p)
        elif p is FAULT:
            self.predictions.append(faulted_prediction(y))
        else:
            try:
                self.predictions.append(check_probability(p))
            except IllegalMove as exc:
                self.ladder.fault(self.t0 + i, "illegal_move", exc.message)
                self.predictions.append(faulted_prediction(y))
        return y


class ExpertsOutcome(NamedTuple):
    """What the learner is told after answering a queued round of the experts game."""

    t: int
    costs: Any
    y: int


class QueuedExperts:
    """A block of queued rounds of the experts game with class-derived experts
    (``play_queued_experts``): for each, the learner is shown the instance ``xs[i]``, and
    :meth:`answer` hands its answer to the referee, which checks it and returns the
    outcome (the costs, the label ``ys[i]``) the learner is told next. The rounds
    answered are scored together when the block ends (and every
    :data:`~littlestone.games.experts.SCORE_CELLS` weights), with the records of rounds
    played one at a time."""

    def __init__(self, loop: GameLoop, xs: Sequence[Any], ys: Sequence[int]) -> None:
        self.loop, self.xs, self.ys = loop, xs, ys
        #: The block's first round, and the next round of the block to answer.
        self.t0, self.i = loop.referee.t + 1, 0

    @property
    def t(self) -> int:
        """The round being played."""
        return self.t0 + self.i

    def next_round(self) -> int:
        """The round of the block to answer next (its instance goes to the learner)."""
        return self.i

    def answer(self, answer: Any) -> ExpertsOutcome:
        """The learner's answer to round i (weights, p or :data:`FAULT`), checked by the
        referee (weights it rejects end the game at this round: MoveError); returns the
        round's outcome, which the learner is told next."""
        loop = self.loop
        referee = loop.referee
        assert isinstance(referee, ExpertsReferee)
        t = self.t0 + self.i
        costs = referee.queued_answer(loop._queued_value(answer, t))
        self.i += 1
        if referee.queued_answered * referee.d >= SCORE_CELLS:
            loop._score_experts(referee, final=False)
        return ExpertsOutcome(t, costs, self.ys[self.i - 1])


# -- the loop ---------------------------------------------------------------------------

class GameLoop:
    """One game of ``game`` under the referee's coin ``coin``.

    ``block``: rounds an oblivious adversary is asked for at a time (0: round by round;
    in the experts game, only with class-derived experts). ``history``: where an infinite
    class's instances are kept (:class:`~littlestone.games.mistake_bound.MistakeBoundReferee`).
    ``on_record`` receives every record, ``log`` every round as it is scored (a block of
    queued rounds at once when there is no ``on_record``). ``in_process``: the agents run
    in the runner's process, where nothing is secret: an error raised while a player's
    move is made or checked is that player's crash, its message with the exception and
    where it was raised. Otherwise (a server) only a :class:`GameEnded` the runner throws
    in ends the game, a crash's message names only the exception, and any other error is
    the runner's and propagates.
    """

    def __init__(self, game: GameSpec, coin: bytes, *, block: int = 0, history: Any = None,
                 on_record: RecordSink | None = None, log: RoundLog | None = None,
                 in_process: bool = True) -> None:
        self.game = game
        self.referee: MistakeBoundReferee | ExpertsReferee
        if game.game == EXPERTS:
            hclass = game.hclass if isinstance(game.hclass, FiniteClass) else None
            self.referee = ExpertsReferee(game.n_experts, game.rounds, coin, hclass=hclass)
        else:
            assert game.hclass is not None
            self.referee = MistakeBoundReferee(game.hclass, game.rounds, coin, history=history)
        self.block, self.in_process = block, in_process
        self.on_record, self.log = on_record, log
        self.ladders = {LEARNER: FaultLadder(LEARNER), ADVERSARY: FaultLadder(ADVERSARY)}
        #: The player whose move is being made or checked (a crash is charged to it).
        self.role = ADVERSARY
        self._emit: RecordSink | None = None
        if log is not None or on_record is not None:
            self._emit = self._logged if log is not None else on_record

    def _logged(self, record: Any) -> None:
        assert self.log is not None
        if isinstance(record, ExpertsRecord):
            self.log.expert(record)
        else:
            self.log.round(record)
        if self.on_record is not None:
            self.on_record(record)

    def moves(self) -> Generator[Move, Any, GameResult]:
        """The game: yields each move, is sent its answer (a runner throws in what a
        player raised, or a :class:`GameEnded`); returns the result."""
        try:
            if isinstance(self.referee, MistakeBoundReferee):
                yield from self._mistake_bound(self.referee)
            else:
                yield from self._experts(self.referee)
        except MoveError:
            pass  # the referee has recorded the status against the player
        except GameEnded as ended:
            self.end(ended)
        except Exception as error:
            if not self.in_process:
                raise
            self.end(Crash(self.role, error))
        return self.result()

    def end(self, ended: GameEnded) -> None:
        """End the game against a player (its status and message), unless it is over."""
        self.referee.abort(ended.status, ended.message)

    def result(self) -> GameResult:
        """The result so far: the referee's scores, the target revealed, |H| of a finite
        class, every fault."""
        result = self.referee.result()
        result.revealed = getattr(self.referee, "revealed", None)
        if isinstance(self.game.hclass, FiniteClass):
            result.extra["size"] = self.game.hclass.size
        faults = self.ladders[LEARNER].faults + self.ladders[ADVERSARY].faults
        if faults:
            result.extra["faults"] = faults
        return result

    def _commit(self, move: Commit, name: str, t: int) -> Generator[Move, Any, Any]:
        """An adversary's commitment in place of its move of round ``t`` (only before
        round 1); then its move, asked again."""
        while type(move) is Commit:
            if t != 1:
                raise GameEnded("illegal_move:adversary:commit", "a commitment after round 1")
            self.referee.commit(move.digest)
            move = yield (ADVERSARY, name, t, _NONE, _NONE)
        return move

    def _reveal(self) -> Generator[Move, Any, None]:
        self.role = ADVERSARY
        revealed = yield (ADVERSARY, "reveal", self.game.rounds + 1, _NONE, _NONE)
        self.referee.reveal(*(revealed if revealed is not None else (None, b"")))

    def _blocks(self) -> Generator[Move, Any, Any]:
        """The adversary's next block of moves, (xs, ys) (``None``: it is not oblivious,
        or no round is left)."""
        referee = self.referee
        left = self.game.rounds - referee.t
        if not left:
            return None
        self.role = ADVERSARY
        block = yield (ADVERSARY, "moves", referee.t + 1, (min(left, self.block),), _NONE)
        if block is None and referee.t:
            raise RuntimeError("an oblivious adversary stopped offering moves")
        return block

    # -- the mistake-bound game ---------------------------------------------------------

    def _mistake_bound(self, referee: MistakeBoundReferee) -> Generator[Move, Any, None]:
        digest = yield (ADVERSARY, "commitment", 0, _NONE, _NONE)
        if digest is not None:
            referee.commit(digest)
        if self.block:
            while (block := (yield from self._blocks())) is not None:
                xs, ys = block
                referee.queue(xs, ys)
                queued = QueuedRounds(referee.t + 1, xs, ys, self.ladders[LEARNER])
                self.role = LEARNER
                try:
                    yield (LEARNER, "play_queued", queued.t0, (queued,), _NONE)
                finally:  # the rounds answered are scored, even when the block ends early
                    self._score_queued(referee, queued.predictions)
        instance, prediction, label = referee.instance, referee.prediction, referee.label
        emit = self._emit
        for t in range(referee.t + 1, self.game.rounds + 1):
            self.role = ADVERSARY
            x = yield (ADVERSARY, "instance", t, _NONE, _NONE)
            if type(x) is Commit:
                x = yield from self._commit(x, "instance", t)
            x = instance(x)
            self.role = LEARNER
            p = yield (LEARNER, "predict", t, (x,), _NONE)
            if type(p) is float and 0.0 <= p <= 1.0:
                prediction(p)
            else:  # another number type, or a fault
                p = self._predicted(referee, p, t)
            self.role = ADVERSARY
            record = label((yield (ADVERSARY, "label", t, (x, p), _NONE)))
            if emit is not None:
                emit(record)
            self.role = LEARNER
            yield (LEARNER, "update", t, (x, record.y), _NONE)
        if referee.phase is Phase.REVEAL:
            yield from self._reveal()

    def _predicted(self, referee: MistakeBoundReferee, p: Any, t: int) -> float:
        """Round by round: p to the referee, or the fault (:data:`FAULT`, or from an agent
        in process a p that is not a number in [0, 1]: the ladder); the p the adversary
        is shown (1/2 after a fault)."""
        if p is not FAULT:
            try:
                value = check_probability(p)
            except IllegalMove as exc:
                self.ladders[LEARNER].fault(t, "illegal_move", exc.message)
            else:
                referee.prediction(value)
                return value
        referee.prediction_fault()
        return 0.5

    def _score_queued(self, referee: MistakeBoundReferee, predictions: list[float]) -> None:
        """Score a block's answered rounds: one record at a time when every record is
        wanted, else in one vectorised pass (written to the log as one block)."""
        if self.on_record is not None:
            emit = self._emit
            assert emit is not None
            for p in predictions:
                emit(referee.queued_round(p))
            return
        referee.score_queued(predictions, records=False)
        if self.log is not None and referee.last_block is not None:
            self.log.rounds(*referee.last_block)
        referee.last_block = None

    # -- the experts game ---------------------------------------------------------------

    def _experts(self, referee: ExpertsReferee) -> Generator[Move, Any, None]:
        commitment = yield (ADVERSARY, "commitment", 0, _NONE, _NONE)
        if commitment is not None:
            referee.commit(commitment)
        class_derived = referee.hclass is not None
        if self.block and class_derived:
            while (block := (yield from self._blocks())) is not None:
                queued = QueuedExperts(self, *referee.queue(*block))
                self.role = LEARNER
                try:
                    yield (LEARNER, "play_queued_experts", queued.t0, (queued,), _NONE)
                finally:  # the rounds answered are scored, even when the block ends early
                    self._score_experts(referee, final=True)
        emit = self._emit
        for t in range(referee.t + 1, self.game.rounds + 1):
            self.role = ADVERSARY
            x = None
            name = "instance" if class_derived else "advice"
            move = yield (ADVERSARY, name, t, _NONE, _NONE)
            if type(move) is Commit:
                move = yield from self._commit(move, name, t)
            if class_derived:
                x = referee.instance(move)
            elif move is not None:
                referee.advice(move)
            self.role = LEARNER
            answer = yield (LEARNER, "weights", t, (referee.current_advice,), (x,))
            shown = self._answer(answer, t)
            faulted = shown is None
            if faulted:
                shown = 0.5
            self.role = ADVERSARY
            if class_derived:  # the adversary's label, having seen the prediction induced
                outcome = yield (ADVERSARY, "label", t, (x, referee.induced_prediction),
                                 (shown, faulted))
            else:  # its costs (or a label under advice), having seen the answer
                outcome = yield (ADVERSARY, "costs", t, (shown,), (faulted,))
            if isinstance(outcome, int) and not isinstance(outcome, bool):
                record = referee.label(outcome)
            else:
                record = referee.costs(outcome)
            if emit is not None:
                emit(record)
            # the round's answer goes before the next is made: a vector of d weights held
            # one round longer made every round's copy fresh memory (page faults: 2x CPU)
            answer = shown = None
            self.role = LEARNER
            yield (LEARNER, "update_costs", t, (record.costs, record.y), _NONE)
        if referee.phase is ExpertsPhase.REVEAL:
            yield from self._reveal()

    def _score_experts(self, referee: ExpertsReferee, final: bool) -> None:
        """Score the queued rounds answered: one record at a time when every record is
        wanted, else the block's columns to the log (one frame)."""
        records = referee.score_queued(records=self.on_record is not None, final=final)
        if self.on_record is not None:
            emit = self._emit
            assert emit is not None
            for record in records:
                emit(record)
        elif self.log is not None and referee.last_block is not None:
            self.log.expert_block(referee.last_block)
        referee.last_block = None

    def _queued_value(self, answer: Any, t: int) -> Any:
        """A queued round's answer as the referee takes it: weights, p (checked: from an
        agent in process a p outside [0, 1] is a fault on the ladder), or None for a
        fault."""
        if answer is FAULT:
            return None
        if isinstance(answer, float | int | np.floating | np.integer) and not isinstance(
                answer, bool):
            try:
                return check_probability(answer)
            except IllegalMove as exc:
                self.ladders[LEARNER].fault(t, "illegal_move", exc.message)
                return None
        return answer

    def _answer(self, answer: Any, t: int) -> Any:
        """The learner's answer to the referee: weights, a prediction p, or a fault
        (:data:`FAULT`, or from an agent in process a p outside [0, 1]: the ladder;
        charged the maximal loss). Returns the answer as the adversary is shown it (p as
        a float), or ``None`` after a fault."""
        referee = self.referee
        assert isinstance(referee, ExpertsReferee)
        if type(answer) is np.ndarray:  # weights, the usual answer: no other test
            referee.weights(answer)
            return answer
        if answer is FAULT:
            referee.answer_fault()
            return None
        if isinstance(answer, float | int | np.floating | np.integer) and not isinstance(
                answer, bool):
            try:
                value = check_probability(answer)
            except IllegalMove as exc:
                self.ladders[LEARNER].fault(t, "illegal_move", exc.message)
                referee.answer_fault()
                return None
            referee.prediction(value)
            return value
        referee.weights(answer)
        return answer


# -- driving the loop ---------------------------------------------------------------------

class Driver:
    """The runners' side of :meth:`GameLoop.moves`, sans I/O: the loop's next move after
    an answer (:meth:`send`) or after what a player raised (:meth:`throw`), or ``None``
    when the game is over and :attr:`result` is set: the loop stepped by hand, or by
    :func:`drive_async` (:func:`drive` resumes the generator in its own tight loop).

    >>> from littlestone.games.classes import make_class
    >>> from littlestone.games.game import GameSpec, game_seeds
    >>> game = GameSpec("mistake-bound", 1, make_class("thresholds:n=4"))
    >>> driver = Driver(GameLoop(game, game_seeds(0).referee))
    >>> driver.move[:2], driver.send(None)[:2], driver.send(2)[:3]
    (('adversary', 'commitment'), ('adversary', 'instance'), ('learner', 'predict', 1))
    >>> driver.throw(ZeroDivisionError("p")), driver.result.status
    (None, 'crash:learner:ZeroDivisionError')
    """

    def __init__(self, loop: GameLoop) -> None:
        self._moves = loop.moves()
        #: The game's result, once it is over.
        self.result: GameResult | None = None
        #: The move the loop asks now (``None``: the game is over).
        self.move: Move | None = self._resume(self._moves.send, None)

    def send(self, answer: Any) -> Move | None:
        """The player answered the move: the next move, or ``None`` at the end."""
        return self._resume(self._moves.send, answer)

    def throw(self, error: BaseException) -> Move | None:
        """The player's move raised ``error`` (the loop decides: a crash, a fault, the
        game ended): the next move, or ``None`` at the end. An error the loop does not
        take (a runner's own, a cancellation) propagates."""
        return self._resume(self._moves.throw, error)

    def _resume(self, how: Callable[[Any], Move], value: Any) -> Move | None:
        try:
            self.move = how(value)
        except StopIteration as stop:
            self.result, self.move = stop.value, None
        return self.move


def drive(loop: GameLoop, answer: Callable[[Move], Any]) -> GameResult:
    """Play ``loop``'s game to its end, each move answered by ``answer(move)`` (what it
    raises is thrown into the loop); the result.

    >>> from littlestone.games.classes import make_class
    >>> from littlestone.games.game import GameSpec, game_seeds
    >>> game = GameSpec("mistake-bound", 3, make_class("thresholds:n=4"))
    >>> moves = {"instance": 2, "predict": 0.0, "label": 1}
    >>> result = drive(GameLoop(game, game_seeds(0).referee), lambda m: moves.get(m[1]))
    >>> result.status, result.mistakes
    ('complete', 3)
    """
    moves = loop.moves()
    send, throw = moves.send, moves.throw  # (in process a move costs microseconds: the
    try:  # generator resumed here, not through a Driver's calls)
        move = next(moves)
        while True:
            try:
                reply = answer(move)
            except BaseException as error:  # the loop's to judge (a cancelled block is scored)
                move = throw(error)
            else:
                move = send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]  # the loop returns its result


async def drive_async(loop: GameLoop, answer: Callable[[Move], Awaitable[Any]],
                      send: Callable[[Callable[[Any], Move | None], Any],
                                     Awaitable[Move | None]] | None = None,
                      send_apart: tuple[str, ...] = ()) -> GameResult:
    """:func:`drive`'s twin for a runner on an event loop: each move answered by awaiting
    ``answer(move)``. An answer to a move named in ``send_apart`` is sent to the loop by
    awaiting ``send(Driver.send, answer)`` (the server checks a long game's reveal in a
    worker thread: ``asyncio.to_thread``)."""
    driver = Driver(loop)
    move = driver.move
    while move is not None:
        try:
            reply = await answer(move)
        except BaseException as error:  # the loop's to judge (a cancelled block is scored)
            move = driver.throw(error)
            continue
        if send is not None and move[1] in send_apart:
            move = await send(driver.send, reply)
        else:
            move = driver.send(reply)
    assert driver.result is not None
    return driver.result
