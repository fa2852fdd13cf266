"""The client: a local agent plays against a server's opponent, or watches a game.

:func:`play_remote` runs a learner or an adversary (built-in or from a file) on this
side of a connection and returns the keys ``littlestone play --json`` prints; a learner
answers from the connection's callback (:class:`_Answering`). :func:`watch_remote`
follows a game as a spectator (PROTOCOL.md 5.4). :func:`enter_direct` and
:func:`play_direct` are a tournament's game on the referee's direct link
(:mod:`littlestone.protocol.frames`, PROTOCOL.md 10), in a submission's sandbox. Both
transports play a game with the same messages, answered by one sans-I/O side per role
(:class:`_LearnerSide`, :class:`_AdversarySide`). This is the side a
student's agent runs on: it imports the protocol and the transport, never the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import socket
import ssl
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar, cast

import numpy as np
from websockets.exceptions import ConnectionClosed

from littlestone.adversaries.base import Adversary
from littlestone.games.classes import ClassBudget, FiniteClass
from littlestone.games.errors import (
    AgentCrashed,
    BadAnswer,
    LittlestoneError,
    ProtocolError,
    ServerClosed,
    ServerError,
)
from littlestone.games.game import (
    EXPERTS,
    EnteredGame,
    Fault,
    GameSpec,
    PlayedFields,
)
from littlestone.learners.base import Learner
from littlestone.protocol import build
from littlestone.protocol.codec import Limits, decode, encode
from littlestone.protocol.frames import FrameSocket
from littlestone.protocol.messages import (
    from_server,
    instance_from_wire,
    instance_to_wire,
    rules_from_wire,
    rules_to_wire,
    vector_from_wire,
    vector_to_wire,
)
from littlestone.protocol.wire import (
    Advice,
    AdviceRequest,
    ClientMessage,
    Costs,
    End,
    Instance,
    InstanceRequest,
    Label,
    Predict,
    Reveal,
    ServerMessage,
    Start,
    Submitted,
    Weights,
)
from littlestone.transport import Connection, connect

__all__ = ["CLIENT_LIMITS", "AgentCrashed", "ServerClosed", "ServerError", "enter_direct",
           "play_direct", "play_remote", "submit_file", "watch_remote"]

#: What the client accepts from a server (it trusts the server's sizes and nesting).
CLIENT_LIMITS = Limits(max_frame=1 << 30, max_depth=None)
#: The classes a server may start a game of: any size a class may have, but never one
#: that names a file (the client would open it, on its own machine, for the server).
SERVERS_CLASSES = ClassBudget(files=False)


def _differ(game: GameSpec, asked: GameSpec) -> bool:
    """Whether the rules a server started are not the ones the client asked for (the
    class compared by its canonical spec)."""
    spec = game.hclass.spec if game.hclass is not None else None
    return (game.game, game.rounds, spec, game.experts) != (
        asked.game, asked.rounds, asked.hclass.spec if asked.hclass is not None else None,
        asked.experts)


def _number(method: Callable[..., Any], value: object, needs: str) -> float:
    """``value``, returned by ``method``, as a float, or :class:`BadAnswer`.

    >>> def predict(x):
    ...     return "yes"
    >>> _number(predict, predict(1), "a number")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.BadAnswer: predict returned 'yes' (a str): it must return a number
    """
    if isinstance(value, bool | int | float | np.integer | np.floating):
        return float(value)
    raise BadAnswer(method, value, needs)


#: What a learner's ``predict`` returns, said when it returns something else.
PREDICT_NEEDS = "a number in [0, 1], the probability that it predicts 1"


P = ParamSpec("P")
R = TypeVar("R")


def _closed_is_one_line(run: Callable[P, Coroutine[Any, Any, R]]
                        ) -> Callable[P, Coroutine[Any, Any, R]]:
    """``run``, with websockets' ConnectionClosed turned into :class:`ServerClosed`."""

    @functools.wraps(run)
    async def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await run(*args, **kwargs)
        except ConnectionClosed as exc:
            close = exc.rcvd
            raise ServerClosed(close.code if close is not None else None,
                               close.reason if close is not None else "") from None

    return wrapped


