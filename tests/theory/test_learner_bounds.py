"""docs/theory.md's learner rows, each played as games and compared with the bound.

Several seeds and sizes, oblivious (random-target, random costs) and adaptive
(spoilers, flips) adversaries. The bound a test compares with is the one the learner
prints (``result.bound``), and the test also recomputes it from the theorem.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES, Adversary
from littlestone.games.classes import FiniteClass, MatrixClass, make_class
from littlestone.games.errors import UnsupportedGame
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import class_ldim
from littlestone.learners import LEARNERS
from littlestone.learners.experts import Hedge
from littlestone.local import play
from tests.support.agents_for_tests import (
    ChargeTheLeader,
    FixedSequence,
    FractionalAdvice,
    NoisyAdvice,
    RandomCosts,
    Spoiler,
)

FINITE = ["thresholds:n=255", "singletons:n=30", "intervals:n=20", "monotone-disjunctions:n=8",
          "k-disjunctions:n=12,k=2", "conjunctions:n=4"]


def mistake_game(spec: str, rounds: int = 400) -> GameSpec:
    return GameSpec(MISTAKE_BOUND, rounds, make_class(spec))


@pytest.mark.slow
@pytest.mark.parametrize("spec", FINITE)
@pytest.mark.parametrize("seed", [0, 1])
def test_consistent_within_size_minus_one(spec, seed):
    game = mistake_game(spec)
    for adversary in (Spoiler(), ADVERSARIES.make("random-target")):
        result = play(game, LEARNERS.make("consistent"), adversary, seed)
        assert result.complete and result.bound is not None
        assert result.bound.value == game.hclass.size - 1
        assert result.mistakes <= result.bound.value


@pytest.mark.parametrize("n", [5, 12])
def test_consistent_bound_is_tight_on_singletons(n):
    """x = 0, 1, ..., n-2 labelled 0: Consistent tries h_0, h_1, ... and errs each time."""
    game = mistake_game(f"singletons:n={n}", n - 1)
    sequence = FixedSequence(range(n - 1), [0] * (n - 1))
    result = play(game, LEARNERS.make("consistent"), sequence, 0)
    assert result.complete and result.mistakes == n - 1
    halving = play(game, LEARNERS.make("halving"), sequence, 0)
    assert halving.mistakes <= 1  # only the final tie, |V| = 2, costs it


@pytest.mark.slow
@pytest.mark.parametrize("spec", FINITE)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_soa_within_ldim(spec, seed):
    game = mistake_game(spec)
    ldim, _ = class_ldim(game.hclass)
    for adversary in (Spoiler(), ADVERSARIES.make("random-target")):
        result = play(game, LEARNERS.make("soa"), adversary, seed)
        assert result.complete and result.bound is not None
        assert result.bound.value == ldim
        assert result.mistakes <= ldim


@pytest.mark.parametrize("seed", range(4))
def test_soa_within_ldim_on_random_matrices(seed):
    rng = np.random.default_rng(seed)
    hclass = MatrixClass(rng.integers(0, 2, size=(int(rng.integers(20, 200)), 12)))
    ldim, _ = class_ldim(hclass)
    result = play(GameSpec(MISTAKE_BOUND, 200, hclass), LEARNERS.make("soa"), Spoiler(), seed)
    assert result.complete and result.mistakes <= ldim


def test_soa_refuses_beyond_its_budget_before_round_one():
    with pytest.raises(UnsupportedGame, match="budget=1 instance checks"):
        play(mistake_game("intervals:n=30"), LEARNERS.make("soa:budget=1"),
             ADVERSARIES.make("random-target"))
    with pytest.raises(UnsupportedGame, match="budget"):
        play(mistake_game("monotone-disjunctions:n=20"), LEARNERS.make("soa"),
             ADVERSARIES.make("random-target"))


def winnow_bound(n: int, k: int, alpha: float, theta: float) -> float:
    return alpha * k * (math.log(theta) / math.log(alpha) + 1) + n / theta


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "k", "alpha", "theta"),
    [(12, 1, 2.0, 12.0), (16, 2, 2.0, 16.0), (20, 2, 3.0, 10.0), (24, 3, 2.0, 12.0),
     (30, 2, 1.5, 30.0)],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_winnow_within_its_bound(n, k, alpha, theta, seed):
    game = mistake_game(f"k-disjunctions:n={n},k={k}", 600)
    learner = f"winnow:alpha={alpha},theta={theta}"
    expected = winnow_bound(n, k, alpha, theta)
    for adversary in (Spoiler(), ADVERSARIES.make("random-target")):
        result = play(game, LEARNERS.make(learner), adversary, seed)
        assert result.complete and result.bound is not None
        assert result.bound.value == pytest.approx(expected)
        assert result.mistakes <= expected


def test_winnow_defaults_match_the_corollary():
    """theta = n, alpha = 2: 2k(log2 n + 1) + 1 (Littlestone 1988)."""
    game = mistake_game("monotone-disjunctions:n=10", 300)
    result = play(game, LEARNERS.make("winnow"), Spoiler(), 0)
    assert result.bound is not None
    assert result.bound.value == pytest.approx(2 * 10 * (math.log2(10) + 1) + 1)
    assert result.mistakes <= result.bound.value


@pytest.mark.parametrize("spec", ["conjunctions:n=5", "k-disjunctions:n=10,k=2"])
def test_winnow_variants_and_balanced_winnow_play_to_the_end(spec):
    for learner in ("winnow:variant=demotion", "balanced-winnow"):
        result = play(mistake_game(spec, 500), LEARNERS.make(learner),
                      ADVERSARIES.make("random-target"), 3)
        assert result.complete and result.rounds == 500


def test_balanced_winnow_learns_a_conjunction_with_negations():
    hclass = make_class("conjunctions:n=6")
    assert isinstance(hclass, FiniteClass)
    target = next(h for h in range(hclass.size) if hclass.hypothesis(h) == "x1 ∧ ¬x2")
    game = GameSpec(MISTAKE_BOUND, 3000, hclass)
    result = play(game, LEARNERS.make("balanced-winnow"),
                  ADVERSARIES.make(f"random-target:target={target}"), 0)
    late = []
    play(game, LEARNERS.make("balanced-winnow"), ADVERSARIES.make(f"random-target:target={target}"),
         0, on_record=lambda r: late.append(r.mistake) if r.t > 2000 else None)
    assert result.mistakes < 100 and sum(late) == 0


def wm_bound(m: float, d: int, beta: float = 0.5) -> float:
    return (m * math.log2(1 / beta) + math.log2(d)) / math.log2(2 / (1 + beta))


@pytest.mark.slow
@pytest.mark.parametrize("d", [2, 10, 100])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("adversary", ["noisy", "against"])
def test_weighted_majority_within_its_bound(d, seed, adversary):
    game = GameSpec(EXPERTS, 2000, experts=d)
    opponent = NoisyAdvice(noise=0.1) if adversary == "noisy" else NoisyAdvice(against=True)
    result = play(game, LEARNERS.make("weighted-majority"), opponent, seed)
    assert result.complete and result.bound is not None
    m = result.best_expert_loss
    assert m is not None
    assert result.bound.value == pytest.approx(wm_bound(m, d))
    assert result.mistakes <= wm_bound(m, d)  # about 2.41 (m + log2 d)


def breaker(name: str, beta: float = 0.5) -> Adversary:
    """An adversary built to break a Weighted-Majority bound (docs/theory.md)."""
    if name == "charge-the-leader":
        return ChargeTheLeader()
    if name.startswith("fractional-advice"):
        return FractionalAdvice(beta=beta, continuous=name.endswith("continuous"))
    return ADVERSARIES.make(f"{name}:beta={beta}")


BREAKERS = ["charge-the-leader", "fractional-advice", "fractional-advice-continuous", "wm-flip"]
SIZES = [(2, 2000), (10, 1000), (50, 200)]


@pytest.mark.slow
@pytest.mark.parametrize("adversary", BREAKERS)
@pytest.mark.parametrize(("d", "rounds"), SIZES)
@pytest.mark.parametrize("beta", [0.5, 0.8])
def test_weighted_majority_against_adversaries_built_to_break_its_bound(adversary, d, rounds,
                                                                        beta):
    """Each adversary makes Weighted-Majority err every round. Free experts (charged on
    the expert it follows): the best expert loses <= T/d and no bound is printed. With
    advice (fractional, or wm-flip's 0/1), the printed bound holds with m unrounded."""
    game = GameSpec(EXPERTS, rounds, experts=d)
    for seed in (0, 1):
        result = play(game, LEARNERS.make(f"weighted-majority:beta={beta}"),
                      breaker(adversary, beta), seed)
        assert result.complete and result.mistakes == rounds  # a mistake every round
        m = result.best_expert_loss
        assert m is not None
        if adversary == "charge-the-leader":
            assert m <= rounds / d
            assert result.bound is None  # no deterministic learner has one (Cover)
            continue
        assert result.bound is not None
        assert result.mistakes <= result.bound.value + 1e-9
        assert result.bound.value == pytest.approx(wm_bound(m, d, beta))


@pytest.mark.slow
@pytest.mark.parametrize("learner", ["hedge", "hedge:schedule=anytime", "hedge:eta=0.3",
                                     "randomized-weighted-majority", "follow-the-leader"])
@pytest.mark.parametrize("horizon_known", [True, False])
def test_expert_learners_print_only_bounds_that_hold(learner, horizon_known):
    """The same adversaries, and Cover's flip, against the other expert learners: Hedge's
    bounds (on expected regret, for any costs in [0, 1] chosen after seeing its weights)
    hold with T announced (tuned) or not (doubling trick, anytime); Follow-the-Leader
    prints none."""
    for adversary in [*BREAKERS, "cover-flip"]:
        for d, rounds in [(2, 1000), (10, 500), (50, 200)]:
            game = GameSpec(EXPERTS, rounds, experts=d, horizon_known=horizon_known)
            opponent = (ADVERSARIES.make(adversary) if adversary == "cover-flip"
                        else breaker(adversary))
            result = play(game, LEARNERS.make(learner), opponent, seed=d)
            assert result.complete
            if learner == "follow-the-leader":
                assert result.bound is None
                continue
            assert result.bound is not None
            if learner in ("hedge", "randomized-weighted-majority"):  # the auto schedule
                tuned = math.sqrt(2 * rounds * math.log(d))
                assert result.bound.value == pytest.approx(
                    tuned if horizon_known else tuned * math.sqrt(2) / (math.sqrt(2) - 1))
            assert result.expected_regret <= result.bound.value + 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["thresholds:n=63", "singletons:n=30", "intervals:n=12"])
