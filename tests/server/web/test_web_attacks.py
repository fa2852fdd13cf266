"""Red team of the web room (server/web/): a stranger with curl, a browser or a raw socket
against the page and its API on the game server's own port. Each test tries an attack,
asserts that it fails cleanly (a 4xx, or a closed socket; never a 500, a traceback, a path
of the server's disk or another account's running game), and that an honest game and page
on the same server still work."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import msgpack
import pytest

from littlestone import transport
from littlestone.games.classes import FiniteClass
from littlestone.games.game import MISTAKE_BOUND
from littlestone.server.net.settings import ConnectionLimits
from littlestone.server.records.store import Store
from littlestone.server.web import play as web_play
from littlestone.transport import connect
from tests.server.web.test_web import _raw, get, play_one, running_server
from tests.support import ROOT


@contextlib.asynccontextmanager
async def waiting_game(server: Any) -> AsyncIterator[tuple[str, Any]]:
    """Bob's learner, played by hand, in a running game that waits for its first move."""
    async with connect(server.url) as ws:
        await ws.send(msgpack.packb({"type": "hello", "version": 1, "role": "learner",
                                     "agent": "hand", "token": server.token,
                                     "capabilities": []}))
        await ws.recv()
        await ws.send(msgpack.packb({"type": "challenge", "opponent": "random-target",
                                     "seed": 1, "rules": {"game": "mistake-bound",
                                                          "class": "thresholds:n=15",
                                                          "experts": None, "rounds": 5,
                                                          "horizon": 5}}))
        start = msgpack.unpackb(await ws.recv())
        assert start["type"] == "start"
        yield start["game_id"], ws


async def finish(ws: Any) -> None:
    while True:
        message = msgpack.unpackb(await ws.recv())
        if message["type"] == "end":
            return
        if message["type"] == "instance":
            await ws.send(msgpack.packb({"type": "predict", "t": message["t"], "p": 0}))


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def honest(server: Any) -> None:
    """An honest game plays to its end and the page lists it."""
    out = await play_one(server)
    assert out["status"] == "complete"
    status, _, body = await get(f"http://127.0.0.1:{server.port}/api/games/{out['game_id']}",
                                headers=auth(server.token))
    assert status == 200 and json.loads(body)["status"] == "complete"


# -- reading what a role must not see -------------------------------------------------


async def test_another_players_running_game_does_not_exist_on_any_route(tmp_path):
    """Break (fixed): a player's token saw another account's running game in the lists
    (``/api/games``, the index page and its refreshed table): its players, its class,
    its opponent, though ``/games/ID`` answered 404 and ``watch`` ``not_found``."""
    async with running_server(tmp_path) as server:
        carol = server.store.add_token("carol")
        viewer = server.store.add_token("viewer", "spectator")
        base = f"http://127.0.0.1:{server.port}"
        async with waiting_game(server) as (game_id, ws):
            listing = ("/api/games", "/api/games?status=running", "/api/games?learner=remote:*",
                       "/?part=games", "/", "/api/live", "/?limit=1000")
            for path in listing:
                for token, shown in ((carol, False), (viewer, True), (server.token, True)):
                    status, _, body = await get(base + path, headers=auth(token))
                    assert status == 200 and (game_id.encode() in body) == shown, (path, token)
            quoted = game_id.replace("-", "%2D").replace("T", "%54")
            for path in (f"/games/{game_id}", f"/games/{quoted}", f"//games//{game_id}/",
                         f"/api/games/{game_id}/records?start=1&count=500",
                         f"/api/games/{game_id}/curve", f"/api/games/{quoted}",
                         f"/games/{game_id}?part=games", f"/api/games/{game_id}/x"):
                status, _, body = await get(base + path, headers=auth(carol))
                assert status == 404 and game_id.encode() not in body, path
            await finish(ws)
        status, _, body = await get(f"{base}/api/games", headers=auth(carol))
        assert status == 200 and game_id.encode() in body  # ended: anyone reads it
        await honest(server)


