"""How two remote players meet (PROTOCOL.md 4): a game one creates and another joins
(:class:`OpenGames`), and the entrants of a tournament, whose games the tournament
plays on their connections (:class:`Entrants`).

Either holds a connection in the lobby meanwhile; the games themselves are the
:class:`~.hosting.GameHost`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

from websockets.exceptions import ConnectionClosed

from littlestone.games.errors import ProtocolError
from littlestone.games.game import GameSpec
from littlestone.protocol import build
from littlestone.protocol.codec import encode
from littlestone.protocol.errors import Code
from littlestone.protocol.session import ServerSession
from littlestone.protocol.wire import Create, Enter, Join
from littlestone.server.net.admission import Credentials
from littlestone.server.net.hosting import GameHost
from littlestone.server.net.peers import PeerLog, refuse
from littlestone.server.net.players import RemoteAdversary, RemoteLearner, RemotePlayer
from littlestone.server.records.store import new_game_id
from littlestone.transport import Connection

__all__ = ["Entrant", "Entrants", "OpenGame", "OpenGames"]

log = logging.getLogger(__name__)


@dataclass
class OpenGame:
    """A game created and waiting for its second player."""

    game: GameSpec
    seed: int
    ws: Connection
    session: ServerSession
    #: Set when the game has been played (or the server stops).
    played: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())


class OpenGames:
    """``create`` and ``join``: a game between two remote agents."""

    def __init__(self, host: GameHost, expiry_s: float) -> None:
        self.host, self.expiry_s = host, expiry_s
        #: Games created and waiting for their second player, by id.
        self.games: dict[str, OpenGame] = {}

    async def create(self, ws: Connection, session: ServerSession, peer: PeerLog,
                     message: Create) -> None:
        """Open a game for another remote agent to join; wait until it is played."""
        admitted = await self.host.admit(ws, peer, message, None)
        if admitted is None:
            return
        game, _ = admitted
        game_id = new_game_id()
        seed = message["seed"] if message["seed"] is not None else secrets.randbits(32)
        opened = self.games[game_id] = OpenGame(game, seed, ws, session)
        self.host.reserved.add(game_id)
        await ws.send(encode(build.created(game_id)))
        peer.info("created game %s: waiting for its second player", game_id,
                  extra={"game_id": game_id})
        try:
            await asyncio.wait((opened.played, ws.closed), timeout=self.expiry_s,
                               return_when=asyncio.FIRST_COMPLETED)
            if self._close(game_id):  # nobody joined: it expires
                if not opened.played.done() and not ws.closed.done():
                    await refuse(ws, peer, ProtocolError(
                        Code.TIMEOUT, f"no player joined game {game_id} within "
                        f"{self.expiry_s:g} s: it has expired"))
                else:
                    peer.info("created game %s is gone: its creator left", game_id,
                              extra={"game_id": game_id})
                return
            await opened.played  # the joiner's connection runs the game, for both
        finally:
            self._close(game_id)

    def _close(self, game_id: str) -> bool:
        """The game is no longer open (it is joined, or expires); False if it was not."""
        self.host.reserved.discard(game_id)
        return self.games.pop(game_id, None) is not None

    async def join(self, ws: Connection, session: ServerSession, peer: PeerLog,
                   message: Join) -> None:
        opened = self.games.get(message["game_id"])
        if opened is None:
            await refuse(ws, peer, ProtocolError(Code.NOT_FOUND, "no open game with id "
                                                 f"{message['game_id']!r}"))
            return
        if opened.session.role == session.role:
            await refuse(ws, peer, ProtocolError(Code.UNSUPPORTED_GAME, f"that game already "
                                                 f"has a {session.role}"))
            return
        try:
            self.host.check_person(session, opened.game)
        except ProtocolError as exc:
            await refuse(ws, peer, exc)
            return
        self._close(message["game_id"])  # (no await until the game runs: its slot holds)
        players = {session.role: (ws, session), opened.session.role: (opened.ws, opened.session)}
        settings = self.host.settings  # (each player timed as it said it is: a person?)
        learner = RemoteLearner(*players["learner"],
                                settings.for_player(players["learner"][1].capabilities))
        adversary = RemoteAdversary(*players["adversary"],
                                    settings.for_player(players["adversary"][1].capabilities))
        try:
            await self.host.run(opened.game, opened.seed, learner, adversary,
                                [(*players["learner"], learner),
                                 (*players["adversary"], adversary)],
                                game_id=message["game_id"])
        finally:
            if not opened.played.done():
                opened.played.set_result(None)

    def close(self) -> None:
        """The server stops: every open game is over."""
        for opened in self.games.values():
            if not opened.played.done():
                opened.played.set_result(None)
        for game_id in list(self.games):
            self._close(game_id)


@dataclass
class Entrant:
    """A tournament's entrant: its connection, waiting for its games."""

    ws: Connection
    session: ServerSession
    #: Set when the tournament has no more games for it (it is then told ``done``).
    finished: asyncio.Future[None]


