from __future__ import annotations

import contextlib

import numpy as np
import pytest

from littlestone.games import commitment
from littlestone.games.classes import FiniteClass, HalfspaceClass, make_class
from littlestone.games.errors import IllegalMove, OutOfTurn, RuleViolation
from littlestone.games.mistake_bound import MistakeBoundReferee, Phase


def referee(spec: str = "thresholds:n=8", rounds: int = 5, seed: int = 0) -> MistakeBoundReferee:
    return MistakeBoundReferee(make_class(spec), rounds, seed)


def test_a_round_and_its_record():
    ref = referee()
    assert ref.phase is Phase.INSTANCE
    assert ref.instance(np.int64(3)) == 3
    ref.prediction(1)
    record = ref.label(0)
    assert (record.t, record.x, record.p, record.y) == (1, 3, 1.0, 0)
    assert record.prediction == 1 and record.mistake and record.loss == 1.0
    assert (record.mistakes, record.expected_mistakes) == (1, 1.0)
    assert ref.version_space_size == 4  # a <= 3


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan"), float("inf"), "0.5", None, True, [0.5]])
def test_bad_prediction_is_an_illegal_move_by_the_learner(p):
    ref = referee()
    ref.instance(2)
    with pytest.raises(IllegalMove) as info:
        ref.prediction(p)
    assert info.value.role == "learner"
    assert ref.result().status.startswith("illegal_move:learner:")
    assert ref.over


@pytest.mark.parametrize("y", [2, -1, 0.5, "1", None, True])
def test_bad_label_is_an_illegal_move_by_the_adversary(y):
    ref = referee()
    ref.instance(2)
    ref.prediction(0.0)
    with pytest.raises(IllegalMove) as info:
        ref.label(y)
    assert info.value.role == "adversary"
    assert ref.result().status == "illegal_move:adversary:label_range"


@pytest.mark.parametrize("x", [8, -1, 2.5, "1", None])
def test_instance_outside_the_domain(x):
    ref = referee()
    with pytest.raises(RuleViolation):
        ref.instance(x)
    assert ref.result().status == "rule_violation:adversary:instance_domain"


def test_moves_out_of_turn():
    ref = referee()
    with pytest.raises(OutOfTurn):
        ref.prediction(0.5)
    assert ref.result().status == "out_of_turn:learner:prediction"
    ref = referee()
    ref.instance(1)
    with pytest.raises(OutOfTurn):
        ref.instance(2)
    # once over, nothing changes the status
    with pytest.raises(OutOfTurn):
        ref.label(0)
    assert ref.result().status == "out_of_turn:adversary:instance"


def test_empty_version_space_detected_exactly():
    ref = referee("thresholds:n=8", rounds=4)
    ref.instance(5)
    ref.prediction(0.0)
    ref.label(1)  # {6, 7, 8}
    ref.instance(6)
    ref.prediction(0.0)
    ref.label(0)  # {6}
    assert ref.version_space_size == 1
    ref.instance(5)
    ref.prediction(1.0)
    with pytest.raises(RuleViolation) as info:
        ref.label(0)
    assert info.value.role == "adversary"
    result = ref.result()
    assert result.status == "rule_violation:adversary:empty_version_space"
    assert result.rounds == 2


def test_the_coin_is_the_referees():
    rounds = 20000
    ref = referee("singletons:n=2", rounds=rounds, seed=5)
    mistakes = 0
    for _ in range(rounds):
        ref.instance(0)
        ref.prediction(0.3)
        mistakes += ref.label(0).mistake
    # drawn 1 with probability 0.3: 4 standard deviations is ~0.013
    assert abs(mistakes / rounds - 0.3) < 0.013
    result = ref.result()
    assert result.complete and result.rounds == rounds
    assert result.expected_mistakes == pytest.approx(0.3 * rounds)
    # deterministic answers are never re-drawn
    ref = referee("singletons:n=2", rounds=100, seed=5)
    for i in range(100):
        ref.instance(0)
        ref.prediction(float(i % 2))
        assert ref.label(0).prediction == i % 2


def test_same_seed_same_coins():
    def coins(seed):
        ref = referee("singletons:n=2", rounds=50, seed=seed)
        out = []
        for _ in range(50):
            ref.instance(1)
            ref.prediction(0.5)
            out.append(ref.label(1).prediction)
        return out

    assert coins(1) == coins(1)
    assert coins(1) != coins(2)


