"""The non-separable Perceptron (the Perceptron notes: M <= 1/gamma^2 + (2/gamma) TD_gamma)
on ``halfspaces:d=D,margin=G,agnostic=true``: the referee's rule for free labels, the
noisy-halfspace and noisy-margin adversaries, and the bound against both."""

from __future__ import annotations

import math

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.adversaries.nonseparable import NoisyHalfspace, expected_deficiency
from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.commitment import digest
from littlestone.games.errors import RuleViolation, SpecError
from littlestone.games.game import MISTAKE_BOUND, GameResult, GameSpec
from littlestone.games.mistake_bound import MistakeBoundReferee
from littlestone.learners import LEARNERS
from littlestone.local import play
from tests.support.servers import running_server


def agnostic(d: int, margin: float) -> GameSpec:
    return GameSpec(MISTAKE_BOUND, 0, make_class(f"halfspaces:d={d},margin={margin},"
                                                 "agnostic=true"))


def game_of(d: int, margin: float, rounds: int) -> GameSpec:
    return GameSpec(MISTAKE_BOUND, rounds, agnostic(d, margin).hclass)


def quadratic_root(gamma: float, deficiency: float) -> float:
    """The largest M with sqrt(M) >= gamma M - TD: the sharper form of the bound."""
    return ((1 + math.sqrt(1 + 4 * gamma * deficiency)) / (2 * gamma)) ** 2


def played(game: GameSpec, adversary: str, seed: int) -> tuple[GameResult, list[np.ndarray],
                                                                list[int]]:
    kept: list = []
    result = play(game, LEARNERS.make("perceptron"), ADVERSARIES.make(adversary), seed,
                  on_record=kept.append)
    return result, [r.x for r in kept], [r.y for r in kept]


def hinge(target: np.ndarray, xs: list[np.ndarray], ys: list[int], gamma: float) -> float:
    """TD_gamma(target) of the played sequence, computed here round by round."""
    return sum(max(0.0, gamma - (1 if y else -1) * float(target @ x))
               for x, y in zip(xs, ys, strict=True))


# -- the rule ---------------------------------------------------------------------------


def test_the_agnostic_spec_round_trips_and_is_refused_without_a_margin():
    hclass = make_class("halfspaces:d=3,margin=0.25,agnostic=yes")
    assert hclass.spec == "halfspaces:d=3,margin=0.25,agnostic=true"
    assert make_class(hclass.spec).agnostic
    assert make_class("halfspaces:d=3,margin=0.25,agnostic=false").spec == (
        "halfspaces:d=3,margin=0.25")
    with pytest.raises(SpecError, match="must then be > 0"):
        make_class("halfspaces:d=3,margin=0,agnostic=true")
    with pytest.raises(SpecError, match="not true or false"):
        make_class("halfspaces:d=3,agnostic=2")


def labelled_against_target(agnostic_class: bool) -> MistakeBoundReferee:
    """Three rounds on e_1, the last labelled against the committed target w = e_1."""
    spec = "halfspaces:d=2,margin=0.5" + (",agnostic=true" if agnostic_class else "")
    hclass = make_class(spec)
    referee = MistakeBoundReferee(hclass, rounds=3, seed=0)
    salt = bytes(16)
    target = np.array([1.0, 0.0])
    referee.commit(digest(hclass, target, salt))
    for y in (1, 1, 0):
        referee.instance([1.0, 0.0])
        referee.prediction(1.0)
        referee.label(y)
    return referee


def test_a_label_against_the_target_is_measured_not_refused_on_the_agnostic_class():
    referee = labelled_against_target(True)
    referee.reveal(np.array([1.0, 0.0]), bytes(16))
    result = referee.result()
    # rounds 1, 2: margin 1 >= 0.5, no deficiency; round 3: 0.5 - (-1) = 1.5
    assert result.status == "complete"
    assert result.extra == {"hinge_deficiency": 1.5, "target_mistakes": 1,
                            "target": [1.0, 0.0]}  # the revealed target
    assert result.mistakes == 1 and result.regret == 0  # against the revealed comparator


def test_the_same_label_still_breaks_the_realizable_class():
    referee = labelled_against_target(False)
    with pytest.raises(RuleViolation):
        referee.reveal(np.array([1.0, 0.0]), bytes(16))
    assert referee.result().status == "rule_violation:adversary:target_label"


@pytest.mark.parametrize(("target", "salt", "status"), [
    (np.array([0.0, 1.0]), bytes(16), "rule_violation:adversary:commitment"),
    (np.array([2.0, 0.0]), bytes(16), "rule_violation:adversary:reveal"),
    (np.array([1.0, 0.0]), bytes(4), "illegal_move:adversary:salt"),
    (None, bytes(16), "rule_violation:adversary:reveal"),
])
def test_a_bad_reveal_still_ends_the_agnostic_game_against_the_adversary(target, salt, status):
    referee = labelled_against_target(True)
    with pytest.raises((RuleViolation, ValueError)):
        referee.reveal(target, salt)
    result = referee.result()
    assert result.status == status and "hinge_deficiency" not in result.extra


