"""Lower-bound constructions on specific classes: the Perceptron margin adversary and the
Winnow (k-literal disjunctions) adversary."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.adversaries.base import Adversary, register
from littlestone.games.classes import Disjunctions, HalfspaceClass, SparseDisjunctions
from littlestone.games.game import MISTAKE_BOUND, GameSpec


@register
class PerceptronMargin(Adversary):
    """Plays the basis vectors e_1, ..., e_m, m = floor(1/gamma^2), each labelled against
    the learner's prediction (UML Ex. 9.3): every deterministic learner errs m times.

    The data stay separable with margin gamma: after the last round it reveals the witness
    w* = (s_1 e_1 + ... + s_m e_m) / sqrt(m), s_i = +1 for label 1 and -1 for 0, and the
    referee checks every label and |<w*, e_i>| = 1/sqrt(m) >= gamma. Being adaptive it
    commits to nothing. ``gamma`` defaults to the class's margin, may not be below it, and
    needs m <= d. After round m it plays e_1, e_2, ... again, labelled as before.

    >>> from littlestone.games.classes import make_class
    >>> adversary = PerceptronMargin()
    >>> adversary.start(GameSpec("mistake-bound", 4, make_class("halfspaces:d=8,margin=0.5")), 0)
    >>> adversary.forcing
    4
    >>> x = adversary.instance(); x.tolist()[:3], adversary.label(x, 0.0)
    ([1.0, 0.0, 0.0], 1)
    """

    id = "perceptron-margin"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, gamma: float | None = None) -> None:
        if gamma is not None and not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma={gamma} must be in (0, 1]")
        self.gamma = gamma
        self.forcing = 0
        self._signs: list[float] = []
        self._d = 0
        self._t = 0

    def unsupported(self, game: GameSpec) -> str | None:
        hclass = game.hclass
        if not isinstance(hclass, HalfspaceClass):
            return "it plays the basis vectors of halfspaces:d=D,margin=G"
        gamma = self.gamma if self.gamma is not None else hclass.margin
        if gamma <= 0:
            return "it needs a margin gamma > 0"
        if gamma < hclass.margin:
            return f"gamma={gamma} is below the class's margin {hclass.margin}"
        if math.floor(1 / gamma**2 + 1e-9) > hclass.d:
            return f"floor(1/gamma^2) = {math.floor(1 / gamma**2 + 1e-9)} exceeds d = {hclass.d}"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, HalfspaceClass)
        gamma = self.gamma if self.gamma is not None else game.hclass.margin
        self.forcing = math.floor(1 / gamma**2 + 1e-9)
        self._d = game.hclass.d
        self._signs = []
        self._t = 0

    def instance(self) -> NDArray[np.float64]:
        x = np.zeros(self._d)
        x[self._t % self.forcing] = 1.0
        self._t += 1
        return x

    def label(self, x: Any, p: float) -> int:
        i = (self._t - 1) % self.forcing
        if i == len(self._signs):
            self._signs.append(1.0 if p < 0.5 else -1.0)
        return 1 if self._signs[i] > 0 else 0

    def reveal(self) -> tuple[Any, bytes]:
        w = np.zeros(self._d)
        w[: self.forcing] = 1.0  # coordinates never played: any sign will do
        w[: len(self._signs)] = self._signs
        return w / math.sqrt(self.forcing), b""


@register
class WinnowLowerBound(Adversary):
    """Forces at least (k/8)(1 + log2(n/k)) mistakes on every deterministic learner of
    k-literal monotone disjunctions (Littlestone 1988): k groups of n/k variables (groups of 2
    when n < 2k), one target variable per group found by binary search. Each round shows
    half of a group's remaining candidates (all other variables 0) and labels against
    the learner; every answer halves the candidates, so a deterministic learner errs
    floor(log2(n/k)) times per group. Then the target (one variable per group, a k-literal
    disjunction of the class) labels random instances.

    >>> from littlestone.games.classes import make_class
    >>> adversary = WinnowLowerBound()
    >>> adversary.start(GameSpec("mistake-bound", 9, make_class("k-disjunctions:n=16,k=2")), 0)
    >>> adversary.forcing, adversary.theory_bound
    (6, 1.0)
    """

    id = "winnow-lower-bound"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self.forcing = 0
        self.theory_bound = 0.0
        self._groups: list[list[int]] = []
        self._shown: list[int] = []
        self._rng = np.random.default_rng(0)
        self._n = 0

    def unsupported(self, game: GameSpec) -> str | None:
        if not isinstance(game.hclass, Disjunctions | SparseDisjunctions):
            return "it plays k-disjunctions:n=N,k=K or monotone-disjunctions:n=N"
        if game.hclass.k < 1 or game.hclass.n < 2:
            return "it needs k >= 1 and n >= 2"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        hclass = game.hclass
        assert isinstance(hclass, Disjunctions | SparseDisjunctions)
        n, k = hclass.n, hclass.k
        groups = min(k, n // 2)
        size = n // groups
        self._groups = [list(range(g * size, (g + 1) * size)) for g in range(groups)]
        self.forcing = groups * math.floor(math.log2(size))
        self.theory_bound = (k / 8) * (1 + math.log2(n / k))
        self._n = n
        self._rng = np.random.default_rng(seed)
        self._shown = []

    def _target(self) -> int:
        return sum(1 << group[0] for group in self._groups)

    def instance(self) -> int:
        for group in self._groups:
            if len(group) > 1:
                self._shown = group[: len(group) // 2]
                return sum(1 << i for i in self._shown)
        self._shown = []
        bits = self._rng.integers(0, 2, self._n)
        return sum(1 << int(i) for i in np.flatnonzero(bits))

    def label(self, x: Any, p: float) -> int:
        if not self._shown:  # the search is over: the target labels
            return int(x & self._target() != 0)
        group = next(g for g in self._groups if len(g) > 1)
        y = 0 if p >= 0.5 else 1
        shown = set(self._shown)
        group[:] = [i for i in group if (i in shown) == bool(y)]
        return y
