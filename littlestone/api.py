"""The Python API: play, compare, Ldim, tournaments, replays and remote games from a
notebook or a script, as the command line does them from a shell.

Every function takes spec strings or objects, interchangeably: a learner is
``"halving"``, ``"path/to/file.py:MyLearner"``, a :class:`~littlestone.Learner`
(an instance, or a subclass, which is made with its defaults), or a River or
scikit-learn model object (played through :mod:`littlestone.learners.adapters`); an
adversary is a spec or an :class:`~littlestone.Adversary`; a class is a spec
(``"thresholds:n=63"``) or a :class:`~littlestone.games.classes.HypothesisClass`; the
game is ``"mistake-bound"``, ``"experts"`` or a :class:`~littlestone.GameSpec`.
A bad argument is one :class:`ArgumentError` naming the function and the argument,
raised before anything is played.

The functions return the results of :mod:`littlestone.results`, which print, tabulate
(pandas) and plot (matplotlib), and show as a table and a curve in Jupyter.

>>> import littlestone as ls
>>> ls.play("halving", "shattered-tree", "thresholds:n=63", rounds=20)
<Game halving vs shattered-tree: complete, 6 mistakes (bound 6) in 20 rounds>
>>> ls.play("halving", "shattered-tree", "thresholds:n=63", rounds=-1)
Traceback (most recent call last):
...
littlestone.games.errors.ArgumentError: play: rounds: an integer >= 0, not -1
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import json
import math
import os
import re
import secrets
import sys
import tempfile
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from littlestone.adversaries import ADVERSARIES, Adversary
from littlestone.games.classes import FiniteClass, HypothesisClass, make_class
from littlestone.games.errors import ArgumentError, LittlestoneError, SpecError, UnsupportedGame
from littlestone.games.game import (
    EXPERTS,
    GAMES,
    MISTAKE_BOUND,
    Bound,
    GameResult,
    GameSpec,
    PlayedFields,
    ResultFields,
)
from littlestone.games.ldim import LDIM_BUDGET, class_ldim
from littlestone.learners import LEARNERS, Learner
from littlestone.learners.adapters import RiverLearner, SklearnLearner
from littlestone.results import Comparison, Dimensions, Game, PlayedRounds, TournamentResult

if TYPE_CHECKING:
    from littlestone.server.records.rows import LogFooter, LoggedHeader

__all__ = ["DEFAULT_ROUNDS", "DEFAULT_SEEDS", "ArgumentError", "RiverModel", "SklearnModel",
           "as_adversary", "as_class", "as_learner", "as_rules", "as_seeds", "compare",
           "connect", "ldim", "play", "replay", "tournament"]

#: The horizon T of a game when ``rounds`` is not given.
DEFAULT_ROUNDS = 100
#: The seeds :func:`compare` plays each learner on when ``seeds`` is not given.
DEFAULT_SEEDS = (0, 1, 2)
#: Seeds are signed 64-bit integers (what the index keeps).
SEED_RANGE = range(-(1 << 63), 1 << 63)
#: The largest count of seeds (that many games a learner): ``seeds=10**9`` made a list
#: of 10^9 integers before anything was played, and the machine ran out of memory.
SEEDS_MAX = 1 << 20


def _kind(value: object) -> str:
    """What a value is, for a message: ``int 3``, ``the class Foo``."""
    if isinstance(value, type):
        return f"the class {value.__name__}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


@contextlib.contextmanager
def _surfaced() -> Iterator[None]:
    """A littlestone error raised deep inside (a budget, a log, a server) reaches the
    caller with the caller's traceback only: one clear exception, not the machinery."""
    try:
        yield
    except LittlestoneError as exc:
        raise exc.with_traceback(None) from None


# -- agents, classes and rules from specs or objects -----------------------------------


class RiverModel(RiverLearner):
    """A River model object as a learner: the ``river`` adapter, on a fresh clone of
    this very model (with its own parameters) for every game.

    >>> from river import linear_model
    >>> RiverModel(linear_model.Perceptron(l2=0.1)).spec
    'river:model=linear_model.perceptron.Perceptron'
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        cls = type(estimator)
        super().__init__(model=f"{cls.__module__.removeprefix('river.')}.{cls.__name__}")

    def _load_class(self, model: str) -> Any:
        return self._fresh

    def _fresh(self) -> Any:
        return self.estimator.clone()

    # (Agent.params's type: an agent's own parameters)
    def params(self) -> dict[str, Any]:
        return {"model": self.model}

    def clone(self) -> RiverModel:
        return type(self)(self.estimator)


class SklearnModel(SklearnLearner):
    """A scikit-learn estimator object with ``partial_fit`` as a learner: the ``sklearn``
    adapter, on a fresh ``sklearn.base.clone`` of this very estimator every game.

    >>> from sklearn.linear_model import SGDClassifier
    >>> SklearnModel(SGDClassifier(loss="log_loss")).spec
    'sklearn:model=linear_model._stochastic_gradient.SGDClassifier'
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        cls = type(estimator)
        super().__init__(model=f"{cls.__module__.removeprefix('sklearn.')}.{cls.__name__}")

    def _load_class(self, model: str) -> Any:
        return self._fresh

    def _fresh(self) -> Any:
        from sklearn.base import clone

        return clone(self.estimator)

    # (Agent.params's type: an agent's own parameters)
    def params(self) -> dict[str, Any]:
        return {"model": self.model}

    def clone(self) -> SklearnModel:
        return type(self)(self.estimator)