def test_no_reveal_means_no_comparator_and_no_bound():
    game = game_of(4, 0.5, 5)

    class Silent(NoisyHalfspace):
        def reveal(self):
            return None

    result = play(game, LEARNERS.make("perceptron"), Silent(), seed=0)
    assert ":adversary:" in result.status  # committed, so a reveal was due
    assert result.bound is None


# -- the bound ----------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "margin", "rate", "rounds"), [
    (5, 0.3, 0.05, 400), (20, 0.2, 0.1, 2000), (50, 0.1, 0.2, 3000), (3, 0.5, 0.3, 1000),
])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_perceptron_keeps_the_non_separable_bound_against_label_noise(
        d, margin, rate, rounds, seed):
    result, xs, ys = played(game_of(d, margin, rounds), f"noisy-halfspace:rate={rate}", seed)
    assert result.status == "complete"
    deficiency = result.extra["hinge_deficiency"]
    # the referee measured the revealed target's deficiency, as computed here
    assert deficiency == pytest.approx(hinge(result.revealed, xs, ys, margin), rel=1e-9)
    assert deficiency == pytest.approx(expected_deficiency(rounds, rate, margin, d), rel=0.3)
    assert result.extra["target_mistakes"] > 0  # the noise is real
    assert result.bound is not None
    assert result.bound.value == pytest.approx(1 / margin**2 + 2 * deficiency / margin)
    assert result.mistakes <= quadratic_root(margin, deficiency) <= result.bound.value + 1e-9
    assert result.mistakes > result.extra["target_mistakes"] / 2  # it does not learn the noise


@pytest.mark.parametrize(("d", "margin"), [(5, 0.5), (12, 0.3), (101, 0.1)])
@pytest.mark.parametrize("extra", [0, 1, 50, 2000])
def test_the_noisy_margin_adversary_forces_every_round_near_the_bound(d, margin, extra):
    m = math.floor(1 / margin**2 + 1e-9)
    rounds = m + extra
    result, xs, ys = played(game_of(d, margin, rounds), "noisy-margin", seed=extra)
    deficiency = result.extra["hinge_deficiency"]
    assert result.mistakes == rounds  # every round, against any deterministic learner
    assert deficiency == pytest.approx(margin * extra + hinge(result.revealed, xs[:m], ys[:m],
                                                              margin), abs=1e-9)
    assert result.mistakes <= quadratic_root(margin, deficiency) <= result.bound.value + 1e-9
    assert result.bound.value == pytest.approx(1 / margin**2 + 2 * deficiency / margin)
    if 1 / margin**2 == m:  # margin exactly 1/sqrt(m): the first m rounds cost nothing
        assert deficiency == pytest.approx(margin * extra)
        if extra == 0:
            assert result.mistakes == pytest.approx(result.bound.value)  # tight
    if extra >= 50 * m:  # within 10% of the sharper form of the bound
        assert result.mistakes >= 0.9 * quadratic_root(margin, deficiency)


def test_a_separable_stream_on_the_agnostic_class_has_no_deficiency():
    result, _, _ = played(game_of(10, 0.3, 500), "random-target", seed=3)
    assert result.extra == {"hinge_deficiency": 0.0, "target_mistakes": 0, "radius": 1.0,
                            "updates": result.mistakes, "target": result.revealed.tolist()}
    assert result.bound.value == pytest.approx(1 / 0.3**2)


@pytest.mark.parametrize("adversary", ["noisy-halfspace", "noisy-margin"])
def test_both_adversaries_need_the_agnostic_class(adversary):
    realizable = GameSpec(MISTAKE_BOUND, 5, make_class("halfspaces:d=8,margin=0.5"))
    assert "agnostic=true" in ADVERSARIES.make(adversary).unsupported(realizable)
    assert ADVERSARIES.make(adversary).unsupported(game_of(8, 0.5, 5)) is None


def test_noisy_margin_needs_a_spare_coordinate():
    assert "spare coordinate" in ADVERSARIES.make("noisy-margin").unsupported(
        game_of(4, 0.5, 5))


async def test_the_wire_measures_and_prints_the_same(tmp_path):
    """Over the network, with the learner and then the adversary remote: the same
    deficiency and bound as the local re-play of the same game key."""
    game = game_of(16, 0.3, 300)
    async with running_server(tmp_path) as server:
        as_learner = await play_remote(server.url, LEARNERS.make("perceptron"),
                                       "noisy-halfspace:rate=0.2", game, seed=5,
                                       token=server.token)
        as_adversary = await play_remote(server.url, ADVERSARIES.make("noisy-margin"),
                                         "perceptron", game, seed=6, token=server.token)
    for out, seed, adversary in ((as_learner, 5, "noisy-halfspace:rate=0.2"),
                                 (as_adversary, 6, "noisy-margin")):
        here = play(game, LEARNERS.make("perceptron"), ADVERSARIES.make(adversary), seed,
                    key=bytes.fromhex(out["game_key"]))
        assert out["status"] == "complete"
        assert out["hinge_deficiency"] == pytest.approx(here.extra["hinge_deficiency"])
        assert out["mistakes"] == here.mistakes and out["regret"] == here.regret
        assert here.bound is not None and out["bound"] == pytest.approx(here.bound.value)
