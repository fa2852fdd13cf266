"""Learners from expert advice: Weighted-Majority, Hedge (Randomized Weighted-Majority),
Follow-the-Leader.

Each plays both games: the experts game (advice and costs from the adversary), and the
mistake-bound game on a finite class, whose hypotheses are then the experts
(a_t,i = h_i(x_t), costs |h_i(x_t) - y_t|; UML Cor. 21.12). Weights are kept in log
space, so 10^6 rounds neither overflow nor underflow.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import FiniteClass
from littlestone.games.experts import SMALL_D, vector_sum
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, Bound, GameSpec
from littlestone.learners.base import Learner, register

FloatArray = NDArray[np.float64]

__all__ = ["ExpertLearner", "FollowTheLeader", "Hedge", "OnlineGradientDescent",
           "RandomizedWeightedMajority", "WeightedMajority", "project_to_simplex"]

# numpy's reductions, called without ndarray.min's and max's Python wrappers
_minimum, _maximum = np.minimum.reduce, np.maximum.reduce


class ExpertLearner(Learner):
    """Base of the expert learners: implement ``weights`` and ``update_costs``; this class
    plays them in the mistake-bound game with the class's hypotheses as experts.

    >>> from littlestone.games.classes import make_class
    >>> hedge = Hedge(eta=1.0)
    >>> hedge.start(GameSpec("mistake-bound", 10, make_class("singletons:n=4")), seed=0)
    >>> hedge.predict(2)  # one expert of four says 1
    0.25
    """

    games = frozenset({MISTAKE_BOUND, EXPERTS})

    def __init__(self) -> None:
        self.d = 0
        self.rounds = 0
        self._hclass: FiniteClass | None = None
        self._advice_x: Any = None
        self._advice: FloatArray | None = None

    def unsupported(self, game: GameSpec) -> str | None:
        if game.game == MISTAKE_BOUND and not isinstance(game.hclass, FiniteClass):
            return "in the mistake-bound game it needs a finite class (its hypotheses as experts)"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        if game.game == MISTAKE_BOUND:
            assert isinstance(game.hclass, FiniteClass)
            self._hclass, self.d = game.hclass, game.hclass.size
        else:
            self._hclass, self.d = None, game.n_experts
        self.rounds = 0
        self._advice_x = self._advice = None
        self.losses = np.zeros(self.d)
        self.setup(game, seed)

    def setup(self, game: GameSpec, seed: int) -> None:
        """Reset the algorithm's own state for a game with ``self.d`` experts."""

    def _advice_of(self, x: Any) -> FloatArray:
        if self._advice is None or x != self._advice_x:
            assert self._hclass is not None, "start() first"
            self._advice = self._hclass.evaluate(x).astype(np.float64)
            self._advice_x = x
        return self._advice

    def predict(self, x: Any) -> float:
        advice = self._advice_of(x)
        answer = self.weights(advice)
        if isinstance(answer, np.ndarray):
            return min(1.0, max(0.0, float(answer @ advice)))
        return float(answer)

    def update(self, x: Any, y: int) -> None:
        advice = self._advice_of(x)
        self.update_costs(advice if y == 0 else 1.0 - advice, y)

    def observe(self, costs: FloatArray) -> None:
        """Count the round: every expert learner keeps the experts' cumulative losses."""
        self.losses += costs
        self.rounds += 1


