"""The WebSocket game server and the remote-agent client (PROTOCOL.md).

The server drives the same referees as the local driver, with one player (or both)
behind a connection: :func:`run_game` is the local driver's loop written with awaits,
and :class:`RemoteLearner` / :class:`RemoteAdversary` turn protocol messages into moves,
applying the fault ladder (PROTOCOL.md 6). Every game is logged and indexed as ``play``
does (server.logs, server.store), and can be watched (server.spectators). Connections
are server.transport's. Against an oblivious built-in adversary a remote learner's
rounds are queued in blocks and answered from the connection's callback
(:class:`_FastRounds`); anything unusual goes the round-by-round way.

The client side, :func:`play_remote`, runs a local agent (built-in or from a file)
against a server-side opponent and returns ``play``'s JSON keys (a learner answers from
the connection's callback too: :class:`_Answering`); :func:`watch_remote` follows a
game as a spectator.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import signal
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from websockets.exceptions import ConnectionClosed

import adversaries as _adversaries  # noqa: F401 - registers the built-in adversaries
import learners as _learners  # noqa: F401 - registers the built-in learners
from adversaries.base import ADVERSARIES, Adversary
from games.classes import FiniteClass
from games.errors import IllegalMove, LittlestoneError, MoveError, SpecError, UnsupportedGame
from games.experts import ExpertsReferee
from games.experts import Phase as ExpertsPhase
from games.game import EXPERTS, GameResult, GameSpec, game_seeds
from games.mistake_bound import MistakeBoundReferee, Phase, check_label, check_probability
from learners.base import LEARNERS, Learner
from protocol.codec import DEFAULT_LIMITS, Limits, decode, encode
from protocol.errors import CLOSE_CODES, Code, ProtocolError
from protocol.messages import (
    PROTOCOL_VERSION,
    check,
    instance_from_wire,
    instance_to_wire,
    instances_to_wire,
    rules_from_wire,
    rules_to_wire,
    vector_from_wire,
    vector_to_wire,
)
from protocol.session import ServerSession
from server.local import history_for
from server.logged import agent_identity, game_info, package_version
from server.logs import LogWriter
from server.spectators import Broadcast, wire_result
from server.store import Store, new_game_id, utc_now
from server.transport import Connection, Deadline, Server, connect, serve

__all__ = ["FAULTS_TO_FORFEIT", "GameServer", "ServerSettings", "play_remote", "run_game",
           "watch_remote"]

log = logging.getLogger("littlestone.server")

#: What the client accepts from a server (it trusts the server's sizes and nesting).
CLIENT_LIMITS = Limits(max_frame=1 << 30, max_depth=None)
#: The fault that forfeits a game (PROTOCOL.md 6).
FAULTS_TO_FORFEIT = 3
HANDSHAKE_TIMEOUT_S = 10.0
#: Rounds an oblivious built-in adversary hands over at a time against a remote learner
#: (smaller than the local driver's blocks: a block's arrays live while its rounds
#: cross the network, and 2048-round blocks fragmented the heap by ~15 MiB).
REMOTE_BLOCK = 256


@dataclass(frozen=True)
class ServerSettings:
    """What ``littlestone serve`` is started with."""

    host: str = "127.0.0.1"
    port: int = 8765
    data: Path = Path("littlestone-data")
    anonymous: bool = False
    move_deadline: float = 10.0
    time_bank: float = 60.0
    limits: Limits = DEFAULT_LIMITS
    #: A TLS context (server.transport.server_tls): the server then speaks wss://.
    tls: ssl.SSLContext | None = None


class Forfeit(Exception):
    """A player reached the fault that forfeits the game."""

    def __init__(self, role: str, code: Code) -> None:
        super().__init__(f"{role} forfeits after {FAULTS_TO_FORFEIT} faults ({code.value})")
        self.role, self.code = role, code


class Disconnected(Exception):
    """A remote player went away mid-game."""

    def __init__(self, role: str) -> None:
        super().__init__(f"the {role} disconnected")
        self.role = role


# -- players behind a connection -----------------------------------------------------


class _Remote:
    """Receiving moves from a connection: deadlines, the time bank and the fault ladder."""

    def __init__(self, ws: Connection, session: ServerSession, settings: ServerSettings,
                 role: str) -> None:
        self.ws, self.session, self.settings, self.role = ws, session, settings, role
        self.faults: list[dict[str, Any]] = []
        self.bank = settings.time_bank

    async def send(self, message: dict[str, Any]) -> None:
        frame = encode(message)
        if self.ws.send_nowait(frame):
            return
        try:
            await self.ws.send(frame)
        except ConnectionClosed:
            raise Disconnected(self.role) from None

    async def fault(self, code: Code, message: str, t: int | None) -> None:
        self.faults.append({"t": t, "code": code.value, "message": message})
        with contextlib.suppress(Disconnected):
            await self.send(ProtocolError(code, message).to_message())
        if len(self.faults) >= FAULTS_TO_FORFEIT:
            raise Forfeit(self.role, code)

    #: Whether a fault ends the move (the round is scored against the player: a learner)
    #: or the move is asked again (an adversary: the round is not played without it).
    fault_ends_move = False

    async def receive(self, *kinds: str, t: int | None,
                      accept: Callable[[dict[str, Any]], Any],
                      started: float | None = None) -> Any:
        """The next acceptable move: ``accept`` turns a message into a move or raises
        IllegalMove/ProtocolError. Every bad or late message is a fault (a move for a round
        already decided is dropped); after a learner's fault :data:`FAULT` is returned.
        The clock runs from ``started`` (loop time; default now)."""
        self.session.expect(*kinds, t=t)
        ws = self.ws
        if started is None:  # a stale message does not restart the clock
            started = ws.loop.time()
        while True:
            try:
                frame = await ws.recv(self.deadline(started))
            except TimeoutError:
                self.bank = 0.0
                await self.fault(Code.TIMEOUT, f"no move within the deadline for round {t}", t)
                if self.fault_ends_move:
                    return FAULT
                started = ws.loop.time()
                continue
            except ConnectionClosed:
                raise Disconnected(self.role) from None
            try:
                move = accept(self.session.receive(frame))
            except ProtocolError as exc:
                if exc.fatal:
                    raise Disconnected(self.role) from None
                if exc.stale:
                    continue
                self._charge(started)
                await self.fault(exc.code, exc.message, t)
            except IllegalMove as exc:
                self._charge(started)
                await self.fault(Code.ILLEGAL_MOVE, exc.message, t)
            else:
                self._charge(started)
                return move
            if self.fault_ends_move:
                return FAULT
            started = self.ws.loop.time()

    def deadline(self, started: float) -> float:
        """When a move asked for at ``started`` (loop time) is late: the per-move deadline
        plus what is left in the time bank."""
        return started + self.settings.move_deadline + self.bank

    def _charge(self, started: float, now: float | None = None) -> None:
        """Time beyond the move deadline comes out of the time bank."""
        late = (self.ws.loop.time() if now is None else now) - started
        late -= self.settings.move_deadline
        if late > 0:
            self.bank = max(0.0, self.bank - late)


#: What a remote learner's move is after a fault: the round is scored against it.
FAULT = object()


def _probability(message: dict[str, Any]) -> float:
    p = message["p"]
    if type(p) is float and 0.0 <= p <= 1.0:  # the usual move needs no more checks
        return p
    return check_probability(p)


class RemoteLearner(_Remote):
    """A learner behind a connection. Its ``update`` only remembers the label, which then
    rides with the next instance (PROTOCOL.md 5.1): one round trip per round."""

    fault_ends_move = True

    def __init__(self, ws: Connection, session: ServerSession,
                 settings: ServerSettings) -> None:
        super().__init__(ws, session, settings, "learner")
        self.hclass: Any = None
        self.pending: dict[str, Any] | None = None

    async def predict(self, t: int, x: Any) -> Any:
        """p in [0, 1], or FAULT."""
        await self.send(self._instance(t, instance_to_wire(self.hclass, x)))
        return await self.receive("predict", t=t, accept=_probability)

    async def update(self, t: int, x: Any, y: int) -> None:
        self.pending = {"t": t, "y": y}

    async def play_queued(self, t0: int, wires: list[Any], ys: list[int],
                          predictions: list[float]) -> None:
        """Play queued rounds t0, t0 + 1, ...: send each instance (``wires``: as on the
        wire) with the label before it, append each p to ``predictions`` (1 - y after a
        fault). The same messages, checks and fault ladder as :meth:`predict` round by
        round; rounds that go as expected are answered from the connection's callback
        (:class:`_FastRounds`), anything else (a fault, a stale move, a timeout, a
        closed connection, a peer that does not read) takes the way of :meth:`receive`.
        """
        n, i = len(ys), 0
        while i < n:
            await self.send(self._instance(t0 + i, wires[i]))
            started = self.ws.loop.time()
            fast = _FastRounds(self, t0, wires, ys, predictions, i, started)
            i, started, sent = await fast.run()
            if i < n and sent:  # round i's instance is out: its move comes the slow way
                p = await self.receive("predict", t=t0 + i, accept=_probability,
                                       started=started)
                self.answered(t0 + i, ys[i], p, predictions)
                i += 1

    def _instance(self, t: int, wire: Any) -> dict[str, Any]:
        """Round t's instance (as on the wire), with the label of the round before."""
        message = {"type": "instance", "t": t, "x": wire}
        if self.pending is not None:
            message["label"] = self.pending
        return message

    def answered(self, t: int, y: int, p: Any, predictions: list[float]) -> None:
        """Round t's move: p (FAULT: scored as a mistake, p = 1 - y); its label y then
        rides with the next instance."""
        y = int(y)
        predictions.append(1.0 - y if p is FAULT else p)
        self.pending = {"t": t, "y": y}

    async def weights(self, t: int, x: Any, advice: Any) -> Any:
        message: dict[str, Any] = {"type": "advice", "t": t, "advice": None}
        if x is not None:  # class-derived experts: the learner evaluates its class on x
            message["x"] = instance_to_wire(self.hclass, x)
        elif advice is not None:
            message["advice"] = vector_to_wire(advice)
        if self.pending is not None:
            message["outcome"] = self.pending
        await self.send(message)

        def accept(m: dict[str, Any]) -> Any:
            if m["type"] == "predict":
                return check_probability(m["p"])
            return vector_from_wire(m["w"])

        return await self.receive("predict", "weights", t=t, accept=accept)

    async def update_costs(self, t: int, costs: Any, y: int | None) -> None:
        self.pending = {"t": t, "costs": vector_to_wire(costs), "y": y}


