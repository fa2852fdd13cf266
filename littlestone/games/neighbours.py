"""Nearest neighbours (UML ch. 19): the k-NN rule, and the experiments of Thm 19.3 (1-NN),
Thm 19.5 (k-NN) and Thm 19.4 (the curse of dimensionality), with true errors exact.

The distributions are those of Thm 19.4's proof: the marginal is uniform on the grid
G = {0, 1/c, ..., 1}^d of (c + 1)^d points of [0, 1]^d (c a whole number), and since two
grid points are at least 1/c apart, *every* eta: G -> [0, 1] is c-Lipschitz. Here eta(x)
is q or 1 - q, each with probability 1/2 (:func:`grid_distribution`), so the Bayes error
L_D(h*) = E[min(eta, 1 - eta)] is q; q = 0 is a random labelling. The true error of a
rule's output h is L_D(h) = mean over G of eta [h = 0] + (1 - eta) [h = 1], computed
exactly (:func:`true_error`), and :func:`nn_experiment` averages it over samples S ~ D^m.

- Thm 19.3: E_S[L_D(h_S)] <= 2 L_D(h*) + 4 c sqrt(d) m^(-1/(d+1)) for 1-NN
  (:func:`nn_bound`);
- Thm 19.5: E_S[L_D(h_S)] <= (1 + sqrt(8/k)) L_D(h*) + (6 c sqrt(d) + k) m^(-1/(d+1))
  for k-NN, k >= 10 (:func:`knn_bound`);
- Thm 19.4: for every rule, some such D with L_D(h*) = 0 has E_S[L_D] > 1/4 once
  m <= (c + 1)^d / 2. Averaged over the random labellings (q = 0), any rule errs with
  probability 1/2 on an instance it has not seen, so E = (1/2)(1 - 1/N)^m exactly for
  a rule that labels the instances it has seen as it saw them, N = (c + 1)^d
  (:func:`unseen_error`), and > 1/4 for N >= 3.

>>> round(nn_bound(0.1, c=2, d=2, m=1000), 3)
1.331
>>> round(unseen_error(9, 4), 3)  # c = 2, d = 2: m = 4 <= 9/2
0.312
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import SpecError

__all__ = ["GridDistribution", "NeighbourRun", "grid_distribution", "knn_bound", "knn_predict",
           "nn_bound", "nn_experiment", "true_error", "unseen_error"]

FloatArray = NDArray[np.float64]
#: The largest grid an experiment builds (its true errors are sums over every point).
GRID_LIMIT = 1 << 16


def knn_predict(points: FloatArray, labels: NDArray[np.int64], queries: FloatArray,
                k: int) -> NDArray[np.bool_]:
    """The k-NN rule (UML 19.1) in the Euclidean metric: the majority label of the k
    training points nearest each query (the earlier point first on equal distances; a tied
    vote is 1; no training point: 1).

    >>> knn_predict(np.array([[0.0], [1.0], [0.9]]), np.array([0, 1, 1]), np.array([[0.2]]),
    ...             1).tolist()
    [False]
    """
    if len(points) == 0:
        return np.ones(len(queries), dtype=np.bool_)
    k = min(k, len(points))
    squares = (queries**2).sum(axis=1)[:, None] - 2 * queries @ points.T
    # rounded, so that equal distances compare equal and the earlier point wins
    distances = np.round(squares + (points**2).sum(axis=1)[None, :], 9)
    if k == 1:  # argmin returns the first of equal minima
        nearest = np.argmin(distances, axis=1)[:, None]
    else:
        nearest = np.argsort(distances, axis=1, kind="stable")[:, :k]
    ones = np.asarray(labels)[nearest].sum(axis=1)
    return 2 * ones >= k  # type: ignore[no-any-return]  # numpy comparison


@dataclass(frozen=True)
class GridDistribution:
    """D over [0, 1]^d x {0, 1}: uniform on the grid points, P[y = 1 | x] = eta(x)."""

    c: int
    d: int
    points: FloatArray
    eta: FloatArray

    @property
    def bayes_error(self) -> float:
        """L_D(h*) = E[min(eta(x), 1 - eta(x))], h* = 1[eta > 1/2]."""
        return float(np.minimum(self.eta, 1 - self.eta).mean())


def grid_distribution(c: int, d: int, q: float, rng: np.random.Generator) -> GridDistribution:
    """The grid of spacing 1/c in [0, 1]^d, eta(x) = q or 1 - q at random (c-Lipschitz).

    >>> D = grid_distribution(2, 2, 0.1, np.random.default_rng(0))
    >>> D.points.shape, round(D.bayes_error, 3)
    ((9, 2), 0.1)
    """
    if c < 1 or d < 1 or (c + 1) ** d > GRID_LIMIT:
        raise SpecError(f"c={c}, d={d}: need c, d >= 1 and (c + 1)^d <= {GRID_LIMIT} points")
    if not 0 <= q <= 0.5:
        raise SpecError(f"q={q} must be in [0, 1/2]")
    axes = np.meshgrid(*[np.arange(c + 1) / c] * d, indexing="ij")
    points = np.stack([a.ravel() for a in axes], axis=1)
    eta = np.where(rng.random(len(points)) < 0.5, q, 1 - q)
    return GridDistribution(c, d, points, eta)


def true_error(dist: GridDistribution, h: NDArray[np.bool_]) -> float:
    """L_D(h) for h given by its labels on the grid points, exactly."""
    return float(np.where(h, 1 - dist.eta, dist.eta).mean())


def nn_bound(bayes: float, c: float, d: int, m: int) -> float:
    """Thm 19.3's bound on E[L_D(h_S)] for 1-NN: 2 L_D(h*) + 4 c sqrt(d) m^(-1/(d+1))."""
    return 2 * bayes + 4 * c * math.sqrt(d) * math.pow(m, -1 / (d + 1))


