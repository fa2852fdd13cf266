"""docs/theory.md's randomised Littlestone value rows: the value exactly, the learner that
achieves it and the adversary that forces it, meeting exactly in expectation."""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import FiniteClass, MatrixClass, make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import class_ldim
from littlestone.games.randomized import class_randomized_value
from littlestone.learners import LEARNERS
from littlestone.local import play
from tests.adversaries.test_adversaries import learners_for
from tests.support.agents_for_tests import Spoiler


def random_matrix(seed: int, rows: int = 7, cols: int = 6) -> MatrixClass:
    rng = np.random.default_rng(seed)
    return MatrixClass(rng.integers(0, 2, size=(rows, cols)), spec=f"matrix:seed={seed}")


def brute_force(hclass: FiniteClass, horizon: int) -> Fraction:
    """min_p max_y (|p - y| + value of the rest), p searched over the grid of 2^-|H| (the
    optimum (1 + b - a)/2 is dyadic of denominator <= 2^|H|), no pruning, every instance."""
    m = hclass.matrix()
    steps = 2**hclass.size
    grid = [Fraction(i, steps) for i in range(steps + 1)]

    @functools.cache
    def value(alive: frozenset[int], t: int) -> Fraction:
        if t == 0:
            return Fraction(0)
        best = Fraction(0)
        for x in range(m.shape[1]):
            sides = [frozenset(h for h in alive if m[h, x] == y) for y in (0, 1)]
            if not sides[0] or not sides[1]:
                continue
            later = [value(side, t - 1) for side in sides]
            best = max(best, min(max(p + later[0], 1 - p + later[1]) for p in grid))
        return best

    return value(frozenset(range(hclass.size)), horizon)


@pytest.mark.parametrize("n", [1, 2, 3, 6, 9])
def test_singletons_value_is_one_minus_a_power_of_two(n):
    assert class_randomized_value(make_class(f"singletons:n={n}")) == 1 - Fraction(1, 2 ** (n - 1))


@pytest.mark.parametrize("levels", [1, 2, 3, 4])
def test_thresholds_on_2_to_the_l_minus_one_points_have_value_half_ldim(levels):
    hclass = make_class(f"thresholds:n={2**levels - 1}")
    half_ldim = Fraction(class_ldim(hclass)[0], 2)
    assert class_randomized_value(hclass) == Fraction(levels, 2) == half_ldim


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_monotone_disjunctions_value_is_half_n(n):
    assert class_randomized_value(make_class(f"monotone-disjunctions:n={n}")) == Fraction(n, 2)


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_a_brute_force_minimax(seed):
    hclass = random_matrix(seed, rows=6, cols=5)
    for horizon in (1, 2, 3, 6):
        assert class_randomized_value(hclass, horizon) == brute_force(hclass, horizon), horizon


@pytest.mark.parametrize("seed", range(20))
def test_between_half_ldim_and_the_smaller_of_ldim_and_ln_size(seed):
    hclass = random_matrix(100 + seed, rows=4 + seed % 9, cols=3 + seed % 7)
    value, ldim = class_randomized_value(hclass), class_ldim(hclass)[0]
    assert Fraction(ldim, 2) <= value <= ldim
    assert float(value) <= math.log(hclass.size) + 1e-12


GAMES = ["thresholds:n=7", "singletons:n=5", "intervals:n=5", "monotone-disjunctions:n=3",
         "conjunctions:n=2", "thresholds:n=12"]


def games_to_play():
    for spec, horizon in itertools.product(GAMES, (1, 3, 40)):
        yield make_class(spec), horizon
    for seed in range(3):
        yield random_matrix(200 + seed, rows=9, cols=7), 40


@pytest.mark.slow
@pytest.mark.parametrize(("hclass", "horizon"), list(games_to_play()),
                         ids=lambda v: getattr(v, "spec", str(v)))
