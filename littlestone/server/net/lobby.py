"""A connection's session from its ``hello`` to its close (PROTOCOL.md 3, 4): the
handshake, the token's share of the server, and the lobby, whose requests go to the
games (:mod:`.hosting`), to open games and tournaments (:mod:`.matchmaking`) and to
spectating (:mod:`.spectators`).

Every refusal is told to the peer with its code (PROTOCOL.md 6) and logged with it
(:mod:`.peers`); a fatal one closes the connection. An unexpected error is logged with
its traceback and closes the connection with ``internal``, with no details sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import Any, Protocol, cast

from websockets.exceptions import ConnectionClosed

from littlestone.adversaries.base import ADVERSARIES
from littlestone.games.errors import OverBudget, ProtocolError
from littlestone.learners.base import LEARNERS
from littlestone.protocol import build
from littlestone.protocol.codec import encode
from littlestone.protocol.errors import CLOSE_CODES, Code
from littlestone.protocol.session import ServerSession
from littlestone.protocol.wire import Challenge, LobbyRequest, Submit, Submitted
from littlestone.server.net.admission import Credentials, MessageRate, Tally
from littlestone.server.net.disk import DiskLedger
from littlestone.server.net.hosting import GameHost
from littlestone.server.net.lanes import Lanes
from littlestone.server.net.matchmaking import Entrants, OpenGames
from littlestone.server.net.peers import LogQuota, PeerLog, refuse
from littlestone.server.net.players import RemoteAdversary, RemoteLearner
from littlestone.server.net.settings import (
    GUESTS_SHARE,
    LOBBY_FAULTS,
    LOBBY_MAX_FRAME,
    ServerSettings,
)
from littlestone.server.net.spectators import watch
from littlestone.server.records.logged import package_version
from littlestone.server.records.store import Store
from littlestone.transport import Connection

__all__ = ["Lobby", "Submissions"]

log = logging.getLogger(__name__)


class Submissions(Protocol):
    """A competition's door (PROTOCOL.md 4.2): the room above the network's
    (:mod:`littlestone.server.tournament.competition`) sets it on the lobby before the
    server starts, as the page sets the transport's ``http`` route."""

    #: The competition's name (a ``submit`` that names another is ``not_found``).
    name: str
    #: The largest ``submit`` frame the lobby reads (larger: ``bad_message``, fatal).
    frame_max: int

    async def submit(self, account: str, message: Submit, disk: DiskLedger) -> Submitted:
        """The ``submitted`` answer, or a ProtocolError (refused before any check; the
        disk a version may take is held against the token's and the folder's budgets
        on ``disk``)."""
        ...


