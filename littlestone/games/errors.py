"""The exceptions of littlestone: every one of them, in this module, under one root.

The lowest room of the package holds them, so that every room imports its exceptions
from here (``littlestone.games`` imports nothing of ours above it). A built-in in
parentheses is a second base, for callers that catch it (``except ValueError``).

Tree::

    LittlestoneError
    ├── SpecError (ValueError)             a class, agent or game spec that cannot be used
    │   ├── UnsupportedGame                an agent that cannot play this game or class
    │   │   └── BeyondBudget (BudgetExceeded)  ... within its budget (exact Ldim too costly)
    │   └── ArgumentError (TypeError)      a bad argument to the Python API, named
    ├── BudgetExceeded                     exact work that would not finish within a budget
    │   └── PageBudget                     a request beyond what the page does for a viewer
    ├── MoveError                          a move that breaks the rules of the game
    │   ├── IllegalMove (ValueError)       malformed or out-of-range move (p outside [0, 1])
    │   ├── OutOfTurn                      a move the referee was not waiting for
    │   └── RuleViolation                  a well-formed move that breaks a rule (empties
    │                                      the version space, contradicts a commitment ...)
    ├── GameEnded                          a game ends against a player, with its status
    │   ├── Forfeit                        the fault that forfeits (FAULTS_TO_FORFEIT)
    │   ├── Disconnected                   a player's connection went away mid-game
    │   └── Crash                          an agent raised
    ├── ProtocolError                      a peer's message the protocol rejects: a code
    │   ├── OverBudget                     ``over_budget``, naming the budget hit
    │   └── Unavailable                    ``unavailable``: the server cannot start games now
    ├── AgentCrashed                       the client's own agent raised in a remote game
    ├── BadAnswer (TypeError)              an agent's method returned no number where one is due
    ├── ServerError                        the server answered the client with an error
    ├── ServerClosed                       the server closed the connection mid-game
    ├── MoveOverBudget                     a hosted agent's move past its CPU or memory
    ├── HostGone                           a hosted agent's host is killed or dead
    ├── LogError                           a log that cannot be read (or written)
    │   ├── ForeignLog                     not a littlestone log, or an unknown version
    │   ├── LogCorrupted                   the hash chain breaks
    │   └── LogWriteError                  the disk is full, or the file system refuses
    ├── StoreError                         a data folder that cannot be used
    ├── TokenError (ValueError)            a token that cannot be added as asked
    ├── ConfigError                        a tournament file that cannot be used
    ├── SandboxError (OSError)             a sandbox that could not be loaded
    ├── SandboxMissing                     submissions, and no sandbox to run them in
    ├── MissingDependency (ImportError)    an optional package a table or plot needs
    ├── UsageError                         bad command-line input (exit status 2)
    ├── CheckSkipped                       a check that could not be made
    ├── CaseFailed (AssertionError)        a conformance case the peer fails: one line why
    ├── CaseSkipped                        a conformance case that cannot run on this peer
    ├── Unsupported                        a request the kit's scripted server does not play
    └── Advice (AssertionError)            a check's finding that is advice, not a fault

Three signals are not errors: raised through an agent's own code, they must pass its
``except Exception``, so they are no :class:`LittlestoneError` (tests/test_errors.py lets
through exactly the classes that are no :class:`Exception`)::

    BaseException
    ├── CpuSpent                           a hosted agent's CPU seconds are spent
    ├── RecordDiffers                      a re-simulated game left its log
    └── KeyboardInterrupt
        └── Terminated                     SIGTERM: a command stops as on Ctrl-C

A :class:`MoveError` names the ``role`` that made the move (``"learner"`` or
``"adversary"``) and a stable ``rule`` code; ``status`` is what a game result records.
A :class:`ProtocolError` carries one of the protocol's stable error codes, a :class:`Code`
(PROTOCOL.md section 6), which live here with it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "FATAL",
    "FAULTS_TO_FORFEIT",
    "GOING_AWAY",
    "Advice",
    "AgentCrashed",
    "ArgumentError",
    "BadAnswer",
    "BeyondBudget",
    "BudgetExceeded",
    "CaseFailed",
    "CaseSkipped",
    "CheckSkipped",
    "Code",
    "ConfigError",
    "CpuSpent",
    "Crash",
    "Disconnected",
    "ForeignLog",
    "Forfeit",
    "GameEnded",
    "HostGone",
    "IllegalMove",
    "LittlestoneError",
    "LogCorrupted",
    "LogError",
    "LogWriteError",
    "MissingDependency",
    "MoveError",
    "MoveOverBudget",
    "OutOfTurn",
    "OverBudget",
    "PageBudget",
    "ProtocolError",
    "RecordDiffers",
    "RuleViolation",
    "SandboxError",
    "SandboxMissing",
    "ServerClosed",
    "ServerError",
    "SpecError",
    "StoreError",
    "Terminated",
    "TokenError",
    "Unavailable",
    "Unsupported",
    "UnsupportedGame",
    "UsageError",
    "where_raised",
]

#: The fault that forfeits a game (PROTOCOL.md 6), in every runner.
FAULTS_TO_FORFEIT = 3
#: The close code of a server that shuts down (RFC 6455 section 7.4.1).
GOING_AWAY = 1001


class LittlestoneError(Exception):
    """Root of every error littlestone raises on purpose.

    >>> from littlestone.games.classes import make_class
    >>> try:
    ...     make_class("thresholds:n=-1")
    ... except LittlestoneError as exc:
    ...     print(type(exc).__name__)
    SpecError
    """


# -- specs, arguments and budgets --------------------------------------------------------

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




class ArgumentError(SpecError, TypeError):
    """A bad argument to a function of the Python API, named with its function:
    ``play: rounds: an integer >= 0, not -1``. A :class:`~littlestone.LittlestoneError`,
    a ``ValueError`` and a ``TypeError``.

    >>> import littlestone as ls
    >>> try:
    ...     ls.play("halvng", "shattered-tree", "thresholds:n=63")
    ... except ls.ArgumentError as error:
    ...     print(error.argument, "|", error)
    learner | play: learner: unknown learner 'halvng' (known: ...)
    """

    def __init__(self, function: str, argument: str, message: str) -> None:
        super().__init__(f"{function}: {argument}: {message}")
        self.function, self.argument = function, argument


class PageBudget(BudgetExceeded):
    """A request beyond what the page does for a viewer: answered 503."""


# -- how a game ends against a player ---------------------------------------------------


class GameEnded(LittlestoneError):
    """The game ends against a player, with ``status`` (``forfeit:learner:timeout`` ...)
    and a message."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class Forfeit(GameEnded):
    """A player reached the fault that forfeits the game; its message says what the
    last fault was (a student reads why, not only that).

    >>> str(Forfeit("learner", "timeout"))
    'learner forfeits after 3 faults (timeout)'
    >>> str(Forfeit("learner", "illegal_move", "prediction 1.5 is outside [0, 1]"))
    'learner forfeits after 3 faults (illegal_move: prediction 1.5 is outside [0, 1])'
    """

    def __init__(self, role: str, code: str, last: str = "") -> None:
        why = f"{code}: {last[:300]}" if last else code
        super().__init__(f"forfeit:{role}:{code}",
                         f"{role} forfeits after {FAULTS_TO_FORFEIT} faults ({why})")
        self.role, self.code = role, code