class _FastRounds:
    """Queued rounds answered from the connection's callback: a good ``predict`` for
    the round awaited is checked, charged against the clock and answered with the next
    instance in the same callback, without waking the game's task (one round trip costs
    the server a few microseconds less: benchmarks/README.md). Any other message, a
    deadline passing, a peer that stops reading or a closed connection stops it:
    :meth:`run` then returns (next round, its clock's start, whether its instance was
    sent) and :meth:`RemoteLearner.play_queued` takes over."""

    def __init__(self, learner: RemoteLearner, t0: int, wires: list[Any], ys: list[int],
                 predictions: list[float], i: int, started: float) -> None:
        self.learner, self.t0, self.wires, self.ys = learner, t0, wires, ys
        self.predictions, self.i, self.started, self.sent = predictions, i, started, True
        ws = learner.ws
        self.deadline = Deadline(ws.loop, ws.stop_answering)

    async def run(self) -> tuple[int, float, bool]:
        learner = self.learner
        learner.session.expect("predict", t=self.t0 + self.i)
        self.deadline.set(learner.deadline(self.started))
        try:
            await learner.ws.answer(self)
        finally:
            self.deadline.cancel()
        return self.i, self.started, self.sent

    def __call__(self, frame: bytes | str) -> bool:
        learner = self.learner
        try:
            p = _probability(learner.session.receive(frame))
        except (ProtocolError, IllegalMove):
            return False  # declined: the slow way receives the frame again
        ws = learner.ws
        now = ws.loop.time()
        learner._charge(self.started, now)
        i, t0 = self.i, self.t0
        learner.answered(t0 + i, self.ys[i], p, self.predictions)
        i = self.i = i + 1
        if i == len(self.ys):
            ws.stop_answering()
        elif ws.send_nowait(encode(learner._instance(t0 + i, self.wires[i]))):
            self.started = now
            learner.session.expect("predict", t=t0 + i)
            self.deadline.set(learner.deadline(now))
        else:
            self.sent = False
            ws.stop_answering()
        return True