def _opponent_spec(opponent: str | None, agent: Learner | Adversary) -> str:
    """The server's opponent as ``play`` names the same agent: its full spec, defaults
    included (``shattered-tree:budget=50000000``), the form logs and replays use, when
    it names a built-in agent known here; as given otherwise; ``remote`` for none.

    >>> from littlestone.learners import LEARNERS
    >>> halving = LEARNERS.make("halving")
    >>> _opponent_spec("shattered-tree", halving)
    'shattered-tree:budget=50000000'
    >>> _opponent_spec("theirs", halving), _opponent_spec(None, halving)
    ('theirs', 'remote')
    """
    if opponent is None:
        return "remote"
    if ".py" in opponent:
        return opponent
    from littlestone.adversaries import ADVERSARIES
    from littlestone.learners import LEARNERS

    try:
        built = (ADVERSARIES.make(opponent) if isinstance(agent, Learner)
                 else LEARNERS.make(opponent))
    except (LittlestoneError, TypeError, ValueError):  # (not one of ours: as the server named it)
        return opponent
    return built.spec


@_closed_is_one_line
async def play_remote(
    url: str, agent: Learner | Adversary, opponent: str | None, game: GameSpec,
    seed: int | None = None, token: str | None = None, name: str = "littlestone-client",
    join: str | None = None, on_created: Callable[[str], Any] | None = None,
    tournament: str | None = None, tls: ssl.SSLContext | None = None,
) -> PlayedFields:
    """Play ``agent`` (a learner or an adversary) against the server's ``opponent``;
    returns the keys ``littlestone play --json`` prints.

    With ``opponent=None`` it creates a game for another remote agent and hands its id
    to ``on_created``; with ``join=GAME_ID`` it joins one (PROTOCOL.md 4). ``tls``: the
    TLS context for a wss:// URL (default: the system's certificate authorities)."""
    role = _role_of(agent)
    faults: list[Fault] = []  # the server's non-fatal errors: this side's faults
    async with connect(url, tls=tls) as ws:
        receive_any = await _hello(ws, role, name, token)

        async def receive() -> ServerMessage:
            message = await receive_any()
            if message["type"] == "error":
                faults.append({"t": cast("int | None", message.get("t")),  # (as sent)
                               "code": message.get("code"), "message": message.get("message"),
                               "role": role})
            return message

        if tournament is not None:
            return await _tournament_loop(ws, receive, agent, tournament)
        if join is not None:
            await ws.send(encode(build.join(join)))
        elif opponent is not None:
            await ws.send(encode(build.challenge(rules_to_wire(game), opponent, seed)))
        else:
            await ws.send(encode(build.create(rules_to_wire(game), seed)))
            created = await receive()
            if created["type"] != "created":
                raise ServerError(str(created.get("code", "bad_message")),
                                  str(created.get("message", created["type"])))
            if on_created is not None:
                maybe = on_created(created["game_id"])
                if asyncio.iscoroutine(maybe):
                    await maybe
        start = await receive()
        if start["type"] == "error":
            raise ServerError(start["code"], start["message"])
        if start["type"] != "start":
            raise ServerError("bad_message", f"expected start, got {start['type']}")
        asked = game
        game = rules_from_wire(start["rules"], SERVERS_CLASSES)
        if join is None and _differ(game, asked):
            raise ServerError("bad_message", f"the server started other rules than asked: "
                              f"{rules_to_wire(game)} for {rules_to_wire(asked)}")
        hclass = game.hclass
        end = await _play_game(ws, receive, agent, game, int(start["seed"]))
    revealed = _revealed_key(start, end)
    result = end["result"].copy()
    result["status"] = end["status"]
    bound = agent.final_bound(game, result) if isinstance(agent, Learner) else None
    if bound is not None:
        result["bound"], result["bound_name"] = bound.value, bound.name
    named = _opponent_spec(opponent, agent)
    out: PlayedFields = {
        "game": game.game,
        "learner": agent.spec if isinstance(agent, Learner) else named,
        "adversary": named if isinstance(agent, Learner) else agent.spec,
        "class": hclass.spec if hclass is not None else None, "horizon": game.rounds,
        "seed": seed,
    }
    if game.game == EXPERTS:
        out["experts"] = game.n_experts
    scores = result.copy()
    scores.pop("game", None)
    out = {**out, **scores}
    if faults and "faults" not in result:  # the server's list has the rounds (PROTOCOL.md
        out["faults"] = faults               # 5.5); an older server's result had none
    out["game_id"] = end.get("game_id")
    if revealed is not None:
        out["game_key"] = revealed.hex()
    return out


