"""Homogeneous halfspaces over unit vectors: the infinite class (its spec in
:mod:`.classes`)."""

from __future__ import annotations

import math

import numpy as np

from littlestone.games.hypotheses import UNIT_TOLERANCE, FloatArray, HypothesisClass, Instance
from littlestone.games.spec import format_spec

__all__ = ["HalfspaceClass"]


class HalfspaceClass(HypothesisClass):
    """Homogeneous halfspaces h_w(x) = [<w, x> > 0] over unit vectors of R^d, margin ``margin``.

    Infinite: the referee cannot hold the version space, so an adversary commits to its
    unit target w before round 1 and reveals it at the end; the referee then checks that
    every label is h_w(x_t) and every |<w, x_t>| >= margin (docs/design.md 1.1).

    With ``agnostic`` (``agnostic=true``, margin > 0) the labels are free: the revealed w
    is the comparator the learner is measured against, and the referee reports its total
    hinge deficiency TD_G(w) = sum_t max(0, G - y_t <w, x_t>), y_t in {-1, +1}, and its
    mistakes, instead of checking labels and margins (the Perceptron's non-separable
    bound is 1/G^2 + (2/G) TD_G).

    >>> from littlestone.games.classes import make_class
    >>> H = make_class("halfspaces:d=2,margin=0.5")
    >>> H.check_instance([0.6, 0.8]).tolist()
    [0.6, 0.8]
    >>> H.label(np.array([1.0, 0.0]), np.array([0.6, 0.8]))
    1
    """

    name = "halfspaces"
    size = None
    domain_size = None

    def __init__(self, d: int, margin: float, agnostic: bool = False) -> None:
        self.d = self.n_features = d
        self.margin = margin
        #: Labels need not agree with the revealed target (games.mistake_bound measures
        #: its total hinge deficiency TD_margin instead of refusing the labels).
        self.agnostic = agnostic
        params: dict[str, object] = {"d": d, "margin": margin}
        if agnostic:
            params["agnostic"] = True
        self.spec = format_spec(self.name, params)

    def check_instance(self, x: object) -> FloatArray:
        if type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (self.d,):
            v: FloatArray = x
        else:
            try:
                v = np.asarray(x, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError("instance is not a vector of numbers") from None
            if v.shape != (self.d,):
                raise ValueError(f"instance has shape {v.shape}, expected ({self.d},)")
        norm2 = float(v @ v)
        if not abs(norm2 - 1.0) <= 2 * UNIT_TOLERANCE:  # also rejects nan and inf
            shown = math.sqrt(norm2) if norm2 >= 0 else norm2
            raise ValueError(f"instance has norm {shown}, expected 1")
        return v

    def check_target(self, w: object) -> FloatArray:
        """A revealed target: a unit vector of R^d (once a game: a hostile one's huge
        coordinates are refused without numpy's overflow warning)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return self.check_instance(w)

    def encode(self, x: Instance) -> FloatArray:
        return np.asarray(x, dtype=np.float64)

    @staticmethod
    def label(w: FloatArray, x: FloatArray) -> int:
        """h_w(x) = [<w, x> > 0]."""
        return int(float(w @ x) > 0.0)

    def sample_target(self, rng: np.random.Generator) -> FloatArray:
        """A uniformly random unit vector."""
        w = rng.standard_normal(self.d)
        return w / np.linalg.norm(w)

    def sample_instances(
        self, rng: np.random.Generator, w: FloatArray, n: int
    ) -> FloatArray:
        """``n`` unit instances with |<w, x>| >= margin, crowding the margin as points of
        the sphere do: a random sign, a component along w of margin + |g| / sqrt(d) with g
        standard normal (capped at 1), and the rest along a random direction orthogonal
        to w (drawn from the cube [-1, 1]^d, five times cheaper than a Gaussian)."""
        if self.d == 1:
            return rng.choice([-1.0, 1.0], size=(n, 1))
        along = np.minimum(self.margin + np.abs(rng.standard_normal(n)) / np.sqrt(self.d), 1.0)
        along *= rng.choice([-1.0, 1.0], size=n)
        x = rng.random((n, self.d))
        x -= 0.5
        x -= np.outer(x @ w, w)  # the part orthogonal to w ...
        x *= (np.sqrt(1.0 - along**2) / np.linalg.norm(x, axis=1))[:, None]  # ... of norm
        x += np.outer(along, w)  # sqrt(1 - along^2), plus along * w: a unit vector
        return x


