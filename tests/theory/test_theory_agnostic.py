"""docs/theory.md's agnostic rows (UML Lemma 21.13, Thm 21.10): Hedge over the SOA experts
within sqrt(2 T ln N) against the best hypothesis; the noisy shattered tree forcing
Omega(sqrt(Ldim T)) on every learner; and Thm 21.10 whole (issue 31, item 1): the
agnostic learner keeps sqrt(2 T min(ln|H|, ln N)) <= sqrt(2 min{ln|H|, Ldim ln(eT)} T),
and soa-experts prints Sauer's form of N only where it holds (T >= Ldim)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import FiniteClass, MatrixClass, make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import LdimSolver, class_ldim
from littlestone.learners import LEARNERS
from littlestone.learners.agnostic import log_flip_sets
from littlestone.local import play


def matrix_class(seed: int) -> MatrixClass:
    rng = np.random.default_rng(seed)
    return MatrixClass(rng.integers(0, 2, size=(10, 8)), spec=f"matrix:seed={seed}")


CLASSES = ["singletons:n=120", "thresholds:n=15", "monotone-disjunctions:n=3", "intervals:n=6"]


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_soa_experts_bound_beats_hedge_over_a_large_class():
    """singletons on 1000 points, T = 200: ln N = ln 201 < ln |H| = ln 1000."""
    hclass = make_class("singletons:n=1000")
    game = GameSpec(EXPERTS, 200, hclass)
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


# -- Thm 21.10 whole: the agnostic learner and Sauer's form ------------------------------

CASES = [  # class, T, the experts Thm 21.10's min picks
    ("thresholds:n=15", 150, "class"), ("thresholds:n=15", 400, "class"),
    ("intervals:n=6", 200, "class"), ("singletons:n=300", 100, "soa"),
    ("singletons:n=400", 150, "soa"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "rounds", "experts"), CASES)
def test_agnostic_within_sqrt_2_t_min_ln_size_ln_n(spec, rounds, experts):
    hclass = make_class(spec)
    assert isinstance(hclass, FiniteClass)
    game = GameSpec(EXPERTS, rounds, hclass)
    ldim = class_ldim(hclass)[0]
    log_size, log_n = math.log(hclass.size), log_flip_sets(rounds, ldim)
    assert experts == ("class" if log_size <= log_n else "soa")
    bound = math.sqrt(2 * rounds * min(log_size, log_n))
    assert bound <= math.sqrt(2 * min(log_size, ldim * math.log(math.e * rounds)) * rounds)
    worst = 0.0
    for adversary in ("noisy:rate=0.2", "noisy-tree", "random-target"):
        for seed in (0, 1):
            learner = LEARNERS.make("agnostic")
            result = play(game, learner, ADVERSARIES.make(adversary), seed)
            assert result.complete, result.message
            assert learner.experts == experts
            assert result.bound is not None and result.bound.value == pytest.approx(bound)
            assert result.expected_regret <= result.bound.value
            worst = max(worst, result.expected_regret / bound)
    assert worst >= 0.2, worst  # the measurement is not vacuous


def test_soa_experts_alone_passes_the_ln_size_form_where_agnostic_keeps_it():
    """thresholds:n=15, T = 400, random-target: soa-experts' regret passes sqrt(2 T ln 16)
    = 47.1 (its own bound is 128.9), while agnostic, Hedge over H there, stays below."""
    game = GameSpec(EXPERTS, 400, make_class("thresholds:n=15"))
    form = math.sqrt(2 * 400 * math.log(16))
    soa = [play(game, LEARNERS.make("soa-experts"), ADVERSARIES.make("random-target"), seed)
           for seed in range(3)]
    ours = [play(game, LEARNERS.make("agnostic"), ADVERSARIES.make("random-target"), seed)
            for seed in range(3)]
    assert max(r.expected_regret for r in soa) > form
    assert all(r.bound is not None and r.expected_regret <= r.bound.value <= form + 1e-9
               for r in ours)


def test_agnostic_plays_the_mistake_bound_game_too():
    game = GameSpec(MISTAKE_BOUND, 100, make_class("singletons:n=300"))
    result = play(game, LEARNERS.make("agnostic"), ADVERSARIES.make("shattered-tree"), 0)
    assert result.complete and result.bound is not None
    assert result.expected_mistakes <= result.bound.value  # the target errs nowhere


@pytest.mark.parametrize("spec", ["thresholds:n=15", "intervals:n=6", "monotone-disjunctions:n=3"])
def test_sauer_form_printed_only_when_it_holds(spec):
    """N = sum_{l <= L} C(T, l) <= (eT/L)^L needs T >= L; below, N = 2^T, and (eT/L)^L can be
    smaller (thresholds:n=15, T = 2: N = 4 > (2e/4)^4 = 3.41). N <= (eT)^L always."""
    hclass = make_class(spec)
    assert isinstance(hclass, FiniteClass)
    ldim = class_ldim(hclass)[0]
    for rounds in range(1, 120):
        log_n = log_flip_sets(rounds, ldim)
        assert log_n <= ldim * math.log(math.e * rounds) + 1e-12
        sauer = ldim * math.log(math.e * rounds / ldim)
        if rounds >= ldim:
            assert log_n <= sauer + 1e-12
        else:
            assert log_n == pytest.approx(rounds * math.log(2))
        learner = LEARNERS.make("soa-experts")
        game = GameSpec(EXPERTS, rounds, hclass)
        learner.start(game, 0)
        bound = learner.bound(game)
        assert bound is not None and bound.value == pytest.approx(math.sqrt(2 * rounds * log_n))
        assert ("Sauer" in bound.name) == (rounds >= ldim)
        assert ("2^T" in bound.name) == (rounds < ldim)
    if spec == "thresholds:n=15":  # the counterexample of issue 31
        assert math.exp(log_flip_sets(2, ldim)) == pytest.approx(4)
        assert (2 * math.e / ldim) ** ldim == pytest.approx(3.41, abs=0.01)