async def test_pipelined_and_smuggled_requests_are_never_answered(tmp_path, caplog):
    """A second request behind the first (pipelined, in a body, chunked, behind a
    WebSocket upgrade) is never read: one answer, then the socket closes."""
    async with running_server(tmp_path) as server:
        carol = server.store.add_token("carol")
        async with waiting_game(server) as (game_id, ws):
            hidden = (f"GET /api/games/{game_id}/records HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: Bearer {server.token}\r\n\r\n").encode()
            head = (f"Host: x\r\nAuthorization: Bearer {carol}\r\n").encode()
            attempts = [
                b"GET /api/live HTTP/1.1\r\n" + head + b"\r\n" + hidden,
                b"GET /api/live HTTP/1.1\r\n" + head
                + f"Content-Length: {len(hidden)}\r\n\r\n".encode() + hidden,
                b"GET /api/live HTTP/1.1\r\n" + head + b"Transfer-Encoding: chunked\r\n\r\n"
                + f"{len(hidden):x}\r\n".encode() + hidden + b"\r\n0\r\n\r\n",
                b"GET /api/live HTTP/1.0\r\n" + head + b"Connection: keep-alive\r\n\r\n"
                + hidden,
                (f"GET /live/{game_id} HTTP/1.1\r\n").encode() + head
                + b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13"
                b"\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n" + hidden,
            ]
            for request in attempts:
                answer = await _raw(server.port, request)
                assert answer.count(b"HTTP/1.1 ") <= 1, answer[:300]
                assert b"\"records\"" not in answer and b" 500 " not in answer
                assert f"/live/{game_id}".encode() not in request or b" 404 " in answer
            await finish(ws)
        await honest(server)
        no_tracebacks(caplog)


async def test_no_answer_shows_a_token_a_hash_or_a_path_of_the_servers_disk(tmp_path):
    async with running_server(tmp_path) as server:
        out = await play_one(server)
        base = f"http://127.0.0.1:{server.port}"
        game_id = out["game_id"]
        secrets = [server.token, *(r["sha256"] for r in server.store._run(
            "SELECT sha256 FROM tokens"))]
        routes = ["/", "/?part=games", f"/games/{game_id}", f"/api/games/{game_id}",
                  "/api/games", f"/api/games/{game_id}/curve", "/api/tournaments",
                  f"/api/games/{game_id}/records?count=500", "/api/live",
                  "/api/tree?class=thresholds:n=15", "/login", "/nowhere", "/api/nowhere",
                  "/api/games?limit=x", f"/api/games/{game_id}/records?start=%FF"]
        for path in routes:
            status, headers, body = await get(base + path, headers=auth(server.token))
            assert status in (200, 400, 404), (path, status)
            for secret in [*secrets, str(tmp_path), ".lslog", "index.sqlite", "Traceback"]:
                assert secret.encode() not in body, (path, secret)
            assert "Set-Cookie" not in headers
        await honest(server)


# -- script, markup and cross-site requests -------------------------------------------


async def test_markup_in_the_query_or_the_path_is_never_echoed_raw(tmp_path):
    async with running_server(tmp_path) as server:
        out = await play_one(server)
        base = f"http://127.0.0.1:{server.port}"
        evil = "%3Cscript%3Ealert(1)%3C%2Fscript%3E%27%22%3E%3Csvg%20onload%3Dalert(2)%3E"
        for path in (f"/games/{evil}", f"/tournaments/{evil}", f"/tournaments/{evil}?part=board",
                     f"/api/games/{evil}", f"/?part={evil}", f"/games/{out['game_id']}?part="
                     f"{evil}", f"/api/tree?class={evil}", f"/api/games?limit={evil}",
                     f"/login?token={evil}", f"/static/{evil}", f"/api/games?learner={evil}"):
            status, headers, body = await get(base + path, headers=auth(server.token))
            assert status in (200, 400, 401, 403, 404), (path, status)
            if headers["Content-Type"].startswith("text/html"):
                assert b"<script>alert" not in body and b"<svg onload" not in body, path
            else:  # JSON (an error may quote the query) is never sniffed as HTML
                assert headers["Content-Type"] == "application/json", path
            assert "script-src 'self'" in headers["Content-Security-Policy"]
            assert headers["X-Content-Type-Options"] == "nosniff"
        await honest(server)