def _revealed_key(start: Start, end: End) -> bytes | None:
    """The game key the server reveals in ``end``, checked against the SHA-256 it
    committed to in ``start`` (PROTOCOL.md 7): with it the player can re-derive every
    seed and every draw of the referee's coin."""
    key, commitment = end.get("key"), start.get("commitment")
    if key is None or commitment is None:
        return None
    if hashlib.sha256(key).digest() != commitment:
        raise ServerError("bad_message", "the game key revealed at the end does not match "
                          "the commitment sent at the start")
    return bytes(key)


@_closed_is_one_line
async def watch_remote(url: str, game_id: str, token: str | None = None,
                       name: str = "littlestone-spectator",
                       on_message: Callable[[ServerMessage], Any] | None = None,
                       tls: ssl.SSLContext | None = None) -> End:
    """Watch a game the server at ``url`` is refereeing (PROTOCOL.md 5.4): every
    ``watching`` and ``rounds`` message goes to ``on_message``; returns the ``end``."""
    async with connect(url, tls=tls) as ws:
        receive = await _hello(ws, "spectator", name, token)
        await ws.send(encode(build.watch(game_id)))
        while True:
            message = await receive()
            if message["type"] == "error":  # not_found: a spectator has nothing else to do
                raise ServerError(message["code"], message["message"])
            if message["type"] == "end":
                return message
            if on_message is not None:
                on_message(message)


async def submit_file(url: str, agent: str, source: bytes, token: str | None,
                      competition: str | None = None, tls: ssl.SSLContext | None = None
                      ) -> Submitted:
    """Submit ``source``, the bytes of the file ``agent`` names (``FILE.py:Class``), to
    the competition the server at ``url`` runs (PROTOCOL.md 4.2): the ``submitted``
    answer once the server has checked it (its verdict, version and checks), or
    ServerError (refused before any check: closed, too large, too many versions)."""
    async with connect(url, tls=tls) as ws:
        receive = await _hello(ws, "learner", "littlestone-submit", token)
        await ws.send(encode(build.submit(competition, agent, source)))
        answer = await receive()
        if answer["type"] == "error":
            raise ServerError(answer["code"], answer["message"])
        if answer["type"] != "submitted":
            raise ServerError("bad_message", f"expected submitted, got {answer['type']}")
        return answer


async def _hello(ws: Connection, role: str, name: str, token: str | None
                 ) -> Callable[[], Awaitable[ServerMessage]]:
    """The handshake (PROTOCOL.md 3); returns how to receive the server's next message
    (a fatal error is raised as ServerError)."""

    async def receive() -> ServerMessage:
        message = from_server(decode(await ws.recv(), CLIENT_LIMITS))
        if message["type"] == "error" and message.get("fatal", True) is not False:
            raise ServerError(message["code"], message["message"])
        return message

    await ws.send(encode(build.hello(role, name, token)))
    welcome = await receive()
    if welcome["type"] != "welcome":
        raise ServerError("bad_message", f"expected welcome, got {welcome['type']}")
    return receive


