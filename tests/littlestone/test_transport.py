"""server/transport.py against websockets' own asyncio client and server, on loopback."""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import serve as ws_serve
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidHandshake

from littlestone import transport
from littlestone.transport import Connection, connect, serve


@pytest.fixture
async def echo_server():
    seen: list[bytes | str] = []

    async def echo(connection: Connection) -> None:
        while True:
            message = await connection.recv()
            seen.append(message)
            await connection.send(message)

    server = await serve(echo, "127.0.0.1", 0, max_size=1 << 16)
    server.seen = seen
    server.url = f"ws://127.0.0.1:{server.port}"
    yield server
    await server.close()


async def test_messages_both_ways_with_websockets_own_client(echo_server):
    async with ws_connect(echo_server.url, compression=None, proxy=None) as ws:
        await ws.send(b"\x00binary")
        assert await ws.recv() == b"\x00binary"
        await ws.send("text é")
        assert await ws.recv() == "text é"
        await ws.send([b"frag", b"mented", b" message"])  # one message in three frames
        assert await ws.recv() == b"fragmented message"
        await ws.send(["text ", "in parts"])
        assert await ws.recv() == "text in parts"
        await ws.ping()  # answered by the protocol, never seen by the handler
    assert echo_server.seen == [b"\x00binary", "text é", b"fragmented message",
                                "text in parts"]


async def test_an_oversized_message_closes_with_1009_and_the_server_goes_on(echo_server):
    async with ws_connect(echo_server.url, compression=None, proxy=None) as ws:
        await ws.send(bytes(1 << 17))
        with pytest.raises(ConnectionClosed) as info:
            await ws.recv()
        assert info.value.rcvd is not None and info.value.rcvd.code == 1009
    async with connect(echo_server.url) as connection:
        await connection.send(b"still here")
        assert await connection.recv() == b"still here"


async def test_a_flooding_peer_is_paused_and_loses_nothing():
    release = asyncio.Event()
    received: list[bytes | str] = []
    paused: list[bool] = []

    async def slow(connection: Connection) -> None:
        await release.wait()
        paused.append(connection._reading_paused)
        received.extend([await connection.recv() for _ in range(1000)])
        await connection.send(b"done")

    server = await serve(slow, "127.0.0.1", 0)
    try:
        async with connect(f"ws://127.0.0.1:{server.port}") as connection:
            for i in range(1000):
                await connection.send(i.to_bytes(2, "big"))
            await asyncio.sleep(0.2)
            release.set()
            assert await connection.recv() == b"done"
    finally:
        await server.close()
    assert paused == [True]
    assert received == [i.to_bytes(2, "big") for i in range(1000)]


async def test_close_codes_and_a_clean_close():
    async def close_at_once(connection: Connection) -> None:
        await connection.close(1008, "go away")

    server = await serve(close_at_once, "127.0.0.1", 0)
    try:
        async with ws_connect(f"ws://127.0.0.1:{server.port}", proxy=None) as ws:
            with pytest.raises(ConnectionClosed) as info:
                await ws.recv()
            assert info.value.rcvd.code == 1008 and info.value.rcvd.reason == "go away"
    finally:
        await server.close()

    async def quiet(ws) -> None:
        await ws.wait_closed()

    async with ws_serve(quiet, "127.0.0.1", 0) as ws_server:
        port = next(iter(ws_server.sockets)).getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}") as connection:
            pass
        with pytest.raises(ConnectionClosedOK):
            await connection.recv()
        with pytest.raises(ConnectionClosedOK):
            await connection.send(b"late")


async def test_not_a_websocket_request_gets_http_400_and_the_server_goes_on(echo_server):
    reader, writer = await asyncio.open_connection("127.0.0.1", echo_server.port)
    writer.write(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), 5)
    assert answer.startswith(b"HTTP/1.1 426") or answer.startswith(b"HTTP/1.1 400")
    writer.close()
    async with connect(echo_server.url) as connection:
        await connection.send(b"ok")
        assert await connection.recv() == b"ok"


async def test_a_silent_socket_is_dropped_after_the_handshake_deadline(echo_server,
                                                                       monkeypatch):
    monkeypatch.setattr(transport, "OPEN_TIMEOUT_S", 0.2)
    reader, writer = await asyncio.open_connection("127.0.0.1", echo_server.port)
    assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
    writer.close()


async def test_the_client_reports_a_refused_handshake():
    async def not_websocket(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(not_websocket, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(InvalidHandshake):
            async with connect(f"ws://127.0.0.1:{port}"):
                pass
    finally:
        server.close()
        await server.wait_closed()
