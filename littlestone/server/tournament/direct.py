"""A submission's tournament game on a direct link: the referee drives the sandboxed
agent's game process itself, move by move, over a Unix socket with length-prefixed
messages (:mod:`littlestone.protocol.frames`), with blocking calls on both sides.

The WebSocket path (a game server in the arena, the client's loop in the sandbox) spent
most of a submitted pair's game on the messaging around the moves: an event loop's turn
and a WebSocket frame's parsing for each of the game's 1,000 messages, in three
processes (benchmarks/README.md, issue 26). Here a round costs each side two system calls
and a msgpack message; the game is the same game loop
(:class:`~littlestone.games.loop.GameLoop`, as the server's driver runs it:
``in_process=False``), under the same move clock, time bank and fault ladder
(PROTOCOL.md 6) and the same remote player's verdicts
(:class:`~littlestone.server.net.players.MoveWait`), with the protocol's own messages
(PROTOCOL.md 10: a label rides with the next instance; an adversary commits with its
first instance and sends each next one right after its label), logged and indexed as the
server logs a game (the same header, footer, anchor and ``remote:NAME`` entrants), so
that its results, its log and its verification are those of the WebSocket path.

What the WebSocket path guaranteed, kept:

- **a one-time credential per game and side**: the game process gets a token on its
  standard input (never on its command line), good for entering this game once, in
  this role, and void when the game ends (:class:`Door`); the socket is bound into the
  submission's sandbox only;
- **the rules are the referee's**: the game process is told the rules and its own seed
  (``start``), and is asked for moves; it chooses nothing;
- **a secret game key**: the seeds derive from a fresh 256-bit key
  (:func:`~littlestone.games.game.secret_key`), committed to in the log's header and
  revealed in its footer: an agent cannot derive the referee's coin or its opponent's
  seed from the game's seed or its own.

The direct link plays the mistake-bound game; the experts game keeps the WebSocket path.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Container
from pathlib import Path
from typing import Any, cast

from littlestone.adversaries import ADVERSARIES
from littlestone.adversaries.base import Adversary
from littlestone.games.errors import (
    Crash,
    Disconnected,
    GameEnded,
    IllegalMove,
    MoveError,
    ProtocolError,
)
from littlestone.games.game import MISTAKE_BOUND, GameResult, GameSeeds, GameSpec, game_seeds
from littlestone.games.game import secret_key as fresh_key
from littlestone.games.loop import (
    LEARNER,
    FaultLadder,
    GameLoop,
    Move,
    MoveClock,
    RoundLog,
    drive,
)
from littlestone.games.mistake_bound import check_label
from littlestone.learners import LEARNERS
from littlestone.learners.base import Learner
from littlestone.local import history_for
from littlestone.protocol import build
from littlestone.protocol.errors import Code
from littlestone.protocol.frames import FrameSocket
from littlestone.protocol.messages import (
    from_client,
    instance_from_wire,
    instance_to_wire,
    rules_to_wire,
)
from littlestone.protocol.wire import Commit as CommitMessage
from littlestone.protocol.wire import End, Instance, LabelOf, ServerMessage
from littlestone.server.net.players import (
    MoveWait,
    Verdict,
    commit_of,
    probability,
    revealed,
)
from littlestone.server.net.spectators import wire_result
from littlestone.server.records.logged import GameRecording, agent_identity, recorded
from littlestone.server.records.logs import LogWriteError
from littlestone.server.records.rows import AgentIdentity
from littlestone.server.records.store import INTERRUPTED, STORAGE_STATUS, Store
from littlestone.server.tournament.config import TournamentConfig
from littlestone.server.tournament.pairing import Pairing, rules
from littlestone.transport import SEND_TIMEOUT_S

__all__ = ["ENTER_FRAME_SECONDS", "TOKEN_PREFIX", "DirectAdversary", "DirectLearner", "Door",
           "direct_game", "play_direct", "referee", "thread_store"]

log = logging.getLogger(__name__)

#: How long a connection to the door has to say its token.
ENTER_FRAME_SECONDS = 10.0
#: What a direct link's one-time token starts with (a server's tokens: ``ls1_``).
TOKEN_PREFIX = "lsd_"


def direct_game(config: TournamentConfig) -> bool:
    """Whether this tournament's games are played on direct links (the mistake-bound
    game only)."""
    return set(config.games) <= {MISTAKE_BOUND}


class Door:
    """The referee's socket for direct links, ``referee.sock`` in the private ``folder``
    (bound into each submission's sandbox). A game expects each of its submitted sides
    with a one-time token (:meth:`expect`); a connection whose first message is
    ``{"type": "enter", "token": T}`` for a token expected is handed to that game, once;
    any other is closed. :meth:`revoke` voids a token, used or not."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "referee.sock"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.path))
        self.listener.listen(128)
        self.path.chmod(0o666)  # a sandbox's uid connects; the folder is private
        self.waiting: dict[str, concurrent.futures.Future[FrameSocket]] = {}
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def expect(self) -> tuple[str, concurrent.futures.Future[FrameSocket]]:
        """A fresh one-time token, and the link its game process will enter on."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(24)
        entered: concurrent.futures.Future[FrameSocket] = concurrent.futures.Future()
        with self.lock:
            self.waiting[token] = entered
        return token, entered

    def revoke(self, token: str) -> None:
        """The token is void: a game process that has not entered with it never will."""
        with self.lock:
            entered = self.waiting.pop(token, None)
        if entered is not None:
            entered.cancel()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._enter, args=(conn,), daemon=True).start()

    def _enter(self, conn: socket.socket) -> None:
        link = FrameSocket(conn)
        try:
            token = link.recv(time.monotonic() + ENTER_FRAME_SECONDS).get("token")
        except (TimeoutError, EOFError, ProtocolError):
            token = None
        with self.lock:
            entered = self.waiting.pop(token, None) if isinstance(token, str) else None
        if entered is None or not entered.set_running_or_notify_cancel():
            conn.close()
            return
        entered.set_result(link)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # (wakes the accepting thread)
        self.listener.close()
        self.thread.join(5)


# -- the players on a direct link ------------------------------------------------------

class DirectPlayer:
    """A submission's game process on a direct link, answering the game loop's moves
    under the move clock and the fault ladder (PROTOCOL.md 6) as the server's remote
    players do (:mod:`littlestone.server.net.players`): a late, malformed or illegal
    move is a fault (a learner's loses the round: :data:`FAULT`; an adversary's move is
    waited for again), the third forfeits; a move for a round already decided is
    dropped; the link closed is :class:`~littlestone.games.loop.Disconnected`."""

    role = LEARNER

    def __init__(self, link: FrameSocket, move_deadline: float, time_bank: float) -> None:
        self.link = link
        self.clock = MoveClock(move_deadline, time_bank)
        self.ladder = FaultLadder(self.role)
        self.hclass: Any = None
        self.rounds = 0
        #: Seconds a message may wait to be sent to a game process that does not read;
        #: then the link is dropped, as the server drops a WebSocket (PROTOCOL.md 1.1).
        self.send_seconds = SEND_TIMEOUT_S

    def start(self, game_id: str, game: GameSpec, seed: int, commitment: bytes) -> None:
        """The rules, this side's own seed and SHA-256 of the game key, as the server's
        ``start`` says them."""
        self.hclass, self.rounds = game.hclass, game.rounds
        self.send(build.start(game_id, self.role, rules_to_wire(game), seed, commitment))

    def send(self, message: ServerMessage) -> None:
        try:
            self.link.send(message, self.send_seconds)
        except OSError:  # (TimeoutError included: it does not read)
            raise Disconnected(self.role) from None

    def receive(self, t: int | None, kinds: tuple[str, ...],
                accept: Callable[[Any], Any]) -> Any:
        """The next acceptable message of round ``t`` (None: a move of no round), one of
        ``kinds``, made into a move by ``accept`` (which raises IllegalMove or
        ProtocolError), as :class:`~littlestone.server.net.players.MoveWait` judges it."""
        wait = MoveWait(self.clock, self.ladder, t, time.monotonic())
        while True:
            try:
                message = self.link.recv(wait.deadline)
            except TimeoutError:
                verdict: Verdict | None = wait.timed_out()
            except EOFError:
                raise Disconnected(self.role) from None
            except ProtocolError as exc:
                verdict = wait.rejected(time.monotonic(), exc)
            else:
                verdict = wait.received(time.monotonic(), lambda: _read(
                    message, t, kinds, accept,  # noqa: B023 - called at once
                    {fault["t"] for fault in self.ladder.faults}))
            if verdict is None:
                continue  # a move for a round already decided
            if verdict.fault is not None:
                wait.record(verdict.fault, time.monotonic())
            if verdict.decided:
                return verdict.move

    def finish(self, end: End) -> None:
        """The game is over: its ``end`` (the link is closed next)."""
        with contextlib.suppress(Disconnected):
            self.send(end)


def _read(message: dict[str, Any], t: int | None, kinds: tuple[str, ...],
          accept: Callable[[Any], Any], faulted: Container[int | None]) -> Any:
    """The move in ``message`` if it is one of ``kinds`` for round ``t`` (``accept``
    makes it one), judged as the WebSocket's session judges it (PROTOCOL.md 6.1): a
    field of the wrong type (``t`` not an int 1 .. 2^63-1 included) or an unknown type is
    ``bad_message``; another kind, or a move for another round, is ``out_of_turn``, and
    stale (dropped) when it is for an earlier round in which the player ``faulted``. A
    message of the protocol with no round (``commit``, ``reveal``) is of the round
    awaited."""
    checked = from_client(message)
    kind = checked["type"]
    if kind not in kinds:
        raise ProtocolError(Code.OUT_OF_TURN,
                            f"{kind} out of turn: waiting for {' or '.join(kinds)}")
    got = cast("int | None", checked.get("t", t))  # (checked: a round, when it is given)
    if t is not None and got is not None and got != t:
        error = ProtocolError(Code.OUT_OF_TURN, f"{kind} for round {got}: this is round {t}")
        error.stale = got < t and got in faulted
        raise error
    try:
        return accept(checked)
    except IllegalMove:
        raise  # (a ValueError, judged as the illegal move it is)
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(Code.BAD_MESSAGE, f"a malformed {kind}: {exc!r}"[:200]) from None


class DirectLearner(DirectPlayer):
    """A learner on a direct link, asked as the protocol asks a remote learner
    (PROTOCOL.md 5.1): p for each ``instance``, with the label of the round before
    (the last one with the ``end``)."""

    role = LEARNER

    def __init__(self, link: FrameSocket, move_deadline: float, time_bank: float) -> None:
        super().__init__(link, move_deadline, time_bank)
        self.pending: LabelOf | None = None

    def predict(self, t: int, x: Any) -> Any:
        self.send(build.instance_request(t, instance_to_wire(self.hclass, x), self.pending))
        return self.receive(t, ("predict",), probability)

    def update(self, t: int, x: Any, y: int) -> None:
        self.pending = {"t": t, "y": y}

    def finish(self, end: End) -> None:
        if self.pending is not None:
            end["label"] = self.pending
        super().finish(end)


class DirectAdversary(DirectPlayer):
    """An adversary on a direct link, as the protocol plays a remote adversary
    (PROTOCOL.md 5.3): its commitment (if any) and round 1's instance come unasked, each
    label is asked with the learner's p, and the next instance follows it unasked."""

    role = "adversary"

    def __init__(self, link: FrameSocket, move_deadline: float, time_bank: float) -> None:
        super().__init__(link, move_deadline, time_bank)
        self.committed = False

    def commitment(self, t: int) -> None:
        """None: the adversary commits with its first move."""
        return None

    def instance(self, t: int) -> Any:
        """x_t, or a :class:`~littlestone.games.loop.Commit` before round 1 (once)."""
        kinds = ("instance", "commit") if t == 1 and not self.committed else ("instance",)
        return self.receive(t, kinds, self._instance)

    def _instance(self, message: Instance | CommitMessage) -> Any:
        if message["type"] == "commit":
            commit = commit_of(message)
            self.committed = True
            return commit
        return instance_from_wire(self.hclass, message["x"])

    def label(self, t: int, x: Any, p: float) -> Any:
        self.send(build.prediction(t, p))
        return self.receive(t, ("label",), lambda m: check_label(m["y"]))

    def reveal(self, t: int) -> tuple[Any, bytes]:
        self.send(build.reveal_asked())
        return self.receive(  # type: ignore[no-any-return]  # (what revealed returns)
            None, ("reveal",), lambda m: revealed(m, self.committed))


# -- a game ----------------------------------------------------------------------------

def _local(role: str, move: Callable[..., Any], *args: Any) -> Any:
    """A built-in agent's move: its exception ends the game against it (the message
    names only the exception, as the server's driver does)."""
    try:
        return move(*args)
    except MoveError:
        raise
    except Exception as error:
        raise Crash(role, error, detailed=False) from None


def referee(game: GameSpec, seeds: GameSeeds, learner: Learner | DirectLearner,
            adversary: Adversary | DirectAdversary, writer: RoundLog | None = None,
            game_id: str = "") -> GameResult:
    """One game through the game loop, each side a built-in agent or a
    :class:`DirectPlayer` (as :func:`littlestone.server.net.driver.run_game` plays a
    remote player, in this thread: :func:`~littlestone.games.loop.drive`)."""
    loop = GameLoop(game, seeds.referee, history=history_for(game), log=writer,
                    in_process=False)
    try:
        for player, own in ((learner, seeds.learner), (adversary, seeds.adversary)):
            if isinstance(player, DirectPlayer):
                player.ladder = loop.ladders[player.role]
                player.start(game_id, game, own, seeds.commitment)
            else:
                role = LEARNER if isinstance(player, Learner) else "adversary"
                _local(role, player.start, game, own)
    except GameEnded as ended:
        loop.end(ended)
        return loop.result()

    remote: dict[str, DirectPlayer] = {p.role: p for p in (learner, adversary)
                                       if isinstance(p, DirectPlayer)}
    methods: dict[tuple[str, str], Callable[..., Any]] = {}  # (each move's, looked up once)

    def answer(move: Move) -> Any:
        role, name, t, args, _ = move
        method = methods.get((role, name))
        if method is None:
            player = remote.get(role) or (learner if role == LEARNER else adversary)
            method = methods[(role, name)] = getattr(player, name)
        if role in remote:
            return method(t, *args)
        return _local(role, method, *args)

    result = drive(loop, answer)
    end = build.end(result.status, wire_result(result.to_dict()), game_id, seeds.key)
    for player in (learner, adversary):
        if isinstance(player, DirectPlayer):
            player.finish(dict(end))  # type: ignore[arg-type]  # (a copy of the end)
    if isinstance(learner, Learner):
        with contextlib.suppress(Exception):  # a built-in's report is not worth a crash
            result.bound = learner.final_bound(game, result.to_dict())
            result.extra.update(learner.report())
    return result


def play_direct(config: TournamentConfig, pairing: Pairing, links: dict[str, FrameSocket],
                accounts: dict[str, str], data: Path) -> str:
    """Referee one game of ``pairing`` with its submitted sides on their ``links``
    (their entrant names ``accounts``) and its built-in sides in this thread; log it
    and index it in ``data`` as the server does. Returns the game id."""
    game = rules(config, pairing)
    limits = config.limits
    learner: Learner | DirectLearner = (
        DirectLearner(links[LEARNER], limits.move_deadline, limits.time_bank)
        if LEARNER in links else LEARNERS.make(pairing.learner))
    adversary: Adversary | DirectAdversary = (
        DirectAdversary(links["adversary"], limits.move_deadline, limits.time_bank)
        if "adversary" in links else ADVERSARIES.make(pairing.adversary))

    def identity(role: str, agent: Any) -> AgentIdentity:
        if role in links:
            return {"spec": f"remote:{accounts[role]}", "account": accounts[role],
                    "sha256": "remote"}
        return agent_identity(agent)

    seeds = game_seeds(pairing.seed, fresh_key())
    recording = GameRecording(data, game, seeds, pairing.seed, identity(LEARNER, learner),
                              identity("adversary", adversary), "server")
    try:
        # (stopped from outside, a SIGTERM: ``interrupted``, as a restart marks a game
        # its process left running, and its pairing is played again)
        with recorded(recording, thread_store(data), stopped=INTERRUPTED) as writer:
            result = referee(game, seeds, learner, adversary, writer, recording.game_id)
            recording.end(result)
    except LogWriteError as exc:
        if recording.outcome is None:  # (its header: the game never started)
            recording.index_unbegun(thread_store(data), exc)
        # the server's fault, not a player's: the game is recorded aborted:storage (not
        # scored), the tournament goes on, and its next run plays the pairing again
        log.error("game %s: %s: recorded %s, its pairing played again at the tournament's "
                  "next run", recording.game_id, exc, STORAGE_STATUS,
                  extra={"game_id": recording.game_id})
    except sqlite3.OperationalError:  # (the index full: its row is ended at the next
        raise                           # chance, and nothing more can be recorded now)
    except Exception:  # a bug of ours: this game ends, with its footer and its row
        if recording.outcome is None:  # (it did not start: no log, no row)
            raise
        log.exception("internal error in game %s: it ends %s", recording.game_id,
                      recording.outcome[0]["status"], extra={"game_id": recording.game_id})
    return recording.game_id


_stores = threading.local()


def thread_store(data: Path) -> Store:
    """This thread's connection to the index of ``data``, opened once (a game's two rows
    and its outcome's read, not a connection and the schema's checks each)."""
    stores: dict[Path, Store] = _stores.__dict__.setdefault("stores", {})
    if data not in stores:
        stores[data] = Store(data)
    return stores[data]
