"""The games a server referees: admitted within its budgets, played through
:func:`.driver.run_game`, logged and indexed as ``play`` does
(:mod:`littlestone.server.records`), broadcast to their spectators (:mod:`.spectators`).

Each kind of work has its lane (:mod:`.lanes`): admissions, the index. A server-side
agent a peer challenges that thinks long (``slow_moves``) is set up and played in a
process of its own (:mod:`.hosts`), held to the set-up's and each move's CPU seconds and
to the game's memory, and killed when the game ends or its peer leaves. A game holds
its estimated disk from its start to its end (:mod:`.disk`); a log that cannot be
written (a full disk) ends its game ``aborted:storage``, its row finished (or, while
the index cannot be written either, as soon as it can), and new games are refused
``unavailable`` until the disk has room again.

The operator's log says of each game that it started (its rules and players), every
fault a remote player made (its role, code and round), and that it ended (its status,
rounds, mistakes or loss, regret and seconds); an internal error ends its game
``aborted:internal``, logged with its traceback, never sent to a peer. The game key is
never logged: a player could derive the coins from it before the end (docs/design.md
1.4).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from typing import Any

from websockets.exceptions import ConnectionClosed

from littlestone.games.agents import Registry
from littlestone.games.errors import (
    HostGone,
    LogWriteError,
    MoveOverBudget,
    OverBudget,
    ProtocolError,
    Unavailable,
    UnsupportedGame,
)
from littlestone.games.game import (
    EXPERTS,
    GameResult,
    GameSeeds,
    GameSpec,
    ResultFields,
    game_seeds,
    secret_key,
)
from littlestone.protocol import build
from littlestone.protocol.codec import encode
from littlestone.protocol.errors import Code
from littlestone.protocol.messages import rules_to_wire
from littlestone.protocol.session import ServerSession
from littlestone.protocol.wire import Challenge, Create
from littlestone.server.net.disk import FULL_CHECK_S, DiskLedger, Hold
from littlestone.server.net.driver import run_game
from littlestone.server.net.hosts import AgentHost, HostLimits, hosted
from littlestone.server.net.lanes import Lanes
from littlestone.server.net.peers import PeerLog, refuse, shorten
from littlestone.server.net.players import RemoteLearner, RemotePlayer
from littlestone.server.net.policy import Opponents, Player, admit, game_disk
from littlestone.server.net.settings import HUMAN, ServerSettings
from littlestone.server.net.spectators import Broadcast, wire_result
from littlestone.server.records.logged import GameRecording, agent_identity
from littlestone.server.records.rows import AgentIdentity
from littlestone.server.records.store import STORAGE_STATUS, Store, new_game_id
from littlestone.transport import Connection

__all__ = ["GameHost", "Remote"]

log = logging.getLogger(__name__)

#: A remote player of a game: its connection, its session and its side of the game.
Remote = tuple[Connection, ServerSession, RemotePlayer]


class GameHost:
    """The games of one server: running, being admitted, or open for a second player."""

    def __init__(self, settings: ServerSettings, store: Store, lanes: Lanes) -> None:
        self.settings, self.store, self.lanes = settings, store, lanes
        #: The agents a peer may name as its opponent.
        self.opponents = Opponents(dict(settings.agents))
        #: Games this server referees now, by id, as their spectators see them.
        self.running: dict[str, Broadcast] = {}
        #: Games created and waiting for their second player: each holds a game's slot.
        self.reserved: set[str] = set()
        #: The tasks playing games now (:meth:`stop` cancels them).
        self.tasks: set[asyncio.Task[Any]] = set()
        #: Games being admitted (their class built in a worker thread): they hold a slot.
        self._admitting = 0
        #: The disk the games hold and may take (:mod:`.disk`).
        self.disk = DiskLedger(settings.data, settings.budgets)
        budgets = settings.budgets
        #: What a server-side agent in a process of its own may spend (:mod:`.hosts`).
        self.host_limits = HostLimits(budgets.setup_cpu_s, budgets.move_cpu_s,
                                      budgets.game_memory_mb << 20,
                                      budgets.solver_memory_mb << 20, budgets.game_cpu_s)
        #: The processes of the hosted agents playing now.
        self.hosts: set[AgentHost] = set()
        #: Games whose rows the index could not finish (a full disk), by id; finished as
        #: soon as it can (:meth:`watch_disk`).
        self.unfinished: dict[str, GameRecording] = {}

    @property
    def busy(self) -> int:
        """The game slots taken (``max_games``): running, open, being admitted."""
        return len(self.running) + len(self.reserved) + self._admitting

    async def admit(self, ws: Connection, peer: PeerLog, message: Challenge | Create,
                    registry: Registry[Any] | None) -> tuple[GameSpec, Player | None] | None:
        """The game (and server-side opponent) a peer asks for, within the budgets, built
        in the admissions' lane (a large class never holds up the other games, and no
        agent's move holds up an admission); None after telling the peer why not."""
        budgets = self.settings.budgets
        if self.busy >= budgets.max_games:
            await refuse(ws, peer, OverBudget("max_games", "over budget: the server "
                                              f"referees {budgets.max_games} games already"))
            return None
        if self.disk.full is not None:
            await refuse(ws, peer, Unavailable(f"unavailable: {self.disk.full}; try again "
                                               "later"))
            return None
        opponent = message.get("opponent") if registry is not None else None
        self._admitting += 1  # a slot held from here until the game runs (no await between)
        try:
            game, agent = await self.lanes.admission.run(
                admit, message["rules"], opponent, registry, budgets, self.opponents)
            if peer.session is not None:
                self.check_person(peer.session, game)
            account = peer.session.account if peer.session is not None else None
            self.disk.check([account] if account is not None else [], game_disk(game))
            return game, agent
        except ProtocolError as exc:
            await refuse(ws, peer, exc)
            return None
        finally:
            self._admitting -= 1

    def check_person(self, session: ServerSession, game: GameSpec) -> None:
        """OverBudget if a session that said it is a person (capability ``human``: long
        deadlines) asks for, or joins, a game of more rounds than a person plays
        (:attr:`~.settings.ServerSettings.human_max_rounds`)."""
        most = self.settings.human_max_rounds
        if HUMAN in session.capabilities and game.rounds > most:
            raise OverBudget("human_max_rounds", f"over budget: {game.rounds} rounds, over "
                             f"the {most} a person plays (its moves have "
                             f"{self.settings.human_move_deadline:g} s each)")

    async def stop(self, timeout: float) -> None:
        """End every running game as ``aborted:shutdown`` (footer and index row written),
        waiting up to ``timeout`` seconds for them."""
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout)
        for host in list(self.hosts):
            host.kill()

    async def run(self, game: GameSpec, seed: int, learner: Any, adversary: Any,
                  remotes: list[Remote], game_id: str | None = None,
                  hosting: bool = False) -> None:
        """Play one game with its remote players: start, rounds, log, index, end. The
        game key is fresh and secret (docs/design.md 1.4): no player can derive the
        referee's coin or the other player's seed from the game seed or its own. With
        ``hosting`` (a peer's challenge), a server-side agent that thinks long plays in
        a process of its own (:mod:`.hosts`)."""
        game_id = game_id or new_game_id()
        accounts = [session.account for _, session, _ in remotes if session.account is not None]
        try:
            hold = self.disk.hold(game_id, accounts, game_disk(game))
        except ProtocolError as error:
            await _refuse_all(remotes, error)
            return
        hosts: list[AgentHost] = []
        try:
            await self._run(game_id, game, seed, learner, adversary, remotes, hold,
                            hosts if hosting else None)
        finally:
            for host in hosts:
                host.kill()
                self.hosts.discard(host)
                for ws, _, _ in remotes:
                    ws.closed.remove_done_callback(host.on_closed)
            self.disk.release(hold)
            if hold.written and hold.accounts:
                with contextlib.suppress(Exception):  # (a full index: the quota forgets it)
                    await self.lanes.records.index(Store.charge_disk, game_id, hold.accounts,
                                                   hold.written)

    async def _run(self, game_id: str, game: GameSpec, seed: int, learner: Any, adversary: Any,
                   remotes: list[Remote], hold: Hold, hosts: list[AgentHost] | None) -> None:
        seeds = game_seeds(seed, secret_key())
        level = "none" if self.settings.log_level == "none" else "full"  # (moves: kept)
        recording = GameRecording(self.settings.data, game, seeds, seed, _identity(learner),
                                  _identity(adversary), "server", level, game_id)
        if hosts is not None:
            placed = await self._place(game, seeds, learner, adversary, remotes, hosts)
            if placed is None:
                return
            learner, adversary = placed
        learner_spec, adversary_spec = recording.start["learner"], recording.start["adversary"]
        try:
            writer = recording.open()
        except LogWriteError as exc:
            self.disk.failed(exc)
            await _refuse_all(remotes, Unavailable(f"unavailable: {self.disk.full}; try "
                                                   "again later"))
            return
        hold.writer = writer
        try:
            await self.lanes.records.index(recording.index_start)
        except sqlite3.OperationalError as exc:
            with contextlib.suppress(OSError):
                recording.discard()
            if not _full(exc):
                raise
            self.disk.failed(exc)
            await _refuse_all(remotes, Unavailable(f"unavailable: {self.disk.full}; try "
                                                   "again later"))
            return
        broadcast = writer.observer = Broadcast(game_id, rules_to_wire(game), learner_spec,
                                                adversary_spec)
        broadcast.accounts = {session.account for _, session, _ in remotes
                              if session.account is not None}
        players = {remote.role: (ws.address, session.account) for ws, session, remote in remotes}
        played_on = recording.start.get("class") or (f"{game.experts} experts"
                                                     if game.experts else None)
        log.info("game %s started: %s, %s%d rounds; learner %s%s, adversary %s%s", game_id,
                 game.game, f"{played_on}, " if played_on else "", game.rounds,
                 learner_spec, _who(players.get("learner")), adversary_spec,
                 _who(players.get("adversary")),
                 extra={"game_id": game_id, "game": game.game,
                        "class": recording.start.get("class"),
                        "experts": game.experts, "rounds": game.rounds, "seed": seed,
                        "learner": learner_spec, "adversary": adversary_spec,
                        **{f"{role}_{key}": value for role, (peer, account) in players.items()
                           for key, value in (("peer", peer), ("token_name", account))}})
        self.running[game_id] = broadcast
        started = asyncio.get_running_loop().time()
        status, scores = "aborted", ResultFields()
        try:
            status, scores = await self._play(game, learner, adversary, remotes, recording)
        except asyncio.CancelledError:
            status = "aborted:shutdown"
            raise
        finally:
            del self.running[game_id]
            broadcast.finish("aborted", {})  # (the footer has ended it already, normally)
            _ended(game_id, game, status, scores, writer.rounds_written,
                   asyncio.get_running_loop().time() - started)

    async def _place(self, game: GameSpec, seeds: GameSeeds, learner: Any, adversary: Any,
                     remotes: list[Remote], hosts: list[AgentHost]) -> tuple[Any, Any] | None:
        """Set the server-side agents that think long (or play a large class) up in
        processes of their own (:func:`.hosts.hosted`), each within the set-up's CPU
        seconds and the game's memory, each killed as soon as a remote player leaves;
        None after telling the players why the game cannot start."""
        placed = []
        for agent, own in ((learner, seeds.learner), (adversary, seeds.adversary)):
            if not hosted(agent, game):
                placed.append(agent)
                continue
            host = await self.lanes.hosts.run(AgentHost.open, self.host_limits)
            hosts.append(host)
            self.hosts.add(host)
            for ws, _, _ in remotes:  # a game whose peer left stops its work at once
                ws.closed.add_done_callback(host.on_closed)
            try:
                placed.append(await host.set_up(agent, game, own))
            except MoveOverBudget as exc:
                await _refuse_all(remotes, OverBudget("setup_cpu_s", f"{agent.spec}: {exc}"))
                return None
            except UnsupportedGame as exc:
                await _refuse_all(remotes, ProtocolError(Code.UNSUPPORTED_GAME, str(exc)))
                return None
            except HostGone as exc:
                await _refuse_all(remotes, OverBudget("setup_cpu_s", f"over budget: "
                                                      f"{agent.spec}'s set-up failed: {exc}"))
                return None
        return placed[0], placed[1]

    async def _play(self, game: GameSpec, learner: Any, adversary: Any, remotes: list[Remote],
                    recording: GameRecording) -> tuple[str, ResultFields]:
        """The game itself: start (each player gets its own seed and SHA-256 of the game
        key), the rounds, the log's footer, the index row, end (with the key). Returns
        the game's status and scores. A game cut short ends as
        :meth:`~littlestone.server.records.logged.GameRecording.cut_short` says: its row
        finished on the event loop at a shutdown (which cannot wait for a lane), its
        players told otherwise."""
        game_id, seeds = recording.game_id, recording.seeds
        for ws, session, remote in remotes:
            session.start_game()
            own = seeds.learner if remote.role == "learner" else seeds.adversary
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode(build.start(game_id, remote.role, rules_to_wire(game),
                                                 own, seeds.commitment)))
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            result = await run_game(game, seeds, learner, adversary, recording.writer)
            recording.end(result)
        except (asyncio.CancelledError, Exception) as error:
            status = recording.cut_short(error)
            if recording.write_error is not None:
                self.disk.failed(recording.write_error)
            if isinstance(error, asyncio.CancelledError):
                with contextlib.suppress(sqlite3.Error):
                    recording.index_end(self.store)
                raise
            if status == STORAGE_STATUS:
                log.warning("game %s: its log cannot be written (%s): it ends %s", game_id,
                            error, status, extra={"game_id": game_id, "status": status})
                await self._finish(recording)
            else:
                # a bug of the server's (or of an operator's agent): this game ends, with
                # its log's footer and its row; its players are told; the server goes on
                log.exception("internal error in game %s: it ends %s", game_id, status,
                              extra={"game_id": game_id})
                recording.index_end(self.store)
            await _tell_end(remotes, game_id, status, seeds.key)
            assert recording.outcome is not None  # (cut short: its row's end is known)
            return status, recording.outcome[0]
        finally:
            self.tasks.discard(task)
        _faults(game_id, result)
        scores = result.to_dict()
        await self._finish(recording)  # the log's anchor
        for ws, session, remote in remotes:
            session.end_game()
            end = build.end(result.status, wire_result(scores), game_id, seeds.key)
            if isinstance(remote, RemoteLearner) and remote.pending is not None:
                end["label" if game.game != EXPERTS else "outcome"] = remote.pending
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode(end))
        return result.status, scores

    async def _finish(self, recording: GameRecording) -> None:
        """Finish a game's row; while the index cannot be written (a full disk), keep it
        to finish as soon as it can (:meth:`watch_disk`)."""
        try:
            await self.lanes.records.index(recording.index_end)
        except sqlite3.OperationalError as exc:
            if not _full(exc):
                raise
            self.disk.failed(exc)
            self.unfinished[recording.game_id] = recording

    async def watch_disk(self) -> None:
        """While the server runs: every :data:`.disk.FULL_CHECK_S`, a full disk that has
        room again is in use again, and the rows the index could not finish are."""
        while True:
            await asyncio.sleep(FULL_CHECK_S)
            if self.disk.full is not None:
                await self.lanes.records.run(self.disk.recovered)
            for game_id, recording in list(self.unfinished.items()):
                try:
                    await self.lanes.records.index(recording.index_end)
                except sqlite3.OperationalError:
                    break
                del self.unfinished[game_id]


