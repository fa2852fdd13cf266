"""Threshold networks (UML ch. 20): the class H_{V,E,sign} of one layered graph, with its
functions on {0, 1}^n enumerated exactly, and Thm 20.6's bound on its VC dimension.

The graph of ``threshold-networks:n=N,hidden=H`` has the N inputs and a constant neuron,
H hidden neurons (each fed by every input and the constant), and one output neuron fed
by the hidden ones and a constant: |E| = H (N + 1) + H + 1 edges (N + 1 with no hidden
layer, a halfspace). Every neuron computes 1[<w, inputs> > 0], and the class holds every
function of {0, 1}^N that some weights give, each once. A neuron on k boolean inputs
computes one of the threshold functions of k bits (2, 4, 14, 104, 1882 for k = 0..4), so
the class is the compositions g(f_1(x), ..., f_H(x)) (:func:`network_functions`).

Thm 20.6 bounds VCdim by O(|E| log |E|); its proof gives the number: a shattered set of
m instances needs 2^m <= tau_H(m) <= (e m)^|E|, so VCdim <= the largest such m
(:func:`vc_edge_bound`).

>>> H = ThresholdNetworks(2, 2)
>>> H.size, H.edges  # xor is there: every function of 2 bits
(16, 9)
>>> vc_edge_bound(H.edges)  # the domain has 4 instances: the bound is far off
67
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from numpy.typing import NDArray

from littlestone.games.errors import SpecError
from littlestone.games.hypotheses import (
    TruthTableClass,
)
from littlestone.games.spec import format_spec

__all__ = ["ThresholdNetworks", "network_functions", "threshold_functions", "vc_edge_bound"]

#: The largest weight :func:`threshold_functions` tries: enough for every threshold
#: function of up to 4 bits (their count is checked against the known 2, 4, 14, 104, 1882).
MAX_WEIGHT = 3


@functools.cache
def threshold_functions(k: int) -> NDArray[np.int64]:
    """The truth tables (bit z is f(z)) of the functions z -> 1[<w, z> + b > 0] on
    {0, 1}^k, w and b real (integers up to :data:`MAX_WEIGHT` reach them all), sorted.

    >>> threshold_functions(1).tolist(), len(threshold_functions(3))
    ([0, 1, 2, 3], 104)
    """
    if not 0 <= k <= 4:
        raise SpecError(f"threshold functions of k={k} inputs: k must be in 0..4")
    points = np.array([[(z >> i) & 1 for i in range(k)] for z in range(1 << k)],
                      dtype=np.int64).reshape(1 << k, k)
    choices = list(itertools.product(range(-MAX_WEIGHT, MAX_WEIGHT + 1), repeat=k))
    weights = np.array(choices, dtype=np.int64).reshape(len(choices), k)
    sums = weights @ points.T  # weights x points
    biases = np.arange(-k * MAX_WEIGHT - 1, k * MAX_WEIGHT + 2)
    fires = sums[:, None, :] + biases[None, :, None] > 0
    tables = fires.astype(np.int64) @ (np.int64(1) << np.arange(1 << k, dtype=np.int64))
    return np.unique(tables)


def network_functions(n: int, hidden: int) -> NDArray[np.int64]:
    """The truth tables of the functions {0, 1}^n -> {0, 1} of the network with ``hidden``
    threshold neurons (0: the output neuron alone), sorted. The hidden neurons are taken
    as a multiset: the output's threshold functions are closed under renaming inputs.

    >>> len(network_functions(2, 1)), len(network_functions(2, 2))  # xor needs 2
    (14, 16)
    """
    if hidden == 0:
        return threshold_functions(n)
    first, last = threshold_functions(n), threshold_functions(hidden)
    points = np.arange(1 << n, dtype=np.int64)
    combos = np.array(list(itertools.combinations_with_replacement(first.tolist(), hidden)),
                      dtype=np.int64)  # multisets x hidden
    codes = np.zeros((len(combos), 1 << n), dtype=np.int64)  # the hidden layer's output on x
    for j in range(hidden):
        codes |= ((combos[:, j : j + 1] >> points[None, :]) & 1) << j
    outputs = (last[None, :, None] >> codes[:, None, :]) & 1  # multisets x g x points
    tables = outputs @ (np.int64(1) << points)
    return np.unique(tables)


def vc_edge_bound(edges: int) -> int:
    """The largest m with 2^m <= (e m)^|E| (Thm 20.6's proof): a bound on VCdim H_{V,E,sign}.

    >>> vc_edge_bound(3), vc_edge_bound(100) <= 100 * math.log2(100) * 2
    (16, True)
    """
    m = 1
    while (m + 1) <= edges * math.log2(math.e * (m + 1)):
        m += 1
    return m


class ThresholdNetworks(TruthTableClass):
    """H_{V,E,sign} of the layered graph with n inputs, ``hidden`` threshold neurons and
    one output neuron (UML 20.1), as the functions on {0, 1}^n its weights give.

    >>> H = ThresholdNetworks(3, 0)  # one neuron: the 104 halfspaces of the cube
    >>> H.size, H.edges
    (104, 4)
    """

    name = "threshold-networks"

    def __init__(self, n: int, hidden: int) -> None:
        if not 1 <= n <= 3 or not 0 <= hidden <= min(4, 6 // n):
            raise SpecError(f"threshold-networks: n={n}, hidden={hidden}: n must be in 1..3 "
                            "and hidden in 0..min(4, 6 // n)")
        self.n = self.n_features = n
        self.hidden = hidden
        self.edges = hidden * (n + 1) + hidden + 1 if hidden else n + 1
        self.spec = format_spec(self.name, {"n": n, "hidden": hidden})
        self._set_tables(n, network_functions(n, hidden))
