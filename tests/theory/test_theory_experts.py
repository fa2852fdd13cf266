"""docs/theory.md's experts rows added by issue 17: the random-costs lower bound with its
constant measured, Hedge's tight tuning sqrt(T ln d / 2), online gradient descent."""

from __future__ import annotations

import math

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.adversaries.agnostic import expected_min_binomial, random_costs_regret
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.learners.experts import project_to_simplex
from littlestone.local import play
from tests.support.agents_for_tests import ChargeTheLeader, RandomCosts, Spoiler

SEEDS = 20


def regrets(learner: str, d: int, rounds: int) -> list[float]:
    game = GameSpec(EXPERTS, rounds, experts=d)
    out = []
    for seed in range(SEEDS):
        result = play(game, LEARNERS.make(learner), ADVERSARIES.make("random-costs"), seed)
        assert result.complete, result.status  # its committed sequence checked at the end
        out.append(result.expected_regret)
    return out


def test_expected_min_binomial_by_enumeration():
    """E[min of d Bin(n, 1/2)] against all 2^(n d) outcomes."""
    for n, d in ((3, 2), (4, 3), (2, 5)):
        counts = [bin(i).count("1") for i in range(2**n)]
        total = 0
        for outcome in np.ndindex(*([2**n] * d)):
            total += min(counts[i] for i in outcome)
        assert expected_min_binomial(n, d) == pytest.approx(total / 2 ** (n * d))


@pytest.mark.slow
@pytest.mark.parametrize(("d", "rounds"), [(2, 300), (16, 300), (64, 150)])
@pytest.mark.parametrize("learner", ["hedge", "hedge:schedule=tight", "follow-the-leader",
                                     "weighted-majority", "halving", "ogd"])
def test_random_costs_force_their_regret_on_every_learner(learner, d, rounds):
    """Cesa-Bianchi & Lugosi Thm 3.7: every learner's expected regret, averaged over the
    adversary's coins, is qT - E[min_i L_i] ~ sqrt((T/2) ln d); the mean over 20 seeds
    is within 4 standard errors of it."""
    forcing = random_costs_regret(rounds, d)
    measured = regrets(learner, d, rounds)
    mean, error = float(np.mean(measured)), float(np.std(measured, ddof=1)) / math.sqrt(SEEDS)
    assert abs(mean - forcing) <= 4 * error + 1e-9, (mean, forcing, error)
    assert forcing >= 0.33 * math.sqrt(rounds * math.log(d))  # the constant, d >= 2


def test_the_constant_grows_towards_one_over_sqrt_two():
    constants = [random_costs_regret(10_000, d) / math.sqrt(10_000 * math.log(d))
                 for d in (2, 10, 100, 1000)]
    assert constants == sorted(constants)
    assert 0.33 < constants[0] < 0.35 and 0.6 < constants[-1] < 1 / math.sqrt(2)


@pytest.mark.slow
@pytest.mark.parametrize(("d", "rounds"), [(2, 1500), (10, 1000), (100, 500)])
def test_hedge_tight_tuning_within_sqrt_t_ln_d_over_two(d, rounds):
    """eta = sqrt(8 ln d / T): expected regret <= sqrt(T ln d / 2) on every sequence; the
    random costs come within a factor ~0.8 of it (their mean is ~0.5-0.6 sqrt(T ln d))."""
    game = GameSpec(EXPERTS, rounds, experts=d)
    bound = math.sqrt(rounds * math.log(d) / 2)
    assert bound == pytest.approx(math.sqrt(2 * rounds * math.log(d)) / 2)  # half UML's
    worst = 0.0
    adversaries = [ADVERSARIES.make("random-costs"), ADVERSARIES.make("cover-flip"),
                   RandomCosts(), RandomCosts(flip=True), ChargeTheLeader()]
    for adversary in adversaries:
        for seed in range(2):
            result = play(game, LEARNERS.make("hedge:schedule=tight"), adversary.clone(), seed)
            assert result.complete and result.bound is not None
            assert result.bound.value == pytest.approx(bound)
            assert result.expected_regret <= bound
            worst = max(worst, result.expected_regret / bound)
    assert worst >= 0.5


def test_project_to_simplex_is_the_closest_distribution():
    rng = np.random.default_rng(0)
    for _ in range(50):
        y = rng.normal(size=5) * 2
        w = project_to_simplex(y)
        assert w.min() >= 0 and w.sum() == pytest.approx(1.0)
        for _ in range(20):  # no distribution is closer
            other = rng.dirichlet(np.ones(5))
            assert np.linalg.norm(y - w) <= np.linalg.norm(y - other) + 1e-12


@pytest.mark.slow
@pytest.mark.parametrize(("d", "rounds"), [(2, 1000), (8, 800), (50, 400)])
def test_ogd_within_its_bound(d, rounds):
    """Projected OGD: regret <= (1 - 1/d)/(2 eta) + (eta/2) sum ||v_t||^2 <=
    sqrt((1 - 1/d) d T), printed from the gradients it saw."""
    game = GameSpec(EXPERTS, rounds, experts=d)
    worst = 0.0
    adversaries = [ADVERSARIES.make("random-costs"), ADVERSARIES.make("cover-flip"),
                   RandomCosts(), RandomCosts(flip=True), ChargeTheLeader()]
    for adversary in adversaries:
        for seed in range(2):
            result = play(game, LEARNERS.make("ogd"), adversary.clone(), seed)
            assert result.complete and result.bound is not None
            assert result.bound.value <= math.sqrt((1 - 1 / d) * d * rounds) + 1e-9
            assert result.expected_regret <= result.bound.value
            worst = max(worst, result.expected_regret / result.bound.value)
    assert worst >= 0.15


def test_ogd_over_a_class_and_without_the_horizon():
    from littlestone.games.classes import make_class

    hclass = make_class("thresholds:n=31")
    result = play(GameSpec(MISTAKE_BOUND, 500, hclass), LEARNERS.make("ogd"), Spoiler(), 0)
    assert result.complete and result.bound is not None
    assert result.expected_mistakes <= result.bound.value
    unknown = GameSpec(EXPERTS, 10, experts=3, horizon_known=False)
    assert "horizon" in (LEARNERS.make("ogd").unsupported(unknown) or "")
    assert LEARNERS.make("ogd:eta=0.1").unsupported(unknown) is None
