"""docs/theory.md's agnostic rows: Hedge over the SOA experts (UML Lemma 21.13, Thm 21.10)
within sqrt(2 T ln N) against the best hypothesis, and the noisy shattered tree forcing
Omega(sqrt(Ldim T)) on every learner."""

from __future__ import annotations

import math

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import FiniteClass, MatrixClass, make_class
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.games.ldim import LdimSolver, class_ldim
from littlestone.learners import LEARNERS
from littlestone.learners.agnostic import log_flip_sets
from littlestone.local import play


def matrix_class(seed: int) -> MatrixClass:
    rng = np.random.default_rng(seed)
    return MatrixClass(rng.integers(0, 2, size=(10, 8)), spec=f"matrix:seed={seed}")


CLASSES = ["singletons:n=120", "thresholds:n=15", "monotone-disjunctions:n=3", "intervals:n=6"]


@pytest.mark.parametrize("spec", CLASSES)
@pytest.mark.parametrize("rounds", [150, 300])
def test_soa_experts_within_sqrt_2_t_ln_n(spec, rounds):
    hclass = make_class(spec)
    assert isinstance(hclass, FiniteClass)
    game = GameSpec(EXPERTS, rounds, hclass)
    ldim = class_ldim(hclass)[0]
    bound = math.sqrt(2 * rounds * log_flip_sets(rounds, ldim))
    assert bound <= math.sqrt(2 * ldim * rounds * math.log(math.e * rounds / ldim))
    worst = 0.0
    for adversary in ("noisy-tree", "noisy:rate=0.2", "noisy:rate=0.45", "random-target"):
        for seed in (0, 1):
            result = play(game, LEARNERS.make("soa-experts"), ADVERSARIES.make(adversary), seed)
            assert result.complete, result.message
            assert result.bound is not None and result.bound.value == pytest.approx(bound)
            assert result.expected_regret <= bound
            worst = max(worst, result.expected_regret / bound)
    assert worst >= 0.2  # noisy-tree on singletons, random-target and noisy elsewhere


def test_every_hypothesis_is_an_soa_expert_with_at_most_ldim_flips():
    """UML Lemma 21.13, directly: on any sequence, flipping SOA exactly where h disagrees
    with it takes at most Ldim(H) flips, and the expert then predicts as h throughout."""
    rng = np.random.default_rng(0)
    for seed in range(10):
        hclass = matrix_class(seed)
        solver = LdimSolver(hclass.matrix())
        ldim = solver.ldim()
        xs = rng.integers(0, hclass.domain_size, 40)
        for h in range(hclass.size):
            v, flips = solver.full, 0
            for x in xs:
                zero, one = solver.split(v, int(x))
                ldims = [solver.ldim(side) if side else -1 for side in (zero, one)]
                soa = 1 if ldims[1] >= ldims[0] else 0
                label = int(hclass.matrix()[h, x])
                flips += label != soa
                v = one if label else zero
                assert v >> h & 1  # h stays in the expert's version space
            assert flips <= ldim


@pytest.mark.parametrize("spec", ["thresholds:n=15", "monotone-disjunctions:n=3"])
def test_noisy_tree_forces_its_regret_on_every_learner(spec):
    """Every learner's expected regret averages sum_k E|B_k - n_k/2| ~ sqrt(Ldim T/(2 pi));
    the mean over 16 seeds is within 4 standard errors of it."""
    hclass = make_class(spec)
    rounds, seeds = 240, 16
    game = GameSpec(EXPERTS, rounds, hclass)
    ldim = class_ldim(hclass)[0]
    for learner in ("soa-experts", "hedge", "weighted-majority", "follow-the-leader"):
        measured = []
        for seed in range(seeds):
            adversary = ADVERSARIES.make("noisy-tree")
            result = play(game, LEARNERS.make(learner), adversary, seed)
            assert result.complete, result.message  # its committed sequence checked
            measured.append(result.expected_regret)
        forcing = adversary.forcing
        assert forcing >= 0.35 * math.sqrt(ldim * rounds)
        mean, error = float(np.mean(measured)), float(np.std(measured, ddof=1)) / math.sqrt(seeds)
        assert abs(mean - forcing) <= 4 * error + 1e-9, (learner, mean, forcing, error)


def test_soa_experts_bound_beats_hedge_over_a_large_class():
    """singletons on 2000 points, T = 300: ln N = ln 301 < ln |H| = ln 2000."""
    hclass = make_class("singletons:n=2000")
    game = GameSpec(EXPERTS, 300, hclass)
    ours = play(game, LEARNERS.make("soa-experts"), ADVERSARIES.make("noisy:rate=0.1"), 0)
    hedge = play(game, LEARNERS.make("hedge"), ADVERSARIES.make("noisy:rate=0.1"), 0)
    assert ours.bound is not None and hedge.bound is not None
    assert ours.bound.value < hedge.bound.value
    assert ours.expected_regret <= ours.bound.value


def test_refusals():
    unknown = GameSpec(EXPERTS, 10, make_class("thresholds:n=7"), horizon_known=False)
    assert "horizon" in (LEARNERS.make("soa-experts").unsupported(unknown) or "")
    free = GameSpec(EXPERTS, 10, experts=3)
    assert "finite class" in (LEARNERS.make("soa-experts").unsupported(free) or "")
    assert "finite class" in (ADVERSARIES.make("noisy-tree").unsupported(free) or "")
