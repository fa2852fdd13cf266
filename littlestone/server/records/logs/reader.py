"""Reading a game's log: every frame checked against the hash chain and against what a
littlestone writer puts in it, and the rounds gathered as columns (the layout is drawn
in :mod:`littlestone.server.records.logs`).

A log is data anybody can write: a frame that hashes right but lacks what the readers
use, or holds it mistyped, is :class:`~.format.ForeignLog`, never a crash. Record fields
that follow from others are not stored: mistake = [prediction != y], loss = |p - y|, and
the running totals; :meth:`GameLogData.records` recomputes them exactly as the referee
does (in round order). A cut-off tail is dropped: the log then reads as ``incomplete``.

>>> import tempfile, pathlib
>>> from littlestone.server.records.logs.format import MAGIC
>>> path = pathlib.Path(tempfile.mkdtemp()) / "empty.lslog"
>>> _ = path.write_bytes(MAGIC)
>>> read_log(path)
Traceback (most recent call last):
...
littlestone.games.errors.ForeignLog: ...: no header (an empty or cut-off log)
"""

from __future__ import annotations

import hashlib
import math
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

import msgpack
import numpy as np

from littlestone.games.errors import ForeignLog, LogCorrupted
from littlestone.games.game import EXPERTS, GAMES, ExpertsRecord, ResultFields, RoundRecord
from littlestone.server.records.folder import is_index
from littlestone.server.records.logs.format import (
    FORMAT_VERSION,
    MAGIC,
    MAX_HEADER,
    READABLE_FORMATS,
    VECTOR_DIGESTS,
    ExpertRow,
    ExpertVector,
    RoundColumns,
)
from littlestone.server.records.rows import LogFooter, LoggedHeader

__all__ = ["GameLogData", "checked", "read_log"]


@dataclass
class GameLogData:
    """What a log holds: its header, its rounds (as columns) and its footer."""

    path: Path
    #: The header and the footer as read: anybody's maps, the header's fields checked by
    #: :func:`checked`, the footer's result's by the reader.
    header: LoggedHeader
    footer: LogFooter | None
    size: int
    #: Mistake-bound rounds as columns (None: no such rounds).
    columns: RoundColumns | None = None
    #: Experts-game rounds, one row per round: its fields as its frame had them
    #: (checked by ``_malformed``).
    expert_rounds: list[ExpertRow] = field(default_factory=list)
    #: Bytes after the last whole frame (a cut-off write).
    trailing: int = 0
    #: The chain digest of the last whole frame: the log's final digest.
    chain: bytes = b""

    @property
    def status(self) -> str:
        """The footer's status, or ``incomplete`` when the log has no footer."""
        return str(self.footer.get("status", "incomplete")) if self.footer else "incomplete"

    @property
    def result(self) -> ResultFields:
        """The footer's result: ``{}`` when the log has no footer, or a footer without one."""
        return (self.footer.get("result") if self.footer else None) or {}

    @property
    def n_rounds(self) -> int:
        if self.expert_rounds:
            return len(self.expert_rounds)
        return len(self.columns["y"]) if self.columns else 0

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
        columns = self.columns
        x, p, y, pred = columns["x"], columns["p"], columns["y"], columns["prediction"]
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


# (head: a frame's msgpack map, anybody's: what this checks)
def _malformed_header(head: Mapping[str, Any]) -> str | None:
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
#: The columns of a frame of experts rounds (format 2), one number a round each.
_EXPERT_COLUMNS = ("p", "y", "drawn", "loss", "expected_loss", "regret", "expected_regret")
#: Its vectors, a row a round: in full, or each row's SHA-256 (``NAME_sha256``).
_EXPERT_VECTORS: tuple[ExpertVector, ...] = ("advice", "weights", "costs")


