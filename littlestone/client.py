"""The client: a local agent plays against a server's opponent, or watches a game.

:func:`play_remote` runs a learner or an adversary (built-in or from a file) on this
side of a connection and returns the keys ``littlestone play --json`` prints; a learner
answers from the connection's callback (:class:`_Answering`). :func:`watch_remote`
follows a game as a spectator (PROTOCOL.md 5.4). :func:`enter_direct` and
:func:`play_direct` are a tournament's game on the referee's direct link
(:mod:`littlestone.protocol.frames`), in a submission's sandbox. This is the side a
student's agent runs on: it imports the protocol and the transport, never the server.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import socket
import ssl
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import numpy as np
from websockets.exceptions import ConnectionClosed

from littlestone.adversaries.base import Adversary
from littlestone.games.classes import ClassBudget, FiniteClass
from littlestone.games.errors import LittlestoneError
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.learners.base import Learner
from littlestone.protocol import build
from littlestone.protocol.codec import Limits, decode, encode
from littlestone.protocol.errors import ProtocolError
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
    AdviceRequest,
    End,
    InstanceRequest,
    ServerMessage,
    Start,
    Submitted,
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


class AgentCrashed(LittlestoneError):
    """The local agent raised during a remote game (the connection is then closed, and
    the server ends the game ``disconnected:ROLE``); ``status`` is what ``play`` would
    record, ``crash:ROLE:Exception``."""

    def __init__(self, role: str, error: BaseException) -> None:
        from littlestone.games.errors import where_raised

        where = error.where if isinstance(error, BadAnswer) else where_raised(error)
        self.status = f"crash:{role}:{type(error).__name__}"
        super().__init__(f"{self.status}: {role} raised {type(error).__name__}: {error}"
                         + (f" at {where}" if where else ""))
        self.role, self.error = role, error


class BadAnswer(LittlestoneError, TypeError):
    """An agent's method returned what is not a number where the game needs one (the
    wire cannot carry it): said with the method's own file and line, not the library's
    line that found it (issue 44)."""

    def __init__(self, method: Callable[..., Any], value: object, needs: str) -> None:
        import inspect
        import os

        name = getattr(method, "__name__", "its method")
        self.where = ""
        try:
            path = os.path.realpath(inspect.getsourcefile(method) or "")
            line = inspect.getsourcelines(method)[1]
        except (OSError, TypeError):
            pass
        else:
            shown = os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
            self.where = f"{shown}:{line} in {name}"
        super().__init__(f"{name} returned {value!r:.60} (a {type(value).__name__}): it must "
                         f"return {needs}")


def _number(method: Callable[..., Any], value: object, needs: str) -> float:
    """``value``, returned by ``method``, as a float, or :class:`BadAnswer`.

    >>> def predict(x):
    ...     return "yes"
    >>> _number(predict, predict(1), "a number in [0, 1]")
    Traceback (most recent call last):
    ...
    littlestone.client.BadAnswer: predict returned 'yes' (a str): it must return a number in [0, 1]
    """
    if isinstance(value, bool | int | float | np.integer | np.floating):
        return float(value)
    raise BadAnswer(method, value, needs)


#: What a learner's ``predict`` returns, said when it returns something else.
PREDICT_NEEDS = "a number in [0, 1], the probability that it predicts 1"


class ServerError(LittlestoneError):
    """The server answered with an error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"server: {code}: {message}")
        self.code = code


#: The close code of a server that shuts down (RFC 6455 section 7.4.1).
GOING_AWAY = 1001

P = ParamSpec("P")
R = TypeVar("R")


class ServerClosed(LittlestoneError):
    """The server closed the connection before the game ended. Code 1001 (going away)
    means it shut down (PROTOCOL.md 1.1): it records the game ``aborted:shutdown``.

    >>> str(ServerClosed(1001, "server shutting down"))
    'the server shut down: game aborted'
    >>> str(ServerClosed(None, ""))
    'the connection to the server was lost: game aborted'
    """

    def __init__(self, code: int | None, reason: str) -> None:
        self.code = code
        if code == GOING_AWAY:
            said = "the server shut down"
        elif code is None:
            said = "the connection to the server was lost"
        else:
            said = f"the server closed the connection ({code}{' ' + reason if reason else ''})"
        super().__init__(f"{said}: game aborted")


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


