"""The students' files that a competition is played with, in one place: the deadline
bench (:mod:`benchmarks.deadline`) submits them, and the competition's tests
(tests/server/tournament/test_competition.py, test_rating_lanes.py) play the same ones.

Each is Halving under the class name asked (a file names its class, ``mine.py:Mine``),
honest or slow or broken; ``tag`` goes into its docstring, so that two files of one kind
are two versions, not a duplicate:

>>> compile(slow_rating("Slow", 0.8, after=60, tag="s1 v2"), "mine.py", "exec").co_filename
'mine.py'
>>> honest(tag="a") != honest(tag="b")
True
>>> compile(broken(), "mine.py", "exec")
Traceback (most recent call last):
  ...
SyntaxError: invalid syntax
"""

from __future__ import annotations

__all__ = ["broken", "honest", "slow_check", "slow_rating"]


def _said(what: str, tag: str) -> str:
    return f"{what} ({tag})." if tag else f"{what}."


def honest(name: str = "Mine", tag: str = "") -> str:
    """Halving under another name: passes its check and plays every game in time."""
    return f'''"""{_said("Halving, submitted", tag)}"""
from littlestone.learners.halving import Halving


class {name}(Halving):
    """Halving under another name."""
'''


def slow_rating(name: str = "Mine", seconds: float = 0.45, after: int = 60,
                tag: str = "") -> str:
    """Halving, honest in a game's first ``after`` moves (the check plays 60 rounds a
    game), then ``seconds`` a move: passes its check, and is slow in its rating's games
    (just under a move deadline, or past it)."""
    return f'''"""{_said("Halving, slow past the check", tag)}"""
import time

from littlestone.learners.halving import Halving


class {name}(Halving):
    """Halving, {seconds} s a move from round {after + 1}."""

    def start(self, game, seed):
        self.moves = 0
        super().start(game, seed)

    def predict(self, x):
        self.moves += 1
        if self.moves > {after}:
            time.sleep({seconds})
        return super().predict(x)
'''


def slow_check(name: str = "Mine", seconds: float = 0.3, tag: str = "") -> str:
    """Halving, fast in its own checks (run with ``--in-sandbox``) and ``seconds`` a move
    in the check games the server referees."""
    return f'''"""{_said("Halving, slow where the server referees its check", tag)}"""
import sys
import time

from littlestone.learners.halving import Halving


class {name}(Halving):
    """Halving, {seconds} s a move outside its own checks."""

    def predict(self, x):
        if "--in-sandbox" not in sys.argv:
            time.sleep({seconds})
        return super().predict(x)
'''


def broken(name: str = "Mine", tag: str = "") -> str:
    """A syntax error: refused before any check plays."""
    return f'''"""{_said("A syntax error", tag)}"""
class {name}(:
    pass
'''
