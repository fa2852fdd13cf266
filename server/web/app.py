"""Routing: the page, its JSON API, static files, logging in, and the live feed.

:func:`attach` makes a :class:`~littlestone.server.net.server.GameServer` answer plain
HTTP on its own port (``littlestone serve``); :func:`serve_web` serves the page alone,
in a thread (``littlestone tournament --serve``). Routes (all read-only):

- ``/``, ``/games/ID``, ``/tournaments/NAME``: the pages (``?part=`` a fragment);
- ``/api/games``, ``/api/games/ID``, ``/api/games/ID/curve``,
  ``/api/games/ID/records?start=&count=``, ``/api/tournaments``,
  ``/api/tournaments/NAME``, ``/api/tree?class=SPEC``: JSON;
- ``/live/ID`` (a WebSocket): a running game's spectator feed (PROTOCOL.md 5.4) as JSON
  messages; the browser's messages are never read: it cannot send a move;
- ``/static/NAME``, ``/login``, ``/logout``.

Database work and log reading run in worker threads, each with its own connection to
the index: a page never holds up a game.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgpack
from websockets.http11 import Request, Response

from littlestone.server.net.server import GameServer
from littlestone.server.records.store import Store
from littlestone.server.web import data, pages
from littlestone.server.web.access import (
    COOKIE,
    Access,
    hidden_games,
    store_tokens,
    token_of,
    viewer,
)
from littlestone.server.web.responses import (
    error,
    html_response,
    json_response,
    redirect,
    respond,
    split_target,
    static_file,
)
from littlestone.transport import Connection, Handler, Upgrade, serve

__all__ = ["WebApp", "attach", "serve_web"]

log = logging.getLogger(__name__)

#: Worker threads for the page's database and log work.
WORKERS = 2
#: Seconds between a live feed's checks that its token was not revoked.
REVOKE_CHECK_S = 5.0


@functools.lru_cache(maxsize=2)
def _as_json(frame: bytes) -> bytes:
    """A spectator message as JSON, once for all the browsers that watch its game (each
    re-encoding it made a crowd of feeds slow the game down: 800 doubled its time)."""
    return json.dumps(msgpack.unpackb(frame, raw=False), default=str).encode()


class _JsonSpectator:
    """A browser watching a game: each spectator message, re-encoded as JSON (UTF-8,
    in a binary frame), if its connection takes it at once (else it misses it)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def send_nowait(self, frame: bytes) -> bool:
        try:  # (called from the game's log writer: a browser can never break a game)
            return self.connection.send_nowait(_as_json(frame))
        except Exception:
            log.exception("the live feed could not send a message")
            return False