def _model(value: Any) -> Learner | None:
    """A River or scikit-learn model (or model class) as a learner, else ``None``."""
    module = (value if isinstance(value, type) else type(value)).__module__.split(".")[0]
    if module not in ("river", "sklearn"):
        return None
    estimator = value() if isinstance(value, type) else value
    if module == "river" and hasattr(estimator, "learn_one"):
        return RiverModel(estimator)
    if module == "sklearn" and hasattr(estimator, "partial_fit"):
        return SklearnModel(estimator)
    return None


def as_learner(value: Any, function: str = "play", argument: str = "learner") -> Learner:
    """A learner from a spec, a :class:`Learner` (made with its defaults when a class is
    given), or a River or scikit-learn model; :class:`ArgumentError` otherwise.

    >>> as_learner("hedge:eta=0.5").params()["eta"]
    0.5
    >>> as_learner(3)
    Traceback (most recent call last):
    ...
    littlestone.games.errors.ArgumentError: play: learner: a learner spec ('halving'), ... not int 3
    """
    if isinstance(value, Learner):
        return value
    if isinstance(value, str):
        try:
            return LEARNERS.make(value)
        except SpecError as exc:
            raise ArgumentError(function, argument, str(exc)) from None
    if isinstance(value, type) and issubclass(value, Learner):
        try:
            return value()
        except Exception as exc:  # the user's class: any error becomes one line
            raise ArgumentError(function, argument, f"{value.__name__}() failed: "
                                f"{type(exc).__name__}: {exc}") from None
    try:
        model = _model(value)
    except Exception as exc:  # a model class that cannot be made with its defaults
        raise ArgumentError(function, argument, f"{_kind(value)}: {type(exc).__name__}: "
                            f"{exc}") from None
    if model is not None:
        return model
    if isinstance(value, Adversary) or (isinstance(value, type) and issubclass(value, Adversary)):
        raise ArgumentError(function, argument, f"{_kind(value)} is an adversary, not a learner")
    raise ArgumentError(function, argument, "a learner spec ('halving'), a Learner, or a "
                        f"River or scikit-learn model, not {_kind(value)}")


def as_adversary(value: Any, function: str = "play", argument: str = "adversary"
                 ) -> Adversary:
    """An adversary from a spec or an :class:`Adversary` (made with its defaults when a
    class is given); :class:`ArgumentError` otherwise.

    >>> as_adversary("noisy:rate=0.1").spec
    'noisy:rate=0.1'
    """
    if isinstance(value, Adversary):
        return value
    if isinstance(value, str):
        try:
            return ADVERSARIES.make(value)
        except SpecError as exc:
            raise ArgumentError(function, argument, str(exc)) from None
    if isinstance(value, type) and issubclass(value, Adversary):
        try:
            return value()
        except Exception as exc:  # the user's class: any error becomes one line
            raise ArgumentError(function, argument, f"{value.__name__}() failed: "
                                f"{type(exc).__name__}: {exc}") from None
    if isinstance(value, Learner) or (isinstance(value, type) and issubclass(value, Learner)):
        raise ArgumentError(function, argument, f"{_kind(value)} is a learner, not an adversary")
    raise ArgumentError(function, argument, "an adversary spec ('shattered-tree') or an "
                        f"Adversary, not {_kind(value)}")


def as_class(value: Any, function: str = "play", argument: str = "cls"
             ) -> HypothesisClass | None:
    """A hypothesis class from a spec or a class object (``None`` stays ``None``).

    >>> as_class("thresholds:n=63").size
    64
    >>> as_class("thresholds:m=63")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.ArgumentError: play: cls: thresholds: missing parameter n (given: m=63)
    """
    if value is None or isinstance(value, HypothesisClass):
        return value
    if isinstance(value, Dimensions):
        return value.hclass
    if isinstance(value, str):
        try:
            return make_class(value)
        except SpecError as exc:
            raise ArgumentError(function, argument, str(exc)) from None
    raise ArgumentError(function, argument, "a class spec ('thresholds:n=63') or a "
                        f"hypothesis class, not {_kind(value)}")


