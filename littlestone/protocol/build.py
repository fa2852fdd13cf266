"""The messages of PROTOCOL.md as their senders build them: one function a message type,
each returning its type of :mod:`~littlestone.protocol.wire`, so that every frame the
server or a client sends is built here and nowhere else (a test holds the package to it,
and another that the receiving side's checks take every one of them).

The keys are in the order PROTOCOL.md writes them: a frame is the msgpack of its map, in
that order. ``instance`` and ``advice`` go both ways with other keys: :func:`instance`
and :func:`advice` are an adversary's moves, :func:`instance_request` and
:func:`advice_request` the server's requests to a learner; ``reveal?`` is
:func:`reveal_asked`.

>>> join("g7")
{'type': 'join', 'game_id': 'g7'}
>>> predict(3, 0.25)
{'type': 'predict', 't': 3, 'p': 0.25}
>>> instance_request(2, 5, label={"t": 1, "y": 0})
{'type': 'instance', 't': 2, 'x': 5, 'label': {'t': 1, 'y': 0}}
>>> error("not_found", "no open game 'g7'")
{'type': 'error', 'code': 'not_found', 'message': "no open game 'g7'", 'fatal': False}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from littlestone.games.errors import ProtocolError
from littlestone.games.game import ResultFields
from littlestone.protocol.wire import (
    PROTOCOL_VERSION,
    Advice,
    AdviceRequest,
    Answer,
    Challenge,
    Commit,
    Costs,
    Create,
    Created,
    Done,
    End,
    Enter,
    Entered,
    Error,
    ExpertsRounds,
    Hello,
    Instance,
    InstanceRequest,
    Join,
    Label,
    LabelOf,
    LinkEnter,
    OutcomeOf,
    Predict,
    Prediction,
    Ready,
    Reveal,
    RevealAsked,
    Revoke,
    Revoked,
    Rounds,
    Rules,
    Start,
    Submit,
    Submitted,
    Totals,
    Vector,
    Watch,
    Watching,
    Weights,
    Welcome,
    WelcomeLimits,
    WireInstance,
)

__all__ = [
    "advice",
    "advice_request",
    "answer",
    "challenge",
    "commit",
    "costs",
    "create",
    "created",
    "done",
    "end",
    "enter",
    "entered",
    "error",
    "expert_rounds",
    "hello",
    "instance",
    "instance_request",
    "join",
    "label",
    "predict",
    "prediction",
    "reveal",
    "reveal_asked",
    "revoke",
    "revoked",
    "rounds",
    "spectator_end",
    "start",
    "submit",
    "submitted",
    "watch",
    "watching",
    "weights",
    "welcome",
]


# -- client -> server (PROTOCOL.md 3-5) -------------------------------------------


def hello(role: str, agent: str, token: str | None,
          capabilities: list[Any] | None = None) -> Hello:
    """The handshake's first message (PROTOCOL.md 3), in this protocol's version."""
    return {"type": "hello", "version": PROTOCOL_VERSION, "role": role, "agent": agent,
            "token": token, "capabilities": [] if capabilities is None else capabilities}


def challenge(rules: Mapping[str, Any], opponent: str, seed: int | None) -> Challenge:
    """A game against the server's agent ``opponent`` (PROTOCOL.md 4)."""
    return {"type": "challenge", "rules": rules, "opponent": opponent, "seed": seed}


def create(rules: Mapping[str, Any], seed: int | None) -> Create:
    """A game for another remote agent to join (PROTOCOL.md 4)."""
    return {"type": "create", "rules": rules, "seed": seed}


def join(game_id: str) -> Join:
    return {"type": "join", "game_id": game_id}


def enter(tournament: str) -> Enter:
    return {"type": "enter", "tournament": tournament}


def watch(game_id: str) -> Watch:
    return {"type": "watch", "game_id": game_id}


def revoke(name: str) -> Revoke:
    """An admin voids ``name``'s token (PROTOCOL.md 3.1)."""
    return {"type": "revoke", "name": name}


def submit(competition: str | None, agent: str, source: bytes) -> Submit:
    """A student's file for a competition (PROTOCOL.md 4.2)."""
    return {"type": "submit", "competition": competition, "agent": agent, "source": source}