class WebApp:
    """The web room's routes over one data folder (and a server's running games)."""

    def __init__(self, data_folder: Path, public: bool, server: GameServer | None = None
                 ) -> None:
        self.data = Path(data_folder)
        self.server = server
        #: The index as the event loop reads it (tokens only).
        self.store = server.store if server is not None else Store(self.data)
        self.access = Access(public=public, tokens=store_tokens(self.store))
        self._local = threading.local()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            WORKERS, thread_name_prefix="littlestone-web")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- routing (on the event loop) -------------------------------------------------

    def route(self, request: Request) -> Response | Awaitable[Response] | Upgrade | None:
        """A request's answer (the transport's ``http`` hook); ``None`` for an agent's
        WebSocket handshake. A ``HEAD`` is answered as its ``GET`` without the body
        (RFC 9110 9.3.2: the same headers, Content-Length included)."""
        answer = self._route(request)
        if request.method != "HEAD" or answer is None or isinstance(answer, Upgrade):
            return answer
        if isinstance(answer, Response):
            return dataclasses.replace(answer, body=b"")

        async def headless(answer: Awaitable[Response]) -> Response:
            return dataclasses.replace(await answer, body=b"")

        return headless(answer)

    def _route(self, request: Request) -> Response | Awaitable[Response] | Upgrade | None:
        path, query = split_target(request.path)
        if request.headers.get("Upgrade", "").lower() == "websocket":
            if not path.startswith("/live/"):
                return None  # the agents' endpoint, as it always was
            return self._upgrade(request, path.removeprefix("/live/"))
        if path.startswith("/static/"):
            return static_file(path.removeprefix("/static/")) or error(404, "no such file",
                                                                       False)
        if path in ("/login", "/logout") and \
                request.headers.get("Sec-Fetch-Site", "").lower() == "cross-site":
            return error(403, "another site's page may not log you in or out", False)
        if path == "/login":
            return self._login(request, query)
        if path == "/logout":
            return redirect("/login", [("Set-Cookie", f"{COOKIE}=; Max-Age=0; Path=/; "
                                        "HttpOnly; SameSite=Strict")])
        api = path.startswith("/api/")
        if request.method not in ("GET", "HEAD"):
            return error(405, "read-only: GET only", api)
        who = viewer(request, self.access)
        if who is None:
            if api:
                return error(401, "a token is needed (Authorization: Bearer TOKEN)", True)
            return html_response(pages.login_page(), 401)
        running = self.server.running if self.server is not None else {}
        hidden = hidden_games(request, self.access, running)
        if any(game_id in hidden for game_id in path.split("/")):
            return error(404, "not found", api)  # a player follows its own games only
        live = {game_id: value for game_id, value in data.live_snapshot(running).items()
                if game_id not in hidden}
        return self._in_thread(lambda store: self._dispatch(path, query, who, live, store,
                                                            frozenset(hidden)))

    def _in_thread(self, work: Callable[[Store], Response]) -> Awaitable[Response]:
        def call() -> Response:
            store = getattr(self._local, "store", None)
            if store is None:
                store = self._local.store = Store(self.data)
            return work(store)

        return asyncio.get_running_loop().run_in_executor(self._pool, call)

    def _login(self, request: Request, query: dict[str, str]) -> Response:
        """``POST /login`` with the token as a bearer token (the form's script), or
        ``GET /login?token=`` (the form without JavaScript): a cookie for the page."""
        token = token_of(request) if request.method == "POST" else query.get("token")
        if token is None:
            return html_response(pages.login_page())
        if self.access.tokens(token) is None:
            if request.method == "POST":
                return error(401, "unknown token", True)
            return html_response(pages.login_page("unknown token"), 401)
        secure = "; Secure" if self.server is not None and self.server.settings.tls else ""
        cookie = [("Set-Cookie", f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
                   f"{secure}")]
        if request.method == "POST":
            return respond(204, b"", "text/plain", cookie)
        return redirect("/", cookie)

    def _dispatch(self, path: str, query: dict[str, str], who: str, live: data.Live,
                  store: Store, hidden: frozenset[str] = frozenset()) -> Response:
        """A page or an API answer (in a worker thread); ``hidden`` running games are
        left out of the lists, as if they did not exist (PROTOCOL.md 3.1)."""
        parts = [p for p in path.split("/") if p]
        api = bool(parts) and parts[0] == "api"
        if api:
            parts = parts[1:]
        found: Any = None
        try:
            found = self._answer(parts, query, who, live, store, api, hidden)
        except ValueError as exc:  # a bad number in the query
            return error(400, f"bad request: {exc}", api)
        if found is None:
            return error(404, "not found", api)
        if isinstance(found, Response):
            return found
        return json_response(found) if api else html_response(found)

    def _answer(self, parts: list[str], query: dict[str, str], who: str, live: data.Live,
                store: Store, api: bool, hidden: frozenset[str]) -> Any:
        if not parts:
            if api:
                return None
            games = data.games(store, live, int(query.get("limit", 50)), hidden)
            if query.get("part") == "games":
                return pages.games_table(games)
            return pages.index_page(games, data.tournaments(store), who)
        head, rest = parts[0], parts[1:]
        if head == "games" and not rest and api:
            filters = {k: query.get(k) for k in ("learner", "adversary", "class", "status")}
            return {"games": data.games(store, live, int(query.get("limit", 50)), hidden,
                                        **filters)}
        if head == "games" and rest:
            game = data.game(store, live, rest[0])
            if game is None:
                return None
            if not api and len(rest) == 1:
                start = int(query.get("start", 1))
                return pages.game_page(game, data.curve(store, rest[0]),
                                       data.records(store, rest[0], start, 20), who)
            if api and len(rest) == 1:
                return game
            if api and rest[1:] == ["curve"]:
                return data.curve(store, rest[0])
            if api and rest[1:] == ["records"]:
                return data.records(store, rest[0], int(query.get("start", 1)),
                                    int(query.get("count", 20)))
            return None
        if head == "tournaments" and not rest and api:
            return {"tournaments": data.tournaments(store)}
        if head == "tournaments" and len(rest) == 1:
            board = data.tournament(store, rest[0])
            if api or (board is None and query.get("part") == "board"):
                return board
            if board is None:  # not started yet (tournament --serve): wait for it
                return pages.tournament_page(rest[0], None, who)
            if query.get("part") == "board":
                return pages.leaderboard(board)
            return pages.tournament_page(rest[0], board, who)
        if head == "tree" and api and query.get("class"):
            spec = query["class"]  # only a class played here: a viewer builds nothing else
            if spec.endswith("*") or not store.games(limit=1, **{"class": spec}):
                return None
            return data.tree(spec)
        if head == "live" and api:
            return {"running": [{"game_id": g, "round": t, **totals}
                                for g, (t, totals) in live.items()]}
        return None

    # -- the live feed ----------------------------------------------------------------

    def _upgrade(self, request: Request, game_id: str) -> Response | Upgrade:
        if viewer(request, self.access) is None:
            return error(401, "a token is needed", True)
        running = self.server.running if self.server is not None else {}
        if game_id in hidden_games(request, self.access, running):
            return error(404, "not found", True)  # a player watches its own games only
        origin = request.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("Host"):
            return error(403, "another site's page may not watch here", True)
        return Upgrade(self._watch(game_id, token_of(request)))

    def _watch(self, game_id: str, token: str | None) -> Handler:
        async def watch(connection: Connection) -> None:
            broadcast = self.server.running.get(game_id) if self.server is not None else None
            if broadcast is None:
                await connection.send(json.dumps({"type": "gone", "game_id": game_id})
                                      .encode())
                return
            await connection.send(json.dumps(broadcast.watching(), default=str).encode())
            spectator = _JsonSpectator(connection)
            broadcast.spectators.add(spectator)
            try:
                end = asyncio.ensure_future(broadcast.over.wait())
                try:
                    while not (end.done() or connection.closed.done()):
                        await asyncio.wait((end, connection.closed), timeout=REVOKE_CHECK_S,
                                           return_when=asyncio.FIRST_COMPLETED)
                        if token is not None and self.access.tokens(token) is None:
                            await connection.close(1008, "token revoked")
                            return
                finally:
                    end.cancel()
            finally:
                broadcast.spectators.discard(spectator)

        return watch


