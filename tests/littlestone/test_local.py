from __future__ import annotations

import textwrap

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.errors import SpecError, UnsupportedGame
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.local import play
from tests.support.agents_for_tests import (
    AlternatingCosts,
    CrashingLearner,
    OutsideAdversary,
    UniformExperts,
)


def records(game, learner_spec, adversary_spec, seed, blocks):
    rows = []
    result = play(game, LEARNERS.make(learner_spec), ADVERSARIES.make(adversary_spec), seed,
                  on_record=lambda r: rows.append(tuple(np.asarray(v).tolist() for v in r)),
                  blocks=blocks)
    return rows, result


@pytest.mark.parametrize(
    ("spec", "learner"),
    [("thresholds:n=100", "halving"), ("halfspaces:d=7,margin=0.2", "perceptron"),
     ("conjunctions:n=4", "perceptron")],
)
def test_blocks_and_single_moves_give_the_same_game(spec, learner):
    game = GameSpec(MISTAKE_BOUND, 5000, make_class(spec))
    fast, r1 = records(game, learner, "random-target", 4, blocks=True)
    slow, r2 = records(game, learner, "random-target", 4, blocks=False)
    assert len(fast) == 5000
    assert fast == slow
    assert r1 == r2


def test_a_crash_ends_the_game_against_the_crasher():
    game = GameSpec(MISTAKE_BOUND, 10, make_class("thresholds:n=8"))
    for blocks in (True, False):
        result = play(game, CrashingLearner(at=3), ADVERSARIES.make("random-target"), 0,
                      blocks=blocks)
        assert result.status == "crash:learner:ZeroDivisionError"
        assert result.rounds == 2
        assert "division by zero" in result.message


def test_a_rule_broken_mid_game():
    game = GameSpec(MISTAKE_BOUND, 10, make_class("thresholds:n=8"))
    result = play(game, LEARNERS.make("halving"), OutsideAdversary(), 0)
    assert result.status == "rule_violation:adversary:instance_domain"
    assert result.rounds == 1


def test_unsupported_pairs_are_refused_before_round_one():
    with pytest.raises(UnsupportedGame, match="finite class"):
        play(GameSpec(MISTAKE_BOUND, 5, make_class("halfspaces:d=3")), LEARNERS.make("halving"),
             ADVERSARIES.make("random-target"))
    with pytest.raises(UnsupportedGame, match="experts"):
        play(GameSpec(EXPERTS, 5, make_class("singletons:n=3")), LEARNERS.make("perceptron"),
             ADVERSARIES.make("random-target"))
    with pytest.raises(UnsupportedGame, match="needs a class"):
        play(GameSpec(EXPERTS, 5, experts=3), UniformExperts(), ADVERSARIES.make("random-target"))
    with pytest.raises(UnsupportedGame, match="target=9"):
        play(GameSpec(MISTAKE_BOUND, 5, make_class("singletons:n=3")), LEARNERS.make("halving"),
             ADVERSARIES.make("random-target:target=9"))


def test_free_experts_game():
    game = GameSpec(EXPERTS, 40, experts=4)
    result = play(game, UniformExperts(), AlternatingCosts(), seed=0)
    assert result.complete
    assert result.best_expert_loss == 10
    assert result.expected_learner_loss == pytest.approx(10)
    assert result.expected_regret == pytest.approx(0)
    assert result.learner_loss is not None and 0 <= result.learner_loss <= 40


def test_game_spec_validation():
    with pytest.raises(SpecError, match="needs a class"):
        GameSpec(MISTAKE_BOUND, 5)
    with pytest.raises(SpecError, match="does not match"):
        GameSpec(EXPERTS, 5, make_class("singletons:n=3"), experts=4)
    with pytest.raises(SpecError, match="must be finite"):
        GameSpec(EXPERTS, 5, make_class("halfspaces:d=3"))
    with pytest.raises(SpecError, match="--experts"):
        GameSpec(EXPERTS, 5)
    assert GameSpec(EXPERTS, 5, make_class("singletons:n=3")).n_experts == 3


def test_random_target_commits_and_the_reveal_is_checked():
    game = GameSpec(MISTAKE_BOUND, 50, make_class("thresholds:n=64"))
    adversary = ADVERSARIES.make("random-target")
    result = play(game, LEARNERS.make("halving"), adversary, seed=2)
    assert result.complete

    class Liar(type(adversary)):
        """Reveals another target than it committed to. >>> 1"""

        def reveal(self):
            target, salt = super().reveal()
            return (target + 1) % 65, salt

    result = play(game, LEARNERS.make("halving"), Liar(), seed=2)
    assert result.status == "rule_violation:adversary:commitment"