class RemoteAdversary(_Remote):
    """An adversary behind a connection (PROTOCOL.md 5.3)."""

    def __init__(self, ws: Connection, session: ServerSession,
                 settings: ServerSettings) -> None:
        super().__init__(ws, session, settings, "adversary")
        self.hclass: Any = None

    async def instance(self, t: int) -> Any:
        return await self.receive("instance", "commit", t=t, accept=self._instance)

    def _instance(self, m: dict[str, Any]) -> Any:
        if m["type"] == "commit":
            return ("commit", m["digest"])
        return instance_from_wire(self.hclass, m["x"])

    async def label(self, t: int, x: Any, p: float) -> int:
        await self.send({"type": "prediction", "t": t, "p": p})
        y = await self.receive("label", t=t, accept=lambda m: check_label(m["y"]))
        return int(y)

    async def advice(self, t: int) -> Any:
        def accept(m: dict[str, Any]) -> Any:
            if m["type"] == "commit":
                return ("commit", m["digest"])
            if m["type"] == "instance":
                return ("instance", instance_from_wire(self.hclass, m["x"]))
            return ("advice", None if m["advice"] is None else vector_from_wire(m["advice"]))

        return await self.receive("advice", "instance", "commit", t=t, accept=accept)

    async def outcome(self, t: int, answer: Any) -> Any:
        message: dict[str, Any] = {"type": "answer", "t": t}
        if isinstance(answer, np.ndarray):
            message["w"] = vector_to_wire(answer)
        else:
            message["p"] = float(answer)
        await self.send(message)

        def accept(m: dict[str, Any]) -> Any:
            return check_label(m["y"]) if m["type"] == "label" else vector_from_wire(m["v"])

        return await self.receive("label", "costs", t=t, accept=accept)

    async def reveal(self) -> tuple[Any, bytes]:
        await self.send({"type": "reveal?"})

        def accept(m: dict[str, Any]) -> tuple[Any, bytes]:
            target = m["target"]
            if isinstance(target, bytes | list):
                target = vector_from_wire(target)
            return target, m["salt"]

        target, salt = await self.receive("reveal", t=None, accept=accept)
        return target, salt


# -- the async driver ------------------------------------------------------------------


