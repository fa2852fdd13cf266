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

__all__ = ["KERNELS", "KernelPerceptron", "gram_violation", "kernel_matrix",
           "nonseparable_bound"]

KERNELS = ("linear", "poly", "rbf")
#: The 1-D points whose Gram matrix :func:`gram_violation` checks, in units of
#: sqrt(|offset|) (a poly kernel's trouble is where offset + <u, v> changes sign).
PROBE = np.linspace(-2.0, 2.0, 41)
#: A Gram eigenvalue below -GRAM_TOLERANCE times the largest |entry| is negative.
GRAM_TOLERANCE = 1e-9


def kernel_matrix(kernel: str, a: FloatArray, b: FloatArray, degree: int = 2,
                  offset: float = 1.0, scale: float = 1.0) -> FloatArray:
    """K between the rows of a and the rows of b: ``linear`` <u, v>, ``poly``
    (offset + <u, v>)^degree, ``rbf`` exp(-scale ||u - v||^2).

    >>> kernel_matrix("poly", np.eye(2), np.eye(2), degree=2, offset=1.0).tolist()
    [[4.0, 1.0], [1.0, 4.0]]
    """
    if kernel == "rbf":
        squares = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2 * a @ b.T
        out: FloatArray = np.exp(-scale * np.maximum(squares, 0.0))
        return out
    inner = a @ b.T
    return inner if kernel == "linear" else (offset + inner) ** degree


def gram_violation(kernel: str, degree: int = 2, offset: float = 1.0,
                   scale: float = 1.0) -> str | None:
    """Why the kernel is not legal, or ``None``. A kernel is legal (K(u, v) = <phi(u),
    phi(v)> for some phi) iff every Gram matrix [K(x_i, x_j)] is positive semidefinite
    (the halfspace notes, Def. 3.1). <u, v>, exp(-scale ||u - v||^2) and (offset +
    <u, v>)^degree with offset >= 0 are (sums and products of legal kernels are legal);
    with offset < 0 the Gram matrix of some 1-D points has a negative eigenvalue, which
    the reason names.

    >>> gram_violation("poly", degree=2, offset=1.0) is None
    True
    >>> gram_violation("poly", degree=2, offset=-1.0)
    'poly with offset=-1 is not a legal kernel: the Gram matrix of the points ...'
    """
    points = (PROBE * math.sqrt(abs(offset)) if offset else PROBE)[:, None]
    gram = kernel_matrix(kernel, points, points, degree, offset, scale)
    lowest = float(np.linalg.eigvalsh(gram)[0])
    if lowest >= -GRAM_TOLERANCE * float(np.abs(gram).max()):
        return None
    return (f"{kernel} with offset={offset:g} is not a legal kernel: the Gram matrix of the "
            f"points {points[0, 0]:g}..{points[-1, 0]:g} (1-D, {len(points)}) has eigenvalue "
            f"{lowest:.3g} < 0 (legal iff every Gram matrix is positive semidefinite)")


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
    ``kernel`` = ``linear`` (<u, v>: the Perceptron, in dual form), ``poly`` ((offset +
    <u, v>)^degree, offset 1 by default) or ``rbf`` (exp(-scale ||u - v||^2)); an illegal
    kernel (a Gram matrix not positive semidefinite: ``poly`` with offset < 0) is refused
    with the reason (:func:`gram_violation`). On ``quadratic:n=N`` (features (z, 1))
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

    def __init__(self, kernel: str = "poly", degree: int = 2, scale: float = 1.0,
                 offset: float = 1.0) -> None:
        if kernel not in KERNELS:
            raise ValueError(f"kernel={kernel!r} must be one of {', '.join(KERNELS)}")
        if degree < 1:
            raise ValueError(f"degree={degree} must be >= 1")
        if not scale > 0:
            raise ValueError(f"scale={scale} must be > 0")
        if not math.isfinite(offset):
            raise ValueError(f"offset={offset} must be a finite number")
        reason = gram_violation(kernel, degree, offset, scale)
        if reason is not None:
            raise ValueError(reason)
        self.kernel, self.degree, self.scale, self.offset = kernel, degree, scale, offset
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
        return kernel_matrix(self.kernel, a, b, self.degree, self.offset, self.scale)

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

    def report(self) -> dict[str, int]:
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
                    squares if self.kernel == "linear" else
                    (self.offset + squares) ** self.degree)
        radius = math.sqrt(float(np.max(diagonal)))
        value, gamma = nonseparable_bound(margins, radius)
        return Bound(value, f"R^2/gamma^2 + (2/gamma) TD_gamma(u), u = w_T/||w_T||, R = "
                     f"{radius:.4g}, gamma = {gamma:.4g} (non-separable kernel Perceptron)")
