"""Online-to-batch: from a mistake bound to a PAC guarantee (the PAC notes; Littlestone
1989), sans-I/O.

**Longest survivor.** Run a deterministic learner with mistake bound M conservatively
(told the label only when it errs) on i.i.d. examples labelled by a target, and output
its hypothesis as soon as it survives m = ceil((1/epsilon) ln((M + 1)/delta)) examples
in a row. It goes through at most M + 1 hypotheses; each one with error > epsilon
survives m draws with probability (1 - epsilon)^m <= delta/(M + 1), so
P(error of the output > epsilon) <= delta, after at most (M + 1) m examples.

**Random iterate.** Run the Perceptron on n i.i.d. examples separable with margin gamma
(unit instances) and output w_tau, tau uniform in 1..n: E[err(w_tau)] = E[M]/n <=
1/(n gamma^2) (each w_t errs on the fresh x_t with probability err(w_t)).

>>> from littlestone.games.classes import make_class
>>> survivor_sample_size(0.1, 0.05, 3)
44
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

from littlestone.games.classes import FiniteClass, HalfspaceClass
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec

__all__ = ["DISTRIBUTIONS", "PacRun", "distribution", "longest_survivor",
           "random_iterate", "survivor_sample_size"]

FloatArray = NDArray[np.float64]
DISTRIBUTIONS = ("uniform", "zipf")
#: Largest domain whose distribution and true error are computed exactly.
DOMAIN_LIMIT = 1 << 20


class OnlineLearner(Protocol):
    """What online-to-batch needs of a learner (every registered learner has it)."""

    def start(self, game: GameSpec, seed: int) -> None: ...
    def predict(self, x: Any) -> float: ...
    def update(self, x: Any, y: int) -> None: ...


@dataclass(frozen=True)
class PacRun:
    """One run: examples drawn, mistakes made, the output's true error."""

    examples: int
    mistakes: int
    error: float


def survivor_sample_size(epsilon: float, delta: float, mistake_bound: float) -> int:
    """m = ceil((1/epsilon) ln((M + 1)/delta)): the run of survivals that makes the
    output epsilon-good with probability 1 - delta."""
    if not 0 < epsilon < 1 or not 0 < delta < 1:
        raise SpecError(f"epsilon={epsilon} and delta={delta} must be in (0, 1)")
    return math.ceil(math.log((math.floor(mistake_bound) + 1) / delta) / epsilon)


def distribution(hclass: FiniteClass, name: str, s: float = 1.5) -> FloatArray:
    """P(x) over the domain: ``uniform``, or ``zipf`` (P(x = i) proportional to (i + 1)^-s)."""
    if name not in DISTRIBUTIONS:
        raise SpecError(f"distribution {name!r} must be one of {', '.join(DISTRIBUTIONS)}")
    if hclass.domain_size > DOMAIN_LIMIT:
        raise SpecError(f"{hclass.spec}: a domain of {hclass.domain_size} instances is over "
                        f"the limit of {DOMAIN_LIMIT} for exact true errors")
    if name == "uniform":
        return np.full(hclass.domain_size, 1.0 / hclass.domain_size)
    weights = (np.arange(hclass.domain_size) + 1.0) ** -s
    return weights / weights.sum()  # type: ignore[no-any-return]  # numpy division


def longest_survivor(learner: OnlineLearner, hclass: FiniteClass, target: int,
                     probs: FloatArray, epsilon: float, delta: float, mistake_bound: float,
                     rng: np.random.Generator, seed: int = 0) -> PacRun:
    """One run of the longest-survivor conversion; the true error is exact (the
    output's disagreement with the target, weighted by ``probs``)."""
    m = survivor_sample_size(epsilon, delta, mistake_bound)
    cap = (math.floor(mistake_bound) + 1) * m
    learner.start(GameSpec(MISTAKE_BOUND, cap, hclass), seed)
    index = np.array([target])
    truth = np.array([bool(hclass.evaluate(x, index)[0]) for x in range(hclass.domain_size)])
    streak = examples = mistakes = 0
    while streak < m and examples < cap:
        block = rng.choice(hclass.domain_size, size=min(4096, cap - examples), p=probs)
        for x in block.tolist():
            examples += 1
            y = int(truth[x])
            if (learner.predict(x) >= 0.5) != bool(y):
                learner.update(x, y)  # conservative: told only its mistakes
                mistakes += 1
                streak = 0
            else:
                streak += 1
                if streak == m:
                    break
            if examples == cap:
                break
    wrong = np.array([(learner.predict(x) >= 0.5) != truth[x] for x in range(hclass.domain_size)])
    return PacRun(examples, mistakes, float(probs @ wrong))


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