class Disconnected(GameEnded):
    """A player behind a connection went away mid-game."""

    def __init__(self, role: str) -> None:
        super().__init__(f"disconnected:{role}", f"the {role} disconnected")
        self.role = role


class Crash(GameEnded):
    """An agent raised ``error``: ``crash:ROLE:ExceptionName``. With ``detailed`` the
    message also gives the exception's text and where the agent's own code raised it
    (in process, where nothing is secret); without, only its name (a server's agents).

    >>> Crash("learner", ZeroDivisionError("round 2")).message
    'learner raised ZeroDivisionError: round 2'
    >>> Crash("adversary", KeyError("x"), detailed=False).status
    'crash:adversary:KeyError'
    """

    def __init__(self, role: str, error: BaseException, detailed: bool = True) -> None:
        name = type(error).__name__
        message = f"{role} raised {name}"
        if detailed:
            where = where_raised(error)
            message += f": {error}" + (f" at {where}" if where else "")
        super().__init__(f"crash:{role}:{name}", message)
        self.role, self.error = role, error


# -- the protocol's refusals (PROTOCOL.md section 6) ------------------------------------


class Code(enum.StrEnum):
    """Stable error codes; their meanings are PROTOCOL.md section 6."""

    BAD_MESSAGE = "bad_message"
    UNSUPPORTED_VERSION = "unsupported_version"
    UNAUTHORIZED = "unauthorized"
    OUT_OF_TURN = "out_of_turn"
    ILLEGAL_MOVE = "illegal_move"
    TIMEOUT = "timeout"
    RULE_VIOLATION = "rule_violation"
    NOT_FOUND = "not_found"
    UNSUPPORTED_GAME = "unsupported_game"
    OVER_BUDGET = "over_budget"
    UNAVAILABLE = "unavailable"
    INTERNAL = "internal"


