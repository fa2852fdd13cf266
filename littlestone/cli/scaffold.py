"""``littlestone init FILE.py``: a student's first agent file and its test, to edit.

The file holds one learner (or, with ``--adversary``, one adversary) whose docstring
example runs; the test beside it, ``test_FILE.py``, runs the generic check suite
(:mod:`littlestone.testing`) on it under pytest, one test a check, as ``check`` does
without the sandbox. Neither file is overwritten."""

from __future__ import annotations

import argparse
import keyword
from pathlib import Path

from littlestone.cli.common import UsageError

__all__ = ["init"]

LEARNER = '''"""My learner for the mistake-bound game (littlestone init)."""

from littlestone.learners import Learner


class {name}(Learner):
    """Predicts the label it saw last (a start: replace it with yours).

    >>> learner = {name}()
    >>> learner.predict(3)
    0.0
    """

    games = frozenset({{"mistake-bound"}})

    def __init__(self):
        self.last = 0

    def reset(self, game, seed):
        """A new game: forget the last one (draw any randomness from ``seed``)."""
        self.last = 0

    def predict(self, x):
        """The probability that it predicts 1 on ``x``: a number in [0, 1]."""
        return float(self.last)

    def update(self, x, y):
        self.last = y

    def unsupported(self, game):
        """Why it cannot play ``game`` (a string), or None: a tournament and ``check``
        play it only where this says None."""
        return super().unsupported(game)
'''

ADVERSARY = '''"""My adversary for the mistake-bound game (littlestone init)."""

import numpy as np

from littlestone import Adversary, FiniteClass


class {name}(Adversary):
    """Random instances, labelled against the learner while some hypothesis of the
    class agrees (the game stays realizable). A start: replace it with yours.

    >>> from littlestone import GameSpec, make_class
    >>> adversary = {name}()
    >>> adversary.start(GameSpec("mistake-bound", 5, make_class("thresholds:n=8")), seed=0)
    >>> adversary.label(adversary.instance(), 1.0) in (0, 1)
    True
    """

    games = frozenset({{"mistake-bound"}})

    def __init__(self):
        self.hclass, self.alive, self.rng = None, None, np.random.default_rng(0)

    def unsupported(self, game):
        """Why it cannot play ``game`` (a string), or None."""
        if not isinstance(game.hclass, FiniteClass):
            return "it needs a finite class"
        return super().unsupported(game)

    def reset(self, game, seed):
        self.hclass = game.hclass
        self.alive = np.ones(game.hclass.size, dtype=bool)
        self.rng = np.random.default_rng(seed)  # every choice from the game's seed

    def instance(self):
        return int(self.rng.integers(self.hclass.domain_size))

    def label(self, x, p):
        """The true label of ``x``, 0 or 1, once the learner said ``p``."""
        values = self.hclass.evaluate(x)
        wanted = 0 if p >= 0.5 else 1
        if not (self.alive & (values == bool(wanted))).any():
            wanted = 1 - wanted  # the other label keeps some hypothesis consistent
        self.alive &= values == bool(wanted)
        return wanted
'''

TEST = '''"""The checks a tournament relies on, on {file}:{name} (run: pytest {test})."""

import pytest

from littlestone.testing import Advice, CheckSkipped, yield_checks
from littlestone.{registry_module} import {registry}

AGENT = {registry}.make("{file}:{name}")


@pytest.mark.parametrize("check", list(yield_checks(AGENT)), ids=lambda c: c.__name__)
def test_{snake}(check):
    try:
        check()
    except CheckSkipped as exc:
        pytest.skip(str(exc))
    except Advice:
        pass  # a tip, not a failure: `littlestone check` shows it
'''


def init(args: argparse.Namespace) -> int:
    """Write FILE.py and test_FILE.py beside it; refuse to overwrite either."""
    file = Path(args.file)
    if file.suffix != ".py" or not file.stem.isidentifier() or keyword.iskeyword(file.stem):
        raise UsageError(f"init: {args.file!r} is not a Python module name (as mine.py)")
    name = args.name or ("MyAdversary" if args.adversary else "MyLearner")
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"init: --name {name!r} is not a Python class name")
    test = file.with_name(f"test_{file.name}")
    for path in (file, test):
        if path.exists():
            raise UsageError(f"init: {path} exists: not overwritten")
    registry = ("ADVERSARIES", "adversaries") if args.adversary else ("LEARNERS", "learners")
    file.write_text((ADVERSARY if args.adversary else LEARNER).format(name=name))
    test.write_text(TEST.format(file=file.name, name=name, test=test.name,
                                registry=registry[0], registry_module=registry[1],
                                snake="check" if not args.adversary else "adversary_check"))
    print(f"littlestone: wrote {file} ({name}) and {test}: edit the first, then run "
          f"`pytest {test}` and `littlestone check {file}:{name}`")
    return 0
