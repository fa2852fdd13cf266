"""What both sides of a log agree on: its magic bytes, its format version, the limits of
its frames and the errors of reading and writing it (kept with the package's other
exceptions in :mod:`littlestone.games.errors`; the layout is drawn in
:mod:`littlestone.server.records.logs`).

>>> MAGIC, FORMAT_VERSION, READABLE_FORMATS
(b'LSLOG\\x00\\x01\\n', 2, (1, 2))
>>> str(LogCorrupted(8, 40, 1))
'corrupted log: bytes 8-40 (frame 1) fail the hash chain'
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

import numpy as np

from littlestone.games.errors import ForeignLog, LogCorrupted, LogError

__all__ = ["FORMAT_VERSION", "FULL_ARRAYS_MAX", "MAGIC", "MAX_HEADER", "READABLE_FORMATS",
           "VECTOR_DIGESTS", "ExpertFrame", "ExpertRow", "ExpertVector", "ExpertsFrame",
           "ForeignLog", "LogCorrupted", "LogError", "RoundColumns", "RoundsFrame"]

MAGIC = b"LSLOG\x00\x01\n"
#: The format the writer writes (the header's ``format``). 2: the experts game's rounds
#: in frames of columns (``experts``), as the mistake-bound game's (``rounds``); 1 wrote
#: a frame per experts round (``expert``), which format 2 may still hold.
FORMAT_VERSION = 2
#: The formats the reader reads: every log written before stays readable.
READABLE_FORMATS = (1, 2)
#: Experts games with at most this many experts log advice, weights and costs in full.
FULL_ARRAYS_MAX = 4096
#: Largest frame header the reader accepts (a guard against garbage lengths, and against
#: msgpack's ~10x growth in memory: the largest written is a footer revealing a halfspace
#: target of 2^20 coordinates, about 9.5 MB).
MAX_HEADER = 16 << 20




class RoundsFrame(TypedDict):
    """The head of a frame of mistake-bound rounds t0 .. t0 + n - 1 (its buffers: p, y,
    prediction and, unless ``x_kind`` is ``big``, x): how x is stored (``i8``, ``f8``,
    ``big``: then ``x`` here, each instance's little-endian bytes)."""

    kind: Literal["rounds"]
    t0: int
    n: int
    x_kind: str
    x: NotRequired[list[bytes]]


class ExpertFrame(TypedDict):
    """The head of a frame of one experts round (format 1; format 2 for an instance
    beyond 64 bits): its numbers, the instance, and each vector beyond
    :data:`FULL_ARRAYS_MAX` experts as its SHA-256 (the others are its buffers)."""

    kind: Literal["expert"]
    t: int
    p: float | None
    y: int | None
    drawn: int
    loss: float
    expected_loss: float
    regret: float
    expected_regret: float
    x: NotRequired[int]
    advice_sha256: NotRequired[str]
    weights_sha256: NotRequired[str]
    costs_sha256: NotRequired[str]


class ExpertsFrame(TypedDict):
    """The head of a frame of experts rounds t0 .. t0 + n - 1 as columns (format 2: every
    number and vector is a buffer)."""

    kind: Literal["experts"]
    t0: int
    n: int


class RoundColumns(TypedDict):
    """A mistake-bound game's rounds as its reader gathers them from its ``rounds`` frames:
    the instances (a list: ints, or float vectors), p (float64), y and the prediction
    (int8), one entry a round."""

    x: list[Any]
    p: np.ndarray[Any, np.dtype[np.float64]]
    y: np.ndarray[Any, np.dtype[np.int8]]
    prediction: np.ndarray[Any, np.dtype[np.int8]]


#: The vectors of an experts round: in full, or (beyond :data:`FULL_ARRAYS_MAX`
#: experts) their SHA-256 (:data:`VECTOR_DIGESTS`).
ExpertVector = Literal["advice", "weights", "costs"]


class ExpertRow(TypedDict, total=False):
    """An experts round as its reader gives it, one frame a round (format 1) or a row of a
    frame of columns (format 2): its numbers (p None where the learner gave weights, y None
    where the adversary gave costs), the instance where it was kept, and each vector in
    full or as its SHA-256 (hex)."""

    t: int
    p: float | None
    y: int | None
    drawn: int
    loss: float
    expected_loss: float
    regret: float
    expected_regret: float
    x: int
    advice: np.ndarray[Any, np.dtype[np.float64]]
    weights: np.ndarray[Any, np.dtype[np.float64]]
    costs: np.ndarray[Any, np.dtype[np.float64]]
    advice_sha256: str
    weights_sha256: str
    costs_sha256: str


#: Where an experts round keeps a vector's SHA-256 instead of the vector.
VECTOR_DIGESTS: dict[ExpertVector, Literal["advice_sha256", "weights_sha256",
                                           "costs_sha256"]] = {
    "advice": "advice_sha256", "weights": "weights_sha256", "costs": "costs_sha256"}