@register
class WeightedMajority(ExpertLearner):
    """Deterministic Weighted-Majority (Littlestone & Warmuth 1994): predict the weighted
    vote of the advice a_t in [0, 1]^d (1 when sum_i w_i a_t,i >= W/2, W = sum_i w_i, so
    1 on a tie), then multiply every expert's weight by beta^c_i, c_i = |a_t,i - y_t| its
    cost: by beta when it erred, with 0/1 advice; by a fraction of it with fractional
    advice (the continuous update, not a rounding of c_i at 1/2).

    Its bound, printed when 0 < beta < 1 and every round had advice and a label::

        mistakes <= (m log2(1/beta) + log2 d) / log2(2/(1+beta)),

    m = min_i sum_t |a_t,i - y_t| the best expert's loss, unrounded (~= 2.41 (m + log2 d)
    at beta = 1/2). Proof: on a mistake the vote's side holds half the weight, so the
    weighted average cost is >= 1/2, and beta^c <= 1 - (1-beta) c on [0, 1] (convexity)
    shrinks W by a factor <= (1+beta)/2; W never grows; it starts at d and ends
    >= beta^m, so beta^m <= d ((1+beta)/2)^mistakes. In the mistake-bound game the
    experts are the class's hypotheses (0/1 advice) and the target is one of them: m = 0.

    Without advice (free experts, costs only) it puts all its weight on its heaviest
    expert, the one of least cumulative cost (the lowest index on a tie), and prints no
    bound: no deterministic learner has one there (Cover 1965: charged on the expert it
    follows, it loses every round while the best of d experts loses <= T/d). A game with
    a round without advice prints none either. With beta = 0 an expert whose cost is
    >= 1/2 is dropped (all of them return when none is left), and no bound is printed.

    >>> game = GameSpec("experts", 3, experts=3)
    >>> wm = WeightedMajority(beta=0.5); wm.start(game, seed=0)
    >>> wm.weights(np.array([0.6, 0.4, 0.4]))  # sum_i w_i a_i = 1.4 < W/2 = 1.5
    0.0
    >>> wm.update_costs(np.array([0.4, 0.6, 0.6]), 1)  # y = 1: c = 1 - a, w_i *= beta^c_i
    >>> np.exp(wm.log_weights).round(3).tolist()
    [0.758, 0.66, 0.66]
    >>> round(wm.bound(game).value, 3)  # (0.4 log2 2 + log2 3) / log2(4/3)
    4.783
    >>> wm.weights(None).tolist()  # no advice: all its weight on the heaviest expert
    [1.0, 0.0, 0.0]
    >>> wm.update_costs(np.array([1.0, 0.0, 0.0]), None); wm.bound(game) is None
    True
    """

    id = "weighted-majority"

    def __init__(self, beta: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"beta={beta} must be in [0, 1)")
        self.beta = beta
        self.log_weights = np.zeros(0)
        self.mistakes = 0
        #: Rounds played without a vote (no advice, or costs without a label): no bound.
        self.rounds_without_vote = 0

    def setup(self, game: GameSpec, seed: int) -> None:
        self.log_weights = np.zeros(self.d)
        self.mistakes = 0
        self.rounds_without_vote = 0
        self._last: float | None = None

    def _weights(self) -> FloatArray:
        return np.exp(self.log_weights - _maximum(self.log_weights))  # type: ignore[no-any-return]  # numpy ufunc stubs

    def weights(self, advice: FloatArray | None) -> FloatArray | float:
        w = self._weights()
        if advice is None:
            choice = np.zeros(self.d)
            choice[int(np.argmax(w))] = 1.0
            self._last = None
            return choice
        ones = float(w @ advice)
        self._last = 1.0 if ones >= vector_sum(w) - ones else 0.0
        return self._last

    def update_costs(self, costs: FloatArray, y: int | None) -> None:
        self.observe(costs)
        if self._last is None or y is None:
            self.rounds_without_vote += 1
        elif self._last != y:
            self.mistakes += 1
        self._last = None
        if self.beta == 0.0:
            wrong = costs >= 0.5
            self.log_weights[wrong] = -np.inf
            if np.isneginf(self.log_weights).all():  # everyone erred: start over
                self.log_weights[:] = 0.0
        else:
            self.log_weights += costs * math.log(self.beta)  # w_i *= beta^c_i

    def bound(self, game: GameSpec) -> Bound | None:
        if self.beta == 0.0 or self.rounds == 0 or self.rounds_without_vote:
            return None
        m = float(np.min(self.losses))  # the best expert's loss, unrounded
        value = (m * math.log2(1 / self.beta) + math.log2(self.d)) / math.log2(
            2 / (1 + self.beta))
        return Bound(value, f"(m log2(1/beta) + log2 d) / log2(2/(1+beta)), m = {m:.10g} "
                     "(Littlestone & Warmuth 1994, weighted vote, w_i *= beta^|a_i - y|)")