async def _tournament_loop(ws: Any, receive: Callable[[], Awaitable[ServerMessage]],
                           agent: Learner | Adversary, tournament: str) -> PlayedFields:
    """Enter a tournament and play every game it gives, fresh at each, until ``done``."""
    await ws.send(encode(build.enter(tournament)))
    entered = await receive()
    if entered["type"] != "entered":
        raise ServerError(str(entered.get("code", "bad_message")),
                          str(entered.get("message", "")))
    games: list[EnteredGame] = []
    while True:
        message = await receive()
        if message["type"] == "done":
            return {"tournament": tournament, "games": games}
        if message["type"] != "start":
            continue
        game = rules_from_wire(message["rules"], SERVERS_CLASSES)
        end = await _play_game(ws, receive, agent, game, int(message["seed"]))
        games.append({"game_id": end.get("game_id"), "status": end["status"]})


def _role_of(agent: Learner | Adversary) -> str:
    return "learner" if isinstance(agent, Learner) else "adversary"


async def _play_game(ws: Any, receive: Callable[[], Awaitable[ServerMessage]],
                     agent: Learner | Adversary, game: GameSpec, seed: int) -> End:
    """Start ``agent`` on ``game`` and play its rounds to the ``end`` message. The agent's
    own exception is :class:`AgentCrashed` (its file and line, as ``play`` says); the
    connection's and the server's errors pass through."""
    try:
        agent.start(game, seed)
        if isinstance(agent, Learner):
            return await _learner_loop(ws, receive, agent, game)
        return await _adversary_loop(ws, receive, agent, game)
    except (ServerError, ProtocolError, OSError, asyncio.CancelledError, TimeoutError):
        raise
    except Exception as exc:
        if type(exc).__module__.startswith("websockets"):
            raise  # a closed connection: the caller says so
        raise AgentCrashed(_role_of(agent), exc) from exc


async def _learner_loop(ws: Any, receive: Callable[[], Awaitable[ServerMessage]],
                        agent: Learner, game: GameSpec) -> End:
    side = _LearnerSide(agent, game.hclass)
    answering = _Answering(ws, side)
    while True:
        await answering.run()  # the rounds that go as expected
        message = await receive()
        for reply in side.answer(message):
            await ws.send(encode(reply))
        if message["type"] == "end":
            return message


async def _adversary_loop(ws: Any, receive: Callable[[], Awaitable[ServerMessage]],
                          agent: Adversary, game: GameSpec) -> End:
    side = _AdversarySide(agent, game)
    for move in side.opening():
        await ws.send(encode(move))
    while True:
        message = await receive()
        for reply in side.answer(message):
            await ws.send(encode(reply))
        if message["type"] == "end":
            return message