AGENT_FILE = '''
from littlestone.learners.base import Learner


class AlwaysOne(Learner):
    """Predicts 1. >>> AlwaysOne().predict(0)"""

    id = "always-one"
    games = frozenset({"mistake-bound"})

    def __init__(self, bias: float = 1.0) -> None:
        self.bias = bias

    def predict(self, x):
        return self.bias

    def update(self, x, y):
        pass


class NotALearner:
    pass
'''


def test_agents_from_files(tmp_path):
    path = tmp_path / "student.py"
    path.write_text(textwrap.dedent(AGENT_FILE))
    learner = LEARNERS.make(f"{path}:AlwaysOne:bias=0.5")
    assert learner.params() == {"bias": 0.5}
    result = play(GameSpec(MISTAKE_BOUND, 20, make_class("singletons:n=4")), learner,
                  ADVERSARIES.make("random-target"), seed=0)
    assert result.complete and result.expected_mistakes == pytest.approx(10)
    (tmp_path / "broken.py").write_text("def oops(:\n")
    (tmp_path / "raises.py").write_text("raise RuntimeError('boom')\n")
    cases = [
        (f"{path}:Missing", "has no class 'Missing'"),
        (f"{path}:NotALearner", "is not a learner"),
        (f"{path}:AlwaysOne:bias=high", "must be a number"),
        (f"{path}:AlwaysOne:weight=1", "unknown parameter 'weight'"),
        (f"{tmp_path / 'none.py'}:X", "does not exist"),
        (f"{tmp_path / 'broken.py'}:X", "failed to import \\(line 1\\)"),
        (f"{tmp_path / 'raises.py'}:X", "RuntimeError: boom"),
        (f"{path}", "name the class"),
    ]
    for spec, message in cases:
        with pytest.raises(SpecError, match=message):
            LEARNERS.make(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [("nosuch", "unknown learner 'nosuch'"), ("perceptron:normalize=maybe", "true or false"),
     ("halving:beta=1", "unknown parameter 'beta'")],
)
def test_bad_learner_specs(spec, message):
    with pytest.raises(SpecError, match=message):
        LEARNERS.make(spec)


def test_bad_adversary_specs():
    with pytest.raises(SpecError, match="must be an integer"):
        ADVERSARIES.make("random-target:target=x")
    with pytest.raises(SpecError, match="unknown adversary"):
        ADVERSARIES.make("halving")


@pytest.mark.parametrize("spec", ["thresholds:n=300", "halfspaces:d=9,margin=0.1"])
def test_games_with_and_without_a_record_sink_agree(spec):
    game = GameSpec(MISTAKE_BOUND, 9000, make_class(spec))
    learner = "halving" if spec.startswith("thresholds") else "perceptron"
    quiet = play(game, LEARNERS.make(learner), ADVERSARIES.make("random-target"), seed=8)
    _, loud = records(game, learner, "random-target", 8, blocks=True)
    assert quiet == loud


def test_a_crash_inside_a_block_scores_the_rounds_before_it():
    game = GameSpec(MISTAKE_BOUND, 9000, make_class("thresholds:n=8"))
    result = play(game, CrashingLearner(at=5000), ADVERSARIES.make("random-target"), 0)
    assert result.status == "crash:learner:ZeroDivisionError"
    assert result.rounds == 4999


def test_long_halfspace_games_keep_their_history_in_a_file(monkeypatch):
    from littlestone import local

    monkeypatch.setattr(local, "HISTORY_IN_MEMORY", 0)
    game = GameSpec(MISTAKE_BOUND, 20_000, make_class("halfspaces:d=5,margin=0.2"))
    history = local.history_for(game)
    assert isinstance(history, local.FileHistory)
    in_memory = play(game, LEARNERS.make("perceptron"), ADVERSARIES.make("random-target"), 3)
    assert in_memory.complete

    class FlipsOneLabel(type(ADVERSARIES.make("random-target"))):
        """Flips the label of round 15,000. >>> 1"""

        def moves(self, n):
            block = super().moves(n)
            self.t = getattr(self, "t", 0)
            xs, ys = block
            if self.t <= 14_999 < self.t + len(ys):
                ys = list(ys)
                ys[14_999 - self.t] ^= 1
            self.t += len(ys)
            return xs, ys

    result = play(game, LEARNERS.make("perceptron"), FlipsOneLabel(), 3)
    assert result.status == "rule_violation:adversary:target_label"
    assert "round 15000" in result.message
