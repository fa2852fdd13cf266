"""How long a tournament's run has left, from what each kind of game has cost so far.

A run plays its built-in pairs first (thousands a second on a few cores), then its
games with submissions (a few a second), and its remote agents' games whenever they
come. One rate for them all said "about 3 s left" for the seven minutes the submissions
took (issue 42). :class:`Estimate` times each kind of game on its own, from when its
first game was handed out: the time left is the sum, over the kinds with games left, of
those games over their kind's rate. It says it does not know (``None``) rather than
guess when a kind with games left has not been timed yet (fewer than :data:`TIMED`
games ended) or when its games have stopped ending (none for :data:`STALL_FACTOR` times
its usual gap, and at least :data:`STALL_SECONDS`: a slow entrant's games, or the last
few games waiting on their deadlines); the rate and the games left are always said.

>>> estimate = Estimate({"built-in": 1000, "submitted": 100}, now=0.0)
>>> estimate.begin("built-in", 0.0)
>>> for k in range(1000):
...     estimate.ended("built-in", k / 100)
>>> estimate.seconds_left(10.0) is None  # the submissions not timed yet
True
>>> estimate.begin("submitted", 10.0)
>>> for k in range(20):
...     estimate.ended("submitted", 10.0 + (k + 1) * 0.5)
>>> round(estimate.seconds_left(20.0))  # 80 left at 2 a second
40
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["BUILT_IN", "KINDS", "REMOTE", "STALL_FACTOR", "STALL_SECONDS", "SUBMITTED", "TIMED",
           "Estimate"]

#: The kinds of game a run times apart: between built-in agents (in process), with a
#: submitted file (in sandboxes), with a remote agent (on its owner's machine).
BUILT_IN, SUBMITTED, REMOTE = "built-in", "submitted", "remote"
KINDS = (BUILT_IN, SUBMITTED, REMOTE)
#: Games of a kind that must have ended before its rate is trusted.
TIMED = 5
#: A kind whose last game ended longer ago than this many times its usual gap between
#: two games, and than :data:`STALL_SECONDS`, has stalled: its time left is unknown.
STALL_FACTOR = 5.0
STALL_SECONDS = 30.0


@dataclass
class _Kind:
    left: int
    done: int = 0
    began: float | None = None
    last: float | None = None


class Estimate:
    """The games each kind has ``left``, timed from :meth:`begin` (its games start being
    played) to each :meth:`ended`; times are the caller's clock (``now``)."""

    def __init__(self, left: Mapping[str, int], now: float) -> None:
        self.kinds = {kind: _Kind(count) for kind, count in left.items() if count}
        self.started = now
        self.done = 0

    def add(self, kind: str, games: int) -> None:
        """``games`` more of ``kind`` to play (a sampled schedule's next stage)."""
        self.kinds.setdefault(kind, _Kind(0)).left += games

    def begin(self, kind: str, now: float) -> None:
        """The games of ``kind`` are being played from ``now`` (once; later calls keep
        the first time)."""
        each = self.kinds.get(kind)
        if each is not None and each.began is None:
            each.began = now

    def ended(self, kind: str, now: float) -> None:
        """A game of ``kind`` ended at ``now`` (a kind never begun begins with it)."""
        self.done += 1
        each = self.kinds.setdefault(kind, _Kind(1))
        if each.began is None:
            each.began = now
        each.left = max(0, each.left - 1)
        each.done += 1
        each.last = now

    def left(self) -> int:
        """The games left, of every kind."""
        return sum(each.left for each in self.kinds.values())

    def rate(self, now: float) -> float:
        """Games a second since the run started, of every kind."""
        return self.done / max(now - self.started, 1e-9)

    def untimed(self) -> dict[str, int]:
        """The games left of each kind not timed yet."""
        return {kind: each.left for kind, each in self.kinds.items()
                if each.left and each.done < TIMED}

    def stalled(self, now: float) -> float | None:
        """How long the longest-stalled kind with games left has gone without a game
        ending (None: none has stalled)."""
        longest = None
        for each in self.kinds.values():
            if not each.left or each.done < TIMED or each.last is None or each.began is None:
                continue
            gap = (each.last - each.began) / each.done
            quiet = now - each.last
            if quiet > max(STALL_FACTOR * gap, STALL_SECONDS):
                longest = quiet if longest is None else max(longest, quiet)
        return longest

    def seconds_left(self, now: float) -> float | None:
        """The time left: each kind's games left over its own rate (its games ended over
        the time since it began, the wait since its last one included), summed; None
        when a kind with games left is untimed or has stalled."""
        if self.untimed() or self.stalled(now) is not None:
            return None
        total = 0.0
        for each in self.kinds.values():
            if each.left and each.began is not None:
                total += each.left * max(now - each.began, 1e-9) / each.done
        return total
