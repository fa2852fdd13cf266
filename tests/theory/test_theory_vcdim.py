"""docs/theory.md's VCdim row (UML Thm 21.9: VCdim(H) <= Ldim(H)) and what `ldim` prints
beside Ldim: VCdim and the randomised value."""

from __future__ import annotations

import json

import numpy as np
import pytest

from littlestone.cli import main
from littlestone.games.classes import MatrixClass, make_class
from littlestone.games.errors import BudgetExceeded
from littlestone.games.ldim import class_ldim
from littlestone.games.vcdim import brute_force_vcdim, class_vcdim, vcdim


@pytest.mark.parametrize("seed", range(25))
def test_agrees_with_brute_force_and_stays_below_ldim(seed):
    rng = np.random.default_rng(seed)
    rows, cols = 2 + seed % 13, 2 + seed % 7
    matrix = rng.random((rows, cols)) < rng.uniform(0.2, 0.8)
    value = vcdim(matrix)
    assert value == brute_force_vcdim(matrix)
    assert value <= class_ldim(MatrixClass(matrix))[0] <= np.log2(rows)


@pytest.mark.parametrize(("spec", "expected"), [
    ("thresholds:n=9", 1), ("singletons:n=1", 0), ("singletons:n=6", 1), ("intervals:n=8", 2),
    ("monotone-disjunctions:n=7", 7), ("conjunctions:n=4", 4), ("k-disjunctions:n=6,k=1", 2),
])
def test_known_classes(spec, expected):
    hclass = make_class(spec)
    assert class_vcdim(hclass) == (expected, "exact")
    assert expected <= class_ldim(hclass)[0]


def test_beyond_the_budget_a_theorem_or_a_refusal():
    assert class_vcdim(make_class("monotone-disjunctions:n=22")) == (22, "theorem")
    assert class_vcdim(make_class("thresholds:n=500"), budget=10) == (1, "theorem")
    with pytest.raises(BudgetExceeded):
        class_vcdim(make_class("conjunctions:n=6"), budget=10)


def test_ldim_prints_vcdim_and_the_randomised_value(capsys):
    assert main(["ldim", "--class", "thresholds:n=7", "--json"]) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (data["ldim"], data["vcdim"], data["randomized_value"]) == (3, 1, 1.5)
    assert data["randomized_value_exact"] == "3/2"
    assert main(["ldim", "--class", "monotone-disjunctions:n=20", "--json"]) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (data["vcdim"], data["vcdim_method"], data["randomized_value"]) == (20, "theorem", None)