def _full(error: sqlite3.OperationalError) -> bool:
    """Whether SQLite failed for want of disk (``database or disk is full``, or a
    write the file system refused)."""
    text = str(error).lower()
    return "full" in text or "disk i/o" in text


async def _refuse_all(remotes: list[Remote], error: ProtocolError) -> None:
    """Tell each remote player why its game does not start (it stays in the lobby)."""
    for ws, session, _ in remotes:
        peer = PeerLog(log, ws.address, session)
        with contextlib.suppress(ConnectionClosed):
            await refuse(ws, peer, error)


async def _tell_end(remotes: list[Remote], game_id: str, status: str, key: bytes) -> None:
    """Tell each remote player its game ended ``status`` (with no result)."""
    for ws, session, _ in remotes:
        session.end_game()
        with contextlib.suppress(ConnectionClosed):
            await ws.send(encode(build.end(status, {}, game_id, key)))


def _identity(player: Any) -> AgentIdentity:
    if isinstance(player, RemotePlayer):
        return {"spec": f"remote:{player.session.agent}",
                "account": player.session.account, "sha256": "remote"}
    return agent_identity(player)


def _who(player: tuple[str, str | None] | None) -> str:
    """`` (alice from 10.0.0.7)`` of a remote player; nothing of a server-side one."""
    if player is None:
        return ""
    peer, account = player
    return f" ({account or 'anonymous'} from {peer})"


