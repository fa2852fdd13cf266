"""Game logs: one append-only, hash-chained msgpack file per game.

Layout (format version 1)::

    MAGIC (8 bytes: b"LSLOG\\x00\\x01\\n")
    frame, frame, ...

    frame = u32 little-endian length of H | H = msgpack map | raw buffers | chain (32 bytes)

``H["kind"]`` is ``header`` (the first frame), ``rounds`` (mistake-bound rounds as
columns), ``expert`` (one round of the experts game) or ``footer`` (the result, the last
frame). ``H["buffers"]`` lists the raw buffers that follow it as ``[name, dtype, shape]``;
their bytes come right after H, in that order. ``chain`` is
SHA-256(previous chain || the frame's bytes before it), starting from SHA-256(MAGIC): a
changed byte anywhere breaks the chain from that frame on. The chain has no key: it finds
corruption, not forgery (anyone can recompute it). The last frame's chain, the log's *final
digest*, is kept in the index row of its game when the game ends (its anchor,
:mod:`.store`), which is what ``replay --verify`` checks a rewritten log against.

A frame is written as soon as its rounds are scored (a block of rounds in the local
driver's vectorised path; rounds played one at a time are gathered into frames of at
most :data:`ROUND_BATCH` rounds or :data:`BATCH_SECONDS`), by a writer thread (hashing and writing
release the GIL, so a game runs on while its log is written), so a log cut off by a crash
or ``kill -9`` stays readable up to its last whole frame and reads as ``incomplete``.

Record fields that follow from others are not stored: mistake = [prediction != y],
loss = |p - y|, and the running totals; the reader recomputes them exactly as the
referee does (in round order). Experts-game arrays (advice, weights, costs) are stored
in full up to :data:`FULL_ARRAYS_MAX` experts; beyond, their SHA-256 digests are.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "g.lslog"
>>> writer = LogWriter(path, {"game": "mistake-bound"})
>>> writer.rounds(1, [3, 5], np.array([1.0, 0.0]), [0, 1], np.array([1, 0]))
>>> writer.close({"status": "complete"})
>>> log = read_log(path)
>>> log.status, log.n_rounds, [r.mistake for r in log.records()]
('complete', 2, [True, True])
>>> log.chain == writer.chain and len(log.chain) == 32
True
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import queue
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import numpy as np

from littlestone.games.errors import LittlestoneError
from littlestone.games.game import EXPERTS, GAMES, ExpertsRecord, GameSpec, RoundRecord
from littlestone.server.records.folder import is_index

__all__ = [
    "AUTO_FULL_BYTES",
    "FORMAT_VERSION",
    "FULL_ARRAYS_MAX",
    "LOG_LEVELS",
    "MAGIC",
    "ForeignLog",
    "GameLogData",
    "LogCorrupted",
    "LogError",
    "LogWriter",
    "checked",
    "estimated_bytes",
    "log_level",
    "read_log",
]

MAGIC = b"LSLOG\x00\x01\n"
FORMAT_VERSION = 1
#: Experts games with at most this many experts log advice, weights and costs in full.
FULL_ARRAYS_MAX = 4096
#: Frames waiting for the writer thread at most (the game waits beyond: flat memory).
QUEUE_FRAMES = 8
#: Rounds played one at a time are written in frames of at most this many rounds ...
ROUND_BATCH = 256
#: ... or as soon as the oldest waiting round is this old (seconds).
BATCH_SECONDS = 0.25
#: Largest frame header the reader accepts (a guard against garbage lengths, and against
#: msgpack's ~10x growth in memory: the largest written is a footer revealing a halfspace
#: target of 2^20 coordinates, about 9.5 MB).
MAX_HEADER = 16 << 20


class LogError(LittlestoneError):
    """A log that cannot be read."""


class ForeignLog(LogError):
    """Not a littlestone log, or a format version this reader does not know."""


class LogCorrupted(LogError):
    """The hash chain breaks: the bytes ``start..end`` were changed."""

    def __init__(self, start: int, end: int, frame: int, why: str = "fail the hash chain"
                 ) -> None:
        super().__init__(f"corrupted log: bytes {start}-{end} (frame {frame}) {why}")
        self.start, self.end, self.frame = start, end, frame


def _instances(xs: Any) -> tuple[str, Any]:
    """How a column of instances is stored: ``("i8", int64 array)`` for ints that fit,
    ``("f8", float64 matrix)`` for vectors, ``("big", list of bytes)`` otherwise."""
    if isinstance(xs, np.ndarray) and xs.dtype == np.float64:
        return "f8", xs
    values = list(xs)
    if values and isinstance(values[0], np.ndarray):
        return "f8", np.asarray(values, dtype=np.float64)
    if all(-(1 << 63) <= int(v) < (1 << 63) for v in values):
        return "i8", np.asarray(values, dtype=np.int64)
    return "big", [int(v).to_bytes((int(v).bit_length() + 8) // 8, "little", signed=True)
                   for v in values]


#: How much of a game its log keeps: ``full`` every round; ``compact`` the header and the
#: footer only (the seeds, the revealed key, the agents and the result: a game whose
#: agents all ran in process is re-simulated to show its rounds, ``replay``); ``none``
#: no log at all (the index row alone). ``auto`` (the default of ``play`` and
#: tournaments) is ``full`` up to :data:`AUTO_FULL_BYTES` of estimated log, else ``compact``.
LOG_LEVELS = ("auto", "full", "compact", "none")
#: The largest estimated log ``auto`` keeps in full.
AUTO_FULL_BYTES = 64 << 20


def estimated_bytes(game: GameSpec) -> int:
    """About how many bytes a full log of ``game`` takes (per round: p, y and the
    prediction, the instance, and in the experts game the advice, weights and costs).

    >>> from littlestone.games.classes import make_class
    >>> estimated_bytes(GameSpec("mistake-bound", 200_000, make_class("halfspaces:d=100")))
    162000000
    """
    d = getattr(game.hclass, "n_features", 1) if game.game == "mistake-bound" else 1
    if game.game == "mistake-bound":
        return game.rounds * (10 + 8 * max(d, 1))
    arrays = 3 * 8 * game.n_experts if game.n_experts <= FULL_ARRAYS_MAX else 3 * 90
    return game.rounds * (160 + arrays)


def log_level(level: str, game: GameSpec) -> str:
    """``level`` with ``auto`` resolved for ``game``.

    >>> from littlestone.games.classes import make_class
    >>> log_level("auto", GameSpec("mistake-bound", 1000, make_class("thresholds:n=7")))
    'full'
    >>> log_level("auto", GameSpec("experts", 100_000, experts=1000))
    'compact'
    """
    if level not in LOG_LEVELS:
        raise LogError(f"log level {level!r}: one of {', '.join(LOG_LEVELS)}")
    if level != "auto":
        return level
    return "full" if estimated_bytes(game) <= AUTO_FULL_BYTES else "compact"


class LogWriter:
    """Writes one game's log; frames are hashed and written by a background thread, or
    in the caller's thread with ``background=False`` (the server: its event loop then
    starts and joins no thread a game, and writes a frame in one go per block of rounds).
    ``level`` (:data:`LOG_LEVELS`, resolved): ``compact`` writes the header and the
    footer only, ``none`` no file; the :attr:`observer` sees every frame all the same.
    """

    def __init__(self, path: Path, header: dict[str, Any], background: bool = True,
                 level: str = "full") -> None:
        self.path = Path(path)
        self.level = level
        self._keep_rounds = level == "full"
        self._chain = hashlib.sha256(MAGIC).digest()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._file: BinaryIO | None = None
        if level == "none":
            background = False
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "xb")  # noqa: SIM115 - closed by close()
            self._file.write(MAGIC)
        if background:
            self._queue: queue.Queue[tuple[dict[str, Any], list[Any]] | None] = queue.Queue(
                QUEUE_FRAMES)
            self._thread = threading.Thread(target=self._run, name=f"log {self.path.name}",
                                            daemon=True)
            self._thread.start()
        self.bytes_written = len(MAGIC)
        #: Rounds handed to the log so far (those kept for a batch are counted when written).
        self.rounds_written = 0
        self._pending: list[RoundRecord] = []
        self._pending_since = 0.0
        #: Called with each frame after the header, (head, buffers), before it is
        #: written (the server's spectators: littlestone.server.net.spectators).
        self.observer: Callable[[dict[str, Any], list[Any]], None] | None = None
        self._put({"kind": "header", "format": FORMAT_VERSION, **header,
                   "log_level": level}, [], keep=True)

    # -- what the drivers call -------------------------------------------------------

    def rounds(self, t0: int, xs: Any, ps: Any, ys: Any, predictions: Any) -> None:
        """Mistake-bound rounds t0, t0 + 1, ... as columns."""
        self._flush_pending()
        self._rounds(t0, xs, ps, ys, predictions)

    def _rounds(self, t0: int, xs: Any, ps: Any, ys: Any, predictions: Any) -> None:
        kind, x = _instances(xs)
        self.rounds_written += len(ys)
        head: dict[str, Any] = {"kind": "rounds", "t0": t0, "n": len(ys), "x_kind": kind}
        buffers = [("p", np.ascontiguousarray(ps, dtype="<f8")),
                   ("y", np.ascontiguousarray(ys, dtype=np.int8)),
                   ("prediction", np.ascontiguousarray(predictions, dtype=np.int8))]
        if kind == "big":
            head["x"] = x
        else:
            buffers.append(("x", np.ascontiguousarray(x)))
        self._put(head, buffers)

    def round(self, record: RoundRecord) -> None:
        """One mistake-bound round, played one at a time: kept until :data:`ROUND_BATCH`
        rounds or :data:`BATCH_SECONDS` have gathered, then written as one frame."""
        if not self._pending:
            self._pending_since = time.monotonic()
        self._pending.append(record)
        if (len(self._pending) >= ROUND_BATCH
                or time.monotonic() - self._pending_since >= BATCH_SECONDS):
            self._flush_pending()

    def _flush_pending(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            self._rounds(pending[0].t, [r.x for r in pending], [r.p for r in pending],
                         [r.y for r in pending], [r.prediction for r in pending])

    def expert(self, record: ExpertsRecord) -> None:
        """One round of the experts game."""
        self.rounds_written += 1
        head: dict[str, Any] = {
            "kind": "expert", "t": record.t, "p": record.p, "y": record.y,
            "drawn": record.drawn, "loss": record.loss, "expected_loss": record.expected_loss,
            "regret": record.regret, "expected_regret": record.expected_regret,
        }
        if record.x is not None:
            head["x"] = int(record.x)
        buffers = []
        for name in ("advice", "weights", "costs"):
            value = getattr(record, name)
            if value is None:
                continue
            array = np.ascontiguousarray(value, dtype="<f8")
            if len(array) <= FULL_ARRAYS_MAX:
                buffers.append((name, array))
            else:
                head[f"{name}_sha256"] = hashlib.sha256(array.tobytes()).hexdigest()
        self._put(head, buffers)

    @property
    def chain(self) -> bytes:
        """The chain digest of the last frame written: after :meth:`close` (or
        :meth:`abandon`), the log's final digest, which the index keeps as its anchor."""
        return self._chain

    def flush(self) -> None:
        """Hand every round kept so far to the writer thread."""
        self._flush_pending()

    def close(self, footer: dict[str, Any]) -> None:
        """Write the footer and wait for the writer thread. Every frame is flushed to the
        operating system as it is written (no fsync: a killed process loses nothing; a
        power cut may lose the last frames, and the log then reads as incomplete)."""
        try:
            self._flush_pending()
            self._put({"kind": "footer", **footer}, [], keep=True)
        finally:
            self._stop()
        if self._error is not None:
            raise LogError(f"cannot write {self.path}: {self._error}") from self._error

    def abandon(self) -> None:
        """Stop without a footer (the log then reads as incomplete)."""
        with contextlib.suppress(LogError):
            self._flush_pending()
        self._stop()

    def _stop(self) -> None:
        if self._thread is None:
            if self._file is not None:
                self._file.close()
        else:
            self._queue.put(None)
            self._thread.join()

    # -- the writer thread -------------------------------------------------------------

    def _put(self, head: dict[str, Any], buffers: list[Any], keep: bool = False) -> None:
        if self._error is not None:
            raise LogError(f"cannot write {self.path}: {self._error}")
        if self.observer is not None:
            self.observer(head, buffers)
        if self._file is None or not (keep or self._keep_rounds):
            return  # (compact: a round; none: anything)
        if self._thread is not None:
            self._queue.put((head, buffers))
            return
        try:
            self._write(head, buffers)
        except OSError as exc:
            self._error = exc
            raise LogError(f"cannot write {self.path}: {exc}") from exc

    def _run(self) -> None:
        try:
            while (item := self._queue.get()) is not None:
                self._write(*item)
            if self._file is not None:
                self._file.flush()
        except BaseException as exc:  # reported by close(); the game is not disturbed
            self._error = exc
            while self._queue.get() is not None:  # drain, so that producers never block
                pass
        finally:
            if self._file is not None:
                self._file.close()

    def _write(self, head: dict[str, Any], buffers: list[Any]) -> None:
        """One frame: u32 length, msgpack header, raw buffers, then the chained SHA-256."""
        head["buffers"] = [[name, a.dtype.str, list(a.shape)] for name, a in buffers]
        packed = msgpack.packb(head, use_bin_type=True)
        pieces = [len(packed).to_bytes(4, "little"), packed]
        pieces += [memoryview(a).cast("B") for _, a in buffers]
        chain = hashlib.sha256(self._chain)
        for piece in pieces:
            chain.update(piece)
        self._chain = chain.digest()
        assert self._file is not None
        for piece in pieces:
            self._file.write(piece)
        self._file.write(self._chain)
        self.bytes_written += sum(len(p) for p in pieces) + 32
        self._file.flush()  # in the OS's hands: a killed process loses nothing


