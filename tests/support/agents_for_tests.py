"""Adversaries and learners used only by the tests (not registered)."""

from __future__ import annotations

from typing import Any

import numpy as np

from littlestone.adversaries.base import Adversary
from littlestone.games import commitment
from littlestone.games.classes import FiniteClass, HalfspaceClass, VersionSpace
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners.base import Learner


class Spoiler(Adversary):
    """Adaptive: a random instance that splits V, labelled against the learner when the
    version space allows it (realizable throughout).

    >>> Spoiler().id
    'spoiler'
    """

    id = "spoiler"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self._space: VersionSpace | None = None
        self._hclass: FiniteClass | None = None
        self._rng = np.random.default_rng(0)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._hclass = game.hclass
        self._space = game.hclass.version_space()
        self._rng = np.random.default_rng(seed)

    def instance(self) -> int:
        assert self._hclass is not None and self._space is not None
        # once V is one hypothesis no instance splits it: no search
        for _ in range(64 if self._space.size > 1 else 0):
            x = int(self._rng.integers(self._hclass.domain_size))
            if 0 < self._space.votes(x) < self._space.size:
                return x
        return int(self._rng.integers(self._hclass.domain_size))

    def label(self, x: Any, p: float) -> int:
        assert self._space is not None
        wanted = 0 if p >= 0.5 else 1
        if self._space.restrict(x, wanted):
            return wanted
        self._space.restrict(x, 1 - wanted)
        return 1 - wanted


class PerceptronSpoiler(Adversary):
    """Adaptive on halfspaces: simulates the Perceptron and plays, at margin exactly
    gamma from a committed target, an instance the Perceptron gets wrong.

    >>> PerceptronSpoiler().id
    'perceptron-spoiler'
    """

    id = "perceptron-spoiler"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self._w_star = np.zeros(0)
        self._w_hat = np.zeros(0)
        self._salt = b""
        self._hclass: HalfspaceClass | None = None
        self._rng = np.random.default_rng(0)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, HalfspaceClass)
        self._hclass = game.hclass
        self._rng = np.random.default_rng(seed)
        self._w_star = game.hclass.sample_target(self._rng)
        self._w_hat = np.zeros(game.hclass.d)
        self._salt = self._rng.bytes(16)

    def commitment(self) -> bytes:
        assert self._hclass is not None
        return commitment.digest(self._hclass, self._w_star, self._salt)

    def reveal(self) -> tuple[Any, bytes]:
        return self._w_star, self._salt

    def instance(self) -> np.ndarray:
        """x = gamma w* + sqrt(1 - gamma^2) u, u orthogonal to w*, with <w_hat, x> <= 0:
        labelled 1, predicted 0, for as long as the Perceptron's w_hat allows it."""
        assert self._hclass is not None
        gamma = self._hclass.margin
        w_star, w_hat = self._w_star, self._w_hat
        a = float(w_hat @ w_star)
        perp = w_hat - a * w_star
        b = float(np.linalg.norm(perp))
        rest = np.sqrt(1 - gamma**2)
        fresh = self._rng.standard_normal(len(w_star))
        fresh -= (fresh @ w_star) * w_star
        if b > 1e-9:
            perp_hat = perp / b
            fresh -= (fresh @ perp_hat) * perp_hat
            c = min(1.0, gamma * a / (rest * b) + 1e-9)
        else:
            perp_hat, c = np.zeros_like(w_star), 0.0
        norm = float(np.linalg.norm(fresh))
        if norm < 1e-6:  # no direction left (d = 2): lean fully against w_hat
            fresh, c = np.zeros_like(w_star), 1.0 if b > 1e-9 else 0.0
        else:
            fresh /= norm
        if b <= 1e-9 and norm < 1e-6:
            fresh = np.zeros_like(w_star)
            fresh[0] = 1.0
            fresh -= (fresh @ w_star) * w_star
            fresh /= np.linalg.norm(fresh)
        u = -c * perp_hat + np.sqrt(1 - c**2) * fresh
        x = gamma * w_star + rest * u
        return x / np.linalg.norm(x)

    def label(self, x: Any, p: float) -> int:
        y = int(float(self._w_star @ x) > 0)
        if (float(self._w_hat @ x) > 0) != (y == 1):
            self._w_hat = self._w_hat + (x if y else -x)
        return y


class CrashingLearner(Learner):
    """Predicts 1 and fails at round ``at``.

    >>> CrashingLearner(at=2).at
    2
    """

    id = "crashing"
    games = frozenset({MISTAKE_BOUND, EXPERTS})

    def __init__(self, at: int = 3) -> None:
        self.at = at
        self._t = 0

    def reset(self, game: GameSpec, seed: int) -> None:
        self._t = 0

    def predict(self, x: Any) -> float:
        self._t += 1
        if self._t == self.at:
            return 1 / 0
        return 1.0

    def update(self, x: Any, y: int) -> None:
        pass


