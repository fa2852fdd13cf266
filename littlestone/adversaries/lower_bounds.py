"""Lower-bound constructions on specific classes: the Perceptron margin adversary and the
Winnow (k-literal disjunctions) adversary."""

from __future__ import annotations

import itertools
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
    """Forces sum_g floor(log2(s_g + 1)) >= k floor(log2(floor(n/k) + 1)) >=
    (k/8)(1 + log2(n/k)) mistakes on every deterministic learner of k-literal monotone
    disjunctions, n on ``monotone-disjunctions:n=N`` (Littlestone 1988).

    The variables are cut into min(k, n) groups of sizes s_g; the target has at most one
    variable in each group, or none. Each group is a binary search over its s_g + 1
    candidates (a variable, or "none"): a round shows half of the candidate variables
    (all other variables 0) and labels against the learner, 1 keeping the shown
    variables and 0 the others and "none", so a deterministic learner errs
    floor(log2(s_g + 1)) times per group. Sizes are 2^j - 1 (a group of one variable
    forces 1, of three 2, of seven 3 ...), grown greedily from the cheapest, which
    maximises the sum; the variables left over stay 0. Then the target (the candidate
    left in each group) labels random instances.

    >>> from littlestone.games.classes import make_class
    >>> adversary = WinnowLowerBound()
    >>> adversary.start(GameSpec("mistake-bound", 9, make_class("k-disjunctions:n=16,k=2")), 0)
    >>> adversary.forcing, adversary.theory_bound
    (6, 1.0)
    >>> adversary.start(GameSpec("mistake-bound", 9, make_class("monotone-disjunctions:n=5")), 0)
    >>> adversary.forcing
    5
    """

    id = "winnow-lower-bound"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self.forcing = 0
        self.theory_bound = 0.0
        #: Per group: its candidate variables, and whether "none" is still a candidate.
        self._groups: list[list[int]] = []
        self._none: list[bool] = []
        self._shown: list[int] = []
        self._group = -1
        self._rng = np.random.default_rng(0)
        self._n = 0

    def unsupported(self, game: GameSpec) -> str | None:
        if not isinstance(game.hclass, Disjunctions | SparseDisjunctions):
            return "it plays k-disjunctions:n=N,k=K or monotone-disjunctions:n=N"
        if game.hclass.k < 1:
            return "it needs k >= 1"
        return super().unsupported(game)

    @staticmethod
    def group_sizes(n: int, k: int) -> list[int]:
        """Sizes 2^j - 1 of min(k, n) groups within n variables, maximising
        sum floor(log2(size + 1)): one variable each, then the cheapest doubling first.

        >>> WinnowLowerBound.group_sizes(16, 2), WinnowLowerBound.group_sizes(4, 4)
        ([7, 7], [1, 1, 1, 1])
        """
        groups = min(k, n)
        sizes = [1] * groups
        left = n - groups
        while True:  # every group at 2^j - 1; growing one to 2^(j+1) - 1 costs 2^j
            g = min(range(groups), key=lambda i: sizes[i])
            cost = sizes[g] + 1
            if cost > left:
                return sizes
            sizes[g] += cost
            left -= cost

    def reset(self, game: GameSpec, seed: int) -> None:
        hclass = game.hclass
        assert isinstance(hclass, Disjunctions | SparseDisjunctions)
        n, k = hclass.n, hclass.k
        sizes = self.group_sizes(n, k)
        starts = np.cumsum([0, *sizes])
        self._groups = [list(range(int(a), int(b))) for a, b in itertools.pairwise(starts)]
        self._none = [True] * len(sizes)
        self.forcing = sum(math.floor(math.log2(s + 1)) for s in sizes)
        self.theory_bound = (k / 8) * (1 + math.log2(n / k))
        self._n = n
        self._rng = np.random.default_rng(seed)
        self._shown = []
        self._group = -1

    def _target(self) -> int:
        return sum(1 << group[0] for group, none in zip(self._groups, self._none, strict=True)
                   if group and not none)

    def instance(self) -> int:
        for g, group in enumerate(self._groups):
            candidates = len(group) + self._none[g]
            if candidates > 1:
                self._group = g
                self._shown = group[: candidates // 2]
                return sum(1 << i for i in self._shown)
        self._shown, self._group = [], -1
        bits = self._rng.integers(0, 2, self._n)
        return sum(1 << int(i) for i in np.flatnonzero(bits))

    def label(self, x: Any, p: float) -> int:
        if self._group < 0:  # the search is over: the target labels
            return int(x & self._target() != 0)
        y = 0 if p >= 0.5 else 1
        group = self._groups[self._group]
        shown = set(self._shown)
        group[:] = [i for i in group if (i in shown) == bool(y)]
        if y:
            self._none[self._group] = False
        return y