@dataclass
class GameLogData:
    """What a log holds: its header, its rounds (as columns) and its footer."""

    path: Path
    header: dict[str, Any]
    footer: dict[str, Any] | None
    size: int
    #: Mistake-bound rounds as columns: x (list or array), p, y, prediction.
    columns: dict[str, Any] = field(default_factory=dict)
    #: Experts-game rounds, one dict per round.
    expert_rounds: list[dict[str, Any]] = field(default_factory=list)
    #: Bytes after the last whole frame (a cut-off write).
    trailing: int = 0
    #: The chain digest of the last whole frame: the log's final digest.
    chain: bytes = b""

    @property
    def status(self) -> str:
        """The footer's status, or ``incomplete`` when the log has no footer."""
        return str(self.footer.get("status", "incomplete")) if self.footer else "incomplete"

    @property
    def n_rounds(self) -> int:
        if self.expert_rounds:
            return len(self.expert_rounds)
        return len(self.columns.get("y", ()))

    def records(self) -> Iterator[RoundRecord | ExpertsRecord]:
        """Every round as the referee recorded it, derived fields recomputed."""
        if self.expert_rounds:
            for row in self.expert_rounds:
                yield ExpertsRecord(
                    row["t"], row.get("x"), row.get("advice"), row.get("weights"), row["p"],
                    row["y"], row.get("costs", np.zeros(0)), row["drawn"], row["loss"],
                    row["expected_loss"], row["regret"], row["expected_regret"])
            return
        if not self.columns:
            return
        x, p, y, pred = (self.columns[k] for k in ("x", "p", "y", "prediction"))
        mistakes = 0
        expected = 0.0
        for t in range(len(y)):
            yt, pt = int(y[t]), float(p[t])
            mistake = int(pred[t]) != yt
            loss = 1.0 - pt if yt else pt
            mistakes += mistake
            expected += loss
            xt = x[t]
            yield RoundRecord(t + 1, xt.copy() if isinstance(xt, np.ndarray) else xt, pt, yt,
                              int(pred[t]), mistake, loss, mistakes, expected)