class OutOfRangeLearner(CrashingLearner):
    """Predicts 1, and answers p = 1.5 (outside [0, 1]) from round ``at`` on: faults
    that cost it those rounds, the third forfeiting the game (PROTOCOL.md 6).

    >>> OutOfRangeLearner(at=1).at
    1
    """

    id = "out-of-range"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, at: int = 1) -> None:
        super().__init__(at)

    def predict(self, x: Any) -> float:
        self._t += 1
        return 1.5 if self._t >= self.at else 1.0


class OutsideAdversary(Adversary):
    """Plays an instance outside the domain at round 2.

    >>> OutsideAdversary().id
    'outside'
    """

    id = "outside"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self._t = 0

    def reset(self, game: GameSpec, seed: int) -> None:
        self._t = 0

    def instance(self) -> int:
        self._t += 1
        return 0 if self._t == 1 else 10**6

    def label(self, x: Any, p: float) -> int:
        return 0


class UniformExperts(Learner):
    """Uniform weights over d free experts.

    >>> UniformExperts().id
    'uniform'
    """

    id = "uniform"
    games = frozenset({EXPERTS})

    def __init__(self) -> None:
        self._d = 0

    def reset(self, game: GameSpec, seed: int) -> None:
        self._d = game.n_experts

    def weights(self, advice: Any) -> np.ndarray:
        return np.full(self._d, 1.0 / self._d)

    def update_costs(self, costs: Any, y: int | None) -> None:
        pass


class AlternatingCosts(Adversary):
    """Free experts: expert t mod d costs 1, the others 0.

    >>> AlternatingCosts().id
    'alternating'
    """

    id = "alternating"
    games = frozenset({EXPERTS})

    def __init__(self) -> None:
        self._t = 0
        self._d = 0

    def unsupported(self, game: GameSpec) -> str | None:
        if game.hclass is not None:
            return "free experts only"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._t, self._d = 0, game.n_experts

    def advice(self) -> None:
        return None

    def costs(self, answer: Any) -> np.ndarray:
        v = np.zeros(self._d)
        v[self._t % self._d] = 1.0
        self._t += 1
        return v


class NoisyAdvice(Adversary):
    """Free experts with random 0/1 advice; the label is expert 0's advice, flipped with
    probability ``noise``; or, with ``against=true``, the label opposite to the learner's
    prediction (adaptive).

    >>> NoisyAdvice().id
    'noisy-advice'
    """

    id = "noisy-advice"
    games = frozenset({EXPERTS})

    def __init__(self, noise: float = 0.1, against: bool = False) -> None:
        self.noise, self.against = noise, against
        self._rng = np.random.default_rng(0)
        self._advice = np.zeros(0)

    def unsupported(self, game: GameSpec) -> str | None:
        return "free experts only" if game.hclass is not None else super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._d = game.n_experts

    def advice(self) -> np.ndarray:
        self._advice = self._rng.integers(0, 2, self._d).astype(np.float64)
        return self._advice

    def costs(self, answer: Any) -> int:
        if self.against:
            is_array = isinstance(answer, np.ndarray)
            p = float(answer @ self._advice) if is_array else float(answer)
            return 0 if p >= 0.5 else 1
        y = int(self._advice[0])
        return 1 - y if self._rng.random() < self.noise else y


class RandomCosts(Adversary):
    """Free experts, no advice: i.i.d. 0/1 costs, expert 0 a little better (``edge``); or,
    with ``flip=true``, cost 1 on the learner's heavier expert of the first two and 0 on
    the other (Cover's construction, adaptive).

    >>> RandomCosts().id
    'random-costs'
    """

    id = "random-costs"
    games = frozenset({EXPERTS})

    def __init__(self, edge: float = 0.05, flip: bool = False) -> None:
        self.edge, self.flip = edge, flip
        self._rng = np.random.default_rng(0)

    def unsupported(self, game: GameSpec) -> str | None:
        return "free experts only" if game.hclass is not None else super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._d = game.n_experts
        self._p = np.full(self._d, 0.5)
        self._p[0] -= self.edge

    def advice(self) -> None:
        return None

    def costs(self, answer: Any) -> np.ndarray:
        if self.flip:
            v = np.ones(self._d)
            heavier = 0 if answer[0] >= answer[1] else 1
            v[1 - heavier] = 0.0
            v[heavier] = 1.0
            return v
        return (self._rng.random(self._d) < self._p).astype(np.float64)


class FixedSequence(Adversary):
    """Plays the given instances and labels, in order (oblivious).

    >>> FixedSequence([1], [0]).id
    'fixed-sequence'
    """

    id = "fixed-sequence"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, xs: Any = (), ys: Any = ()) -> None:
        self.xs, self.ys = list(xs), list(ys)
        self._t = 0

    def reset(self, game: GameSpec, seed: int) -> None:
        self._t = 0

    def instance(self) -> Any:
        self._t += 1
        return self.xs[(self._t - 1) % len(self.xs)]

    def label(self, x: Any, p: float) -> int:
        return int(self.ys[(self._t - 1) % len(self.ys)])


