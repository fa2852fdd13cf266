"""A target drawn from a prior over H: the entropy form of weighted Halving, played."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.adversaries.base import Adversary, register
from littlestone.games import commitment
from littlestone.games.classes import FiniteClass
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.priors import PRIORS, entropy_bits, prior

__all__ = ["PriorTarget"]

INSTANCES = ("balanced", "uniform")
#: Most cells of the truth table it keeps (|H| x |X| booleans, 4 MiB).
TABLE_LIMIT = 1 << 22
#: V's prior mass on each instance is kept by subtracting what leaves V; it is summed
#: afresh over V once V's mass falls below this fraction of its mass when last summed
#: (subtracting more would leave rounding errors large beside what is left).
RESUM = 2.0**-20


@register
class PriorTarget(Adversary):
    """Draws h* from a prior p over H (``target`` fixes it) and labels by it; each instance
    is the one that splits the prior mass of the version space most evenly.

    A balanced split is the costliest round for a learner that votes with p: the
    learner's expected cost per round is about half the information it gains (h2(q)/2
    against min(q, 1 - q) or 2q(1 - q)), so over a game it spends most of H(p)/2.
    ``instances=uniform`` plays uniform instances instead. The instances depend on the
    labels so far only, which h* fixes: the whole sequence is a function of h*, so it
    is oblivious and commits to h*. Once no instance splits V, it plays uniform
    instances. ``entropy`` is H(p) in bits.

    >>> from littlestone.games.classes import make_class
    >>> adversary = PriorTarget(prior="uniform", target=2)
    >>> adversary.start(GameSpec("mistake-bound", 2, make_class("thresholds:n=3")), seed=0)
    >>> x = adversary.instance(); x, adversary.label(x, 0.0)  # [x < 2] on the middle point
    (1, 1)
    """

    id = "prior-target"
    games = frozenset({MISTAKE_BOUND})
    oblivious = True

    def __init__(self, prior: str = "zipf", s: float = 1.0, target: int | None = None,
                 instances: str = "balanced") -> None:
        if prior not in PRIORS:
            raise ValueError(f"prior={prior!r} must be one of {', '.join(PRIORS)}")
        if not s > 0:
            raise ValueError(f"s={s} must be > 0")
        if instances not in INSTANCES:
            raise ValueError(f"instances={instances!r} must be one of {', '.join(INSTANCES)}")
        self.prior, self.s, self.target, self.instances = prior, s, target, instances
        self.entropy = 0.0
        self._table: NDArray[np.bool_] = np.zeros((0, 0), dtype=np.bool_)
        self._p: NDArray[np.float64] = np.zeros(0)
        self._alive: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self._voting: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._ones: NDArray[np.float64] = np.zeros(0)
        self._size, self._mass, self._summed = 0, 0.0, 0.0
        self._h = 0
        self._rng = np.random.default_rng(0)
        self._salt = b""
        self._hclass: FiniteClass | None = None

    def unsupported(self, game: GameSpec) -> str | None:
        hclass = game.hclass
        if not isinstance(hclass, FiniteClass):
            return "it needs a finite class to put a prior on"
        if self.target is not None and not 0 <= self.target < hclass.size:
            return f"target={self.target} is not a hypothesis index in 0..{hclass.size - 1}"
        if hclass.size * hclass.domain_size > TABLE_LIMIT:
            return (f"the truth table of {hclass.spec} has {hclass.size * hclass.domain_size} "
                    f"cells, over its limit of {TABLE_LIMIT}")
        try:
            prior(hclass.size, self.prior, self.s)
        except SpecError as exc:
            return str(exc)
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._hclass = game.hclass
        self._table = game.hclass.matrix()
        self._p = prior(game.hclass.size, self.prior, self.s)
        self.entropy = entropy_bits(self._p)
        self._rng = np.random.default_rng(seed)
        self._salt = self._rng.bytes(commitment.MIN_SALT_BYTES)
        self._h = (self.target if self.target is not None
                   else int(self._rng.choice(game.hclass.size, p=self._p)))
        self._alive = np.ones(game.hclass.size, dtype=np.bool_)
        # V's vote on every instance, kept as hypotheses leave V: a round costs the rows
        # that leave, not the whole table (each round's |H| x |X| product, 10 ms on 4 Mi
        # cells, made a million-round game hours of a server's CPU, on its event loop)
        self._voting = self._table.sum(axis=0, dtype=np.int64)  # hypotheses of V voting 1
        self._size = game.hclass.size
        self._ones = self._p @ self._table  # the prior mass of V voting 1
        self._mass = self._summed = float(self._p.sum())

    @property
    def hypothesis(self) -> int:
        """The target h*."""
        return self._h

    def commitment(self) -> bytes:
        assert self._hclass is not None, "start() first"
        return commitment.digest(self._hclass, self._h, self._salt)

    def reveal(self) -> tuple[Any, bytes]:
        return self._h, self._salt

    def instance(self) -> int:
        assert self._hclass is not None, "start() first"
        splits = (self._voting > 0) & (self._voting < self._size)  # (exact: counted)
        if self.instances == "uniform" or not splits.any():
            return int(self._rng.integers(self._hclass.domain_size))
        gap = np.where(splits, np.abs(self._ones / self._mass - 0.5), np.inf)
        return int(np.argmin(gap))

    def label(self, x: Any, p: float) -> int:
        column = self._table[:, x]
        y = bool(column[self._h])
        leaving = np.flatnonzero(self._alive & (column != y))
        if len(leaving):
            self._alive[leaving] = False
            self._size -= len(leaving)
            rows = self._table[leaving]
            self._voting -= rows.sum(axis=0, dtype=np.int64)
            self._mass = float(self._p[self._alive].sum())
            if self._mass < RESUM * self._summed:  # (what is left is small beside what
                staying = np.flatnonzero(self._alive)  # left: summed afresh, not
                self._ones = self._p[staying] @ self._table[staying]  # cancelled)
                self._summed = self._mass
            else:
                self._ones = self._ones - self._p[leaving] @ rows
        return int(y)