def _is_int(value: Any, low: int = -(1 << 63), high: int = 1 << 63) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < high


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, int | float) or (
        isinstance(value, str) and len(value) <= 256)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def checked(log: GameLogData) -> GameLogData:
    """``log``, if its header holds what replaying and verifying use (a log anybody wrote,
    chain and all, is data: a missing or mistyped field is one message, never a crash);
    ForeignLog otherwise. (:func:`read_log` checks the frames after the header.)"""
    problem = _malformed_header(log.header)
    if problem is not None:
        raise ForeignLog(f"{log.path}: its header is not a littlestone game's: {problem}")
    return log


def _malformed_header(head: dict[str, Any]) -> str | None:
    rules = head.get("rules")
    if not isinstance(rules, dict) or rules.get("game") not in GAMES:
        return "its rules name no game"
    if not _is_int(rules.get("rounds"), 0):
        return "its rules' rounds are not a count"
    if not isinstance(rules.get("class"), str | None) or not (
            rules.get("experts") is None or _is_int(rules.get("experts"), 1)):
        return "its rules' class or experts are malformed"
    for role in ("learner", "adversary"):
        if not isinstance(head.get(role), dict) or not isinstance(head[role].get("spec"), str):
            return f"it names no {role} spec"
    if not _is_int(head.get("seed")):
        return "its seed is not a 64-bit integer"
    if not all(isinstance(head.get(k), str | None) for k in ("game_id", "key_sha256")):
        return "its game id or key commitment is not a string"
    return None