@pytest.mark.parametrize("beta", [0.5, 0.8])
def test_weighted_majority_in_the_mistake_bound_game_within_m_zero(spec, beta):
    """The class's hypotheses as the experts, the target among them: m = 0, so mistakes
    <= log2 |H| / log2(2/(1+beta)) against every adversary."""
    game = mistake_game(spec, 300)
    for adversary in ("shattered-tree", "random-target", "spoiler"):
        for seed in (0, 1):
            opponent = Spoiler() if adversary == "spoiler" else ADVERSARIES.make(adversary)
            result = play(game, LEARNERS.make(f"weighted-majority:beta={beta}"), opponent, seed)
            assert result.complete and result.bound is not None
            assert result.bound.value == pytest.approx(wm_bound(0, game.hclass.size, beta))
            assert result.mistakes <= result.bound.value


def test_weighted_majority_over_a_class_with_noisy_labels():
    """Class-derived 0/1 advice, labels flipped with probability 0.2: m > 0."""
    game = GameSpec(EXPERTS, 1000, make_class("thresholds:n=63"))
    for seed in (0, 1):
        result = play(game, LEARNERS.make("weighted-majority"), ADVERSARIES.make("noisy:rate=0.2"),
                      seed)
        assert result.complete and result.bound is not None and result.best_expert_loss
        assert result.bound.value == pytest.approx(wm_bound(result.best_expert_loss, 64))
        assert result.mistakes <= result.bound.value


