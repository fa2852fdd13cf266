"""docs/theory.md's adversary rows: each construction forces what theory says, on every
learner it can face, without breaking the rules."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from littlestone.adversaries import ADVERSARIES
from littlestone.cli import main
from littlestone.games.classes import FiniteClass, HypothesisClass, MatrixClass, make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import class_ldim, solver_for, verify_shattered
from littlestone.learners import LEARNERS
from littlestone.local import play


def learners_for(game: GameSpec, deterministic: bool | None = None) -> list[str]:
    """Every registered learner that can play ``game`` (adapters aside: they are slow)."""
    out = []
    for learner_id in LEARNERS.ids():
        cls = LEARNERS[learner_id]
        if learner_id in ("river", "sklearn"):
            continue
        if deterministic is not None and cls.deterministic != deterministic:
            continue
        if LEARNERS.make(learner_id).unsupported(game) is None:
            out.append(learner_id)
    return out


def tree_classes() -> list[HypothesisClass]:
    out = [make_class(s) for s in ("thresholds:n=63", "singletons:n=9",
                                    "monotone-disjunctions:n=5")]
    rng = np.random.default_rng(0)
    out += [MatrixClass(rng.integers(0, 2, size=(40, 10)), spec=f"matrix:random-{i}")
            for i in range(2)]
    return out


@pytest.mark.parametrize("hclass", tree_classes(), ids=lambda h: h.spec)
def test_shattered_tree_forces_ldim_on_every_deterministic_learner(hclass):
    ldim, _ = class_ldim(hclass)
    game = GameSpec(MISTAKE_BOUND, ldim + 10, hclass)
    names = learners_for(game, deterministic=True)
    assert {"consistent", "halving", "soa", "winnow", "weighted-majority"} <= set(names)
    for name in names:
        for seed in (0, 1):
            result = play(game, LEARNERS.make(name), ADVERSARIES.make("shattered-tree"), seed)
            assert result.complete, (name, result.status)
            assert result.mistakes >= ldim, name
            if name == "soa":
                assert result.mistakes == ldim


@pytest.mark.parametrize("hclass", tree_classes(), ids=lambda h: h.spec)
@pytest.mark.parametrize("learner", ["hedge", "randomized-weighted-majority"])
def test_shattered_tree_forces_half_ldim_in_expectation(hclass, learner):
    ldim, _ = class_ldim(hclass)
    for seed in range(3):
        result = play(GameSpec(MISTAKE_BOUND, ldim + 5, hclass), LEARNERS.make(learner),
                      ADVERSARIES.make("shattered-tree"), seed)
        assert result.complete
        assert result.expected_mistakes >= ldim / 2


def test_fixed_tree_from_the_ldim_command(tmp_path, capsys):
    path = tmp_path / "tree.graphml"
    assert main(["ldim", "--class", "intervals:n=12", "--tree", str(path)]) == 0
    capsys.readouterr()
    hclass = make_class("intervals:n=12")
    ldim, _ = class_ldim(hclass)
    game = GameSpec(MISTAKE_BOUND, ldim + 4, hclass)
    for name in ("halving", "consistent", "soa"):
        result = play(game, LEARNERS.make(name), ADVERSARIES.make(f"shattered-tree:tree={path}"))
        assert result.complete and result.mistakes >= ldim
    # a tree of another class is refused before round 1, exit status 2
    code = main(["play", "--learner", "halving", "--adversary", f"shattered-tree:tree={path}",
                 "--class", "singletons:n=4", "--rounds", "3"])
    assert code == 2 and "not a shattered tree" in capsys.readouterr().err
    bad = tmp_path / "bad.graphml"
    bad.write_text("<graphml>")
    assert main(["play", "--learner", "halving", "--adversary", f"shattered-tree:tree={bad}",
                 "--class", "singletons:n=4", "--rounds", "3"]) == 2


def test_play_exports_the_tree_it_played(tmp_path, capsys):
    out = tmp_path / "played.graphml"
    assert main(["play", "--learner", "soa", "--adversary", "shattered-tree", "--class",
                 "thresholds:n=31", "--rounds", "9", "--tree", str(out), "--json"]) == 0
    capsys.readouterr()
    tree = nx.read_graphml(out)
    hclass = make_class("thresholds:n=31")
    assert isinstance(hclass, FiniteClass)
    assert tree.number_of_nodes() == 5 + 1  # the path: Ldim = 5 instances and a leaf
    assert verify_shattered(tree, hclass)
    assert main(["play", "--learner", "soa", "--adversary", "random-target", "--class",
                 "thresholds:n=31", "--rounds", "9", "--tree", str(out)]) == 2


def test_the_tree_adversary_plays_without_importing_networkx():
    """Issue 42: a sandboxed game's process is a fresh fork, and importing networkx cost
    each game of a ShatteredTree (or a student's subclass of it) 80 ms of CPU; the path
    played is plain data, made a graph only when :meth:`played_tree` is asked for."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from littlestone.adversaries import ADVERSARIES\n"
        "from littlestone.learners import LEARNERS\n"
        "from littlestone.games.classes import make_class\n"
        "from littlestone.games.game import GameSpec\n"
        "from littlestone.local import play\n"
        "rules = GameSpec('mistake-bound', 9, make_class('thresholds:n=31'))\n"
        "result = play(rules, LEARNERS.make('soa'), ADVERSARIES.make('shattered-tree'))\n"
        "assert result.mistakes == 5, result.mistakes\n"
        "print('networkx' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_tree_adversary_shares_the_solver_with_soa():
    hclass = make_class("thresholds:n=1023")
    assert isinstance(hclass, FiniteClass)
    soa, tree = LEARNERS.make("soa"), ADVERSARIES.make("shattered-tree")
    game = GameSpec(MISTAKE_BOUND, 20, hclass)
    solver = solver_for(hclass)
    solver.ldim()  # warm: the class's own Ldim
    hits, lookups = solver.hits, solver.lookups
    play(game, soa, tree, 0)
    assert soa._solver is tree._solver is solver
    assert (solver.hits - hits) / (solver.lookups - lookups) > 0.5


@pytest.mark.parametrize("rounds", [1, 2, 7, 100, 1001])
def test_cover_flip_forces_half_the_rounds_on_deterministic_learners(rounds):
    for d in (2, 5):
        game = GameSpec(EXPERTS, rounds, experts=d)
        names = learners_for(game, deterministic=True)
        assert {"follow-the-leader", "weighted-majority", "halving"} <= set(names)
        for name in names:
            result = play(game, LEARNERS.make(name), ADVERSARIES.make("cover-flip"), 0)
            assert result.complete, (name, result.status)
            assert result.regret >= math.ceil(rounds / 2), name


@pytest.mark.parametrize("rounds", [101, 10_000])
def test_hedge_keeps_its_regret_against_cover_flip(rounds):
    game = GameSpec(EXPERTS, rounds, experts=2)
    for learner in ("hedge", "randomized-weighted-majority"):
        result = play(game, LEARNERS.make(learner), ADVERSARIES.make("cover-flip"), 0)
        assert result.expected_regret <= math.sqrt(2 * rounds * math.log(2))


@pytest.mark.parametrize(("d", "gamma"), [(4, 0.5), (30, 0.2), (120, 0.1)])
def test_perceptron_margin_forces_one_over_gamma_squared(d, gamma):
    hclass = make_class(f"halfspaces:d={d},margin={gamma}")
    m = math.floor(1 / gamma**2 + 1e-9)
    game = GameSpec(MISTAKE_BOUND, m + 20, hclass)
    names = learners_for(game, deterministic=True)
    assert "perceptron" in names
    for name in names:
        result = play(game, LEARNERS.make(name), ADVERSARIES.make("perceptron-margin"), 0)
        assert result.complete, result.message  # the witness passed the margin check
        assert result.mistakes >= m
        if name == "perceptron":
            assert result.mistakes == m  # and its bound (R/gamma)^2 is met exactly


def test_perceptron_margin_refusals():
    with pytest.raises(Exception, match="exceeds d"):
        play(GameSpec(MISTAKE_BOUND, 5, make_class("halfspaces:d=3,margin=0.1")),
             LEARNERS.make("perceptron"), ADVERSARIES.make("perceptron-margin"))
    with pytest.raises(Exception, match="below the class's margin"):
        play(GameSpec(MISTAKE_BOUND, 5, make_class("halfspaces:d=50,margin=0.3")),
             LEARNERS.make("perceptron"), ADVERSARIES.make("perceptron-margin:gamma=0.2"))


@pytest.mark.slow
@pytest.mark.parametrize(("n", "k"), [(16, 1), (12, 2), (30, 3), (8, 6), (200, 2), (64, 3)])
def test_winnow_lower_bound_forces_its_number(n, k):
    hclass = make_class(f"k-disjunctions:n={n},k={k}")
    game = GameSpec(MISTAKE_BOUND, 80, hclass)
    theory = (k / 8) * (1 + math.log2(n / k))
    names = learners_for(game, deterministic=True)
    assert {"winnow", "halving", "perceptron"} <= set(names)
    for name in names:
        adversary = ADVERSARIES.make("winnow-lower-bound")
        result = play(game, LEARNERS.make(name), adversary, 0)
        assert result.complete, (name, result.status)
        assert result.mistakes >= adversary.forcing >= theory


def test_wm_flip_against_weighted_majority():
    for d in (2, 16):
        rounds = 1000
        game = GameSpec(EXPERTS, rounds, experts=d)
        result = play(game, LEARNERS.make("weighted-majority"), ADVERSARIES.make("wm-flip"), 0)
        assert result.complete and result.mistakes == rounds  # every round a mistake
        assert result.bound is not None and result.mistakes <= result.bound.value
        # close to tight: T against 2.41 (m + log2 d) with m about T/2
        assert result.mistakes >= 0.3 * result.bound.value


def test_noisy_breaks_realizability_in_the_experts_game():
    game = GameSpec(EXPERTS, 2000, make_class("thresholds:n=63"))
    result = play(game, LEARNERS.make("hedge"), ADVERSARIES.make("noisy:rate=0.2"), 0)
    assert result.complete
    assert 300 <= (result.best_expert_loss or 0) <= 500
    assert result.expected_regret <= math.sqrt(2 * 2000 * math.log(64))
    with pytest.raises(Exception, match="experts"):
        play(GameSpec(MISTAKE_BOUND, 5, make_class("thresholds:n=7")), LEARNERS.make("halving"),
             ADVERSARIES.make("noisy"))


@pytest.mark.parametrize("dist", ["uniform", "bernoulli", "zipf"])
def test_iid_distributions(dist):
    spec = "monotone-disjunctions:n=8" if dist == "bernoulli" else "thresholds:n=100"
    rows = []
    result = play(GameSpec(MISTAKE_BOUND, 500, make_class(spec)), LEARNERS.make("halving"),
                  ADVERSARIES.make(f"iid:dist={dist},q=0.2,s=2.0"), 0,
                  on_record=lambda r: rows.append(r.x))
    assert result.complete
    if dist == "zipf":
        assert np.mean(np.array(rows) == 0) > 0.4  # P(0) = 1/zeta(2) ~ 0.61
    if dist == "bernoulli":
        assert 0.1 < np.mean([bin(x).count("1") / 8 for x in rows]) < 0.3


PAIRS = [
    (MISTAKE_BOUND, "thresholds:n=40", None),
    (MISTAKE_BOUND, "k-disjunctions:n=10,k=2", None),
    (MISTAKE_BOUND, "halfspaces:d=9,margin=0.34", None),
    (MISTAKE_BOUND, "halfspaces:d=12,margin=0.3,agnostic=true", None),
    (EXPERTS, "singletons:n=6", None),
    (EXPERTS, None, 3),
]


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), which=st.integers(0, len(PAIRS) - 1))
def test_no_adversary_ever_breaks_a_rule(seed, which):
    name, spec, d = PAIRS[which]
    game = GameSpec(name, 40, make_class(spec) if spec else None, d)
    for adversary_id in ADVERSARIES.ids():
        adversary = ADVERSARIES[adversary_id].example()
        if adversary.unsupported(game) is not None:
            continue
        for learner_id in learners_for(game):
            result = play(game, LEARNERS.make(learner_id), adversary.clone(), seed)
            assert result.complete, (adversary_id, learner_id, result.status, result.message)
