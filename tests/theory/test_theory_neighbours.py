"""docs/theory.md's rows for UML ch. 19 (issue 45): 1-NN and k-NN, Thm 19.3, Thm 19.5 (with
Lemma 19.7 exactly) and Thm 19.4, on the grids of games.neighbours, errors exact."""

from __future__ import annotations

import math

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.neighbours import (
    grid_distribution,
    knn_bound,
    nn_bound,
    nn_experiment,
    unseen_error,
)
from littlestone.learners import LEARNERS
from littlestone.local import play

RUNS = 40


@pytest.mark.parametrize(("seed", "c", "d", "q", "m"), [
    (0, 2, 2, 0.1, 50), (1, 2, 2, 0.1, 2000), (2, 3, 3, 0.2, 500), (3, 4, 2, 0.0, 10),
    (4, 1, 6, 0.1, 200), (5, 2, 4, 0.3, 100),
])
def test_one_nn_within_thm_19_3(seed, c, d, q, m):
    """E_S[L_D(h_S)] <= 2 L_D(h*) + 4 c sqrt(d) m^(-1/(d+1)), the mean of the exact errors
    of 40 runs, with 4 standard errors of room."""
    run = nn_experiment(c, d, q, m, 1, RUNS, np.random.default_rng(seed))
    assert math.isclose(run.bayes, q)
    assert run.mean - 4 * run.standard_error <= nn_bound(run.bayes, c, d, m)
    assert run.mean >= run.bayes - 4 * run.standard_error  # nothing beats Bayes


@pytest.mark.parametrize(("seed", "q"), [(1, 0.3), (2, 0.4)])
def test_the_factor_two_is_needed(seed, q):
    """With every grid point sampled many times, 1-NN errs with probability 2 eta (1 - eta)
    (Cover & Hart's limit, Lemma 19.1's first term): measured at 2q(1 - q), above
    L_D(h*) + 4 c sqrt(d) m^(-1/(d+1)) = q + 0.028 (c = d = 1, m = 20000), so the bound with
    1 L_D(h*) in place of 2 fails, while Thm 19.3's holds."""
    c, d, m = 1, 1, 20000
    run = nn_experiment(c, d, q, m, 1, 10 * RUNS, np.random.default_rng(seed))
    assert abs(run.mean - 2 * q * (1 - q)) <= 4 * run.standard_error + 1e-9
    term = 4 * c * math.sqrt(d) * m ** (-1 / (d + 1))
    assert run.mean - 4 * run.standard_error > q + term
    assert run.mean <= nn_bound(q, c, d, m)


@pytest.mark.parametrize(("seed", "d"), [(0, 9), (1, 10), (2, 10)])
def test_the_rate_must_worsen_with_the_dimension(seed, d):
    """The curse of dimensionality: on the cube {0, 1}^d (c = 1) with random labels and
    m = 2^d / 2, 1-NN errs about (1/2)(1 - 2^-d)^m ~ 0.30 (within Thm 19.3), above a
    dimension-free rate 4 c m^(-1/2) (0.25 at d = 9, 0.18 at d = 10) that a class of finite VC
    dimension would give."""
    m = (1 << d) // 2
    run = nn_experiment(1, d, 0.0, m, 1, 8, np.random.default_rng(seed))
    assert abs(run.mean - unseen_error(1 << d, m)) <= 4 * run.standard_error + 1e-9
    assert run.mean <= nn_bound(0.0, 1, d, m)
    assert run.mean - 4 * run.standard_error > 4 * m ** -0.5


@pytest.mark.parametrize(("seed", "c", "d", "q", "m", "k"), [
    (0, 2, 3, 0.1, 3000, 11), (1, 2, 2, 0.2, 4000, 11), (2, 3, 2, 0.3, 500, 15),
    (3, 1, 4, 0.0, 40, 10),
])
def test_k_nn_within_thm_19_5(seed, c, d, q, m, k):
    """E_S[L_D(h_S)] <= (1 + sqrt(8/k)) L_D(h*) + (6 c sqrt(d) + k) m^(-1/(d+1)), k >= 10."""
    run = nn_experiment(c, d, q, m, k, RUNS, np.random.default_rng(seed))
    assert run.mean - 4 * run.standard_error <= knn_bound(run.bayes, c, d, m, k)