#: What the readers take from an experts round's frame (numbers; p and drawn may be None).
_EXPERT_NUMBERS = ("t", "loss", "expected_loss", "regret", "expected_regret")


def _malformed(head: dict[str, Any], raw: dict[str, np.ndarray],
               header: dict[str, Any] | None) -> str | None:
    """What a frame after the header lacks of what the readers use, or None."""
    rules = (header or {}).get("rules")
    kind, game = head.get("kind"), rules.get("game") if isinstance(rules, dict) else None
    if kind == "rounds":
        n = head.get("n")
        if game == EXPERTS or not _is_int(n, 0) or head.get("x_kind") not in ("i8", "f8", "big"):
            return "rounds that are not mistake-bound rounds"
        x = head.get("x") if head["x_kind"] == "big" else raw.get("x")
        if any(raw.get(k) is None or raw[k].ndim != 1 or len(raw[k]) != n
               for k in ("p", "y", "prediction")) or x is None or len(x) != n:
            return "rounds whose columns are not n long"
        if head["x_kind"] == "big" and not all(isinstance(b, bytes) for b in x):
            return "instances that are not integers"
    elif kind == "expert":
        if game not in (None, EXPERTS) or not all(
                _is_number(head.get(k)) for k in _EXPERT_NUMBERS) or not all(
                k in head and (head[k] is None or _is_number(head[k])) for k in ("p", "drawn")):
            return "an experts round without its numbers"
        if not (head.get("x") is None or _is_int(head.get("x"))) or not (
                head.get("y") is None or _is_number(head.get("y"))):
            return "an experts round whose instance or label is not a number"
    elif kind == "footer":
        result = head.get("result", {})
        if not (isinstance(head.get("status"), str | None) and isinstance(result, dict)
                and isinstance(head.get("key"), str | None)):
            return "a footer whose status, result or key is malformed"
        for key, value in result.items():  # (other keys, lists of faults among them, as is)
            if (key in _RESULT_NUMBERS and not (_is_number(value) or value is None)) or (
                    key in _RESULT_TEXT and not isinstance(value, str)):
                return f"a footer whose result's {str(key)[:40]!r} is not what it should be"
    return None


