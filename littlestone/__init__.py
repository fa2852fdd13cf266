"""littlestone: a referee for the games of online learning theory.

What a student or a researcher needs is here, under one name (``littlestone.__all__``):
the base classes and registries of the agents, the rules of a game and its result, the
hypothesis classes, the Littlestone dimension, the runner, and the root of the errors. A
learner of your own subclasses :class:`Learner` and plays through :func:`play`:

>>> import littlestone
>>> class MajorityVote(littlestone.Learner):
...     '''Predict what most hypotheses still consistent with the labels say.'''
...     games = frozenset({"mistake-bound"})
...     def reset(self, game, seed):
...         self.hclass = game.hclass
...         self.alive = [True] * game.hclass.size
...     def predict(self, x):
...         votes = [bool(v) for v, a in zip(self.hclass.evaluate(x), self.alive) if a]
...         return 1.0 if 2 * sum(votes) >= len(votes) else 0.0
...     def update(self, x, y):
...         labels = self.hclass.evaluate(x)
...         self.alive = [a and bool(v) == bool(y) for v, a in zip(labels, self.alive)]
>>> H = littlestone.make_class("thresholds:n=63")
>>> game = littlestone.GameSpec("mistake-bound", 200, H)
>>> adversary = littlestone.ADVERSARIES.make("shattered-tree")
>>> result = littlestone.play(game, MajorityVote(), adversary, seed=1)
>>> result.status, result.mistakes, littlestone.ldim(H)
('complete', 6, 6)

The shattered-tree adversary forces Ldim(H) mistakes on any deterministic learner; the
majority vote halves the version space at each of its mistakes, so it makes at most
log2 |H| = 6 of them: on thresholds both are 6.

The names are imported when first used (PEP 562), so ``import littlestone`` stays as
cheap as it was: a sandboxed submission starts with ``python -m littlestone``. The
package's parts, for what goes beyond these names:

- :mod:`littlestone.games`: the rules, sans-I/O (classes, exact Ldim, the referees);
- :mod:`littlestone.learners` and :mod:`littlestone.adversaries`: the agents;
- :mod:`littlestone.protocol`: the wire format, sans-I/O;
- :mod:`littlestone.local`: the synchronous runner, in-process agents in a tight loop;
- :mod:`littlestone.transport` and :mod:`littlestone.client`: WebSocket connections,
  and the side a remote agent runs (``littlestone connect``, ``watch``);
- :mod:`littlestone.testing`: the check suite every agent passes (``littlestone check``);
- :mod:`littlestone.sandbox`: bubblewrap, for submitted agents;
- :mod:`littlestone.charts`: the curves and heatmaps of the page and the report;
- :mod:`littlestone.server`: the game server, records, tournaments, the page, the CLI.

>>> littlestone.__version__
'0.3.0'
"""

from __future__ import annotations

import importlib

#: ``typing.TYPE_CHECKING`` without importing typing (mypy reads the name as True):
#: ``import littlestone`` imports nothing it does not need.
TYPE_CHECKING = False
if TYPE_CHECKING:  # what the names are, for type checkers; imported on first use
    from collections.abc import Callable
    from typing import Any

    from littlestone.adversaries import ADVERSARIES, Adversary
    from littlestone.games.classes import FiniteClass, make_class
    from littlestone.games.errors import LittlestoneError
    from littlestone.games.game import GameResult, GameSpec
    from littlestone.games.ldim import ldim
    from littlestone.learners import LEARNERS, Learner

__all__ = [
    "ADVERSARIES",
    "LEARNERS",
    "Adversary",
    "FiniteClass",
    "GameResult",
    "GameSpec",
    "Learner",
    "LittlestoneError",
    "__version__",
    "ldim",
    "make_class",
    "play",
]

#: The package's version: the wheel's, every log header's and the server's ``welcome``.
__version__ = "0.3.0"

#: Where each public name lives: imported from there the first time it is asked for.
#: The agents come from their packages, which register the built-ins on import.
_HOMES = {
    "ADVERSARIES": "littlestone.adversaries",
    "Adversary": "littlestone.adversaries",
    "FiniteClass": "littlestone.games.classes",
    "GameResult": "littlestone.games.game",
    "GameSpec": "littlestone.games.game",
    "LEARNERS": "littlestone.learners",
    "Learner": "littlestone.learners",
    "LittlestoneError": "littlestone.games.errors",
    "ldim": "littlestone.games.ldim",
    "make_class": "littlestone.games.classes",
}


def __getattr__(name: str) -> object:
    """A public name, imported from its home on first use and kept (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'littlestone' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def play(game: GameSpec, learner: Learner, adversary: Adversary, seed: int = 0,
         on_record: Callable[[Any], None] | None = None) -> GameResult:
    """Play one game between two in-process agents and return its result, with the
    learner's bound: :func:`littlestone.local.play`, the synchronous runner.

    ``seed`` derives every coin of the game (the same seed plays the same game);
    ``on_record`` receives each round's record as it is scored. A player that cannot
    play ``game`` raises :class:`~littlestone.games.errors.UnsupportedGame` before round
    1; a player that breaks a rule or raises ends the game with a status naming it.

    A decision, for the notebook API to come: ``littlestone.play`` is this package's
    own function, which calls the runner, not the runner itself. It takes the runner's
    first arguments, in its order, for rules and agents as objects, and returns its
    result; what the runner takes beyond them (blocks, a log, a game key) stays
    :mod:`littlestone.local`'s. The notebook API widens this function in place:
    ``game``, ``learner`` and ``adversary`` may then also be spec strings
    (``"thresholds:n=63"``, ``"halving"``), and every call written against objects
    keeps working.

    >>> from littlestone import ADVERSARIES, LEARNERS, GameSpec, make_class
    >>> game = GameSpec("mistake-bound", 100, make_class("thresholds:n=1023"))
    >>> result = play(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"))
    >>> result.status, result.mistakes <= result.bound.value == 10
    ('complete', True)
    """
    from littlestone.local import play as run

    return run(game, learner, adversary, seed, on_record=on_record)