class Entrants:
    """Remote agents entered in the tournaments a server runs (PROTOCOL.md 4.4), by
    (tournament, account): the tournament plays their games."""

    def __init__(self, host: GameHost, credentials: Credentials) -> None:
        self.host, self.credentials = host, credentials
        self.entrants: dict[tuple[str, str], Entrant] = {}
        #: The tournaments this server runs, whose entrants may ``enter`` (a tournament's
        #: arena adds its own; a plain ``serve`` runs none, and says so at once).
        self.tournaments: set[str] = set()

    def grant(self, tournament: str, account: str) -> str:
        """A one-time credential (:meth:`.admission.Credentials.grant`): this server then
        runs ``tournament``."""
        self.tournaments.add(tournament)
        log.debug("a one-time credential for %s in tournament %s", account, tournament,
                  extra={"token_name": account, "tournament": tournament})
        return self.credentials.grant(tournament, account)

    async def enter(self, ws: Connection, session: ServerSession, peer: PeerLog,
                    message: Enter) -> None:
        """A remote agent enters a tournament under its token's name and plays the games
        the tournament gives it, one after another, until ``done``."""
        tournament = message["tournament"]
        if session.account is None:
            raise ProtocolError(Code.UNAUTHORIZED, "entering a tournament needs a token: the "
                                "token's name is the entrant")
        if tournament not in self.tournaments:
            await refuse(ws, peer, ProtocolError(Code.NOT_FOUND, (
                f"no tournament {tournament!r} runs on this server"
                + (f" (it runs {', '.join(sorted(self.tournaments))})" if self.tournaments
                   else ": start one with littlestone tournament CONFIG.toml, which "
                   "announces its own address"))))
            return
        key = (tournament, session.account)
        entrant = self.entrants[key] = Entrant(
            ws, session, asyncio.get_running_loop().create_future())
        await ws.send(encode(build.entered(tournament)))
        peer.info("entered tournament %s", tournament, extra={"tournament": tournament})
        try:
            await entrant.finished  # the tournament drives this connection's games meanwhile
        finally:
            self.entrants.pop(key, None)
        with contextlib.suppress(ConnectionClosed):
            await ws.send(encode(build.done(tournament)))

    def role(self, tournament: str, account: str) -> str | None:
        """The role of a connected entrant, or ``None``."""
        entrant = self.entrants.get((tournament, account))
        return entrant.session.role if entrant is not None else None

    async def play_one(self, tournament: str, account: str, game: GameSpec, seed: int,
                       opponent: Any) -> str | None:
        """Play one tournament game on an entrant's connection; returns the game id."""
        entrant = self.entrants.get((tournament, account))
        if entrant is None:
            return None
        ws, session = entrant.ws, entrant.session
        game_id = new_game_id()
        settings = self.host.settings
        if session.role == "learner":
            remote: RemotePlayer = RemoteLearner(ws, session, settings)
            await self.host.run(game, seed, remote, opponent, [(ws, session, remote)], game_id)
        else:
            remote = RemoteAdversary(ws, session, settings)
            await self.host.run(game, seed, opponent, remote, [(ws, session, remote)], game_id)
        return game_id

    async def play_two(self, tournament: str, learner: str, adversary: str, game: GameSpec,
                       seed: int) -> str | None:
        """Play one tournament game between two entrants (two submissions); returns the
        game id, or None when either is not connected in its role."""
        one, two = (self.entrants.get((tournament, learner)),
                    self.entrants.get((tournament, adversary)))
        if (one is None or two is None or one.session.role != "learner"
                or two.session.role != "adversary"):
            return None
        game_id = new_game_id()
        remote_learner = RemoteLearner(one.ws, one.session, self.host.settings)
        remote_adversary = RemoteAdversary(two.ws, two.session, self.host.settings)
        await self.host.run(game, seed, remote_learner, remote_adversary,
                            [(one.ws, one.session, remote_learner),
                             (two.ws, two.session, remote_adversary)], game_id)
        return game_id

    def release_one(self, tournament: str, account: str) -> None:
        """This entrant's games are over: it is told ``done``."""
        entrant = self.entrants.get((tournament, account))
        if entrant is not None and not entrant.finished.done():
            entrant.finished.set_result(None)

    async def release(self, tournament: str) -> None:
        """The tournament is over: every entrant is told ``done`` (waits until told)."""
        for (name, _), entrant in list(self.entrants.items()):
            if name == tournament and not entrant.finished.done():
                entrant.finished.set_result(None)
        for _ in range(100):
            if not any(name == tournament for name, _ in self.entrants):
                return
            await asyncio.sleep(0.01)

    def close(self) -> None:
        """The server stops: every entrant is told ``done``."""
        for entrant in list(self.entrants.values()):
            if not entrant.finished.done():
                entrant.finished.set_result(None)
