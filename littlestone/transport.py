"""WebSocket connections on asyncio transports, driven through websockets' Sans-I/O layer.

The handshake, framing, masking, size limits, ping replies and the closing handshake are
websockets' own (:class:`websockets.server.ServerProtocol`,
:class:`websockets.client.ClientProtocol`); this module only moves bytes between them and
an :class:`asyncio.Protocol`. It exists for speed: a game sends one small frame per move,
and websockets' asyncio connection puts a lock, an async context manager and a message
assembler around every frame; without them an echo answers ~20-30% more round trips a
second (benchmarks/README.md). The API is the part of websockets' asyncio API the server and
client use: ``await recv()`` (bytes for a binary message, str for a text one),
``await send(data)``, ``await close(code, reason)``; a closed connection raises
:class:`websockets.exceptions.ConnectionClosed` as websockets does.

>>> import asyncio
>>> async def echo(connection: Connection) -> None:
...     await connection.send(await connection.recv())
>>> async def demo() -> bytes:
...     server = await serve(echo, "127.0.0.1", 0)
...     async with connect(f"ws://127.0.0.1:{server.port}") as connection:
...         await connection.send(b"ping")
...         answer = await connection.recv()
...     await server.close()
...     return answer
>>> asyncio.run(demo())
b'ping'
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidHandshake
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import CLOSED, CONNECTING, OPEN
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

__all__ = ["UNIX_SCHEME", "Connection", "Deadline", "HttpRoute", "Server", "Upgrade",
           "body_refusal", "client_tls", "connect", "serve", "serve_unix", "server_tls"]

log = logging.getLogger(__name__)

#: Seconds for the opening handshake, and for the closing one before the socket is dropped.
OPEN_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 10.0
#: Seconds a message may wait to be sent to a peer that does not read; then the socket is
#: dropped (a game never waits on a peer's receive window for longer).
SEND_TIMEOUT_S = 30.0
#: Seconds :meth:`Server.close` gives the closing handshakes and the handlers before it
#: drops the sockets and cancels the handlers.
SHUTDOWN_GRACE_S = 3.0
#: Messages received but not yet read: reading from the socket pauses above HIGH and
#: resumes below LOW, so a peer that floods cannot grow the queue (nor memory) unbounded.
#: Reading also pauses while the peer does not read what is sent to it (the answers to its
#: pings among them): a peer can grow neither buffer.
QUEUE_HIGH, QUEUE_LOW = 16, 4
#: The same in bytes: frames of up to max_frame each would otherwise let 16 of them hold
#: 16 MiB a connection.
QUEUE_BYTES_HIGH, QUEUE_BYTES_LOW = 1 << 20, 1 << 18

Handler = Callable[["Connection"], Awaitable[None]]


# -- plain HTTP on the same port (the web room's hook: littlestone.server.web) --------


CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution


class Deadline:
    """One timer for a stream of deadlines: ``set(when)`` costs no timer of its own when
    the move comes in time (the timer, armed once, re-arms itself for the current
    deadline when it fires early); ``expired`` is called once a deadline set has passed.

    >>> import asyncio
    >>> async def demo() -> list[str]:
    ...     seen: list[str] = []
    ...     loop = asyncio.get_running_loop()
    ...     deadline = Deadline(loop, lambda: seen.append("expired"))
    ...     deadline.set(loop.time() + 0.05)
    ...     deadline.set(loop.time() + 0.01)   # moved earlier
    ...     await asyncio.sleep(0.1)
    ...     deadline.set(loop.time() + 0.01)
    ...     deadline.set(None)                 # met in time
    ...     await asyncio.sleep(0.05)
    ...     return seen
    >>> asyncio.run(demo())
    ['expired']
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, expired: Callable[[], None]) -> None:
        self.loop, self.expired = loop, expired
        self.when: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def set(self, when: float | None) -> None:
        """Expire at loop time ``when`` (None: no deadline)."""
        self.when = when
        timer = self._timer
        if when is None:
            return
        if timer is None or timer.when() > when:
            if timer is not None:
                timer.cancel()
            self._timer = self.loop.call_at(when, self._fire)

    def cancel(self) -> None:
        """No deadline, and no timer left behind."""
        self.when = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        when = self.when
        if when is None:
            return
        if self.loop.time() + CLOCK_RESOLUTION < when:  # the loop fires timers this early
            self._timer = self.loop.call_at(when, self._fire)
        else:
            self.when = None
            self.expired()


