"""Frames to messages and back, with explicit limits (PROTOCOL.md section 1).

Bad bytes never raise out of :func:`decode` as anything but a
:class:`~littlestone.protocol.errors.ProtocolError` with code ``bad_message``, whose message names
the value and the limit.

>>> decode(encode({"type": "predict", "t": 1, "p": 0.5}))
{'type': 'predict', 't': 1, 'p': 0.5}
>>> decode(b"\\x81\\xa4type")
Traceback (most recent call last):
...
littlestone.games.errors.ProtocolError: truncated msgpack
>>> decode("hello")
Traceback (most recent call last):
...
littlestone.games.errors.ProtocolError: text frames are not allowed: send binary msgpack
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgpack

from littlestone.games.errors import ProtocolError
from littlestone.protocol.errors import Code

__all__ = ["DEFAULT_LIMITS", "Limits", "decode", "encode"]


@dataclass(frozen=True)
class Limits:
    """What a peer may send (PROTOCOL.md 1.1)."""

    max_frame: int = 1 << 20
    #: Levels of nested maps and arrays (None: not walked, msgpack's own limit holds).
    max_depth: int | None = 8
    max_str: int = 1 << 16
    max_items: int = 1 << 16


DEFAULT_LIMITS = Limits()


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as one binary frame."""
    return msgpack.packb(message, use_bin_type=True)  # type: ignore[no-any-return]  # msgpack is untyped


def _depth(value: Any, limit: int, level: int = 1) -> None:
    if level > limit:
        raise ProtocolError(Code.BAD_MESSAGE, f"nesting exceeds max_depth({limit})")
    if isinstance(value, dict):
        for item in value.values():
            if isinstance(item, dict | list):
                _depth(item, limit, level + 1)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                _depth(item, limit, level + 1)


# (a peer's map: any fields until messages.check holds it to its type's)
def decode(frame: bytes | bytearray | memoryview | str, limits: Limits = DEFAULT_LIMITS
           ) -> dict[str, Any]:
    """One frame to one message map with a string ``type``; else ProtocolError."""
    if type(frame) is not bytes:
        if isinstance(frame, str):
            raise ProtocolError(Code.BAD_MESSAGE,
                                "text frames are not allowed: send binary msgpack")
        frame = bytes(frame)
    if len(frame) > limits.max_frame:
        raise ProtocolError(Code.BAD_MESSAGE,
                            f"{len(frame)} bytes exceeds max_frame({limits.max_frame})")
    try:
        message = msgpack.unpackb(
            frame, raw=False, strict_map_key=True, use_list=True,
            max_str_len=limits.max_str, max_bin_len=limits.max_frame,
            max_array_len=limits.max_items, max_map_len=limits.max_items, max_ext_len=0,
        )
    except msgpack.ExtraData:
        raise ProtocolError(Code.BAD_MESSAGE, "extra bytes after the message") from None
    except ValueError as exc:  # truncation, limits, bad utf-8, non-str keys, ext types
        text = str(exc).splitlines()[0] if str(exc) else ""
        if "incomplete input" in text:
            text = "truncated msgpack"
        elif "exceeds" not in text:
            text = f"malformed msgpack ({text})" if text and "malformed" not in text else (
                "malformed msgpack")
        raise ProtocolError(Code.BAD_MESSAGE, text) from None
    except Exception:  # truncated data and every other decoder failure
        raise ProtocolError(Code.BAD_MESSAGE, "truncated or malformed msgpack") from None
    if type(message) is not dict:
        raise ProtocolError(Code.BAD_MESSAGE, "a message is a msgpack map")
    if type(message.get("type")) is not str:
        raise ProtocolError(Code.BAD_MESSAGE, "a message needs a string 'type'")
    if limits.max_depth is not None:
        for value in message.values():  # most messages are flat: no walk
            if type(value) is dict or type(value) is list:
                _depth(message, limits.max_depth)
                break
    return message
