"""Making a learner conservative (the mistake-bound notes: any deterministic learner with
mistake bound M can be made conservative with the same bound M)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, Bound, GameSpec
from littlestone.learners.base import LEARNERS, Learner, register

__all__ = ["Conservative", "inner_spec"]

#: What stands for ``,`` in the spec of the wrapped learner (a spec's values may not
#: contain ``,``): ``conservative:of=winnow:alpha=3;theta=5``.
SEPARATOR = ";"


def inner_spec(of: str) -> str:
    """The wrapped learner's own spec, from the value of ``of``.

    >>> inner_spec("winnow:alpha=3;theta=5")
    'winnow:alpha=3,theta=5'
    """
    return of.replace(SEPARATOR, ",")


@register
class Conservative(Learner):
    """The learner ``of`` made conservative: its state changes only on its mistakes, and
    it keeps its mistake bound.

    It predicts what the wrapped learner predicts and passes it a label only when that
    prediction was wrong. The wrapped learner then sees the subsequence of the rounds
    it erred on: a sequence of the same class (realizable by the same target), on which
    it errs every round, so their number is at most its bound M; the wrapper's mistakes
    are exactly those rounds. Only a deterministic learner can be wrapped (a mistake is
    the referee's draw, which a randomised learner never sees). Online-to-batch's
    longest survivor (``littlestone pac``) runs every learner through it. Write the
    wrapped learner's own commas as ``;``: ``conservative:of=winnow:alpha=3;theta=5``.

    >>> from littlestone.games.classes import make_class
    >>> learner = Conservative(of="halving")
    >>> learner.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=8")), seed=0)
    >>> learner.predict(6), learner.update(6, 0), learner.updates  # right: Halving told nothing
    (0.0, None, 0)
    >>> learner.predict(3), learner.update(3, 0), learner.updates  # wrong: Halving learns
    (1.0, None, 1)
    >>> learner.spec, Conservative(of="winnow:alpha=3,theta=5").spec
    ('conservative:of=halving', 'conservative:of=winnow:alpha=3.0;theta=5.0;variant=elimination')
    """

    id = "conservative"
    games = frozenset({MISTAKE_BOUND})
    slow_moves = True  # whatever the wrapped learner does, it does
    #: Online-to-batch's longest survivor asks for this (games.pac).
    conservative: ClassVar[bool] = True
    #: ``conservative:halving`` names the wrapped learner without ``of=``.
    positional = "of"

    def __init__(self, of: str = "halving") -> None:
        spec = inner_spec(of)
        if ".py" in spec:
            raise SpecError(f"conservative: of={of!r}: it wraps a registered learner, not a "
                            "file")
        if spec.partition(":")[0] == self.id:
            raise SpecError("conservative: of=conservative:...: it is conservative already")
        self._inner: Learner = LEARNERS.make(spec)
        if not self._inner.deterministic:
            raise SpecError(f"conservative: {self._inner.spec} is not deterministic (a "
                            "conservative learner must know its mistakes, and the referee's "
                            "coin is hidden)")
        if not type(self._inner).served:
            raise SpecError(f"conservative: {self._inner.spec} is not served (it imports code "
                            "named by its spec)")
        self.of = self._inner.spec.replace(",", SEPARATOR)
        self.updates = 0
        self._last_x: Any = None
        self._last_p = 0.0

    @property
    def inner(self) -> Learner:
        """The wrapped learner."""
        return self._inner

    def unsupported(self, game: GameSpec) -> str | None:
        return self._inner.unsupported(game) or super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._inner.start(game, seed)
        self.updates = 0
        self._last_x = None
        self._last_p = 0.0

    def predict(self, x: Any) -> float:
        p = float(self._inner.predict(x))
        self._last_x, self._last_p = x, p
        return p

    def update(self, x: Any, y: int) -> None:
        p = self._last_p if x is self._last_x else float(self._inner.predict(x))
        self._last_x = None
        if (p >= 0.5) != (y == 1):
            self.updates += 1
            self._inner.update(x, y)

    def bound(self, game: GameSpec) -> Bound | None:
        inner = self._inner.bound(game)
        return None if inner is None else Bound(inner.value, f"{inner.name}, kept conservative")

    def final_bound(self, game: GameSpec, measured: Mapping[str, Any]) -> Bound | None:
        inner = self._inner.final_bound(game, measured)
        return None if inner is None else Bound(inner.value, f"{inner.name}, kept conservative")

    # (the inner learner's own report, and this one's count)
    def report(self) -> dict[str, Any]:
        return {**self._inner.report(), "conservative_updates": self.updates}
