"""The protocol's error codes (PROTOCOL.md section 6) and its one exception.

>>> ProtocolError(Code.ILLEGAL_MOVE, "p is 1.5").to_message()
{'type': 'error', 'code': 'illegal_move', 'message': 'p is 1.5', 'fatal': False}
"""

from __future__ import annotations

import enum

from littlestone.games.errors import LittlestoneError
from littlestone.protocol import build
from littlestone.protocol.wire import Error

__all__ = ["CLOSE_CODES", "FATAL", "Code", "ProtocolError"]


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
#: The WebSocket close code for each fatal error (RFC 6455 section 7.4.1).
CLOSE_CODES = {Code.UNSUPPORTED_VERSION: 1002, Code.UNAUTHORIZED: 1008, Code.INTERNAL: 1011,
               Code.BAD_MESSAGE: 1003}


class ProtocolError(LittlestoneError):
    """A peer's message the protocol rejects: a code and a short lowercase message."""

    def __init__(self, code: Code, message: str, fatal: bool | None = None) -> None:
        super().__init__(message)
        self.code = Code(code)
        self.message = message
        self.fatal = self.code in FATAL if fatal is None else fatal
        #: A move for a round already decided (after a fault): dropped, not a new fault.
        self.stale = False

    def to_message(self) -> Error:
        """The ``error`` message sent to the peer."""
        return build.error(self.code.value, self.message, self.fatal)