@pytest.mark.slow
@pytest.mark.parametrize(("d", "rounds", "flip"), [
    (2, 50_000, False), (2, 50_000, True), (10, 20_000, False), (10, 20_000, True),
    (1000, 5_000, False),
])
def test_hedge_tuned_within_sqrt_2_t_ln_d(d, rounds, flip):
    game = GameSpec(EXPERTS, rounds, experts=d)
    for learner in ("hedge", "randomized-weighted-majority"):
        result = play(game, LEARNERS.make(learner), RandomCosts(flip=flip), seed=d)
        bound = math.sqrt(2 * rounds * math.log(d))
        assert result.complete and result.bound is not None
        assert result.bound.value == pytest.approx(bound)
        assert result.expected_regret <= bound


@pytest.mark.slow
@pytest.mark.parametrize("schedule", ["doubling", "anytime"])
@pytest.mark.parametrize(("d", "rounds"), [(2, 30_000), (50, 5_000)])
def test_hedge_without_the_horizon(schedule, d, rounds):
    game = GameSpec(EXPERTS, rounds, experts=d, horizon_known=False)
    tuned = math.sqrt(2 * rounds * math.log(d))
    for flip in ([False, True] if d == 2 else [False]):
        result = play(game, LEARNERS.make(f"hedge:schedule={schedule}"), RandomCosts(flip=flip), 1)
        assert result.complete and result.bound is not None
        if schedule == "doubling":
            assert result.bound.value == pytest.approx(tuned * math.sqrt(2) / (math.sqrt(2) - 1))
        assert result.expected_regret <= result.bound.value


