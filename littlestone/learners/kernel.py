"""The kernel Perceptron (the halfspace notes): the Perceptron in dual form, over a
kernel's feature space, with the non-separable mistake bound printed from the data."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import HalfspaceClass
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.learners.base import Learner, register

FloatArray = NDArray[np.float64]

__all__ = ["KERNELS", "KernelPerceptron", "nonseparable_bound"]

KERNELS = ("linear", "poly", "rbf")


def nonseparable_bound(margins: FloatArray, radius: float) -> tuple[float, float]:
    """(min over gamma > 0 of R^2/gamma^2 + (2/gamma) TD_gamma, the gamma attaining it),
    TD_gamma = sum_t max(0, gamma - m_t), the m_t = y_t <u, phi(x_t)> of one unit u: the
    Perceptron's mistakes are at most this for every u (Freund & Schapire 1999; with
    R = 1: 1/gamma^2 + (2/gamma) TD_gamma). The minimum is at some m_t or on a grid.

    >>> [round(v, 3) for v in nonseparable_bound(np.array([0.5, 0.5, 0.5]), 1.0)]
    [3.753, 0.645]
    >>> nonseparable_bound(np.array([0.5, -0.5]), 1.0)  # gamma = R: 1 + 2 (0.5 + 1.5)
    (5.0, 1.0)
    """
    positive = margins[margins > 0]
    grid = np.geomspace(1e-4, max(radius, 1e-4), 64)
    candidates = np.unique(np.concatenate([positive, grid]))
    deficiency = np.maximum(0.0, candidates[:, None] - margins[None, :]).sum(axis=1)
    values = radius**2 / candidates**2 + 2 * deficiency / candidates
    best = int(np.argmin(values))
    return float(values[best]), float(candidates[best])


@register
class KernelPerceptron(Learner):
    """The kernel Perceptron: mistakes <= R^2/gamma^2 + (2/gamma) TD_gamma(u) for every unit u
    of the kernel's feature space, gamma > 0 (printed for u = w_T/||w_T||; (R/gamma)^2 when
    separable with margin gamma, as (||w*|| R / gamma)^2 for a target w*).

    It predicts [f(x) > 0], f(x) = sum over its past mistakes i of (2 y_i - 1) K(x_i, x),
    on the class's features (``encode``; halfspaces: the instance itself), with
    ``kernel`` = ``linear`` (<u, v>: the Perceptron, in dual form), ``poly`` ((1 + <u, v>)
    ^degree) or ``rbf`` (exp(-scale ||u - v||^2)). On ``quadratic:n=N`` (features (z, 1))
    the targets are not linearly separable, and are with ``poly`` degree 2. The bound it
    prints is the non-separable Perceptron bound (TD_gamma the total hinge deficiency of
    the whole sequence against u, R the largest sqrt(K(x, x)) seen), minimised over gamma,
    for u its own final weight vector: the theorem holds for every u at once.

    >>> from littlestone.games.classes import make_class
    >>> learner = KernelPerceptron()
    >>> learner.start(GameSpec("mistake-bound", 4, make_class("quadratic:n=3")), seed=0)
    >>> learner.predict(1), learner.update(1, 1), learner.predict(0)  # z = 0, then z = -1
    (0.0, None, 1.0)
    >>> learner.update(0, 0); learner.predict(2), learner.mistakes  # K(-1, 1) = 0: f = 1
    (1.0, 2)
    """

    id = "kernel-perceptron"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, kernel: str = "poly", degree: int = 2, scale: float = 1.0) -> None:
        if kernel not in KERNELS:
            raise ValueError(f"kernel={kernel!r} must be one of {', '.join(KERNELS)}")
        if degree < 1:
            raise ValueError(f"degree={degree} must be >= 1")
        if not scale > 0:
            raise ValueError(f"scale={scale} must be > 0")
        self.kernel, self.degree, self.scale = kernel, degree, scale
        self.mistakes = 0
        self._encode: Any = None
        self._seen: list[FloatArray] = []
        self._labels: list[int] = []
        self._support: list[FloatArray] = []
        self._signs: list[float] = []

    def reset(self, game: GameSpec, seed: int) -> None:
        assert game.hclass is not None
        self._encode = None if isinstance(game.hclass, HalfspaceClass) else game.hclass.encode
        self._seen, self._labels, self._support, self._signs = [], [], [], []
        self.mistakes = 0

    def _k(self, a: FloatArray, b: FloatArray) -> FloatArray:
        """K between the rows of a and the rows of b."""
        if self.kernel == "rbf":
            squares = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2 * a @ b.T
            out: FloatArray = np.exp(-self.scale * np.maximum(squares, 0.0))
            return out
        inner = a @ b.T
        return inner if self.kernel == "linear" else (1.0 + inner) ** self.degree

    def _features(self, x: Any) -> FloatArray:
        z: FloatArray = np.asarray(x, dtype=np.float64) if self._encode is None else self._encode(x)
        return z

    def _score(self, z: FloatArray) -> float:
        if not self._support:
            return 0.0
        return float(np.asarray(self._signs) @ self._k(np.asarray(self._support), z[None, :])[:, 0])

    def predict(self, x: Any) -> float:
        return 1.0 if self._score(self._features(x)) > 0.0 else 0.0

    def update(self, x: Any, y: int) -> None:
        z = np.array(self._features(x), dtype=np.float64)  # a copy: x is the referee's
        self._seen.append(z)
        self._labels.append(y)
        if (self._score(z) > 0.0) != bool(y):
            self._support.append(z)
            self._signs.append(1.0 if y else -1.0)
            self.mistakes += 1

    def report(self) -> dict[str, Any]:
        return {"updates": self.mistakes}

    def bound(self, game: GameSpec) -> Bound | None:
        if not self._support:
            return None
        seen, support = np.asarray(self._seen), np.asarray(self._support)
        signs = np.asarray(self._signs)
        norm = math.sqrt(max(float(signs @ self._k(support, support) @ signs), 1e-300))
        f = self._k(seen, support) @ signs
        margins = (2 * np.asarray(self._labels) - 1) * f / norm
        squares = np.einsum("ij,ij->i", seen, seen)  # K(x, x) for every x seen
        diagonal = (np.ones_like(squares) if self.kernel == "rbf" else
                    squares if self.kernel == "linear" else (1.0 + squares) ** self.degree)
        radius = math.sqrt(float(np.max(diagonal)))
        value, gamma = nonseparable_bound(margins, radius)
        return Bound(value, f"R^2/gamma^2 + (2/gamma) TD_gamma(u), u = w_T/||w_T||, R = "
                     f"{radius:.4g}, gamma = {gamma:.4g} (non-separable kernel Perceptron)")
