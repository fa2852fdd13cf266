"""docs/theory.md's rows for the representations of the PAC notes and the halfspace notes
(issue 45): a k-term DNF is a k-CNF, so the k-CNF learner learns it (its mistake bound
and its PAC sample hold); a k-DNF is learnt by the dual reduction; conjunctions,
disjunctions and decision lists are halfspaces, the lists with weights decreasing by 2.
Each is checked on every point of {0, 1}^n or played on several seeds and sizes, and a
weak variant (a smaller k, no dual, a base below 2) fails."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from littlestone.games.concepts import KCNF, DecisionList, DecisionLists, clause_count
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.pac import failure_allowance, hypothesis_labels, occam_sample_size
from littlestone.games.representations import (
    Complement,
    cnf_labels,
    conjunction_halfspace,
    decision_list_halfspace,
    disjunction_halfspace,
    dnf_complement_as_cnf,
    dnf_labels,
    halfspace_labels,
    term_dnf_as_cnf,
)
from littlestone.learners.consistency import KCNFLearner

EPSILON = DELTA = 0.1
RUNS = 30


def random_terms(n: int, terms: int, literals: int,
                 rng: np.random.Generator) -> list[tuple[int, int]]:
    """``terms`` ANDs of ``literals`` literals on distinct variables, random signs."""
    out = []
    for _ in range(terms):
        variables = rng.choice(n, size=literals, replace=False)
        signs = rng.integers(0, 2, size=literals)
        out.append((sum(1 << int(v) for v, s in zip(variables, signs, strict=True) if s),
                    sum(1 << int(v) for v, s in zip(variables, signs, strict=True) if not s)))
    return out


def play_online(learner, hclass, truth: np.ndarray, rng: np.random.Generator) -> int:
    """Mistakes on the domain in a random order, twice (each instance twice)."""
    learner.start(GameSpec(MISTAKE_BOUND, 2 * len(truth), hclass), 0)
    mistakes = 0
    for x in np.concatenate([rng.permutation(len(truth)), rng.permutation(len(truth))]):
        mistakes += int((learner.predict(int(x)) >= 0.5) != truth[x])
        learner.update(int(x), int(truth[x]))
    return mistakes


def pac_runs(make_learner, hclass, truth: np.ndarray, m: int,
             rng: np.random.Generator) -> tuple[int, int]:
    """(failures, runs with a training error) over RUNS samples of m uniform examples."""
    failures = inconsistent = 0
    for run in range(RUNS):
        learner = make_learner()
        learner.start(GameSpec(MISTAKE_BOUND, m, hclass), run)
        xs = rng.integers(0, len(truth), size=m)
        for x in xs.tolist():
            learner.update(x, int(truth[x]))
        output = hypothesis_labels(learner, len(truth))
        failures += int(np.mean(output != truth) > EPSILON)
        inconsistent += int(np.any(output[xs] != truth[xs]))
    return failures, inconsistent


def literal_counts(clauses: tuple[np.ndarray, np.ndarray]) -> Sequence[int]:
    return [bin(int(p)).count("1") + bin(int(q)).count("1") for p, q in zip(*clauses,
                                                                             strict=True)]


@pytest.mark.parametrize(("n", "k"), [(5, 2), (7, 2), (6, 3)])
def test_a_k_term_dnf_is_learnt_as_a_k_cnf(n, k):
    """3 random k-term DNF targets (terms of 2-3 literals) a size: the k-CNF of the product
    equals the DNF on all of {0, 1}^n, with clauses of <= k literals; the k-CNF learner
    makes <= c mistakes on it (each instance twice, a random order), and at m =
    ceil((1/epsilon)(c ln 2 + ln(1/delta))) fails no more than delta allows (30 runs),
    consistent on every sample. The weak variant, the (k-1)-CNF learner, is inconsistent
    on some sample of every target and fails far more often than delta allows."""
    hclass = KCNF(n, k)
    domain = np.arange(1 << n, dtype=np.int64)
    c = clause_count(n, k)
    m = occam_sample_size(EPSILON, DELTA, c * np.log(2))
    for seed in range(3):
        rng = np.random.default_rng(seed)
        terms = random_terms(n, k, 2 + seed % 2, rng)
        clauses = term_dnf_as_cnf(terms)
        truth = dnf_labels(terms, domain)
        assert np.array_equal(cnf_labels(clauses, domain), truth)
        assert np.array_equal(hclass.labels(clauses, domain), truth)
        assert max(literal_counts(clauses)) <= k
        assert play_online(KCNFLearner(k=k), hclass, truth, rng) <= c
        failures, inconsistent = pac_runs(lambda: KCNFLearner(k=k), hclass, truth, m, rng)
        assert failures <= failure_allowance(RUNS, DELTA)
        assert inconsistent == 0
        weak_failures, weak_inconsistent = pac_runs(lambda: KCNFLearner(k=k - 1),
                                                    KCNF(n, k - 1), truth, m, rng)
        assert weak_inconsistent > 0
        assert weak_failures > failure_allowance(RUNS, DELTA)


@pytest.mark.parametrize(("n", "k", "terms"), [(5, 2, 3), (7, 2, 4), (6, 2, 4)])
def test_a_k_dnf_is_learnt_by_the_dual_reduction(n, k, terms):
    """3 random k-DNF targets of more than k terms a size: the complement is the k-CNF of
    the terms' negated literals (checked on all of {0, 1}^n); the k-CNF learner told the
    flipped labels, its predictions flipped, makes <= c mistakes and is PAC at the k-CNF
    sample m, consistent on every sample. The weak variant, the k-CNF learner on the
    k-DNF itself (more terms than k: not a k-CNF in general), is inconsistent on some
    sample of every target (30 of 30 runs), and at n = 7 and 6 fails in 30 of 30 runs (at
    n = 5 its error stays below epsilon: inconsistent, yet not refuted)."""
    hclass = KCNF(n, k)
    domain = np.arange(1 << n, dtype=np.int64)
    c = clause_count(n, k)
    m = occam_sample_size(EPSILON, DELTA, c * np.log(2))
    weak_broken = 0  # targets where the weak variant fails the PAC check too
    for seed in range(3):
        rng = np.random.default_rng(10 + seed)
        dnf = random_terms(n, terms, k, rng)
        truth = dnf_labels(dnf, domain)
        assert np.array_equal(cnf_labels(dnf_complement_as_cnf(dnf), domain), ~truth)
        assert play_online(Complement(KCNFLearner(k=k)), hclass, truth, rng) <= c
        failures, inconsistent = pac_runs(lambda: Complement(KCNFLearner(k=k)), hclass,
                                          truth, m, rng)
        assert failures <= failure_allowance(RUNS, DELTA)
        assert inconsistent == 0
        weak_failures, weak_inconsistent = pac_runs(lambda: KCNFLearner(k=k), hclass, truth,
                                                    m, rng)
        assert weak_inconsistent > 0
        weak_broken += int(weak_failures > failure_allowance(RUNS, DELTA))
    assert weak_broken > 0 or n == 5  # 0, 3 and 3 targets of 3 measured (30 of 30 runs)


@pytest.mark.parametrize("n", [3, 5, 8])
def test_boolean_formulas_are_halfspaces(n):
    """On every point of {0, 1}^n: 20 random conjunctions, disjunctions and decision lists
    (1 to n rules) a size equal their halfspaces (w, b); and the alternating list x1 -> 1,
    x2 -> 0, .., default 0, with weights decreasing by 1.5 in place of 2, is wrong at the
    point where every rule fires (1.5^L < 1.5^(L-1) + .. + 1.5 + 1 for L >= 3), as it is
    with equal weights; base 2 gets it right."""
    domain = np.arange(1 << n, dtype=np.int64)
    rng = np.random.default_rng(n)
    for _ in range(20):
        (literals,) = random_terms(n, 1, int(rng.integers(1, n + 1)), rng)
        w, b = conjunction_halfspace(n, literals)
        assert np.array_equal(halfspace_labels(w, b, domain), dnf_labels([literals], domain))
        w, b = disjunction_halfspace(n, literals)
        clause = (np.array([literals[0]]), np.array([literals[1]]))
        assert np.array_equal(halfspace_labels(w, b, domain), cnf_labels(clause, domain))
        dl = DecisionLists(n, length=int(rng.integers(1, n + 1))).sample_target(rng)
        w, b = decision_list_halfspace(n, dl)
        assert np.array_equal(halfspace_labels(w, b, domain), dl.labels(domain))
    alternating = DecisionList(tuple((i, 1, int(i == 0)) for i in range(n)), default=0)
    every_rule = np.array([(1 << n) - 1])
    assert alternating.labels(every_rule).tolist() == [True]
    for base, right in ((2.0, True), (1.5, False), (1.0, False)):
        w, b = decision_list_halfspace(n, alternating, base=base)
        assert halfspace_labels(w, b, every_rule).tolist() == [right]
