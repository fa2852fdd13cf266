"""The generic check suite, run over every registered agent (as River's ``checks``).

:func:`yield_checks` gives the checks that apply to one agent; each plays short games
against built-in opponents through the local driver and raises ``AssertionError`` with
a plain message when the agent breaks the contract of its base class:

- it has a docstring with a runnable example (for a student's file: advice, not a
  failure; see :class:`Advice`);
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
import functools
import inspect
import io
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from littlestone.adversaries.base import ADVERSARIES, Adversary
from littlestone.games.agents import Agent, Registry
from littlestone.games.classes import HypothesisClass, make_class
from littlestone.games.errors import Advice, CheckSkipped
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameResult, GameSpec
from littlestone.learners.base import LEARNERS, Learner
from littlestone.local import play

__all__ = ["CHECK_EXPERTS", "CHECK_GAMES", "CHECK_ROUNDS", "Advice", "Check", "CheckGame",
           "CheckSkipped", "in_tournament", "opponent", "refereed_games", "yield_checks"]

Check = Callable[[], None]


#: What a failed check costs in a tournament, by check (a submission plays each game in
#: a fresh sandboxed process, remotely: only what ends or spoils its games is scored).
IN_TOURNAMENT = {
    "check_docstring_example": "",
    "check_spec_round_trip": "",
    "check_plays_a_game": "a crash, an illegal move or a broken rule ends its game as its "
                          "fault, scored as lost",
    "check_seeding": "",
    "check_inputs_not_mutated": "",
    "check_restart_is_fresh": "",
}


def in_tournament(check: Check) -> str:
    """What failing ``check`` costs an agent in a tournament (``""``: nothing; the check is
    advice: the project's own agents must pass it, and replays depend on it).

    >>> from littlestone.learners import LEARNERS
    >>> [bool(in_tournament(c)) for c in yield_checks(LEARNERS.make("halving"))]
    [False, False, True, False, False, False]
    """
    return IN_TOURNAMENT.get(check.__name__, "")

#: One game the checks play: (game, class spec or None, free experts or None).
CheckGame = tuple[str, str | None, int | None]
#: The games the checks play, tried in order; an agent is checked on those it supports
#: (``check --class SPEC`` and ``check --competition FILE.toml`` give others instead).
CHECK_GAMES: list[CheckGame] = [
    (MISTAKE_BOUND, "thresholds:n=32", None),
    (MISTAKE_BOUND, "monotone-disjunctions:n=5", None),
    (MISTAKE_BOUND, "halfspaces:d=5,margin=0.2", None),
    (MISTAKE_BOUND, "halfspaces:d=6,margin=0.5", None),
    (MISTAKE_BOUND, "halfspaces:d=6,margin=0.5,agnostic=true", None),
    (MISTAKE_BOUND, "matrix:shape=random-12x10", None),
    (EXPERTS, "singletons:n=8", None),
    (EXPERTS, None, 4),
]
CHECK_ROUNDS = 60
#: The experts of the free-experts check game.
CHECK_EXPERTS = 4


def _games(games: Sequence[CheckGame] | None = None) -> list[GameSpec]:
    from littlestone.games.classes import MatrixClass

    out = []
    for game, spec, experts in CHECK_GAMES if games is None else games:
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
    return opponent("learner" if isinstance(agent, Learner) else "adversary", game)


def opponent(role: str, game: GameSpec) -> Agent | None:
    """The built-in opponent of a ``role`` (learner or adversary) in ``game``: the first
    registered agent of the other side that can play it.

    >>> opponent("adversary", GameSpec(EXPERTS, 10, None, 4)).spec
    'follow-the-leader'
    """
    registry: Registry[Any] = ADVERSARIES if role == "learner" else LEARNERS
    for agent_id in registry.ids():
        candidate = registry.make(agent_id)
        if candidate.unsupported(game) is None:
            return candidate  # type: ignore[no-any-return]  # the registry's type is Any here
    return None


def refereed_games(role: str, games: Sequence[CheckGame] | None = None
                   ) -> list[tuple[str, str | None, str]]:
    """The check games a server can referee for a submission of ``role`` (those of a
    class named by its spec, and free experts: not the random matrix, built here), each
    with its built-in opponent: (game, class spec or None, opponent spec). ``check``
    plays these outside the submission's process (server/tournament/preflight.py), with
    :data:`CHECK_ROUNDS` rounds and :data:`CHECK_EXPERTS` free experts.

    >>> [g for g in refereed_games("learner") if g[1] == "thresholds:n=32"]
    [('mistake-bound', 'thresholds:n=32', 'iid:dist=uniform,q=0.5,s=1.5')]
    """
    out = []
    for game in _games(games):
        spec = game.hclass.spec if game.hclass is not None else None
        if spec is not None and spec.startswith("matrix:"):
            continue
        against = opponent(role, game)
        if against is not None:
            out.append((game.game, spec, against.spec))
    return out


def _pairs(agent: Agent, games: Sequence[CheckGame] | None = None
           ) -> list[tuple[GameSpec, Agent]]:
    """The check games that ``agent`` declares it can play, each with an opponent."""
    out = []
    for game in _games(games):
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
    """Every record of a game, then its status; CheckSkipped when the game did not
    complete (a crash is check_plays_a_game's to report)."""
    rows: list[tuple[Any, ...]] = []

    def keep(record: Any) -> None:
        rows.append(tuple(_plain(v) for v in record))

    result = _play(agent, opponent, game, seed, keep)
    if not result.complete:
        raise CheckSkipped(f"not checked: its game ended {result.status} (see plays a game)")
    rows.append((result.status,))
    return rows


def _named(game: GameSpec, opponent: Agent) -> str:
    """A check game in words: ``mistake-bound on thresholds:n=32 against soa``."""
    on = game.hclass.spec if game.hclass is not None else f"{game.n_experts} free experts"
    return f"{game.game} on {on} against {opponent.spec}"


def _first_difference(first: list[tuple[Any, ...]], second: list[tuple[Any, ...]],
                      fields: tuple[str, ...]) -> str:
    """Where two traces part: the first round and the fields that differ."""
    for row, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            if len(a) == 1 or len(b) == 1:
                return f"one game ends after round {row}, the other does not"
            names = [n for n, x, y in zip(fields, a, b, strict=False) if x != y]
            shown = ", ".join(f"{n} {x!r} then {y!r}" for n, x, y in
                              zip(fields, a, b, strict=False) if x != y)
            return f"from round {a[0]}: {shown}" if names else f"from round {a[0]}"
    return f"one game has {len(first) - 1} rounds, the other {len(second) - 1}"


def _plain(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


def yield_checks(agent: Agent, games: Sequence[CheckGame] | None = None
                 ) -> Iterator[Check]:
    """The checks that apply to ``agent`` (a learner or an adversary), on ``games``
    (:data:`CHECK_GAMES` unless given)."""
    registry: Registry[Any] = LEARNERS if isinstance(agent, Learner) else ADVERSARIES
    name = (agent.spec if type(agent).__name__ in agent.spec
            else f"{type(agent).__name__} ({agent.spec})")

    def check_docstring_example() -> None:
        # its own docstring or a parent's (a subclass of Halving has Halving's), never
        # the base class's: Learner's example shows Learner, not the student's class
        owner = next((c for c in type(agent).__mro__ if c.__dict__.get("__doc__")), object)
        doc = "" if owner in (Learner, Adversary, Agent, object) else inspect.getdoc(owner) or ""
        if ">>>" not in doc:
            raise Advice(f"{name}: add a runnable example to the class docstring (a '>>> ' "
                         "line): it shows a reader how to use it, and it runs as a test")
        module = sys.modules.get(type(agent).__module__)
        globs = dict(vars(module)) if module is not None else {}
        test = doctest.DocTestParser().get_doctest(doc, globs, type(agent).__name__, None, 0)
        output = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        failed, _ = runner.run(test, out=output.write)
        assert not failed, (f"{name}: the docstring example fails:\n"
                            f"{output.getvalue().strip()[-800:]}")

    def check_spec_round_trip() -> None:
        if agent.id in registry:
            rebuilt = registry.make(agent.spec)
            assert rebuilt.params() == agent.params(), (
                f"{name}: rebuilding from its spec gives {rebuilt.params()}"
            )

    yield check_docstring_example
    yield check_spec_round_trip

    @functools.cache
    def pairs() -> list[tuple[GameSpec, Agent]]:
        """Its check games, found when a check first plays (some agents take a while to
        say which games they can play): collecting the checks plays nothing."""
        return _pairs(agent, games)

    def fields(game: GameSpec) -> tuple[str, ...]:
        from littlestone.games.game import ExpertsRecord, RoundRecord

        return (ExpertsRecord if game.game == EXPERTS else RoundRecord)._fields

    def check_plays_a_game() -> None:
        assert pairs(), f"{name}: plays none of the check games ({sorted(agent.games)})"
        for game, opponent in pairs():
            result = _play(agent.clone(), opponent.clone(), game, seed=1)
            assert result.complete, (f"{name}, {_named(game, opponent)}: {result.status}: "
                                     f"{result.message}")
            assert result.rounds == game.rounds

    def check_seeding() -> None:
        for game, opponent in pairs():
            first = _trace(agent.clone(), opponent.clone(), game, seed=7)
            second = _trace(agent.clone(), opponent.clone(), game, seed=7)
            assert first == second, (
                f"{name}: two games with seed 7, {_named(game, opponent)}, differ "
                f"{_first_difference(first, second, fields(game))}: draw randomness only "
                "from the seed given to start (np.random.default_rng(seed))")

    def check_inputs_not_mutated() -> None:
        for game, opponent in pairs():
            guarded = _guard(agent.clone())
            result = _play(guarded, opponent.clone(), game, seed=3)
            if "mutated its argument" in result.message:
                raise AssertionError(f"{name}, {_named(game, opponent)}: {result.message}")
            if not result.complete:
                raise CheckSkipped(f"not checked: its game ended {result.status} (see plays "
                                   "a game)")

    def check_restart_is_fresh() -> None:
        for game, opponent in pairs():
            used = agent.clone()
            _play(used, opponent.clone(), game, seed=11)
            again = _trace(used, opponent.clone(), game, seed=12)
            fresh = _trace(agent.clone(), opponent.clone(), game, seed=12)
            assert again == fresh, (
                f"{name}: after one game ({_named(game, opponent)}) it plays unlike a new "
                f"agent {_first_difference(fresh, again, fields(game))}: reset every "
                "attribute a game changes in start/reset")

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
