"""The adversary's side of both games: the base class and the registry.

An adversary is told the game before round 1 (:meth:`Adversary.start`), may commit to
a target (:meth:`commitment`, revealed by :meth:`reveal` after the last round), then
plays:

- mistake-bound game, and the experts game with class-derived experts:
  ``x = instance()``, then ``y = label(x, p)`` having seen the learner's p (never its
  coin; in the experts game p is the prediction the learner's weights induce);
- experts game with d free experts: ``advice()`` (a vector in [0, 1]^d or ``None``),
  then ``costs(answer)`` having seen the learner's weights (or p): a cost vector in
  [0, 1]^d, or a label when there was advice.

An oblivious adversary fixes everything from its seed before round 1.

>>> from littlestone.games.classes import make_class
>>> from littlestone.games.game import GameSpec
>>> adversary = ADVERSARIES.make("random-target")
>>> adversary.start(GameSpec("mistake-bound", 5, make_class("singletons:n=4")), seed=1)
>>> x = adversary.instance(); adversary.label(x, 0.5) in (0, 1)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.agents import Agent, Registry
from littlestone.games.errors import UnsupportedGame
from littlestone.games.game import GameSpec

__all__ = ["ADVERSARIES", "Adversary", "register"]


class Adversary(Agent):
    """Base class of every adversary; override what your games need.

    A subclass that does not set ``games`` plays the games whose methods it overrides:
    ``instance`` the mistake-bound game, ``advice`` the experts game with free experts.

    >>> class Zeros(Adversary):
    ...     def instance(self): return 0
    ...     def label(self, x, p): return 0
    >>> sorted(Zeros.games)
    ['mistake-bound']
    >>> from littlestone.games.classes import make_class
    >>> from littlestone.learners import LEARNERS
    >>> from littlestone.local import play
    >>> game = GameSpec("mistake-bound", 5, make_class("thresholds:n=7"))
    >>> result = play(game, LEARNERS.make("halving"), Zeros())
    >>> result.status, result.mistakes <= 1
    ('complete', True)
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.games:  # set neither here nor by a parent: what it overrides says
            cls.games = frozenset(game for game, method in PLAYED_BY
                                  if getattr(cls, method) is not getattr(Adversary, method))

    #: Whether the whole sequence is fixed before round 1 (it may then commit to it).
    oblivious: bool = False

    def start(self, game: GameSpec, seed: int) -> None:
        """Reset for a new game; raise :class:`UnsupportedGame` if it cannot be played."""
        reason = self.unsupported(game)
        if reason:
            raise UnsupportedGame(f"adversary {self.spec} cannot play this game: {reason}")
        self.reset(game, seed)

    def unsupported(self, game: GameSpec) -> str | None:
        """Why this adversary cannot play ``game`` (``None`` if it can)."""
        if game.game not in self.games:
            return f"it plays {', '.join(sorted(self.games))}, not {game.game}"
        return None

    def reset(self, game: GameSpec, seed: int) -> None:
        """Forget everything and prepare for ``game``; ``seed`` seeds its choices."""

    # -- commitment ------------------------------------------------------------------

    def commitment(self) -> bytes | None:
        """A SHA-256 digest of its target (games.commitment.digest), or ``None``."""
        return None

    def reveal(self) -> tuple[Any, bytes] | None:
        """After the last round: the committed target and its salt."""
        return None

    # -- mistake-bound game (and class-derived experts) ------------------------------

    def instance(self) -> Any:
        """The instance x_t of the next round."""
        raise NotImplementedError(f"{self.id} does not play instances")

    def label(self, x: Any, p: float) -> int:
        """The label y_t of x_t, having seen the learner's p_t."""
        raise NotImplementedError(f"{self.id} does not play instances")

    def moves(self, n: int) -> tuple[Any, list[int]] | None:
        """An oblivious adversary's next ``n`` instances and labels at once, or ``None``.

        The local driver asks for blocks so that the referee can validate them in one
        go (:meth:`littlestone.games.mistake_bound.MistakeBoundReferee.queue`); the game and its
        records are the same as when the moves come one at a time.
        """
        return None

    # -- experts game with free experts ---------------------------------------------

    def advice(self) -> NDArray[np.float64] | None:
        """The experts' advice a_t, or ``None`` (the learner then answers weights)."""
        raise NotImplementedError(f"{self.id} does not play free experts")

    def costs(self, answer: NDArray[np.float64] | float) -> NDArray[np.float64] | int:
        """The experts' costs v_t (or a label, after advice), having seen the answer."""
        raise NotImplementedError(f"{self.id} does not play free experts")


#: The method whose override makes an adversary play each game (when it sets no ``games``).
PLAYED_BY = (("mistake-bound", "instance"), ("experts", "advice"))

#: Every registered adversary, by id.
ADVERSARIES: Registry[Adversary] = Registry("adversary", Adversary)
register = ADVERSARIES.register
