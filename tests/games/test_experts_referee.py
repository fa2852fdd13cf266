from __future__ import annotations

import numpy as np
import pytest

from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.errors import IllegalMove, OutOfTurn, RuleViolation
from littlestone.games.experts import WEIGHT_TOLERANCE, ExpertsReferee


def test_costs_game_scores_regret_exactly():
    rng = np.random.default_rng(0)
    d, rounds = 5, 200
    ref = ExpertsReferee(d, rounds, seed=1)
    totals = np.zeros(d)
    expected = realised = 0.0
    for _ in range(rounds):
        w = rng.random(d)
        w /= w.sum()
        ref.weights(w)
        v = rng.random(d)
        record = ref.costs(v)
        totals += v
        expected += float(w @ v)
        realised += v[record.drawn]
        assert record.expected_loss == pytest.approx(w @ v)
        assert record.regret == pytest.approx(realised - totals.min())
    result = ref.result()
    assert result.complete and result.rounds == rounds
    assert result.best_expert_loss == pytest.approx(totals.min())
    assert result.expected_regret == pytest.approx(expected - totals.min())
    assert result.regret == pytest.approx(realised - totals.min())


def test_draw_follows_the_weights():
    rounds = 6000
    ref = ExpertsReferee(3, rounds, seed=2)
    w = np.array([0.2, 0.0, 0.8])
    counts = np.zeros(3)
    for _ in range(rounds):
        ref.weights(w)
        counts[ref.costs(np.zeros(3)).drawn] += 1
    assert counts[1] == 0
    assert abs(counts[0] / rounds - 0.2) < 0.03


def test_advice_and_label():
    ref = ExpertsReferee(3, 2, seed=0)
    ref.advice([0.0, 1.0, 1.0])
    ref.weights([1.0, 0.0, 0.0])
    record = ref.label(1)
    assert record.costs.tolist() == [1.0, 0.0, 0.0]
    assert (record.loss, record.expected_loss, record.p) == (1.0, 1.0, 0.0)
    ref.advice([0.0, 1.0, 1.0])
    ref.prediction(0.25)
    record = ref.label(0)
    assert record.expected_loss == 0.25 and record.weights is None
    result = ref.result()
    assert result.best_expert_loss == 1.0  # each expert erred once


def test_class_derived_experts():
    hclass = make_class("thresholds:n=4")
    assert isinstance(hclass, FiniteClass)
    ref = ExpertsReferee(5, 1, seed=0, hclass=hclass)
    with pytest.raises(IllegalMove):
        ref.advice([0, 0, 0, 0, 0])
    ref = ExpertsReferee(5, 1, seed=0, hclass=hclass)
    ref.instance(2)
    assert ref.current_advice is not None
    assert ref.current_advice.tolist() == [0, 0, 0, 1, 1]
    ref.weights(np.full(5, 0.2))
    assert ref.induced_prediction == pytest.approx(0.4)
    record = ref.label(1)
    assert record.costs.tolist() == [1, 1, 1, 0, 0]
    with pytest.raises(RuleViolation):
        ExpertsReferee(5, 1, seed=0, hclass=hclass).instance(9)


@pytest.mark.parametrize(
    "weights",
    [[0.5, 0.6], [0.5, 0.5, 0.0], [1.2, -0.2], [float("nan"), 1.0], "ab", [[0.5, 0.5]],
     [0.5, 0.5 + 10 * WEIGHT_TOLERANCE]],
)
def test_bad_weights(weights):
    ref = ExpertsReferee(2, 3, seed=0)
    with pytest.raises(IllegalMove) as info:
        ref.weights(weights)
    assert info.value.role == "learner"
    assert ref.result().status.startswith("illegal_move:learner:weights")


def test_weights_within_tolerance_are_renormalised():
    ref = ExpertsReferee(2, 1, seed=0)
    ref.weights([0.5, 0.5 + WEIGHT_TOLERANCE / 2])
    assert ref.costs([1.0, 1.0]).weights.sum() == pytest.approx(1.0, abs=1e-15)