class _LearnerSide:
    """The learner's side of the rounds (PROTOCOL.md 5.1, 5.2), sans I/O, on either
    transport: :meth:`answer` learns from the label or outcome a server's message
    carries and returns the moves that answer it."""

    def __init__(self, agent: Learner, hclass: Any) -> None:
        self.agent, self.hclass = agent, hclass
        self.last: Any = None  # the last instance, which the next label is about

    def opening(self) -> list[ClientMessage]:
        """A learner moves only when asked."""
        return []

    def learn(self, message: InstanceRequest | AdviceRequest | End) -> None:
        """The label (mistake-bound) or outcome (experts) of the round before."""
        label = message.get("label") if message["type"] != "advice" else None
        outcome = message.get("outcome") if message["type"] != "instance" else None
        if label is not None and self.last is not None:
            self.agent.update(self.last, int(label["y"]))
        if outcome is not None:
            self.agent.update_costs(vector_from_wire(outcome["costs"]), outcome.get("y"))

    def answer(self, message: ServerMessage) -> list[ClientMessage]:
        """The moves answering ``message``: a request's answer; nothing to an error (a
        fault of ours: the server waits for a better move) or to the end (whose label
        or outcome is learnt)."""
        if message["type"] in ("instance", "advice"):
            return [self.reply(message)]
        if message["type"] == "end":
            self.learn(message)
        return []

    def reply(self, message: InstanceRequest | AdviceRequest) -> Predict | Weights:
        """The answer to an ``instance`` or ``advice`` message."""
        self.learn(message)
        hclass, t = self.hclass, message["t"]
        if message["type"] == "instance":
            self.last = x = (instance_from_wire(hclass, message["x"]) if hclass is not None
                             else None)
            return build.predict(t, _number(self.agent.predict, self.agent.predict(x),
                                            PREDICT_NEEDS))
        advice: Any = message.get("advice")
        if message.get("x") is not None and isinstance(hclass, FiniteClass):
            advice = hclass.evaluate(instance_from_wire(hclass, message["x"])).astype(np.float64)
        elif advice is not None:
            advice = vector_from_wire(advice)
        answer = self.agent.weights(advice)
        if isinstance(answer, np.ndarray):
            return build.weights(t, vector_to_wire(answer))
        return build.predict(t, _number(self.agent.weights, answer, "weights (a vector) "
                                        "or a number in [0, 1]"))


class _Answering:
    """A learner's requests answered from the connection's callback — learn, answer,
    send — without waking the task (:meth:`run`), until a message needs
    :func:`_learner_loop` (an error, the end, anything unexpected); an exception of the
    learner ends it and is raised there, as round by round."""

    def __init__(self, ws: Connection, side: _LearnerSide) -> None:
        self.ws, self.side = ws, side
        self.error: Exception | None = None
        self.unsent: bytes | None = None

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
            message = from_server(decode(frame, CLIENT_LIMITS))
        except ProtocolError:
            return False
        if message["type"] not in ("instance", "advice"):
            return False  # declined: for _learner_loop
        try:
            answer = encode(self.side.reply(message))
        except Exception as exc:  # the learner's (or a bad message's): raised by run()
            self.error = exc
            self.ws.stop_answering()
            return True
        if not self.ws.send_nowait(answer):
            self.unsent = answer
            self.ws.stop_answering()
        return True


class _AdversarySide:
    """The adversary's side of the rounds (PROTOCOL.md 5.3), sans I/O, on either
    transport: its commitment and first move unasked (:meth:`opening`), then for each
    message the moves that answer it: the label (or costs) having seen the learner's
    answer, with the next round's move right after; the reveal when asked."""

    def __init__(self, agent: Adversary, game: GameSpec) -> None:
        self.agent, self.game = agent, game
        self.class_derived = game.game == EXPERTS and game.hclass is not None
        self.t = 1
        self.pending_x: Any = None  # the instance of the round being played

    def opening(self) -> list[ClientMessage]:
        """The commitment, if any, and round 1's move."""
        moves: list[ClientMessage] = []
        digest = self.agent.commitment()
        if digest is not None:
            moves.append(build.commit(digest))
        if self.game.rounds:
            moves.append(self._move())
        return moves

    def answer(self, message: ServerMessage) -> list[ClientMessage]:
        """The moves answering ``message`` (none to an error: a fault of ours, the
        server waits for a better move)."""
        agent, t = self.agent, self.t
        outcome: Label | Costs
        if message["type"] == "reveal?":
            return [self._reveal()]
        if message["type"] == "prediction":
            outcome = build.label(t, int(agent.label(self.pending_x, float(message["p"]))))
        elif message["type"] == "answer":
            answer: Any = (vector_from_wire(message["w"]) if message.get("w") is not None
                           else float(message["p"]))
            if self.class_derived:
                hclass = self.game.hclass
                assert isinstance(hclass, FiniteClass)  # (class-derived experts)
                p = float(answer) if not isinstance(answer, np.ndarray) else float(
                    answer @ hclass.evaluate(self.pending_x).astype(np.float64))
                outcome = build.label(t, int(agent.label(self.pending_x, p)))
            else:
                costs = agent.costs(answer)
                outcome = (build.costs(t, vector_to_wire(costs)) if isinstance(costs, np.ndarray)
                           else build.label(t, int(costs)))
        else:
            return []
        self.t += 1
        return [outcome, self._move()] if self.t <= self.game.rounds else [outcome]

    def _move(self) -> Instance | Advice:
        """Round t's instance (or, with experts not derived from a class, its advice)."""
        hclass, t = self.game.hclass, self.t
        if self.game.game != EXPERTS or self.class_derived:
            assert hclass is not None
            self.pending_x = x = self.agent.instance()
            return build.instance(t, instance_to_wire(hclass, x))
        advice = self.agent.advice()
        return build.advice(t, None if advice is None else vector_to_wire(advice))

    def _reveal(self) -> Reveal:
        """The target and the salt the adversary committed to (PROTOCOL.md 7)."""
        revealed = self.agent.reveal()
        target, salt = revealed if revealed is not None else (None, b"")
        if isinstance(target, np.ndarray):
            target = vector_to_wire(target)
        elif target is not None:
            target = int(target)
        return build.reveal(target, salt)


