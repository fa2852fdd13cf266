"""docs/theory.md's row for ``conservative:of=SPEC`` (issue 31, item 4): any deterministic
learner with a mistake bound, made conservative, keeps the bound; online-to-batch's
longest survivor runs through it. And the row of the PAC notes' elimination learners
(issue 45, item 2), played by ``play`` on the classes it names."""

from __future__ import annotations

import json

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.cli import main
from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.pac import distribution, longest_survivor
from littlestone.learners import LEARNERS
from littlestone.learners.conservative import Conservative
from littlestone.local import play
from tests.support.agents_for_tests import PerceptronSpoiler, Spoiler

#: Classes the wrapped learners are played on (a learner is wrapped on those where it
#: prints a mistake bound).
CLASSES = ["thresholds:n=63", "intervals:n=10", "monotone-disjunctions:n=6",
           "k-disjunctions:n=12,k=2", "halfspaces:d=12,margin=0.3", "quadratic:n=16",
           "monotone-conjunctions:n=6"]
SKIPPED = {"conservative"}  # wrapping itself adds nothing
#: Bounds computed from what the learner saw: the wrapped learner's, from its mistakes.
DATA_DEPENDENT = {"weighted-majority", "weighted-halving", "kernel-perceptron"}


def wrappable() -> list[str]:
    return [i for i in LEARNERS.ids() if LEARNERS[i].deterministic and LEARNERS[i].served
            and i not in SKIPPED]


def bounded_games() -> list[tuple[str, str]]:
    """(learner id, class spec) for every deterministic learner and every class where it
    prints a mistake bound (after a short game: some bounds use what it saw)."""
    out = []
    for learner_id in wrappable():
        for spec in CLASSES:
            game = GameSpec(MISTAKE_BOUND, 10, make_class(spec))
            learner = LEARNERS.make(learner_id)
            if learner.unsupported(game) is None:
                result = play(game, learner, ADVERSARIES.make("random-target"), 0)
                if result.bound is not None:
                    out.append((learner_id, spec))
    return out


def adversaries_for(hclass: object) -> list[object]:
    if isinstance(hclass, FiniteClass):
        return [ADVERSARIES.make("shattered-tree"), ADVERSARIES.make("random-target"), Spoiler()]
    return [ADVERSARIES.make("random-target"), ADVERSARIES.make("perceptron-margin"),
            PerceptronSpoiler()]


FINITE = ["thresholds:n=63", "intervals:n=10", "monotone-disjunctions:n=6",
          "k-disjunctions:n=12,k=2", "quadratic:n=16", "monotone-conjunctions:n=6"]
DISJUNCTIONS = ["monotone-disjunctions:n=6", "k-disjunctions:n=12,k=2"]
#: The learners wrapped, and where: :func:`bounded_games` as written out, so that listing
#: the tests plays no game (the next test checks that the two agree).
BOUNDED = {
    "consistent": FINITE, "halving": FINITE, "soa": FINITE, "weighted-halving": FINITE,
    "weighted-majority": FINITE, "elimination": DISJUNCTIONS, "winnow": DISJUNCTIONS,
    "k-cnf": ["k-disjunctions:n=12,k=2", "monotone-conjunctions:n=6"],
    "monotone-conjunction": ["monotone-conjunctions:n=6"],
    "kernel-perceptron": [*FINITE[:4], "halfspaces:d=12,margin=0.3", "quadratic:n=16"],
    "perceptron": ["halfspaces:d=12,margin=0.3"],
}
GAMES = [(learner_id, spec) for learner_id, specs in BOUNDED.items() for spec in specs]


def test_every_deterministic_learner_with_a_bound_is_wrapped_here():
    """The list is every (learner, class) where a deterministic learner prints a bound,
    and is not vacuous."""
    assert sorted(bounded_games()) == sorted(GAMES)
    wrapped = set(BOUNDED)
    assert {"consistent", "halving", "soa", "winnow", "elimination", "weighted-majority",
            "weighted-halving", "perceptron", "kernel-perceptron", "monotone-conjunction",
            "k-cnf"} <= wrapped, wrapped
    assert not wrapped & {"hedge", "randomized-soa", "soa-experts", "randomized-halving"}