def majority_error(p: float, k: int) -> float:
    """E_Z P_{y~p}[y != 1[p' > 1/2]], p' the mean of k Bernoulli(p) (ties: 1, as the rule)."""
    ones = [math.comb(k, j) * p**j * (1 - p) ** (k - j) for j in range(k + 1)]
    says_one = sum(ones[j] for j in range(k + 1) if 2 * j >= k)
    return says_one * (1 - p) + (1 - says_one) * p


def test_lemma_19_7_exactly_and_a_smaller_factor_fails():
    """Lemma 19.7, the heart of Thm 19.5: a majority of k draws errs with probability at
    most (1 + sqrt(8/k)) min(p, 1 - p), for k >= 10 (exact binomial sums over a grid of p);
    the factor (1 + 1/k) fails (p = 0.3, k = 11: 0.331 against 0.327)."""
    for k in range(10, 41):
        for p in np.linspace(0.001, 0.999, 181):
            assert majority_error(p, k) <= (1 + math.sqrt(8 / k)) * min(p, 1 - p) + 1e-12
    assert majority_error(0.3, 11) > (1 + 1 / 11) * 0.3


@pytest.mark.parametrize(("seed", "c", "d"), [(0, 2, 3), (1, 2, 4), (2, 3, 3), (3, 4, 2)])
def test_thm_19_4_below_half_the_grid_every_rule_errs_a_quarter(seed, c, d):
    """For m <= (c + 1)^d / 2, random labellings of the grid (c-Lipschitz, Bayes error 0)
    make every rule err > 1/4 on average, so some labelling does: 1-NN at exactly
    (1/2)(1 - 1/N)^m, 5-NN and 10-NN above it. With m = 4N the same rules fall under 1/4:
    the theorem needs its bound on m."""
    points = (c + 1) ** d
    rng = np.random.default_rng(seed)
    for k in (1, 5, 10):
        run = nn_experiment(c, d, 0.0, points // 2, k, RUNS, rng)
        assert run.mean - 4 * run.standard_error > 0.25
        if k == 1:
            assert unseen_error(points, points // 2) > 0.25
            assert abs(run.mean - unseen_error(points, points // 2)) <= 4 * run.standard_error
        late = nn_experiment(c, d, 0.0, 4 * points, k, 10, rng)
        assert late.mean < 0.25


@pytest.mark.parametrize("spec", ["thresholds:n=32", "halfspaces:d=3,margin=0.3",
                                  "decision-trees:d=3,leaves=4"])
def test_nearest_neighbours_play_the_mistake_bound_game(spec):
    """Online: 1-NN never errs twice on one instance of a finite class (its nearest is
    itself): <= |X| mistakes; no bound is printed; on halfspaces they play to the end."""
    hclass = make_class(spec)
    for learner_spec in ("1-nn", "k-nn:k=3"):
        for adversary in ("random-target", "shattered-tree"):
            game = GameSpec(MISTAKE_BOUND, 60, hclass)
            learner = LEARNERS.make(learner_spec)
            opponent = ADVERSARIES.make(adversary)
            if opponent.unsupported(game) is not None:
                continue
            result = play(game, learner, opponent, 1)
            assert result.complete and result.bound is None
            if learner_spec == "1-nn" and hclass.domain_size is not None:
                assert result.mistakes <= hclass.domain_size


def test_bad_grids_are_refused():
    for c, d, q in ((0, 2, 0.1), (2, 0, 0.1), (2, 2, 0.7), (3, 9, 0.1)):
        with pytest.raises(SpecError):
            grid_distribution(c, d, q, np.random.default_rng(0))
