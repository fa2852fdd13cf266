from __future__ import annotations

import pytest

from littlestone.games.errors import SpecError
from littlestone.games.spec import Params, format_spec, parse_spec


@pytest.mark.parametrize(
    ("text", "name", "params"),
    [
        ("halving", "halving", {}),
        ("halving:", "halving", {}),
        (" thresholds:n=5 ", "thresholds", {"n": "5"}),
        ("k-disjunctions:n=10,k=2", "k-disjunctions", {"n": "10", "k": "2"}),
        ("matrix:path=data/m.csv", "matrix", {"path": "data/m.csv"}),
        ("hedge:eta=", "hedge", {"eta": ""}),
    ],
)
def test_parse_spec(text, name, params):
    assert parse_spec(text) == (name, params)


@pytest.mark.parametrize(
    "text", ["", ":n=3", "thresholds:n", "thresholds:n=1,n=2", "thresholds:=3", "bad name:x=1",
             "thresholds:n=1,,"]
)
def test_parse_spec_rejects(text):
    with pytest.raises(SpecError):
        parse_spec(text)


def test_format_round_trip():
    spec = format_spec("halfspaces", {"d": 3, "margin": 0.25, "flag": True})
    assert spec == "halfspaces:d=3,margin=0.25,flag=true"
    assert parse_spec(spec) == ("halfspaces", {"d": "3", "margin": "0.25", "flag": "true"})


def test_params_bounds_and_unknown_keys():
    p = Params("thing", {"n": "3", "g": "0.5", "extra": "1"})
    assert p.int("n", minimum=1, maximum=3) == 3
    assert p.float("g", minimum=0.0, maximum=1.0) == 0.5
    assert p.float("missing", 2.0) == 2.0
    with pytest.raises(SpecError, match="unknown parameter extra"):
        p.finish()
    with pytest.raises(SpecError, match="must be at least 4"):
        Params("thing", {"n": "3"}).int("n", minimum=4)
    with pytest.raises(SpecError, match="must be finite"):
        Params("thing", {"g": "nan"}).float("g")
    with pytest.raises(SpecError, match="must be > 0"):
        Params("thing", {"g": "0"}).float("g", minimum=0.0, strict_minimum=True)
    with pytest.raises(SpecError, match="missing parameter n"):
        Params("thing", {}).int("n")