#: Codes after which the server closes the connection.
FATAL = frozenset({Code.UNSUPPORTED_VERSION, Code.UNAUTHORIZED, Code.INTERNAL})


class ProtocolError(LittlestoneError):
    """A peer's message the protocol rejects: a code and a short lowercase message (the
    ``error`` message it becomes is :func:`littlestone.protocol.build.error_of`'s).

    >>> error = ProtocolError(Code.ILLEGAL_MOVE, "p is 1.5")
    >>> error.code.value, error.message, error.fatal
    ('illegal_move', 'p is 1.5', False)
    """

    def __init__(self, code: Code, message: str, fatal: bool | None = None) -> None:
        super().__init__(message)
        self.code = Code(code)
        self.message = message
        self.fatal = self.code in FATAL if fatal is None else fatal
        #: A move for a round already decided (after a fault): dropped, not a new fault.
        self.stale = False


class OverBudget(ProtocolError):
    """``over_budget``, naming the budget hit for the operator's log (a field of
    :class:`~.settings.Budgets` or :class:`~.settings.ConnectionLimits`).

    >>> error = OverBudget("max_rounds", "over budget: 10 rounds, over the budget of 5")
    >>> error.code.value, error.budget, error.message
    ('over_budget', 'max_rounds', 'over budget: 10 rounds, over the budget of 5')
    """

    def __init__(self, budget: str, message: str, fatal: bool | None = None) -> None:
        super().__init__(Code.OVER_BUDGET, message, fatal)
        self.budget = budget



class Unavailable(ProtocolError):
    """``unavailable``: the server cannot start games now (its disk is full); try again
    later. Not fatal."""

    def __init__(self, message: str) -> None:
        super().__init__(Code.UNAVAILABLE, message)



# -- the client's ----------------------------------------------------------------------


class AgentCrashed(LittlestoneError):
    """The local agent raised during a remote game (the connection is then closed, and
    the server ends the game ``disconnected:ROLE``); ``status`` is what ``play`` would
    record, ``crash:ROLE:Exception``."""

    def __init__(self, role: str, error: BaseException) -> None:
        where = error.where if isinstance(error, BadAnswer) else where_raised(error)
        self.status = f"crash:{role}:{type(error).__name__}"
        super().__init__(f"{self.status}: {role} raised {type(error).__name__}: {error}"
                         + (f" at {where}" if where else ""))
        self.role, self.error = role, error


class BadAnswer(LittlestoneError, TypeError):
    """An agent's method returned what is not a number where the game needs one (the
    wire cannot carry it): said with the method's own file and line, not the library's
    line that found it."""

    def __init__(self, method: Callable[..., Any], value: object, needs: str) -> None:
        import inspect
        import os

        name = getattr(method, "__name__", "its method")
        self.where = ""
        try:
            path = os.path.realpath(inspect.getsourcefile(method) or "")
            line = inspect.getsourcelines(method)[1]
        except (OSError, TypeError):
            pass
        else:
            shown = os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
            self.where = f"{shown}:{line} in {name}"
        super().__init__(f"{name} returned {value!r:.60} (a {type(value).__name__}): it must "
                         f"return {needs}")


class ServerError(LittlestoneError):
    """The server answered with an error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"server: {code}: {message}")
        self.code = code


class ServerClosed(LittlestoneError):
    """The server closed the connection before the game ended. Code 1001 (going away)
    means it shut down (PROTOCOL.md 1.1): it records the game ``aborted:shutdown``.

    >>> str(ServerClosed(1001, "server shutting down"))
    'the server shut down: game aborted'
    >>> str(ServerClosed(None, ""))
    'the connection to the server was lost: game aborted'
    """

    def __init__(self, code: int | None, reason: str) -> None:
        self.code = code
        if code == GOING_AWAY:
            said = "the server shut down"
        elif code is None:
            said = "the connection to the server was lost"
        else:
            said = f"the server closed the connection ({code}{' ' + reason if reason else ''})"
        super().__init__(f"{said}: game aborted")


# -- a hosted agent's --------------------------------------------------------------------


class MoveOverBudget(LittlestoneError):
    """A hosted agent's move (or set-up) went past its CPU seconds or its memory: the
    agent's ``over_budget`` fault. Its state is as before the move."""


