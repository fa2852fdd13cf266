"""The local driver: in-process agents through the referee in a tight loop.

No asyncio and no encoding: the referee, the learner and the adversary are called
directly, so built-in agents play each other at numpy speed (docs/design.md section 2).

>>> from littlestone.games.classes import make_class
>>> from littlestone.games.game import GameSpec
>>> from littlestone.learners import LEARNERS
>>> from littlestone.adversaries import ADVERSARIES
>>> game = GameSpec("mistake-bound", 100, make_class("thresholds:n=1023"))
>>> result = play(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), seed=0)
>>> result.status, result.mistakes <= 10 == result.bound.value
('complete', True)
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from threadpoolctl import threadpool_limits

from littlestone.adversaries.base import Adversary
from littlestone.games.classes import FiniteClass, HalfspaceClass
from littlestone.games.errors import IllegalMove, MoveError, where_raised
from littlestone.games.experts import ExpertsReferee
from littlestone.games.experts import Phase as ExpertsPhase
from littlestone.games.game import (
    EXPERTS,
    ExpertsRecord,
    GameResult,
    GameSpec,
    RoundRecord,
    game_seeds,
)
from littlestone.games.mistake_bound import MistakeBoundReferee, Phase, check_probability
from littlestone.learners.base import Learner

__all__ = ["RecordSink", "RoundLog", "play"]

RecordSink = Callable[[Any], None]


class RoundLog(Protocol):
    """Where scored rounds are written as they are played (a game log's writer,
    :class:`littlestone.server.records.logs.LogWriter`): one round, a whole block of
    queued rounds (the referee's ``last_block``), or one round of the experts game."""

    def round(self, record: RoundRecord) -> None: ...

    def rounds(self, t0: int, xs: Any, ps: Any, ys: Any, predictions: Any) -> None: ...

    def expert(self, record: ExpertsRecord) -> None: ...

#: Rounds an oblivious adversary hands over at a time.
BLOCK = 2048
#: Experts from which an experts game is played with BLAS on one thread.
BLAS_POOL_FROM = 4096
LEARNER, ADVERSARY = "learner", "adversary"


def play(
    game: GameSpec,
    learner: Learner,
    adversary: Adversary,
    seed: int = 0,
    on_record: RecordSink | None = None,
    blocks: bool = True,
    log: RoundLog | None = None,
    key: bytes | None = None,
) -> GameResult:
    """Play one game and return its result (with the learner's bound).

    ``on_record`` receives every :class:`~littlestone.games.game.RoundRecord` (or
    :class:`~littlestone.games.game.ExpertsRecord`) as its round completes. A player that cannot
    play ``game`` raises :class:`~littlestone.games.errors.UnsupportedGame` before round 1; a rule
    broken or an exception raised by a player during the game ends it with a status
    naming the player (``crash:learner:ZeroDivisionError`` ...).

    With ``blocks`` (the default), an oblivious adversary that offers
    :meth:`~littlestone.adversaries.base.Adversary.moves` hands the referee its moves in blocks;
    the records are the same as move by move (``blocks=False``). ``log`` receives every
    round as it is scored (:mod:`littlestone.server.records.logs`; the caller writes the
    header and the footer). ``key`` is the game key the seeds derive from
    (:func:`~littlestone.games.game.game_seeds`); by default the public key of ``seed``.
    """
    seeds = game_seeds(seed, key)
    learner.start(game, seeds.learner)
    adversary.start(game, seeds.adversary)
    if log is not None:
        on_record = _LoggingSink(on_record, log)
    if game.game == EXPERTS:
        # BLAS on one thread: the referee's products over d experts are too short to gain
        # from a second thread, and the pool's waiting threads take the core it runs on
        # (from BLAS_POOL_FROM experts: entering the limit costs about a millisecond)
        with (threadpool_limits(1, user_api="blas") if game.n_experts >= BLAS_POOL_FROM
              else contextlib.nullcontext()):
            result = _play_experts(game, learner, adversary, seeds.referee, on_record)
    else:
        result = _play_mistake_bound(game, learner, adversary, seeds.referee, on_record, blocks,
                                     log)
    result.bound = learner.final_bound(game, result.to_dict())
    result.extra.update(learner.report())
    return result


class _LoggingSink:
    """Logs each record, then hands it on; the vectorised path logs whole blocks instead."""

    def __init__(self, sink: RecordSink | None, log: RoundLog) -> None:
        self.sink, self.log = sink, log

    def __call__(self, record: Any) -> None:
        if isinstance(record, ExpertsRecord):
            self.log.expert(record)
        else:
            self.log.round(record)
        if self.sink is not None:
            self.sink(record)


def _crash_status(role: str, exc: BaseException) -> tuple[str, str]:
    """A player's exception as a game's status and message: the exception, and where in
    the player's own code it was raised (file and line)."""
    where = where_raised(exc)
    return (f"crash:{role}:{type(exc).__name__}",
            f"{role} raised {type(exc).__name__}: {exc}" + (f" at {where}" if where else ""))


def _play_mistake_bound(
    game: GameSpec, learner: Learner, adversary: Adversary, coin: bytes,
    on_record: RecordSink | None, blocks: bool, log: RoundLog | None = None,
) -> GameResult:
    assert game.hclass is not None
    referee = MistakeBoundReferee(game.hclass, game.rounds, coin, history=history_for(game))
    role = ADVERSARY
    ladder = _Ladder()
    try:
        digest = adversary.commitment()
        if digest is not None:
            referee.commit(digest)
        predict, update = learner.predict, learner.update
        left = game.rounds
        block = adversary.moves(min(left, BLOCK)) if blocks and left else None
        if block is None:
            instance, prediction, label = referee.instance, referee.prediction, referee.label
            next_instance, answer = adversary.instance, adversary.label
            for t in range(1, left + 1):
                role = ADVERSARY
                x = instance(next_instance())
                role = LEARNER
                p = predict(x)
                if type(p) is float and 0.0 <= p <= 1.0:
                    prediction(p)
                else:  # another number type, or a fault (the ladder: PROTOCOL.md 6)
                    p = ladder.predicted(referee, p, t)
                role = ADVERSARY
                record = label(answer(x, p))
                if on_record is not None:
                    on_record(record)
                role = LEARNER
                update(x, record.y)
        queued_round = referee.queued_round
        while block is not None:
            xs, ys = block
            referee.queue(xs, ys)
            role = LEARNER
            if on_record is None or (isinstance(on_record, _LoggingSink)
                                     and on_record.sink is None):
                try:
                    _learn_block(referee, xs, ys, predict, update, ladder,
                                 game.rounds - left + 1)
                finally:
                    if log is not None and referee.last_block is not None:
                        log.rounds(*referee.last_block)
                        referee.last_block = None
            else:
                for t, (x, y) in enumerate(zip(xs, ys, strict=True), game.rounds - left + 1):
                    p = predict(x)
                    if type(p) is not float or not 0.0 <= p <= 1.0:
                        p = ladder.queued(p, y, t)
                    record = queued_round(p)
                    on_record(record)
                    update(x, y)
            left -= len(ys)
            role = ADVERSARY
            block = adversary.moves(min(left, BLOCK)) if left else None
            if block is None and left:
                raise RuntimeError("an oblivious adversary stopped offering moves")
        role = ADVERSARY
        if referee.reveal_due and referee.phase is Phase.REVEAL:
            revealed = adversary.reveal()
            if revealed is None:
                referee.reveal(None, b"")
            else:
                referee.reveal(*revealed)
    except MoveError:
        pass  # the referee has recorded the status against the player
    except _Forfeit as exc:
        referee.abort(exc.status, str(exc))
    except Exception as exc:  # a player's bug ends its game, never the driver
        referee.abort(*_crash_status(role, exc))
    result = referee.result()
    result.revealed = referee.revealed
    _describe_class(game, result)
    ladder.record(result)
    return result


#: The fault that forfeits a game (PROTOCOL.md 6; the server's
#: ``littlestone.server.net.settings.FAULTS_TO_FORFEIT``, which a test holds equal).
FAULTS_TO_FORFEIT = 3


class _Forfeit(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(f"learner forfeits after {FAULTS_TO_FORFEIT} faults ({code})")
        self.status = f"forfeit:learner:{code}"


class _Ladder:
    """The fault ladder of PROTOCOL.md 6 for an in-process learner, so that one rule book
    holds for every driver: a prediction that is not a number in [0, 1] is a fault that
    costs the learner the round (scored as a mistake, p = 1 - y; the adversary is shown
    1/2), and the third forfeits the game (``forfeit:learner:illegal_move``)."""

    def __init__(self) -> None:
        self.faults: list[dict[str, Any]] = []

    def fault(self, exc: IllegalMove, t: int) -> None:
        self.faults.append({"t": t, "code": "illegal_move", "message": exc.message,
                            "role": LEARNER})
        if len(self.faults) >= FAULTS_TO_FORFEIT:
            raise _Forfeit("illegal_move")

    def predicted(self, referee: MistakeBoundReferee, p: Any, t: int) -> float:
        """Round by round: hand p to the referee, or the fault; the p the adversary sees."""
        try:
            value = check_probability(p)
        except IllegalMove as exc:
            self.fault(exc, t)
            referee.prediction_fault()
            return 0.5
        referee.prediction(value)
        return value

    def queued(self, p: Any, y: int, t: int) -> float:
        """A queued round (its label known): p, or after a fault 1 - y (a mistake)."""
        try:
            return check_probability(p)
        except IllegalMove as exc:
            self.fault(exc, t)
            return 1.0 - y

    def record(self, result: GameResult) -> None:
        if self.faults:
            result.extra["faults"] = self.faults


def _learn_block(
    referee: MistakeBoundReferee, xs: Any, ys: list[int],
    predict: Callable[[Any], float], update: Callable[[Any, int], None],
    ladder: _Ladder, t0: int,
) -> None:
    """The learner plays a queued block: for each round, p_t = predict(x_t) is kept
    before update(x_t, y_t) tells it the label; the referee then scores the kept
    predictions in one pass. If the learner fails mid-block, the rounds it answered
    are scored first, so the game ends where it would have one round at a time."""
    predictions: list[float] = []
    answer = predictions.append
    try:
        for x, y in zip(xs, ys, strict=True):
            p = predict(x)
            if type(p) is not float or not 0.0 <= p <= 1.0:
                p = ladder.queued(p, y, t0 + len(predictions))
            answer(p)
            update(x, y)
    except Exception:  # (a forfeit too)
        referee.score_queued(predictions, records=False)
        raise
    referee.score_queued(predictions, records=False)


#: Beyond this many bytes an infinite class's instance history goes to a temporary file.
HISTORY_IN_MEMORY = 64 << 20


class FileHistory:
    """The referee's instance history in an anonymous temporary file: rows are written
    in order (buffered) and read back in slices, so memory stays flat however long the
    game."""

    BUFFER_ROWS = 4096

    def __init__(self, d: int) -> None:
        self.d = d
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the game
        self.rows = 0
        self._buffer: list[Any] = []

    def __setitem__(self, key: int | slice, value: Any) -> None:
        block = np.asarray(value, dtype=np.float64).reshape(-1, self.d)
        start = key.start if isinstance(key, slice) else key
        if start != self.rows + sum(len(b) for b in self._buffer):
            raise ValueError("the history is written in round order")
        self._buffer.append(block.copy())
        if sum(len(b) for b in self._buffer) >= self.BUFFER_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            self.file.seek(0, 2)
            for block in self._buffer:
                self.file.write(np.ascontiguousarray(block).tobytes())
                self.rows += len(block)
            self._buffer = []

    def __getitem__(self, key: slice) -> Any:
        self._flush()
        start, stop = key.start or 0, min(key.stop if key.stop is not None else self.rows,
                                          self.rows)
        self.file.seek(start * self.d * 8)
        data = self.file.read(max(0, stop - start) * self.d * 8)
        return np.frombuffer(data, dtype=np.float64).reshape(-1, self.d)


def history_for(game: GameSpec) -> Any:
    """Storage for the referee's instance history: in memory when small, else a
    :class:`FileHistory` (memory stays flat however long the game)."""
    hclass = game.hclass
    if not isinstance(hclass, HalfspaceClass):
        return None
    if game.rounds * hclass.n_features * 8 <= HISTORY_IN_MEMORY:
        return None
    return FileHistory(hclass.n_features)


def _play_experts(
    game: GameSpec, learner: Learner, adversary: Adversary, coin: bytes,
    on_record: RecordSink | None,
) -> GameResult:
    hclass = game.hclass if isinstance(game.hclass, FiniteClass) else None
    referee = ExpertsReferee(game.n_experts, game.rounds, coin, hclass=hclass)
    role = ADVERSARY
    ladder = _Ladder()
    try:
        commitment = adversary.commitment()
        if commitment is not None:
            referee.commit(commitment)
        for t in range(1, game.rounds + 1):
            role = ADVERSARY
            record: ExpertsRecord
            if hclass is not None:
                x = referee.instance(adversary.instance())
                role = LEARNER
                answer = learner.weights(referee.current_advice)
                p = _answer(referee, answer, ladder, t)
                role = ADVERSARY
                record = referee.label(adversary.label(x, p))
            else:
                advice = adversary.advice()
                if advice is not None:
                    referee.advice(advice)
                role = LEARNER
                answer = learner.weights(referee.current_advice)
                _answer(referee, answer, ladder, t)
                role = ADVERSARY
                outcome = adversary.costs(answer)
                if isinstance(outcome, int) and not isinstance(outcome, bool):
                    record = referee.label(outcome)
                else:
                    record = referee.costs(outcome)
            if on_record is not None:
                on_record(record)
            role = LEARNER
            learner.update_costs(record.costs, record.y)
        role = ADVERSARY
        if referee.phase is ExpertsPhase.REVEAL:
            revealed = adversary.reveal()
            referee.reveal(*(revealed if revealed is not None else (None, b"")))
    except MoveError:
        pass
    except _Forfeit as exc:
        referee.abort(exc.status, str(exc))
    except Exception as exc:  # a player's bug ends its game, never the driver
        referee.abort(*_crash_status(role, exc))
    result = referee.result()
    _describe_class(game, result)
    ladder.record(result)
    return result


def _answer(referee: ExpertsReferee, answer: Any, ladder: _Ladder, t: int) -> float:
    """Hand the learner's answer (weights, or a prediction p) to the referee; return the
    prediction the adversary sees: p, or <w, a> under advice (0.5 without advice, or
    after a fault: a p outside [0, 1] climbs the fault ladder, as over the network)."""
    if isinstance(answer, float | int | np.floating | np.integer) and not isinstance(
            answer, bool):
        try:
            value = check_probability(answer)
        except IllegalMove as exc:
            ladder.fault(exc, t)
            referee.answer_fault()
            return 0.5
        referee.prediction(value)
        return value
    referee.weights(answer)
    return referee.induced_prediction


def _describe_class(game: GameSpec, result: GameResult) -> None:
    """Add |H| to the result of a game on a finite class."""
    if isinstance(game.hclass, FiniteClass):
        result.extra["size"] = game.hclass.size