def attach(server: GameServer, public: bool = False) -> WebApp:
    """Serve the page on ``server``'s own port (call before ``server.start()``)."""
    app = WebApp(server.settings.data, public, server)
    server.http = app.route
    return app


def void(_: object) -> None:
    """Discard a value."""


async def _refuse(connection: Connection) -> None:
    await connection.close(1008, "no games are played here: this port serves the page")


@contextlib.contextmanager
def serve_web(data_folder: Path, host: str, port: int, public: bool = False
              ) -> Iterator[str]:
    """Serve the page alone (no games) in a thread while the block runs; yields its
    URL. Refuses with OSError when the port cannot be had."""
    ready: concurrent.futures.Future[str] = concurrent.futures.Future()
    stop: list[Callable[[], None]] = []

    async def run() -> None:
        app = WebApp(data_folder, public)
        server = await serve(_refuse, host, port)
        server.http = app.route
        done = asyncio.Event()
        stop.append(lambda: void(loop.call_soon_threadsafe(done.set)))
        ready.set_result(f"http://{host}:{server.port}/")
        try:
            await done.wait()
        finally:
            await server.close()
            app.close()

    def thread() -> None:
        try:
            loop.run_until_complete(run())
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
        finally:
            loop.close()

    loop = asyncio.new_event_loop()
    worker = threading.Thread(target=thread, name="littlestone-web", daemon=True)
    worker.start()
    url = ready.result(timeout=30)
    try:
        yield url
    finally:
        for call in stop:
            call()
        worker.join(timeout=10)