class HostGone(LittlestoneError):
    """The host is gone: killed (a call far past its budget: ``over_budget``; the game
    over, its peer gone) or dead (its memory exhausted beyond recovery, the agent's
    bug)."""

    def __init__(self, message: str, over_budget: bool = False) -> None:
        super().__init__(message)
        self.over_budget = over_budget



# -- logs, the index, files ------------------------------------------------------------


class LogError(LittlestoneError):
    """A log that cannot be read (or written)."""


class ForeignLog(LogError):
    """Not a littlestone log, or a format version this reader does not know."""


class LogCorrupted(LogError):
    """The hash chain breaks: the bytes ``start..end`` were changed."""

    def __init__(self, start: int, end: int, frame: int, why: str = "fail the hash chain"
                 ) -> None:
        super().__init__(f"corrupted log: bytes {start}-{end} (frame {frame}) {why}")
        self.start, self.end, self.frame = start, end, frame


class LogWriteError(LogError):
    """The log cannot be written: the disk is full, or the file system refuses (the
    operating system's error is ``errno``, as :class:`OSError`'s). A server ends the
    game ``aborted:storage``; the log holds it up to its last whole frame."""

    def __init__(self, path: Path, error: BaseException) -> None:
        why = error.strerror if isinstance(error, OSError) and error.strerror else error
        super().__init__(f"cannot write {path}: {why}")
        self.errno = error.errno if isinstance(error, OSError) else None


class StoreError(LittlestoneError):
    """A data folder that cannot be used: not a folder, not writable, or an index that is
    not a littlestone index (the command line prints one line, exit status 2)."""


class TokenError(LittlestoneError, ValueError):
    """A token that cannot be added as asked (a taken name, an unknown role)."""


class ConfigError(LittlestoneError):
    """A tournament file that cannot be used: names the file, the line and the key."""


class SandboxError(LittlestoneError, OSError):
    """A sandbox that could not be loaded (bubblewrap or Python failed to start)."""


class SandboxMissing(LittlestoneError):
    """Submissions, and no sandbox to run them in."""


class MissingDependency(LittlestoneError, ImportError):
    """A table or a plot asked for without the optional package that draws it."""


# -- the command line and the check suite ------------------------------------------------


class UsageError(LittlestoneError):
    """Bad command-line input: one line on stderr, exit status 2."""


class CheckSkipped(LittlestoneError):
    """A check that could not be made (the game it needs did not complete): its message
    says why; another check has reported the cause."""



class CaseFailed(LittlestoneError, AssertionError):
    """The peer did something the spec does not allow, in a conformance case
    (:mod:`littlestone.conformance`): one line saying what."""


class CaseSkipped(LittlestoneError):
    """A conformance case that cannot run against this peer (no token, a game it does
    not play)."""


class Unsupported(LittlestoneError):
    """A request the conformance kit's scripted server does not play."""

class Advice(LittlestoneError, AssertionError):
    """A finding that is advice, not a fault: the agent plays by the rules, and one thing
    would help its readers (a class docstring without a runnable example).

    It is an ``AssertionError``, so the project's own agents, whose tests call every
    check, still fail on it; ``littlestone check`` shows it as advice to a student and
    still passes the file.

    >>> isinstance(Advice("add an example"), AssertionError)
    True
    """


# -- signals, not errors: no Exception, so that an agent's ``except Exception`` lets them by


class CpuSpent(BaseException):
    """Raised in a hosted agent's host by its profiling timer (a BaseException: an
    agent's own ``except Exception`` cannot swallow it)."""


class RecordDiffers(BaseException):
    """Raised from inside the re-simulated game at the first record that differs (a
    BaseException, so that the driver does not take it for a player's crash)."""

    def __init__(self, t: int, what: str) -> None:
        super().__init__(f"round {t} differs: {what}")
        self.t = t


class Terminated(KeyboardInterrupt):
    """SIGTERM: a command stops as on Ctrl-C (its game is recorded ``aborted``)."""


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