def _count(function: str, argument: str, value: Any, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < 1 << 63:
        raise ArgumentError(function, argument, f"an integer >= {low}, not {_kind(value)}"
                            if not isinstance(value, int) or isinstance(value, bool)
                            else f"an integer >= {low}, not {value}")
    return value


def _seed(function: str, value: Any, argument: str = "seed") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in SEED_RANGE:
        raise ArgumentError(function, argument, "a signed 64-bit integer, not "
                            f"{_kind(value)}")
    return value


def as_seeds(value: Any, function: str = "compare") -> list[int]:
    """Seeds from a list of integers, or a count n for seeds 0 .. n-1 (as a tournament's
    TOML says them).

    >>> as_seeds(3), as_seeds([7, 11])
    ([0, 1, 2], [7, 11])
    """
    if isinstance(value, int) and not isinstance(value, bool):
        count = _count(function, "seeds", value, low=1)
        if count > SEEDS_MAX:
            raise ArgumentError(function, "seeds", f"a count of at most {SEEDS_MAX} seeds (as "
                                f"many games each), not {count}")
        return list(range(count))
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ArgumentError(function, "seeds", f"a list of integers or a count, not "
                            f"{_kind(value)}")
    seeds = [_seed(function, s, "seeds") for s in value]
    if not seeds:
        raise ArgumentError(function, "seeds", "at least one seed")
    return seeds


def as_rules(function: str, game: Any, cls: Any, rounds: Any, experts: Any,
             horizon_known: bool = True) -> GameSpec:
    """The rules of a game from the API's arguments, each checked and named when wrong.

    >>> as_rules("play", "experts", None, 50, 4).n_experts
    4
    >>> as_rules("play", "mistake-bound", None, 50, None)
    Traceback (most recent call last):
    ...
    littlestone.games.errors.ArgumentError: play: cls: the mistake-bound game needs a class, ...
    """
    if isinstance(game, GameSpec):
        given = [name for name, value in (("cls", cls), ("rounds", rounds),
                                          ("experts", experts)) if value is not None]
        if given:
            raise ArgumentError(function, given[0], "the GameSpec given as game sets the "
                                f"class, the rounds and the experts: drop {', '.join(given)}")
        return game
    if game not in GAMES:
        raise ArgumentError(function, "game", f"one of {', '.join(GAMES)} or a GameSpec, not "
                            f"{_kind(game)}")
    rounds = DEFAULT_ROUNDS if rounds is None else _count(function, "rounds", rounds)
    if experts is not None:
        _count(function, "experts", experts, low=1)
    hclass = as_class(cls, function)
    if game == MISTAKE_BOUND and hclass is None:
        raise ArgumentError(function, "cls", 'the mistake-bound game needs a class, e.g. '
                            'cls="thresholds:n=63"')
    if game == MISTAKE_BOUND and experts is not None:
        raise ArgumentError(function, "experts", "the experts belong to the experts game")
    if game == EXPERTS and hclass is None and experts is None:
        raise ArgumentError(function, "experts", "the experts game needs experts=D or a "
                            "finite class (its hypotheses are the experts)")
    try:
        return GameSpec(game, rounds, hclass, experts, horizon_known)
    except SpecError as exc:
        raise ArgumentError(function, "experts" if experts is not None else "cls",
                            str(exc)) from None


def _fresh(agent: Any) -> Any:
    """A new agent like ``agent``, for another game (its parameters, or a deep copy of
    an agent that cannot be made again from them)."""
    try:
        return agent.clone()
    except Exception:  # a user's class whose __init__ does not keep its parameters
        return copy.deepcopy(agent)


def _role_of(exc: BaseException, learner: Learner, adversary: Adversary) -> str:
    """Which player a refusal came from: the first frame that is one of theirs."""
    tb = exc.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if owner is learner:
            return "learner"
        if owner is adversary:
            return "adversary"
        tb = tb.tb_next
    return "game"


# -- one game ----------------------------------------------------------------------------


def play(learner: Any, adversary: Any, cls: Any = None, rounds: Any = None, *,
         seed: int = 0, game: Any = MISTAKE_BOUND, experts: int | None = None,
         horizon_known: bool = True, on_record: Callable[[Any], None] | None = None,
         keep_rounds: bool = True, data: str | Path | None = None,
         log_level: str = "auto") -> Game:
    """Play one game in this process and return it as a :class:`~littlestone.results.Game`:
    its result, its rounds (:meth:`~littlestone.results.Game.rounds`) and its curve
    (:meth:`~littlestone.results.Game.plot`).

    ``learner``, ``adversary`` and ``cls`` are specs or objects (the module's
    docstring); ``rounds`` is the horizon T (default :data:`DEFAULT_ROUNDS`); ``game``
    is ``"mistake-bound"`` (the default), ``"experts"`` (with ``experts=D`` or a finite
    ``cls``) or a :class:`~littlestone.GameSpec`. ``seed`` derives every coin of the game:
    the same seed plays the same game, as ``littlestone play --seed`` does.
    ``on_record`` receives each round's record as it is scored; ``keep_rounds=False``
    keeps none (long games, sweeps). With ``data`` (a folder), the game is logged and
    indexed there as ``littlestone play --data`` does it (``log_level`` as ``--log``),
    and :func:`replay` finds it by its ``game_id``.

    A player that cannot play the game is an :class:`ArgumentError` naming it, before
    round 1; a player that breaks a rule or raises ends the game with a status naming
    it (``crash:learner:ZeroDivisionError``), as on the command line.

    >>> import littlestone as ls
    >>> game = ls.play("halving", "shattered-tree", "thresholds:n=63", rounds=20)
    >>> game.status, game.mistakes, ls.ldim("thresholds:n=63")
    ('complete', 6, 6)
    >>> class AlwaysOne(ls.Learner):
    ...     '''Predicts 1 whatever it is shown.'''
    ...     games = frozenset({"mistake-bound"})
    ...     def predict(self, x): return 1.0
    ...     def update(self, x, y): pass
    >>> ls.play(AlwaysOne, "shattered-tree", "thresholds:n=63", rounds=20).mistakes
    20
    >>> ls.play("hedge", "random-costs", game="experts", experts=4, rounds=50).status
    'complete'
    >>> ls.play("soa", "random-costs", game="experts", experts=4)
    Traceback (most recent call last):
    ...
    littlestone.games.errors.ArgumentError: play: learner: soa cannot play this game: it plays ...

    The form of littlestone 0.3, ``play(rules, learner, adversary, seed)`` with the
    rules as a :class:`~littlestone.GameSpec`, is kept:

    >>> rules = ls.GameSpec("mistake-bound", 20, ls.make_class("thresholds:n=63"))
    >>> ls.play(rules, "halving", "shattered-tree", 1).mistakes
    6
    """
    if isinstance(learner, GameSpec):  # play(rules, learner, adversary, seed)
        if rounds is not None and seed != 0:
            raise ArgumentError("play", "seed", "given twice (play(rules, learner, "
                                "adversary, seed) takes the seed fourth)")
        game, learner, adversary, cls = learner, adversary, cls, None
        seed, rounds = (rounds, None) if rounds is not None else (seed, None)
    rules = as_rules("play", game, cls, rounds, experts, horizon_known)
    seed = _seed("play", seed)
    learner_spec = learner if isinstance(learner, str) else None
    adversary_spec = adversary if isinstance(adversary, str) else None
    player, opponent = as_learner(learner), as_adversary(adversary)
    if data is not None and on_record is not None:
        raise ArgumentError("play", "on_record", "not with data: the log keeps every round "
                            "(Game.rounds() reads them back)")
    return _played(rules, player, opponent, seed, on_record=on_record,
                   keep_rounds=keep_rounds, data=data, log_level=log_level,
                   learner_spec=learner_spec, adversary_spec=adversary_spec)


def _refused(function: str, rules: GameSpec, learner: Learner, adversary: Adversary,
             names: tuple[str | None, str | None] = (None, None)) -> None:
    """An ArgumentError naming the player that cannot play ``rules`` (by the spec it was
    given as, else by its own)."""
    for role, agent, name in (("learner", learner, names[0]),
                              ("adversary", adversary, names[1])):
        reason = agent.unsupported(rules)
        if reason:
            raise ArgumentError(function, role, f"{name or agent.spec} cannot play this game: "
                                f"{reason}")


def _played(rules: GameSpec, learner: Learner, adversary: Adversary, seed: int, *,
            on_record: Callable[[Any], None] | None = None, keep_rounds: bool = True,
            data: str | Path | None = None, log_level: str = "auto",
            learner_spec: str | None = None, adversary_spec: str | None = None,
            function: str = "play") -> Game:
    """One game through the runner (or logged play), refusals named by their player."""
    from littlestone.local import play as run

    _refused(function, rules, learner, adversary, (learner_spec, adversary_spec))
    kept = PlayedRounds() if keep_rounds else None
    game_id, log = None, None
    try:
        if data is None:
            result = run(rules, learner, adversary, seed, on_record=on_record, log=kept)
        else:
            from littlestone.server.records.logged import play_logged
            from littlestone.server.records.logs import log_level as checked_level

            try:
                level = checked_level(log_level, rules)
            except SpecError as exc:
                raise ArgumentError(function, "log_level", str(exc)) from None
            done = play_logged(rules, learner, adversary, seed, Path(data),
                               learner_spec=learner_spec, adversary_spec=adversary_spec,
                               level=level)
            result, game_id, log = done.result, done.game_id, done.log
            kept = _rounds_of_log(log, data) if keep_rounds and log is not None else None
    except UnsupportedGame as exc:
        raise ArgumentError(function, _role_of(exc, learner, adversary), str(exc)) from None
    return Game(result, learner=learner_spec or learner.spec,
                adversary=adversary_spec or adversary.spec, seed=seed, rules=rules,
                rounds=kept, game_id=game_id, log=log,
                why_no_rounds="" if keep_rounds else "played with keep_rounds=False")


def _rounds_of_log(path: Path, data: str | Path | None) -> PlayedRounds:
    from littlestone.server.records.logs import read_log
    from littlestone.server.records.resimulation import filled

    return _rounds_of(filled(read_log(path), data))


def _rounds_of(log: Any) -> PlayedRounds:
    """A log's rounds (:class:`~littlestone.server.records.logs.GameLogData`) as kept
    rounds."""
    kept = PlayedRounds()
    if log.expert_rounds:
        for record in log.records():
            kept.expert(record)
    elif log.columns:
        c = log.columns
        kept.rounds(1, c["x"], c["p"], c["y"], c["prediction"])
    return kept


def compare(learners: Iterable[Any], adversary: Any, cls: Any = None, rounds: Any = None, *,
            seeds: Any = DEFAULT_SEEDS, game: Any = MISTAKE_BOUND, experts: int | None = None,
            horizon_known: bool = True) -> Comparison:
    """Play each learner against the same adversary on the same seeds (a fresh copy of
    each player every game) and return the :class:`~littlestone.results.Comparison`: a
    table per learner, every game, and their mean curves against their bounds.

    ``seeds`` is a list of seeds or a count n (seeds 0 .. n-1); the other arguments are
    :func:`play`'s.

    >>> import littlestone as ls
    >>> comparison = ls.compare(["halving", "soa", "consistent"], "shattered-tree",
    ...                         "thresholds:n=15", rounds=15, seeds=2)
    >>> comparison.table()["mistakes"].to_dict()
    {'halving': 4.0, 'soa': 4.0, 'consistent': 4.0}
    """
    if isinstance(learners, str | Learner) or not isinstance(learners, Iterable):
        raise ArgumentError("compare", "learners", f"a list of learners, not {_kind(learners)}")
    rules = as_rules("compare", game, cls, rounds, experts, horizon_known)
    chosen = [(spec if isinstance(spec, str) else None, as_learner(spec, "compare", "learners"))
              for spec in learners]
    if not chosen:
        raise ArgumentError("compare", "learners", "at least one learner")
    opponent = as_adversary(adversary, "compare")
    seed_list = as_seeds(seeds, "compare")
    games = []
    with _surfaced():
        for spec, learner in chosen:
            for seed in seed_list:
                games.append(_played(rules, _fresh(learner), _fresh(opponent), seed,
                                     learner_spec=spec, function="compare",
                                     adversary_spec=adversary if isinstance(adversary, str)
                                     else None))
    return Comparison(games)


# -- the class ---------------------------------------------------------------------------


def ldim(cls: Any, budget: int = LDIM_BUDGET) -> Dimensions:
    """Ldim(H) of a finite class, exact (or by its closed form beyond the matrix budget),
    as a :class:`~littlestone.results.Dimensions`: an ``int`` that also carries
    ``vcdim``, ``randomized_value`` and :meth:`~littlestone.results.Dimensions.tree`.
    ``budget`` caps the instance checks of the exact computation
    (:class:`~littlestone.games.errors.BudgetExceeded` beyond it).

    >>> import littlestone as ls
    >>> ls.ldim("thresholds:n=7"), ls.ldim("monotone-disjunctions:n=20").method
    (3, 'theorem')
    >>> ls.ldim("halfspaces:d=2,margin=0.1")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.ArgumentError: ldim: cls: halfspaces:d=2,margin=0.1 is an infinite ...
    """
    hclass = as_class(cls, "ldim")
    if hclass is None:
        raise ArgumentError("ldim", "cls", "a class spec ('thresholds:n=63') or a finite "
                            "class, not None")
    if not isinstance(hclass, FiniteClass):
        raise ArgumentError("ldim", "cls", f"{hclass.spec} is an infinite class: its Ldim is "
                            "not computed (the Perceptron bound caps it at "
                            "floor(1/margin^2))")
    _count("ldim", "budget", budget, low=1)
    with _surfaced():
        value, method = class_ldim(hclass, budget)
    return Dimensions(value, hclass, method)


# -- tournaments -------------------------------------------------------------------------

#: The keys of a tournament's ``[tournament]`` table, which a flat dict may give at the
#: top (``{"name": ..., "rounds": ..., "learners": [...]}``).
_TOURNAMENT_KEYS = ("name", "rounds", "seeds", "games", "experts", "listen")


def _toml_value(value: Any, where: str) -> str:
    """A value as TOML writes it (strings as JSON writes them, which TOML reads, with
    DEL escaped too)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else (
            "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf"))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v, where) for v in value) + "]"
    raise ArgumentError("tournament", "config", f"{where}: a string, a number, a boolean or "
                        f"a list of them, not {_kind(value)}")


def _spec_of(value: Any, role: str, function: str = "tournament",
             argument: str = "config") -> str:
    """An agent that another process builds (a tournament's entrant, a server's
    opponent) as the spec it builds it from: a spec, or a built-in object's spec."""
    if isinstance(value, str):
        return value
    registry = LEARNERS if role == "learners" else ADVERSARIES
    if isinstance(value, Learner | Adversary) and value.id and value.id in registry:
        return value.spec
    if function == "tournament":
        raise ArgumentError(function, argument, f"{role}: {_kind(value)}: a tournament's "
                            "entrants are specs (a built-in's, or path/to/file.py:Class for "
                            "a submission, which plays in its sandbox)")
    raise ArgumentError(function, argument, f"{_kind(value)}: the server builds its "
                        "opponent from a built-in's spec")


# (config: a TOML table before validation)
def tournament_toml(config: dict[str, Any]) -> str:
    """A tournament's TOML file from a dict: the TOML's own layout, or a flat dict whose
    ``classes`` may be plain specs.

    >>> print(tournament_toml({"name": "t", "rounds": 20, "classes": ["thresholds:n=15"],
    ...                        "learners": ["halving"], "adversaries": ["shattered-tree"]}))
    learners = ["halving"]
    adversaries = ["shattered-tree"]
    <BLANKLINE>
    [tournament]
    name = "t"
    rounds = 20
    <BLANKLINE>
    [[classes]]
    spec = "thresholds:n=15"
    <BLANKLINE>
    """
    raw = dict(config)
    head = dict(raw.pop("tournament", {}) or {})
    for key in _TOURNAMENT_KEYS:
        if key in raw:
            head[key] = raw.pop(key)
    lines = []
    for role in ("learners", "adversaries"):
        if role in raw:
            entrants = raw.pop(role)
            if isinstance(entrants, str) or not isinstance(entrants, Iterable):
                raise ArgumentError("tournament", "config", f"{role}: a list of agent specs")
            lines.append(f"{role} = " + _toml_value([_spec_of(v, role) for v in entrants],
                                                     role))
    classes = raw.pop("classes", [])
    limits = raw.pop("limits", None)
    if raw:
        raise ArgumentError("tournament", "config", f"unknown key {sorted(raw)[0]!r} (keys: "
                            "tournament, classes, learners, adversaries, limits, or the "
                            f"[tournament] keys {', '.join(_TOURNAMENT_KEYS)} at the top)")
    if "seeds" in head:
        as_seeds(head["seeds"], "tournament")  # (a count of 10^9: refused here, in one line)
    lines.append("\n[tournament]")
    lines += [f"{key} = {_toml_value(value, 'tournament.' + key)}"
              for key, value in head.items()]
    if isinstance(classes, str) or not isinstance(classes, Iterable):
        raise ArgumentError("tournament", "config", "classes: a list of class specs")
    for entry in classes:
        spec = entry.get("spec") if isinstance(entry, dict) else getattr(entry, "spec", entry)
        lines.append(f"\n[[classes]]\nspec = {_toml_value(spec, 'classes')}")
    if limits is not None:
        if not isinstance(limits, dict):
            raise ArgumentError("tournament", "config", "limits: a dict of limits")
        lines.append("\n[limits]")
        lines += [f"{key} = {_toml_value(value, 'limits.' + key)}"
                  for key, value in limits.items()]
    return "\n".join(lines) + "\n"


# (config: a TOML table before validation)
def tournament(config: dict[str, Any] | str | Path, *, data: str | Path | None = None,
               workers: int | None = None, ray: str | None = None, progress: bool = True,
               keep_going: bool = False, unsafe: bool = False,
               log_level: str = "auto") -> TournamentResult:
    """Run a tournament as ``littlestone tournament`` does and return its
    :class:`~littlestone.results.TournamentResult` (leaderboards and payoff matrix as
    DataFrames, the heatmap; the static report's path in ``result.report.report``).

    ``config`` is a TOML file's path, or a dict: the TOML's own layout
    (``{"tournament": {"name": ..., "rounds": ...}, "classes": [{"spec": ...}], ...}``)
    or flat (``{"name": ..., "rounds": ..., "classes": ["thresholds:n=63"],
    "learners": [...], "adversaries": [...]}``); in a dict, submissions' paths are
    relative to the working folder. ``data`` is the data folder (default: the command
    line's, ``$LITTLESTONE_DATA`` or ``./littlestone-data``): a tournament run again
    there plays only what is missing. ``workers`` processes (default: the cores) or
    ``ray`` (``"local"``, or a cluster's ``HOST:PORT``) play the built-in pairs;
    submissions play in their sandbox (``unsafe``: without one).

    >>> import littlestone as ls, tempfile
    >>> result = ls.tournament({"name": "week-1", "rounds": 30, "seeds": 2,
    ...                         "classes": ["thresholds:n=15", "singletons:n=8"],
    ...                         "learners": ["halving", "consistent"],
    ...                         "adversaries": ["shattered-tree", "random-target"]},
    ...                        data=tempfile.mkdtemp(), workers=1, progress=False)
    >>> result.table()["rank"].to_dict()
    {'halving': 1, 'consistent': 2}
    """
    from littlestone.games.errors import ConfigError
    from littlestone.server.records.folder import default_data
    from littlestone.server.tournament import load_config, run_tournament
    from littlestone.server.tournament.run import check_ray_address

    if workers is None:
        workers = os.cpu_count() or 1
    _count("tournament", "workers", workers, low=1)
    if ray is not None:
        if not isinstance(ray, str):
            raise ArgumentError("tournament", "ray", f"'local' or HOST:PORT, not {_kind(ray)}")
        try:
            check_ray_address(ray)
        except SpecError as exc:
            raise ArgumentError("tournament", "ray", str(exc).removeprefix(f"--ray {ray}: "))\
                from None
    folder = Path(data if data is not None else default_data())
    if isinstance(config, dict):
        text = tournament_toml(config)
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "tournament.toml"
            path.write_text(text)
            try:
                loaded = load_config(path)
            except ConfigError as exc:
                message = re.sub(rf"^{re.escape(str(path))}(:\d+)?: ", "", str(exc))
                raise ArgumentError("tournament", "config", message) from None
        loaded = dataclasses.replace(loaded, base=Path.cwd())
    elif isinstance(config, str | Path):
        try:
            loaded = load_config(config)
        except ConfigError as exc:
            raise ArgumentError("tournament", "config", str(exc)) from None
    else:
        raise ArgumentError("tournament", "config", f"a dict or a TOML file's path, not "
                            f"{_kind(config)}")
    folder.mkdir(parents=True, exist_ok=True)
    with _surfaced():
        report = run_tournament(loaded, folder, workers, progress=progress, ray_address=ray,
                                keep_going=keep_going, unsafe=unsafe, log_level=log_level)
    return TournamentResult(report)


# -- logs --------------------------------------------------------------------------------


def replay(path_or_id: str | Path, *, data: str | Path | None = None,
           verify: bool = False) -> Game:
    """A logged game, from its log file or its game id in the data folder's index, as a
    :class:`~littlestone.results.Game` (its rounds re-derived when the log is compact).
    With ``verify``, ``game.verification`` is what ``littlestone replay --verify``
    finds (``.ok``, ``.message``: the chain, the anchor and the re-simulation).

    >>> import littlestone as ls, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> game = ls.play("halving", "random-target", "thresholds:n=63", rounds=40, seed=3,
    ...                data=folder)
    >>> again = ls.replay(game.game_id, data=folder, verify=True)
    >>> again.mistakes == game.mistakes, again.verification.ok
    (True, True)
    >>> ls.replay("no-such-game", data=folder)
    Traceback (most recent call last):
    ...
    littlestone.games.errors.ArgumentError: replay: path_or_id: no log file or game id ...
    """
    from littlestone.games.errors import LogError
    from littlestone.server.records.anchors import anchoring, locate
    from littlestone.server.records.folder import default_data
    from littlestone.server.records.logs import checked, read_log
    from littlestone.server.records.resimulation import filled, game_spec
    from littlestone.server.records.verify import verify as verified

    if not isinstance(path_or_id, str | Path):
        raise ArgumentError("replay", "path_or_id", f"a log's path or a game id, not "
                            f"{_kind(path_or_id)}")
    folder = data if data is not None else default_data()
    try:
        path, game_id = locate(str(path_or_id), folder)
        log = checked(read_log(path))
        report = verified(log, folder, game_id) if verify else None
        log = filled(log, folder, game_id)
    except (LogError, OSError) as exc:
        raise ArgumentError("replay", "path_or_id", str(exc)) from None
    header = log.header
    try:
        rules: GameSpec | None = game_spec(log, anchoring(log, folder, game_id).anchored is True)
    except (LittlestoneError, ValueError):
        rules = None
    kept = _rounds_of(log)
    game = Game(_logged_result(header, log.footer, kept), learner=header["learner"]["spec"],
                adversary=header["adversary"]["spec"], seed=header.get("seed"), rules=rules,
                rounds=kept, game_id=header.get("game_id"), log=path)
    game.verification = report
    return game


def _result_of(fields: ResultFields, game: str) -> GameResult:
    """A GameResult from a result's JSON fields (a log's footer, a server's ``end``):
    ``bound`` and ``bound_name`` as a Bound, the fields it does not have as ``extra``."""
    known = GameResult.__dataclass_fields__
    # (GameResult's own fields, by name)
    values: dict[str, Any] = {k: v for k, v in fields.items()
                              if k in known and k not in ("bound", "extra")}
    values.setdefault("game", game)
    for key in ("status", "rounds", "mistakes", "expected_mistakes", "regret",
                "expected_regret"):
        values.setdefault(key, "" if key == "status" else 0)
    result = GameResult(**values)
    bound = fields.get("bound")
    if bound is not None:
        result.bound = Bound(float(bound), str(fields.get("bound_name", "")))
    result.extra.update({k: v for k, v in fields.items()
                         if k not in known and k != "bound_name"})
    return result


# (a log's header and footer, as its reader kept the maps it read)
def _logged_result(header: LoggedHeader, footer: LogFooter | None,
                   kept: PlayedRounds) -> GameResult:
    game = header["rules"]["game"]
    if footer and footer.get("result"):
        return _result_of(footer["result"], game)
    ts, realised, expected = kept.curve() if len(kept) else ([], [0.0], [0.0])
    last, last_expected = (realised[-1], expected[-1]) if ts else (0.0, 0.0)
    status = str((footer.get("status") if footer else None) or "incomplete")
    return GameResult(game, status, len(ts), last, last_expected, last, last_expected)


# -- remote games ------------------------------------------------------------------------


def _remote_agent(agent: Any, role: str | None) -> Learner | Adversary:
    if role not in (None, "learner", "adversary"):
        raise ArgumentError("connect", "role", f"'learner' or 'adversary', not {_kind(role)}")
    if role == "learner":
        return as_learner(agent, "connect", "agent")
    if role == "adversary":
        return as_adversary(agent, "connect", "agent")
    if isinstance(agent, Adversary) or (isinstance(agent, type) and issubclass(agent, Adversary)):
        return as_adversary(agent, "connect", "agent")
    if isinstance(agent, str) and ".py:" not in agent:
        name = agent.partition(":")[0]
        if name in ADVERSARIES and name not in LEARNERS:
            return as_adversary(agent, "connect", "agent")
        if name in ADVERSARIES and name in LEARNERS:
            raise ArgumentError("connect", "role", f"{name!r} names a learner and an "
                                "adversary: say which (role='learner' or 'adversary')")
    if isinstance(agent, str) and ".py:" in agent:
        try:
            return LEARNERS.make(agent)
        except SpecError:
            return as_adversary(agent, "connect", "agent")
    return as_learner(agent, "connect", "agent")


def connect(url: str, agent: Any, opponent: str | None = None, cls: Any = None,
            rounds: Any = None, *, seed: int | None = None, game: Any = MISTAKE_BOUND,
            experts: int | None = None, token: str | None = None, join: str | None = None,
            role: str | None = None, name: str = "littlestone-python",
            tls: Any = None) -> Any:
    """Play ``agent`` (a learner or an adversary, spec or object) on the server at
    ``url`` against its built-in ``opponent`` (a spec), as ``littlestone connect`` does;
    without an opponent the game waits for another remote player, who joins it by the
    id printed on stderr (``join=GAME_ID`` joins one). The result is a
    :class:`~littlestone.results.Game` (its rounds are in the server's log:
    ``littlestone.replay(game.game_id, data=...)`` on the server's side).

    asyncio-friendly: called where no event loop runs (a script), it plays and returns
    the Game; called inside a running loop (a Jupyter cell, an ``async def``), it
    returns an :class:`asyncio.Task` at once, which plays on that loop: ``game = await
    littlestone.connect(...)``. ``token`` defaults to ``$LITTLESTONE_TOKEN``; ``tls`` is
    an :class:`ssl.SSLContext` for a ``wss://`` server whose certificate the system
    does not trust. A string ``agent`` that names both a learner and an adversary needs
    ``role``.

    >>> import asyncio, pathlib, tempfile
    >>> import littlestone as ls
    >>> from littlestone.server.net import GameServer, ServerSettings
    >>> async def lesson():
    ...     folder = pathlib.Path(tempfile.mkdtemp())
    ...     server = GameServer(ServerSettings(port=0, data=folder, anonymous=True))
    ...     await server.start()
    ...     try:
    ...         return await ls.connect(server.url, "halving", "shattered-tree",
    ...                                 "thresholds:n=15", rounds=10, seed=1)
    ...     finally:
    ...         await server.stop()
    >>> game = asyncio.run(lesson())
    >>> game.status, game.mistakes, game.learner, game.adversary
    ('complete', 4, 'halving', 'shattered-tree:budget=50000000')
    """
    from littlestone.client import play_remote
    from littlestone.games.errors import AgentCrashed, ServerError

    if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
        raise ArgumentError("connect", "url", f"a ws:// or wss:// URL, not {_kind(url)}")
    try:  # (a bracket left open, a port past 65535: urllib's ValueError, raised late)
        urllib.parse.urlsplit(url).port  # noqa: B018  # (reading it checks it)
    except ValueError as exc:
        raise ArgumentError("connect", "url", f"{url!r} is not a URL: {exc}") from None
    player = _remote_agent(agent, role)
    if opponent is not None and not isinstance(opponent, str):
        opponent = _spec_of(opponent, "adversaries" if isinstance(player, Learner)
                            else "learners", "connect", "opponent")
    if join is not None:
        given = [n for n, v in (("cls", cls), ("rounds", rounds), ("experts", experts),
                                ("seed", seed), ("opponent", opponent)) if v is not None]
        if given:
            raise ArgumentError("connect", given[0], "join plays the rules and seed its "
                                f"creator chose: drop {', '.join(given)}")
        rules = GameSpec(EXPERTS, 0, experts=1)  # (unused: the server's start message holds)
    else:
        rules = as_rules("connect", game, cls, rounds, experts)
        _refused_remote(rules, player)
        seed = secrets.randbits(62) if seed is None else _seed("connect", seed)
    token = token if token is not None else os.environ.get("LITTLESTONE_TOKEN") or None

    def created(game_id: str) -> None:
        print(f"littlestone: created game {game_id}; waiting for the other player",
              file=sys.stderr, flush=True)

    async def remote() -> Game:
        try:
            out = await play_remote(url, player, opponent, rules, seed, token, name=name,
                                    join=join, on_created=created, tls=tls)
        except (AgentCrashed, ServerError) as exc:
            raise exc.with_traceback(None) from None
        except (OSError, TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            raise LittlestoneError(f"connect: cannot reach {url}: {reason}") from None
        return _remote_game(out)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        try:
            return asyncio.run(remote())
        except LittlestoneError as exc:
            raise exc.with_traceback(None) from None
    return asyncio.ensure_future(remote())


def _refused_remote(rules: GameSpec, agent: Learner | Adversary) -> None:
    reason = agent.unsupported(rules)
    if reason:
        raise ArgumentError("connect", "agent", f"{agent.spec} cannot play this game: {reason}")


def _remote_game(out: PlayedFields) -> Game:
    """A Game from what :func:`littlestone.client.play_remote` returns."""
    hclass = None
    with contextlib.suppress(LittlestoneError, ValueError):
        class_spec = out.get("class")
        hclass = make_class(class_spec) if class_spec else None
    rules = None
    with contextlib.suppress(LittlestoneError, ValueError):
        rules = GameSpec(out["game"], out["horizon"], hclass,
                         out.get("experts") if out["game"] == EXPERTS else None)
    fields = {k: v for k, v in out.items()
              if k not in ("learner", "adversary", "class", "horizon", "seed", "game_id",
                           "game_key", "experts")}
    # (the result's keys: play_remote's own are left out)
    return Game(_result_of(cast("ResultFields", fields), out["game"]), learner=out["learner"],
                adversary=out["adversary"], seed=out.get("seed"), rules=rules,
                game_id=out.get("game_id"),
                why_no_rounds="a remote game's rounds are in the server's log "
                "(littlestone.replay(game_id, data=...) where the server keeps its data)")

