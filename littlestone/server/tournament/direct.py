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
(PROTOCOL.md 6), with the same messages' contents (a label rides with the next instance;
an adversary sends its next instance right after its label), logged and indexed as the
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
import threading
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from littlestone.adversaries import ADVERSARIES
from littlestone.adversaries.base import Adversary
from littlestone.games.commitment import MIN_SALT_BYTES
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
from littlestone.games.loop import FAULT, LEARNER, FaultLadder, GameLoop, Move, MoveClock, RoundLog
from littlestone.games.mistake_bound import check_label, check_probability
from littlestone.learners import LEARNERS
from littlestone.learners.base import Learner
from littlestone.local import history_for
from littlestone.protocol.errors import Code
from littlestone.protocol.frames import FrameSocket
from littlestone.protocol.messages import (
    instance_from_wire,
    instance_to_wire,
    rules_to_wire,
    vector_from_wire,
)
from littlestone.server.records.logged import agent_identity, game_info, log_footer, log_header
from littlestone.server.records.logs import LogWriter
from littlestone.server.records.rows import AgentIdentity
from littlestone.server.records.store import Store, new_game_id
from littlestone.server.tournament.config import TournamentConfig
from littlestone.server.tournament.pairing import Pairing, rules

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

    def start(self, game_id: str, game: GameSpec, seed: int, commitment: bytes) -> None:
        """The rules, this side's own seed and SHA-256 of the game key, as the server's
        ``start`` says them."""
        self.hclass, self.rounds = game.hclass, game.rounds
        self.send({"type": "start", "game_id": game_id, "role": self.role,
                   "rules": rules_to_wire(game), "seed": seed, "commitment": commitment})

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.link.send(message)
        except OSError:
            raise Disconnected(self.role) from None

    def receive(self, t: int | None, kind: str, accept: Callable[[dict[str, Any]], Any]) -> Any:
        """The next acceptable ``kind`` message of round ``t`` (None: a move of no round),
        made into a move by ``accept`` (which raises IllegalMove or ProtocolError)."""
        ends_move = self.ladder.ends_move
        started = time.monotonic()
        while True:
            try:
                message = self.link.recv(self.clock.deadline(started))
            except TimeoutError:
                self.clock.timed_out()
                self.ladder.fault(t, Code.TIMEOUT.value,
                                  f"no move within the deadline for round {t}")
                if ends_move:
                    return FAULT
                started = time.monotonic()
                continue
            except EOFError:
                raise Disconnected(self.role) from None
            except ProtocolError as exc:
                if exc.fatal:
                    raise Disconnected(self.role) from None
                code, text = exc.code.value, exc.message
            else:
                got = message.get("t")
                if message["type"] == kind and got == t:
                    try:
                        move = accept(message)
                    except ProtocolError as exc:
                        code, text = exc.code.value, exc.message
                    except IllegalMove as exc:
                        code, text = Code.ILLEGAL_MOVE.value, exc.message
                    except (KeyError, TypeError, ValueError) as exc:
                        code, text = Code.BAD_MESSAGE.value, f"a malformed {kind}: {exc!r}"[:200]
                    else:
                        self.clock.charge(started, time.monotonic())
                        return move
                elif type(got) is int and t is not None and got < t:
                    continue  # a move for a round already decided
                else:
                    code, text = Code.OUT_OF_TURN.value, f"expected {kind} for round {t}"
            self.clock.charge(started, time.monotonic())
            self.ladder.fault(t, code, text)
            if ends_move:
                return FAULT
            started = time.monotonic()


def _probability(message: dict[str, Any]) -> float:
    p = message["p"]
    if type(p) is float and 0.0 <= p <= 1.0:
        return p
    return check_probability(p)


class DirectLearner(DirectPlayer):
    """A learner on a direct link: asked for p with each instance; the label of the
    round before rides with the next instance (or with the ``end``)."""

    role = LEARNER

    def __init__(self, link: FrameSocket, move_deadline: float, time_bank: float) -> None:
        super().__init__(link, move_deadline, time_bank)
        self.pending: int | None = None

    def predict(self, t: int, x: Any) -> Any:
        message = {"type": "instance", "t": t, "x": instance_to_wire(self.hclass, x)}
        if self.pending is not None:
            message["y"] = self.pending
        self.send(message)
        return self.receive(t, "predict", _probability)

    def update(self, t: int, x: Any, y: int) -> None:
        self.pending = y

    def finish(self) -> None:
        """The game is over: the last label (the link is closed next)."""
        with contextlib.suppress(Disconnected):
            self.send({"type": "end", "y": self.pending})


