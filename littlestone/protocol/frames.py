"""Length-prefixed messages on a stream socket, with blocking calls: the direct link
between a tournament's referee and a sandboxed submission's game process (no WebSocket
and no event loop on either side: a round is two system calls a side).

A frame is its length (4 bytes, big-endian) and one msgpack message of :mod:`.codec`,
read under the same :class:`~.codec.Limits`: a bad message is a
:class:`~.errors.ProtocolError` (``bad_message``; ``fatal`` when the stream cannot go on:
a frame over ``max_frame``), a peer gone is :class:`EOFError`, a deadline passed is
:class:`TimeoutError`.

>>> import socket
>>> a, b = socket.socketpair()
>>> left, right = FrameSocket(a), FrameSocket(b)
>>> left.send({"type": "predict", "t": 1, "p": 0.5})
>>> right.recv()
{'type': 'predict', 't': 1, 'p': 0.5}
>>> left.send_all([{"type": "label", "t": 1, "y": 0}, {"type": "instance", "t": 2, "x": 3}])
>>> right.recv()["type"], right.recv()["type"]
('label', 'instance')
>>> import time
>>> right.recv(time.monotonic() + 0.01)
Traceback (most recent call last):
...
TimeoutError: no message before the deadline
>>> left.close(); right.recv()
Traceback (most recent call last):
...
EOFError: the peer closed the link
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Mapping, Sequence
from typing import Any

from littlestone.games.errors import ProtocolError
from littlestone.protocol.codec import DEFAULT_LIMITS, Limits, decode, encode
from littlestone.protocol.errors import Code

__all__ = ["FrameSocket"]

_LENGTH = struct.Struct(">I")
_TIMEVAL = struct.Struct("@ll")
#: How much earlier than the deadline the kernel's timeout may end a wait (it is set
#: again only when it is later than the deadline, or earlier by more than this).
TIMEOUT_SLACK = 0.25


class FrameSocket:
    """Messages over a connected stream socket (blocking; :meth:`recv` optionally by a
    deadline on :func:`time.monotonic`). Not for two threads at once."""

    def __init__(self, sock: socket.socket, limits: Limits = DEFAULT_LIMITS) -> None:
        self.sock, self.limits = sock, limits
        self._buffer = bytearray()
        sock.settimeout(None)
        #: The receive timeout the kernel holds (``SO_RCVTIMEO``; None: none): a blocking
        #: ``recv`` is then one system call, where a Python timeout costs three.
        self._timeout: float | None = None
        #: The send timeout the kernel holds (``SO_SNDTIMEO``; None: none).
        self._send_timeout: float | None = None

    def send(self, message: Mapping[str, Any], seconds: float | None = None) -> None:
        """Send one message: OSError when the peer is gone, and :class:`TimeoutError`
        (an OSError) when, with ``seconds``, the socket's buffer stays full that long (the
        peer does not read; the stream is then cut mid-message: close it)."""
        body = encode(message)
        if seconds != self._send_timeout:
            micros = 0 if seconds is None else max(1, int(seconds * 1e6))  # (0: no timeout)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                                 _TIMEVAL.pack(micros // 1_000_000, micros % 1_000_000))
            self._send_timeout = seconds
        try:
            self.sock.sendall(_LENGTH.pack(len(body)) + body)
        except BlockingIOError:  # the kernel's timeout
            raise TimeoutError(f"the peer read nothing for {seconds} s") from None

    def send_all(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Send ``messages`` in one write (an adversary's label and its next instance:
        one wake-up of the referee, not two; OSError when the peer is gone)."""
        if len(messages) == 1:
            self.send(messages[0])
            return
        frames = bytearray()
        for message in messages:
            body = encode(message)
            frames += _LENGTH.pack(len(body))
            frames += body
        if frames:
            self.sock.sendall(frames)

    # (a peer's map: any fields until messages.check holds it to its type's)
    def recv(self, deadline: float | None = None) -> dict[str, Any]:
        """The next message (``deadline``: :func:`time.monotonic` time, None: wait)."""
        buffer = self._buffer
        while True:
            if len(buffer) >= 4:
                (size,) = _LENGTH.unpack_from(buffer)
                if size > self.limits.max_frame:
                    raise ProtocolError(Code.BAD_MESSAGE, f"{size} bytes exceeds max_frame"
                                        f"({self.limits.max_frame})", fatal=True)
                if len(buffer) >= 4 + size:
                    frame = bytes(buffer[4:4 + size])
                    del buffer[:4 + size]
                    return decode(frame, self.limits)
            self._fill(deadline)

    def _fill(self, deadline: float | None) -> None:
        while True:
            if deadline is None:
                if self._timeout is not None:
                    self._kernel_timeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no message before the deadline")
                held = self._timeout
                # (the kernel's timeout may end a wait early, never late: then look again)
                if held is None or held > left or held < left - TIMEOUT_SLACK:
                    self._kernel_timeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except BlockingIOError:  # the kernel's timeout: the deadline, or not yet
                continue
            except OSError:
                raise EOFError("the link broke") from None
            if not chunk:
                raise EOFError("the peer closed the link")
            self._buffer += chunk
            return

    def _kernel_timeout(self, seconds: float | None) -> None:
        micros = 0 if seconds is None else max(1, int(seconds * 1e6))  # (0: no timeout)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                             _TIMEVAL.pack(micros // 1_000_000, micros % 1_000_000))
        self._timeout = seconds

    def close(self) -> None:
        """Close the socket (the peer then reads the end of the stream)."""
        self.sock.close()
