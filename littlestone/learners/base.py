"""The learner's side of both games: the base class and the registry.

A learner is told the game before round 1 (:meth:`Learner.start`), then plays:

- mistake-bound game: ``p = predict(x)`` (the probability of predicting 1; a
  deterministic learner answers 0 or 1), then ``update(x, y)`` with the true label;
- experts game: ``w = weights(advice)`` (a distribution over the d experts, or a
  prediction p in [0, 1] when there is advice), then ``update_costs(costs, y)``.

It never sees the referee's coin. A learner persists across the rounds of a game and is
started afresh (``start`` resets it) for each game.

>>> from littlestone.games.classes import make_class
>>> from littlestone.games.game import GameSpec
>>> learner = LEARNERS.make("halving")
>>> learner.start(GameSpec("mistake-bound", 10, make_class("thresholds:n=4")), seed=0)
>>> learner.predict(1), learner.update(1, 0), learner.predict(1)
(1.0, None, 0.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.agents import Agent, Registry
from littlestone.games.errors import UnsupportedGame
from littlestone.games.game import Bound, GameSpec

__all__ = ["LEARNERS", "Learner", "register"]


class Learner(Agent):
    """Base class of every learner; override what your games need.

    A subclass that does not set ``games`` plays the games whose methods it overrides:
    ``predict`` the mistake-bound game, ``weights`` the experts game.

    >>> class AlwaysOne(Learner):
    ...     def predict(self, x): return 1.0
    ...     def update(self, x, y): pass
    >>> sorted(AlwaysOne.games)
    ['mistake-bound']
    >>> from littlestone.games.classes import make_class
    >>> learner = AlwaysOne()
    >>> learner.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=7")), seed=0)
    >>> learner.predict(3)
    1.0
    >>> learner.start(GameSpec("experts", 5, experts=2), seed=0)
    Traceback (most recent call last):
    ...
    littlestone.games.errors.UnsupportedGame: learner AlwaysOne cannot play this game: it plays ...
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.games:  # set neither here nor by a parent: what it overrides says
            cls.games = frozenset(game for game, method in PLAYED_BY
                                  if getattr(cls, method) is not getattr(Learner, method))

    def start(self, game: GameSpec, seed: int) -> None:
        """Reset for a new game; raise :class:`UnsupportedGame` if it cannot be played."""
        reason = self.unsupported(game)
        if reason:
            raise UnsupportedGame(f"learner {self.spec} cannot play this game: {reason}")
        self.reset(game, seed)

    def unsupported(self, game: GameSpec) -> str | None:
        """Why this learner cannot play ``game`` (``None`` if it can)."""
        if game.game not in self.games:
            return f"it plays {', '.join(sorted(self.games))}, not {game.game}"
        return None

    def reset(self, game: GameSpec, seed: int) -> None:
        """Forget everything and prepare for ``game``; ``seed`` seeds any coin of its own."""

    # -- mistake-bound game ----------------------------------------------------------

    def predict(self, x: Any) -> float:
        """The probability p_t in [0, 1] of predicting 1 on instance x."""
        raise NotImplementedError(f"{self.id} does not play the mistake-bound game")

    def update(self, x: Any, y: int) -> None:
        """Learn the true label y of instance x."""
        raise NotImplementedError(f"{self.id} does not play the mistake-bound game")

    # -- expert-advice game ----------------------------------------------------------

    def weights(self, advice: NDArray[np.float64] | None) -> NDArray[np.float64] | float:
        """A distribution over the experts (or, with advice, a prediction p in [0, 1])."""
        raise NotImplementedError(f"{self.id} does not play the experts game")

    def update_costs(self, costs: NDArray[np.float64], y: int | None) -> None:
        """Learn the experts' costs of the round (and its label, when there was one)."""
        raise NotImplementedError(f"{self.id} does not play the experts game")

    # -- theory ----------------------------------------------------------------------

    def bound(self, game: GameSpec) -> Bound | None:
        """This learner's theoretical bound on ``game`` (docs/theory.md), if it has one.

        Asked after the game, so that a bound may use what the learner saw (the best
        expert's mistakes for Weighted-Majority)."""
        return None

    def final_bound(self, game: GameSpec, measured: Mapping[str, Any]) -> Bound | None:
        """The bound printed once the game is over: :meth:`bound`, unless it depends on
        what the referee measured (``measured``: the result's scores, such as the revealed
        target's ``hinge_deficiency`` on an agnostic class)."""
        return self.bound(game)

    # (an agent's own report: its keys and values are its own)
    def report(self) -> dict[str, Any]:
        """What the learner measured during the game (added to the game's result)."""
        return {}


#: The method whose override makes a learner play each game (when it sets no ``games``).
PLAYED_BY = (("mistake-bound", "predict"), ("experts", "weights"))

#: Every registered learner, by id.
LEARNERS: Registry[Learner] = Registry("learner", Learner)
register = LEARNERS.register
