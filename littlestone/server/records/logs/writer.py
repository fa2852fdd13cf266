"""Writing a game's log: frames hashed into the chain and written as the rounds are
scored, by a writer thread or in the caller's (the layout is drawn in
:mod:`littlestone.server.records.logs`).

A frame is written as soon as its rounds are scored (a block of rounds in the local
driver's vectorised path; rounds played one at a time are gathered into frames of at
most :data:`ROUND_BATCH` rounds or :data:`BATCH_SECONDS`), by a writer thread (hashing and
writing release the GIL, so a game runs on while its log is written), so a log cut off by
a crash or ``kill -9`` stays readable up to its last whole frame and reads as
``incomplete``. Experts-game arrays (advice, weights, costs) are written in full up to
:data:`~.format.FULL_ARRAYS_MAX` experts; beyond, their SHA-256 digests are.

>>> import tempfile, pathlib
>>> writer = LogWriter(pathlib.Path(tempfile.mkdtemp()) / "g.lslog", {"game": "mistake-bound"})
>>> writer.rounds(1, [3, 5], np.array([1.0, 0.0]), [0, 1], np.array([1, 0]))
>>> writer.close({"status": "complete"})
>>> writer.rounds_written, len(writer.chain)
(2, 32)
"""

from __future__ import annotations

import contextlib
import hashlib
import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, cast

import msgpack
import numpy as np

from littlestone.games.errors import LogError, LogWriteError
from littlestone.games.experts import SCORE_CELLS, ExpertsBlock
from littlestone.games.game import ExpertsRecord, RoundRecord
from littlestone.server.records.logs.format import FORMAT_VERSION, FULL_ARRAYS_MAX, MAGIC

__all__ = ["BATCH_SECONDS", "QUEUE_FRAMES", "ROUND_BATCH", "LogWriteError", "LogWriter"]

#: Frames waiting for the writer thread at most (the game waits beyond: flat memory).
QUEUE_FRAMES = 8
#: Rounds played one at a time are written in frames of at most this many rounds ...
ROUND_BATCH = 256
#: ... or as soon as the oldest waiting round is this old (seconds).
BATCH_SECONDS = 0.25

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


