"""The modified Perceptron of the halfspace notes (Blum, Frieze, Kannan & Vempala 1996;
Dunagan & Vempala 2004): a random start w_1 and an update that projects, at most
ln(1/c^2)/ln(1/(1 - sigma^2)) updates whatever the target's margin, c = cos(w*, w_1) > 0
(<= ln(d)/sigma^2 only when c >= 1/sqrt(d); no bound when c <= 0)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import HalfspaceClass
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.learners.base import Learner, register

__all__ = [
    "ModifiedPerceptron",
    "RescaledRun",
    "consistent_halfspace",
    "rescaled_perceptron",
    "run_to_no_update",
    "update_bound",
]

FloatArray = NDArray[np.float64]


def update_bound(sigma: float, cosine: float) -> float:
    """The most updates from a start w_1 with cos(w*, w_1) = ``cosine`` > 0:
    ln(1/cosine^2) / ln(1/(1 - sigma^2)) (<= 2 ln(1/cosine)/sigma^2; ln(d)/sigma^2 when
    cosine >= 1/sqrt(d)).

    >>> round(update_bound(0.1, 1 / math.sqrt(100)), 2), round(math.log(100) / 0.1**2, 2)
    (458.21, 460.52)
    """
    if not cosine > 0:
        return math.inf
    return max(0.0, math.log(1 / cosine**2) / -math.log1p(-sigma**2))


@register
class ModifiedPerceptron(Learner):
    """The modified Perceptron: predict [<w, x> > 0] from a random unit start w_1; on a
    mistake on x with |cos(w, x)| >= sigma, project: w <- w - <w, u> u, u = x/||x||. At most
    ln(1/c^2)/ln(1/(1 - sigma^2)) updates, c = cos(w*, w_1) > 0, for every unit w* that
    labels the data, with any margin, 0 included; that is <= ln(d)/sigma^2 (the halfspace
    notes: "log n / sigma^2 mistakes") only when c >= 1/sqrt(d).

    A mistake with a = (2y - 1) u means <a, w> <= -sigma ||w|| and <a, w*> >= 0. The
    projection then keeps <w*, w> from falling (it adds -<a, w><a, w*> >= 0) and shrinks
    ||w||^2 by <a, w>^2 >= sigma^2 ||w||^2; cos(w*, w) <= 1 bounds the updates by the form
    above. A random start has c >= 1/sqrt(d) with a constant probability (about 1/8 or
    more) against a target fixed in advance; an adversary that knows the start (it comes
    from the learner's seed) can pick w* of any small cosine with it, or label against it
    (c <= 0, and no bound). Mistakes with |cos(w, x)| < sigma are not bounded and cause no
    update: it promises to be right where its own hypothesis is sure, not everywhere.

    It prints no mistake bound. It reports ``updates``, ``unsure_mistakes``, its
    ``start_vector`` w_1 and, once the target w* is revealed, ``start_cosine`` c and
    ``update_bound``, the bound of that c (``None`` when c <= 0: none applies). Instances
    are unit vectors on ``halfspaces`` (any class's features elsewhere).

    >>> from littlestone.games.classes import make_class
    >>> learner = ModifiedPerceptron(sigma=0.5)
    >>> learner.start(GameSpec("mistake-bound", 2, make_class("halfspaces:d=2,margin=0.1")), 0)
    >>> learner.w = np.array([0.6, 0.8]); x = np.array([0.0, 1.0])
    >>> learner.predict(x), learner.update(x, 0), learner.w.tolist()  # cos 0.8: projected
    (1.0, None, [0.6, 0.0])
    """

    id = "modified-perceptron"
    games = frozenset({MISTAKE_BOUND})
    deterministic = False  # its start is drawn from its seed

    def __init__(self, sigma: float = 0.1) -> None:
        if not 0 < sigma < 1:
            raise ValueError(f"sigma={sigma} must be in (0, 1)")
        self.sigma = sigma
        self.w: FloatArray = np.zeros(0)
        self.start_vector: FloatArray = np.zeros(0)
        self.updates = self.unsure_mistakes = 0
        self.start_cosine: float | None = None  # cos(w*, w_1), once w* is revealed
        self._encode: Any = None

    def reset(self, game: GameSpec, seed: int) -> None:
        assert game.hclass is not None
        d = game.hclass.n_features
        w = np.random.default_rng(seed).standard_normal(d)
        self.w = w / np.linalg.norm(w)
        self.start_vector = self.w.copy()
        self.updates = self.unsure_mistakes = 0
        self.start_cosine = None
        hclass = game.hclass
        self._encode = None if isinstance(hclass, HalfspaceClass) else hclass.encode

    def _features(self, x: Any) -> FloatArray:
        return np.asarray(x if self._encode is None else self._encode(x), dtype=np.float64)

    def predict(self, x: Any) -> float:
        return 1.0 if float(self.w @ self._features(x)) > 0.0 else 0.0

    def update(self, x: Any, y: int) -> None:
        z = self._features(x)
        score = float(self.w @ z)
        if (score > 0.0) == (y == 1):
            return
        scale = float(np.linalg.norm(self.w)) * float(np.linalg.norm(z))
        if scale > 0 and abs(score) >= self.sigma * scale:
            u = z / float(np.linalg.norm(z))
            self.w = self.w - float(self.w @ u) * u
            self.updates += 1
        else:
            self.unsure_mistakes += 1

    def final_bound(self, game: GameSpec, measured: Mapping[str, Any]) -> Bound | None:
        """No mistake bound; reads c = cos(w*, w_1) off the revealed ``target`` (a
        halfspace game's; the reported ``update_bound`` is that c's)."""
        target = measured.get("target")
        if isinstance(target, list) and len(target) == len(self.start_vector):
            w_star = np.asarray(target, dtype=np.float64)
            size = float(np.linalg.norm(w_star))
            self.start_cosine = float(w_star @ self.start_vector) / size if size > 0 else None
        return None

    def report(self) -> dict[str, int | float | list[float] | None]:
        """The updates and unsure mistakes, the start w_1, and, with the target revealed,
        c = cos(w*, w_1) and the update bound of that c (``None`` when c <= 0)."""
        c = self.start_cosine
        bound = None if c is None else update_bound(self.sigma, c)
        return {"updates": self.updates, "unsure_mistakes": self.unsure_mistakes,
                "start_vector": [float(v) for v in self.start_vector], "start_cosine": c,
                "update_bound": bound if bound is not None and math.isfinite(bound) else None}


def run_to_no_update(learner: ModifiedPerceptron, xs: FloatArray, ys: NDArray[np.bool_],
                     max_passes: int) -> tuple[int, int]:
    """(passes, updates): the modified Perceptron (started) cycled through the sample until
    a pass makes no update, or ``max_passes`` passes. After a pass without an update its w
    labels right every example with |cos(w, x)| >= sigma (the halfspace notes: it has
    stopped, and is sure where it is right); the examples where it is unsure it may label
    either way. On a sample labelled by w*, the updates are at most
    ``update_bound(sigma, cos(w*, w_1))`` whatever the margin."""
    updates = learner.updates
    for passes in range(1, max_passes + 1):
        before = learner.updates
        for x, y in zip(xs, ys.tolist(), strict=True):
            learner.update(x, int(y))
        if learner.updates == before:
            return passes, learner.updates - updates
    return max_passes, learner.updates - updates


#: The Perceptron phase's length, in n^2 updates (Dunagan & Vempala 2004: 16 n^2).
PERCEPTRON_PHASE = 16
#: sigma = 1/(SIGMA_SCALE n) in the improvement phase (Dunagan & Vempala 2004: 32).
SIGMA_SCALE = 32


@dataclass(frozen=True)
class RescaledRun:
    """The rescaled Perceptron's answer: a point x with Ax > 0 (``None`` if the budget ran
    out first), the rescalings, and the updates of both phases, all told."""

    point: FloatArray | None
    rescalings: int
    updates: int


def _unit_rows(a: FloatArray) -> FloatArray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)  # type: ignore[no-any-return]  # numpy


def rescaled_perceptron(a: FloatArray, rng: np.random.Generator,
                        max_rounds: int = 400) -> RescaledRun:
    """A point x with Ax > 0 for a feasible homogeneous system (rows a_i nonzero), by
    Dunagan & Vempala 2004's rescaled Perceptron: a polynomial algorithm for linear
    programs, O(m n^4 log n log(1/rho)) with rho the radius of the largest ball of the
    unit sphere inside the cone {x : Ax > 0}.

    Each round runs (1) the Perceptron on the normalised rows for 16 n^2 updates, then
    (2) the modified Perceptron, sigma = 1/(32 n), from a random unit x: while some row
    has cos(a_i, x) < -sigma, x <- x - <a_i, x> a_i (a_i a unit row); at most ln(n)/sigma^2
    updates (else the round ends without a rescaling). Either phase returns as soon as
    Ax > 0; after ``max_rounds`` rounds the answer is ``None``. When phase (2)
    ends with every cos(a_i, x) >= -sigma, x is near the cone, and the space is stretched
    along it: A <- A (I + x x^T) (x a unit vector). An answer is checked on the original
    rows (round-off in the stretched ones is not trusted). This grows rho by a factor 1 + 1/(3n)
    with constant probability, so O(n log(1/rho)) rescalings suffice; the answer is mapped
    back through the product B of the stretches. The general LP {x : Cx < d} is the system
    of the rows (-C_i, d_i) and (0, .., 0, 1), x the first n coordinates over the last.

    >>> run = rescaled_perceptron(np.array([[1.0, 0.0], [0.0, 1.0]]), np.random.default_rng(0))
    >>> bool(np.all(np.array([[1.0, 0.0], [0.0, 1.0]]) @ run.point > 0))
    True
    """
    a = np.asarray(a, dtype=np.float64)
    n = a.shape[1]
    rows = _unit_rows(a)
    stretch = np.eye(n)
    sigma = 1.0 / (SIGMA_SCALE * n)
    improvement_steps = max(1, math.ceil(math.log(max(n, 2)) / sigma**2))
    updates = rescalings = 0
    for _ in range(max_rounds):
        x = np.zeros(n)
        for _ in range(PERCEPTRON_PHASE * n * n):
            scores = rows @ x
            worst = int(np.argmin(scores))
            if scores[worst] > 0 and bool(np.all(a @ (stretch @ x) > 0)):
                return RescaledRun(stretch @ x, rescalings, updates)
            x = x + rows[worst]
            updates += 1
        if bool(np.all(a @ (stretch @ x) > 0)):
            return RescaledRun(stretch @ x, rescalings, updates)
        x = np.asarray(rng.standard_normal(n), dtype=np.float64)  # the improvement phase
        x /= np.linalg.norm(x)
        near = False
        for _ in range(improvement_steps):
            scores = rows @ x
            worst = int(np.argmin(scores))
            score = float(scores[worst])
            if score > 0 and bool(np.all(a @ (stretch @ x) > 0)):
                return RescaledRun(stretch @ x, rescalings, updates)
            size = math.sqrt(float(x @ x))
            if size == 0:  # projected to the origin: a fresh round
                break
            if score >= -sigma * size:
                near = True
                break
            x = x - score * rows[worst]
            updates += 1
        if near:
            x /= np.linalg.norm(x)
            stretch_now = np.eye(n) + np.outer(x, x)
            rows = _unit_rows(rows @ stretch_now)
            stretch = stretch @ stretch_now
            rescalings += 1
    return RescaledRun(None, rescalings, updates)


def consistent_halfspace(xs: FloatArray, ys: NDArray[np.bool_], rng: np.random.Generator,
                         max_rounds: int = 400) -> tuple[FloatArray, float] | None:
    """A halfspace (w, b), [<w, x> + b > 0], consistent with the sample, by linear
    programming (the PAC notes' learner of linear separators): the system
    s_i (<w, x_i> + b) > 0, s_i = +-1 the labels, solved by :func:`rescaled_perceptron`
    (no LP library: numpy only). ``None`` when the budget runs out, as it must when no
    halfspace separates the sample."""
    signs = np.where(ys, 1.0, -1.0)
    rows = signs[:, None] * np.hstack([xs, np.ones((len(xs), 1))])
    run = rescaled_perceptron(rows, rng, max_rounds)
    if run.point is None:
        return None
    return run.point[:-1], float(run.point[-1])