def test_learner_and_adversary_meet_at_the_value_exactly(hclass, horizon):
    """randomized-soa keeps sum_t |p_t - y_t| <= v_T(H) against every adversary,
    randomized-value forces >= v_T(H) on every learner, and between them it is exactly
    v_T(H), on every seed."""
    game = GameSpec(MISTAKE_BOUND, horizon, hclass)
    value = float(class_randomized_value(hclass, horizon))
    for seed in (0, 1):
        result = play(game, LEARNERS.make("randomized-soa"), ADVERSARIES.make("randomized-value"),
                      seed)
        assert result.complete and result.bound is not None
        assert result.bound.value == value
        assert result.expected_mistakes == pytest.approx(value, abs=1e-9)
    for name in learners_for(game):
        adversary = ADVERSARIES.make("randomized-value")
        result = play(game, LEARNERS.make(name), adversary, 3)
        assert result.complete, (name, result.status)
        assert adversary.forcing == value
        assert result.expected_mistakes >= value - 1e-9, name
    opponents = [Spoiler(), ADVERSARIES.make("shattered-tree"), ADVERSARIES.make("random-target")]
    for adversary in opponents:
        for seed in (0, 1, 2):
            result = play(game, LEARNERS.make("randomized-soa"), adversary.clone(), seed)
            assert result.complete
            assert result.expected_mistakes <= value + 1e-9


def test_randomisation_pays_and_deterministic_learners_pay_ldim():
    """thresholds on 15 points: v = 2 against Ldim = 4, which the adversary forces on SOA
    in realised (and expected) mistakes."""
    hclass = make_class("thresholds:n=15")
    game = GameSpec(MISTAKE_BOUND, 30, hclass)
    soa = play(game, LEARNERS.make("soa"), ADVERSARIES.make("randomized-value"), 0)
    optimal = play(game, LEARNERS.make("randomized-soa"), ADVERSARIES.make("shattered-tree"), 0)
    assert soa.expected_mistakes >= 2 and optimal.expected_mistakes <= 2
    tree = play(game, LEARNERS.make("soa"), ADVERSARIES.make("shattered-tree"), 0)
    assert tree.mistakes == 4


def test_refuses_beyond_its_budget_before_round_one():
    game = GameSpec(MISTAKE_BOUND, 10, make_class("thresholds:n=40"))
    learner = LEARNERS.make("randomized-soa:budget=50")
    assert "budget" in (learner.unsupported(game) or "")
    assert "budget" in (ADVERSARIES.make("randomized-value:budget=50").unsupported(game) or "")


def test_a_class_made_again_shares_its_solver_and_its_values():
    """Every game of a tournament's worker makes its class again from its spec: the value
    solved for the first game is the second's (it was solved again for each game, before:
    0.45 s a game on k-disjunctions:n=10,k=2)."""
    from littlestone.games.randomized import randomized_solver_for

    first, again = make_class("intervals:n=6"), make_class("intervals:n=6")
    assert first is not again
    solver = randomized_solver_for(first)
    value = solver.scaled(horizon=5)
    assert randomized_solver_for(again) is solver
    with pytest.MonkeyPatch.context() as patch:  # a solve now would fail: none is needed
        patch.setattr(solver, "_solve", lambda *args: pytest.fail("solved again"))
        assert randomized_solver_for(again).scaled(horizon=5) == value


def test_the_shared_solvers_are_held_to_their_bytes(monkeypatch):
    """The process keeps its solvers' caches within SOLVER_CACHE_BYTES, as exact Ldim's:
    past it the least recently used solver is no longer shared (a game that holds it
    keeps it); one that alone is past it is dropped, and made again when next asked."""
    from littlestone.games import randomized

    monkeypatch.setattr(randomized, "_SHARED", randomized.OrderedDict())
    older = randomized.randomized_solver_for(make_class("intervals:n=6"))
    older.scaled(horizon=6)
    newer = randomized.randomized_solver_for(make_class("thresholds:n=9"))
    newer.scaled(horizon=6)
    assert older.nbytes > 0 and set(randomized._SHARED.values()) == {older, newer}
    monkeypatch.setattr(randomized, "SOLVER_CACHE_BYTES", newer.nbytes + older.nbytes - 1)
    assert randomized.randomized_solver_for(make_class("thresholds:n=9")) is newer
    assert list(randomized._SHARED.values()) == [newer]  # the least recently used went
    monkeypatch.setattr(randomized, "SOLVER_CACHE_BYTES", newer.nbytes - 1)
    assert randomized.randomized_solver_for(make_class("thresholds:n=9")) is newer
    assert not randomized._SHARED  # alone past the bytes: dropped after this call
    again = randomized.randomized_solver_for(make_class("thresholds:n=9"))
    assert again is not newer and again.scaled(horizon=6) == newer.scaled(horizon=6)
