"""The PAC track of the notes, sans-I/O: consistency implies PAC, and online-to-batch
(from a mistake bound to a PAC guarantee; Littlestone 1989).

**Consistency.** A learner that outputs a hypothesis of a finite class H consistent
with m i.i.d. examples of a target is epsilon-good with probability >= 1 - delta once
m >= (1/epsilon)(ln |H| + ln(1/delta)) (the PAC notes, Theorem 1: a hypothesis of
error > epsilon is consistent with m examples with probability <= (1 - epsilon)^m <=
e^(-epsilon m), and a union bound over H). :func:`consistency_run` plays it once: it
draws the sample from a stated distribution over the domain, hands it to the learner
example by example, and measures the output's true error exactly (the disagreement with
the target over every instance, weighted by P(x)). The learners of the notes are in
``littlestone.learners.consistency``; their classes in :mod:`.concepts`.

**Longest survivor.** Run a conservative deterministic learner with mistake bound M
(``conservative:of=SPEC`` makes any deterministic learner one, with the same M) on
i.i.d. examples labelled by a target, and output its hypothesis as soon as it survives
m = ceil((1/epsilon) ln((floor(M) + 1)/delta)) examples in a row (a learner makes a
whole number of mistakes, so M and floor(M) bound the same thing). It goes through at
most floor(M) + 1 hypotheses; each one with error > epsilon survives m draws with
probability (1 - epsilon)^m <= delta/(floor(M) + 1), so P(error of the output >
epsilon) <= delta, after at most (floor(M) + 1) m examples. The notes write
ln(M/delta): M mistakes make M + 1 hypotheses, and the union bound is over all of them.
On halfspaces of margin gamma the Perceptron, with M = 1/gamma^2, is the notes' example.

**Random iterate.** Run the Perceptron on n i.i.d. examples separable with margin gamma
(unit instances) and output w_tau, tau uniform in 1..n: E[err(w_tau)] = E[M]/n <=
1/(n gamma^2) (each w_t errs on the fresh x_t with probability err(w_t)).

**The consistency model.** Given a sample S, output a concept of C consistent with S if
there is one, else answer "there is no consistent concept" (the PAC notes, Def. 3).
The elimination learners output the most specific (or, for disjunctions, the most
general) hypothesis that fits the examples of one label; if it misfits one of the other
label, no concept of C fits S (:func:`consistency_answer`). The Perceptron is one for
halfspaces of margin gamma: cycled through S, it stops within floor(1/gamma^2) + 1 passes,
the last one without a mistake (:func:`perceptron_passes`).

**Agnostic uniform convergence.** For a finite H and any distribution of (x, y), m >=
(1/(2 epsilon^2)) ln(2 |H|/delta) examples make every empirical error within epsilon of
the true one with probability >= 1 - delta (Hoeffding, 2 e^(-2 m epsilon^2) a
hypothesis, and a union bound), so ERM is within 2 epsilon of the best in H
(:func:`uniform_convergence_sample_size`, :func:`uniform_deviation`).

Repeated runs test a guarantee: :func:`failure_allowance` is the number of failures
(error > epsilon) in R runs above which P(failure) <= delta is refuted, with a chance
of at most :data:`FALSE_FAILURE` of refuting it wrongly.

>>> from littlestone.games.classes import make_class
>>> survivor_sample_size(0.1, 0.05, 3)
44
>>> occam_sample_size(0.1, 0.1, 10 * math.log(2))  # monotone conjunctions, n = 10
93
>>> failure_allowance(200, 0.1)  # 20 expected at most; more than 49 refutes it
49
>>> probs = distribution(make_class("thresholds:n=4"), "zipf", 1.0)
>>> [round(float(p), 3) for p in probs]
[0.48, 0.24, 0.16, 0.12]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import FiniteClass, HalfspaceClass, HypothesisClass
from littlestone.games.concepts import (
    KCNF,
    MAX_CONCEPT_VARIABLES,
    DecisionLists,
    MonotoneConjunctions,
)
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec

__all__ = [
    "DISTRIBUTIONS",
    "FALSE_FAILURE",
    "HALFSPACE_TEST",
    "ConsistencyRun",
    "OccamLearner",
    "PacRun",
    "consistency_answer",
    "consistency_run",
    "distribution",
    "failure_allowance",
    "hypothesis_labels",
    "longest_survivor",
    "occam_sample_size",
    "perceptron_passes",
    "random_iterate",
    "sample",
    "survivor_sample_size",
    "target_labels",
    "uniform_convergence_sample_size",
    "uniform_deviation",
]

FloatArray = NDArray[np.float64]
DISTRIBUTIONS = ("uniform", "zipf", "bernoulli")
#: Largest domain whose distribution and true error are computed exactly.
DOMAIN_LIMIT = 1 << MAX_CONCEPT_VARIABLES
#: The chance that repeated runs refute a guarantee that holds (failure_allowance).
FALSE_FAILURE = 1e-9
#: Fresh examples that estimate a halfspace output's true error (longest_survivor).
HALFSPACE_TEST = 4000


class OnlineLearner(Protocol):
    """What online-to-batch needs of a learner (every registered learner has it; the
    longest survivor also needs it conservative: ``conservative`` true)."""

    def start(self, game: GameSpec, seed: int) -> None: ...
    def predict(self, x: Any) -> float: ...
    def update(self, x: Any, y: int) -> None: ...


class OccamLearner(OnlineLearner, Protocol):
    """A learner whose output after a sample is a hypothesis of a counted class, consistent
    with the sample when the target is in the class."""

    def log_hypotheses(self, game: GameSpec) -> float | None:
        """ln |H| of the class its outputs come from (``None``: not counted here)."""
        ...


@dataclass(frozen=True)
class ConsistencyRun:
    """One run of the consistency game: the sample's size, the examples of it the output
    labels wrongly (0 for a consistent learner), the output's true error."""

    examples: int
    training_errors: int
    error: float


