"""Degree-2 polynomial thresholds on points of a line: a finite class whose targets are
not linearly separable in its input features (z, 1), and are in the features of the
degree-2 polynomial kernel (the halfspace notes; the kernel Perceptron's class).

``quadratic:n=N`` has the N points z_i = -1 + 2i/(N-1) of [-1, 1] (i = 0..N-1; z = 0
when N = 1) and the labellings sign(q(z)) of the quadratics q: 1 inside a run of
consecutive points, 1 outside one (both sides non-empty), always 0, always 1.

>>> H = make_quadratic(5)
>>> H.size, H.encode(4).tolist()
(22, [1.0, 1.0])
>>> [H.hypothesis(h) for h in (0, 1, 3)]
['never', 'always', '0 <= i < 2']
>>> w, margin = H.certificate(3)  # q(z) = -(z - c1)(z - c2), c1 = -1.25, c2 = -0.25
>>> [round(float(v), 3) for v in w], round(margin, 3)
([-0.547, -0.82, -0.171], 0.102)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.hypotheses import FiniteClass, Instance
from littlestone.games.spec import format_spec

__all__ = ["QuadraticThresholds", "make_quadratic"]

BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]


class QuadraticThresholds(FiniteClass):
    """h(x) = [q(z_x) > 0] for the quadratics q, on N points of [-1, 1]."""

    name = "quadratic"

    def __init__(self, n: int) -> None:
        self.spec = format_spec(self.name, {"n": n})
        rows = [(0, 0, True), (0, 0, False)]  # never, always
        for a in range(n + 1):
            for b in range(a + 1, n + 1):
                if (a, b) == (0, n):
                    continue  # inside all: always; outside all: never
                rows.append((a, b, True))
                if a > 0 and b < n:  # outside a run with points on both sides
                    rows.append((a, b, False))
        self._lo = np.array([r[0] for r in rows])
        self._hi = np.array([r[1] for r in rows])
        self._inside = np.array([r[2] for r in rows])
        self._arrays = (self._lo, self._hi, self._inside)
        self.size, self.domain_size, self.n_features = len(rows), n, 2
        self.points = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)

    def _test(self, arrays: tuple[NDArray[Any], ...], x: int) -> BoolArray:
        lo, hi, inside = arrays
        return ((lo <= x) & (x < hi)) == inside  # type: ignore[no-any-return]  # numpy ops

    def encode(self, x: Instance) -> FloatArray:
        return np.array([self.points[int(x)], 1.0])

    def hypothesis(self, h: int) -> str:
        if h < 2:
            return ("never", "always")[h]
        run = f"{self._lo[h]} <= i < {self._hi[h]}"
        return run if self._inside[h] else f"not {run}"

    def certificate(self, h: int) -> tuple[FloatArray, float]:
        """(w, margin): a unit w with h(x) = [w . (z^2, z, 1) > 0] on every point, and
        min_i |w . (z_i^2, z_i, 1)|."""
        step = 2.0 / (self.domain_size - 1) if self.domain_size > 1 else 2.0
        if h < 2:
            w = np.array([0.0, 0.0, -1.0 if h == 0 else 1.0])
        else:
            c1 = self.points[0] + (self._lo[h] - 0.5) * step
            c2 = self.points[0] + (self._hi[h] - 0.5) * step
            w = np.array([-1.0, c1 + c2, -c1 * c2]) * (1.0 if self._inside[h] else -1.0)
        w = w / np.linalg.norm(w)
        features = np.stack([self.points**2, self.points, np.ones_like(self.points)], axis=1)
        return w, float(np.min(np.abs(features @ w)))


def make_quadratic(n: int) -> QuadraticThresholds:
    """The class ``quadratic:n=N``."""
    return QuadraticThresholds(n)
