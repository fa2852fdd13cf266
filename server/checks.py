"""The generic check suite, run over every registered agent (as River's ``checks``).

:func:`yield_checks` gives the checks that apply to one agent; each plays short games
against built-in opponents through the local driver and raises ``AssertionError`` with
a plain message when the agent breaks the contract of its base class:

- it has a docstring with a runnable example;
- its spec rebuilds it (parameters round-trip);
- it can play a game it declares, to the end, within the rules;
- the same seed gives the same game;
- it does not mutate what it is given (instances, advice, costs);
- a started agent, started again, plays like a new one (``start`` resets everything).

The same suite checks a student's agent file before a tournament.

>>> from littlestone.learners import LEARNERS
>>> [check.__name__ for check in yield_checks(LEARNERS.make("halving"))][:2]
['check_docstring_example', 'check_spec_round_trip']
"""

from __future__ import annotations

import doctest
import inspect
import io
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from littlestone.adversaries.base import ADVERSARIES, Adversary
from littlestone.games.agents import Agent, Registry
from littlestone.games.classes import HypothesisClass, make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameResult, GameSpec
from littlestone.learners.base import LEARNERS, Learner
from littlestone.server.local import play

__all__ = ["CHECK_GAMES", "Check", "yield_checks"]

Check = Callable[[], None]

#: The games the checks play, tried in order; an agent is checked on those it supports.
CHECK_GAMES: list[tuple[str, str | None, int | None]] = [
    (MISTAKE_BOUND, "thresholds:n=32", None),
    (MISTAKE_BOUND, "monotone-disjunctions:n=5", None),
    (MISTAKE_BOUND, "halfspaces:d=5,margin=0.2", None),
    (MISTAKE_BOUND, "halfspaces:d=6,margin=0.5", None),
    (MISTAKE_BOUND, "matrix:shape=random-12x10", None),
    (EXPERTS, "singletons:n=8", None),
    (EXPERTS, None, 4),
]
CHECK_ROUNDS = 60


def _games() -> list[GameSpec]:
    from littlestone.games.classes import MatrixClass

    out = []
    for game, spec, experts in CHECK_GAMES:
        hclass: HypothesisClass | None
        if spec is not None and spec.startswith("matrix:"):
            rng = np.random.default_rng(0)
            hclass = MatrixClass(rng.integers(0, 2, size=(12, 10)), spec=spec)
        else:
            hclass = make_class(spec) if spec else None
        out.append(GameSpec(game, CHECK_ROUNDS, hclass, experts))
    return out


def _opponents(agent: Agent, game: GameSpec) -> Agent | None:
    """A built-in opponent that can play ``game`` against ``agent``."""
    registry: Registry[Any] = ADVERSARIES if isinstance(agent, Learner) else LEARNERS
    for agent_id in registry.ids():
        candidate = registry.make(agent_id)
        if candidate.unsupported(game) is None:
            return candidate  # type: ignore[no-any-return]  # the registry's type is Any here
    return None


def _pairs(agent: Agent) -> list[tuple[GameSpec, Agent]]:
    """The check games that ``agent`` declares it can play, each with an opponent."""
    out = []
    for game in _games():
        if agent.unsupported(game) is None:  # type: ignore[attr-defined]  # every Learner/Adversary has it
            opponent = _opponents(agent, game)
            if opponent is not None:
                out.append((game, opponent))
    return out


def _play(agent: Agent, opponent: Agent, game: GameSpec, seed: int,
          on_record: Callable[[Any], None] | None = None) -> GameResult:
    if isinstance(agent, Learner):
        assert isinstance(opponent, Adversary)
        return play(game, agent, opponent, seed, on_record=on_record)
    assert isinstance(agent, Adversary) and isinstance(opponent, Learner)
    return play(game, opponent, agent, seed, on_record=on_record)


def _trace(agent: Agent, opponent: Agent, game: GameSpec, seed: int) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []

    def keep(record: Any) -> None:
        rows.append(tuple(_plain(v) for v in record))

    result = _play(agent, opponent, game, seed, keep)
    rows.append((result.status,))
    return rows


def _plain(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


def yield_checks(agent: Agent) -> Iterator[Check]:
    """The checks that apply to ``agent`` (a learner or an adversary)."""
    registry: Registry[Any] = LEARNERS if isinstance(agent, Learner) else ADVERSARIES

    def check_docstring_example() -> None:
        doc = inspect.getdoc(type(agent)) or ""
        assert ">>>" in doc, f"{agent.spec}: the class docstring has no runnable example"
        module = sys.modules.get(type(agent).__module__)
        globs = dict(vars(module)) if module is not None else {}
        test = doctest.DocTestParser().get_doctest(doc, globs, type(agent).__name__, None, 0)
        output = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        failed, _ = runner.run(test, out=output.write)
        assert not failed, (f"{agent.spec}: the docstring example fails:\n"
                            f"{output.getvalue().strip()[-800:]}")

    def check_spec_round_trip() -> None:
        if agent.id in registry:
            rebuilt = registry.make(agent.spec)
            assert rebuilt.params() == agent.params(), (
                f"{agent.spec}: rebuilding from its spec gives {rebuilt.params()}"
            )

    yield check_docstring_example
    yield check_spec_round_trip
    pairs = _pairs(agent)

    def check_plays_a_game() -> None:
        assert pairs, f"{agent.spec}: plays none of the check games ({sorted(agent.games)})"
        for game, opponent in pairs:
            result = _play(agent.clone(), opponent.clone(), game, seed=1)
            assert result.complete, f"{agent.spec} on {game.game}: {result.status} {result.message}"
            assert result.rounds == game.rounds

    def check_seeding() -> None:
        for game, opponent in pairs:
            first = _trace(agent.clone(), opponent.clone(), game, seed=7)
            second = _trace(agent.clone(), opponent.clone(), game, seed=7)
            assert first == second, f"{agent.spec}: two games with seed 7 differ"

    def check_inputs_not_mutated() -> None:
        for game, opponent in pairs:
            guarded = _guard(agent.clone())
            result = _play(guarded, opponent.clone(), game, seed=3)
            assert result.complete, f"{agent.spec}: {result.status} {result.message}"

    def check_restart_is_fresh() -> None:
        for game, opponent in pairs:
            used = agent.clone()
            _play(used, opponent.clone(), game, seed=11)
            again = _trace(used, opponent.clone(), game, seed=12)
            fresh = _trace(agent.clone(), opponent.clone(), game, seed=12)
            assert again == fresh, f"{agent.spec}: after one game it plays unlike a new agent"

    yield check_plays_a_game
    yield check_seeding
    yield check_inputs_not_mutated
    yield check_restart_is_fresh


def _guard(agent: Agent) -> Agent:
    """Wrap the agent's methods so that a mutated argument raises AssertionError."""
    names = ("predict", "update", "weights", "update_costs", "label", "costs")
    for name in names:
        method = getattr(agent, name, None)
        if method is None:
            continue
        setattr(agent, name, _guarded(agent, name, method))
    return agent


def _guarded(agent: Agent, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        before = [a.copy() if isinstance(a, np.ndarray) else None for a in args]
        out = method(*args)
        for arg, copy in zip(args, before, strict=True):
            if copy is not None:
                assert np.array_equal(arg, copy, equal_nan=True), (
                    f"{agent.spec}.{name} mutated its argument"
                )
        return out

    return call