@dataclass(frozen=True)
class Upgrade:
    """An :data:`HttpRoute`'s answer: go on with the WebSocket handshake, then run
    ``handler`` on the connection instead of the server's own."""

    handler: Handler


#: What a server does with an opening request before the WebSocket handshake: answer it
#: with a plain HTTP response (or an awaitable of one: the socket is closed after it),
#: accept it for another handler (:class:`Upgrade`), or ``None``: the usual handshake.
HttpRoute = Callable[[Request], "Response | Awaitable[Response] | Upgrade | None"]


def body_refusal(failure: BaseException) -> bytes | None:
    """The answer to a request the handshake parser refused for its body (no route
    here takes one): ``413`` for a ``Content-Length`` above 0, ``400`` for a
    ``Transfer-Encoding``; None for any other failure (dropped, as before). Without it
    such a request got no status at all.

    >>> from websockets.exceptions import InvalidMessage
    >>> failure = InvalidMessage("did not receive a valid HTTP request")
    >>> failure.__cause__ = ValueError("unsupported request body")
    >>> body_refusal(failure).split(b"\\r\\n")[0]
    b'HTTP/1.1 413 Content Too Large'
    """
    cause = failure.__cause__
    if isinstance(cause, ValueError) and "request body" in str(cause):
        status, why = "413 Content Too Large", "this server takes no request body"
    elif isinstance(cause, NotImplementedError) and "transfer coding" in str(cause):
        status, why = "400 Bad Request", "this server takes no request body (Transfer-Encoding)"
    else:
        return None
    body = f"{status}: {why}\n".encode()
    return (f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


class Connection(asyncio.Protocol):
    """One WebSocket connection (either side). ``on_open`` is called once the opening
    handshake has succeeded (the server starts its handler there)."""

    def __init__(self, protocol: ServerProtocol | ClientProtocol,
                 on_open: Callable[[Connection], None] | None = None,
                 server: Server | None = None, on_request: HttpRoute | None = None) -> None:
        self.protocol = protocol
        self.on_open = on_open
        self.server = server
        #: The peer's IP address (``unix`` on a Unix socket), once connected.
        self.address = ""
        self.on_request = on_request
        #: The opening request (a server's connection), and the handler an
        #: :class:`Upgrade` chose for it.
        self.request: Request | None = None
        self._tail = b""  # the last bytes of a request's head not yet ended
        self.handler: Handler | None = None
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.messages: collections.deque[bytes | str] = collections.deque()
        self._queued = 0  # the length of the messages queued, in bytes (or characters)
        self.opened: asyncio.Future[None] = self.loop.create_future()
        self.closed: asyncio.Future[None] = self.loop.create_future()
        self._waiter: asyncio.Future[None] | None = None
        self._fragments: list[bytes] = []
        self._fragments_text = False
        self._reading_paused = False
        self._writing_paused = False
        self._drained: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = Deadline(self.loop, self._deadline_passed)
        self._hook: Callable[[bytes | str], bool] | None = None  # see answer()
        self._answering: asyncio.Future[None] | None = None
        self._refused_body = False  # a request with a body was answered 413 or 400

    # -- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (a stream transport: asyncio's or uvloop's, which does not subclass asyncio's)
        self.transport = stream = cast(asyncio.Transport, transport)
        peer = stream.get_extra_info("peername")
        self.address = str(peer[0]) if isinstance(peer, tuple) and peer else "unix"
        if self.server is not None and not self.server.admit(self):
            stream.abort()  # over a cap before any handshake: dropped, costs nothing
            return
        if isinstance(self.protocol, ClientProtocol):
            self.protocol.send_request(self.protocol.connect())
            self._write()
        self._timer = self.loop.call_later(OPEN_TIMEOUT_S, self._expire)

    def data_received(self, data: bytes) -> None:
        protocol = self.protocol
        early = b""  # bytes behind a request's head: frames after an upgrade, else dropped
        if isinstance(protocol, ServerProtocol) and self.request is None:
            seen = self._tail + data  # (websockets reads them as frames: a request pipelined
            end = seen.find(b"\r\n\r\n")  # or in a body broke the answer to the first)
            if end >= 0:
                cut = end + 4 - len(self._tail)
                data, early = data[:cut], data[cut:]
            self._tail = seen[-3:]
        protocol.receive_data(data)
        events = protocol.events_received()
        if (isinstance(protocol, ServerProtocol) and self.request is None and not events
                and protocol.handshake_exc is not None and self.transport is not None
                and not self._refused_body):
            refusal = body_refusal(protocol.handshake_exc)
            if refusal is not None:  # (a status, before the EOF the protocol queued)
                self._refused_body = True
                self.transport.write(refusal)
        self._write()
        for event in events:
            if type(event) is Frame:
                self._frame(event)
            elif isinstance(event, Request):
                assert isinstance(protocol, ServerProtocol)
                self.request = event
                answer = self.on_request(event) if self.on_request is not None else None
                if answer is not None and not isinstance(answer, Upgrade):
                    self._respond(answer)
                    continue
                self.handler = answer.handler if answer is not None else None
                protocol.send_response(protocol.accept(event))
                self._write()
                self._opening()
            elif isinstance(event, Response):
                self._opening()
        if protocol.state is not OPEN and protocol.close_expected() and self._timer is None:
            self._timer = self.loop.call_later(CLOSE_TIMEOUT_S, self._expire)
        if early and protocol.state is OPEN:
            self.data_received(early)

    def eof_received(self) -> bool:
        self.protocol.receive_eof()
        self.protocol.events_received()
        self._write()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if self.server is not None:
            self.server.lost(self)
        self.protocol.receive_eof()  # idempotent: the state is CLOSED from here on
        if self._timer is not None:
            self._timer.cancel()
        if not self.opened.done():
            failure = self.protocol.handshake_exc or InvalidHandshake(
                "the connection closed during the opening handshake")
            self.opened.set_exception(failure)
            self.opened.exception()  # retrieved: nobody may be waiting
        self.closed.set_result(None)
        self._deadline.cancel()
        self._wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._reading()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def _reading(self) -> None:
        """Read from the socket only while the queue has room and the peer reads what it
        is sent (a peer that pings and never reads the pongs is no longer read)."""
        paused = self._reading_paused
        pause = (self._writing_paused
                 or len(self.messages) >= (QUEUE_LOW if paused else QUEUE_HIGH)
                 or self._queued >= (QUEUE_BYTES_LOW if paused else QUEUE_BYTES_HIGH))
        if pause != self._reading_paused and self.transport is not None:
            self._reading_paused = pause
            if pause:
                self.transport.pause_reading()
            else:
                self.transport.resume_reading()

    # -- the application's side ----------------------------------------------------

    async def recv(self, deadline: float | None = None) -> bytes | str:
        """The next message: bytes (binary) or str (text); ConnectionClosed once the
        connection is closed and every message received before has been read;
        TimeoutError if none has come by ``deadline`` (in the loop's time)."""
        messages = self.messages
        while not messages:
            if self.closed.done():
                raise self.protocol.close_exc
            self._deadline.set(deadline)
            self._waiter = self.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
                self._deadline.set(None)
        message = messages.popleft()
        self._queued -= len(message)
        if self._reading_paused:
            self._reading()
        return message

    async def answer(self, hook: Callable[[bytes | str], bool]) -> None:
        """Hand each message, as it arrives, to ``hook`` inside the connection's callback
        (a game's hot loop: no task wakes per message) until the hook declines one (it
        returns False: that message is queued for :meth:`recv`), :meth:`stop_answering`
        is called or the connection closes. Returns at once if a message already waits
        to be read."""
        if self.messages or self.closed.done():
            return
        self._answering = self.loop.create_future()
        self._hook = hook
        try:
            await asyncio.wait((self._answering, self.closed),
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._hook = self._answering = None

    def stop_answering(self) -> None:
        """End :meth:`answer` (the message in hand, if any, counts as taken)."""
        self._hook = None
        if self._answering is not None and not self._answering.done():
            self._answering.set_result(None)

    def _deadline_passed(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(TimeoutError())

    def send_nowait(self, data: bytes) -> bool:
        """Send a binary message now if the connection is open and the peer keeps up
        (True); otherwise send nothing and return False: then ``await send(data)``."""
        if self.protocol.state is not OPEN or self._writing_paused:
            return False
        self.protocol.send_binary(data)
        self._write()
        return True

    async def send(self, data: bytes | str) -> None:
        """Send one message: binary for bytes, text for str."""
        protocol = self.protocol
        if protocol.state is not OPEN:
            await self.wait_closed()
            raise protocol.close_exc
        if type(data) is bytes:
            protocol.send_binary(data)
        else:
            assert isinstance(data, str)
            protocol.send_text(data.encode())
        self._write()
        if self._writing_paused:  # the peer does not read: wait, as transport.drain does
            self._drained = self.loop.create_future()
            try:
                await asyncio.wait_for(asyncio.shield(self._drained), SEND_TIMEOUT_S)
            except TimeoutError:
                assert self.transport is not None
                self.transport.abort()  # a peer that reads nothing for so long is gone
                await self.wait_closed()
            if self.closed.done():
                raise protocol.close_exc

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """The closing handshake (the socket is dropped if the peer does not answer)."""
        if self.protocol.state is OPEN:
            self.protocol.send_close(code, reason)
            self._write()
            if self._timer is None:
                self._timer = self.loop.call_later(CLOSE_TIMEOUT_S, self._expire)
        elif not self.opened.done() and self.transport is not None:
            self.transport.abort()
        await self.wait_closed()

    async def wait_closed(self) -> None:
        """Until the TCP connection is closed."""
        await asyncio.shield(self.closed)

    # -- inside --------------------------------------------------------------------

    def _write(self) -> None:
        transport = self.transport
        assert transport is not None
        for data in self.protocol.data_to_send():
            if data:
                transport.write(data)
            elif transport.can_write_eof():
                transport.write_eof()
            else:  # TLS: no half-close
                transport.close()

    def _opening(self) -> None:
        # open, or already closing: a peer may answer the handshake, send a message and
        # close in one segment (the web room's feed of a game that has ended does)
        if self.protocol.handshake_exc is None and self.protocol.state is not CONNECTING:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.opened.set_result(None)
            if self.on_open is not None:
                self.on_open(self)
        # a refused handshake: the protocol has sent its answer and EOF; connection_lost
        # then fails ``opened`` with the protocol's handshake_exc

    def _respond(self, answer: Response | Awaitable[Response]) -> None:
        """Send a plain HTTP response (then EOF), at once or when it is ready."""
        assert isinstance(self.protocol, ServerProtocol)
        if isinstance(answer, Response):
            self.protocol.send_response(answer)
            self._write()
            return

        async def later(answer: Awaitable[Response]) -> None:
            assert isinstance(self.protocol, ServerProtocol)
            try:
                response = await answer
            except Exception:
                log.exception("an HTTP request failed")
                response = self.protocol.reject(500, "internal error\n")
            if self.transport is not None and not self.transport.is_closing():
                self.protocol.send_response(response)
                self._write()

        task = self.loop.create_task(later(answer))
        _RESPONDING.add(task)
        task.add_done_callback(_RESPONDING.discard)

    def _frame(self, frame: Frame) -> None:
        opcode = frame.opcode
        if opcode is Opcode.BINARY or opcode is Opcode.TEXT:
            if frame.fin:
                data = bytes(frame.data)
                self._deliver(data if opcode is Opcode.BINARY else _text(data))
                return
            self._fragments, self._fragments_text = [bytes(frame.data)], opcode is Opcode.TEXT
        elif opcode is Opcode.CONT:
            self._fragments.append(bytes(frame.data))
            if frame.fin:
                data, self._fragments = b"".join(self._fragments), []
                self._deliver(_text(data) if self._fragments_text else data)
        # ping, pong and close frames: the protocol has answered them already

    def _deliver(self, message: bytes | str) -> None:
        hook = self._hook
        if hook is not None:  # answer(): no message waits while a hook is set
            if hook(message):
                return
            self.stop_answering()
        self.messages.append(message)
        self._queued += len(message)
        if not self._reading_paused and (len(self.messages) >= QUEUE_HIGH
                                         or self._queued >= QUEUE_BYTES_HIGH):
            self._reading()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _expire(self) -> None:
        """A handshake (opening or closing) took too long: drop the socket."""
        self._timer = None
        if self.transport is not None and self.protocol.state is not CLOSED:
            self.transport.abort()


#: HTTP responses being prepared (a reference keeps each task alive until it is done).
_RESPONDING: set[asyncio.Task[None]] = set()


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


class Server:
    """A listening socket whose accepted connections run ``handler`` (:func:`serve`).

    ``max_sockets`` and ``per_address`` cap the sockets open at once, in all and from one
    IP address, handshakes included: one more is dropped as it connects, before its
    handshake, so that no peer can hold the process's file descriptors."""

    def __init__(self, handler: Handler, max_size: int | None, max_sockets: int | None = None,
                 per_address: int | None = None) -> None:
        self.handler, self.max_size = handler, max_size
        self.max_sockets, self.per_address = max_sockets, per_address
        #: Connections whose handshake succeeded (their handlers run).
        self.connections: set[Connection] = set()
        #: Sockets open, by address (handshakes included).
        self.sockets_of: collections.Counter[str] = collections.Counter()
        self.tasks: set[asyncio.Task[None]] = set()
        self.server: asyncio.Server | None = None
        #: Plain HTTP on this port (:data:`HttpRoute`), read at each request.
        self.http: HttpRoute | None = None
        #: Told of each socket dropped over a cap, and which: max_sockets, per_address.
        self.on_refused: Callable[[Connection, str], None] | None = None

    def connection(self) -> Connection:
        return Connection(ServerProtocol(max_size=self.max_size), on_open=self._open,
                          server=self, on_request=self._route)

    def admit(self, connection: Connection) -> bool:
        """A socket has connected: counted, or refused (False) over a cap."""
        address = connection.address
        cap = ("max_sockets" if self.max_sockets is not None
               and self.sockets_of.total() >= self.max_sockets else
               "per_address" if self.per_address is not None and address != "unix"
               and self.sockets_of[address] >= self.per_address else None)
        if cap is not None:
            connection.server = None  # never counted: nothing to take back
            if self.on_refused is not None:
                self.on_refused(connection, cap)
            return False
        self.sockets_of[address] += 1
        return True

    def lost(self, connection: Connection) -> None:
        """A counted socket has closed."""
        self.sockets_of[connection.address] -= 1
        if self.sockets_of[connection.address] <= 0:
            del self.sockets_of[connection.address]

    def _route(self, request: Request) -> Response | Awaitable[Response] | Upgrade | None:
        return self.http(request) if self.http is not None else None

    def _open(self, connection: Connection) -> None:
        self.connections.add(connection)
        task = asyncio.get_running_loop().create_task(self._run(connection))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, connection: Connection) -> None:
        try:
            await (connection.handler or self.handler)(connection)
        except Exception:
            log.exception("connection handler failed")
            with contextlib.suppress(Exception):
                await connection.close(1011, "internal error")
        finally:
            with contextlib.suppress(Exception):
                await connection.close()
            self.connections.discard(connection)

    @property
    def sockets(self) -> tuple[Any, ...]:
        assert self.server is not None
        return tuple(self.server.sockets)

    @property
    def port(self) -> int:
        """The TCP port of the first socket (0 when listening on a Unix socket only)."""
        name = self.sockets[0].getsockname()
        return int(name[1]) if isinstance(name, tuple) else 0

    def stop_accepting(self) -> None:
        """Stop listening; connections already open go on."""
        if self.server is not None:
            self.server.close()

    async def close(self, code: int = 1001, reason: str = "server shutting down",
                    grace: float = SHUTDOWN_GRACE_S) -> None:
        """Stop listening, close every connection, wait for their handlers: within about
        ``grace`` seconds, after which the sockets left are dropped and the handlers left
        cancelled."""
        self.stop_accepting()
        connections = list(self.connections)
        closing: asyncio.Future[Any] = asyncio.gather(
            *(c.close(code, reason) for c in connections), return_exceptions=True)
        waiting: set[asyncio.Future[Any]] = {closing, *self.tasks}
        await asyncio.wait(waiting, timeout=grace)
        for connection in connections:
            if connection.transport is not None and not connection.closed.done():
                connection.transport.abort()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(closing, *self.tasks, return_exceptions=True)
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.server.wait_closed(), grace)


async def serve(handler: Handler, host: str, port: int, max_size: int | None = 1 << 20,
                tls: ssl.SSLContext | None = None, max_sockets: int | None = None,
                per_address: int | None = None, backlog: int = 100) -> Server:
    """Listen on host:port (TLS with ``tls``: wss://); each WebSocket connection runs
    ``handler`` in its own task and is closed when the handler returns (1011 if it
    raised). ``max_sockets``, ``per_address``: see :class:`Server`. ``backlog``: the
    connections the kernel queues before they are accepted (a burst of that many
    connections at once is answered, not dropped; the kernel caps it at
    ``net.core.somaxconn``)."""
    server = Server(handler, max_size, max_sockets, per_address)
    server.server = await asyncio.get_running_loop().create_server(
        server.connection, host, port, ssl=tls, ssl_handshake_timeout=OPEN_TIMEOUT_S if tls
        else None, backlog=backlog)
    return server


async def serve_unix(handler: Handler, path: str | Path, max_size: int | None = 1 << 20,
                     max_sockets: int | None = None, backlog: int = 100) -> Server:
    """Listen on the Unix socket ``path`` (what a tournament's sandboxes reach: they have
    no network at all); its URL is ``unix:PATH``."""
    server = Server(handler, max_size, max_sockets)
    server.server = await asyncio.get_running_loop().create_unix_server(
        server.connection, str(path), backlog=backlog)
    return server



#: A client's URL for a Unix socket: ``unix:`` followed by the socket's path.
UNIX_SCHEME = "unix:"


@contextlib.asynccontextmanager
async def connect(url: str, max_size: int | None = None, tls: ssl.SSLContext | None = None
                  ) -> AsyncIterator[Connection]:
    """A client connection to ``url`` (ws://, wss:// checked against the system's
    certificate authorities or ``tls``, or ``unix:PATH``), closed on leaving the block.
    Raises websockets' InvalidURI or InvalidHandshake, OSError (ssl.SSLError among them),
    or TimeoutError."""
    loop = asyncio.get_running_loop()
    if url.startswith(UNIX_SCHEME):
        uri = parse_uri("ws://localhost/")
        opening: Any = loop.create_unix_connection(
            lambda: Connection(ClientProtocol(uri, max_size=max_size)),
            url.removeprefix(UNIX_SCHEME))
    else:
        uri = parse_uri(url)
        context = (tls or ssl.create_default_context()) if uri.secure else None
        opening = loop.create_connection(
            lambda: Connection(ClientProtocol(uri, max_size=max_size)), uri.host, uri.port,
            ssl=context)
    _, connection = await asyncio.wait_for(opening, OPEN_TIMEOUT_S)
    await connection.opened
    try:
        yield connection
    finally:
        await connection.close()



def server_tls(certfile: str | Path, keyfile: str | Path | None = None) -> ssl.SSLContext:
    """A TLS context for :func:`serve` from a PEM certificate chain and its key."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certfile, keyfile)
    return context


def client_tls(cafile: str | Path | None = None) -> ssl.SSLContext:
    """A TLS context for :func:`connect` that trusts the system's authorities, or the
    one in ``cafile`` (a server with a self-signed certificate)."""
    return ssl.create_default_context(cafile=str(cafile) if cafile is not None else None)
