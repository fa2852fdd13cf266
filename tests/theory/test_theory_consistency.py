"""docs/theory.md's PAC rows (issue 31, item 2): consistency implies PAC at
m = ceil((1/epsilon)(ln |H| + ln(1/delta))), played with the notes' learners for monotone
conjunctions, k-CNF, decision lists and monotone disjunctions (and Consistent on finite
classes); and the consistency model's answer "there is no consistent concept" (issue 45).

Each check repeats R independent runs and counts failures (true error > epsilon). If
P(failure) <= delta holds, the count exceeds ``failure_allowance(R, delta)`` with
probability at most 1e-9 (games.pac.FALSE_FAILURE, an exact binomial tail): a false
failure of these tests is negligible. The same check at a fraction of m does fail,
which shows it can."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import numpy as np
import pytest

from littlestone.cli import main
from littlestone.games.classes import make_class
from littlestone.games.concepts import (
    DecisionList,
    clause_count,
    clause_table,
    decision_list_log_count,
    make_concepts,
)
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.pac import (
    FALSE_FAILURE,
    consistency_answer,
    consistency_run,
    distribution,
    failure_allowance,
    occam_sample_size,
)
from littlestone.learners import LEARNERS

EPSILON = DELTA = 0.1
REPEAT = 150

CASES = [  # class, learner, bernoulli q (0.5: uniform)
    ("monotone-conjunctions:n=10", "monotone-conjunction", 0.5),
    ("monotone-conjunctions:n=10", "monotone-conjunction", 0.97),
    ("monotone-conjunctions:n=14,literals=1", "monotone-conjunction", 0.9),
    ("k-cnf:n=6,k=2", "k-cnf", 0.5),
    ("k-cnf:n=6,k=2", "k-cnf", 0.8),
    ("k-cnf:n=8,k=1,clauses=4", "k-cnf", 0.7),
    ("decision-lists:n=8", "decision-list", 0.5),
    ("decision-lists:n=10,length=10", "decision-list", 0.7),
    ("thresholds:n=63", "consistent", None),
    ("intervals:n=12", "consistent", None),
    ("monotone-disjunctions:n=10", "elimination", 0.05),
    ("monotone-disjunctions:n=8", "elimination", 0.1),
]


def make(spec: str):
    name = spec.partition(":")[0]
    return (make_class(spec) if name in ("thresholds", "intervals", "monotone-disjunctions")
            else make_concepts(spec))


def runs(spec: str, learner_id: str, q: float | None, fraction: float = 1.0,
         repeat: int = REPEAT, seed: int = 0) -> tuple[np.ndarray, list[int], int]:
    """(true errors, training errors, m) of ``repeat`` runs at ``fraction`` of the bound."""
    hclass = make(spec)
    learner: Any = LEARNERS.make(learner_id)
    log_size = learner.log_hypotheses(GameSpec(MISTAKE_BOUND, 1, hclass))
    m = max(1, int(occam_sample_size(EPSILON, DELTA, log_size) * fraction))
    probs = distribution(hclass, "uniform" if q is None else "bernoulli", q=q or 0.5)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(repeat):
        target = (hclass.sample_target(rng) if hasattr(hclass, "sample_target")
                  else int(rng.integers(hclass.size)))
        out.append(consistency_run(LEARNERS.make(learner_id), hclass, target, probs, m, rng,
                                   seed=i))
    return np.array([r.error for r in out]), [r.training_errors for r in out], m


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "learner", "q"), CASES)
def test_consistency_is_epsilon_good_with_probability_one_minus_delta(spec, learner, q):
    errors, training, _ = runs(spec, learner, q)
    assert max(training) == 0  # consistent with every sample
    failures = int(np.sum(errors > EPSILON))
    assert failures <= failure_allowance(REPEAT, DELTA)
    assert errors.mean() <= EPSILON


@pytest.mark.parametrize(("spec", "learner", "q", "fraction"), [
    ("monotone-conjunctions:n=10", "monotone-conjunction", 0.97, 1 / 4),
    ("k-cnf:n=6,k=2", "k-cnf", 0.8, 1 / 16),
    ("decision-lists:n=8,length=8", "decision-list", 0.5, 1 / 16),
    ("monotone-disjunctions:n=8", "elimination", 0.1, 1 / 8),
])
def test_the_check_fails_at_a_fraction_of_the_sample(spec, learner, q, fraction):
    """The bound is loose (failure rates near 0 at m), but not by as much as this: the
    same check refutes P(failure) <= delta at m/4 (conjunctions, q = 0.97: each variable
    0 with probability 0.03), m/8 (disjunctions, q = 0.1) and m/16 (k-CNF, decision
    lists)."""
    errors, training, _ = runs(spec, learner, q, fraction)
    assert max(training) == 0
    assert int(np.sum(errors > EPSILON)) > failure_allowance(REPEAT, DELTA)


#: (learner, the class it answers for, the classes whose brute force decides the answer)
ANSWERS = [("monotone-conjunction", "monotone-conjunctions:n=4"),
           ("k-cnf:k=1", "conjunctions:n=4"), ("elimination", "monotone-disjunctions:n=4")]


@pytest.mark.parametrize(("learner_id", "spec"), ANSWERS)
def test_the_consistency_model_answers_none_exactly_when_no_concept_fits(learner_id, spec):
    """The PAC notes, Def. 3: output a concept of C consistent with S, or "there is no
    consistent concept". On 300 samples of 2..9 random labelled examples (3 seeds), the
    elimination learners answer None exactly when no concept of C (every one tried)
    fits S, and otherwise a hypothesis that fits S; both answers occur."""
    hclass = make_class(spec)
    concepts = np.array([hclass.evaluate(x) for x in range(hclass.domain_size)]).T
    answers = set()
    for seed in range(3):
        rng = np.random.default_rng(seed)
        for size in [2, 3, 4, 5, 6, 7, 8, 9] * 12 + [3] * 4:
            xs = rng.integers(0, hclass.domain_size, size=size)
            ys = rng.random(size) < 0.5
            exists = bool((concepts[:, xs] == ys).all(axis=1).any())
            answer = consistency_answer(LEARNERS.make(learner_id), hclass, xs, ys)
            assert (answer is not None) == exists, (xs, ys)
            if answer is not None:
                assert np.array_equal(answer[xs], ys)
            answers.add(exists)
    assert answers == {True, False}


def test_no_consistent_concept_is_an_answer_about_its_class():
    """The answer is relative to C: samples of x1 AND NOT x2 (n = 4) get "none" from the
    monotone learner, while k-cnf:k=1 (conjunctions with negations) finds one, so the
    monotone answer would be wrong for the larger class."""
    target = make_class("conjunctions:n=4")
    h = next(i for i in range(target.size) if target.hypothesis(i) == "x1 ∧ ¬x2")
    rng = np.random.default_rng(0)
    disagree = 0
    for _ in range(40):
        xs = rng.integers(0, 16, size=8)
        ys = np.array([bool(target.evaluate(int(x), np.array([h]))[0]) for x in xs])
        monotone = consistency_answer(LEARNERS.make("monotone-conjunction"),
                                      make_class("monotone-conjunctions:n=4"), xs, ys)
        general = consistency_answer(LEARNERS.make("k-cnf:k=1"), target, xs, ys)
        assert general is not None
        disagree += monotone is None
    assert disagree >= 10


def test_failure_allowance_is_a_binomial_tail():
    """Against the tail summed term by term with exact binomial coefficients."""

    def tail(c: int, repeat: int, delta: float) -> float:  # P(Binomial > c)
        return sum(math.comb(repeat, k) * delta**k * (1 - delta) ** (repeat - k)
                   for k in range(c + 1, repeat + 1))

    for repeat, delta in [(150, 0.1), (60, 0.05), (1000, 0.01)]:
        allowed = failure_allowance(repeat, delta)
        assert tail(allowed, repeat, delta) <= FALSE_FAILURE < tail(allowed - 1, repeat, delta)


def test_the_log_sizes_count_the_outputs():
    """ln |H| of each learner: 2^n monotone conjunctions; c = sum_{i <= k} C(n, i) 2^i
    distinct clauses (so at most 2^c k-CNFs); the decision lists on distinct variables
    with a default, counted by brute force for n <= 3, and the distinct functions among
    them fewer still."""
    for n in (1, 2, 5):
        game = GameSpec(MISTAKE_BOUND, 1, make_concepts(f"monotone-conjunctions:n={n},literals=0"))
        learner = LEARNERS.make("monotone-conjunction")
        assert learner.log_hypotheses(game) == pytest.approx(n * math.log(2))
    for n, k in [(3, 1), (3, 2), (4, 3), (6, 2)]:
        positive, negative = clause_table(n, k)
        assert len(positive) == clause_count(n, k)
        domain = np.arange(1 << n, dtype=np.int64)
        truth = ((domain[:, None] & positive) != 0) | ((~domain[:, None] & negative) != 0)
        assert len({column.tobytes() for column in truth.T}) == clause_count(n, k)
    for n in (1, 2, 3):
        lists = []
        for j in range(n + 1):
            for variables in itertools.permutations(range(n), j):
                for rules in itertools.product(itertools.product((0, 1), (0, 1)), repeat=j):
                    for default in (0, 1):
                        lists.append(DecisionList(tuple(
                            (v, value, out) for v, (value, out) in zip(variables, rules,
                                                                        strict=True)), default))
        assert len(lists) == round(math.exp(decision_list_log_count(n)))
        domain = np.arange(1 << n, dtype=np.int64)
        assert len({dl.labels(domain).tobytes() for dl in lists}) <= len(lists)


def test_the_greedy_list_is_consistent_whenever_a_list_is():
    rng = np.random.default_rng(5)
    concepts = make_concepts("decision-lists:n=12,length=12")
    for _ in range(40):
        target = concepts.sample_target(rng)
        xs = rng.integers(0, 1 << 12, size=int(rng.integers(1, 300)))
        learner = LEARNERS.make("decision-list")
        learner.start(GameSpec(MISTAKE_BOUND, len(xs), concepts), 0)
        ys = target.labels(xs)
        for x, y in zip(xs.tolist(), ys.tolist(), strict=True):
            learner.update(x, int(y))
        assert np.array_equal(learner.predict_all(xs), ys)
    xor = LEARNERS.make("decision-list")  # x1 XOR x2 is no decision list: no crash
    xor.start(GameSpec(MISTAKE_BOUND, 4, concepts), 0)
    for x in range(4):
        xor.update(x, (x & 1) ^ (x >> 1 & 1))
    assert xor.predict(3) in (0.0, 1.0)


def test_pac_command_consistency(capsys):
    assert main(["pac", "--class", "k-cnf:n=5,k=2", "--learner", "k-cnf", "--dist", "bernoulli",
                 "--q", "0.7", "--delta", "0.1", "--repeat", "40", "--json"]) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    c = clause_count(5, 2)
    assert data["mode"] == "consistency" and data["q"] == 0.7
    assert data["sample_bound"] == math.ceil((c * math.log(2) + math.log(10)) / 0.1)
    assert data["examples"] == data["sample_bound"] and data["training_errors"] == 0
    assert data["failures"] <= data["failures_allowed"]
    assert main(["pac", "--class", "decision-lists:n=6", "--learner", "decision-list",
                 "--examples", "3", "--repeat", "40", "--json"]) == 0
    small = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert small["examples"] == 3 and small["mean_error"] > 0.1


def test_pac_command_survivor_says_it_uses_the_floor(capsys):
    """The printed M may be unrounded (Weighted-Majority's is); the survival run uses its
    floor, and says so."""
    assert main(["pac", "--class", "thresholds:n=20", "--learner", "soa", "--repeat", "5",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert data["learner"].startswith("conservative:of=soa")
    assert data["mistake_bound_used"] == math.floor(data["mistake_bound"])
    assert data["survival"] == math.ceil(math.log((data["mistake_bound_used"] + 1) / 0.05) / 0.1)
    assert "floor" in data["survival_name"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--class", "k-cnf:n=6,k=3", "--learner", "k-cnf:k=2"], "at most k = 2"),
    (["--class", "thresholds:n=7", "--learner", "decision-list"], "boolean variables"),
    (["--class", "k-cnf:n=6,k=2", "--learner", "halving"], "cannot learn"),
    (["--class", "thresholds:n=7", "--learner", "halving", "--conversion", "consistency"],
     "counted class"),
    (["--class", "thresholds:n=7", "--learner", "consistent", "--dist", "bernoulli"],
     "boolean variables"),
    (["--class", "k-cnf:n=20,k=3", "--learner", "k-cnf"], "over the limit"),
    (["--class", "monotone-conjunctions:n=4", "--learner", "monotone-conjunction", "--q", "2"],
     "--q must be in [0, 1]"),
])
def test_pac_command_refuses_bad_input(capsys, argv, message):
    assert main(["pac", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
