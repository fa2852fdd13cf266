"""What every command shares: the one-line usage error, exit statuses, how a result is
printed (one JSON object, or an aligned table), and the operator's log of the commands
that run a server (:func:`operator_log`)."""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import json
import logging
import logging.handlers
import queue
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn, TypedDict, cast

from littlestone.games.errors import UsageError
from littlestone.games.game import PlayedFields

__all__ = ["EXIT_INTERNAL", "EXIT_USAGE", "LOG_FORMATS", "OPERATOR_LOG_LEVELS", "JsonLines",
           "Parser", "TerminalSafe", "TextLines", "UsageError", "cell", "class_keys",
           "count_int", "emit", "game_output", "operator_log", "port_int", "positive_float",
           "positive_int", "regular_file", "seed_int", "table", "writable"]

EXIT_USAGE = 2
EXIT_INTERNAL = 1


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`UsageError` naming the sub-command
    (``play: argument --rounds: ...``), printed once under ``littlestone: error:``."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("littlestone").strip()
        raise UsageError(f"{command}: {message}" if command else message)


class ClassKeys(TypedDict, total=False):
    """A finite class's ``size`` and ``ldim`` (None: beyond its budget)."""

    size: int
    ldim: int | None


def class_keys(hclass: Any) -> ClassKeys:
    """``size`` and ``ldim`` of a finite class, as play and connect print them."""
    from littlestone.games.classes import FiniteClass
    from littlestone.games.errors import BudgetExceeded
    from littlestone.games.ldim import class_ldim

    if not isinstance(hclass, FiniteClass):
        return {}
    try:
        ldim: int | None = class_ldim(hclass)[0]
    except BudgetExceeded:
        ldim = None
    return {"size": hclass.size, "ldim": ldim}


#: The keys ``play`` and ``connect`` print last, in this order (``game_key``: connect's).
_LAST_KEYS = ("game_id", "log", "game_key", "seconds")


def game_output(out: PlayedFields, hclass: Any, experts: int | None) -> PlayedFields:
    """One output contract for every driver (``play``, ``connect``): the game and its
    players, the result (no empty ``message``; a whole ``bound`` as an integer), ``size``
    and ``ldim`` for a finite class, ``experts`` in the experts game, then ``game_id``,
    ``log`` (None when the log is the server's), ``game_key`` (remote) and ``seconds``.

    >>> game_output({"game": "experts", "seconds": 0.1, "bound": 4.0, "message": "",
    ...              "game_id": "g"}, None, 3)
    {'game': 'experts', 'bound': 4, 'experts': 3, 'game_id': 'g', 'log': None, 'seconds': 0.1}
    """
    # (out's keys but those that come last)
    body = cast("PlayedFields", {k: v for k, v in out.items()
                                 if k not in (*_LAST_KEYS, "size", "ldim", "experts")})
    if not body.get("message", True):
        body.pop("message")
    bound = body.get("bound")
    if isinstance(bound, float) and bound.is_integer():
        body["bound"] = int(bound)
    body = {**body, **class_keys(hclass)}
    if out.get("game") == "experts":
        body["experts"] = experts
    body["game_id"], body["log"] = out.get("game_id"), out.get("log")
    if out.get("game_key") is not None:
        body["game_key"] = out["game_key"]
    if "seconds" in out:
        body["seconds"] = out["seconds"]
    return body


def emit(out: Mapping[str, object], as_json: bool) -> None:
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


def table(out: Mapping[str, object]) -> None:
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


def writable(path: str, option: str) -> None:
    """A file an option will write: its folder must exist (nothing but the file itself is
    created); UsageError otherwise, before any work is done."""
    folder = Path(path).parent
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: no such folder {str(folder)!r}")


def regular_file(where: str, path: str | None) -> None:
    """Refuse a path that names something other than a file (a FIFO would block the
    read forever, a device never end); a missing one is the reader's to report."""
    if path and Path(path).exists() and not Path(path).is_file():
        raise UsageError(f"{where} {path} is not a regular file")


#: The characters that reorder what follows them on a screen (Unicode's bidirectional
#: controls: an agent named ``\u202e...`` would make a line read backwards from there).
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: Control characters (C0 but tab and newline, DEL, C1, the bidirectional controls):
#: what a terminal would obey.
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_BIDI}]")


