"""The protocol's error codes (PROTOCOL.md section 6) and its one exception, both kept
with the package's other exceptions (:mod:`littlestone.games.errors`), and the WebSocket
close code of each fatal error.

>>> CLOSE_CODES[Code.UNAUTHORIZED], Code.BAD_MESSAGE in FATAL
(1008, False)
"""

from __future__ import annotations

from littlestone.games.errors import FATAL, Code, ProtocolError

__all__ = ["CLOSE_CODES", "FATAL", "Code", "ProtocolError"]

#: The WebSocket close code for each fatal error (RFC 6455 section 7.4.1).
CLOSE_CODES = {Code.UNSUPPORTED_VERSION: 1002, Code.UNAUTHORIZED: 1008, Code.INTERNAL: 1011,
               Code.BAD_MESSAGE: 1003}