async def test_a_stranger_page_cannot_log_a_browser_in_or_out(tmp_path):
    """Break (fixed): ``GET /login?token=T`` from another site's link or image set the
    cookie (a stranger's page logged a student's browser in as the stranger, whose
    page it then showed), and ``/logout`` logged it out. Browsers say where a request
    comes from (``Sec-Fetch-Site``): a cross-site one is refused. Break (fixed, issue 25):
    a sibling subdomain's page (``same-site``), or a request that says nothing, still
    logged a browser in: only this origin's own form does now (``same-origin``, or its
    ``Origin`` or ``Referer`` when the browser is too old to say). No route changes
    anything by another method."""
    async with running_server(tmp_path) as server:
        base = f"http://127.0.0.1:{server.port}"
        cross = {"Sec-Fetch-Site": "cross-site"}
        for path in (f"/login?token={server.token}", "/logout"):
            status, headers, _ = await get(base + path, headers=cross)
            assert status == 403 and "Set-Cookie" not in headers, path
        status, headers, _ = await get(base + "/login", method="POST",
                                       headers={**cross, **auth(server.token)})
        assert status == 403 and "Set-Cookie" not in headers
        for said, logged_in in (("Sec-Fetch-Site: same-origin", True),
                                ("Referer: http://x/login", True), ("Origin: http://x", True),
                                ("Sec-Fetch-Site: same-site", False),
                                ("Sec-Fetch-Site: none", False), ("Origin: http://x:2", False),
                                ("Referer: http://sub.x/", False), (None, False)):
            answer = await _raw(server.port, (
                f"GET /login?token={server.token} HTTP/1.1\r\nHost: x\r\n"
                + (f"{said}\r\n" if said else "") + "\r\n").encode())
            head = answer.partition(b"\r\n\r\n")[0].decode()
            if not logged_in:
                assert head.startswith("HTTP/1.1 403 ") and "Set-Cookie" not in head, said
                continue
            assert head.startswith("HTTP/1.1 303 ") and "SameSite=Strict" in head, said
            assert "HttpOnly" in head and "Location: /" in head
            assert "Referrer-Policy: no-referrer" in head  # the token is in the URL
        # the form itself is shown to anyone (it holds nothing)
        assert (await get(base + "/login", headers={"Sec-Fetch-Site": "same-site"}))[0] == 200
        # a forged token with a header in it: unknown, no cookie, no header injected
        status, headers, _body = await get(
            f"{base}/login?token={server.token}%0d%0aSet-Cookie:%20x=1",
            headers={"Sec-Fetch-Site": "same-origin"})
        assert status == 401 and "Set-Cookie" not in headers
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            for path in ("/api/games", "/", "/logout", "/static/littlestone.js"):
                status, headers, _ = await get(base + path, method=method,
                                               headers=auth(server.token))
                assert status == 405 and headers["Allow"] == "GET, HEAD", (method, path)
            for path in ("/api/tokens", "/api/revoke"):  # no such route, by any method
                status, _, _ = await get(base + path, method=method,
                                         headers=auth(server.token))
                assert status == 404, (method, path)
        await honest(server)


# -- exhausting and crashing ------------------------------------------------------------

ODD = [
    b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
    b"TRACE / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: x\r\n\r\n",
    b"BREW /api/games HTTP/1.1\r\nHost: x\r\n\r\n",
    b"G\x00ET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /static/..%2f..%2fpyproject.toml HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /static/%252e%252e%252fapp.py HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /static/..\\app.py HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /static/%2e%2e/access.py HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /static/littlestone.js%00.png HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /static/__init__.py HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /static/%C0%AE%C0%AE%C0%AFapp.py HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/0.9\r\n\r\n",
    b"GET / HTTP/2.0\r\nHost: x\r\n\r\n",
    b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /?" + b"a=1&" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"y" * 200_000 + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"X-A: b\r\n" * 2000 + b"\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nCookie: " + b"littlestone_token=\"\\" * 3000 + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n\r\n",
    b"GET /live/x HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n",
    b"GET /live/x HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: nope\r\n\r\n",
    b"\r\n\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,  # a TLS hello
]


def no_tracebacks(caplog: Any) -> None:
    """Nothing logged an error (asyncio's 'Fatal error', a task's exception, a route's
    traceback)."""
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]