@dataclass(frozen=True)
class PacRun:
    """One run: examples drawn, mistakes made, the output's true error."""

    examples: int
    mistakes: int
    error: float


def survivor_sample_size(epsilon: float, delta: float, mistake_bound: float) -> int:
    """m = ceil((1/epsilon) ln((floor(M) + 1)/delta)): the run of survivals that makes the
    output epsilon-good with probability 1 - delta (at most floor(M) + 1 hypotheses)."""
    if not 0 < epsilon < 1 or not 0 < delta < 1:
        raise SpecError(f"epsilon={epsilon} and delta={delta} must be in (0, 1)")
    # (ln((M + 1)/delta) as a difference: 1/delta overflows for a subnormal delta)
    return math.ceil((math.log(math.floor(mistake_bound) + 1) - math.log(delta)) / epsilon)


def occam_sample_size(epsilon: float, delta: float, log_size: float) -> int:
    """m = ceil((1/epsilon)(ln |H| + ln(1/delta))): the sample that makes a consistent
    output epsilon-good with probability 1 - delta (the PAC notes, Theorem 1)."""
    if not 0 < epsilon < 1 or not 0 < delta < 1:
        raise SpecError(f"epsilon={epsilon} and delta={delta} must be in (0, 1)")
    return math.ceil((log_size - math.log(delta)) / epsilon)


def uniform_convergence_sample_size(epsilon: float, delta: float, log_size: float) -> int:
    """m = ceil((1/(2 epsilon^2)) ln(2 |H|/delta)): every empirical error of a finite H is
    within epsilon of its true error with probability >= 1 - delta, whatever the labels
    (Hoeffding and a union bound; the Perceptron notes write (2/epsilon^2), 4 times more).

    >>> uniform_convergence_sample_size(0.1, 0.1, math.log(64))
    358
    """
    if not 0 < epsilon < 1 or not 0 < delta < 1:
        raise SpecError(f"epsilon={epsilon} and delta={delta} must be in (0, 1)")
    return math.ceil((math.log(2) + log_size - math.log(delta)) / (2 * epsilon**2))