# (head: a frame's msgpack map, checked by _malformed; the rows as format 1 has them)
def _expert_rows(head: dict[str, Any], raw: dict[str, np.ndarray]) -> list[ExpertRow]:
    """A frame of experts rounds (format 2, checked by :func:`_malformed`) as one dict a
    round, with what a frame a round (format 1) holds: its numbers (p None where NaN, y
    None where -1, x where the instance was kept), its vectors or their SHA-256."""
    n, t0 = int(head["n"]), int(head["t0"])
    scalars = {k: raw[k].tolist() for k in _EXPERT_COLUMNS}
    has = {k: raw[f"has_{k}"].tolist() if f"has_{k}" in raw else [True] * n
           for k in ("x", "advice", "weights")}
    xs = raw["x"].tolist() if "x" in raw else None
    rows = []
    for i in range(n):
        p, y = scalars["p"][i], scalars["y"][i]
        row: ExpertRow = {
            "t": t0 + i, "p": None if p != p else p, "y": None if y < 0 else y,
            "drawn": scalars["drawn"][i], "loss": scalars["loss"][i],
            "expected_loss": scalars["expected_loss"][i], "regret": scalars["regret"][i],
            "expected_regret": scalars["expected_regret"][i]}
        if xs is not None and has["x"][i]:
            row["x"] = xs[i]
        for name in _EXPERT_VECTORS:
            digest = VECTOR_DIGESTS[name]
            if name != "costs" and not has[name][i]:
                continue
            if name in raw:
                row[name] = raw[name][i]
            elif digest in raw:
                row[digest] = raw[digest][i].tobytes().hex()
        rows.append(row)
    return rows


# (head, header: frames' msgpack maps, anybody's: what this checks)
def _malformed(head: dict[str, Any], raw: dict[str, np.ndarray],
               header: LoggedHeader | None) -> str | None:
    """What a frame after the header lacks of what the readers use, or None."""
    rules = header.get("rules") if header else None
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
    elif kind == "experts":
        return _malformed_experts(head, raw, game, header)
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


# (head, header: frames' msgpack maps, anybody's: what this checks)
def _malformed_experts(head: dict[str, Any], raw: dict[str, np.ndarray], game: Any,
                       header: LoggedHeader | None) -> str | None:
    """What a frame of experts rounds (format 2) lacks of what the readers use, or None."""
    n = head.get("n")
    old_format = (header.get("format") if header else None) == 1
    if old_format or game not in (None, EXPERTS) or not _is_int(n, 0) or not _is_int(
            head.get("t0"), 1):
        return "experts rounds that are not an experts game's in format 2"
    for name in _EXPERT_COLUMNS:
        column = raw.get(name)
        if column is None or column.shape != (n,):
            return f"experts rounds whose {name} is not a column n long"
    for name in ("x", "has_x", "has_advice", "has_weights"):
        if name in raw and raw[name].shape != (n,):
            return f"experts rounds whose {name} is not a column n long"
    if ("x" in raw) != ("has_x" in raw):
        return "experts rounds whose instances come without their mask"
    d = None
    for name in _EXPERT_VECTORS:
        full, digests = raw.get(name), raw.get(f"{name}_sha256")
        if full is not None and digests is not None:
            return f"experts rounds with two {name}"
        if name != "costs" and (full is not None or digests is not None) != (
                f"has_{name}" in raw):
            return f"experts rounds whose {name} come without their mask"
        if digests is not None and (digests.shape != (n, 32) or digests.dtype != np.uint8):
            return f"experts rounds whose {name} digests are not 32 bytes a round"
        if full is not None:
            if full.ndim != 2 or full.shape[0] != n or full.dtype.kind != "f" or (
                    d is not None and full.shape[1] != d):
                return f"experts rounds whose {name} is not a matrix n x d"
            d = full.shape[1]
        if name == "costs" and full is None and digests is None:
            return "experts rounds without their costs"
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

    Raises :class:`~.format.ForeignLog` for a file that is not a littlestone log (the
    index and SQLite's files beside it are refused without being opened:
    :func:`~littlestone.server.records.folder.is_index`) and
    :class:`~.format.LogCorrupted` when the hash chain breaks.
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
    # (the maps as read: checked frame by frame below)
    expert_rounds: list[ExpertRow] = []
    header: LoggedHeader | None = None
    footer: LogFooter | None = None
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
                if kind != "header" or head.get("format") not in READABLE_FORMATS:
                    raise ForeignLog(f"{path}: unsupported log format {head.get('format')!r}")
                header = cast("LoggedHeader", head)  # (its fields: checked())
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
                expert_rounds.append(cast("ExpertRow", row))  # (checked by _malformed)
            elif kind == "experts":
                expert_rounds.extend(_expert_rows(head, raw))
            elif kind == "footer":
                footer = cast("LogFooter", head)  # (its result's fields: _malformed)
            frame_no += 1
    if header is None:
        raise ForeignLog(f"{path}: no header (an empty or cut-off log)")
    columns: RoundColumns | None = None
    if cols["y"]:
        columns = {"x": xs, "p": np.concatenate(cols["p"]), "y": np.concatenate(cols["y"]),
                   "prediction": np.concatenate(cols["prediction"])}
    return GameLogData(path, header, footer, size, columns, expert_rounds, size - offset, chain)