async def run_game(
    game: GameSpec, seed: int, learner: Learner | RemoteLearner,
    adversary: Adversary | RemoteAdversary, writer: LogWriter | None = None,
) -> GameResult:
    """One game through the referee, either player local or remote (the same rules,
    coins and records as server.local.play)."""
    seeds = game_seeds(seed)
    for player, own in ((learner, seeds.learner), (adversary, seeds.adversary)):
        if isinstance(player, Learner | Adversary):
            player.start(game, own)
        else:
            player.hclass = game.hclass
    referee: MistakeBoundReferee | ExpertsReferee
    if game.game == EXPERTS:
        hclass = game.hclass if isinstance(game.hclass, FiniteClass) else None
        referee = ExpertsReferee(game.n_experts, game.rounds, seeds.referee, hclass=hclass)
    else:
        assert game.hclass is not None
        referee = MistakeBoundReferee(game.hclass, game.rounds, seeds.referee,
                                      history=history_for(game))
    role = "adversary"
    try:
        if isinstance(adversary, Adversary):
            digest = adversary.commitment()
            if digest is not None:
                referee.commit(digest)
        if isinstance(referee, MistakeBoundReferee):
            await _mistake_bound_rounds(game, referee, learner, adversary, writer)
        else:
            await _experts_rounds(game, referee, learner, adversary, writer)
        role = "adversary"
        due = (referee.phase is Phase.REVEAL if isinstance(referee, MistakeBoundReferee)
               else referee.phase is ExpertsPhase.REVEAL)
        if due:
            revealed = (await adversary.reveal() if isinstance(adversary, RemoteAdversary)
                        else adversary.reveal())
            referee.reveal(*(revealed if revealed is not None else (None, b"")))
    except MoveError:
        pass  # recorded by the referee against its author
    except Forfeit as exc:
        referee.abort(f"forfeit:{exc.role}:{exc.code.value}", str(exc))
    except Disconnected as exc:
        referee.abort(f"disconnected:{exc.role}", str(exc))
    except _Commit as exc:
        referee.abort("illegal_move:adversary:commit", str(exc))
    except Exception as exc:  # a local player's bug ends its game, never the server
        referee.abort(f"crash:{role}:{type(exc).__name__}", f"{role} raised {type(exc).__name__}")
    result = referee.result()
    result.revealed = getattr(referee, "revealed", None)
    if isinstance(learner, Learner):
        result.bound = learner.bound(game)
        result.extra.update(learner.report())
    if isinstance(game.hclass, FiniteClass):
        result.extra["size"] = game.hclass.size
    faults = [dict(f, role=p.role) for p in (learner, adversary) if isinstance(p, _Remote)
              for f in p.faults]
    if faults:
        result.extra["faults"] = faults
    return result


class _Commit(Exception):
    """A commitment sent after round 1."""


async def _adversary_instance(referee: Any, adversary: Any, t: int) -> Any:
    if isinstance(adversary, Adversary):
        return adversary.instance()
    while True:
        move = await adversary.instance(t)
        if isinstance(move, tuple) and move and move[0] == "commit":
            if t != 1:
                raise _Commit("a commitment after round 1")
            referee.commit(move[1])
            continue
        return move


async def _mistake_bound_rounds(game: GameSpec, referee: MistakeBoundReferee, learner: Any,
                                adversary: Any, writer: LogWriter | None) -> None:
    first = 1
    if isinstance(learner, RemoteLearner) and isinstance(adversary, Adversary):
        first += await _queued_rounds(game, referee, learner, adversary, writer)
    for t in range(first, game.rounds + 1):
        x = referee.instance(await _adversary_instance(referee, adversary, t))
        p = (learner.predict(x) if isinstance(learner, Learner)
             else await learner.predict(t, x))
        if p is FAULT:
            referee.prediction_fault()
            p = 0.5
        else:
            referee.prediction(p)
        y = (adversary.label(x, p) if isinstance(adversary, Adversary)
             else await adversary.label(t, x, p))
        record = referee.label(y)
        if writer is not None:
            writer.round(record)
        if isinstance(learner, Learner):
            learner.update(x, record.y)
        else:
            await learner.update(t, x, record.y)


async def _queued_rounds(game: GameSpec, referee: MistakeBoundReferee, learner: RemoteLearner,
                         adversary: Adversary, writer: LogWriter | None) -> int:
    """A remote learner against an oblivious built-in adversary: the adversary's moves
    come in blocks (as in the local driver), each instance goes out already encoded and
    the block is scored in one pass when it is played (the same records as round by
    round: a fault is scored p = 1 - y, as :meth:`MistakeBoundReferee.prediction_fault`
    does). Returns the rounds played (0: the adversary is not oblivious)."""
    played = 0
    while played < game.rounds:
        block = adversary.moves(min(game.rounds - played, REMOTE_BLOCK))
        if block is None:
            if played:
                raise RuntimeError("an oblivious adversary stopped offering moves")
            return 0
        xs, ys = block
        referee.queue(xs, ys)
        wires = instances_to_wire(referee.hclass, xs)
        predictions: list[float] = []
        try:
            await learner.play_queued(referee.t + 1, wires, ys, predictions)
        finally:  # the rounds answered are scored, even when the game ends mid-block
            referee.score_queued(predictions, records=False)
            if writer is not None and referee.last_block is not None:
                writer.rounds(*referee.last_block)
                referee.last_block = None
        played += len(ys)
    return played


async def _experts_rounds(game: GameSpec, referee: ExpertsReferee, learner: Any,
                          adversary: Any, writer: LogWriter | None) -> None:
    class_derived = referee.hclass is not None
    for t in range(1, game.rounds + 1):
        x = None
        if isinstance(adversary, Adversary):
            if class_derived:
                x = referee.instance(adversary.instance())
            else:
                advice = adversary.advice()
                if advice is not None:
                    referee.advice(advice)
        else:
            while True:
                kind, value = await adversary.advice(t)
                if kind == "commit":
                    if t != 1:
                        raise _Commit("a commitment after round 1")
                    referee.commit(value)
                    continue
                break
            if kind == "instance":
                x = referee.instance(value)
            elif value is not None:
                referee.advice(value)
        advice_now = referee.current_advice
        answer = (learner.weights(advice_now) if isinstance(learner, Learner)
                  else await learner.weights(t, x, advice_now))
        if answer is FAULT:
            referee.answer_fault()
            shown: Any = 0.5
        elif isinstance(answer, float | int) and not isinstance(answer, bool):
            referee.prediction(answer)
            shown = float(answer)
        else:
            referee.weights(answer)
            shown = answer
        if isinstance(adversary, Adversary):
            outcome = (adversary.label(x, referee.induced_prediction) if class_derived
                       else adversary.costs(shown))
        else:
            outcome = await adversary.outcome(t, shown)
        if isinstance(outcome, int) and not isinstance(outcome, bool):
            record = referee.label(outcome)
        else:
            record = referee.costs(outcome)
        if writer is not None:
            writer.expert(record)
        if isinstance(learner, Learner):
            learner.update_costs(record.costs, record.y)
        else:
            await learner.update_costs(t, record.costs, record.y)


