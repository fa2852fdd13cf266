"""docs/theory.md rows this foundation touches, each played as a game and compared with the bound.

- Halving: mistakes <= log2 |H| (UML Thm 21.3), oblivious and adaptive adversaries.
- Perceptron: mistakes <= (R/gamma)^2 on separable data with margin gamma (R = 1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import MatrixClass, make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.local import play
from tests.support.agents_for_tests import PerceptronSpoiler, Spoiler

HALVING_CLASSES = [
    "thresholds:n=1023",
    "singletons:n=50",
    "intervals:n=40",
    "monotone-disjunctions:n=12",
    "k-disjunctions:n=16,k=2",
    "conjunctions:n=6",
]


@pytest.mark.slow
@pytest.mark.parametrize("spec", HALVING_CLASSES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_halving_within_log2_size_against_the_spoiler(spec, seed):
    hclass = make_class(spec)
    game = GameSpec(MISTAKE_BOUND, 300, hclass)
    result = play(game, LEARNERS.make("halving"), Spoiler(), seed=seed)
    assert result.complete, result.message
    assert result.bound is not None
    assert result.bound.value == pytest.approx(math.log2(hclass.size))
    assert 1 <= result.mistakes <= result.bound.value


@pytest.mark.slow
@pytest.mark.parametrize("spec", [*HALVING_CLASSES, "monotone-disjunctions:n=20"])
@pytest.mark.parametrize("seed", [0, 3])
def test_halving_within_log2_size_against_a_random_target(spec, seed):
    hclass = make_class(spec)
    result = play(GameSpec(MISTAKE_BOUND, 500, hclass), LEARNERS.make("halving"),
                  ADVERSARIES.make("random-target"), seed=seed)
    assert result.complete, result.message
    assert result.mistakes <= math.log2(hclass.size)


@pytest.mark.parametrize("seed", range(4))
def test_halving_on_random_matrices(seed):
    rng = np.random.default_rng(seed)
    hclass = MatrixClass(rng.integers(0, 2, size=(int(rng.integers(50, 400)), 30)))
    result = play(GameSpec(MISTAKE_BOUND, 200, hclass), LEARNERS.make("halving"), Spoiler(),
                  seed=seed)
    assert result.complete
    assert result.mistakes <= math.log2(hclass.size)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("d", "margin"), [(2, 0.3), (10, 0.1), (50, 0.1), (100, 0.05), (100, 0.2)]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_perceptron_within_radius_over_margin_squared(d, margin, seed):
    hclass = make_class(f"halfspaces:d={d},margin={margin}")
    game = GameSpec(MISTAKE_BOUND, 3000, hclass)
    bound = math.floor(1 / margin**2 + 1e-9)
    for adversary in (ADVERSARIES.make("random-target"), PerceptronSpoiler()):
        result = play(game, LEARNERS.make("perceptron"), adversary, seed=seed)
        assert result.complete, result.message  # the reveal passed: separable with margin
        assert result.bound is not None and result.bound.value == bound
        assert 1 <= result.mistakes <= bound


def test_the_perceptron_spoiler_gets_close_to_the_bound():
    """The adaptive test adversary makes the bound bite: not a vacuous comparison."""
    hclass = make_class("halfspaces:d=200,margin=0.1")
    result = play(GameSpec(MISTAKE_BOUND, 2000, hclass), LEARNERS.make("perceptron"),
                  PerceptronSpoiler(), seed=0)
    assert result.complete
    assert 90 <= result.mistakes <= 100


@pytest.mark.parametrize("seed", [0, 1])
def test_halving_in_the_experts_game_over_a_class(seed):
    hclass = make_class("thresholds:n=255")
    result = play(GameSpec(EXPERTS, 400, hclass), LEARNERS.make("halving"),
                  ADVERSARIES.make("random-target"), seed=seed)
    assert result.complete
    assert result.best_expert_loss == 0  # realizable: the target is an expert
    assert result.mistakes <= math.log2(hclass.size)
    assert result.regret == result.mistakes