SCHEDULES = ("auto", "tuned", "tight", "doubling", "anytime", "fixed")


@register
class Hedge(ExpertLearner):
    """Hedge: weights proportional to exp(-eta L_i); expected regret <= sqrt(2 T ln d), and
    sqrt(T ln d / 2) with ``schedule=tight``.

    ``schedule``: ``tuned`` (eta = sqrt(2 ln d / T), T announced; UML Thm 21.11),
    ``tight`` (eta = sqrt(8 ln d / T), T announced: regret <= sqrt(T ln d / 2), half of
    UML's; Cesa-Bianchi & Lugosi Thm 2.2, Hoeffding's lemma on the linear loss <w, v>),
    ``doubling`` (restart in epochs of 2^m rounds, each tuned: within
    sqrt(2)/(sqrt(2)-1) ~= 3.41 of the tuned bound; UML ch. 21, Exercise 4), ``anytime``
    (eta_t = sqrt(8 ln d / t): regret <= sqrt(2 T ln d) + sqrt(ln d / 8); Cesa-Bianchi &
    Lugosi Thm 2.3), ``fixed`` (the given ``eta``: ln d / eta + eta T / 2), ``auto`` (the
    default: ``fixed`` when eta is given, else ``tuned`` when T is announced, else
    ``doubling``).

    >>> hedge = Hedge()
    >>> hedge.start(GameSpec("experts", 100, experts=2), seed=0)
    >>> hedge.weights(None).tolist()
    [0.5, 0.5]
    >>> hedge.update_costs(np.array([1.0, 0.0]), None); bool(hedge.weights(None)[1] > 0.5)
    True
    """

    id = "hedge"
    deterministic = False

    def __init__(self, eta: float | None = None, schedule: str = "auto") -> None:
        super().__init__()
        if eta is not None and not eta > 0:
            raise ValueError(f"eta={eta} must be > 0")
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule={schedule!r} must be one of {', '.join(SCHEDULES)}")
        if schedule == "fixed" and eta is None:
            raise ValueError("schedule=fixed needs eta")
        self.eta = eta
        self.schedule = schedule
        self.log_weights = np.zeros(0)
        self._mode = "fixed"
        self._epoch_end = self._epoch_length = 0

    def unsupported(self, game: GameSpec) -> str | None:
        if self.schedule in ("tuned", "tight") and game.horizon is None:
            return (f"schedule={self.schedule} needs the horizon T announced (doubling or "
                    "anytime do not)")
        return super().unsupported(game)

    def setup(self, game: GameSpec, seed: int) -> None:
        mode = self.schedule
        if mode == "auto":
            mode = "fixed" if self.eta is not None else (
                "tuned" if game.horizon is not None else "doubling")
        self._mode = mode
        self._log_d = math.log(max(self.d, 2))
        # cumulative losses in the current epoch: all of them unless the doubling trick
        # restarts epochs
        self._epoch_losses = np.zeros(self.d) if mode == "doubling" else self.losses
        if mode == "fixed":
            assert self.eta is not None
            self._eta = self.eta
        elif mode == "tuned":
            self._eta = math.sqrt(2 * self._log_d / max(game.rounds, 1))
        elif mode == "tight":
            self._eta = math.sqrt(8 * self._log_d / max(game.rounds, 1))
        elif mode == "doubling":
            self._epoch_length = self._epoch_end = 1  # epochs of 1, 2, 4, ... rounds
            self._eta = math.sqrt(2 * self._log_d / 1)
        else:
            self._eta = math.sqrt(8 * self._log_d / 1)
        self._w: FloatArray | None = None

    def weights(self, advice: FloatArray | None) -> FloatArray:
        if self._w is None:
            # w_i = exp(-eta (L_i - min L)) / sum: shifted so that the best expert's is 1
            losses, eta = self._epoch_losses, self._eta
            if self.d <= SMALL_D:
                # on Python floats (a numpy call costs ~0.5 us), the same w: a nan in L
                # makes every weight nan either way, and exp(+-0) = 1
                values = losses.tolist()
                least = min(values)
                w = np.array([(loss - least) * -eta for loss in values])
            else:
                w = np.subtract(losses, _minimum(losses))
                w *= -eta
            np.exp(w, out=w)
            w /= vector_sum(w)
            self._w = w
        return self._w

    def update_costs(self, costs: FloatArray, y: int | None) -> None:
        self.observe(costs)
        self._w = None
        if self._epoch_losses is not self.losses:
            self._epoch_losses += costs
        t = self.rounds
        if self._mode == "doubling" and t == self._epoch_end:
            self._epoch_length *= 2
            self._epoch_end += self._epoch_length
            self._eta = math.sqrt(2 * self._log_d / self._epoch_length)
            self._epoch_losses[:] = 0.0
        elif self._mode == "anytime":
            self._eta = math.sqrt(8 * self._log_d / (t + 1))

    def bound(self, game: GameSpec) -> Bound | None:
        T, log_d = game.rounds, math.log(max(self.d, 2))
        tuned = math.sqrt(2 * T * log_d)
        if self._mode == "tuned":
            return Bound(tuned, "expected regret <= sqrt(2 T ln d) (UML Thm 21.11)")
        if self._mode == "tight":
            return Bound(math.sqrt(T * log_d / 2), "expected regret <= sqrt(T ln d / 2) "
                         "(eta = sqrt(8 ln d / T), Cesa-Bianchi & Lugosi Thm 2.2)")
        if self._mode == "doubling":
            factor = math.sqrt(2) / (math.sqrt(2) - 1)
            return Bound(factor * tuned, "expected regret <= sqrt(2)/(sqrt(2)-1) sqrt(2 T ln d) "
                         "(doubling trick, UML ch. 21, Exercise 4)")
        if self._mode == "anytime":
            return Bound(tuned + math.sqrt(log_d / 8), "expected regret <= sqrt(2 T ln d) + "
                         "sqrt(ln d / 8) (anytime eta_t, Cesa-Bianchi & Lugosi Thm 2.3)")
        assert self.eta is not None
        return Bound(log_d / self.eta + self.eta * T / 2,
                     "expected regret <= ln d / eta + eta T / 2 (UML Thm 21.11, proof)")