class Lobby:
    """The sessions of one server: each connection's, from hello to close."""

    def __init__(self, settings: ServerSettings, store: Store, credentials: Credentials,
                 host: GameHost, open_games: OpenGames, entrants: Entrants,
                 lanes: Lanes) -> None:
        self.settings, self.store, self.credentials = settings, store, credentials
        self.lanes = lanes
        self.host, self.open_games, self.entrants = host, open_games, entrants
        #: Set when the server stops: every lobby loop ends.
        self.stopping = asyncio.Event()
        #: Open sessions and games in play of each account (ConnectionLimits).
        self._sessions_of, self._games_of = Tally(), Tally()
        #: Games in play of guests (by guest), within their share of max_games.
        self._guests = Tally()
        #: Refusals logged per address and code (:class:`.peers.LogQuota`).
        self.refusals = LogQuota()
        #: A competition that takes submissions here (``serve --competition``), or None.
        self.submissions: Submissions | None = None

    def peer(self, ws: Connection, session: ServerSession | None = None) -> PeerLog:
        """The log lines of the session on ``ws``."""
        return PeerLog(log, ws.address, session, self.refusals)

    async def session(self, ws: Connection) -> None:
        """A connection's session: hello, welcome, the lobby; refusals told and logged."""
        session = ServerSession(tokens=self.credentials.account,
                                anonymous=self.settings.anonymous, limits=self.settings.limits)
        limits = self.settings.connections
        peer = self.peer(ws, session)
        try:
            try:
                frame = await ws.recv(ws.loop.time() + limits.handshake_s)
                session.receive(frame)
            except TimeoutError:
                raise ProtocolError(Code.TIMEOUT, "no hello within the handshake deadline",
                                    fatal=True) from None
            ticket = self.credentials.redeemed.get(session.token_digest or "")
            if ticket is not None and ticket.guest:  # (a guest is counted by its address)
                session.account = self.credentials.guest_name(ws.address)
            if session.account is not None and (
                    self._sessions_of[session.account] >= limits.per_token):
                raise OverBudget("per_token", f"over budget: {limits.per_token} connections "
                                 "of this token are open already", fatal=True)
            peer.debug("said hello")
            with self._sessions_of.hold(session.account):
                await self._welcome(ws, session)
                await self._lobby(ws, session, peer)
        except ProtocolError as error:
            error.fatal = True  # (what ends a session closes its connection)
            peer.refused(error)
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode(build.error_of(error)))
                await ws.close(CLOSE_CODES.get(error.code, 1008), error.code.value)
        except ConnectionClosed:
            pass
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await ws.close(1001, "server shutting down")
            raise
        except Exception:
            peer.exception("internal error in a session: closed with internal")
            with contextlib.suppress(Exception):
                await ws.send(encode(build.error(Code.INTERNAL.value, "internal error", True)))
                await ws.close(1011, "internal")
        finally:
            self.credentials.redeemed.pop(session.token_digest or "", None)
            peer.debug("closed")

    async def _welcome(self, ws: Connection, session: ServerSession) -> None:
        settings = self.settings.for_player(session.capabilities)  # (what its games get)
        await ws.send(encode(session.welcome(
            f"littlestone {package_version()}",
            {"max_frame": settings.limits.max_frame,
             "move_deadline_ms": int(settings.move_deadline * 1000),
             "time_bank_ms": int(settings.time_bank * 1000),
             "lobby_idle_ms": int(settings.connections.lobby_idle_s * 1000)})))

    async def _lobby(self, ws: Connection, session: ServerSession, peer: PeerLog) -> None:
        """A session between games: its requests, each checked, until it closes, idles
        past ``lobby_idle_s`` or faults :data:`LOBBY_FAULTS` times (PROTOCOL.md 4.1)."""
        limits = self.settings.connections
        # a one-time credential's session may only enter its tournament, once: the
        # restriction is the session's, whatever becomes of the credential later
        only = self.credentials.restricted.get(session.account or "")
        strikes = 0
        rate = MessageRate(limits.message_rate, limits.message_burst)
        while not self.stopping.is_set():
            try:
                frame = await ws.recv(ws.loop.time() + limits.lobby_idle_s)
            except TimeoutError:
                raise ProtocolError(Code.TIMEOUT, f"idle in the lobby for "
                                    f"{limits.lobby_idle_s:g} s", fatal=True) from None
            most = LOBBY_MAX_FRAME if self.submissions is None else max(
                LOBBY_MAX_FRAME, self.submissions.frame_max)
            if len(frame) > most:  # lobby messages are small: not decoded
                raise ProtocolError(Code.BAD_MESSAGE, f"{len(frame)} bytes exceeds the "
                                    f"lobby's max_frame({most})", fatal=True)
            try:
                if not rate.take():
                    raise OverBudget("message_rate", "over budget: more than "
                                     f"{limits.message_rate:g} messages a second")
                message = session.receive(frame)
            except ProtocolError as exc:
                strikes += 1
                if exc.fatal or strikes >= LOBBY_FAULTS:
                    exc.fatal = True
                    raise
                await refuse(ws, peer, exc)
                continue
            if len(frame) > LOBBY_MAX_FRAME and message["type"] != "submit":
                raise ProtocolError(Code.BAD_MESSAGE, f"{len(frame)} bytes exceeds the "
                                    f"lobby's max_frame({LOBBY_MAX_FRAME}) (only a submit "
                                    "may be larger)", fatal=True)
            # (in the lobby the session lets only lobby requests through)
            await self._request(ws, session, peer, cast("LobbyRequest", message), only)
            if only is not None and message["type"] == "enter":
                return  # its games are over: the connection closes

    async def _request(self, ws: Connection, session: ServerSession, peer: PeerLog,
                       message: LobbyRequest, only: str | None) -> None:
        """One lobby request, from a token still valid (PROTOCOL.md 4)."""
        if only is None and await self._revoked(session):
            raise ProtocolError(Code.UNAUTHORIZED, "this token was revoked", fatal=True)
        if only is not None and (message["type"] != "enter" or message["tournament"] != only):
            raise ProtocolError(Code.UNAUTHORIZED, f"this credential only enters "
                                f"tournament {only}", fatal=True)
        if message["type"] == "revoke":
            await self._revoke(ws, peer, message["name"])
        elif message["type"] == "watch":
            await watch(ws, session, peer, message, self.host.running,
                        revoked=lambda: self._revoked(session))
        elif message["type"] == "enter":
            await self.entrants.enter(ws, session, peer, message)
        elif message["type"] == "submit":
            await self._submit(ws, session, peer, message)
        elif self._guest(session) and self._guests.total() >= self._guests_most():
            await refuse(ws, peer, OverBudget(
                "guests_share", f"over budget: guests play {self._guests_most()} games "
                "already, their share of the server's; try again later"))
        elif not self._may_play(session):
            limits = self.settings.connections
            if self._guest(session):
                await refuse(ws, peer, OverBudget(
                    "guest_games", f"over budget: this address plays {limits.guest_games} "
                    "games already as a guest"))
            else:
                await refuse(ws, peer, OverBudget(
                    "games_per_token", f"over budget: this token plays "
                    f"{limits.games_per_token} games already"))
        else:
            with self._games_of.hold(session.account), self._guests.hold(
                    session.account if self._guest(session) else None):
                if message["type"] == "challenge":
                    await self._challenge(ws, session, peer, message)
                elif message["type"] == "create":
                    await self.open_games.create(ws, session, peer, message)
                else:
                    await self.open_games.join(ws, session, peer, message)

    async def _revoked(self, session: ServerSession) -> bool:
        """Whether the session's token was revoked since its hello (a play ticket's
        session stops with the token it was minted for; a guest has none to revoke)."""
        checked = (self.credentials.parent(session.token_digest)
                   if session.token_digest is not None else None)
        if checked is None:
            return False
        return await self.lanes.records.index(Store.token_account, checked) is None

    async def _revoke(self, ws: Connection, peer: PeerLog, name: str) -> None:
        """An admin revokes a token over the network (PROTOCOL.md 3.1)."""
        if await self.lanes.records.index(Store.revoke_token, name):
            peer.info("revoked the token of %r", name, extra={"revoked": name})
            await ws.send(encode(build.revoked(name)))
        else:
            await refuse(ws, peer, ProtocolError(Code.NOT_FOUND, f"no token named {name!r}"))

    async def _submit(self, ws: Connection, session: ServerSession, peer: PeerLog,
                      message: Submit) -> None:
        """A file for the competition (PROTOCOL.md 4.2): refused at once when there is
        none of that name or the session has no token's account; else the competition
        refuses it at once (closed, too large, the token's disk over its budget...) or
        checks it (in its own workers, never on this loop), and the answer is sent."""
        door = self.submissions
        named = message["competition"]
        if door is None or (named is not None and named != door.name):
            await refuse(ws, peer, ProtocolError(
                Code.NOT_FOUND, "no competition here" if door is None else
                f"no competition named {named!r} here (this server runs {door.name!r})"))
            return
        if session.account is None or self._guest(session):
            # (not fatal, PROTOCOL.md 4.2: the session may still play as a guest)
            await refuse(ws, peer, ProtocolError(Code.UNAUTHORIZED, "submitting needs a "
                                                 "token of your own", fatal=False))
            return
        try:
            answer = await door.submit(session.account, message, self.host.disk)
        except ProtocolError as exc:
            await refuse(ws, peer, exc)
            return
        peer.info("submitted %s v%s to %s: %s", message["agent"], answer["version"],
                  door.name, answer["verdict"], extra={
                      "competition": door.name, "version": answer["version"],
                      "verdict": answer["verdict"], "reason": answer["reason"]})
        await ws.send(encode(answer))

    def _may_play(self, session: ServerSession) -> bool:
        """Whether the session's token may start one more game (anonymous sessions are
        held to the per-token limit by their connections only)."""
        limits = self.settings.connections
        most = limits.guest_games if self._guest(session) else limits.games_per_token
        return session.account is None or self._games_of[session.account] < most

    def _guests_most(self) -> int:
        """The games all guests together may play at once: :data:`GUESTS_SHARE` of
        ``max_games`` (at least one), so that guests from many addresses (one IPv6
        network's worth of them is one guest: :func:`.admission.guest_network`) never
        hold every game slot."""
        return max(1, int(self.settings.budgets.max_games * GUESTS_SHARE))

    def _guest(self, session: ServerSession) -> bool:
        """Whether the session plays on a guest's ticket (public play, by address)."""
        ticket = self.credentials.redeemed.get(session.token_digest or "")
        return ticket is not None and ticket.guest

    async def _challenge(self, ws: Connection, session: ServerSession, peer: PeerLog,
                         message: Challenge) -> None:
        """A game against one of the server's agents."""
        registry: Any = ADVERSARIES if session.role == "learner" else LEARNERS
        admitted = await self.host.admit(ws, peer, message, registry)
        if admitted is None:
            return
        game, opponent = admitted
        seed = message["seed"] if message["seed"] is not None else secrets.randbits(32)
        timing = self.settings.for_player(session.capabilities)  # (a person's deadlines)
        if session.role == "learner":
            learner = RemoteLearner(ws, session, timing)
            await self.host.run(game, seed, learner, opponent, [(ws, session, learner)],
                                hosting=True)
        else:
            adversary = RemoteAdversary(ws, session, timing)
            await self.host.run(game, seed, opponent, adversary, [(ws, session, adversary)],
                                hosting=True)
