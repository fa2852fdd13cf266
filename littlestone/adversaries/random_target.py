"""The random target: an oblivious adversary of the realizable games."""

from __future__ import annotations

from typing import Any

import numpy as np

from littlestone.adversaries.base import Adversary, register
from littlestone.games import commitment
from littlestone.games.classes import FiniteClass, HalfspaceClass
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec

#: Instances (and labels) are drawn this many at a time.
BLOCK = 2048


@register
class RandomTarget(Adversary):
    """Draws a target h* and uniform instances from its seed, and labels by h*.

    Oblivious: the target (hypothesis index ``target`` if given, else uniform over H; a
    uniform unit vector for halfspaces) and the instance stream are fixed by the seed
    before round 1, and it commits to the target by digest. On ``halfspaces`` every
    instance keeps |<w*, x>| >= margin. In the experts game its instances pick the
    class-derived experts' advice and h* is an expert that makes no mistake.

    >>> from littlestone.games.classes import make_class
    >>> from littlestone.games.game import GameSpec
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
        self._next = self._drawn = 0
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
        self._block, self._labels, self._next, self._drawn = [], [], 0, 0

    def _refill(self) -> None:
        """Draw the next block: BLOCK instances, or the rest of the game if fewer (a short
        game draws no more than it plays)."""
        assert self._game is not None
        hclass = self._game.hclass
        n = min(BLOCK, max(1, self._game.rounds - self._drawn))
        self._drawn += n
        if isinstance(hclass, HalfspaceClass):
            xs = hclass.sample_instances(self._rng, self._h, n)
            self._block = xs  # type: ignore[assignment]  # rows of a 2-D array
            self._labels = (xs @ self._h > 0).astype(int).tolist()
        else:
            assert isinstance(hclass, FiniteClass)
            ints = self._draw(hclass, n)
            h = np.array([self._h])
            self._block = ints
            self._labels = [int(hclass.evaluate(x, h)[0]) for x in ints]
        self._next = 0

    def _draw(self, hclass: FiniteClass, n: int) -> list[int]:
        """``n`` instances of a finite class: uniform over the domain."""
        return hclass.sample_instances(self._rng, n)

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


DISTRIBUTIONS = ("uniform", "bernoulli", "zipf")


@register
class IID(RandomTarget):
    """Like random-target, with instances i.i.d. from a stated distribution: ``uniform``
    over the domain, ``bernoulli`` (each boolean variable on with probability ``q``;
    boolean classes) or ``zipf`` (P(x = i) proportional to (i + 1)^-s over 0..N-1;
    integer domains). Oblivious and committed to its target, as random-target.

    >>> from littlestone.games.classes import make_class
    >>> adversary = IID(dist="bernoulli", q=0.0)
    >>> adversary.start(GameSpec("mistake-bound", 3, make_class("monotone-disjunctions:n=5")), 0)
    >>> [adversary.instance() for _ in range(3)]
    [0, 0, 0]
    """

    id = "iid"

    def __init__(self, target: int | None = None, dist: str = "uniform", q: float = 0.5,
                 s: float = 1.5) -> None:
        super().__init__(target)
        if dist not in DISTRIBUTIONS:
            raise ValueError(f"dist={dist!r} must be one of {', '.join(DISTRIBUTIONS)}")
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"q={q} must be in [0, 1]")
        if not s > 0:
            raise ValueError(f"s={s} must be > 0")
        self.dist, self.q, self.s = dist, q, s

    def unsupported(self, game: GameSpec) -> str | None:
        if self.dist != "uniform" and not isinstance(game.hclass, FiniteClass):
            return f"dist={self.dist} needs a finite class"
        if self.dist == "bernoulli" and not hasattr(game.hclass, "bits"):
            return "dist=bernoulli needs a class over boolean variables"
        return super().unsupported(game)

    def _draw(self, hclass: FiniteClass, n: int) -> list[int]:
        if self.dist == "bernoulli":
            bits = self._rng.random((n, hclass.n_features)) < self.q
            packed = np.packbits(bits, axis=1, bitorder="little")
            return [int.from_bytes(row.tobytes(), "little") for row in packed]
        if self.dist == "zipf":
            weights = (np.arange(hclass.domain_size) + 1.0) ** -self.s
            draws = self._rng.choice(hclass.domain_size, size=n, p=weights / weights.sum())
            return [int(x) for x in draws]
        return super()._draw(hclass, n)


@register
class Noisy(RandomTarget):
    """The experts game over a class's hypotheses with noisy labels: a target h* and
    uniform instances as random-target, each label flipped with probability ``rate``, so
    that no expert is perfect (realizability no longer holds; best_expert_loss is about
    rate x T). Oblivious: the flips are drawn from its seed, and it commits to its whole
    sequence of instances and labels before round 1 (games.commitment.SequenceHash).

    >>> from littlestone.games.classes import make_class
    >>> adversary = Noisy(rate=1.0)
    >>> adversary.start(GameSpec("experts", 2, make_class("thresholds:n=4")), seed=0)
    >>> x = adversary.instance(); adversary.label(x, 0.5) != int(x < adversary.hypothesis)
    True
    """

    id = "noisy"
    games = frozenset({EXPERTS})

    def __init__(self, target: int | None = None, rate: float = 0.1) -> None:
        super().__init__(target)
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate={rate} must be in [0, 1]")
        self.rate = rate
        self._sequence_digest = b""

    def unsupported(self, game: GameSpec) -> str | None:
        if not isinstance(game.hclass, FiniteClass):
            return "it plays the experts game over a finite class (--class)"
        return super().unsupported(game)

    def _refill(self) -> None:
        super()._refill()
        flips = self._rng.random(len(self._labels)) < self.rate
        self._labels = [y ^ int(f) for y, f in zip(self._labels, flips, strict=True)]

    def reset(self, game: GameSpec, seed: int) -> None:
        super().reset(game, seed)
        assert game.hclass is not None
        # Commit to the whole sequence: play it once from a copy of the generator's state.
        state = self._rng.bit_generator.state
        sequence = commitment.SequenceHash(game.hclass.spec)
        for _ in range(game.rounds):
            x = self.instance()
            sequence.add(x)
            sequence.add(self.label(x, 0.5))
        self._sequence_digest = sequence.digest(self._salt)
        self._rng.bit_generator.state = state
        self._block, self._labels, self._next, self._drawn = [], [], 0, 0

    def commitment(self) -> bytes:
        """To the whole sequence (flipped labels contradict any target)."""
        return self._sequence_digest

    def reveal(self) -> tuple[Any, bytes]:
        return None, self._salt