@register
class RandomizedWeightedMajority(Hedge):
    """Randomized Weighted-Majority (UML section 21.2.1): the same algorithm as Hedge.

    >>> RandomizedWeightedMajority().id
    'randomized-weighted-majority'
    """

    id = "randomized-weighted-majority"


@register
class FollowTheLeader(ExpertLearner):
    """Follow-the-Leader: all weight on an expert with the least loss so far (the lowest
    index on a tie); deterministic, hence the textbook victim of Cover's flip adversary.

    >>> ftl = FollowTheLeader()
    >>> ftl.start(GameSpec("experts", 3, experts=2), seed=0)
    >>> ftl.weights(None).tolist()
    [1.0, 0.0]
    >>> ftl.update_costs(np.array([1.0, 0.0]), None); ftl.weights(None).tolist()
    [0.0, 1.0]
    """

    id = "follow-the-leader"

    def weights(self, advice: FloatArray | None) -> FloatArray:
        w = np.zeros(self.d)
        w[int(np.argmin(self.losses))] = 1.0
        return w

    def update_costs(self, costs: FloatArray, y: int | None) -> None:
        self.observe(costs)


def project_to_simplex(y: FloatArray) -> FloatArray:
    """The Euclidean projection of ``y`` onto the probability simplex (sort and threshold,
    Duchi, Shalev-Shwartz, Singer & Chandra 2008).

    >>> project_to_simplex(np.array([0.5, 0.5, -1.0])).tolist()
    [0.5, 0.5, 0.0]
    >>> project_to_simplex(np.array([2.0, 0.0])).tolist()
    [1.0, 0.0]
    """
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - 1.0
    ks = np.arange(1, len(y) + 1)
    rho = int(np.nonzero(u - css / ks > 0)[0][-1])
    w: FloatArray = np.maximum(y - css[rho] / (rho + 1), 0.0)
    w /= w.sum()
    return w


