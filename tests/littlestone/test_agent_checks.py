"""The generic check suite over every registered agent, and proof that it can fail."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import littlestone.server.records.playback  # noqa: F401 - registers the replay adversary
from littlestone.adversaries import ADVERSARIES
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.learners.base import Learner
from littlestone.testing import Check, yield_checks

#: The checks' names, the same for every agent (a cheap one names them).
CHECKS = [check.__name__ for check in yield_checks(LEARNERS["halving"].example())]


@functools.cache
def checks_of(kind: str, agent_id: str) -> dict[str, Check]:
    """An agent's checks by name, built when its first check runs (in each worker once):
    collecting the tests builds no agent (the adapters import scikit-learn and torch)."""
    registry = LEARNERS if kind == "learner" else ADVERSARIES
    return {check.__name__: check for check in yield_checks(registry[agent_id].example())}


@pytest.mark.parametrize(("kind", "agent_id", "check"), [
    pytest.param(kind, agent_id, check, id=f"{agent_id}:{check}")
    for kind, registry in (("learner", LEARNERS), ("adversary", ADVERSARIES))
    for agent_id in registry.ids() for check in CHECKS])
def test_registered_agent(kind, agent_id, check):
    checks = checks_of(kind, agent_id)
    assert sorted(checks) == sorted(CHECKS)
    checks[check]()


class Mutator(Learner):
    """Scales every instance it is given. >>> Mutator()"""

    id = ""
    games = frozenset({MISTAKE_BOUND})

    def reset(self, game: GameSpec, seed: int) -> None:
        pass

    def unsupported(self, game: GameSpec) -> str | None:
        if game.hclass is None or game.hclass.name != "halfspaces":
            return "halfspaces only"
        return super().unsupported(game)

    def predict(self, x: Any) -> float:
        x *= 2.0
        return 0.0

    def update(self, x: Any, y: int) -> None:
        pass


class Unseeded(Learner):
    """Flips a coin that no seed controls."""

    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self._rng = np.random.default_rng()

    def predict(self, x: Any) -> float:
        return float(self._rng.integers(2))

    def update(self, x: Any, y: int) -> None:
        pass


class Remembers(Learner):
    """Does not reset between games. >>> Remembers()"""

    games = frozenset({MISTAKE_BOUND})

    def __init__(self) -> None:
        self._seen = 0

    def predict(self, x: Any) -> float:
        return 1.0 if self._seen > 60 else 0.0

    def update(self, x: Any, y: int) -> None:
        self._seen += 1


def failing(agent: Learner) -> set[str]:
    out = set()
    for check in yield_checks(agent):
        try:
            check()
        except AssertionError:
            out.add(check.__name__)
    return out


def test_the_checks_catch_broken_agents():
    # a mutated argument makes the referee see a non-unit vector, or the guard fires
    assert "check_inputs_not_mutated" in failing(Mutator())
    assert failing(Unseeded()) >= {"check_docstring_example", "check_seeding"}
    assert failing(Remembers()) == {"check_restart_is_fresh"}


@pytest.mark.slow
def test_check_command_on_the_examples_and_on_a_broken_agent(tmp_path, capsys):
    from littlestone.cli import main

    for spec in ("examples/minimal_learner.py:MajorityVote",
                 "examples/minimal_adversary.py:Contrarian"):
        assert main(["check", spec]) == 0, capsys.readouterr().out
        assert "every check passed" in capsys.readouterr().out
    broken = tmp_path / "broken.py"
    broken.write_text(
        "from littlestone.learners import Learner\n"
        "import random\n"
        "class Coin(Learner):\n"
        "    '''Flips an unseeded coin.\n\n    >>> Coin().predict(0) in (0.0, 1.0, 2.0)\n"
        "    False\n    '''\n"
        "    games = frozenset({'mistake-bound'})\n"
        "    def predict(self, x):\n"
        "        return float(random.random() < 0.5)\n"
        "    def update(self, x, y):\n"
        "        pass\n")
    assert main(["check", f"{broken}:Coin", "--json"]) == 1
    import json

    report = json.loads(capsys.readouterr().out)
    failed = {row["check"] for row in report["checks"] if not row["ok"]}
    assert {"docstring example", "seeding"} <= failed  # and a restart differs too
    assert main(["check", "examples/minimal_learner.py"]) == 2