def test_queued_rounds_equal_single_moves():
    hclass = make_class("thresholds:n=64")
    xs = [5, 40, 12, 33, 60, 1]
    ys = [int(x < 30) for x in xs]
    ps = [0.0, 0.25, 1.0, 0.5, 0.75, 1]
    one = MistakeBoundReferee(hclass, len(xs), seed=9)
    singles = []
    for x, y, p in zip(xs, ys, ps, strict=True):
        one.instance(x)
        one.prediction(p)
        singles.append(one.label(y))
    two = MistakeBoundReferee(hclass, len(xs), seed=9)
    two.queue(xs[:4], ys[:4])
    queued = [two.queued_round(p) for p in ps[:4]]
    two.queue(xs[4:], ys[4:])
    queued += [two.queued_round(p) for p in ps[4:]]
    assert queued == singles
    assert one.result() == two.result()


def test_queue_is_validated():
    ref = referee("thresholds:n=8", rounds=5)
    with pytest.raises(IllegalMove):
        ref.queue([1, 2], [0])
    ref = referee("thresholds:n=8", rounds=5)
    with pytest.raises(IllegalMove):
        ref.queue([1, 2], [0, 2])
    ref = referee("thresholds:n=8", rounds=5)
    with pytest.raises(RuleViolation):
        ref.queue([1, 99], [0, 0])
    ref = referee("thresholds:n=8", rounds=2)
    with pytest.raises(IllegalMove):
        ref.queue([1, 2, 3], [0, 0, 0])  # more than the rounds left
    ref = referee("thresholds:n=8", rounds=2)
    ref.queue([1], [0])
    with pytest.raises(IllegalMove):
        ref.queued_round(2.0)


def halfspace_game(rounds: int, margin: float = 0.2, d: int = 4, seed: int = 0):
    hclass = make_class(f"halfspaces:d={d},margin={margin}")
    assert isinstance(hclass, HalfspaceClass)
    rng = np.random.default_rng(seed)
    w = hclass.sample_target(rng)
    xs = hclass.sample_instances(rng, w, rounds)
    return hclass, w, xs


def test_halfspaces_need_a_target_revealed_at_the_end():
    hclass, w, xs = halfspace_game(3)
    labels = [hclass.label(w, x) for x in xs]
    # an adaptive adversary (no commitment) reveals a witness: checked all the same
    ref = MistakeBoundReferee(hclass, 3, 0)
    for x, y in zip(xs, labels, strict=True):
        ref.instance(x)
        ref.prediction(0.0)
        ref.label(y)
    assert ref.reveal_due and ref.phase is Phase.REVEAL and ref.result().status == "incomplete"
    ref.reveal(w)
    assert ref.result().complete
    # no witness at all
    ref = MistakeBoundReferee(hclass, 3, 0)
    for x, y in zip(xs, labels, strict=True):
        ref.instance(x)
        ref.prediction(0.0)
        ref.label(y)
    with pytest.raises(RuleViolation):
        ref.reveal(None)
    assert ref.result().status == "rule_violation:adversary:reveal"
    # a witness that contradicts a label
    ref = MistakeBoundReferee(hclass, 3, 0)
    for x, y in zip(xs, labels, strict=True):
        ref.instance(x)
        ref.prediction(0.0)
        ref.label(1 - y)
    with pytest.raises(RuleViolation, match="disagrees"):
        ref.reveal(w)


def play_halfspaces(hclass, xs, labels, commit_to, reveal, salt=b"s" * 16):
    ref = MistakeBoundReferee(hclass, len(xs), 0)
    ref.commit(commitment.digest(hclass, commit_to, salt))
    for x, y in zip(xs, labels, strict=True):
        ref.instance(x)
        ref.prediction(0.5)
        ref.label(y)
    assert ref.phase is Phase.REVEAL
    ref.reveal(reveal, salt)
    return ref


def test_honest_halfspace_game_passes_the_reveal():
    hclass, w, xs = halfspace_game(50)
    labels = [hclass.label(w, x) for x in xs]
    ref = play_halfspaces(hclass, xs, labels, w, w)
    assert ref.result().complete


def test_reveal_catches_a_changed_target_a_wrong_label_and_a_thin_margin():
    hclass, w, xs = halfspace_game(30)
    labels = [hclass.label(w, x) for x in xs]
    other = hclass.sample_target(np.random.default_rng(99))
    with pytest.raises(RuleViolation, match="does not match"):
        play_halfspaces(hclass, xs, labels, w, other)
    flipped = labels.copy()
    flipped[7] = 1 - flipped[7]
    with pytest.raises(RuleViolation, match="round 8"):
        play_halfspaces(hclass, xs, flipped, w, w)
    # an instance too close to the boundary of w
    thin = xs.copy()
    u = np.zeros(4)
    u[np.argmin(np.abs(w))] = 1.0
    u -= (u @ w) * w
    u /= np.linalg.norm(u)
    near = 0.05 * w + np.sqrt(1 - 0.05**2) * u
    thin[3] = near
    labels_thin = [hclass.label(w, x) for x in thin]
    with pytest.raises(RuleViolation, match="margin"):
        play_halfspaces(hclass, thin, labels_thin, w, w)
    with pytest.raises(IllegalMove, match="salt"):
        play_halfspaces(hclass, xs, labels, w, w, salt=b"short")