@register
class OnlineGradientDescent(ExpertLearner):
    """Online gradient descent over the simplex (UML section 21.3, projected): expected
    regret <= D^2 / (2 eta) + (eta/2) sum_t ||v_t||^2 <= sqrt((1 - 1/d) d T), D^2 = 1 - 1/d.

    w_1 is uniform and w_{t+1} = Proj_simplex(w_t - eta v_t): a gradient step on the
    linear loss <w, v_t>, projected back onto the distributions. The regret against
    expert i is at most ||e_i - w_1||^2 / (2 eta) + (eta/2) sum_t ||v_t||^2 (UML Thm 21.15,
    with the projection, which only brings w closer to e_i), ||e_i - w_1||^2 = 1 - 1/d and
    ||v_t||^2 <= d; the default eta = sqrt((1 - 1/d) / (d T)) needs T announced. The
    bound it prints uses the sum of ||v_t||^2 it saw. Beside Hedge's sqrt(2 T ln d) it
    pays sqrt(d) for ln d: the Euclidean geometry fits the simplex badly.

    >>> ogd = OnlineGradientDescent(eta=0.5)
    >>> ogd.start(GameSpec("experts", 10, experts=2), seed=0)
    >>> ogd.weights(None).tolist()
    [0.5, 0.5]
    >>> ogd.update_costs(np.array([1.0, 0.0]), None); ogd.weights(None).tolist()
    [0.25, 0.75]
    """

    id = "ogd"
    deterministic = False

    def __init__(self, eta: float | None = None) -> None:
        super().__init__()
        if eta is not None and not eta > 0:
            raise ValueError(f"eta={eta} must be > 0")
        self.eta = eta
        self.w: FloatArray = np.zeros(0)
        self._eta = 0.0
        self._squares = 0.0

    def unsupported(self, game: GameSpec) -> str | None:
        if self.eta is None and game.horizon is None:
            return "without eta it needs the horizon T announced"
        return super().unsupported(game)

    def setup(self, game: GameSpec, seed: int) -> None:
        self.w = np.full(self.d, 1.0 / self.d)
        diameter = 1.0 - 1.0 / self.d
        self._eta = self.eta if self.eta is not None else math.sqrt(
            max(diameter, 1e-12) / (self.d * max(game.rounds, 1)))
        self._squares = 0.0

    def weights(self, advice: FloatArray | None) -> FloatArray:
        return self.w

    def update_costs(self, costs: FloatArray, y: int | None) -> None:
        self.observe(costs)
        self._squares += float(costs @ costs)
        self.w = project_to_simplex(self.w - self._eta * costs)

    def bound(self, game: GameSpec) -> Bound | None:
        if self.d == 0:
            return None
        value = (1.0 - 1.0 / self.d) / (2 * self._eta) + self._eta * self._squares / 2
        return Bound(value, "expected regret <= (1 - 1/d)/(2 eta) + (eta/2) sum_t ||v_t||^2 "
                     f"(projected OGD, UML Thm 21.15), eta = {self._eta:.6g}")