def failure_allowance(repeat: int, delta: float, alpha: float = FALSE_FAILURE) -> int:
    """The most failures in ``repeat`` independent runs that P(failure) <= delta allows: the
    least c with P(Binomial(repeat, delta) > c) <= alpha (computed exactly)."""
    if not 0 < delta < 1 or repeat < 1:
        raise SpecError(f"delta={delta} must be in (0, 1) and repeat={repeat} >= 1")
    log_terms = [math.lgamma(repeat + 1) - math.lgamma(k + 1) - math.lgamma(repeat - k + 1)
                 + k * math.log(delta) + (repeat - k) * math.log1p(-delta)
                 for k in range(repeat + 1)]
    tail = 0.0
    for c in range(repeat, -1, -1):  # tail = P(X > c), growing as c falls
        if tail + math.exp(log_terms[c]) > alpha:
            return c
        tail += math.exp(log_terms[c])
    return 0


def _boolean_variables(hclass: HypothesisClass) -> int | None:
    """n when the domain is the 2^n bit masks of n boolean variables, else ``None``."""
    domain = getattr(hclass, "domain_size", None)
    n = hclass.n_features
    return n if domain is not None and n <= MAX_CONCEPT_VARIABLES and domain == 1 << n else None


def distribution(hclass: HypothesisClass, name: str, s: float = 1.5,
                 q: float = 0.5) -> FloatArray:
    """P(x) over the domain: ``uniform``; ``zipf`` (P(x = i) proportional to (i + 1)^-s);
    ``bernoulli`` (boolean domains: each variable 1 with probability q, independently)."""
    if name not in DISTRIBUTIONS:
        raise SpecError(f"distribution {name!r} must be one of {', '.join(DISTRIBUTIONS)}")
    domain = hclass.domain_size
    if domain is None or domain > DOMAIN_LIMIT:
        raise SpecError(f"{hclass.spec}: a domain of {domain or 'infinitely many'} instances "
                        f"is over the limit of {DOMAIN_LIMIT} for exact true errors")
    if name == "uniform":
        return np.full(domain, 1.0 / domain)
    if name == "bernoulli":
        n = _boolean_variables(hclass)
        if n is None:
            raise SpecError(f"{hclass.spec}: dist=bernoulli needs a class over boolean variables")
        if not 0 <= q <= 1:
            raise SpecError(f"q={q} must be in [0, 1]")
        ones = np.zeros(domain, dtype=np.int64)
        for i in range(n):
            ones += (np.arange(domain) >> i) & 1
        probs: FloatArray = q**ones * (1 - q) ** (n - ones)
        return probs
    weights = (np.arange(domain) + 1.0) ** -s
    return weights / weights.sum()  # type: ignore[no-any-return]  # numpy division