@pytest.mark.slow
@pytest.mark.parametrize(("learner_id", "spec"), GAMES, ids=[f"{i}-{c}" for i, c in GAMES])
def test_conservative_keeps_the_bound(learner_id, spec):
    """Played against the shattered tree (finite classes) or the margin adversary
    (halfspaces), a random target and a spoiler, 2 seeds: mistakes <= the wrapped
    learner's bound, and it was told exactly its mistakes."""
    hclass = make_class(spec)
    game = GameSpec(MISTAKE_BOUND, 120, hclass)
    for adversary in adversaries_for(hclass):
        for seed in (0, 1):
            learner = LEARNERS.make(f"conservative:of={learner_id}")
            assert isinstance(learner, Conservative)
            result = play(game, learner, adversary.clone(), seed)
            assert result.complete, result.message
            if result.bound is None:  # a bound from what it saw, and it saw nothing
                assert learner_id in DATA_DEPENDENT and learner.updates == 0
                continue
            assert result.mistakes <= result.bound.value + 1e-9
            assert learner.updates == result.mistakes  # told only its mistakes
            assert result.bound.name.endswith("kept conservative")
            plain = LEARNERS.make(learner_id)
            plain.start(game, 0)
            static = plain.bound(game)  # a bound of the class alone is the same bound
            if static is not None and learner_id not in DATA_DEPENDENT:
                assert result.bound.value == pytest.approx(static.value)


@pytest.mark.parametrize(("learner", "spec", "bound"), [
    ("monotone-conjunction", "monotone-conjunctions:n=4", 4),
    ("conservative:of=monotone-conjunction", "monotone-conjunctions:n=6", 6),
    ("k-cnf:k=1", "conjunctions:n=3", 6),
    ("conservative:of=k-cnf:k=1", "conjunctions:n=5", 10),
    ("conservative:of=k-cnf", "monotone-conjunctions:n=5", 50),
])
def test_play_knows_the_elimination_learners_classes(capsys, learner, spec, bound):
    """``play`` builds the PAC notes' classes and prints the elimination bounds: n on
    monotone conjunctions, c = sum_{i <= k} C(n, i) 2^i (2n at k = 1) on conjunctions
    with negations. Against the shattered tree, 2 seeds: Ldim(H) <= mistakes <= the bound,
    and the elimination over the n variables alone meets n exactly; with negations the
    tree forces n + 1 > n, so the monotone form n is broken there."""
    n = int(spec.partition("n=")[2])
    for seed in (0, 1):
        assert main(["play", "--learner", learner, "--adversary", "shattered-tree", "--class",
                     spec, "--rounds", "100", "--seed", str(seed), "--json"]) == 0
        data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert data["status"] == "complete" and data["bound"] == bound, data
        assert data["ldim"] <= data["mistakes"] <= bound
        if learner.endswith("monotone-conjunction"):
            assert data["mistakes"] == n  # met: n - 1 would be false
        if spec.startswith("conjunctions"):
            assert data["mistakes"] >= n + 1  # the monotone form n is false here


def test_a_conservative_learner_moves_only_on_its_mistakes():
    """Halving restricts its version space on every label; made conservative it keeps its
    version space (and its prediction) through the rounds it got right."""
    game = GameSpec(MISTAKE_BOUND, 6, make_class("thresholds:n=8"))
    learner = LEARNERS.make("conservative:of=halving")
    plain = LEARNERS.make("halving")
    learner.start(game, 0)
    plain.start(game, 0)
    for x, y in [(7, 0), (6, 0), (5, 0)]:  # all predicted 0: right
        assert learner.predict(x) == plain.predict(x) == 0.0
        learner.update(x, y)
        plain.update(x, y)
    assert isinstance(learner, Conservative)
    assert learner.updates == 0
    assert learner.inner.predict(3) == 1.0 and plain.predict(3) == 0.0  # 5 of 9 vs 2 of 6


def test_the_longest_survivor_needs_a_conservative_learner():
    hclass = make_class("thresholds:n=15")
    assert isinstance(hclass, FiniteClass)
    probs = distribution(hclass, "uniform")
    rng = np.random.default_rng(0)
    with pytest.raises(SpecError, match="conservative"):
        longest_survivor(LEARNERS.make("halving"), hclass, 3, probs, 0.1, 0.1, 4, rng)
    run = longest_survivor(LEARNERS.make("conservative:of=halving"), hclass, 3, probs, 0.1, 0.1,
                           4, rng)
    assert run.mistakes <= 4


@pytest.mark.parametrize(("spec", "message"), [
    ("conservative:of=hedge", "not deterministic"),
    ("conservative:of=soa-experts", "not deterministic"),
    ("conservative:of=nothing", "unknown learner"),
    ("conservative:of=examples/minimal_learner.py:MajorityVote", "agent file"),
])
def test_refusals(spec, message):
    with pytest.raises(SpecError, match=message):
        LEARNERS.make(spec)
    with pytest.raises(SpecError, match="not a file"):
        Conservative(of="examples/minimal_learner.py:MajorityVote")


def test_the_wrapped_spec_round_trips_with_its_commas_as_semicolons():
    learner = LEARNERS.make("conservative:of=winnow:alpha=3;theta=5")
    assert learner.spec == "conservative:of=winnow:alpha=3.0;theta=5.0;variant=elimination"
    assert LEARNERS.make(learner.spec).params() == learner.params()
    assert isinstance(learner, Conservative) and learner.inner.params()["theta"] == 5.0