# -- the server ----------------------------------------------------------------------


class GameServer:
    """``littlestone serve``: handshakes, challenges against built-in agents, games."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.store = Store(settings.data)
        self.games: set[asyncio.Task[Any]] = set()
        #: Tournament entrants by (tournament, account): connection, session, release.
        self.entrants: dict[tuple[str, str], tuple[Connection, ServerSession,
                                                   asyncio.Future[None]]] = {}
        #: Called with (agent name, game id) when a game is created (tournaments use it).
        self.on_created: Callable[[str, str], None] | None = None
        #: Games created and waiting for their second player, by id.
        self.open_games: dict[str, tuple[GameSpec, int, Connection, ServerSession,
                                         asyncio.Future[None]]] = {}
        #: Games this server referees now, by id, as their spectators see them.
        self.running: dict[str, Broadcast] = {}
        self._server: Server | None = None
        self._stopping = asyncio.Event()

    # tokens: stored hashed (sha256), looked up by the hash
    def account(self, token: str) -> str | None:
        digest = hashlib.sha256(token.encode()).hexdigest()
        return self.store.token_account(digest)

    async def start(self) -> None:
        settings = self.settings
        self._server = await serve(self.handle, settings.host, settings.port,
                                   max_size=settings.limits.max_frame, tls=settings.tls)

    @property
    def url(self) -> str:
        """Where clients reach this server."""
        scheme = "wss" if self.settings.tls is not None else "ws"
        return f"{scheme}://{self.settings.host}:{self.port}"

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.port

    async def stop(self) -> None:
        """Graceful: stop accepting, let running games end as aborted, close."""
        self._stopping.set()
        for _, _, finished in list(self.entrants.values()):
            if not finished.done():
                finished.set_result(None)
        if self._server is not None:
            self._server.stop_accepting()
        for task in list(self.games):
            task.cancel()
        if self.games:
            await asyncio.gather(*self.games, return_exceptions=True)
        if self._server is not None:
            await self._server.close()

    async def handle(self, ws: Connection) -> None:
        session = ServerSession(tokens=self.account, anonymous=self.settings.anonymous,
                                limits=self.settings.limits)
        try:
            try:
                frame = await ws.recv(ws.loop.time() + HANDSHAKE_TIMEOUT_S)
                session.receive(frame)
            except TimeoutError:
                raise ProtocolError(Code.TIMEOUT, "no hello within the handshake deadline",
                                    fatal=True) from None
            await ws.send(encode(session.welcome(
                f"littlestone {package_version()}",
                {"max_frame": self.settings.limits.max_frame,
                 "move_deadline_ms": int(self.settings.move_deadline * 1000),
                 "time_bank_ms": int(self.settings.time_bank * 1000)})))
            while not self._stopping.is_set():
                frame = await ws.recv()
                try:
                    message = session.receive(frame)
                except ProtocolError as exc:
                    if exc.fatal:
                        raise
                    await ws.send(encode(exc.to_message()))
                    continue
                if message["type"] == "challenge":
                    await self._challenge(ws, session, message)
                elif message["type"] == "create":
                    await self._create(ws, session, message)
                elif message["type"] == "enter":
                    await self._enter(ws, session, message)
                elif message["type"] == "watch":
                    await self._watch(ws, session, message)
                else:
                    await self._join(ws, session, message)
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

    async def _watch(self, ws: Connection, session: ServerSession,
                     message: dict[str, Any]) -> None:
        """A spectator follows a running game until its end (PROTOCOL.md 5.4)."""
        broadcast = self.running.get(message["game_id"])
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

    async def _challenge(self, ws: Connection, session: ServerSession,
                         message: dict[str, Any]) -> None:
        try:
            game = rules_from_wire(message["rules"])
            registry: Any = ADVERSARIES if session.role == "learner" else LEARNERS
            opponent = registry.make(message["opponent"])
            if opponent.unsupported(game) is not None:
                raise UnsupportedGame(f"{opponent.spec} cannot play this game: "
                                      f"{opponent.unsupported(game)}")
        except ProtocolError as exc:
            await ws.send(encode(exc.to_message()))
            return
        except (SpecError, LittlestoneError) as exc:
            await ws.send(encode(ProtocolError(Code.UNSUPPORTED_GAME, str(exc)).to_message()))
            return
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
            await ws.send(encode(ProtocolError(Code.UNAUTHORIZED, "entering a tournament needs "
                                               "a token: the token's name is the entrant")
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
            remote: _Remote = RemoteLearner(ws, session, self.settings)
            await self._run(game, seed, remote, opponent, [(ws, session, remote)], game_id)
        else:
            remote = RemoteAdversary(ws, session, self.settings)
            await self._run(game, seed, opponent, remote, [(ws, session, remote)], game_id)
        return game_id

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
        try:
            game = rules_from_wire(message["rules"])
        except ProtocolError as exc:
            await ws.send(encode(exc.to_message()))
            return
        except LittlestoneError as exc:
            await ws.send(encode(ProtocolError(Code.UNSUPPORTED_GAME, str(exc)).to_message()))
            return
        game_id = new_game_id()
        seed = message["seed"] if message["seed"] is not None else secrets.randbits(32)
        played: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.open_games[game_id] = (game, seed, ws, session, played)
        await ws.send(encode({"type": "created", "game_id": game_id}))
        if self.on_created is not None:
            self.on_created(session.agent, game_id)
        try:
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
                   remotes: list[tuple[Connection, ServerSession, _Remote]],
                   game_id: str | None = None) -> None:
        """Play one game with its remote players: start, rounds, log, index, end."""
        game_id = game_id or new_game_id()
        seeds = game_seeds(seed)

        def identity(player: Any) -> dict[str, Any]:
            if isinstance(player, _Remote):
                return {"spec": f"remote:{player.session.agent}",
                        "account": player.session.account, "sha256": "remote"}
            return agent_identity(player)

        header: dict[str, Any] = {
            "game_id": game_id, "package": package_version(), "protocol": PROTOCOL_VERSION,
            "started": utc_now(), "source": "server", "rules": game_info(game), "seed": seed,
            "seeds": {"referee": seeds.referee, "learner": seeds.learner,
                      "adversary": seeds.adversary},
            "learner": identity(learner), "adversary": identity(adversary),
        }
        path = self.settings.data / "games" / f"{game_id}.lslog"
        self.store.start_game({**game_info(game), "learner": header["learner"]["spec"],
                               "adversary": header["adversary"]["spec"], "seed": seed,
                               "horizon": game.rounds, "source": "server"},
                              log=str(path), game_id=game_id)
        writer = LogWriter(path, header, background=False)
        broadcast = writer.observer = Broadcast(game_id, rules_to_wire(game),
                                                header["learner"]["spec"],
                                                header["adversary"]["spec"])
        self.running[game_id] = broadcast
        try:
            await self._play(game, seed, learner, adversary, remotes, game_id, writer)
        finally:
            del self.running[game_id]
            broadcast.finish("aborted", {})  # (the footer has ended it already, normally)

    async def _play(self, game: GameSpec, seed: int, learner: Any, adversary: Any,
                    remotes: list[tuple[Connection, ServerSession, _Remote]], game_id: str,
                    writer: LogWriter) -> None:
        """The game itself: start, the rounds, the log's footer, the index row, end."""
        seeds = game_seeds(seed)
        for ws, session, remote in remotes:
            session.start_game()
            own = seeds.learner if remote.role == "learner" else seeds.adversary
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode({"type": "start", "game_id": game_id, "role": remote.role,
                                      "rules": rules_to_wire(game), "seed": own}))
        task = asyncio.current_task()
        assert task is not None
        self.games.add(task)
        try:
            result = await run_game(game, seed, learner, adversary, writer)
        except asyncio.CancelledError:
            writer.close({"status": "aborted:shutdown", "finished": utc_now(), "result": {}})
            self.store.finish_game(game_id, {"status": "aborted:shutdown"})
            raise
        finally:
            self.games.discard(task)
        scores = result.to_dict()
        footer: dict[str, Any] = {"status": result.status, "finished": utc_now(),
                                  "result": scores}
        if result.revealed is not None:
            revealed = result.revealed
            footer["revealed"] = revealed.tolist() if hasattr(revealed, "tolist") else revealed
        writer.close(footer)
        self.store.finish_game(game_id, scores)
        for ws, session, remote in remotes:
            session.end_game()
            end: dict[str, Any] = {"type": "end", "status": result.status,
                                   "result": wire_result(scores), "game_id": game_id}
            if isinstance(remote, RemoteLearner) and remote.pending is not None:
                end["label" if game.game != EXPERTS else "outcome"] = remote.pending
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode(end))