@pytest.mark.slow
async def test_odd_methods_paths_and_headers_fail_cleanly(tmp_path, caplog, monkeypatch):
    # (the TLS hello is no request: dropped when the opening handshake's time is up)
    monkeypatch.setattr(transport, "OPEN_TIMEOUT_S", 1.0)
    async with running_server(tmp_path, public=True) as server:
        source = ROOT
        for request in ODD:
            answer = await _raw(server.port, request)
            status = answer.split(b"\r\n", 1)[0]
            assert b" 500 " not in status, (request[:60], status)
            assert b" 200 " not in status or b"/static/" not in request, request[:60]
            for leak in (b"Traceback", b"[project]", b"import ", str(source).encode(),
                         str(tmp_path).encode(), b"root:"):
                assert leak not in answer, (request[:60], leak)
        # a request, then the client's half of the socket closed: an answer or a clean close
        for path in ("/api/games", "/static/littlestone.css", "/"):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            writer.write_eof()
            answer = await asyncio.wait_for(reader.read(), 10)
            assert answer == b"" or answer.startswith(b"HTTP/1.1 200 "), answer[:60]
            writer.close()
        await honest(server)
        no_tracebacks(caplog)


async def test_queries_on_every_route_never_make_a_500(tmp_path):
    async with running_server(tmp_path) as server:
        out = await play_one(server)
        base = f"http://127.0.0.1:{server.port}"
        g = out["game_id"]
        values = ["", "-1", "0", "x", "1e9", "%EF%BC%99", "9" * 5000, "10000000000000000000000",
                  "-99999999999999999999", "nan", "%00", "%FF%FE", "1_000", "%207%20"]
        for value in values:
            for path in (f"/?limit={value}", f"/api/games?limit={value}",
                         f"/games/{g}?start={value}",
                         f"/api/games/{g}/records?start={value}&count={value}",
                         f"/api/games/{g}/records?count={value}", f"/api/tree?class={value}",
                         f"/api/tree?class=thresholds:n={value}", f"/api/games/{value}",
                         f"/tournaments/{value}", f"/api/tournaments/{value}",
                         f"/api/games?class={value}*&status={value}", f"/live/{value}"):
                status, _, body = await get(base + path, headers=auth(server.token))
                assert status in (200, 400, 404, 414), (path, status, body[:200])
                assert b"internal" not in body and b"Traceback" not in body, path
        await honest(server)


async def test_slow_and_oversized_requests_are_dropped_and_games_go_on(tmp_path, monkeypatch):
    """Slowloris (a header a byte at a time), a socket that sends nothing, many sockets
    from one address: each is dropped at the opening deadline or the per-address cap,
    while an honest game and page go on."""
    monkeypatch.setattr(transport, "OPEN_TIMEOUT_S", 1.0)
    async with running_server(tmp_path, connections=ConnectionLimits(per_address=20)) as server:
        slow = []
        for _ in range(4):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n")
            slow.append((reader, writer))
        silent = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(10)]
        began = time.monotonic()
        for i in range(5):  # a byte now and then: the deadline is for the whole head
            for _, writer in slow:
                with contextlib.suppress(ConnectionError):
                    writer.write(b"X-%d: y\r\n" % i)
            await asyncio.sleep(0.2)
        for reader, _ in [*slow, *silent]:
            with contextlib.suppress(ConnectionError):
                await asyncio.wait_for(reader.read(), 10)  # (a 4xx, or nothing)
            assert reader.at_eof()
        assert time.monotonic() - began < 10
        for _, writer in [*slow, *silent]:
            writer.close()
        # over the per-address cap: dropped as they connect (the opening deadline is now
        # far: a socket closed within 2 s was dropped by the cap); the honest ones play
        monkeypatch.setattr(transport, "OPEN_TIMEOUT_S", 60.0)
        crowd = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(25)]

        async def dropped_at_once(reader: asyncio.StreamReader) -> bool:
            try:
                return await asyncio.wait_for(reader.read(), 2) == b""
            except ConnectionError:
                return True
            except TimeoutError:
                return False

        dropped = sum(await asyncio.gather(*(dropped_at_once(r) for r, _ in crowd)))
        assert 5 <= dropped < 25, dropped
        for _, writer in crowd:
            writer.close()
        await asyncio.sleep(0.2)
        await honest(server)


