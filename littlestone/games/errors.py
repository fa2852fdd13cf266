"""The exceptions of littlestone, one root for all of them.

Tree::

    LittlestoneError
    ├── SpecError (ValueError)            a class, agent or game spec that cannot be used
    │   └── UnsupportedGame               an agent that cannot play this game or class
    │       └── BeyondBudget (BudgetExceeded)  ... within its budget (exact Ldim too costly)
    ├── BudgetExceeded                    exact work that would not finish within a stated budget
    └── MoveError                         a move that breaks the rules of the game
        ├── IllegalMove (ValueError)      malformed or out-of-range move (p outside [0, 1] ...)
        ├── OutOfTurn                     a move the referee was not waiting for
        └── RuleViolation                 a well-formed move that breaks a rule (empties the
                                          version space, contradicts a commitment ...)

A :class:`MoveError` names the ``role`` that made the move (``"learner"`` or
``"adversary"``) and a stable ``rule`` code; ``status`` is what a game result records.
"""

from __future__ import annotations

__all__ = [
    "BeyondBudget",
    "BudgetExceeded",
    "IllegalMove",
    "LittlestoneError",
    "MoveError",
    "OutOfTurn",
    "RuleViolation",
    "SpecError",
    "UnsupportedGame",
    "where_raised",
]


class LittlestoneError(Exception):
    """Root of every error littlestone raises on purpose.

    >>> from littlestone.games.classes import make_class
    >>> try:
    ...     make_class("thresholds:n=-1")
    ... except LittlestoneError as exc:
    ...     print(type(exc).__name__)
    SpecError
    """


class SpecError(LittlestoneError, ValueError):
    """A spec string (class, agent, game) or a parameter that cannot be used."""


class UnsupportedGame(SpecError):
    """An agent was asked to play a game or a class it does not support."""


class BudgetExceeded(LittlestoneError):
    """Exact computation refused because it would exceed a stated budget."""


class BeyondBudget(UnsupportedGame, BudgetExceeded):
    """An agent cannot play this game within its budget (its exact Ldim, or randomised
    value, would cost more): a server answers ``over_budget``, not ``unsupported_game``."""


class MoveError(LittlestoneError):
    """A move that breaks the rules; ``role`` made it, ``rule`` is a stable code."""

    kind = "move_error"

    def __init__(self, role: str, rule: str, message: str) -> None:
        super().__init__(message)
        self.role = role
        self.rule = rule
        self.message = message

    @property
    def status(self) -> str:
        """The game status this error ends a game with, e.g. ``illegal_move:learner:p_range``."""
        return f"{self.kind}:{self.role}:{self.rule}"


class IllegalMove(MoveError, ValueError):
    """A malformed or out-of-range move."""

    kind = "illegal_move"


class OutOfTurn(MoveError):
    """A move made when the referee expected another one."""

    kind = "out_of_turn"


class RuleViolation(MoveError):
    """A well-formed move that breaks a rule of the game."""

    kind = "rule_violation"


def where_raised(exc: BaseException) -> str:
    """Where ``exc`` was raised, as ``FILE:LINE in FUNCTION``: the innermost frame of its
    traceback in neither littlestone's own files nor Python's libraries (an agent's own
    file), else the innermost frame; ``""`` without a traceback.

    >>> def student():
    ...     return 1 / 0
    >>> try:
    ...     student()
    ... except ZeroDivisionError as exc:
    ...     where_raised(exc).endswith("in student")
    True
    """
    import os
    import sysconfig
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    ours = [os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep]
    libraries = [os.path.realpath(p) + os.sep for key, p in sysconfig.get_paths().items()
                 if key in ("stdlib", "platstdlib", "purelib", "platlib")]
    chosen = frames[-1]
    for frame in reversed(frames):
        path = os.path.realpath(frame.filename)
        if not path.startswith((*ours, *libraries)) and not frame.filename.startswith("<"):
            chosen = frame
            break
    path = os.path.realpath(chosen.filename)
    with_cwd = os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
    return f"{with_cwd}:{chosen.lineno} in {chosen.name}"
