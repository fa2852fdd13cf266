"""docs/theory.md's rows for UML ch. 18 (issue 45): the class of decision trees with at most
k leaves, ID3 and its gains, the MDL bound (18.1) and pruning, random forests."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import class_ldim
from littlestone.games.pac import (
    consistency_run,
    distribution,
    failure_allowance,
    occam_sample_size,
)
from littlestone.games.trees import (
    GAINS,
    DecisionTrees,
    forest_predict,
    id3,
    mdl_bound,
    predict,
    prune,
    random_forest,
    training_error,
)
from littlestone.games.vcdim import vcdim
from littlestone.learners import LEARNERS
from littlestone.local import play
from tests.support.agents_for_tests import Spoiler

DELTA = 0.05


@pytest.mark.parametrize(("d", "leaves", "expected_vc", "expected_ldim"), [
    (2, 2, 2, 2), (3, 2, 3, 3), (3, 3, 4, 4), (3, 4, 5, 5), (3, 8, 8, 8), (4, 2, 3, 3),
    (4, 3, 5, 5), (4, 4, 6, 8), (2, 4, 4, 4),
])
def test_tree_class_vcdim_between_k_and_its_description(d, leaves, expected_vc, expected_ldim):
    """k <= VCdim <= log2|H| <= 2k log2(d + 3) (UML 18.1's code), VCdim = 2^d at 2^d
    leaves (Exercise 18.1), VCdim <= Ldim; the summary's "VCdim = k" breaks (d >= 3)."""
    H = DecisionTrees(d, leaves)
    value = vcdim(H.matrix())
    ldim = class_ldim(H)[0]
    assert (value, ldim) == (expected_vc, expected_ldim)
    assert min(leaves, 1 << d) <= value <= ldim <= math.log2(H.size) <= H.description_bound()
    if leaves == 1 << d:
        assert value == 1 << d and H.size == 1 << (1 << d)
        # every function needs 2^d leaves: with one fewer, parity and its complement go
        assert DecisionTrees(d, leaves - 1).size == H.size - 2
    if d >= 3 and leaves < 1 << d:
        assert value > leaves  # the weak form "VCdim = k" fails over {0, 1}^d


def test_tree_class_specs():
    assert make_class("decision-trees:d=3,leaves=2").size == 8
    assert make_class("decision-trees:d=4,leaves=16").size == 1 << 16  # every function
    for bad in ("decision-trees:d=5,leaves=2", "decision-trees:d=3,leaves=9",
                "decision-trees:d=3", "decision-trees:d=3,leaves=2,depth=1"):
        with pytest.raises(SpecError):
            make_class(bad)


EXERCISE = (np.array([0b111, 0b001, 0b011, 0b100]), np.array([1, 1, 0, 0]))


@pytest.mark.parametrize("gain", sorted(GAINS))
def test_id3_to_depth_two_is_suboptimal(gain):
    """Exercise 18.2: ID3 cut at depth 2 errs on >= 1/4 of the set whatever it does on a
    tie (every order of the variables is tried), while a tree of depth 2 fits it."""
    xs, ys = EXERCISE
    for order in itertools.permutations(range(3)):
        renamed = np.array([sum(((x >> i) & 1) << order[i] for i in range(3)) for x in xs])
        tree = id3(renamed, ys, 3, gain, depth=2)
        assert training_error(tree, renamed, ys) >= 0.25
    leaves = list(itertools.product((0, 1), repeat=4))
    fits = [t for i, j, k in itertools.product(range(3), repeat=3)
            for t in [(i, (j, a, b), (k, c, e)) for a, b, c, e in leaves]
            if training_error(t, xs, ys) == 0]
    assert fits
    unlimited = id3(xs, ys, 3, gain)
    assert training_error(unlimited, xs, ys) == 0


def noisy_sample(d, m, noise, rng):
    """A target tree of 4 leaves on 3 of the d variables, uniform instances, labels flipped
    with probability ``noise``: (xs, ys, the target's labels of the domain)."""
    i, j, k = (int(v) for v in rng.choice(d, 3, replace=False))
    truth = predict((i, (j, 0, 1), (k, 1, 0)), np.arange(1 << d))
    xs = rng.integers(0, 1 << d, size=m)
    ys = (truth[xs] ^ (rng.random(m) < noise)).astype(np.int64)
    return xs, ys, truth


def true_error(tree_labels, truth, noise):
    return noise + (1 - 2 * noise) * float(np.mean(tree_labels != truth))


@pytest.mark.parametrize(("seed", "d", "m", "noise"), [(0, 7, 100, 0.2), (1, 8, 150, 0.1),
                                                       (2, 9, 150, 0.25)])
def test_mdl_bound_holds_for_id3_and_its_pruned_tree(seed, d, m, noise):
    """(18.1) holds for every tree at once with probability 1 - delta: checked for ID3's
    tree (every gain) and for it pruned against the bound. Pruning never raises the bound,
    and lowers the true error on average. A bound for one fixed tree, L_S(h) +
    sqrt(ln(2/delta)/(2m)) (Hoeffding, without the description), fails for ID3's tree,
    which the sample chose."""
    rng = np.random.default_rng(seed)
    runs = 5
    failures = weak_failures = 0
    full_errors, pruned_errors = [], []
    domain = np.arange(1 << d)
    for _ in range(runs):
        xs, ys, truth = noisy_sample(d, m, noise, rng)
        for gain in GAINS:
            full = id3(xs, ys, d, gain)
            pruned = prune(full, xs, ys, d, DELTA)
            assert mdl_bound(pruned, xs, ys, d, DELTA) <= mdl_bound(full, xs, ys, d, DELTA)
            for tree in (full, pruned):
                error = true_error(predict(tree, domain), truth, noise)
                failures += error > mdl_bound(tree, xs, ys, d, DELTA)
            error = true_error(predict(full, domain), truth, noise)
            weak = training_error(full, xs, ys) + math.sqrt(math.log(2 / DELTA) / (2 * m))
            weak_failures += error > weak
            full_errors.append(error)
            pruned_errors.append(true_error(predict(pruned, domain), truth, noise))
    allowed = failure_allowance(2 * runs * len(GAINS), DELTA)
    assert failures <= allowed
    assert weak_failures > failure_allowance(runs * len(GAINS), DELTA)
    assert np.mean(pruned_errors) < np.mean(full_errors)


@pytest.mark.parametrize(("seed", "d"), [(0, 3), (1, 4), (2, 3)])
def test_id3_and_one_nn_are_consistent_learners_of_every_function(seed, d):
    """Unlimited ID3 and 1-NN fit every sample a function labels, with outputs among the
    2^(2^d) functions: m = (1/epsilon)(2^d ln 2 + ln(1/delta)) examples make them PAC
    (the consistency row above); at m/8 the guarantee fails."""
    hclass = DecisionTrees(d, 1 << d)
    probs = distribution(hclass, "uniform")
    epsilon = delta = 0.1
    m = occam_sample_size(epsilon, delta, (1 << d) * math.log(2))
    repeat = 40
    for spec in ("id3", "id3:gain=train-error", "1-nn"):
        rng = np.random.default_rng(seed)
        runs = [consistency_run(LEARNERS.make(spec), hclass, int(rng.integers(hclass.size)),
                                probs, m, rng) for _ in range(repeat)]
        assert all(r.training_errors == 0 for r in runs)
        assert sum(r.error > epsilon for r in runs) <= failure_allowance(repeat, delta)
        short = [consistency_run(LEARNERS.make(spec), hclass, int(rng.integers(hclass.size)),
                                 probs, m // 8, rng) for _ in range(repeat)]
        assert sum(r.error > epsilon for r in short) > failure_allowance(repeat, delta)


@pytest.mark.parametrize("spec", ["decision-trees:d=3,leaves=3", "decision-trees:d=4,leaves=4"])
def test_tree_learners_in_the_mistake_bound_game(spec):
    """Online, a consistent learner errs at most once per instance: <= |X| = 2^d mistakes,
    and the shattered tree forces Ldim(H) on each; no bound is printed (UML gives none)."""
    hclass = make_class(spec)
    ldim = class_ldim(hclass)[0]
    for learner_spec in ("id3", "1-nn", "random-forest:trees=5,k=2"):
        for adversary in (ADVERSARIES.make("shattered-tree"), Spoiler(),
                          ADVERSARIES.make("random-target")):
            learner = LEARNERS.make(learner_spec)
            result = play(GameSpec(MISTAKE_BOUND, 40, hclass), learner, adversary, 3)
            assert result.complete and result.bound is None
            if learner_spec != "random-forest:trees=5,k=2":  # a forest is not consistent
                assert result.mistakes <= hclass.domain_size
            if adversary.id == "shattered-tree" and learner.deterministic:
                assert result.mistakes >= ldim


def test_tree_learners_are_not_within_ldim():
    """SOA's bound, Ldim(H), is not theirs: on decision-trees:d=4,leaves=4 (Ldim 8) the
    spoiler makes ID3 and 1-NN err up to 10-12 times in 6 games, SOA at most 8."""
    hclass = make_class("decision-trees:d=4,leaves=4")
    ldim = class_ldim(hclass)[0]
    worst = {spec: max(play(GameSpec(MISTAKE_BOUND, 40, hclass), LEARNERS.make(spec),
                            Spoiler(), seed).mistakes for seed in range(6))
             for spec in ("id3", "1-nn", "soa")}
    assert worst["id3"] > ldim and worst["1-nn"] > ldim and worst["soa"] <= ldim


@pytest.mark.parametrize("seed", range(3))
def test_a_forest_errs_at_most_twice_its_trees_mean(seed):
    """The vote errs on (x, y) only when half the trees do (Markov): L_D(forest) <= 2 x the
    trees' mean L_D, on learned forests over noisy samples; a hand-made forest of three
    trees, each wrong on half the domain, has a vote wrong on 3/4: the factor 1 fails."""
    rng = np.random.default_rng(seed)
    d, noise = 6, 0.15
    domain = np.arange(1 << d)
    for m, trees, k in ((60, 5, 2), (200, 11, 3)):
        xs, ys, truth = noisy_sample(d, m, noise, rng)
        forest = random_forest(xs, ys, d, trees, k, "entropy", rng)
        mean_tree = np.mean([true_error(predict(t, domain), truth, noise) for t in forest])
        vote = true_error(forest_predict(forest, domain), truth, noise)
        assert vote <= 2 * mean_tree
    made = [(1, 1, 0), (0, (1, 0, 1), (1, 1, 0)), (0, 1, 0)]  # target 0 on {0, 1}^2
    wrong = [float(np.mean(predict(t, np.arange(4)))) for t in made]
    vote_wrong = float(np.mean(forest_predict(made, np.arange(4))))
    assert wrong == [0.5, 0.5, 0.5] and vote_wrong == 0.75
    assert vote_wrong <= 2 * np.mean(wrong) and vote_wrong > np.mean(wrong)


def test_tree_learner_specs():
    for bad in ("id3:gain=variance", "id3:depth=-1", "id3:delta=2", "random-forest:k=0",
                "random-forest:gain=x", "k-nn:k=0"):
        with pytest.raises(SpecError):
            LEARNERS.make(bad)
    learner = LEARNERS.make("id3:prune=true")
    learner.start(GameSpec(MISTAKE_BOUND, 5, make_class("decision-trees:d=2,leaves=2")), 0)
    assert learner.predict(0) == 1.0


@pytest.mark.parametrize("learner", ["id3", "id3:gain=gini", "1-nn"])
def test_pac_command_plays_them_as_consistent_learners(learner, capsys):
    """`littlestone pac` counts their outputs (ln |H| = 2^d ln 2) and plays the consistency
    row; a depth limit or pruning makes ID3 no longer consistent, and it is refused; an
    illegal class is one line and exit 2."""
    from littlestone.cli import main

    args = ["pac", "--class", "decision-trees:d=3,leaves=8", "--learner", learner,
            "--repeat", "30", "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert data["log_hypotheses"] == pytest.approx(8 * math.log(2))
    assert data["training_errors"] == 0 and data["failures"] <= data["failures_allowed"]
    assert main([*args[:4], "id3:depth=2", *args[5:]]) == 2
    assert main(["ldim", "--class", "decision-trees:d=9,leaves=2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines()[-1] == ("littlestone: error: decision-trees: parameter d='9' must "
                                    "be at most 4")