async def test_a_feed_that_never_reads_and_the_game_protocol_on_the_feed(tmp_path):
    """A browser feed that never reads its socket misses messages, never holds up the
    game; the game protocol spoken to the feed is never read; the page's JSON spoken to
    the agents' endpoint is a bad message."""
    async with running_server(tmp_path, public=True, anonymous=True) as server:
        async with waiting_game(server) as (game_id, ws):
            stuck = []
            for _ in range(3):
                _reader, writer = await asyncio.open_connection(
                    "127.0.0.1", server.port, limit=1)
                sock = writer.get_extra_info("socket")
                sock.setsockopt(__import__("socket").SOL_SOCKET,
                                __import__("socket").SO_RCVBUF, 1024)
                writer.write(f"GET /live/{game_id} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}"
                             "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Version: 13\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode())
                stuck.append(writer)
            async with connect(f"ws://127.0.0.1:{server.port}/live/{game_id}") as live:
                assert json.loads(await live.recv())["type"] == "watching"
                await live.send(msgpack.packb({"type": "hello", "version": 1,
                                               "role": "learner", "agent": "x",
                                               "capabilities": []}))
                await live.send(msgpack.packb({"type": "predict", "t": 1, "p": 1}))
                await finish(ws)  # bob's moves, not the feed's, decide the game
                seen = []
                while not seen or seen[-1]["type"] != "end":
                    seen.append(json.loads(await live.recv()))
                assert seen[-1]["status"] == "complete"
            for writer in stuck:
                writer.close()
        async with connect(server.url) as agent:  # JSON to the agents' endpoint
            await agent.send(json.dumps({"type": "hello"}).encode())
            answer = msgpack.unpackb(await agent.recv())
            assert answer["type"] == "error" and answer["code"] == "bad_message"
        # the agents' endpoint under a page's path: still the game protocol, no page
        async with connect(f"ws://127.0.0.1:{server.port}/api/games") as agent:
            await agent.send(b"\xc1")
            answer = msgpack.unpackb(await agent.recv())
            assert answer["type"] == "error"
        await honest(server)


@pytest.mark.parametrize("origin", ["null", "http://127.0.0.1.evil.example", "file://"])
async def test_a_feed_from_another_origin_is_refused(tmp_path, origin):
    async with running_server(tmp_path, public=True) as server, \
            waiting_game(server) as (game_id, ws):
        answer = await _raw(server.port, (
            f"GET /live/{game_id} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Origin: {origin}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "\r\n").encode())
        assert answer.startswith(b"HTTP/1.1 403 ")
        await finish(ws)


async def test_a_crowd_of_feeds_costs_one_encoding_per_message(tmp_path):
    """Break (fixed): each browser's feed decoded and re-encoded every message of its game
    on the game's own path: 800 feeds that never read doubled a game's time (7 s -> 15 s
    for 20000 rounds; now 9 s). A message is now turned into JSON once for all."""
    from littlestone.server.web import app

    async with running_server(tmp_path, public=True, anonymous=True) as server:
        async with waiting_game(server) as (game_id, ws):
            crowd = []
            for _ in range(20):
                _, writer = await asyncio.open_connection("127.0.0.1", server.port)
                writer.write(f"GET /live/{game_id} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket"
                             "\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode())
                crowd.append(writer)
            while sum(len(b.spectators) for b in server.running.values()) < 20:
                await asyncio.sleep(0.01)
            app._as_json.cache_clear()
            await finish(ws)
            info = app._as_json.cache_info()
            assert info.misses >= 1 and info.hits >= 19 * info.misses
            for writer in crowd:
                writer.close()
        await honest(server)


EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


# -- headers, origins and the class mode ------------------------------------------------


@pytest.mark.parametrize(("header", "method", "path"), [
    ("Origin", "POST", "/api/play/ticket"), ("Host", "POST", "/api/play/ticket"),
    ("Sec-Fetch-Site", "POST", "/api/play/ticket"), ("Sec-Fetch-Site", "GET", "/logout"),
    ("Authorization", "GET", "/api/games"), ("Authorization", "GET", "/class"),
    ("Upgrade", "GET", "/"), ("Upgrade", "GET", "/live/g1")])
async def test_a_header_given_twice_is_a_400_not_a_dropped_connection(tmp_path, header, method,
                                                                     path, caplog):
    """Break (fixed): ``Origin: a`` and ``Origin: b`` (or two ``Host``, ``Sec-Fetch-Site``,
    ``Authorization``, ``Upgrade``) made the route raise websockets' MultipleValuesError out
    of the transport: no answer, the connection dropped, and asyncio's "Fatal error"
    traceback in the operator's log, unthrottled, for every such request."""
    caplog.set_level(logging.ERROR)
    async with running_server(tmp_path, public=True, public_play=True) as server:
        host = f"127.0.0.1:{server.port}"
        values = {"Origin": (f"http://{host}", "http://evil.example"),
                  "Host": (host, "evil.example"), "Sec-Fetch-Site": ("same-origin", "cross-site"),
                  "Authorization": (f"Bearer {server.token}", "Bearer ls_other"),
                  "Upgrade": ("websocket", "h2c")}[header]
        head = f"{method} {path} HTTP/1.1\r\n"
        head += "".join(f"{header}: {v}\r\n" for v in values)
        head += "" if header == "Host" else f"Host: {host}\r\n"
        head += f"Origin: http://{host}\r\n" if header == "Host" else ""
        answer = await _raw(server.port, (head + "\r\n").encode())
        assert answer  # (it used to be nothing: the connection dropped)
        assert status_of(answer) == 400 and b"more than once" in answer, answer[:200]
        status, _, _ = await get(f"http://{host}/api/games",
                                 headers={"Authorization": f"Bearer {server.token}"})
        assert status == 200
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_sibling_origins_page_cannot_log_a_browser_in_or_out(tmp_path):
    """Break (fixed): ``/login`` and ``/logout`` refused another *site's* page only
    (``Sec-Fetch-Site: cross-site``); a page on another port of the same host
    (``same-site``) could log the browser in as its own account (``GET
    /login?token=ATTACKERS`` as a navigation): the person's games were then played,
    and watched, as the attacker's. The ticket route already refused siblings."""
    async with running_server(tmp_path) as server:
        base = f"http://127.0.0.1:{server.port}"
        sibling = {"Sec-Fetch-Site": "same-site", "Origin": f"http://127.0.0.1:{server.port + 1}"}
        for method, path, headers in (
                ("GET", f"/login?token={server.token}", {"Sec-Fetch-Site": "same-site"}),
                ("POST", "/login", {**sibling, "Authorization": f"Bearer {server.token}"}),
                ("GET", "/logout", {"Sec-Fetch-Site": "same-site"})):
            answer = await _raw(server.port, "".join(
                [f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n",
                 *(f"{k}: {v}\r\n" for k, v in headers.items()), "\r\n"]).encode())
            assert status_of(answer) == 403, (path, answer[:200])
            assert b"set-cookie" not in answer.lower()
        # this page's own form logs in; a token in a typed address (``none``) does not
        # (issue 25: only a same-origin request logs in), though the form is shown
        for fetch_site, logged_in in (("same-origin", True), ("none", False)):
            answer = await _raw(server.port, (
                f"GET /login?token={server.token} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}"
                f"\r\nSec-Fetch-Site: {fetch_site}\r\n\r\n").encode())
            assert (b"littlestone_token=" in answer) == logged_in, fetch_site
            assert status_of(answer) == (303 if logged_in else 403)
        answer = await _raw(server.port, (
            f"GET /login HTTP/1.1\r\nHost: 127.0.0.1:{server.port}"
            "\r\nSec-Fetch-Site: none\r\n\r\n").encode())
        assert status_of(answer) == 200
        status, _, _ = await get(base + "/login", method="POST",
                                 headers={"Authorization": f"Bearer {server.token}",
                                          "Origin": base, "Sec-Fetch-Site": "same-origin"})
        assert status == 204


def _games_on(store: Store, specs: list[str], learner: str = "remote:x") -> None:
    for spec in specs:
        game_id = store.start_game({"game": MISTAKE_BOUND, "class": spec, "learner": learner,
                                    "adversary": "random-target", "horizon": 1}, log=None)
        store.finish_game(game_id, {"status": "complete", "rounds": 1, "mistakes": 1,
                                    "expected_mistakes": 1.0, "regret": 0.0,
                                    "expected_regret": 0.0})


def test_the_class_mode_spends_a_small_budget_on_each_class_once(tmp_path, monkeypatch):
    """Break (fixed): the class mode worked out Ldim(H) of every game of the hour with the
    page's tree budget (5 * 10^6 instance checks, a truth table up to 2^26 cells), in an
    LRU of 256 classes. A peer plays cheap one-round games on 300 classes such as
    intervals:n=120..419; then one view of ``/class`` (any viewer's, and the page redraws
    it every 1.5 s) took over 5 minutes of CPU and 3.7 GB, and the next one as much."""
    specs = [f"intervals:n={n}" for n in range(120, 420)] + ["thresholds:n=1023",
                                                             "intervals:n=20"]
    store = Store(tmp_path)
    _games_on(store, specs)
    asked: list[tuple[str, int, int]] = []
    real = web_play.class_ldim

    def spy(hclass: FiniteClass, budget: int) -> tuple[int, str]:
        asked.append((hclass.spec, hclass.size * hclass.domain_size, budget))
        return real(hclass, budget)

    monkeypatch.setattr(web_play, "class_ldim", spy)
    web_play.ldim_of.cache_clear()
    boards = [web_play.class_mode(store, {}, frozenset()) for _ in range(2)]
    assert asked, "no class was worked out: the spy saw nothing"
    assert all(budget <= web_play.CLASS_LDIM_WORK for _, _, budget in asked)
    assert all(cells <= web_play.CLASS_LDIM_TABLE for _, cells, _ in asked)
    assert len({spec for spec, _, _ in asked}) == len(asked)  # each class once, both views
    ldims = {g["class"]: g["ldim"] for g in boards[1]["games"]}
    assert ldims["thresholds:n=1023"] == 10 and ldims["intervals:n=20"] == 7  # (exact)
    assert ldims["intervals:n=419"] is None  # (beyond the page's small budget: not scored)
    assert boards[1]["histograms"][0]["scored"] == 2 + sum(  # what has an Ldim is scored
        1 for spec in specs[:-2] if web_play.ldim_of(spec))


async def test_a_hostile_name_is_text_on_the_class_mode_and_the_play_page(tmp_path):
    async with running_server(tmp_path) as server:
        _games_on(server.store, ["thresholds:n=7"], learner=f"remote:{EVIL}")
        auth = {"Authorization": f"Bearer {server.token}"}
        for path in ("/class", "/class?part=board", "/play"):
            status, _, body = await get(f"http://127.0.0.1:{server.port}{path}", headers=auth)
            html = body.decode()
            assert status == 200 and "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)" in (await get(
            f"http://127.0.0.1:{server.port}/class?part=board", headers=auth))[2].decode()


# -- the page's reads of the index and the logs ---------------------------------------

def test_an_index_row_whose_log_is_a_fifo_never_blocks_the_web_page(tmp_path):
    """The web page reads a game's log where its index row says: a FIFO there used to
    block the page's worker thread forever (a device would never end)."""
    import threading

    from littlestone.server.web import data as web_data

    folder = tmp_path / "data"
    (folder / "games").mkdir(parents=True)
    fifo = folder / "games" / "g.lslog"
    os.mkfifo(fifo)
    store = Store(folder)
    game_id = store.start_game({"game": "mistake-bound", "class": "thresholds:n=7",
                                "learner": "halving", "adversary": "random-target"}, str(fifo))
    answer: dict[str, Any] = {}
    reader = threading.Thread(target=lambda: answer.update(curve=web_data.curve(store, game_id)),
                              daemon=True)
    reader.start()
    reader.join(20)
    if reader.is_alive():  # unblock it before failing
        with open(fifo, "wb"):
            pass
    store.close()
    assert not reader.is_alive() and answer["curve"]["rounds"] == 0