def test_finite_commitment():
    hclass = make_class("thresholds:n=8")
    assert isinstance(hclass, FiniteClass)
    salt = bytes(range(16))
    ref = MistakeBoundReferee(hclass, 2, 0)
    ref.commit(commitment.digest(hclass, 3, salt))
    for x in (1, 6):
        ref.instance(x)
        ref.prediction(0.0)
        ref.label(int(x < 3))
    ref.reveal(3, salt)
    assert ref.result().complete
    # labels consistent with a = 4 too, but the commitment was to 3: revealing 4 fails
    ref = MistakeBoundReferee(hclass, 1, 0)
    ref.commit(commitment.digest(hclass, 3, salt))
    ref.instance(1)
    ref.prediction(0.0)
    ref.label(1)
    with pytest.raises(RuleViolation):
        ref.reveal(4, salt)
    # committed to 3 but labelled against it
    ref = MistakeBoundReferee(hclass, 1, 0)
    ref.commit(commitment.digest(hclass, 3, salt))
    ref.instance(5)
    ref.prediction(0.0)
    ref.label(1)
    with pytest.raises(RuleViolation, match="disagrees"):
        ref.reveal(3, salt)
    with pytest.raises(OutOfTurn):
        ref.commit(commitment.digest(hclass, 3, salt))


def test_commit_only_before_round_one():
    ref = referee()
    ref.instance(1)
    ref.prediction(0.0)
    ref.label(0)
    with pytest.raises(OutOfTurn):
        ref.commit(bytes(32))
    ref = referee()
    with pytest.raises(IllegalMove):
        ref.commit(b"short")


def test_zero_rounds_is_over_at_once():
    ref = referee(rounds=0)
    assert ref.over and ref.result().complete and ref.result().rounds == 0


def scored_one_at_a_time(hclass, xs, ys, ps, seed=3):
    ref = MistakeBoundReferee(hclass, len(xs), seed)
    ref.queue(xs, ys)
    out = []
    for p in ps:
        try:
            out.append(ref.queued_round(p))
        except (IllegalMove, RuleViolation):
            break
    return out, ref.result()


def scored_at_once(hclass, xs, ys, ps, seed=3):
    ref = MistakeBoundReferee(hclass, len(xs), seed)
    ref.queue(xs, ys)
    out = []
    with contextlib.suppress(IllegalMove, RuleViolation):
        out = ref.score_queued(ps)
    return out, ref.result()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_scoring_equals_round_by_round(seed):
    rng = np.random.default_rng(seed)
    hclass = make_class("thresholds:n=500")
    n = 9000  # crosses two coin blocks
    target = 250
    xs = rng.integers(0, 500, n).tolist()
    ys = [int(x < target) for x in xs]
    ps = rng.choice([0.0, 1.0, 0.5, 0.1], size=n).tolist()
    one, r1 = scored_one_at_a_time(hclass, xs, ys, ps, seed)
    many, r2 = scored_at_once(hclass, xs, ys, ps, seed)
    assert one == many and r1 == r2 and r1.complete


@pytest.mark.parametrize("bad", [1.5, float("nan"), "0.5", True, None])
def test_vectorised_scoring_stops_at_a_bad_prediction(bad):
    hclass = make_class("thresholds:n=8")
    xs, ys = [1, 2, 3, 4, 5], [1, 1, 1, 0, 0]
    ps = [1.0, 0.0, bad, 1.0, 1.0]
    one, r1 = scored_one_at_a_time(hclass, xs, ys, ps)
    _, r2 = scored_at_once(hclass, xs, ys, ps)
    assert r1 == r2
    assert r2.rounds == 2 and r2.status.startswith("illegal_move:learner:")
    assert len(one) == 2


def test_vectorised_scoring_stops_where_the_version_space_empties():
    hclass = make_class("thresholds:n=8")
    xs, ys = [5, 6, 5, 1], [1, 0, 0, 1]  # round 3 contradicts rounds 1-2
    ps = [0.0, 1.0, 0.5, 0.5]
    _, r1 = scored_one_at_a_time(hclass, xs, ys, ps)
    _, r2 = scored_at_once(hclass, xs, ys, ps)
    assert r1 == r2
    assert r2.status == "rule_violation:adversary:empty_version_space" and r2.rounds == 2
    # a bad p at the same round wins: the prediction comes before the label
    _, r3 = scored_at_once(hclass, xs, ys, [0.0, 1.0, 7.0, 0.5])
    assert r3.status == "illegal_move:learner:p_range"