class SlowLearner(Learner):
    """Predicts 1, taking ``ms`` milliseconds a round (a game that lasts long enough to be
    watched).

    >>> SlowLearner(ms=0.5).ms
    0.5
    """

    id = "slow"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, ms: float = 2.0) -> None:
        self.ms = ms

    def predict(self, x: Any) -> float:
        import time

        time.sleep(self.ms / 1000)
        return 1.0

    def update(self, x: Any, y: int) -> None:
        pass


class GatedLearner(Learner):
    """Predicts 1, and before round ``at`` waits (at most a minute) until the file
    ``gate`` exists: a game that runs, held at a round, until the test has looked.

    >>> learner = GatedLearner(at=1, gate="")  # (no gate: never held)
    >>> learner.predict(0), learner.asked
    (1.0, 1)
    """

    id = "gated"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, at: int = 100, gate: str = "") -> None:
        self.at, self.gate, self.asked = at, gate, 0

    def predict(self, x: Any) -> float:
        import time
        from pathlib import Path

        self.asked += 1
        if self.asked == self.at and self.gate:
            deadline = time.monotonic() + 60
            while not Path(self.gate).exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return 1.0

    def update(self, x: Any, y: int) -> None:
        pass


class ChargeTheLeader(Adversary):
    """Free experts, no advice, adaptive (Cover's argument for d experts): cost 1 to the
    expert the learner puts the most weight on (the lowest index on a tie), 0 to the
    others. A learner that puts all its weight on one expert loses every round, while the
    best expert loses at most T/d.

    >>> adversary = ChargeTheLeader()
    >>> adversary.start(GameSpec("experts", 3, experts=3), seed=0)
    >>> adversary.advice() is None, adversary.costs(np.array([0.2, 0.5, 0.3])).tolist()
    (True, [0.0, 1.0, 0.0])
    """

    id = "charge-the-leader"
    games = frozenset({EXPERTS})

    def __init__(self) -> None:
        self._d = 0

    def unsupported(self, game: GameSpec) -> str | None:
        return "free experts only" if game.hclass is not None else super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._d = game.n_experts

    def advice(self) -> None:
        return None

    def costs(self, answer: Any) -> np.ndarray:
        v = np.zeros(self._d)
        v[int(np.argmax(answer))] = 1.0
        return v


class FractionalAdvice(Adversary):
    """Free experts with fractional advice, labelled against the learner (adaptive): built
    to break a Weighted-Majority that rounds costs at 1/2.

    It simulates Weighted-Majority with the *thresholded* update (w_i *= beta when
    c_i >= 1/2) and splits the experts into H, the heaviest ones until they hold half of
    the simulated weight, and the rest R. When its favourite expert (drawn from the seed)
    is in H, H advises 1/2 + margin and R 1/2 - margin; otherwise H advises 1 and R 0. The
    simulated vote then goes H's way, and the label goes against the learner's
    prediction: a deterministic learner errs every round. Against the thresholded learner
    the favourite pays 1/2 + margin when in H and 0 otherwise, 0.3 a round at d = 2 and
    margin 0.1: well below the 0.41 a round that a vote erring every round needs under
    the continuous update's bound. With ``continuous=true`` it simulates the continuous
    update w_i *= beta^c_i instead (the learner's own weights, for Weighted-Majority).

    >>> adversary = FractionalAdvice()
    >>> adversary.start(GameSpec("experts", 3, experts=2), seed=1)
    >>> adversary.advice().round(2).tolist()  # equal weights: H = {0}, the favourite, 0
    [0.6, 0.4]
    >>> adversary.costs(1.0)  # against the prediction: expert 0 pays 0.6, 1 pays 0.4
    0
    >>> adversary.advice().tolist()  # now H = {1}, without the favourite
    [0.0, 1.0]
    """

    id = "fractional-advice"
    games = frozenset({EXPERTS})

    def __init__(self, beta: float = 0.5, margin: float = 0.1, continuous: bool = False) -> None:
        self.beta, self.margin, self.continuous = beta, margin, continuous
        self._rng = np.random.default_rng(0)
        self._log_weights = np.zeros(0)
        self._advice = np.zeros(0)
        self._favourite = 0

    def unsupported(self, game: GameSpec) -> str | None:
        return "free experts only" if game.hclass is not None else super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._log_weights = np.zeros(game.n_experts)
        self._favourite = int(self._rng.integers(game.n_experts))

    def advice(self) -> np.ndarray:
        w = np.exp(self._log_weights - self._log_weights.max())
        order = np.argsort(-w, kind="stable")
        k = int(np.searchsorted(np.cumsum(w[order]), w.sum() / 2)) + 1
        heavy = np.zeros(len(w), dtype=bool)
        heavy[order[:k]] = True
        high, low = (0.5 + self.margin, 0.5 - self.margin) if heavy[self._favourite] else (
            1.0, 0.0)
        self._advice = np.where(heavy, high, low)
        return self._advice

    def costs(self, answer: Any) -> int:
        p = float(answer @ self._advice) if isinstance(answer, np.ndarray) else float(answer)
        y = 0 if p >= 0.5 else 1
        costs = np.abs(self._advice - y)
        if self.continuous:
            self._log_weights += costs * np.log(self.beta)
        else:
            self._log_weights[costs >= 0.5] += np.log(self.beta)
        return y