async def serve_forever(settings: ServerSettings,
                        ready: Callable[[GameServer], Awaitable[None] | None] | None = None
                        ) -> None:
    """Run until SIGINT or SIGTERM, then shut down gracefully."""
    server = GameServer(settings)
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


# -- the client ----------------------------------------------------------------------


class ServerError(LittlestoneError):
    """The server answered with an error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"server: {code}: {message}")
        self.code = code


async def play_remote(
    url: str, agent: Learner | Adversary, opponent: str | None, game: GameSpec,
    seed: int | None = None, token: str | None = None, name: str = "littlestone-client",
    join: str | None = None, on_created: Callable[[str], Any] | None = None,
    tournament: str | None = None, tls: ssl.SSLContext | None = None,
) -> dict[str, Any]:
    """Play ``agent`` (a learner or an adversary) against the server's ``opponent``;
    returns the keys ``littlestone play --json`` prints.

    With ``opponent=None`` it creates a game for another remote agent and hands its id
    to ``on_created``; with ``join=GAME_ID`` it joins one (PROTOCOL.md 4). ``tls``: the
    TLS context for a wss:// URL (default: the system's certificate authorities)."""
    role = "learner" if isinstance(agent, Learner) else "adversary"
    async with connect(url, tls=tls) as ws:
        receive = await _hello(ws, role, name, token)
        if tournament is not None:
            return await _tournament_loop(ws, receive, agent, tournament)
        if join is not None:
            await ws.send(encode({"type": "join", "game_id": join}))
        elif opponent is not None:
            await ws.send(encode({"type": "challenge", "rules": rules_to_wire(game),
                                  "opponent": opponent, "seed": seed}))
        else:
            await ws.send(encode({"type": "create", "rules": rules_to_wire(game),
                                  "seed": seed}))
            created = await receive()
            if created["type"] != "created":
                raise ServerError(created.get("code", "bad_message"),
                                  created.get("message", created["type"]))
            if on_created is not None:
                maybe = on_created(created["game_id"])
                if asyncio.iscoroutine(maybe):
                    await maybe
        start = await receive()
        if start["type"] == "error":
            raise ServerError(start["code"], start["message"])
        game = rules_from_wire(start["rules"])
        agent.start(game, int(start["seed"]))
        hclass = game.hclass
        if isinstance(agent, Learner):
            end = await _learner_loop(ws, receive, agent, game)
        else:
            end = await _adversary_loop(ws, receive, agent, game)
    result = dict(end["result"])
    result["status"] = end["status"]
    bound = agent.bound(game) if isinstance(agent, Learner) else None
    if bound is not None:
        result["bound"], result["bound_name"] = bound.value, bound.name
    out: dict[str, Any] = {
        "game": game.game,
        "learner": agent.spec if isinstance(agent, Learner) else (opponent or "remote"),
        "adversary": (opponent or "remote") if isinstance(agent, Learner) else agent.spec,
        "class": hclass.spec if hclass is not None else None, "horizon": game.rounds,
        "seed": seed,
    }
    out.update({k: v for k, v in result.items() if k != "game"})
    out["game_id"] = end.get("game_id")
    return out