def knn_bound(bayes: float, c: float, d: int, m: int, k: int) -> float:
    """Thm 19.5's bound for k-NN (k >= 10): (1 + sqrt(8/k)) L_D(h*) + (6 c sqrt(d) + k)
    m^(-1/(d+1))."""
    rate = math.pow(m, -1 / (d + 1))
    return (1 + math.sqrt(8 / k)) * bayes + (6 * c * math.sqrt(d) + k) * rate


def unseen_error(points: int, m: int) -> float:
    """(1/2)(1 - 1/N)^m: the error, averaged over random labellings of N equally likely
    points, of a rule that labels the points of its sample as they were labelled."""
    return 0.5 * (1 - 1 / points) ** m


@dataclass(frozen=True)
class NeighbourRun:
    """Repeated runs of one rule: the mean true error, its standard error, the Bayes
    error (mean over the runs' distributions)."""

    mean: float
    standard_error: float
    bayes: float


def nn_experiment(c: int, d: int, q: float, m: int, k: int, runs: int,
                  rng: np.random.Generator) -> NeighbourRun:
    """``runs`` independent runs of the k-NN rule: a fresh D (:func:`grid_distribution`)
    and S ~ D^m each time, and L_D(h_S) exactly.

    >>> run = nn_experiment(2, 2, 0.0, 4, 1, 200, np.random.default_rng(1))
    >>> abs(run.mean - unseen_error(9, 4)) < 4 * run.standard_error
    True
    """
    errors = []
    bayes = []
    for _ in range(runs):
        dist = grid_distribution(c, d, q, rng)
        rows = rng.integers(0, len(dist.points), size=m)
        labels = (rng.random(m) < dist.eta[rows]).astype(np.int64)
        h = knn_predict(dist.points[rows], labels, dist.points, k)
        errors.append(true_error(dist, h))
        bayes.append(dist.bayes_error)
    spread = float(np.std(errors, ddof=1)) / math.sqrt(runs) if runs > 1 else 0.0
    return NeighbourRun(float(np.mean(errors)), spread, float(np.mean(bayes)))
