"""The games a server referees: admitted within its budgets, played through
:func:`.driver.run_game`, logged and indexed as ``play`` does
(:mod:`littlestone.server.records`), broadcast to their spectators (:mod:`.spectators`).

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
from typing import Any

from websockets.exceptions import ConnectionClosed

from littlestone.games.agents import Registry
from littlestone.games.game import EXPERTS, GameResult, GameSeeds, GameSpec, game_seeds, secret_key
from littlestone.protocol.codec import encode
from littlestone.protocol.errors import ProtocolError
from littlestone.protocol.messages import rules_to_wire
from littlestone.protocol.session import ServerSession
from littlestone.server.net.driver import run_game
from littlestone.server.net.peers import OverBudget, PeerLog, refuse, shorten
from littlestone.server.net.players import RemoteLearner, RemotePlayer
from littlestone.server.net.policy import Opponents, Player, admit
from littlestone.server.net.settings import ServerSettings
from littlestone.server.net.spectators import Broadcast, wire_result
from littlestone.server.records.logged import agent_identity, game_info, log_footer, log_header
from littlestone.server.records.logs import LogWriter
from littlestone.server.records.store import Store, new_game_id
from littlestone.transport import Connection

__all__ = ["GameHost", "Remote"]

log = logging.getLogger(__name__)

#: A remote player of a game: its connection, its session and its side of the game.
Remote = tuple[Connection, ServerSession, RemotePlayer]


class GameHost:
    """The games of one server: running, being admitted, or open for a second player."""

    def __init__(self, settings: ServerSettings, store: Store) -> None:
        self.settings, self.store = settings, store
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

    @property
    def busy(self) -> int:
        """The game slots taken (``max_games``): running, open, being admitted."""
        return len(self.running) + len(self.reserved) + self._admitting

    async def admit(self, ws: Connection, peer: PeerLog, message: dict[str, Any],
                    registry: Registry[Any] | None) -> tuple[GameSpec, Player | None] | None:
        """The game (and server-side opponent) a peer asks for, within the budgets, built
        in a worker thread (a large class or exact Ldim never holds up the other games);
        None after telling the peer why not."""
        budgets = self.settings.budgets
        if self.busy >= budgets.max_games:
            await refuse(ws, peer, OverBudget("max_games", "over budget: the server "
                                              f"referees {budgets.max_games} games already"))
            return None
        opponent = message.get("opponent") if registry is not None else None
        self._admitting += 1  # a slot held from here until the game runs (no await between)
        try:
            return await asyncio.to_thread(admit, message["rules"], opponent, registry,
                                           budgets, self.opponents)
        except ProtocolError as exc:
            await refuse(ws, peer, exc)
            return None
        finally:
            self._admitting -= 1

    async def stop(self, timeout: float) -> None:
        """End every running game as ``aborted:shutdown`` (footer and index row written),
        waiting up to ``timeout`` seconds for them."""
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout)

    async def run(self, game: GameSpec, seed: int, learner: Any, adversary: Any,
                  remotes: list[Remote], game_id: str | None = None) -> None:
        """Play one game with its remote players: start, rounds, log, index, end. The
        game key is fresh and secret (docs/design.md 1.4): no player can derive the
        referee's coin or the other player's seed from the game seed or its own."""
        game_id = game_id or new_game_id()
        seeds = game_seeds(seed, secret_key())
        header = log_header(game_id, "server", game, seeds, _identity(learner),
                            _identity(adversary))
        path = self.settings.data / "games" / f"{game_id}.lslog"
        level = "none" if self.settings.log_level == "none" else "full"  # (moves: kept)
        learner_spec, adversary_spec = header["learner"]["spec"], header["adversary"]["spec"]
        info = game_info(game)
        self.store.start_game({**info, "learner": learner_spec, "adversary": adversary_spec,
                               "seed": seed, "horizon": game.rounds, "source": "server"},
                              log=None if level == "none" else str(path), game_id=game_id)
        writer = LogWriter(path, header, background=False, level=level)
        broadcast = writer.observer = Broadcast(game_id, rules_to_wire(game), learner_spec,
                                                adversary_spec)
        broadcast.accounts = {session.account for _, session, _ in remotes
                              if session.account is not None}
        players = {remote.role: (ws.address, session.account) for ws, session, remote in remotes}
        played_on = info.get("class") or (f"{game.experts} experts" if game.experts else None)
        log.info("game %s started: %s, %s%d rounds; learner %s%s, adversary %s%s", game_id,
                 game.game, f"{played_on}, " if played_on else "", game.rounds,
                 learner_spec, _who(players.get("learner")), adversary_spec,
                 _who(players.get("adversary")),
                 extra={"game_id": game_id, "game": game.game, "class": info.get("class"),
                        "experts": game.experts, "rounds": game.rounds, "seed": seed,
                        "learner": learner_spec, "adversary": adversary_spec,
                        **{f"{role}_{key}": value for role, (peer, account) in players.items()
                           for key, value in (("peer", peer), ("token_name", account))}})
        self.running[game_id] = broadcast
        started = asyncio.get_running_loop().time()
        status, scores = "aborted", dict[str, Any]()
        try:
            status, scores = await self._play(game, seeds, learner, adversary, remotes,
                                              game_id, writer)
        except asyncio.CancelledError:
            status = "aborted:shutdown"
            raise
        finally:
            del self.running[game_id]
            broadcast.finish("aborted", {})  # (the footer has ended it already, normally)
            _ended(game_id, game, status, scores, writer.rounds_written,
                   asyncio.get_running_loop().time() - started)

    async def _play(self, game: GameSpec, seeds: GameSeeds, learner: Any, adversary: Any,
                    remotes: list[Remote], game_id: str, writer: LogWriter
                    ) -> tuple[str, dict[str, Any]]:
        """The game itself: start (each player gets its own seed and SHA-256 of the game
        key), the rounds, the log's footer, the index row, end (with the key). Returns
        the game's status and scores."""
        for ws, session, remote in remotes:
            session.start_game()
            own = seeds.learner if remote.role == "learner" else seeds.adversary
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode({"type": "start", "game_id": game_id, "role": remote.role,
                                      "rules": rules_to_wire(game), "seed": own,
                                      "commitment": seeds.commitment}))
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            result = await run_game(game, seeds, learner, adversary, writer)
        except asyncio.CancelledError:
            self._abort(game_id, seeds, writer, "aborted:shutdown")
            raise
        except Exception:
            # a bug of the server's (or of an operator's agent): this game ends, with its
            # log's footer and its row; its players are told; the server goes on
            log.exception("internal error in game %s: it ends aborted:internal", game_id,
                          extra={"game_id": game_id})
            self._abort(game_id, seeds, writer, "aborted:internal")
            for ws, session, _ in remotes:
                session.end_game()
                with contextlib.suppress(ConnectionClosed):
                    await ws.send(encode({"type": "end", "status": "aborted:internal",
                                          "result": {}, "game_id": game_id, "key": seeds.key}))
            return "aborted:internal", {}
        finally:
            self.tasks.discard(task)
        _faults(game_id, result)
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
        return result.status, scores

    def _abort(self, game_id: str, seeds: GameSeeds, writer: LogWriter, status: str) -> None:
        writer.close(log_footer(seeds, None, status))
        self.store.finish_game(game_id, {"status": status, "rounds": writer.rounds_written},
                               chain=writer.chain)


def _identity(player: Any) -> dict[str, Any]:
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


def _ended(game_id: str, game: GameSpec, status: str, scores: dict[str, Any], rounds: int,
           seconds: float) -> None:
    """Log a game's end: its status, rounds and scores."""
    rounds = int(scores.get("rounds", rounds))
    score: dict[str, Any] = {}
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
