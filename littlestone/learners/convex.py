"""Online convex optimisation (UML section 21.3, in its general form): online gradient
descent over a ball on the logistic and the squared losses of linear predictors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import HalfspaceClass
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners.base import Learner, register

__all__ = ["LOSSES", "OGDBall", "best_in_ball", "lipschitz", "losses"]

FloatArray = NDArray[np.float64]
LOSSES = ("logistic", "squared")
#: Most cells of the rounds x features history kept to find the best comparator.
HISTORY_CELLS = 1 << 18
#: Largest radius and step (beyond them the bound's arithmetic overflows).
RADIUS_LIMIT = 1e6
#: Iterations of the accelerated projected gradient that finds the best comparator.
COMPARATOR_ITERATIONS = 400


def lipschitz(loss: str, radius: float) -> float:
    """L, a bound on ||grad f_t(w)|| over the ball ||w|| <= B for unit instances: 1 for
    the logistic loss, 2 (B + 1) for the squared one.

    >>> lipschitz("logistic", 5.0), lipschitz("squared", 1.0)
    (1.0, 4.0)
    """
    return 1.0 if loss == "logistic" else 2.0 * (radius + 1.0)


def losses(loss: str, scores: FloatArray, signs: FloatArray) -> FloatArray:
    """f_t at the scores <w, x_t>, labels y_t in {-1, +1}: ln(1 + e^(-y s)) or (s - y)^2.

    >>> losses("squared", np.array([0.5]), np.array([1.0])).tolist()
    [0.25]
    """
    if loss == "logistic":
        out: FloatArray = np.logaddexp(0.0, -signs * scores)
        return out
    squares: FloatArray = (scores - signs) ** 2
    return squares


def _slopes(loss: str, scores: FloatArray, signs: FloatArray) -> FloatArray:
    """d f_t / d s at the scores: the gradient of f_t(w) is this times x_t."""
    if loss == "logistic":
        slopes: FloatArray = -signs / (1.0 + np.exp(signs * scores))
        return slopes
    linear: FloatArray = 2.0 * (scores - signs)
    return linear


def _project(w: FloatArray, radius: float) -> FloatArray:
    norm = float(np.linalg.norm(w))
    return w if norm <= radius else w * (radius / norm)


def best_in_ball(features: FloatArray, signs: FloatArray, loss: str, radius: float,
                 iterations: int = COMPARATOR_ITERATIONS) -> tuple[FloatArray, float]:
    """(u, sum_t f_t(u)): a minimiser of the total loss over ||u|| <= B, by accelerated
    projected gradient (the losses are smooth: the step is 1/smoothness of the mean,
    1/4 max||x||^2 logistic, 2 max||x||^2 squared). Any u of the ball is a comparator
    the regret bound holds against; this one comes within a small fraction of the best.

    >>> u, total = best_in_ball(np.array([[1.0, 0.0]]), np.array([1.0]), "squared", 2.0)
    >>> u.round(6).tolist(), round(total, 9)
    ([1.0, 0.0], 0.0)
    """
    rounds, d = features.shape
    if rounds == 0:
        return np.zeros(d), 0.0
    top = float(np.max(np.einsum("ij,ij->i", features, features)))
    smooth = (0.25 if loss == "logistic" else 2.0) * max(top, 1e-12)
    step = 1.0 / smooth
    u = np.zeros(d)
    v = u.copy()
    momentum = 1.0
    for _ in range(iterations):
        grad = features.T @ _slopes(loss, features @ v, signs) / rounds
        u_next = _project(v - step * grad, radius)
        next_momentum = (1 + math.sqrt(1 + 4 * momentum**2)) / 2
        v = u_next + ((momentum - 1) / next_momentum) * (u_next - u)
        u, momentum = u_next, next_momentum
    return u, float(losses(loss, features @ u, signs).sum())


@register
class OGDBall(Learner):
    """Online gradient descent over the ball ||w|| <= B on a convex loss of <w, x>: the
    logistic ln(1 + e^(-y <w, x>)) or the squared (<w, x> - y)^2, y in {-1, +1}; regret
    <= B^2/(2 eta) + (eta/2) sum_t ||v_t||^2 <= B L sqrt(T) against every u of the ball
    (UML Thm 21.15, eta = B/(L sqrt(T))).

    w_1 = 0, v_t = grad f_t(w_t), w_{t+1} = Proj_ball(w_t - eta v_t). Instances are made
    unit vectors (halfspaces' already are; a finite class's features are divided by their
    norm), so L = 1 for the logistic loss and 2 (B + 1) for the squared one. In the
    mistake-bound game it answers p = 1/(1 + e^(-<w, x>)) (logistic) or (1 + <w, x>)/2
    clipped to [0, 1] (squared: with B > 1 the score <w, x> leaves [-1, 1], and p must be a
    probability; the loss and its gradient use the unclipped score). The referee scores
    |p - y|, while the theorem is about the convex loss, which it reports: ``convex_loss``
    sum_t f_t(w_t), ``regret_bound`` (the first form, from the gradients seen),
    ``tuned_bound`` B L sqrt(T), and, while the history fits in HISTORY_CELLS,
    ``best_loss`` of the best u of the ball and ``convex_regret`` against it. It prints no
    mistake bound. Beside ``ogd``, the linear loss over the simplex of the experts game.

    >>> from littlestone.games.classes import make_class
    >>> learner = OGDBall(loss="squared", radius=1.0, eta=0.5)
    >>> learner.start(GameSpec("mistake-bound", 2, make_class("halfspaces:d=2,margin=0.1")), 0)
    >>> x = np.array([1.0, 0.0])
    >>> learner.predict(x), learner.update(x, 1), learner.w.tolist()  # v = 2 (0 - 1) x
    (0.5, None, [1.0, 0.0])
    """

    id = "ogd-ball"
    games = frozenset({MISTAKE_BOUND})
    deterministic = False

    def __init__(self, loss: str = "logistic", radius: float = 1.0,
                 eta: float | None = None) -> None:
        if loss not in LOSSES:
            raise ValueError(f"loss={loss!r} must be one of {', '.join(LOSSES)}")
        if not 0 < radius <= RADIUS_LIMIT:
            raise ValueError(f"radius={radius} must be in (0, {RADIUS_LIMIT:g}]")
        if eta is not None and not 0 < eta <= RADIUS_LIMIT:
            raise ValueError(f"eta={eta} must be in (0, {RADIUS_LIMIT:g}]")
        self.loss, self.radius, self.eta = loss, radius, eta
        self.w: FloatArray = np.zeros(0)
        self.convex_loss = self.squares = 0.0
        self.rounds = 0
        self._eta = 0.0
        self._encode: Any = None
        self._history: list[FloatArray] = []
        self._signs: list[float] = []
        self._keep = False

    def unsupported(self, game: GameSpec) -> str | None:
        if self.eta is None and game.horizon is None:
            return "without eta it needs the horizon T announced"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert game.hclass is not None
        d = game.hclass.n_features
        self.w = np.zeros(d)
        self.convex_loss = self.squares = 0.0
        self.rounds = 0
        self._T = max(game.rounds, 1)
        self._eta = self.eta if self.eta is not None else self.radius / (
            lipschitz(self.loss, self.radius) * math.sqrt(self._T))
        self._encode = None if isinstance(game.hclass, HalfspaceClass) else game.hclass.encode
        self._history, self._signs = [], []
        self._keep = game.rounds * d <= HISTORY_CELLS

    def _features(self, x: Any) -> FloatArray:
        z = np.asarray(x if self._encode is None else self._encode(x), dtype=np.float64)
        norm = float(np.linalg.norm(z))
        return z / norm if norm > 0 and abs(norm - 1.0) > 1e-12 else z

    def predict(self, x: Any) -> float:
        score = float(self.w @ self._features(x))
        if self.loss == "logistic":
            return float(1.0 / (1.0 + math.exp(-score)) if score > -700 else 0.0)
        return min(1.0, max(0.0, (1.0 + score) / 2.0))

    def update(self, x: Any, y: int) -> None:
        z = self._features(x)
        sign = 1.0 if y == 1 else -1.0
        score = np.array([float(self.w @ z)])
        signs = np.array([sign])
        self.convex_loss += float(losses(self.loss, score, signs)[0])
        gradient = float(_slopes(self.loss, score, signs)[0]) * z
        self.squares += float(gradient @ gradient)
        self.w = _project(self.w - self._eta * gradient, self.radius)
        self.rounds += 1
        if self._keep:
            self._history.append(z)
            self._signs.append(sign)

    def regret_bound(self) -> float:
        """B^2/(2 eta) + (eta/2) sum_t ||v_t||^2 for the rounds played (UML Thm 21.15)."""
        return self.radius**2 / (2 * self._eta) + self._eta * self.squares / 2

    def report(self) -> dict[str, float | str]:
        out: dict[str, float | str] = {
            "convex_loss": self.convex_loss, "regret_bound": self.regret_bound(),
            "regret_bound_name": "B^2/(2 eta) + (eta/2) sum_t ||v_t||^2 (UML Thm 21.15), "
                                 f"eta = {self._eta:.6g}",
            "tuned_bound": self.radius * lipschitz(self.loss, self.radius) * math.sqrt(self._T),
        }
        if self._keep and self._history:
            _, best = best_in_ball(np.array(self._history), np.array(self._signs), self.loss,
                                   self.radius)
            out.update(best_loss=best, convex_regret=self.convex_loss - best)
        return out