def predict(t: int, p: float) -> Predict:
    """A learner's p_t (PROTOCOL.md 5.1, 5.2)."""
    return {"type": "predict", "t": t, "p": p}


def weights(t: int, w: Vector) -> Weights:
    """A learner's distribution over the experts (PROTOCOL.md 5.2)."""
    return {"type": "weights", "t": t, "w": w}


def commit(digest: bytes) -> Commit:
    """An adversary's commitment, before round 1 (PROTOCOL.md 5.3)."""
    return {"type": "commit", "digest": digest}


def instance(t: int, x: WireInstance) -> Instance:
    """An adversary's x_t (PROTOCOL.md 5.3)."""
    return {"type": "instance", "t": t, "x": x}


def advice(t: int, advice: Vector | None) -> Advice:
    """An adversary's advice of round t, or nil (PROTOCOL.md 5.3)."""
    return {"type": "advice", "t": t, "advice": advice}


def label(t: int, y: int) -> Label:
    """An adversary's y_t (PROTOCOL.md 5.3)."""
    return {"type": "label", "t": t, "y": y}


def costs(t: int, v: Vector) -> Costs:
    """An adversary's cost vector of round t (PROTOCOL.md 5.3)."""
    return {"type": "costs", "t": t, "v": v}


def reveal(target: WireInstance | None, salt: bytes) -> Reveal:
    """An adversary's target (or witness) and salt, after ``reveal?`` (PROTOCOL.md 5.3)."""
    return {"type": "reveal", "target": target, "salt": salt}


def link_enter(token: str) -> LinkEnter:
    """A tournament's game process enters the referee's direct link with its one-time
    token (PROTOCOL.md 10).

    >>> link_enter("t0k3n")
    {'type': 'enter', 'token': 't0k3n'}
    """
    return {"type": "enter", "token": token}


def ready() -> Ready:
    """The game process has made its agent: the referee may start (PROTOCOL.md 10)."""
    return {"type": "ready"}


# -- server -> client ---------------------------------------------------------------


def welcome(session: str, server: str, limits: WelcomeLimits) -> Welcome:
    """The answer to a good ``hello`` (PROTOCOL.md 3): the session's id, the server's
    name and what the session's moves are held to."""
    return {"type": "welcome", "version": PROTOCOL_VERSION, "session": session,
            "server": server, "limits": limits}


def error(code: str, message: str, fatal: bool = False) -> Error:
    """A refusal or a fault (PROTOCOL.md 6); ``fatal``: the connection closes."""
    return {"type": "error", "code": code, "message": message, "fatal": fatal}


def error_of(problem: ProtocolError) -> Error:
    """The ``error`` message a :class:`~littlestone.games.errors.ProtocolError` becomes.

    >>> from littlestone.protocol.errors import Code
    >>> error_of(ProtocolError(Code.ILLEGAL_MOVE, "p is 1.5"))
    {'type': 'error', 'code': 'illegal_move', 'message': 'p is 1.5', 'fatal': False}
    """
    return error(problem.code.value, problem.message, problem.fatal)


def created(game_id: str) -> Created:
    return {"type": "created", "game_id": game_id}


def entered(tournament: str) -> Entered:
    return {"type": "entered", "tournament": tournament}


def done(tournament: str) -> Done:
    """The tournament the player entered has no more games for it."""
    return {"type": "done", "tournament": tournament}


def revoked(name: str) -> Revoked:
    return {"type": "revoked", "name": name}


def submitted(competition: str, version: int, sha256: str, verdict: str,
              reason: str | None, role: str | None, duplicate: bool, message: str,
              checks: list[Any]) -> Submitted:
    """The answer to ``submit`` (PROTOCOL.md 4.2): the version stored and its verdict."""
    return {"type": "submitted", "competition": competition, "version": version,
            "sha256": sha256, "verdict": verdict, "reason": reason, "role": role,
            "duplicate": duplicate, "message": message, "checks": checks}