def test_tuned_schedule_refuses_an_unannounced_horizon_before_round_one():
    game = GameSpec(EXPERTS, 100, experts=3, horizon_known=False)
    with pytest.raises(UnsupportedGame, match="needs the horizon T announced"):
        play(game, LEARNERS.make("hedge:schedule=tuned"), RandomCosts(), 0)
    announced = play(GameSpec(EXPERTS, 100, experts=3), LEARNERS.make("hedge:schedule=tuned"),
                     RandomCosts(), 0)
    assert announced.complete and announced.bound is not None


def test_auto_schedule_needs_no_horizon():
    game = GameSpec(EXPERTS, 100, experts=3, horizon_known=False)
    result = play(game, LEARNERS.make("hedge"), RandomCosts(), 0)
    assert result.complete and result.bound is not None and "doubling" in result.bound.name


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["thresholds:n=127", "singletons:n=64"])
def test_hedge_over_a_class_in_the_mistake_bound_game(spec):
    """UML Cor. 21.12: expected regret (= expected mistakes when realizable) <=
    sqrt(2 T ln |H|)."""
    hclass = make_class(spec)
    rounds = 2000
    result = play(GameSpec(MISTAKE_BOUND, rounds, hclass), LEARNERS.make("hedge"), Spoiler(), 0)
    assert result.complete
    assert result.expected_mistakes <= math.sqrt(2 * rounds * math.log(hclass.size))


def test_hedge_weights_never_overflow_or_underflow():
    hedge = Hedge(eta=50.0)
    hedge.start(GameSpec(EXPERTS, 10**6, experts=3), seed=0)
    costs = np.array([1.0, 0.0, 1.0])
    for _ in range(20_000):  # cumulative scores down to -10^6
        w = hedge.weights(None)
        hedge.update_costs(costs, None)
    assert np.all(np.isfinite(w)) and w.sum() == pytest.approx(1.0)
    assert w[1] == pytest.approx(1.0)


def test_follow_the_leader_and_weighted_majority_are_deterministic():
    game = GameSpec(EXPERTS, 200, experts=4)
    for learner in ("follow-the-leader", "weighted-majority"):
        result = play(game, LEARNERS.make(learner), RandomCosts(), 0)
        assert result.complete
        assert result.learner_loss == pytest.approx(result.expected_learner_loss)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["river:linear_model.Perceptron",
                                  "river:linear_model.LogisticRegression",
                                  "sklearn:linear_model.SGDClassifier",
                                  "sklearn:naive_bayes.BernoulliNB"])
def test_adapters_play(spec):
    learner = LEARNERS.make(spec)
    result = play(mistake_game("monotone-disjunctions:n=6", 300), learner,
                  ADVERSARIES.make("random-target"), 0)
    assert result.complete and result.rounds == 300
    assert result.expected_mistakes < 150  # they learn something


@pytest.mark.parametrize(
    ("spec", "message"),
    [("river:nosuch.Model", "no module river.nosuch"),
     ("river:linear_model.Nope", "has no class 'Nope'"),
     ("sklearn:linear_model.LinearRegression", "no partial_fit"),
     ("river:Perceptron", "MODULE.CLASS")],
)
def test_adapter_errors(spec, message):
    from littlestone.games.errors import SpecError

    with pytest.raises(SpecError, match=message):
        LEARNERS.make(spec)