async def watch_remote(url: str, game_id: str, token: str | None = None,
                       name: str = "littlestone-spectator",
                       on_message: Callable[[dict[str, Any]], Any] | None = None,
                       tls: ssl.SSLContext | None = None) -> dict[str, Any]:
    """Watch a game the server at ``url`` is refereeing (PROTOCOL.md 5.4): every
    ``watching`` and ``rounds`` message goes to ``on_message``; returns the ``end``."""
    async with connect(url, tls=tls) as ws:
        receive = await _hello(ws, "spectator", name, token)
        await ws.send(encode({"type": "watch", "game_id": game_id}))
        while True:
            message = await receive()
            if message["type"] == "error":  # not_found: a spectator has nothing else to do
                raise ServerError(message["code"], message["message"])
            if message["type"] == "end":
                return message
            if on_message is not None:
                on_message(message)


async def _hello(ws: Connection, role: str, name: str, token: str | None
                 ) -> Callable[[], Awaitable[dict[str, Any]]]:
    """The handshake (PROTOCOL.md 3); returns how to receive the server's next message
    (a fatal error is raised as ServerError)."""

    async def receive() -> dict[str, Any]:
        message = check(decode(await ws.recv(), CLIENT_LIMITS))
        if message["type"] == "error" and message.get("fatal", True) is not False:
            raise ServerError(message["code"], message["message"])
        return message

    await ws.send(encode({"type": "hello", "version": PROTOCOL_VERSION, "role": role,
                          "agent": name, "token": token, "capabilities": []}))
    welcome = await receive()
    if welcome["type"] != "welcome":
        raise ServerError("bad_message", f"expected welcome, got {welcome['type']}")
    return receive


async def _tournament_loop(ws: Any, receive: Callable[[], Awaitable[dict[str, Any]]],
                           agent: Learner | Adversary, tournament: str) -> dict[str, Any]:
    """Enter a tournament and play every game it gives, fresh at each, until ``done``."""
    await ws.send(encode({"type": "enter", "tournament": tournament}))
    entered = await receive()
    if entered["type"] != "entered":
        raise ServerError(entered.get("code", "bad_message"), entered.get("message", ""))
    games: list[dict[str, Any]] = []
    while True:
        message = await receive()
        if message["type"] == "done":
            return {"tournament": tournament, "games": games}
        if message["type"] != "start":
            continue
        game = rules_from_wire(message["rules"])
        agent.start(game, int(message["seed"]))
        if isinstance(agent, Learner):
            end = await _learner_loop(ws, receive, agent, game)
        else:
            end = await _adversary_loop(ws, receive, agent, game)
        games.append({"game_id": end.get("game_id"), "status": end["status"]})


async def _learner_loop(ws: Any, receive: Callable[[], Awaitable[dict[str, Any]]],
                        agent: Learner, game: GameSpec) -> dict[str, Any]:
    answering = _Answering(ws, agent, game.hclass)
    while True:
        await answering.run()  # the rounds that go as expected
        message = await receive()
        if message["type"] == "error":
            continue  # a fault of ours: the server waits for a better move
        if message["type"] == "end":
            answering.learn(message)  # the last round's label or outcome
            return message
        if message["type"] in ("instance", "advice"):
            await ws.send(answering.reply(message))