def enter_direct(path: str, token: str) -> FrameSocket:
    """(A tournament's game process, in the submission's sandbox, before the submission
    is imported.) Connect to the referee's direct link at the Unix socket ``path`` and
    spend the game's one-time ``token`` on it: the submission's own code never finds a
    credential it could use."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    link = FrameSocket(sock, CLIENT_LIMITS)
    link.send(build.link_enter(token))
    return link


def _until_closed(link: FrameSocket) -> None:
    """After ``end``, wait for the referee to close the link (PROTOCOL.md 10): it counts
    this process's own processes first, so a game process that forked cannot exit and
    take its children's trace with it before the count."""
    with contextlib.suppress(EOFError, OSError, ProtocolError):
        while True:
            link.recv()


def play_direct(link: FrameSocket, agent: Learner | Adversary) -> End | None:
    """Play a tournament's game on the direct link :func:`enter_direct` opened, once the
    agent is made: this side says it is ``ready``; the referee dictates the rules and
    sends this side its own seed (``start``), then plays it with the protocol's own
    messages (PROTOCOL.md 5.1, 5.3, "the direct link") and ends with ``end``. Returns
    the ``end`` (``None``: the referee closed the link without one). An exception of the
    agent is raised as :class:`AgentCrashed` (the referee sees the link close:
    ``disconnected:ROLE``)."""
    try:
        link.send(build.ready())
        try:
            start = from_server(link.recv())
        except (EOFError, OSError):
            raise ServerError("unauthorized", "the referee closed the link") from None
        if start["type"] == "error":
            raise ServerError(start["code"], start["message"])
        if start["type"] != "start":
            raise ServerError("bad_message", f"expected start, got {start['type']}")
        game = rules_from_wire(start["rules"], SERVERS_CLASSES)
        try:
            agent.start(game, int(start["seed"]))
            side = (_LearnerSide(agent, game.hclass) if isinstance(agent, Learner)
                    else _AdversarySide(agent, game))
            link.send_all(side.opening())
            while True:
                try:
                    message = from_server(link.recv())
                except EOFError:
                    return None
                link.send_all(side.answer(message))  # (a label and the next instance: one write)
                if message["type"] == "end":
                    _until_closed(link)
                    return message
        except (ServerError, ProtocolError, EOFError, OSError):
            raise
        except Exception as exc:  # the agent's own code
            raise AgentCrashed(_role_of(agent), exc) from exc
    finally:
        link.close()
