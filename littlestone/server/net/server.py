"""The game server: where its rooms meet, and ``littlestone serve``.

:class:`GameServer` listens (:mod:`littlestone.transport`) and hands each connection to
its lobby (:mod:`.lobby`: handshake, the token's share, requests), which sends peers to
the games (:mod:`.hosting`), to open games and tournaments (:mod:`.matchmaking`) and to
spectating (:mod:`.spectators`). :func:`serve_forever` is ``littlestone serve``.

It logs (``logging.getLogger(__name__)``, configured by the command line only) where it
listens, the connections it drops or refuses because it is full, and its shutdown; the
rooms log the rest (docs/manual/network.md, "The server's log").
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.exceptions import ConnectionClosed

from littlestone import adversaries as _adversaries  # noqa: F401 - registers the built-ins
from littlestone import learners as _learners  # noqa: F401 - registers the built-ins
from littlestone.games.errors import OverBudget
from littlestone.games.game import GameSpec
from littlestone.games.ldim import checks_per_second
from littlestone.protocol import build
from littlestone.protocol.codec import encode
from littlestone.server.net.admission import Credentials
from littlestone.server.net.hosting import GameHost
from littlestone.server.net.lanes import Lanes
from littlestone.server.net.lobby import Lobby
from littlestone.server.net.matchmaking import Entrants, OpenGame, OpenGames
from littlestone.server.net.peers import LogQuota, PeerLog
from littlestone.server.net.policy import calibrated
from littlestone.server.net.settings import ServerSettings, raise_fd_limit
from littlestone.server.net.spectators import Broadcast
from littlestone.server.records.store import Store
from littlestone.transport import (
    UNIX_SCHEME,
    Connection,
    HttpRoute,
    Server,
    serve,
    serve_unix,
)

#: File descriptors kept beside the connections: the index, logs, listening sockets.
FD_RESERVE = 64
#: WebSocket close code of a refusal that may succeed later (RFC 6455 7.4.1: try again).
TRY_AGAIN_LATER = 1013

__all__ = ["GameServer", "serve_forever"]

log = logging.getLogger(__name__)


class GameServer:
    """``littlestone serve``: handshakes, challenges against built-in agents, games."""

    def __init__(self, settings: ServerSettings) -> None:
        # exact Ldim's budget in instance checks: what the set-up's CPU seconds buy here
        settings = dataclasses.replace(settings, budgets=calibrated(settings.budgets))
        self.settings = settings
        self.store = Store(settings.data)
        #: The worker threads of each kind of work (:mod:`.lanes`).
        self.lanes = Lanes(settings.data)
        #: Tokens and a tournament's one-time credentials (PROTOCOL.md 3.1).
        self.credentials = Credentials(self.store)
        self.account = self.credentials.account
        #: The games (:mod:`.hosting`), how remote players meet (:mod:`.matchmaking`),
        #: and each connection's session (:mod:`.lobby`).
        self.host = GameHost(settings, self.store, self.lanes)
        self.rooms = OpenGames(self.host, settings.connections.create_expiry_s)
        self.entrants = Entrants(self.host, self.credentials)
        self.lobby = Lobby(settings, self.store, self.credentials, self.host, self.rooms,
                           self.entrants, self.lanes)
        self._watching: asyncio.Task[None] | None = None
        self._server: Server | None = None
        #: Connections a server refers at most: the operator's cap, within the file
        #: descriptors the process may open (set by :meth:`start`).
        self.max_connections = settings.connections.max_connections
        #: Sockets dropped over a cap: a line a minute per address and cap.
        self._dropped = LogQuota(lines=1)

    @property
    def running(self) -> dict[str, Broadcast]:
        """Games this server referees now, by id, as their spectators see them."""
        return self.host.running

    @property
    def open_games(self) -> dict[str, OpenGame]:
        """Games created and waiting for their second player, by id."""
        return self.rooms.games

    @property
    def tournaments(self) -> set[str]:
        """The tournaments whose entrants may ``enter`` (a tournament's arena adds its
        own; a plain ``serve`` runs none, and says so at once)."""
        return self.entrants.tournaments

    # -- a tournament's hooks (littlestone.server.tournament.matches) -------------------

    def grant(self, tournament: str, account: str) -> str:
        """A one-time credential for ``account`` to enter ``tournament``
        (:meth:`.matchmaking.Entrants.grant`)."""
        return self.entrants.grant(tournament, account)

    def revoke(self, account: str) -> None:
        """The one-time credential of ``account`` is void, used or not."""
        self.credentials.revoke(account)

    def entrant(self, tournament: str, account: str) -> str | None:
        """The role of a connected entrant, or ``None``."""
        return self.entrants.role(tournament, account)

    async def play_entrant(self, tournament: str, account: str, game: GameSpec, seed: int,
                           opponent: Any) -> str | None:
        """Play one tournament game on an entrant's connection; returns the game id."""
        return await self.entrants.play_one(tournament, account, game, seed, opponent)

    async def play_entrants(self, tournament: str, learner: str, adversary: str,
                            game: GameSpec, seed: int) -> str | None:
        """Play one tournament game between two entrants; returns the game id, or None
        when either is not connected in its role."""
        return await self.entrants.play_two(tournament, learner, adversary, game, seed)

    def release_entrant(self, tournament: str, account: str) -> None:
        """This entrant's games are over: it is told ``done``."""
        self.entrants.release_one(tournament, account)

    async def release(self, tournament: str) -> None:
        """The tournament is over: every entrant is told ``done`` (waits until told)."""
        await self.entrants.release(tournament)

    # -- the web room's hook (littlestone.server.web): plain HTTP on the same port ------
    #: Answers plain HTTP requests and the web page's WebSockets (set before start()).
    http: HttpRoute | None = None

    async def start(self) -> None:
        """Listen; first mark ``interrupted`` the games a previous process left running
        in the data folder (``kill -9``), and raise the file-descriptor limit."""
        settings, limits = self.settings, self.settings.connections
        swept = await self.lanes.records.index(Store.sweep)
        if swept:
            log.warning("%d games left running by a process that is gone are marked "
                        "interrupted", len(swept), extra={"games": len(swept)})
        charged = await self.lanes.records.index(Store.disk_by_account)
        await self.lanes.records.run(self.host.disk.measure, charged)
        self._watching = asyncio.create_task(self.host.watch_disk())
        budgets = settings.budgets
        log.info("server-side agents: %g s of CPU for a set-up, %g s for a move, %d MiB a "
                 "game; exact Ldim: %d instance checks a question (%.3g a CPU second here)",
                 budgets.setup_cpu_s, budgets.move_cpu_s, budgets.game_memory_mb,
                 budgets.ldim_work, checks_per_second(),
                 extra={"setup_cpu_s": budgets.setup_cpu_s, "move_cpu_s": budgets.move_cpu_s,
                        "ldim_work": budgets.ldim_work,
                        "checks_per_second": round(checks_per_second())})
        fds = raise_fd_limit(limits.max_connections + limits.per_address + FD_RESERVE
                             + settings.budgets.max_games)
        self.max_connections = max(1, min(limits.max_connections,
                                          fds - FD_RESERVE - settings.budgets.max_games
                                          - limits.per_address))
        if self.max_connections < limits.max_connections:
            log.warning("at most %d connections, not %d: this process may open %d files",
                        self.max_connections, limits.max_connections, fds,
                        extra={"max_connections": self.max_connections, "files": fds})
        # sockets beyond the cap plus one address's share are dropped unanswered; up to
        # there a connection is told why it is refused (over_budget: the server is full)
        sockets = self.max_connections + limits.per_address
        # the kernel's queue of connections not yet accepted holds a whole crowd arriving
        # at once (a class's 500 peers in a second: with asyncio's 100, some of their
        # handshakes went unanswered)
        backlog = sockets
        if settings.unix is not None:
            self._server = await serve_unix(self.handle, settings.unix,
                                            max_size=settings.limits.max_frame,
                                            max_sockets=sockets, backlog=backlog)
        else:
            self._server = await serve(self.handle, settings.host, settings.port,
                                       max_size=settings.limits.max_frame, tls=settings.tls,
                                       max_sockets=sockets, per_address=limits.per_address,
                                       backlog=backlog)
        self._server.http = self.http  # (the web room's hook)
        self._server.on_refused = self._drop
        self._listening()

    def _listening(self) -> None:
        settings = self.settings
        tls = settings.tls is not None
        web = (self.url.replace("ws", "http", 1) + "/"
               if self.http is not None and settings.unix is None else None)
        log.info("listening on %s (%s, %s)%s; data in %s", self.url,
                 "TLS" if tls else "no TLS",
                 "anonymous: no token needed" if settings.anonymous else "tokens required",
                 f"; web page on {web}" if web else "", settings.data,
                 extra={"url": self.url, "address": str(settings.unix or settings.host),
                        "port": self.port, "tls": tls, "anonymous": settings.anonymous,
                        "web": web, "data": str(settings.data)})

    def _drop(self, connection: Connection, cap: str) -> None:
        """A socket dropped over a cap before its handshake (:class:`.transport.Server`):
        logged once a minute per address and cap, with the count of the others."""
        skipped = self._dropped.take((connection.address, cap))
        if skipped is None:
            return
        limits = self.settings.connections
        what = (f"{limits.per_address} sockets from one address" if cap == "per_address"
                else f"{self.max_connections} connections in all, and one address's share")
        log.warning("%s: dropped a connection over the cap of %s%s", connection.address,
                    what, f" ({skipped} more dropped since the last line)" if skipped else "",
                    extra={"peer": connection.address, "budget": cap, "code": "over_budget"})

    @property
    def url(self) -> str:
        """Where clients reach this server."""
        if self.settings.unix is not None:
            return f"{UNIX_SCHEME}{self.settings.unix}"
        scheme = "wss" if self.settings.tls is not None else "ws"
        return f"{scheme}://{self.settings.host}:{self.port}"

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.port

    async def stop(self) -> None:
        """Stop accepting, end every running game as ``aborted:shutdown`` (footer and
        index row written), tell the rest ``shutdown``, close: within a few seconds
        (PROTOCOL.md 1.1)."""
        log.info("shutting down: %d running games end aborted:shutdown, %d open games "
                 "close", len(self.running), len(self.open_games),
                 extra={"running": len(self.running), "open": len(self.open_games)})
        self.lobby.stopping.set()
        self.entrants.close()
        self.rooms.close()
        if self._server is not None:
            self._server.stop_accepting()
        await self.host.stop(self.SHUTDOWN_S)
        if self._watching is not None:
            self._watching.cancel()
        if self._server is not None:
            await self._server.close()
        self.lanes.close()
        log.info("stopped")

    #: Seconds :meth:`stop` waits for the running games to write their ends.
    SHUTDOWN_S = 5.0

    async def handle(self, ws: Connection) -> None:
        """A connection: refused at once when the server is full, else a session."""
        assert self._server is not None
        if len(self._server.connections) > self.max_connections:
            error = OverBudget("max_connections", "over budget: the server is full "
                               f"({self.max_connections} connections); try again later",
                               fatal=True)
            PeerLog(log, ws.address, quota=self.lobby.refusals).refused(error)
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode(build.error_of(error)))
                await ws.close(TRY_AGAIN_LATER, "server full")
            return
        await self.lobby.session(ws)


async def serve_forever(settings: ServerSettings,
                        ready: Callable[[GameServer], Awaitable[None] | None] | None = None,
                        setup: Callable[[GameServer], None] | None = None) -> None:
    """Run until SIGINT or SIGTERM, then shut down gracefully. ``setup`` is called
    before the server starts listening (the web room attaches itself there)."""
    server = GameServer(settings)
    if setup is not None:
        setup(server)
    await server.start()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    received: list[str] = []

    def stopping(sig: signal.Signals) -> None:
        received.append(sig.name)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stopping, sig)
    if ready is not None:
        maybe = ready(server)
        if maybe is not None:
            await maybe
    await stop.wait()
    log.info("%s received", received[0], extra={"signal": received[0]})
    await server.stop()