@_closed_is_one_line
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
    role = _role_of(agent)
    faults: list[dict[str, Any]] = []  # the server's non-fatal errors: this side's faults
    async with connect(url, tls=tls) as ws:
        receive_any = await _hello(ws, role, name, token)

        async def receive() -> ServerMessage:
            message = await receive_any()
            if message["type"] == "error":
                faults.append({"t": message.get("t"), "code": message.get("code"),
                               "message": message.get("message"), "role": role})
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
    result = dict(end["result"])
    result["status"] = end["status"]
    bound = agent.final_bound(game, result) if isinstance(agent, Learner) else None
    if bound is not None:
        result["bound"], result["bound_name"] = bound.value, bound.name
    out: dict[str, Any] = {
        "game": game.game,
        "learner": agent.spec if isinstance(agent, Learner) else (opponent or "remote"),
        "adversary": (opponent or "remote") if isinstance(agent, Learner) else agent.spec,
        "class": hclass.spec if hclass is not None else None, "horizon": game.rounds,
        "seed": seed,
    }
    if game.game == EXPERTS:
        out["experts"] = game.n_experts
    out.update({k: v for k, v in result.items() if k != "game"})
    if faults:  # as play's result lists them (the wire's result carries no lists)
        out["faults"] = faults
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
                           agent: Learner | Adversary, tournament: str) -> dict[str, Any]:
    """Enter a tournament and play every game it gives, fresh at each, until ``done``."""
    await ws.send(encode(build.enter(tournament)))
    entered = await receive()
    if entered["type"] != "entered":
        raise ServerError(str(entered.get("code", "bad_message")),
                          str(entered.get("message", "")))
    games: list[dict[str, Any]] = []
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

    def learn(self, message: InstanceRequest | AdviceRequest | End) -> None:
        """The label (mistake-bound) or outcome (experts) of the round before."""
        label = message.get("label") if message["type"] != "advice" else None
        outcome = message.get("outcome") if message["type"] != "instance" else None
        if label is not None and self.last is not None:
            self.agent.update(self.last, int(label["y"]))
        if outcome is not None:
            self.agent.update_costs(vector_from_wire(outcome["costs"]), outcome.get("y"))

    def reply(self, message: InstanceRequest | AdviceRequest) -> bytes:
        """The answer to an ``instance`` or ``advice`` message, as a frame."""
        self.learn(message)
        hclass, t = self.hclass, message["t"]
        if message["type"] == "instance":
            self.last = x = (instance_from_wire(hclass, message["x"]) if hclass is not None
                             else None)
            return encode(build.predict(t, _number(self.agent.predict, self.agent.predict(x),
                                                   PREDICT_NEEDS)))
        advice: Any = message.get("advice")
        if message.get("x") is not None and isinstance(hclass, FiniteClass):
            advice = hclass.evaluate(instance_from_wire(hclass, message["x"])).astype(np.float64)
        elif advice is not None:
            advice = vector_from_wire(advice)
        answer = self.agent.weights(advice)
        if isinstance(answer, np.ndarray):
            return encode(build.weights(t, vector_to_wire(answer)))
        return encode(build.predict(t, _number(self.agent.weights, answer, "weights (a "
                                               "vector) or a number in [0, 1]")))

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
            answer = self.reply(message)
        except Exception as exc:  # the learner's (or a bad message's): raised by run()
            self.error = exc
            self.ws.stop_answering()
            return True
        if not self.ws.send_nowait(answer):
            self.unsent = answer
            self.ws.stop_answering()
        return True


async def _adversary_loop(ws: Any, receive: Callable[[], Awaitable[ServerMessage]],
                          agent: Adversary, game: GameSpec) -> End:
    hclass = game.hclass
    digest = agent.commitment()
    if digest is not None:
        await ws.send(encode(build.commit(digest)))
    class_derived = game.game == EXPERTS and hclass is not None
    t = 1
    pending_x: Any = None
    if game.rounds:
        pending_x = await _send_move(ws, agent, game, t, class_derived)
    while True:
        message = await receive()
        if message["type"] == "error":
            continue
        if message["type"] == "end":
            return message
        if message["type"] == "reveal?":
            revealed = agent.reveal()
            target, salt = revealed if revealed is not None else (None, b"")
            if isinstance(target, np.ndarray):
                target = vector_to_wire(target)
            elif target is not None:
                target = int(target)
            await ws.send(encode(build.reveal(target, salt)))
        elif message["type"] == "prediction":
            y = agent.label(pending_x, float(message["p"]))
            await ws.send(encode(build.label(t, int(y))))
            t += 1
            if t <= game.rounds:
                pending_x = await _send_move(ws, agent, game, t, class_derived)
        elif message["type"] == "answer":
            answer: Any = (vector_from_wire(message["w"]) if message.get("w") is not None
                           else float(message["p"]))
            if class_derived:
                p = float(answer) if not isinstance(answer, np.ndarray) else float(
                    answer @ hclass.evaluate(pending_x).astype(np.float64))  # type: ignore[union-attr]  # finite here
                await ws.send(encode(build.label(t, int(agent.label(pending_x, p)))))
            else:
                outcome = agent.costs(answer)
                if isinstance(outcome, np.ndarray):
                    await ws.send(encode(build.costs(t, vector_to_wire(outcome))))
                else:
                    await ws.send(encode(build.label(t, int(outcome))))
            t += 1
            if t <= game.rounds:
                pending_x = await _send_move(ws, agent, game, t, class_derived)