class DirectAdversary(DirectPlayer):
    """An adversary on a direct link: asked for its commitment, its first instance, and
    each label (having seen p), after which it sends its next instance unasked."""

    role = "adversary"

    def __init__(self, link: FrameSocket, move_deadline: float, time_bank: float) -> None:
        super().__init__(link, move_deadline, time_bank)
        self.committed = False
        #: The round whose instance is on its way (sent after the label before it).
        self.coming = 0

    def commitment(self, t: int) -> bytes | None:
        self.send({"type": "commitment"})
        return self.receive(None, "commit", self._commit)  # type: ignore[no-any-return]

    def _commit(self, message: dict[str, Any]) -> bytes | None:
        digest = message["digest"]
        if digest is None:
            return None
        if not isinstance(digest, bytes) or len(digest) != 32:
            raise IllegalMove("adversary", "commitment", "a commitment is 32 bytes (SHA-256)")
        self.committed = True
        return digest

    def instance(self, t: int) -> Any:
        if self.coming != t:
            self.send({"type": "instance", "t": t})
        return self.receive(t, "instance", lambda m: instance_from_wire(self.hclass, m["x"]))

    def label(self, t: int, x: Any, p: float) -> Any:
        self.send({"type": "label", "t": t, "p": p})
        y = self.receive(t, "label", lambda m: check_label(m["y"]))
        self.coming = t + 1 if t < self.rounds else 0
        return y

    def reveal(self, t: int) -> tuple[Any, bytes]:
        self.send({"type": "reveal"})

        def accept(message: dict[str, Any]) -> tuple[Any, bytes]:
            target, salt = message["target"], message["salt"]
            if isinstance(target, bytes | list):
                target = vector_from_wire(target)
            if not isinstance(salt, bytes):
                raise IllegalMove("adversary", "salt", "the salt is bytes")
            if self.committed and len(salt) < MIN_SALT_BYTES:
                raise IllegalMove("adversary", "salt", f"salt must be >= {MIN_SALT_BYTES} bytes")
            return target, salt

        return self.receive(None, "reveal", accept)  # type: ignore[no-any-return]

    def finish(self) -> None:
        pass


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


def _resume(how: Callable[[Any], Move], value: Any) -> Move | GameResult:
    try:
        return how(value)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def referee(game: GameSpec, seeds: GameSeeds, learner: Learner | DirectLearner,
            adversary: Adversary | DirectAdversary, writer: RoundLog | None = None,
            game_id: str = "") -> GameResult:
    """One game through the game loop, each side a built-in agent or a
    :class:`DirectPlayer` (as :func:`littlestone.server.net.driver.run_game` plays a
    remote player, in this thread)."""
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
    moves: Generator[Move, Any, GameResult] = loop.moves()
    step: Move | GameResult = _resume(moves.send, None)
    while isinstance(step, tuple):
        role, name, t, args, _ = step
        player = learner if role == LEARNER else adversary
        try:
            if isinstance(player, DirectPlayer):
                answer = getattr(player, name)(t, *args)
            else:
                answer = _local(role, getattr(player, name), *args)
        except BaseException as error:
            step = _resume(moves.throw, error)
            continue
        step = _resume(moves.send, answer)
    result = step
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

    game_id = new_game_id()
    seeds = game_seeds(pairing.seed, fresh_key())
    header = log_header(game_id, "server", game, seeds, identity(LEARNER, learner),
                        identity("adversary", adversary))
    path = data / "games" / f"{game_id}.lslog"
    store = thread_store(data)
    store.start_game({**game_info(game), "learner": header["learner"]["spec"],
                      "adversary": header["adversary"]["spec"], "seed": pairing.seed,
                      "horizon": game.rounds, "source": "server"}, str(path), game_id)
    writer = LogWriter(path, header, background=False, level="full")
    try:
        result = referee(game, seeds, learner, adversary, writer, game_id)
    except Exception:  # a bug of ours: this game ends, with its footer and its row
        log.exception("internal error in game %s: it ends aborted:internal", game_id,
                      extra={"game_id": game_id})
        writer.close(log_footer(seeds, None, "aborted:internal"))
        store.finish_game(game_id, {"status": "aborted:internal",
                                    "rounds": writer.rounds_written}, chain=writer.chain)
        return game_id
    for player in (learner, adversary):
        if isinstance(player, DirectLearner | DirectAdversary):
            player.finish()
    writer.close(log_footer(seeds, result))
    store.finish_game(game_id, result.to_dict(), chain=writer.chain)  # the anchor
    return game_id


_stores = threading.local()


def thread_store(data: Path) -> Store:
    """This thread's connection to the index of ``data``, opened once (a game's two rows
    and its outcome's read, not a connection and the schema's checks each)."""
    stores: dict[Path, Store] = _stores.__dict__.setdefault("stores", {})
    if data not in stores:
        stores[data] = Store(data)
    return stores[data]
