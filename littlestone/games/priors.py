"""Priors over a finite class, for weighted Halving (the mistake-bound notes: a prior p
over H, the vote weighted by p, at most log2(1/p(h*)) mistakes).

====================  ===========================================
prior                 p(h), h = 0 .. |H| - 1, normalised over H
====================  ===========================================
``uniform``           1 / |H| (weighted Halving is then Halving)
``zipf``              proportional to (h + 1)^-s
``geometric``         proportional to 2^(-s h)
====================  ===========================================

>>> p = prior(4, "geometric", 1.0)
>>> [round(float(v), 4) for v in p], round(entropy_bits(p), 4)
([0.5333, 0.2667, 0.1333, 0.0667], 1.6402)
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import SpecError

__all__ = ["PRIORS", "entropy_bits", "prior"]

FloatArray = NDArray[np.float64]
PRIORS = ("uniform", "zipf", "geometric")


def prior(size: int, name: str, s: float = 1.0) -> FloatArray:
    """p over the hypotheses 0 .. size - 1 (a probability vector, every entry > 0)."""
    if name not in PRIORS:
        raise SpecError(f"prior {name!r} must be one of {', '.join(PRIORS)}")
    if not s > 0 or math.isinf(s):
        raise SpecError(f"s={s} must be a positive number")
    h = np.arange(size, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # a huge s underflows: refused below
        if name == "uniform":
            log_p = np.zeros(size)
        elif name == "zipf":
            log_p = -s * np.log1p(h)
        else:
            log_p = -s * math.log(2) * h
        p = np.exp(log_p - log_p.max())
    if not p.min() > 0:
        raise SpecError(f"prior {name} with s={s} underflows on {size} hypotheses (some "
                        "p(h) = 0): lower s")
    return p / p.sum()  # type: ignore[no-any-return]  # numpy division


def entropy_bits(p: FloatArray) -> float:
    """H(p) = sum_h p(h) log2(1/p(h)), in bits."""
    return float(-(p * np.log2(p)).sum())
