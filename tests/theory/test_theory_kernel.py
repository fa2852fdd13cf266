"""docs/theory.md's kernel Perceptron and non-separable Perceptron rows: on
``quadratic:n=N`` the targets are not linearly separable in the input features (z, 1),
so the linear Perceptron errs on every cycle through the points forever, while the
degree-2 kernel Perceptron stops within (R ||v|| / gamma)^2; and the non-separable bound
R^2/gamma^2 + (2/gamma) TD_gamma(u) holds with TD measured on the played sequence."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.polynomial import QuadraticThresholds
from littlestone.learners import LEARNERS
from littlestone.learners.kernel import nonseparable_bound
from littlestone.local import play
from tests.support.agents_for_tests import FixedSequence, Spoiler


def certificate_bound(hclass: QuadraticThresholds, h: int) -> float:
    """(R ||v|| / gamma)^2 in the features (2, 2z, z^2) of K = (1 + <(z, 1), (z', 1)>)^2."""
    w, margin = hclass.certificate(h)  # over (z^2, z, 1)
    v = np.array([w[2] / 2, w[1] / 2, w[0]])
    radius = float(np.max(2 + hclass.points**2))  # ||(2, 2z, z^2)|| = 2 + z^2
    return (radius * float(np.linalg.norm(v)) / margin) ** 2


def cycling(hclass: QuadraticThresholds, h: int, cycles: int) -> FixedSequence:
    xs = list(range(hclass.domain_size)) * cycles
    labels = hclass.matrix()[h].astype(int).tolist() * cycles
    return FixedSequence(xs, labels)


@pytest.mark.slow
@pytest.mark.parametrize("n", [6, 10, 16])
def test_kernel_perceptron_within_the_target_s_bound(n):
    hclass = make_class(f"quadratic:n={n}")
    assert isinstance(hclass, QuadraticThresholds)
    game = GameSpec(MISTAKE_BOUND, 600, hclass)
    for seed in range(4):
        result = play(game, LEARNERS.make("kernel-perceptron"), ADVERSARIES.make("random-target"),
                      seed)
        assert result.complete and result.revealed is not None
        assert result.mistakes <= certificate_bound(hclass, int(result.revealed))
        if result.bound is not None:
            assert result.mistakes <= result.bound.value
        spoiled = play(game, LEARNERS.make("kernel-perceptron"), Spoiler(), seed)
        assert spoiled.bound is not None and spoiled.mistakes <= spoiled.bound.value


@pytest.mark.slow
@pytest.mark.parametrize("n", [5, 9])
def test_the_linear_perceptron_errs_every_cycle_and_the_kernel_one_stops(n):
    """An inside run away from both ends: no line through (z, 1) separates it, so every
    cycle through the points costs a linear classifier a mistake."""
    hclass = make_class(f"quadratic:n={n}")
    assert isinstance(hclass, QuadraticThresholds)
    h = next(i for i in range(hclass.size) if hclass.hypothesis(i) == f"1 <= i < {n - 1}")
    cycles = 300
    game = GameSpec(MISTAKE_BOUND, cycles * n, hclass)
    for linear in ("perceptron", "kernel-perceptron:kernel=linear"):
        result = play(game, LEARNERS.make(linear), cycling(hclass, h, cycles), 0)
        assert result.complete and result.mistakes >= cycles
    kernel = play(game, LEARNERS.make("kernel-perceptron"), cycling(hclass, h, cycles), 0)
    assert kernel.mistakes <= certificate_bound(hclass, h) < cycles


@pytest.mark.parametrize("spec", ["quadratic:n=12", "halfspaces:d=4,margin=0.3",
                                  "monotone-disjunctions:n=5"])
def test_the_dual_linear_perceptron_is_the_perceptron(spec):
    game = GameSpec(MISTAKE_BOUND, 300, make_class(spec))
    for seed in (0, 1):
        primal = play(game, LEARNERS.make("perceptron"), ADVERSARIES.make("random-target"), seed)
        dual = play(game, LEARNERS.make("kernel-perceptron:kernel=linear"),
                    ADVERSARIES.make("random-target"), seed)
        assert primal.mistakes == dual.mistakes


def test_non_separable_bound_holds_for_every_direction():
    """Freund & Schapire: for every unit u of R^2 and gamma > 0, the linear Perceptron's
    mistakes on quadratic targets are <= R^2/gamma^2 + (2/gamma) TD_gamma(u), TD over the
    whole played sequence; checked for 90 directions u, on several targets and seeds."""
    hclass = make_class("quadratic:n=14")
    game = GameSpec(MISTAKE_BOUND, 800, hclass)
    angles = np.linspace(0, 2 * math.pi, 90, endpoint=False)
    directions = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    tightest = math.inf
    for seed in range(4):
        rows: list[Any] = []
        result = play(game, LEARNERS.make("perceptron"), ADVERSARIES.make("random-target"), seed,
                      on_record=rows.append)
        features = np.array([hclass.encode(r.x) for r in rows])
        signs = np.array([2 * r.y - 1 for r in rows])
        radius = float(np.max(np.linalg.norm(features, axis=1)))
        for u in directions:
            value, _ = nonseparable_bound(signs * (features @ u), radius)
            assert result.mistakes <= value
            tightest = min(tightest, value / max(result.mistakes, 1))
    assert tightest < 20  # the best direction's bound is within a factor of the mistakes


def test_rbf_and_refusals():
    game = GameSpec(MISTAKE_BOUND, 300, make_class("quadratic:n=20"))
    result = play(game, LEARNERS.make("kernel-perceptron:kernel=rbf,scale=4"),
                  ADVERSARIES.make("random-target"), 0)
    assert result.complete and result.bound is not None and result.mistakes <= result.bound.value
    for bad in ("kernel-perceptron:kernel=cubic", "kernel-perceptron:degree=0",
                "kernel-perceptron:scale=0"):
        with pytest.raises(Exception, match="must"):
            LEARNERS.make(bad)
