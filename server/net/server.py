"""The game server: handshakes, challenges, open games, tournament entrants, spectators.

:class:`GameServer` accepts connections (:mod:`.transport`), runs each session's
state machine (:mod:`littlestone.protocol.session`), and plays every game through
:func:`.driver.run_game`, logging and indexing it as ``play`` does
(:mod:`littlestone.server.records`) and broadcasting it to spectators
(:mod:`.spectators`). :func:`serve_forever` is ``littlestone serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.exceptions import ConnectionClosed

from littlestone import adversaries as _adversaries  # noqa: F401 - registers the built-ins
from littlestone import learners as _learners  # noqa: F401 - registers the built-ins
from littlestone.adversaries.base import ADVERSARIES
from littlestone.games.game import EXPERTS, GameSeeds, GameSpec, game_seeds, secret_key
from littlestone.learners.base import LEARNERS
from littlestone.protocol.codec import encode
from littlestone.protocol.errors import CLOSE_CODES, Code, ProtocolError
from littlestone.protocol.messages import rules_to_wire
from littlestone.protocol.session import ServerSession
from littlestone.server.net.admission import Credentials, MessageRate, Tally
from littlestone.server.net.driver import run_game
from littlestone.server.net.players import RemoteAdversary, RemoteLearner, RemotePlayer
from littlestone.server.net.policy import Opponents, Player, admit
from littlestone.server.net.settings import (
    LOBBY_FAULTS,
    LOBBY_MAX_FRAME,
    ServerSettings,
    raise_fd_limit,
)
from littlestone.server.net.spectators import Broadcast, wire_result
from littlestone.server.records.logged import (
    agent_identity,
    game_info,
    log_footer,
    log_header,
    package_version,
)
from littlestone.server.records.logs import LogWriter
from littlestone.server.records.store import Store, new_game_id
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

log = logging.getLogger("littlestone.server")


class GameServer:
    """``littlestone serve``: handshakes, challenges against built-in agents, games."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.store = Store(settings.data)
        #: The agents a peer may name as its opponent.
        self.opponents = Opponents(dict(settings.agents))
        self.games: set[asyncio.Task[Any]] = set()
        #: Tournament entrants by (tournament, account): connection, session, release.
        self.entrants: dict[tuple[str, str], tuple[Connection, ServerSession,
                                                   asyncio.Future[None]]] = {}
        #: Games created and waiting for their second player, by id.
        self.open_games: dict[str, tuple[GameSpec, int, Connection, ServerSession,
                                         asyncio.Future[None]]] = {}
        #: Games this server referees now, by id, as their spectators see them.
        self.running: dict[str, Broadcast] = {}
        self._server: Server | None = None
        self._stopping = asyncio.Event()
        #: Tokens and a tournament's one-time credentials (PROTOCOL.md 3.1).
        self.credentials = Credentials(self.store)
        self.account, self.revoke = self.credentials.account, self.credentials.revoke
        #: The tournaments this server runs, whose entrants may ``enter`` (a tournament's
        #: arena adds its own; a plain ``serve`` runs none, and says so at once).
        self.tournaments: set[str] = set()
        #: Games being admitted (their class built in a worker thread): they hold a slot.
        self._admitting = 0
        #: Open sessions and games in play of each account (ConnectionLimits).
        self._sessions_of, self._games_of = Tally(), Tally()
        #: Connections a server refers at most: the operator's cap, within the file
        #: descriptors the process may open (set by :meth:`start`).
        self.max_connections = settings.connections.max_connections

    def grant(self, tournament: str, account: str) -> str:
        """A one-time credential (:meth:`.admission.Credentials.grant`): this server then
        runs ``tournament``."""
        self.tournaments.add(tournament)
        return self.credentials.grant(tournament, account)

    # -- the web room's hook (littlestone.server.web): plain HTTP on the same port ------
    #: Answers plain HTTP requests and the web page's WebSockets (set before start()).
    http: HttpRoute | None = None

    async def start(self) -> None:
        """Listen; first mark ``interrupted`` the games a previous process left running
        in the data folder (``kill -9``), and raise the file-descriptor limit."""
        settings, limits = self.settings, self.settings.connections
        swept = await asyncio.to_thread(self.store.sweep)
        if swept:
            log.warning("%d games left running by a process that is gone are marked "
                        "interrupted", len(swept))
        fds = raise_fd_limit(limits.max_connections + limits.per_address + FD_RESERVE
                             + settings.budgets.max_games)
        self.max_connections = max(1, min(limits.max_connections,
                                          fds - FD_RESERVE - settings.budgets.max_games
                                          - limits.per_address))
        # sockets beyond the cap plus one address's share are dropped unanswered; up to
        # there a connection is told why it is refused (over_budget: the server is full)
        sockets = self.max_connections + limits.per_address
        if settings.unix is not None:
            self._server = await serve_unix(self.handle, settings.unix,
                                            max_size=settings.limits.max_frame,
                                            max_sockets=sockets)
        else:
            self._server = await serve(self.handle, settings.host, settings.port,
                                       max_size=settings.limits.max_frame, tls=settings.tls,
                                       max_sockets=sockets, per_address=limits.per_address)
        self._server.http = self.http  # (the web room's hook)

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
        self._stopping.set()
        for _, _, finished in list(self.entrants.values()):
            if not finished.done():
                finished.set_result(None)
        for *_, played in list(self.open_games.values()):
            if not played.done():
                played.set_result(None)
        self.open_games.clear()
        if self._server is not None:
            self._server.stop_accepting()
        for task in list(self.games):
            task.cancel()
        if self.games:
            await asyncio.wait(set(self.games), timeout=self.SHUTDOWN_S)
        if self._server is not None:
            await self._server.close()

    #: Seconds :meth:`stop` waits for the running games to write their ends.
    SHUTDOWN_S = 5.0

    async def handle(self, ws: Connection) -> None:
        session = ServerSession(tokens=self.account, anonymous=self.settings.anonymous,
                                limits=self.settings.limits)
        limits = self.settings.connections
        try:
            assert self._server is not None
            if len(self._server.connections) > self.max_connections:
                error = ProtocolError(Code.OVER_BUDGET, "over budget: the server is full "
                                      f"({self.max_connections} connections); try again later",
                                      fatal=True)
                await ws.send(encode(error.to_message()))
                await ws.close(TRY_AGAIN_LATER, "server full")
                return
            try:
                frame = await ws.recv(ws.loop.time() + limits.handshake_s)
                session.receive(frame)
            except TimeoutError:
                raise ProtocolError(Code.TIMEOUT, "no hello within the handshake deadline",
                                    fatal=True) from None
            if session.account is not None and (
                    self._sessions_of[session.account] >= limits.per_token):
                raise ProtocolError(Code.OVER_BUDGET, f"over budget: {limits.per_token} "
                                        "connections of this token are open already",
                                        fatal=True)
            with self._sessions_of.hold(session.account):
                await self._welcome(ws, session)
                await self._lobby(ws, session)
        except ProtocolError as exc:
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode(exc.to_message()))
                await ws.close(CLOSE_CODES.get(exc.code, 1008), exc.code.value)
        except ConnectionClosed:
            pass
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await ws.close(1001, "server shutting down")
            raise
        except Exception:
            log.exception("internal error in a session")
            with contextlib.suppress(Exception):
                await ws.send(encode(ProtocolError(Code.INTERNAL, "internal error").to_message()))
                await ws.close(1011, "internal")

    async def _welcome(self, ws: Connection, session: ServerSession) -> None:
        settings = self.settings
        await ws.send(encode(session.welcome(
            f"littlestone {package_version()}",
            {"max_frame": settings.limits.max_frame,
             "move_deadline_ms": int(settings.move_deadline * 1000),
             "time_bank_ms": int(settings.time_bank * 1000),
             "lobby_idle_ms": int(settings.connections.lobby_idle_s * 1000)})))

    async def _lobby(self, ws: Connection, session: ServerSession) -> None:
        """A session between games: its requests, each checked, until it closes, idles
        past ``lobby_idle_s`` or faults :data:`LOBBY_FAULTS` times (PROTOCOL.md 4.1)."""
        limits = self.settings.connections
        # a one-time credential's session may only enter its tournament, once: the
        # restriction is the session's, whatever becomes of the credential later
        only = self.credentials.restricted.get(session.account or "")
        strikes = 0
        rate = MessageRate(limits.message_rate, limits.message_burst)
        while not self._stopping.is_set():
            try:
                frame = await ws.recv(ws.loop.time() + limits.lobby_idle_s)
            except TimeoutError:
                raise ProtocolError(Code.TIMEOUT, f"idle in the lobby for "
                                    f"{limits.lobby_idle_s:g} s", fatal=True) from None
            if len(frame) > LOBBY_MAX_FRAME:  # lobby messages are small: not decoded
                raise ProtocolError(Code.BAD_MESSAGE, f"{len(frame)} bytes exceeds the "
                                    f"lobby's max_frame({LOBBY_MAX_FRAME})", fatal=True)
            try:
                if not rate.take():
                    raise ProtocolError(Code.OVER_BUDGET, "over budget: more than "
                                        f"{limits.message_rate:g} messages a second")
                message = session.receive(frame)
            except ProtocolError as exc:
                strikes += 1
                if exc.fatal or strikes >= LOBBY_FAULTS:
                    exc.fatal = True
                    raise
                await ws.send(encode(exc.to_message()))
                continue
            kind = message["type"]
            if (only is None and session.token_digest is not None
                    and self.store.token_account(session.token_digest) is None):
                raise ProtocolError(Code.UNAUTHORIZED, "this token was revoked", fatal=True)
            if only is not None and (kind != "enter" or message["tournament"] != only):
                raise ProtocolError(Code.UNAUTHORIZED, f"this credential only enters "
                                    f"tournament {only}", fatal=True)
            if kind == "revoke":
                if await asyncio.to_thread(self.store.revoke_token, message["name"]):
                    await ws.send(encode({"type": "revoked", "name": message["name"]}))
                else:
                    await ws.send(encode(ProtocolError(Code.NOT_FOUND, "no token named "
                                                       f"{message['name']!r}").to_message()))
            elif kind == "watch":
                await self._watch(ws, session, message)
            elif kind == "enter":
                await self._enter(ws, session, message)
                if only is not None:
                    return  # its games are over: the connection closes
            elif not self._may_play(session):
                await ws.send(encode(ProtocolError(
                    Code.OVER_BUDGET, f"over budget: this token plays "
                    f"{self.settings.connections.games_per_token} games already").to_message()))
            else:
                with self._games_of.hold(session.account):
                    if kind == "challenge":
                        await self._challenge(ws, session, message)
                    elif kind == "create":
                        await self._create(ws, session, message)
                    else:
                        await self._join(ws, session, message)

    def _may_play(self, session: ServerSession) -> bool:
        """Whether the session's token may start one more game (anonymous sessions are
        held to the per-token limit by their connections only)."""
        return (session.account is None
                or self._games_of[session.account] < self.settings.connections.games_per_token)

    async def _watch(self, ws: Connection, session: ServerSession,
                     message: dict[str, Any]) -> None:
        """A spectator follows a running game until its end (PROTOCOL.md 5.4)."""
        broadcast = self.running.get(message["game_id"])
        if broadcast is not None and session.privilege == "player" and (
                session.account is not None and session.account not in broadcast.accounts):
            broadcast = None  # a player's token watches its own games only: as unknown
        if broadcast is None:
            await ws.send(encode(ProtocolError(Code.NOT_FOUND, f"no running game with id "
                                               f"{message['game_id']}").to_message()))
            return
        session.start_game()  # nothing is expected from a spectator until the end
        broadcast.spectators.add(ws)
        try:
            await ws.send(encode(broadcast.watching()))
            end = asyncio.ensure_future(broadcast.over.wait())
            try:
                await asyncio.wait((end, ws.closed), return_when=asyncio.FIRST_COMPLETED)
            finally:
                end.cancel()
        finally:
            broadcast.spectators.discard(ws)
            session.end_game()

    async def _admit(self, ws: Connection, message: dict[str, Any], registry: Any | None
                     ) -> tuple[GameSpec, Player | None] | None:
        """The game (and server-side opponent) a peer asks for, within the budgets, built
        in a worker thread (a large class or exact Ldim never holds up the other games);
        None after telling the peer why not."""
        busy = len(self.running) + len(self.open_games) + self._admitting
        if busy >= self.settings.budgets.max_games:
            error = ProtocolError(Code.OVER_BUDGET, "over budget: the server referees "
                                  f"{self.settings.budgets.max_games} games already")
            await ws.send(encode(error.to_message()))
            return None
        opponent = message.get("opponent") if registry is not None else None
        self._admitting += 1  # a slot held from here until the game runs (no await between)
        try:
            return await asyncio.to_thread(admit, message["rules"], opponent, registry,
                                           self.settings.budgets, self.opponents)
        except ProtocolError as exc:
            await ws.send(encode(exc.to_message()))
            return None
        finally:
            self._admitting -= 1

    async def _challenge(self, ws: Connection, session: ServerSession,
                         message: dict[str, Any]) -> None:
        registry = ADVERSARIES if session.role == "learner" else LEARNERS
        admitted = await self._admit(ws, message, registry)
        if admitted is None:
            return
        game, opponent = admitted
        seed = message["seed"] if message["seed"] is not None else secrets.randbits(32)
        remote: RemoteLearner | RemoteAdversary
        if session.role == "learner":
            remote = RemoteLearner(ws, session, self.settings)
            await self._run(game, seed, remote, opponent, [(ws, session, remote)])
        else:
            remote = RemoteAdversary(ws, session, self.settings)
            await self._run(game, seed, opponent, remote, [(ws, session, remote)])

    async def _enter(self, ws: Connection, session: ServerSession,
                     message: dict[str, Any]) -> None:
        """A remote agent enters a tournament under its token's name and plays the games
        the tournament gives it, one after another, until ``done``."""
        if session.account is None:
            raise ProtocolError(Code.UNAUTHORIZED, "entering a tournament needs a token: the "
                                "token's name is the entrant")
        if message["tournament"] not in self.tournaments:
            await ws.send(encode(ProtocolError(Code.NOT_FOUND, (
                f"no tournament {message['tournament']!r} runs on this server"
                + (f" (it runs {', '.join(sorted(self.tournaments))})" if self.tournaments
                   else ": start one with littlestone tournament CONFIG.toml, which "
                   "announces its own address")))
                .to_message()))
            return
        key = (message["tournament"], session.account)
        finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.entrants[key] = (ws, session, finished)
        await ws.send(encode({"type": "entered", "tournament": message["tournament"]}))
        try:
            await finished  # the tournament drives this connection's games meanwhile
        finally:
            self.entrants.pop(key, None)
        with contextlib.suppress(ConnectionClosed):
            await ws.send(encode({"type": "done", "tournament": message["tournament"]}))

    def entrant(self, tournament: str, account: str) -> str | None:
        """The role of a connected entrant, or ``None``."""
        entry = self.entrants.get((tournament, account))
        return entry[1].role if entry is not None else None

    async def play_entrant(self, tournament: str, account: str, game: GameSpec, seed: int,
                           opponent: Any) -> str | None:
        """Play one tournament game on an entrant's connection; returns the game id."""
        entry = self.entrants.get((tournament, account))
        if entry is None:
            return None
        ws, session, _ = entry
        game_id = new_game_id()
        if session.role == "learner":
            remote: RemotePlayer = RemoteLearner(ws, session, self.settings)
            await self._run(game, seed, remote, opponent, [(ws, session, remote)], game_id)
        else:
            remote = RemoteAdversary(ws, session, self.settings)
            await self._run(game, seed, opponent, remote, [(ws, session, remote)], game_id)
        return game_id

    async def play_entrants(self, tournament: str, learner: str, adversary: str,
                            game: GameSpec, seed: int) -> str | None:
        """Play one tournament game between two entrants (two submissions); returns the
        game id, or None when either is not connected in its role."""
        one, two = (self.entrants.get((tournament, learner)),
                    self.entrants.get((tournament, adversary)))
        if (one is None or two is None or one[1].role != "learner"
                or two[1].role != "adversary"):
            return None
        game_id = new_game_id()
        remote_learner = RemoteLearner(one[0], one[1], self.settings)
        remote_adversary = RemoteAdversary(two[0], two[1], self.settings)
        await self._run(game, seed, remote_learner, remote_adversary,
                        [(one[0], one[1], remote_learner), (two[0], two[1], remote_adversary)],
                        game_id)
        return game_id

    def release_entrant(self, tournament: str, account: str) -> None:
        """This entrant's games are over: it is told ``done``."""
        entry = self.entrants.get((tournament, account))
        if entry is not None and not entry[2].done():
            entry[2].set_result(None)

    async def release(self, tournament: str) -> None:
        """The tournament is over: every entrant is told ``done`` (waits until told)."""
        for (name, _), (_, _, finished) in list(self.entrants.items()):
            if name == tournament and not finished.done():
                finished.set_result(None)
        for _ in range(100):
            if not any(name == tournament for name, _ in self.entrants):
                return
            await asyncio.sleep(0.01)

    async def _create(self, ws: Connection, session: ServerSession,
                      message: dict[str, Any]) -> None:
        """Open a game for another remote agent to join; wait until it is played."""
        admitted = await self._admit(ws, message, None)
        if admitted is None:
            return
        game, _ = admitted
        game_id = new_game_id()
        seed = message["seed"] if message["seed"] is not None else secrets.randbits(32)
        played: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.open_games[game_id] = (game, seed, ws, session, played)
        await ws.send(encode({"type": "created", "game_id": game_id}))
        expiry = self.settings.connections.create_expiry_s
        try:
            await asyncio.wait((played, ws.closed), timeout=expiry,
                               return_when=asyncio.FIRST_COMPLETED)
            if self.open_games.pop(game_id, None) is not None:  # nobody joined: it expires
                if not played.done() and not ws.closed.done():
                    await ws.send(encode(ProtocolError(
                        Code.TIMEOUT, f"no player joined game {game_id} within {expiry:g} s: "
                        "it has expired").to_message()))
                return
            await played  # the joiner's connection runs the game, for both
        finally:
            self.open_games.pop(game_id, None)

    async def _join(self, ws: Connection, session: ServerSession,
                    message: dict[str, Any]) -> None:
        entry = self.open_games.get(message["game_id"])
        if entry is None:
            await ws.send(encode(ProtocolError(Code.NOT_FOUND, "no open game with id "
                                               f"{message['game_id']!r}").to_message()))
            return
        game, seed, other_ws, other, played = entry
        if other.role == session.role:
            await ws.send(encode(ProtocolError(Code.UNSUPPORTED_GAME, f"that game already has "
                                               f"a {session.role}").to_message()))
            return
        del self.open_games[message["game_id"]]
        players = {session.role: (ws, session), other.role: (other_ws, other)}
        learner = RemoteLearner(*players["learner"], self.settings)
        adversary = RemoteAdversary(*players["adversary"], self.settings)
        try:
            await self._run(game, seed, learner, adversary,
                            [(*players["learner"], learner), (*players["adversary"], adversary)],
                            game_id=message["game_id"])
        finally:
            if not played.done():
                played.set_result(None)

    async def _run(self, game: GameSpec, seed: int, learner: Any, adversary: Any,
                   remotes: list[tuple[Connection, ServerSession, RemotePlayer]],
                   game_id: str | None = None) -> None:
        """Play one game with its remote players: start, rounds, log, index, end. The
        game key is fresh and secret (docs/design.md 1.4): no player can derive the
        referee's coin or the other player's seed from the game seed or its own."""
        game_id = game_id or new_game_id()
        seeds = game_seeds(seed, secret_key())

        def identity(player: Any) -> dict[str, Any]:
            if isinstance(player, RemotePlayer):
                return {"spec": f"remote:{player.session.agent}",
                        "account": player.session.account, "sha256": "remote"}
            return agent_identity(player)

        header = log_header(game_id, "server", game, seeds, identity(learner),
                            identity(adversary))
        path = self.settings.data / "games" / f"{game_id}.lslog"
        level = "none" if self.settings.log_level == "none" else "full"  # (moves: kept)
        self.store.start_game({**game_info(game), "learner": header["learner"]["spec"],
                               "adversary": header["adversary"]["spec"], "seed": seed,
                               "horizon": game.rounds, "source": "server"},
                              log=None if level == "none" else str(path), game_id=game_id)
        writer = LogWriter(path, header, background=False, level=level)
        broadcast = writer.observer = Broadcast(game_id, rules_to_wire(game),
                                                header["learner"]["spec"],
                                                header["adversary"]["spec"])
        broadcast.accounts = {session.account for _, session, _ in remotes
                              if session.account is not None}
        self.running[game_id] = broadcast
        try:
            await self._play(game, seeds, learner, adversary, remotes, game_id, writer)
        finally:
            del self.running[game_id]
            broadcast.finish("aborted", {})  # (the footer has ended it already, normally)

    async def _play(self, game: GameSpec, seeds: GameSeeds, learner: Any, adversary: Any,
                    remotes: list[tuple[Connection, ServerSession, RemotePlayer]], game_id: str,
                    writer: LogWriter) -> None:
        """The game itself: start (each player gets its own seed and SHA-256 of the game
        key), the rounds, the log's footer, the index row, end (with the key)."""
        for ws, session, remote in remotes:
            session.start_game()
            own = seeds.learner if remote.role == "learner" else seeds.adversary
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode({"type": "start", "game_id": game_id, "role": remote.role,
                                      "rules": rules_to_wire(game), "seed": own,
                                      "commitment": seeds.commitment}))
        task = asyncio.current_task()
        assert task is not None
        self.games.add(task)
        try:
            result = await run_game(game, seeds, learner, adversary, writer)
        except asyncio.CancelledError:
            writer.close(log_footer(seeds, None, "aborted:shutdown"))
            self.store.finish_game(game_id, {"status": "aborted:shutdown",
                                             "rounds": writer.rounds_written},
                                   chain=writer.chain)
            raise
        except Exception:
            # a bug of the server's (or of an operator's agent): this game ends, with its
            # log's footer and its row; its players are told; the server goes on
            log.exception("internal error in game %s", game_id)
            writer.close(log_footer(seeds, None, "aborted:internal"))
            self.store.finish_game(game_id, {"status": "aborted:internal",
                                             "rounds": writer.rounds_written},
                                   chain=writer.chain)
            for ws, session, _ in remotes:
                session.end_game()
                with contextlib.suppress(ConnectionClosed):
                    await ws.send(encode({"type": "end", "status": "aborted:internal",
                                          "result": {}, "game_id": game_id, "key": seeds.key}))
            return
        finally:
            self.games.discard(task)
        scores = result.to_dict()
        writer.close(log_footer(seeds, result))
        self.store.finish_game(game_id, scores, chain=writer.chain)  # the log's anchor
        for ws, session, remote in remotes:
            session.end_game()
            end: dict[str, Any] = {"type": "end", "status": result.status,
                                   "result": wire_result(scores), "game_id": game_id,
                                   "key": seeds.key}
            if isinstance(remote, RemoteLearner) and remote.pending is not None:
                end["label" if game.game != EXPERTS else "outcome"] = remote.pending
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode(end))


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
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        maybe = ready(server)
        if maybe is not None:
            await maybe
    await stop.wait()
    await server.stop()
