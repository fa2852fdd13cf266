"""docs/theory.md's Winnow2, elimination and winnow-lower-bound rows, played.

Winnow2 (``winnow:variant=demotion``) against its bound (alpha+1) k (log_alpha theta + 1)
+ alpha n / ((alpha-1) theta), with an adversary built to break it (it simulates Winnow2
and makes it err every round while it can); the elimination learner against n; and
``winnow-lower-bound`` forcing n on ``monotone-disjunctions:n=N``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.adversaries.base import Adversary
from littlestone.adversaries.lower_bounds import WinnowLowerBound
from littlestone.games.classes import Disjunctions, SparseDisjunctions, make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.local import play
from tests.adversaries.test_adversaries import learners_for
from tests.support.agents_for_tests import Spoiler


def winnow2_bound(n: int, k: int, alpha: float, theta: float) -> float:
    return (alpha + 1) * k * (math.log(theta) / math.log(alpha) + 1) + alpha * n / (
        (alpha - 1) * theta)


class Winnow2Breaker(Adversary):
    """Simulates Winnow2 (same alpha, theta) on the target x_1 v ... v x_k and makes it err
    every round it can: a 0-labelled set of irrelevant variables whose weight just
    exceeds theta (a demotion that removes as little weight as possible), else a target
    variable still <= theta with irrelevant variables up to theta, labelled 1 (a
    promotion that adds as much weight as possible). Realizable throughout."""

    id = "winnow2-breaker"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, alpha: float = 2.0, theta: float | None = None) -> None:
        self.alpha, self.theta = alpha, theta

    def reset(self, game: GameSpec, seed: int) -> None:
        hclass = game.hclass
        assert isinstance(hclass, Disjunctions | SparseDisjunctions)
        self.n, self.k = hclass.n, hclass.k
        self._theta = float(self.n) if self.theta is None else self.theta
        self.w = np.ones(self.n)
        self._rng = np.random.default_rng(seed)
        self._x = 0

    def _mask(self, variables: Any) -> int:
        return sum(1 << int(i) for i in variables)

    def instance(self) -> int:
        irrelevant = self.k + np.argsort(self.w[self.k:], kind="stable")
        total, chosen = 0.0, []
        for i in irrelevant:  # lightest first: just over theta
            chosen.append(i)
            total += self.w[i]
            if total > self._theta:
                self._x = self._mask(chosen)
                return self._x
        open_targets = [i for i in range(self.k) if self.w[i] <= self._theta]
        if open_targets:
            r = open_targets[0]
            total, chosen = self.w[r], [r]
            for i in irrelevant[::-1]:  # heaviest first, while the sum stays <= theta
                if total + self.w[i] <= self._theta:
                    chosen.append(i)
                    total += self.w[i]
            self._x = self._mask(chosen)
            return self._x
        self._x = self._mask(np.flatnonzero(self._rng.integers(0, 2, self.n)))
        return self._x

    def label(self, x: Any, p: float) -> int:
        z = np.array([(x >> i) & 1 for i in range(self.n)], dtype=bool)
        y = int(z[: self.k].any())
        if (float(self.w[z].sum()) > self._theta) != bool(y):
            self.w[z] *= self.alpha if y else 1 / self.alpha
        return y


SIZES = [(12, 1, 2.0, 12.0), (16, 2, 2.0, 16.0), (20, 2, 3.0, 10.0), (24, 3, 2.0, 6.0),
         (30, 1, 1.5, 30.0), (10, 10, 2.0, 10.0)]


@pytest.mark.slow
@pytest.mark.parametrize(("n", "k", "alpha", "theta"), SIZES)
def test_winnow2_within_its_bound(n, k, alpha, theta):
    spec = f"monotone-disjunctions:n={n}" if k == n else f"k-disjunctions:n={n},k={k}"
    game = GameSpec(MISTAKE_BOUND, 400, make_class(spec))
    learner = f"winnow:alpha={alpha},theta={theta},variant=demotion"
    expected = winnow2_bound(n, k, alpha, theta)
    worst = 0.0
    for seed in (0, 1, 2):
        adversaries = (Winnow2Breaker(alpha, theta), Spoiler(),
                       ADVERSARIES.make("random-target"), ADVERSARIES.make("winnow-lower-bound"))
        for adversary in adversaries:
            result = play(game, LEARNERS.make(learner), adversary, seed)
            assert result.complete and result.bound is not None
            assert result.bound.value == pytest.approx(expected)
            assert result.mistakes <= expected
            worst = max(worst, result.mistakes / expected)
    # the breaker gets within a factor of the bound: the bound is not vacuous here
    assert worst >= 0.25


def test_winnow2_breaker_makes_it_err_every_round_it_plays():
    """Every move of the breaker is a mistake until it has no move left."""
    game = GameSpec(MISTAKE_BOUND, 60, make_class("k-disjunctions:n=16,k=2"))
    rows: list[Any] = []
    result = play(game, LEARNERS.make("winnow:variant=demotion"), Winnow2Breaker(), 0,
                  on_record=rows.append)
    mistakes = [r.mistake for r in rows]
    first_miss = mistakes.index(False) if False in mistakes else len(mistakes)
    assert first_miss >= 10 and result.mistakes == first_miss


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["monotone-disjunctions:n=6", "monotone-disjunctions:n=11",
                                  "k-disjunctions:n=20,k=3", "k-disjunctions:n=80,k=2"])
@pytest.mark.parametrize("seed", [0, 1])
def test_elimination_within_n(spec, seed):
    hclass = make_class(spec)
    game = GameSpec(MISTAKE_BOUND, 300, hclass)
    adversaries = [ADVERSARIES.make("random-target"), ADVERSARIES.make("winnow-lower-bound"),
                   Winnow2Breaker()]
    if hclass.n <= 62:  # the spoiler draws instances as int64
        adversaries.append(Spoiler())
    for adversary in adversaries:
        result = play(game, LEARNERS.make("elimination"), adversary, seed)
        assert result.complete and result.bound is not None
        assert result.bound.value == hclass.n
        assert result.mistakes <= hclass.n


@pytest.mark.parametrize("n", [1, 4, 7, 12])
def test_winnow_lower_bound_forces_n_on_monotone_disjunctions(n):
    """Ldim(monotone-disjunctions:n=N) = N, forced on every deterministic learner; the
    elimination learner's bound n is met exactly."""
    game = GameSpec(MISTAKE_BOUND, n + 30, make_class(f"monotone-disjunctions:n={n}"))
    names = learners_for(game, deterministic=True)
    assert {"elimination", "winnow", "halving", "soa"} <= set(names)
    for name in names:
        adversary = ADVERSARIES.make("winnow-lower-bound")
        result = play(game, LEARNERS.make(name), adversary, n)
        assert result.complete, (name, result.status)
        assert adversary.forcing == n
        assert result.mistakes >= n
        if name in ("elimination", "soa"):
            assert result.mistakes == n


def best_groups(n: int, k: int) -> int:
    """max sum_g floor(log2(s_g + 1)) over at most k groups of total size <= n, by brute force."""
    best = 0
    for g in range(1, min(k, n) + 1):
        for sizes in itertools.product(range(1, n + 1), repeat=g):
            if sum(sizes) <= n:
                best = max(best, sum(math.floor(math.log2(s + 1)) for s in sizes))
    return best


@pytest.mark.parametrize(("n", "k"), [(1, 1), (5, 2), (9, 2), (10, 3), (12, 4), (15, 1), (6, 6)])
def test_winnow_lower_bound_groups_are_the_best_groups(n, k):
    sizes = WinnowLowerBound.group_sizes(n, k)
    assert sum(sizes) <= n and len(sizes) <= k
    assert sum(math.floor(math.log2(s + 1)) for s in sizes) == best_groups(n, k)