class _Answering:
    """The learner's side of the rounds (PROTOCOL.md 5.1, 5.2). :meth:`reply` learns from
    the label or outcome a request carries and answers it. :meth:`run` answers requests
    from the connection's callback — learn, answer, send — without waking the task,
    until a message needs :func:`_learner_loop` (an error, the end, anything unexpected);
    an exception of the learner ends it and is raised there, as round by round."""

    def __init__(self, ws: Connection, agent: Learner, hclass: Any) -> None:
        self.ws, self.agent, self.hclass = ws, agent, hclass
        self.last: Any = None  # the last instance, which the next label is about
        self.error: Exception | None = None
        self.unsent: bytes | None = None

    def learn(self, message: dict[str, Any]) -> None:
        """The label (mistake-bound) or outcome (experts) of the round before."""
        label, outcome = message.get("label"), message.get("outcome")
        if label is not None and self.last is not None:
            self.agent.update(self.last, int(label["y"]))
        if outcome is not None:
            self.agent.update_costs(vector_from_wire(outcome["costs"]), outcome.get("y"))

    def reply(self, message: dict[str, Any]) -> bytes:
        """The answer to an ``instance`` or ``advice`` message, as a frame."""
        self.learn(message)
        hclass, t = self.hclass, message["t"]
        if message["type"] == "instance":
            self.last = x = (instance_from_wire(hclass, message["x"]) if hclass is not None
                             else None)
            return encode({"type": "predict", "t": t, "p": float(self.agent.predict(x))})
        advice: Any = message.get("advice")
        if message.get("x") is not None and isinstance(hclass, FiniteClass):
            advice = hclass.evaluate(instance_from_wire(hclass, message["x"])).astype(np.float64)
        elif advice is not None:
            advice = vector_from_wire(advice)
        answer = self.agent.weights(advice)
        if isinstance(answer, np.ndarray):
            return encode({"type": "weights", "t": t, "w": vector_to_wire(answer)})
        return encode({"type": "predict", "t": t, "p": float(answer)})

    async def run(self) -> None:
        """Answer requests from the callback until a message needs the task."""
        await self.ws.answer(self)
        if self.error is not None:
            raise self.error
        if self.unsent is not None:
            frame, self.unsent = self.unsent, None
            await self.ws.send(frame)

    def __call__(self, frame: bytes | str) -> bool:
        try:
            message = check(decode(frame, CLIENT_LIMITS))
        except ProtocolError:
            return False
        if message["type"] not in ("instance", "advice"):
            return False  # declined: for _learner_loop
        try:
            answer = self.reply(message)
        except Exception as exc:  # the learner's (or a bad message's): raised by run()
            self.error = exc
            self.ws.stop_answering()
            return True
        if not self.ws.send_nowait(answer):
            self.unsent = answer
            self.ws.stop_answering()
        return True


async def _adversary_loop(ws: Any, receive: Callable[[], Awaitable[dict[str, Any]]],
                          agent: Adversary, game: GameSpec) -> dict[str, Any]:
    hclass = game.hclass
    digest = agent.commitment()
    if digest is not None:
        await ws.send(encode({"type": "commit", "digest": digest}))
    class_derived = game.game == EXPERTS and hclass is not None
    t = 1
    pending_x: Any = None
    if game.rounds:
        pending_x = await _send_move(ws, agent, game, t, class_derived)
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "error":
            continue
        if kind == "end":
            return message
        if kind == "reveal?":
            revealed = agent.reveal()
            target, salt = revealed if revealed is not None else (None, b"")
            if isinstance(target, np.ndarray):
                target = vector_to_wire(target)
            elif target is not None:
                target = int(target)
            await ws.send(encode({"type": "reveal", "target": target, "salt": salt}))
        elif kind == "prediction":
            y = agent.label(pending_x, float(message["p"]))
            await ws.send(encode({"type": "label", "t": t, "y": int(y)}))
            t += 1
            if t <= game.rounds:
                pending_x = await _send_move(ws, agent, game, t, class_derived)
        elif kind == "answer":
            answer: Any = (vector_from_wire(message["w"]) if message.get("w") is not None
                           else float(message["p"]))
            if class_derived:
                p = float(answer) if not isinstance(answer, np.ndarray) else float(
                    answer @ hclass.evaluate(pending_x).astype(np.float64))  # type: ignore[union-attr]  # finite here
                await ws.send(encode({"type": "label", "t": t,
                                      "y": int(agent.label(pending_x, p))}))
            else:
                outcome = agent.costs(answer)
                if isinstance(outcome, np.ndarray):
                    await ws.send(encode({"type": "costs", "t": t, "v": vector_to_wire(outcome)}))
                else:
                    await ws.send(encode({"type": "label", "t": t, "y": int(outcome)}))
            t += 1
            if t <= game.rounds:
                pending_x = await _send_move(ws, agent, game, t, class_derived)


async def _send_move(ws: Any, agent: Adversary, game: GameSpec, t: int,
                     class_derived: bool) -> Any:
    hclass = game.hclass
    if game.game != EXPERTS or class_derived:
        x = agent.instance()
        assert hclass is not None
        await ws.send(encode({"type": "instance", "t": t, "x": instance_to_wire(hclass, x)}))
        return x
    advice = agent.advice()
    await ws.send(encode({"type": "advice", "t": t,
                          "advice": None if advice is None else vector_to_wire(advice)}))
    return None
