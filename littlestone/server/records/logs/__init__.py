"""Game logs: one append-only, hash-chained msgpack file per game.

Layout (format version 2; the header's ``format``)::

    MAGIC (8 bytes: b"LSLOG\\x00\\x01\\n")
    frame, frame, ...

    frame = u32 little-endian length of H | H = msgpack map | raw buffers | chain (32 bytes)

``H["kind"]`` is ``header`` (the first frame), ``rounds`` (mistake-bound rounds as
columns), ``experts`` (experts rounds as columns: a block of queued rounds scored at
once, or up to 256 rounds played one at a time; ``t0`` and ``n`` in H, each number a
column and advice, weights and costs a matrix of a row a round, with masks of the rows
that have them) or ``footer`` (the result, the last frame). Format 1 wrote a frame
``expert`` per experts round instead; the reader reads both formats, so every log
written before stays readable, replayable and verifiable. ``H["buffers"]`` lists the
raw buffers that follow it as ``[name, dtype, shape]``; their bytes come right after H,
in that order. ``chain`` is
SHA-256(previous chain || the frame's bytes before it), starting from SHA-256(MAGIC): a
changed byte anywhere breaks the chain from that frame on. The chain has no key: it finds
corruption, not forgery (anyone can recompute it). The last frame's chain, the log's *final
digest*, is kept in the index row of its game when the game ends (its anchor,
:mod:`~littlestone.server.records.anchors`), which is what ``replay --verify`` checks a
rewritten log against.

The format's two sides live apart, each with what it alone needs:

- :mod:`.format`: the magic, the version, the frame limits and the errors;
- :mod:`.levels`: how much of a game its log keeps (``full``, ``compact``, ``none``);
- :mod:`.writer`: :class:`LogWriter`, frames written as the rounds are scored;
- :mod:`.reader`: :func:`read_log`, every frame checked, rounds as columns.

Their public names are imported here, where their users take them from.

>>> import tempfile, pathlib
>>> import numpy as np
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

from littlestone.games.errors import ForeignLog, LogCorrupted, LogError, LogWriteError
from littlestone.server.records.logs.format import FORMAT_VERSION, FULL_ARRAYS_MAX, MAGIC
from littlestone.server.records.logs.levels import (
    AUTO_FULL_BYTES,
    LOG_LEVELS,
    estimated_bytes,
    log_level,
)
from littlestone.server.records.logs.reader import GameLogData, checked, read_log
from littlestone.server.records.logs.writer import LogWriter

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
    "LogWriteError",
    "LogWriter",
    "checked",
    "estimated_bytes",
    "log_level",
    "read_log",
]