def start(game_id: str, role: str, rules: Rules, seed: int,
          commitment: bytes | None) -> Start:
    """A game begins (PROTOCOL.md 4, 7): the player's role, the rules, its own seed and
    SHA-256 of the game key."""
    return {"type": "start", "game_id": game_id, "role": role, "rules": rules, "seed": seed,
            "commitment": commitment}


def instance_request(t: int, x: WireInstance, label: LabelOf | None = None
                     ) -> InstanceRequest:
    """x_t for a learner, with the label of round t-1 if there was one (PROTOCOL.md 5.1)."""
    message: InstanceRequest = {"type": "instance", "t": t, "x": x}
    if label is not None:
        message["label"] = label
    return message


def advice_request(t: int, advice: Vector | None, x: WireInstance | None = None,
                   outcome: OutcomeOf | None = None) -> AdviceRequest:
    """The advice of round t for a learner, or (class-derived experts) no advice and the
    instance ``x``; with the outcome of round t-1 if there was one (PROTOCOL.md 5.2).

    >>> advice_request(4, None, x=9, outcome={"t": 3, "costs": b"", "y": 1})
    {'type': 'advice', 't': 4, 'advice': None, 'x': 9, 'outcome': {'t': 3, 'costs': b'', 'y': 1}}
    """
    message: AdviceRequest = {"type": "advice", "t": t, "advice": advice}
    if x is not None:
        message["x"] = x
    if outcome is not None:
        message["outcome"] = outcome
    return message


def prediction(t: int, p: float) -> Prediction:
    """The learner's p_t, shown to the adversary (PROTOCOL.md 5.3)."""
    return {"type": "prediction", "t": t, "p": p}


def answer(t: int, w: Vector | None = None, p: float | None = None) -> Answer:
    """The learner's answer in the experts game, shown to the adversary: its weights
    ``w`` or its ``p`` (PROTOCOL.md 5.3)."""
    message: Answer = {"type": "answer", "t": t}
    if w is not None:
        message["w"] = w
    if p is not None:
        message["p"] = p
    return message


def reveal_asked() -> RevealAsked:
    """The server asks the adversary for its reveal (PROTOCOL.md 5.3)."""
    return {"type": "reveal?"}


def end(status: str, result: ResultFields, game_id: str, key: bytes | None) -> End:
    """A player's game is over (PROTOCOL.md 5, 7): its status, its result and the game
    key (a learner's also gets the last round's label or outcome, added by the host)."""
    return {"type": "end", "status": status, "result": result, "game_id": game_id,
            "key": key}


def spectator_end(game_id: str, status: str, result: ResultFields) -> End:
    """The game a spectator watches is over (PROTOCOL.md 5.4): no key."""
    return {"type": "end", "game_id": game_id, "status": status, "result": result}


def watching(game_id: str, rules: Rules, learner: str, adversary: str, t: int,
             totals: Totals) -> Watching:
    """A spectator's first message: the game so far and its running totals (PROTOCOL.md
    5.4)."""
    return {"type": "watching", "game_id": game_id, "rules": rules, "learner": learner,
            "adversary": adversary, "t": t, **totals}


def rounds(game_id: str, t0: int, n: int, p: list[float], y: list[int],
           prediction: list[int], totals: Totals) -> Rounds:
    """Rounds ``t0 .. t0+n-1`` of a mistake-bound game as its log keeps them, with the
    running totals after them (PROTOCOL.md 5.4)."""
    return {"type": "rounds", "game_id": game_id, "t0": t0, "n": n, "p": p, "y": y,
            "prediction": prediction, "t": t0 + n - 1, **totals}


def expert_rounds(game_id: str, t0: int, n: int, y: list[int | None],
                  round_loss: list[float], round_expected_loss: list[float],
                  totals: Totals) -> ExpertsRounds:
    """Rounds ``t0 .. t0+n-1`` of an experts game, with the running totals after them
    (PROTOCOL.md 5.4): ``y`` nil in a game of costs."""
    return {"type": "rounds", "game_id": game_id, "t0": t0, "n": n, "y": y,
            "round_loss": round_loss, "round_expected_loss": round_expected_loss,
            "t": t0 + n - 1, **totals}