def _faults(game_id: str, result: GameResult) -> None:
    """Log the remote players' faults (PROTOCOL.md 6), as the driver recorded them."""
    for fault in result.extra.get("faults", ()):
        t = fault.get("t")
        log.info("game %s: fault of the %s%s: %s: %s", game_id, fault.get("role"),
                 f" in round {t}" if t is not None else "", fault.get("code"),
                 shorten(str(fault.get("message", ""))),
                 extra={"game_id": game_id, "role": fault.get("role"),
                        "code": fault.get("code"), "round": t})


def _ended(game_id: str, game: GameSpec, status: str, scores: ResultFields, rounds: int,
           seconds: float) -> None:
    """Log a game's end: its status, rounds and scores."""
    rounds = int(scores.get("rounds", rounds))
    score: dict[str, float] = {}
    if "mistakes" in scores:
        score["loss" if game.game == EXPERTS else "mistakes"] = scores["mistakes"]
    if "regret" in scores:
        score["regret"] = scores["regret"]
    shown = "".join(f", {k} {v:.6g}" if isinstance(v, float) else f", {k} {v}"
                    for k, v in score.items())
    log.info("game %s ended: %s after %d rounds%s; %.3g s", game_id, status, rounds, shown,
             seconds, extra={"game_id": game_id, "status": status, "rounds": rounds,
                             **score, "seconds": round(seconds, 3),
                             "faults": len(scores.get("faults", ()))})