class LogWriter:
    """Writes one game's log; frames are hashed and written by a background thread, or
    in the caller's thread with ``background=False`` (the server: its event loop then
    starts and joins no thread a game, and writes a frame in one go per block of rounds).
    ``level`` (:data:`LOG_LEVELS`, resolved): ``compact`` writes the header and the
    footer only, ``none`` no file; the :attr:`observer` sees every frame all the same.
    """

    def __init__(self, path: Path, header: Mapping[str, object], background: bool = True,
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
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "xb")  # noqa: SIM115 - closed by close()
                self._file.write(MAGIC)
            except OSError as exc:
                if self._file is not None:
                    self._file.close()
                raise LogWriteError(self.path, exc) from exc
        if background:
            self._queue: queue.Queue[tuple[dict[str, object], list[Any]] | None] = queue.Queue(
                QUEUE_FRAMES)
            self._thread = threading.Thread(target=self._run, name=f"log {self.path.name}",
                                            daemon=True)
            self._thread.start()
        self.bytes_written = len(MAGIC)
        #: Rounds handed to the log so far (those kept for a batch are counted when written).
        self.rounds_written = 0
        #: Rounds whose frames are in the file (what a log cut off here holds).
        self.rounds_kept = 0
        self._pending: list[RoundRecord] = []
        self._pending_experts: list[ExpertsRecord] = []
        self._pending_since = 0.0
        #: Called with each frame after the header, (head, buffers), before it is
        #: written (the server's spectators: littlestone.server.net.spectators, which
        #: read each kind's keys: hence Any).
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
        head: dict[str, object] = {"kind": "rounds", "t0": t0, "n": len(ys), "x_kind": kind}
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
        if self._pending_experts:
            records, self._pending_experts = self._pending_experts, []
            if all(r.x is None or -(1 << 63) <= int(r.x) < (1 << 63) for r in records):
                self._experts(ExpertsBlock.from_records(records, len(records[0].costs)))
            else:  # an instance beyond 64 bits: a frame per round (format 1's)
                for record in records:
                    self._expert_frame(record)

    def _expert_frame(self, record: ExpertsRecord) -> None:
        """One round of the experts game as a frame of its own."""
        self.rounds_written += 1
        head: dict[str, object] = {
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

    def expert(self, record: ExpertsRecord) -> None:
        """One round of the experts game, played one at a time: kept until
        :data:`ROUND_BATCH` rounds (or :data:`~littlestone.games.experts.SCORE_CELLS`
        numbers of a vector) or :data:`BATCH_SECONDS` have gathered, then written as one
        frame of columns, as :meth:`expert_block` writes a scored block."""
        pending = self._pending_experts
        if not pending:
            self._pending_since = time.monotonic()
        pending.append(record)
        if (len(pending) >= ROUND_BATCH or len(pending) * len(record.costs) >= SCORE_CELLS
                or time.monotonic() - self._pending_since >= BATCH_SECONDS):
            self._flush_pending()

    def expert_block(self, block: ExpertsBlock) -> None:
        """Scored rounds of the experts game as one frame of columns (format 2): the
        scalars of each round as a column each, advice, weights and costs as matrices
        (rows a round; beyond :data:`~.format.FULL_ARRAYS_MAX` experts, each row's
        SHA-256), with a mask of the rows that have advice, weights or an instance."""
        self._flush_pending()
        self._experts(block)

    def _experts(self, block: ExpertsBlock) -> None:
        n = block.n
        self.rounds_written += n
        head: dict[str, object] = {"kind": "experts", "t0": block.t0, "n": n}
        buffers: list[tuple[str, Any]] = []
        if block.has_x.any():
            buffers.append(("x", np.ascontiguousarray(block.x, dtype="<i8")))
            buffers.append(("has_x", block.has_x.astype(np.uint8)))
        for name in ("advice", "weights", "costs"):
            matrix = getattr(block, name)
            if matrix is None:
                continue
            if name != "costs":
                buffers.append((f"has_{name}", getattr(block, f"has_{name}").astype(np.uint8)))
            matrix = np.ascontiguousarray(matrix, dtype="<f8")
            if matrix.shape[1] <= FULL_ARRAYS_MAX:
                buffers.append((name, matrix))
            else:
                digests = b"".join(hashlib.sha256(row.tobytes()).digest() for row in matrix)
                buffers.append((f"{name}_sha256",
                                np.frombuffer(digests, dtype=np.uint8).reshape(n, 32)))
        buffers += [("p", np.ascontiguousarray(block.p, dtype="<f8")),
                    ("y", np.ascontiguousarray(block.y, dtype=np.int8)),
                    ("drawn", np.ascontiguousarray(block.drawn, dtype="<i8"))]
        buffers += [(name, np.ascontiguousarray(getattr(block, name), dtype="<f8"))
                    for name in ("loss", "expected_loss", "regret", "expected_regret")]
        self._put(head, buffers)

    @property
    def chain(self) -> bytes:
        """The chain digest of the last frame written: after :meth:`close` (or
        :meth:`abandon`), the log's final digest, which the index keeps as its anchor."""
        return self._chain

    def flush(self) -> None:
        """Hand every round kept so far to the writer thread."""
        self._flush_pending()

    def close(self, footer: Mapping[str, object]) -> None:
        """Write the footer and wait for the writer thread. Every frame is flushed to the
        operating system as it is written (no fsync: a killed process loses nothing; a
        power cut may lose the last frames, and the log then reads as incomplete)."""
        try:
            self._flush_pending()
            self._put({"kind": "footer", **footer}, [], keep=True)
        finally:
            self._stop()
        if self._error is not None:
            raise LogWriteError(self.path, self._error) from self._error

    def abandon(self) -> None:
        """Stop without a footer (the log then reads as incomplete)."""
        with contextlib.suppress(LogError):
            self._flush_pending()
        self._stop()

    def _stop(self) -> None:
        if self._thread is None:
            if self._file is not None:
                try:
                    self._file.close()  # (flushes what is buffered: may fail too)
                except OSError as exc:
                    self._error = self._error or exc
                finally:
                    self._file = None
        else:
            self._queue.put(None)
            self._thread.join()

    # -- the writer thread -------------------------------------------------------------

    def _put(self, head: dict[str, object], buffers: list[Any], keep: bool = False) -> None:
        if self._error is not None:
            raise LogWriteError(self.path, self._error)
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
            raise LogWriteError(self.path, exc) from exc

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

    def _write(self, head: dict[str, object], buffers: list[Any]) -> None:
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
        self.rounds_kept += int(cast("int", head["n"])) if head["kind"] in (
            "rounds", "experts") else (1 if head["kind"] == "expert" else 0)
