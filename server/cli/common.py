"""What every command shares: the one-line usage error, exit statuses, and how a
result is printed (one JSON object, or an aligned table)."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any, NoReturn

from littlestone.games.classes import FiniteClass
from littlestone.games.errors import BudgetExceeded
from littlestone.games.ldim import class_ldim

__all__ = ["EXIT_INTERNAL", "EXIT_USAGE", "Parser", "TerminalSafe", "UsageError", "cell",
           "class_keys", "count_int", "emit", "port_int", "positive_float", "positive_int",
           "seed_int", "table"]

EXIT_USAGE = 2
EXIT_INTERNAL = 1


class UsageError(Exception):
    """Bad command-line input: one line on stderr, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def class_keys(hclass: Any) -> dict[str, Any]:
    """``size`` and ``ldim`` of a finite class, as play and connect print them."""
    if not isinstance(hclass, FiniteClass):
        return {}
    try:
        ldim: int | None = class_ldim(hclass)[0]
    except BudgetExceeded:
        ldim = None
    return {"size": hclass.size, "ldim": ldim}


def emit(out: dict[str, Any], as_json: bool) -> None:
    """One JSON object, or an aligned table."""
    if as_json:
        print(json.dumps(out))
    else:
        table(out)


def cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return f"[{len(value)}]"
    return str(value)


def table(out: dict[str, Any]) -> None:
    width = max(len(k) for k in out)
    for key, value in out.items():
        if isinstance(value, float):
            value = f"{value:.6g}"
        print(f"{key:<{width}}  {value}")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0 (seconds, rates)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text} must be a number > 0")
    return value


def seed_int(text: str) -> int:
    """An argparse type: a game seed, a signed 64-bit integer (what the index keeps)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not -(1 << 63) <= value < 1 << 63:
        raise argparse.ArgumentTypeError(f"{value} is not a signed 64-bit integer")
    return value


def count_int(text: str) -> int:
    """An argparse type: an integer >= 0 that the index can keep (rounds)."""
    value = seed_int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def port_int(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free one) to 65535."""
    value = seed_int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0-65535)")
    return value


#: Control characters (C0 but tab and newline, DEL, C1): what a terminal would obey.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class TerminalSafe:
    r"""A text stream that shows control characters as escapes (``\x1b``) instead of
    writing them: names from peers and logs (an agent called ``\x1b[2J...``) cannot
    drive the terminal of whoever lists them. JSON output is unchanged (json.dumps
    escapes them already).

    >>> import io
    >>> out = io.StringIO()
    >>> print("evil\x1b[2J\x07 name", file=TerminalSafe(out))
    >>> out.getvalue()
    'evil\\x1b[2J\\x07 name\n'
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