def test_weights_are_copied():
    ref = ExpertsReferee(2, 1, seed=0)
    w = np.array([0.5, 0.5])
    ref.weights(w)
    w[:] = [1.0, 0.0]
    assert ref.costs([0.0, 1.0]).weights.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("costs", [[0.5, 1.5], [0.5], [-0.1, 0.0], [float("inf"), 0.0]])
def test_bad_costs(costs):
    ref = ExpertsReferee(2, 1, seed=0)
    ref.weights([0.5, 0.5])
    with pytest.raises(IllegalMove) as info:
        ref.costs(costs)
    assert info.value.role == "adversary"


def test_out_of_turn_and_missing_advice():
    ref = ExpertsReferee(2, 2, seed=0)
    with pytest.raises(OutOfTurn):
        ref.costs([0, 0])
    ref = ExpertsReferee(2, 2, seed=0)
    with pytest.raises(IllegalMove, match="no advice"):
        ref.prediction(0.5)
    ref = ExpertsReferee(2, 2, seed=0)
    ref.weights([0.5, 0.5])
    with pytest.raises(IllegalMove, match="no advice"):
        ref.label(1)
    ref = ExpertsReferee(2, 2, seed=0)
    ref.advice([0, 1])
    ref.prediction(0.5)
    with pytest.raises(IllegalMove, match="send a label"):
        ref.costs([0, 1])


@pytest.mark.parametrize("d", [3, 5000, 100_003])
def test_two_stage_draw_matches_the_cumulative_sum(d):
    from littlestone.games.experts import draw_index

    rng = np.random.default_rng(d)
    w = rng.random(d) ** 4
    w /= w.sum()
    cumulative = np.cumsum(w)
    for u in [*list(rng.random(200)), 0.0, 1 - 1e-16]:
        expected = min(int(np.searchsorted(cumulative, u * cumulative[-1], side="right")), d - 1)
        got = draw_index(w, float(u))
        # equal, or a neighbour where the two sums round differently at a boundary
        assert got == expected or (abs(got - expected) == 1
                                    and abs(cumulative[min(got, expected)] - u) < 1e-9)
        assert w[got] > 0 or d == 3


def test_sequence_commitment():
    from littlestone.games.commitment import SequenceHash

    salt = bytes(range(16))
    moves = [([0.0, 1.0], 1), ([1.0, 1.0], 0)]
    committed = SequenceHash("experts:d=2")
    for advice, y in moves:
        committed.add_advice(np.array(advice))
        committed.add(y)

    def play_moves(moves, salt=salt):
        ref = ExpertsReferee(2, len(moves), seed=0)
        ref.commit(committed.digest(bytes(range(16))))
        for advice, y in moves:
            ref.advice(advice)
            ref.weights([0.5, 0.5])
            ref.label(y)
        ref.reveal(None, salt)
        return ref.result()

    assert play_moves(moves).complete
    with pytest.raises(RuleViolation, match="committed sequence"):
        play_moves([([0.0, 1.0], 1), ([1.0, 1.0], 1)])  # a label changed
    with pytest.raises(RuleViolation, match="committed sequence"):
        play_moves(moves, salt=bytes(16))


def test_target_commitment_in_the_experts_game():
    from littlestone.games.commitment import digest

    hclass = make_class("thresholds:n=8")
    assert isinstance(hclass, FiniteClass)
    salt = bytes(16)

    def play_labels(labels, reveal):
        ref = ExpertsReferee(9, len(labels), seed=0, hclass=hclass)
        ref.commit(digest(hclass, 3, salt))
        for x, y in labels:
            ref.instance(x)
            ref.prediction(0.5)
            ref.label(y)
        ref.reveal(reveal, salt)
        return ref.result()

    honest = [(1, 1), (5, 0)]  # h_3: [x < 3]
    assert play_labels(honest, 3).complete
    with pytest.raises(RuleViolation, match="does not match"):
        play_labels(honest, 4)
    with pytest.raises(RuleViolation, match="disagrees"):
        play_labels([(1, 1), (2, 0)], 3)
