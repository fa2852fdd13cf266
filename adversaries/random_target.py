"""The random target: an oblivious adversary of the realizable games."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from adversaries.base import Adversary, register
from games import commitment
from games.classes import FiniteClass, HalfspaceClass
from games.game import EXPERTS, MISTAKE_BOUND, GameSpec

#: Instances (and labels) are drawn this many at a time.
BLOCK = 4096


@register
class RandomTarget(Adversary):
    """Draws a target h* and uniform instances from its seed, and labels by h*.

    Oblivious: the target (hypothesis index ``target`` if given, else uniform over H; a
    uniform unit vector for halfspaces) and the instance stream are fixed by the seed
    before round 1, and it commits to the target by digest. On ``halfspaces`` every
    instance keeps |<w*, x>| >= margin. In the experts game its instances pick the
    class-derived experts' advice and h* is an expert that makes no mistake.

    >>> from games.classes import make_class
    >>> from games.game import GameSpec
    >>> adversary = RandomTarget(target=3)
    >>> adversary.start(GameSpec("mistake-bound", 4, make_class("thresholds:n=8")), seed=0)
    >>> [adversary.label(x, 0.0) == int(x < 3) for x in (adversary.instance() for _ in range(4))]
    [True, True, True, True]
    """

    id = "random-target"
    games = frozenset({MISTAKE_BOUND, EXPERTS})
    oblivious = True

    def __init__(self, target: int | None = None) -> None:
        self.target = target
        self._rng = np.random.default_rng(0)
        self._salt = b""
        self._h: Any = None
        self._block: list[Any] = []
        self._labels: list[int] = []
        self._next = 0
        self._game: GameSpec | None = None

    def unsupported(self, game: GameSpec) -> str | None:
        hclass = game.hclass
        if hclass is None:
            return "it needs a class (--class) to draw a target from"
        if not isinstance(hclass, FiniteClass | HalfspaceClass):
            return f"it cannot draw a target from {hclass.spec}"  # pragma: no cover
        if self.target is not None:
            if not isinstance(hclass, FiniteClass):
                return "target=INDEX needs a finite class"
            if not 0 <= self.target < hclass.size:
                return f"target={self.target} is not a hypothesis index in 0..{hclass.size - 1}"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._game = game
        self._rng = np.random.default_rng(seed)
        self._salt = self._rng.bytes(commitment.MIN_SALT_BYTES)
        hclass = game.hclass
        if isinstance(hclass, HalfspaceClass):
            self._h = hclass.sample_target(self._rng)
        else:
            assert isinstance(hclass, FiniteClass)
            self._h = (
                self.target if self.target is not None else int(self._rng.integers(hclass.size))
            )
        self._block, self._labels, self._next = [], [], 0

    def _refill(self) -> None:
        assert self._game is not None
        hclass = self._game.hclass
        if isinstance(hclass, HalfspaceClass):
            xs = hclass.sample_instances(self._rng, self._h, BLOCK)
            self._block = xs  # type: ignore[assignment]  # rows of a 2-D array
            self._labels = (xs @ self._h > 0).astype(int).tolist()
        else:
            assert isinstance(hclass, FiniteClass)
            ints = hclass.sample_instances(self._rng, BLOCK)
            h = np.array([self._h])
            self._block = ints
            self._labels = [int(hclass.evaluate(x, h)[0]) for x in ints]
        self._next = 0

    def commitment(self) -> bytes:
        assert self._game is not None and self._game.hclass is not None, "start() first"
        return commitment.digest(self._game.hclass, self._h, self._salt)

    def reveal(self) -> tuple[Any, bytes]:
        return self._h, self._salt

    def instance(self) -> Any:
        if self._next == len(self._block):
            self._refill()
        x = self._block[self._next]
        self._next += 1
        return x

    def label(self, x: Any, p: float) -> int:
        return self._labels[self._next - 1]

    def moves(self, n: int) -> tuple[Any, list[int]]:
        if self._next == len(self._block):
            self._refill()
        end = min(self._next + n, len(self._block))
        xs, ys = self._block[self._next : end], self._labels[self._next : end]
        self._next = end
        return xs, ys

    @property
    def hypothesis(self) -> Any:
        """The target h*: a hypothesis index, or w* for halfspaces."""
        return self._h

    def advice(self) -> NDArray[np.float64] | None:  # pragma: no cover - class-derived only
        raise NotImplementedError("random-target plays class-derived experts: give --class")