#: The result's figures (numbers, or None) and texts, as the readers use them.
_RESULT_NUMBERS = ("rounds", "mistakes", "expected_mistakes", "regret", "expected_regret",
                   "learner_loss", "expected_learner_loss", "best_expert_loss", "bound")
_RESULT_TEXT = ("game", "status", "message", "bound_name")


def _read_exact(f: BinaryIO, n: int) -> bytes | None:
    data = f.read(n)
    return data if len(data) == n else None


def read_log(path: str | Path) -> GameLogData:
    """Read and check a log; a cut-off tail is dropped (the log is then incomplete).

    Raises :class:`ForeignLog` for a file that is not a littlestone log (the index and
    SQLite's files beside it are refused without being opened: :func:`.store.is_index`)
    and :class:`LogCorrupted` when the hash chain breaks.
    """
    path = Path(path)
    if is_index(path):
        raise ForeignLog(f"{path} is the SQLite index, not a game log")
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):  # a FIFO would block the reader, a device never end
        raise ForeignLog(f"{path} is not a regular file, so not a game log")
    size = info.st_size
    xs: list[Any] = []
    cols: dict[str, list[Any]] = {"p": [], "y": [], "prediction": []}
    expert_rounds: list[dict[str, Any]] = []
    header: dict[str, Any] | None = None
    footer: dict[str, Any] | None = None
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise ForeignLog(f"{path} is not a littlestone game log (format {FORMAT_VERSION})")
        chain = hashlib.sha256(MAGIC).digest()
        offset, frame_no = len(MAGIC), 0
        while True:
            start = offset
            if footer is not None and offset < size:  # the footer is the last frame
                raise LogCorrupted(offset, size, frame_no, "follow the footer")
            length_bytes = _read_exact(f, 4)
            if length_bytes is None:
                break
            length = int.from_bytes(length_bytes, "little")
            if length > MAX_HEADER:
                raise LogCorrupted(start, start + 4, frame_no)
            packed = _read_exact(f, length)
            if packed is None:
                break
            try:
                head = msgpack.unpackb(packed, raw=False, strict_map_key=True)
                specs = head["buffers"]
                shapes = [(str(n), np.dtype(d), tuple(int(s) for s in sh)) for n, d, sh in specs]
                if any(d.kind not in "biuf" or min(sh, default=0) < 0 for _, d, sh in shapes):
                    raise ValueError("a buffer that is not numbers")
            except Exception:
                raise LogCorrupted(start, start + 4 + length, frame_no,
                                   "are not a frame header that can be read") from None
            raw: dict[str, np.ndarray] = {}
            pieces = [length_bytes, packed]
            cut = False
            for name, dtype, shape in shapes:
                nbytes = math.prod(shape) * dtype.itemsize
                data = _read_exact(f, nbytes) if nbytes <= size - f.tell() else None
                if data is None:
                    cut = True
                    break
                pieces.append(data)
                raw[name] = np.frombuffer(data, dtype=dtype).reshape(shape)
            digest = None if cut else _read_exact(f, 32)
            if digest is None:
                break
            check = hashlib.sha256(chain)
            for piece in pieces:
                check.update(piece)
            end = start + sum(len(p) for p in pieces) + 32
            if check.digest() != digest:
                raise LogCorrupted(start, end, frame_no)
            chain, offset = digest, end
            kind = head.get("kind")
            if frame_no == 0:
                if kind != "header" or head.get("format") != FORMAT_VERSION:
                    raise ForeignLog(f"{path}: unsupported log format {head.get('format')!r}")
                header = head
            problem = _malformed(head, raw, header) if frame_no else None
            if problem is not None:  # hashed right, but not what a littlestone writes
                raise ForeignLog(f"{path}: frame {frame_no} ({str(kind)[:20]!r}) is not a "
                                 f"littlestone frame: {problem}")
            if kind == "rounds":
                cols["p"].append(raw["p"])
                cols["y"].append(raw["y"])
                cols["prediction"].append(raw["prediction"])
                if head["x_kind"] == "big":
                    xs.extend(int.from_bytes(b, "little", signed=True) for b in head["x"])
                elif head["x_kind"] == "f8":
                    xs.extend(raw["x"])
                else:
                    xs.extend(raw["x"].tolist())
            elif kind == "expert":
                row = {k: v for k, v in head.items()  # (scalars: nothing piles up)
                       if k not in ("kind", "buffers") and _is_scalar(v)}
                row.update(raw)
                expert_rounds.append(row)
            elif kind == "footer":
                footer = head
            frame_no += 1
    if header is None:
        raise ForeignLog(f"{path}: no header (an empty or cut-off log)")
    columns: dict[str, Any] = {}
    if cols["y"]:
        columns = {k: np.concatenate(v) for k, v in cols.items()}
        columns["x"] = xs
    return GameLogData(path, header, footer, size, columns, expert_rounds, size - offset, chain)