def _escaped(match: re.Match[str]) -> str:
    """A character as its escape: ``\\x1b``, ``\\u202e``."""
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


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
        self.stream.write(self.escape(text))
        return len(text)

    @staticmethod
    def escape(text: str) -> str:
        r"""``text`` with its control characters as escapes (error messages on stderr,
        which naming a file or a log may fill: ``escape("a\x1b[2J")`` is ``'a\\x1b[2J'``)."""
        return _CONTROL.sub(_escaped, text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


# -- the operator's log (serve, tournament) ---------------------------------------------

#: ``--log-level``: the least severe lines of littlestone's the log shows (other
#: libraries' lines: warnings and above).
OPERATOR_LOG_LEVELS = ("debug", "info", "warning", "error")
#: ``--log-format``: a line of text, or one JSON object, per record.
LOG_FORMATS = ("text", "json")
#: Records waiting for the log's thread to write them; past this, while the log's stream
#: does not keep up, records are dropped (and counted) rather than stall the server.
LOG_QUEUE_MAX = 10_000

#: The attributes every record has: the rest are the fields a line was logged with.
_RECORD_ATTRIBUTES = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime",
                                                                      "taskName"}


def _utc(record: logging.LogRecord) -> str:
    return (datetime.datetime.fromtimestamp(record.created, datetime.UTC)
            .isoformat(timespec="milliseconds").replace("+00:00", "Z"))


class TextLines(logging.Formatter):
    r"""``TIME LEVEL LOGGER: MESSAGE``, one line per record (a traceback follows it):
    control characters and line breaks in the message are shown as escapes, so that a
    name a peer chose cannot forge a line.

    >>> record = logging.makeLogRecord({"name": "littlestone.x", "levelno": 20,
    ...     "levelname": "INFO", "msg": "agent %s", "args": ("evil\nINFO forged",),
    ...     "created": 0.0})
    >>> TextLines().format(record)
    '1970-01-01T00:00:00.000Z INFO littlestone.x: agent evil\\x0aINFO forged'
    """

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return _utc(record)

    def formatMessage(self, record: logging.LogRecord) -> str:
        return _LOG_CONTROL.sub(_escaped, super().formatMessage(record))


#: What a line of the text log may not hold: control characters, line breaks among them,
#: and the bidirectional controls (which would make the rest of a line read reordered).
_LOG_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029{_BIDI}]")


class JsonLines(logging.Formatter):
    """One JSON object per record: ``time`` (UTC), ``level``, ``logger``, ``message``,
    the fields it was logged with (``game_id``, ``status``, ``code``, ``peer``,
    ``token_name`` ...), and ``exc_info`` (the traceback) if it has one.

    >>> record = logging.makeLogRecord({"name": "littlestone.x", "levelno": 20,
    ...     "levelname": "INFO", "msg": "game %s ended", "args": ("g1",), "created": 0.0,
    ...     "game_id": "g1", "status": "complete"})
    >>> line = json.loads(JsonLines().format(record))
    >>> line["time"], line["level"], line["message"], line["game_id"], line["status"]
    ('1970-01-01T00:00:00.000Z', 'info', 'game g1 ended', 'g1', 'complete')
    """

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {"time": _utc(record), "level": record.levelname.lower(),
                                "logger": record.name, "message": record.getMessage()}
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRIBUTES:
                line.setdefault(key, value)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exc_info"] = record.exc_text
        return json.dumps(line, default=str)


class _Queued(logging.handlers.QueueHandler):
    """Hands records to the log's thread; drops (and counts) them when it is behind."""

    def __init__(self, records: queue.Queue[Any]) -> None:
        super().__init__(records)
        self.dropped = 0

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        """The record with its message and traceback made text now (its arguments may
        change later), its fields kept."""
        record = copy.copy(record)
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        return record

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1


@contextlib.contextmanager
def operator_log(level: str = "info", form: str = "text", stream: Any = None
                 ) -> Iterator[None]:
    """While the block runs, littlestone's log records of ``level`` and above (other
    libraries': warnings and above) go to ``stream`` (default: standard error) as
    :class:`TextLines` or :class:`JsonLines`, written by a thread of their own (an
    event loop never waits on a slow stream). Only the command line calls this: the
    library itself configures no handler."""
    stream = stream if stream is not None else sys.stderr
    records: queue.Queue[Any] = queue.Queue(LOG_QUEUE_MAX)
    queued = _Queued(records)
    writer = logging.StreamHandler(stream)
    writer.setFormatter(JsonLines() if form == "json" else TextLines())
    listener = logging.handlers.QueueListener(records, writer)
    root, ours = logging.getLogger(), logging.getLogger("littlestone")
    saved = root.level, ours.level
    threshold = logging.getLevelName(level.upper())
    root.setLevel(max(logging.WARNING, threshold))
    ours.setLevel(threshold)
    root.addHandler(queued)
    listener.start()
    try:
        yield
    finally:
        root.removeHandler(queued)
        listener.stop()  # (writes what is queued first)
        root.setLevel(saved[0])
        ours.setLevel(saved[1])
        if queued.dropped:
            print(f"littlestone: {queued.dropped} log lines were dropped: the log's stream "
                  "did not keep up", file=stream)