def sample(probs: FloatArray, m: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """``m`` i.i.d. instances of the distribution ``probs`` (inverse CDF)."""
    cdf = np.cumsum(probs)
    draws = np.searchsorted(cdf, rng.random(m) * cdf[-1], side="right")
    out: NDArray[np.int64] = np.minimum(draws, len(probs) - 1).astype(np.int64)
    return out


def target_labels(hclass: HypothesisClass, target: Any) -> NDArray[np.bool_]:
    """The target's label on every instance of the (finite) domain."""
    assert hclass.domain_size is not None
    domain = np.arange(hclass.domain_size, dtype=np.int64)
    if isinstance(hclass, MonotoneConjunctions | KCNF | DecisionLists):
        return hclass.labels(target, domain)
    assert isinstance(hclass, FiniteClass)
    index = np.array([target])
    return np.array([bool(hclass.evaluate(int(x), index)[0]) for x in domain])


def hypothesis_labels(learner: OnlineLearner, domain_size: int) -> NDArray[np.bool_]:
    """The learner's current hypothesis on every instance: ``predict_all`` when it has
    one (vectorised), else one prediction an instance."""
    domain = np.arange(domain_size, dtype=np.int64)
    predict_all = getattr(learner, "predict_all", None)
    if predict_all is not None:
        return np.asarray(predict_all(domain), dtype=np.bool_)
    return np.array([learner.predict(int(x)) >= 0.5 for x in domain])


def consistency_run(learner: OnlineLearner, hclass: HypothesisClass, target: Any,
                    probs: FloatArray, examples: int, rng: np.random.Generator,
                    seed: int = 0) -> ConsistencyRun:
    """One run of the consistency game: ``examples`` i.i.d. draws from ``probs`` labelled
    by ``target``, told to the learner one by one (``update``); then its hypothesis's
    true error, exact, and the examples it labels wrongly."""
    assert hclass.domain_size is not None
    truth = target_labels(hclass, target)
    xs = sample(probs, examples, rng)
    learner.start(GameSpec(MISTAKE_BOUND, examples, hclass), seed)
    for x in xs.tolist():
        learner.update(x, int(truth[x]))
    output = hypothesis_labels(learner, hclass.domain_size)
    wrong = output != truth
    return ConsistencyRun(examples, int(np.count_nonzero(wrong[xs])), float(probs[wrong].sum()))


def consistency_answer(learner: OnlineLearner, hclass: HypothesisClass, xs: NDArray[np.int64],
                       ys: NDArray[np.bool_], seed: int = 0) -> NDArray[np.bool_] | None:
    """The consistency model's answer on the sample (xs, ys): the learner's output on every
    instance of the domain if it fits the sample, else ``None``, "there is no consistent
    concept". Exact for a learner whose output is the most specific (most general) concept
    of its class that fits the positives (negatives): if it misfits a negative (positive),
    so does every concept of the class (the PAC notes' elimination argument)."""
    assert hclass.domain_size is not None
    learner.start(GameSpec(MISTAKE_BOUND, max(1, len(xs)), hclass), seed)
    for x, y in zip(xs.tolist(), ys.tolist(), strict=True):
        learner.update(x, int(y))
    output = hypothesis_labels(learner, hclass.domain_size)
    return output if bool(np.array_equal(output[xs], ys)) else None


def perceptron_passes(learner: Any, xs: FloatArray, ys: NDArray[np.bool_],
                      max_passes: int) -> tuple[int, int]:
    """(passes, mistakes): the Perceptron (``learner``, started) cycled through the sample
    until a pass makes no mistake, or ``max_passes`` passes (the PAC notes: with margin
    gamma it takes at most 1/gamma^2 mistakes, so at most floor(1/gamma^2) + 1 passes,
    and ends consistent with the sample)."""
    mistakes = 0
    for passes in range(1, max_passes + 1):
        erred = 0
        for x, y in zip(xs, ys.tolist(), strict=True):
            erred += int((learner.predict(x) >= 0.5) != y)
            learner.update(x, int(y))
        mistakes += erred
        if not erred:
            return passes, mistakes
    return max_passes, mistakes


def uniform_deviation(hclass: FiniteClass, probs: FloatArray, eta: FloatArray, m: int,
                      rng: np.random.Generator) -> tuple[float, float]:
    """(max over h of |empirical error - true error|, ERM's excess true error): m i.i.d.
    examples, x from ``probs``, y = 1 with probability eta(x) (any labels: agnostic),
    every h of H scored exactly (true error sum_x P(x) P(h(x) != y | x))."""
    assert hclass.domain_size is not None
    labels = np.array([hclass.evaluate(x) for x in range(hclass.domain_size)]).T  # H x X
    true = labels @ (probs * (1 - eta)) + (~labels) @ (probs * eta)
    xs = sample(probs, m, rng)
    ys = rng.random(m) < eta[xs]
    empirical = (labels[:, xs] != ys[None, :]).mean(axis=1)
    erm = int(np.argmin(empirical))
    return float(np.abs(empirical - true).max()), float(true[erm] - true.min())


def longest_survivor(learner: OnlineLearner, hclass: FiniteClass | HalfspaceClass,
                     target: Any, probs: FloatArray | None, epsilon: float, delta: float,
                     mistake_bound: float, rng: np.random.Generator, seed: int = 0,
                     test: int = HALFSPACE_TEST) -> PacRun:
    """One run of the longest-survivor conversion. The learner is told every example and
    must be conservative (``conservative:of=SPEC``), so that a run of survivals is a run
    of one hypothesis.

    On a finite class the examples are drawn from ``probs`` and the true error is exact
    (the output's disagreement with the target, weighted by ``probs``). On halfspaces
    (``target`` a unit w*, ``probs`` unused) they are the class's instances of margin
    >= gamma (:meth:`HalfspaceClass.sample_instances`), and the true error is estimated on
    ``test`` fresh ones (its standard error is at most 1/(2 sqrt(test)): 0.008)."""
    if not getattr(learner, "conservative", False):
        raise SpecError("the longest survivor needs a conservative learner: wrap it as "
                        "conservative:of=SPEC")
    m = survivor_sample_size(epsilon, delta, mistake_bound)
    cap = (math.floor(mistake_bound) + 1) * m
    learner.start(GameSpec(MISTAKE_BOUND, cap, hclass), seed)
    if isinstance(hclass, HalfspaceClass):
        def draw(size: int) -> list[Any]:
            return list(hclass.sample_instances(rng, target, size))

        def label(x: Any) -> int:
            return int(float(x @ target) > 0)
    else:
        assert probs is not None
        index = np.array([target])
        truth = np.array([bool(hclass.evaluate(x, index)[0])
                          for x in range(hclass.domain_size)])

        def draw(size: int) -> list[Any]:
            return [int(x) for x in rng.choice(hclass.domain_size, size=size, p=probs)]

        def label(x: Any) -> int:
            return int(truth[x])
    streak = examples = mistakes = 0
    while streak < m and examples < cap:
        for x in draw(min(4096, cap - examples)):
            examples += 1
            y = label(x)
            erred = (learner.predict(x) >= 0.5) != bool(y)
            learner.update(x, y)  # conservative: its state moves only when it was wrong
            if erred:
                mistakes += 1
                streak = 0
            else:
                streak += 1
                if streak == m:
                    break
            if examples == cap:
                break
    if isinstance(hclass, HalfspaceClass):
        fresh = draw(test)
        wrong = sum((learner.predict(x) >= 0.5) != bool(label(x)) for x in fresh)
        return PacRun(examples, mistakes, wrong / test)
    assert probs is not None
    output = np.array([learner.predict(x) >= 0.5 for x in range(hclass.domain_size)])
    return PacRun(examples, mistakes, float(probs[output != truth].sum()))


def random_iterate(learner: Any, hclass: HalfspaceClass, n: int, rng: np.random.Generator,
                   test: int = 4000) -> tuple[float, int]:
    """(mean over t of err(w_t), mistakes): a Perceptron (``learner.w``) run on n examples
    of a random unit target with the class's margin; the mean of the iterates' errors is
    E[err(w_tau)] for tau uniform, each error estimated on ``test`` fresh examples."""
    w_star = hclass.sample_target(rng)
    xs = hclass.sample_instances(rng, w_star, n)
    fresh = hclass.sample_instances(rng, w_star, test)
    truth = fresh @ w_star > 0
    learner.start(GameSpec(MISTAKE_BOUND, n, hclass), int(rng.integers(1 << 31)))
    errors = []
    mistakes = 0
    for x in xs:
        errors.append(float(np.mean((fresh @ learner.w > 0) != truth)))
        y = int(float(x @ w_star) > 0)
        mistakes += int((learner.predict(x) >= 0.5) != bool(y))
        learner.update(x, y)
    return float(np.mean(errors)), mistakes
