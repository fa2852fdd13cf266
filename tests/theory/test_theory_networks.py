"""docs/theory.md's rows for UML ch. 20 (issue 45): threshold networks of a given graph as a
class, their VCdim and Ldim computed exactly, against Thm 20.6's bound."""

from __future__ import annotations

import math

import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import class_ldim
from littlestone.games.networks import ThresholdNetworks, threshold_functions, vc_edge_bound
from littlestone.games.vcdim import vcdim
from littlestone.learners import LEARNERS
from littlestone.local import play


def test_threshold_functions_are_counted_right():
    """The threshold functions of k bits number 2, 4, 14, 104, 1882 (k = 0..4): the integer
    weights tried reach them all."""
    assert [len(threshold_functions(k)) for k in range(5)] == [2, 4, 14, 104, 1882]


@pytest.mark.parametrize(("n", "hidden", "size", "vc", "ldim"), [
    (1, 0, 4, 2, 2), (1, 2, 4, 2, 2), (2, 0, 14, 3, 3), (2, 1, 14, 3, 3), (2, 2, 16, 4, 4),
    (2, 3, 16, 4, 4), (3, 0, 104, 4, 6), (3, 1, 104, 4, 6), (3, 2, 254, 7, 7),
])
def test_network_vcdim_within_thm_20_6(n, hidden, size, vc, ldim):
    """VCdim H_{V,E,sign} <= max{m : 2^m <= (e m)^|E|} (Thm 20.6's proof), exactly computed,
    with VCdim <= Ldim <= log2 |H|; one neuron has VCdim n + 1 (halfspaces with a bias),
    and the bound of one neuron, n + 1, fails for the network with a hidden layer of two
    (xor on 2 bits; 254 of the 256 functions of 3 bits: all but parity)."""
    H = ThresholdNetworks(n, hidden)
    value = vcdim(H.matrix())
    assert (H.size, value, class_ldim(H)[0]) == (size, vc, ldim)
    assert value <= vc_edge_bound(H.edges)
    assert value <= ldim <= math.log2(H.size)
    if hidden == 0:
        assert value == n + 1
    if hidden == 2 and n >= 2:
        assert value > n + 1  # the weak form: the network as capable as its output neuron


def test_the_edge_bound_is_o_e_log_e():
    """The largest m with m <= |E| log2(e m) lies between |E| log2 |E| and 2 |E| log2(e |E|)
    (Lemma A.2's form), and is far above these small networks' VCdim."""
    for edges in (2, 5, 11, 50, 1000):
        bound = vc_edge_bound(edges)
        assert edges * math.log2(edges) <= bound <= 2 * edges * math.log2(math.e * edges)
        assert bound <= edges * math.log2(math.e * bound) < bound + 1


def test_network_specs():
    assert make_class("threshold-networks:n=2,hidden=2").size == 16
    for bad in ("threshold-networks:n=4,hidden=1", "threshold-networks:n=3,hidden=3",
                "threshold-networks:n=2", "threshold-networks:n=1,hidden=5"):
        with pytest.raises(SpecError):
            make_class(bad)


@pytest.mark.parametrize("spec", ["threshold-networks:n=2,hidden=2",
                                  "threshold-networks:n=3,hidden=2"])
def test_networks_in_the_mistake_bound_game(spec):
    """The class plays as any finite class: SOA within Ldim, Halving within log2 |H|, and
    the shattered tree forcing Ldim on both."""
    hclass = make_class(spec)
    ldim = class_ldim(hclass)[0]
    for learner_id, bound in (("soa", ldim), ("halving", math.log2(hclass.size))):
        for adversary in ("shattered-tree", "random-target"):
            result = play(GameSpec(MISTAKE_BOUND, 30, hclass), LEARNERS.make(learner_id),
                          ADVERSARIES.make(adversary), 2)
            assert result.complete and result.mistakes <= bound
            if adversary == "shattered-tree":
                assert result.mistakes >= ldim
