"""The ``replay`` adversary: a logged game's instances and labels played back, in order,
against any learner (``--adversary replay:log=FILE_OR_GAME_ID``, ``replay --against``).

Importing this module registers it in
:data:`~littlestone.adversaries.base.ADVERSARIES` (the command line does, and so do
:mod:`.verify` and :mod:`.replay`). A server never builds it for a peer: it reads the log
its spec names (``served = False``, ``log`` and ``data`` are file parameters), and a log
nothing anchors never has it built on re-simulation (:mod:`.strangers`).

>>> import tempfile, pathlib
>>> from littlestone.games.classes import make_class
>>> from littlestone.learners import LEARNERS
>>> from littlestone.adversaries import ADVERSARIES
>>> from littlestone.local import play
>>> from littlestone.server.records.logged import play_logged
>>> game = GameSpec(MISTAKE_BOUND, 25, make_class("thresholds:n=63"))
>>> done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 3,
...                    pathlib.Path(tempfile.mkdtemp()))
>>> replay = ADVERSARIES.make(f"replay:log={done.log}")
>>> play(game, LEARNERS.make("halving"), replay).mistakes == done.result.mistakes
True
>>> ADVERSARIES["replay"].served
False
"""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.adversaries.base import Adversary, register
from littlestone.games import commitment
from littlestone.games.classes import make_class
from littlestone.games.errors import LogError, SpecError
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners.base import LEARNERS
from littlestone.server.records.anchors import locate
from littlestone.server.records.folder import DEFAULT_DATA
from littlestone.server.records.logs import GameLogData, checked, read_log
from littlestone.server.records.resimulation import filled

__all__ = ["Replay"]


#: The log of the replay adversary's example (the check suite's), made once a process.
_EXAMPLE: Path | None = None


@register
class Replay(Adversary):
    """Plays back the instances and labels of a logged game, in order (oblivious).

    ``log`` is a log file or a game id of the ``data`` folder. It plays the game the log
    holds (same game, same class, at most as many rounds). In the experts game it commits
    to its whole sequence before round 1 (games.commitment.SequenceHash); in the
    mistake-bound game the referee's version space checks that the sequence is
    realizable. Free-experts logs replay only when their advice and costs were stored in
    full (at most :data:`.logs.FULL_ARRAYS_MAX` experts).

    >>> Replay.id
    'replay'
    """

    id = "replay"
    games = frozenset({MISTAKE_BOUND, EXPERTS})
    file_params = frozenset({"log", "data"})
    served = False  # it reads a log named by its spec
    oblivious = True

    def __init__(self, log: str = "", data: str = DEFAULT_DATA) -> None:
        self.log, self.data = log, data
        if not log:
            raise ValueError("name the game to replay: replay:log=FILE_OR_GAME_ID")
        try:
            path, game_id = locate(log, data)
            self._data = filled(checked(read_log(path)), None if game_id is None else data,
                                game_id)  # (by path: its own folder's index)
        except (LogError, OSError) as exc:
            raise SpecError(f"replay: {exc}") from None
        self._load()

    @classmethod
    def from_log(cls, log: GameLogData) -> Replay:
        replay = cls.__new__(cls)
        replay.log, replay.data, replay._data = str(log.path), DEFAULT_DATA, log
        replay._load()
        return replay

    @classmethod
    def example(cls) -> Replay:
        """A replay of a short logged game (for the generic check suite)."""
        import tempfile

        from littlestone.adversaries import ADVERSARIES as adversaries
        from littlestone.server.records.logged import play_logged
        from littlestone.testing import CHECK_ROUNDS

        global _EXAMPLE
        if _EXAMPLE is None or not _EXAMPLE.exists():  # one a process, removed at its exit
            folder = tempfile.TemporaryDirectory(prefix="littlestone-replay-")
            atexit.register(folder.cleanup)
            game = GameSpec(MISTAKE_BOUND, CHECK_ROUNDS, make_class("thresholds:n=32"))
            _EXAMPLE = play_logged(game, LEARNERS.make("halving"),
                                   adversaries.make("random-target"), 0, Path(folder.name)).log
        return cls(log=str(_EXAMPLE))

    def _load(self) -> None:
        data = self._data
        self._rules = data.header["rules"]
        if data.expert_rounds:
            self._xs: list[Any] = [r.get("x") for r in data.expert_rounds]
            self._ys: list[Any] = [r.get("y") for r in data.expert_rounds]
        else:
            self._xs = list(data.columns["x"]) if data.columns else []
            self._ys = [int(y) for y in data.columns["y"]] if data.columns else []
        self._t = 0
        self._salt = b""
        self._digest: bytes | None = None

    def unsupported(self, game: GameSpec) -> str | None:
        rules = self._rules
        if game.game != rules["game"]:
            return f"the log holds a {rules['game']} game"
        logged_class = rules.get("class")
        if (game.hclass.spec if game.hclass else None) != logged_class:
            return f"the log's class is {logged_class}"
        if game.experts != rules.get("experts") and game.hclass is None:
            return f"the log's game has {rules.get('experts')} experts"
        if game.rounds > len(self._ys):
            return f"the log holds {len(self._ys)} rounds, fewer than {game.rounds}"
        if game.game == EXPERTS and game.hclass is None and self._data.expert_rounds and (
            "costs" not in self._data.expert_rounds[0]
        ):
            return "the log keeps only digests of its costs (too many experts to replay)"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._t = 0
        self._salt = np.random.default_rng(seed).bytes(commitment.MIN_SALT_BYTES)
        self._digest = None
        if game.game == EXPERTS:
            spec = game.hclass.spec if game.hclass is not None else f"experts:d={game.experts}"
            sequence = commitment.SequenceHash(spec)
            for t in range(game.rounds):
                row = self._data.expert_rounds[t]
                if game.hclass is not None:
                    sequence.add(int(row["x"]))
                elif "advice" in row:
                    sequence.add_advice(np.asarray(row["advice"]))
                sequence.add(row["y"] if row.get("y") is not None else np.asarray(row["costs"]))
            self._digest = sequence.digest(self._salt)

    def commitment(self) -> bytes | None:
        return self._digest

    def reveal(self) -> tuple[Any, bytes] | None:
        if self._digest is not None:
            return None, self._salt
        revealed = self._data.footer.get("revealed") if self._data.footer else None
        if revealed is not None:  # the original adversary's target: a witness here
            return (np.asarray(revealed) if isinstance(revealed, list) else revealed), b""
        return None

    def instance(self) -> Any:
        self._t += 1
        return self._xs[self._t - 1]

    def label(self, x: Any, p: float) -> int:
        return int(self._ys[self._t - 1])

    def moves(self, n: int) -> tuple[Any, list[int]] | None:
        if self._rules["game"] != MISTAKE_BOUND or self._t >= len(self._ys):
            return None
        end = min(self._t + n, len(self._ys))
        xs = self._xs[self._t : end]
        block = (np.asarray(xs) if xs and isinstance(xs[0], np.ndarray) else xs,
                 self._ys[self._t : end])
        self._t = end
        return block

    def advice(self) -> NDArray[np.float64] | None:
        self._t += 1
        row = self._data.expert_rounds[self._t - 1]
        return np.asarray(row["advice"]) if "advice" in row else None

    def costs(self, answer: Any) -> NDArray[np.float64] | int:
        row = self._data.expert_rounds[self._t - 1]
        y = row.get("y")
        if y is not None:
            return int(y)
        return np.asarray(row["costs"])
