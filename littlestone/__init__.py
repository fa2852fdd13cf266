"""littlestone: a referee for the games of online learning theory.

What a student or a researcher needs is here, under one name (``littlestone.__all__``).
Play a game, and look at it:

>>> import littlestone as ls
>>> game = ls.play("halving", "shattered-tree", "thresholds:n=63", rounds=20)
>>> game
<Game halving vs shattered-tree: complete, 6 mistakes (bound 6) in 20 rounds>
>>> int(game.rounds()["mistakes"].iloc[-1]), ls.ldim("thresholds:n=63")
(6, 6)

``game.plot()`` draws the curve against the bound, and Jupyter shows the summary and
the curve. A learner of your own subclasses :class:`Learner` and plays through the same
call, as a class or an instance:

>>> class MajorityVote(ls.Learner):
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
>>> ls.play(MajorityVote, "shattered-tree", "thresholds:n=63", rounds=200, seed=1).mistakes
6

The shattered-tree adversary forces Ldim(H) mistakes on any deterministic learner; the
majority vote halves the version space at each of its mistakes, so it makes at most
log2 |H| = 6 of them: on thresholds both are 6.

The Python API (:mod:`littlestone.api`, results in :mod:`littlestone.results`):
:func:`play` one game, :func:`compare` learners against one adversary, :func:`sweep` a
grid of games into a DataFrame, :func:`ldim` of a class (with VCdim, the randomised
value and a shattered tree), :func:`tournament` from a dict or a TOML file,
:func:`replay` a logged game, :func:`connect` to a server. Each takes spec strings or
objects, interchangeably; a bad argument is one :class:`ArgumentError` naming it.

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
- :mod:`littlestone.server`: the game server, records, tournaments, the page, the CLI;
- :mod:`littlestone.api`, :mod:`littlestone.results`, :mod:`littlestone.sweeps`: the
  Python API above them all.

>>> ls.__version__
'0.3.0'
"""

from __future__ import annotations

import importlib

# What the names are, for type checkers, is in ``__init__.pyi`` beside this file: typing
# them here (under TYPE_CHECKING) would draw import arrows from the package to every room
# it names, the Python API's on top included, which the layers contract forbids.

__all__ = [
    "ADVERSARIES",
    "LEARNERS",
    "Adversary",
    "ArgumentError",
    "FiniteClass",
    "Game",
    "GameResult",
    "GameSpec",
    "Learner",
    "LittlestoneError",
    "__version__",
    "compare",
    "connect",
    "ldim",
    "make_class",
    "play",
    "replay",
    "sweep",
    "tournament",
]

#: The package's version: the wheel's, every log header's and the server's ``welcome``.
__version__ = "0.3.0"

#: Where each public name lives: imported from there the first time it is asked for.
#: The agents come from their packages, which register the built-ins on import.
_HOMES = {
    "ADVERSARIES": "littlestone.adversaries",
    "Adversary": "littlestone.adversaries",
    "ArgumentError": "littlestone.games.errors",
    "FiniteClass": "littlestone.games.classes",
    "Game": "littlestone.results",
    "GameResult": "littlestone.games.game",
    "GameSpec": "littlestone.games.game",
    "LEARNERS": "littlestone.learners",
    "Learner": "littlestone.learners",
    "LittlestoneError": "littlestone.games.errors",
    "compare": "littlestone.api",
    "connect": "littlestone.api",
    "ldim": "littlestone.api",
    "make_class": "littlestone.games.classes",
    "play": "littlestone.api",
    "replay": "littlestone.api",
    "sweep": "littlestone.sweeps",
    "tournament": "littlestone.api",
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