async def _send_move(ws: Any, agent: Adversary, game: GameSpec, t: int,
                     class_derived: bool) -> Any:
    hclass = game.hclass
    if game.game != EXPERTS or class_derived:
        x = agent.instance()
        assert hclass is not None
        await ws.send(encode(build.instance(t, instance_to_wire(hclass, x))))
        return x
    advice = agent.advice()
    await ws.send(encode(build.advice(t, None if advice is None else vector_to_wire(advice))))
    return None


def enter_direct(path: str, token: str) -> FrameSocket:
    """(A tournament's game process, in the submission's sandbox, before the submission
    is imported.) Connect to the referee's direct link at the Unix socket ``path`` and
    spend the game's one-time ``token`` on it: the submission's own code never finds a
    credential it could use."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    link = FrameSocket(sock, CLIENT_LIMITS)
    link.send({"type": "enter", "token": token})
    return link


def play_direct(link: FrameSocket, agent: Learner | Adversary) -> int:
    """Play a tournament's game on the direct link :func:`enter_direct` opened, once the
    agent is made: this side says it is ``ready``; the referee dictates the rules and
    sends this side its own seed (``start``), then asks for each move as the server's
    protocol does (PROTOCOL.md 5.1, 5.3: a label rides with the next instance; an
    adversary sends its next instance right after its label), and closes the link when
    the game is over. Returns the rounds this side was asked to play. An exception of
    the agent is raised as :class:`AgentCrashed` (the referee sees the link close:
    ``disconnected:ROLE``)."""
    try:
        link.send({"type": "ready"})
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
            if isinstance(agent, Learner):
                return _direct_learner(link, agent, game)
            return _direct_adversary(link, agent, game)
        except (ServerError, ProtocolError, EOFError, OSError):
            raise
        except Exception as exc:  # the agent's own code
            raise AgentCrashed(_role_of(agent), exc) from exc
    finally:
        link.close()


def _direct_learner(link: FrameSocket, agent: Learner, game: GameSpec) -> int:
    hclass, last, rounds = game.hclass, None, 0
    assert hclass is not None  # (the direct link plays the mistake-bound game)
    while True:
        try:
            message = link.recv()
        except EOFError:
            return rounds
        y = message.get("y")
        if y is not None and last is not None:
            agent.update(last, int(y))
        if message["type"] == "instance":
            last = x = instance_from_wire(hclass, message["x"])
            link.send(build.predict(message["t"], float(agent.predict(x))))
            rounds += 1


def _direct_adversary(link: FrameSocket, agent: Adversary, game: GameSpec) -> int:
    hclass, pending, rounds = game.hclass, None, 0
    assert hclass is not None  # (the direct link plays the mistake-bound game)
    while True:
        try:
            message = link.recv()
        except EOFError:
            return rounds
        kind, t = message["type"], int(message.get("t") or 0)
        if kind == "commitment":
            link.send({"type": "commit", "digest": agent.commitment()})
        elif kind == "instance":
            pending = agent.instance()
            link.send(build.instance(t, instance_to_wire(hclass, pending)))
        elif kind == "label":
            y = int(agent.label(pending, float(message["p"])))
            link.send(build.label(t, y))
            rounds += 1
            if t < game.rounds:  # the next instance, unasked (as the protocol's client does)
                pending = agent.instance()
                link.send(build.instance(t + 1, instance_to_wire(hclass, pending)))
        elif kind == "reveal":
            revealed = agent.reveal()
            target, salt = revealed if revealed is not None else (None, b"")
            if isinstance(target, np.ndarray):
                target = vector_to_wire(target)
            elif target is not None:
                target = int(target)
            link.send(build.reveal(target, salt))
