"""The synchronous runner: in-process agents through the game loop in a tight loop.

No asyncio and no encoding: the loop (:class:`littlestone.games.loop.GameLoop`) asks for
moves, :func:`~littlestone.games.loop.drive` hands each to :func:`answers`, and the learner
and the adversary are called directly, so built-in agents play
each other at numpy speed (docs/design.md section 2). Local play, replay and
tournaments' built-in pairs run here.

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
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from littlestone.adversaries.base import Adversary
from littlestone.games.classes import HalfspaceClass
from littlestone.games.game import EXPERTS, GameResult, GameSpec, game_seeds
from littlestone.games.loop import (
    LEARNER,
    GameLoop,
    Move,
    QueuedRounds,
    RecordSink,
    RoundLog,
    drive,
)
from littlestone.learners.base import Learner

__all__ = ["RecordSink", "RoundLog", "play"]

#: Rounds an oblivious adversary hands over at a time.
BLOCK = 2048
#: Experts from which an experts game is played with BLAS on one thread.
BLAS_POOL_FROM = 4096


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
    :class:`~littlestone.games.game.ExpertsRecord`) as its round is scored. A player that
    cannot play ``game`` raises :class:`~littlestone.games.errors.UnsupportedGame` before
    round 1; a rule broken or an exception raised by a player during the game ends it
    with a status naming the player (``crash:learner:ZeroDivisionError`` ...).

    With ``blocks`` (the default), an oblivious adversary that offers
    :meth:`~littlestone.adversaries.base.Adversary.moves` hands the referee its moves in
    blocks; the records are the same as move by move (``blocks=False``). ``log`` receives
    every round as it is scored (:mod:`littlestone.server.records.logs`; the caller writes
    the header and the footer). ``key`` is the game key the seeds derive from
    (:func:`~littlestone.games.game.game_seeds`); by default the public key of ``seed``.
    """
    seeds = game_seeds(seed, key)
    learner.start(game, seeds.learner)
    adversary.start(game, seeds.adversary)
    experts = game.game == EXPERTS
    loop = GameLoop(game, seeds.referee, block=BLOCK if blocks and not experts else 0,
                    history=history_for(game), on_record=on_record, log=log)
    # BLAS on one thread: the referee's products over d experts are too short to gain
    # from a second thread, and the pool's waiting threads take the core it runs on
    # (from BLAS_POOL_FROM experts: entering the limit costs about a millisecond)
    with (threadpool_limits(1, user_api="blas") if experts and game.n_experts >= BLAS_POOL_FROM
          else contextlib.nullcontext()):
        result = drive(loop, answers(learner, adversary))
    result.bound = learner.final_bound(game, result.to_dict())
    result.extra.update(learner.report())
    return result


def answers(learner: Learner, adversary: Adversary) -> Callable[[Move], Any]:
    """How the agents answer a game loop's moves (for :func:`~littlestone.games.loop.drive`):
    each move by calling its agent's method; a queued block by :func:`_learn_block`."""
    # each move's agent method, bound on first use (an agent has those of its games)
    calls: dict[str, Callable[..., Any]] = {
        "play_queued": lambda queued: _learn_block(learner, queued)}

    def answer(move: Move) -> Any:
        call = calls.get(move[1]) or calls.setdefault(move[1], getattr(
            learner if move[0] == LEARNER else adversary, move[1]))
        return call(*move[3])

    return answer


def _learn_block(learner: Learner, queued: QueuedRounds) -> None:
    """The learner plays a queued block: for each round, p_t = predict(x_t) is kept
    before update(x_t, y_t) tells it the label; the loop then scores the kept
    predictions in one pass, up to where the learner stopped if it raised."""
    predict, update = learner.predict, learner.update
    answer, checked = queued.predictions.append, queued.answer
    for x, y in zip(queued.xs, queued.ys, strict=True):
        p = predict(x)
        if type(p) is float and 0.0 <= p <= 1.0:
            answer(p)
        else:  # another number type, or a fault (the ladder: PROTOCOL.md 6)
            checked(p)
        update(x, y)


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
