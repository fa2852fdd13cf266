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

from littlestone.games.errors import ForeignLog, LogCorrupted, LogError

__all__ = ["FORMAT_VERSION", "FULL_ARRAYS_MAX", "MAGIC", "MAX_HEADER", "READABLE_FORMATS",
           "ForeignLog", "LogCorrupted", "LogError"]

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


