"""The messages of PROTOCOL.md as types: one :class:`~typing.TypedDict` a message, its
``type`` a :data:`~typing.Literal`, so that mypy checks the keys a sender writes and a
receiver reads. Each is ``@final`` (no message type extends another), so that a test
of a key (``"t" in message``) narrows a union too.

Two unions, one a direction: :data:`ClientMessage` (what a learner, an adversary or a
spectator sends: PROTOCOL.md 3-5) and :data:`ServerMessage` (what the server sends).
``instance`` and ``advice`` go both ways with other keys, so each direction has its own
type for them (:class:`Instance` from an adversary, :class:`InstanceRequest` to a
learner). Their senders build them with :mod:`.build`, one function a message.
Testing ``message["type"]`` narrows a union to one message:

>>> def moved(message: ClientMessage) -> float | None:
...     if message["type"] == "predict":
...         return message["p"]  # a Predict here: mypy knows its "p"
...     return None  # (message["p"] here: mypy says Hello, Challenge ... have no "p")
>>> moved({"type": "predict", "t": 1, "p": 0.5}), moved({"type": "join", "game_id": "g"})
(0.5, None)

A peer's frame is a plain ``dict[str, Any]`` until :func:`.messages.check` has held it to
its schema (:data:`.messages.SCHEMAS`, the same fields as here); it is narrowed to these
types in one place each way: :func:`.messages.from_client` (the server's session) and
:func:`.messages.from_server` (the client). Where the session's state lets only some
types through (the lobby's requests, the moves a game waits for), the server narrows
further with a ``cast`` that says so (``server/net/lobby.py``, ``players.py``). Two
maps inside a message stay untyped: the ``rules`` of ``challenge`` and ``create``, a
``Mapping[str, Any]`` as the peer wrote it until :func:`.messages.rules_from_wire` reads
it, and the ``result`` of ``end``, a map held only to be one: its keys are the game's
and its learner's report's (:class:`~littlestone.games.game.ResultFields`, every one
read with a default). At run time a message is a plain dict:

>>> hello: Hello = {"type": "hello", "version": 1, "role": "learner", "agent": "demo",
...                 "token": None, "capabilities": []}
>>> predict: Predict = {"type": "predict", "t": 1, "p": 0.5}
>>> from littlestone.protocol.codec import decode, encode
>>> decode(encode(predict)) == predict
True
>>> "welcome" in SERVER_TYPES, "welcome" in CLIENT_TYPES
(True, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict, final

from littlestone.games.game import ResultFields

__all__ = [
    "CLIENT_TYPES",
    "PROTOCOL_VERSION",
    "SERVER_TYPES",
    "Advice",
    "AdviceRequest",
    "Answer",
    "Challenge",
    "ClientMessage",
    "Commit",
    "Costs",
    "Create",
    "Created",
    "Done",
    "End",
    "Enter",
    "Entered",
    "Error",
    "ExpertsRounds",
    "Hello",
    "Instance",
    "InstanceRequest",
    "Join",
    "Label",
    "LabelOf",
    "LobbyRequest",
    "OutcomeOf",
    "Predict",
    "Prediction",
    "Reveal",
    "RevealAsked",
    "Revoke",
    "Revoked",
    "Rounds",
    "Rules",
    "ServerMessage",
    "Start",
    "Submit",
    "Submitted",
    "Totals",
    "Watch",
    "Watching",
    "Weights",
    "Welcome",
    "WelcomeLimits",
]

#: The version of the protocol these messages are (``hello.version``, ``welcome.version``).
PROTOCOL_VERSION = 1

#: A vector on the wire (PROTOCOL.md 2): a bin of float64 little-endian, or an array of
#: numbers.
Vector = bytes | list[Any]
#: An instance on the wire (PROTOCOL.md 2): an int, a bin (a bit mask, or a vector of
#: ``halfspaces``), or an array of numbers.
WireInstance = int | bytes | list[Any]

#: A game's rules as the server writes them (PROTOCOL.md 2; ``class`` is a Python
#: keyword, hence the functional form). A peer's ``rules`` are a ``Mapping[str, Any]``
#: until :func:`.messages.rules_from_wire` has read them.
Rules = TypedDict("Rules", {"game": str, "class": str | None, "experts": int | None,
                            "rounds": int, "horizon": int | None})


# -- client -> server (PROTOCOL.md 3-5) -------------------------------------------


@final
class Hello(TypedDict):
    """The handshake's first message (PROTOCOL.md 3)."""

    type: Literal["hello"]
    version: int
    role: str
    agent: str
    token: str | None
    #: Strings the server acts on when it knows them (``human``); anything else is ignored.
    capabilities: list[Any]


@final
class Challenge(TypedDict):
    """A game against a server-side agent (PROTOCOL.md 4)."""

    type: Literal["challenge"]
    rules: Mapping[str, Any]
    opponent: str
    seed: int | None


@final
class Create(TypedDict):
    """A game for another remote agent to join (PROTOCOL.md 4)."""

    type: Literal["create"]
    rules: Mapping[str, Any]
    seed: int | None


@final
class Join(TypedDict):
    type: Literal["join"]
    game_id: str


@final
class Enter(TypedDict):
    type: Literal["enter"]
    tournament: str


@final
class Watch(TypedDict):
    type: Literal["watch"]
    game_id: str


@final
class Revoke(TypedDict):
    type: Literal["revoke"]
    name: str


@final
class Submit(TypedDict):
    """A student's file for a competition (PROTOCOL.md 4.2): ``agent`` is
    ``FILE.py:Class``, ``source`` the file's bytes; ``competition`` None for the
    server's own."""

    type: Literal["submit"]
    competition: str | None
    agent: str
    source: bytes


@final
class Predict(TypedDict):
    """A learner's p_t (PROTOCOL.md 5.1, 5.2)."""

    type: Literal["predict"]
    t: int
    p: float


@final
class Weights(TypedDict):
    """A learner's distribution over the experts (PROTOCOL.md 5.2)."""

    type: Literal["weights"]
    t: int
    w: Vector


@final
class Commit(TypedDict):
    """An adversary's commitment, before round 1 (PROTOCOL.md 5.3)."""

    type: Literal["commit"]
    digest: bytes


@final
class Instance(TypedDict):
    """An adversary's x_t (PROTOCOL.md 5.3)."""

    type: Literal["instance"]
    t: int
    x: WireInstance


@final
class Advice(TypedDict):
    """An adversary's advice of round t, or nil (PROTOCOL.md 5.3)."""

    type: Literal["advice"]
    t: int
    advice: Vector | None


@final
class Label(TypedDict):
    type: Literal["label"]
    t: int
    y: int


@final
class Costs(TypedDict):
    type: Literal["costs"]
    t: int
    v: Vector


@final
class Reveal(TypedDict):
    """An adversary's target (or witness) and salt, after ``reveal?`` (PROTOCOL.md 5.3)."""

    type: Literal["reveal"]
    target: WireInstance | None
    salt: bytes


ClientMessage = (Hello | Challenge | Create | Join | Enter | Watch | Revoke | Submit
                 | Predict | Weights | Commit | Instance | Advice | Label | Costs | Reveal)
#: What a client may send between games (:data:`.session.LOBBY_MESSAGES`).
LobbyRequest = Challenge | Create | Join | Enter | Watch | Revoke | Submit


# -- server -> client ---------------------------------------------------------------


@final
class WelcomeLimits(TypedDict):
    """What the session's moves are held to (PROTOCOL.md 3, 1.1)."""

    max_frame: int
    move_deadline_ms: int
    time_bank_ms: int
    lobby_idle_ms: int


@final
class Welcome(TypedDict):
    type: Literal["welcome"]
    version: int
    session: str
    server: str
    limits: WelcomeLimits


@final
class Created(TypedDict):
    type: Literal["created"]
    game_id: str


@final
class Entered(TypedDict):
    type: Literal["entered"]
    tournament: str


@final
class Done(TypedDict):
    type: Literal["done"]
    tournament: str


@final
class Revoked(TypedDict):
    type: Literal["revoked"]
    name: str


@final
class Submitted(TypedDict):
    """The answer to ``submit`` (PROTOCOL.md 4.2): the version stored and its verdict."""

    type: Literal["submitted"]
    competition: str
    version: int
    sha256: str
    verdict: str
    reason: str | None
    role: str | None
    duplicate: bool
    message: str
    checks: list[Any]


@final
class Start(TypedDict):
    """A game begins: the player's role, the rules, its own seed and SHA-256 of the game
    key (PROTOCOL.md 4, 7)."""

    type: Literal["start"]
    game_id: str
    role: str
    rules: Rules
    seed: int
    commitment: bytes | None


@final
class LabelOf(TypedDict):
    """The label of the round before, riding with the next ``instance`` (PROTOCOL.md 5.1)."""

    t: int
    y: int


@final
class OutcomeOf(TypedDict):
    """The outcome of the round before, riding with the next ``advice`` (PROTOCOL.md 5.2):
    ``y`` nil in a game of costs."""

    t: int
    costs: Vector
    y: int | None


@final
class InstanceRequest(TypedDict):
    """x_t for a learner, with the label of round t-1 (PROTOCOL.md 5.1)."""

    type: Literal["instance"]
    t: int
    x: WireInstance
    label: NotRequired[LabelOf]


@final
class AdviceRequest(TypedDict):
    """The advice of round t for a learner (or, with class-derived experts, the instance
    ``x`` and no advice), with the outcome of round t-1 (PROTOCOL.md 5.2)."""

    type: Literal["advice"]
    t: int
    advice: Vector | None
    x: NotRequired[WireInstance | None]
    outcome: NotRequired[OutcomeOf]


@final
class Prediction(TypedDict):
    """The learner's p_t, shown to the adversary (PROTOCOL.md 5.3)."""

    type: Literal["prediction"]
    t: int
    p: float


@final
class Answer(TypedDict):
    """The learner's answer in the experts game, shown to the adversary: its weights or
    its p (PROTOCOL.md 5.3)."""

    type: Literal["answer"]
    t: int
    w: NotRequired[Vector]
    p: NotRequired[float]


@final
class RevealAsked(TypedDict):
    """The server asks the adversary for its reveal (PROTOCOL.md 5.3)."""

    type: Literal["reveal?"]


@final
class Totals(TypedDict, total=False):
    """The running totals of a game a spectator watches, after its last round logged
    (PROTOCOL.md 5.4): mistakes in the mistake-bound game, losses and regrets in the
    experts game."""

    mistakes: float
    expected_mistakes: float
    loss: float
    expected_loss: float
    regret: float
    expected_regret: float


@final
class Watching(TypedDict):
    """A spectator's first message: the game so far and its running totals (PROTOCOL.md
    5.4): mistakes in the mistake-bound game, losses and regrets in the experts game."""

    type: Literal["watching"]
    game_id: str
    rules: Rules
    learner: str
    adversary: str
    t: int
    mistakes: NotRequired[float]
    expected_mistakes: NotRequired[float]
    loss: NotRequired[float]
    expected_loss: NotRequired[float]
    regret: NotRequired[float]
    expected_regret: NotRequired[float]


@final
class Rounds(TypedDict):
    """Rounds ``t0 .. t`` of a mistake-bound game as the log keeps them, with the running
    totals after ``t`` (PROTOCOL.md 5.4)."""

    type: Literal["rounds"]
    game_id: str
    t0: int
    n: int
    t: int
    p: NotRequired[list[float]]
    y: NotRequired[list[int]]
    prediction: NotRequired[list[int]]
    mistakes: NotRequired[float]
    expected_mistakes: NotRequired[float]
    loss: NotRequired[float]
    expected_loss: NotRequired[float]
    regret: NotRequired[float]
    expected_regret: NotRequired[float]


@final
class ExpertsRounds(TypedDict):
    """Round ``t`` (``t0 = t``, ``n = 1``) of an experts game, with the running totals
    (PROTOCOL.md 5.4): ``y`` nil in a game of costs."""

    type: Literal["rounds"]
    game_id: str
    t0: int
    n: int
    t: int
    y: NotRequired[list[int | None]]
    round_loss: NotRequired[list[float]]
    round_expected_loss: NotRequired[list[float]]
    mistakes: NotRequired[float]
    expected_mistakes: NotRequired[float]
    loss: NotRequired[float]
    expected_loss: NotRequired[float]
    regret: NotRequired[float]
    expected_regret: NotRequired[float]


@final
class End(TypedDict):
    """The game is over (PROTOCOL.md 5): its status, its result (the scalar keys of
    ``littlestone play --json``) and the game key; to a learner, the last round's label
    or outcome; to a spectator, no key."""

    type: Literal["end"]
    status: str
    result: ResultFields
    key: NotRequired[bytes | None]
    game_id: NotRequired[str]
    label: NotRequired[LabelOf]
    outcome: NotRequired[OutcomeOf]


@final
class Error(TypedDict):
    """A refusal or a fault (PROTOCOL.md 6): a code of
    :class:`~littlestone.protocol.errors.Code`; ``fatal``: the connection closes."""

    type: Literal["error"]
    code: str
    message: str
    fatal: NotRequired[bool]


ServerMessage = (Welcome | Created | Entered | Done | Revoked | Submitted | Watching | Rounds
                 | ExpertsRounds
                 | Start | InstanceRequest | AdviceRequest | Prediction | Answer | RevealAsked
                 | End | Error)

# -- the direct link (PROTOCOL.md 10) ---------------------------------------------------


@final
class LinkEnter(TypedDict):
    """A tournament's game process enters the referee's direct link with its one-time
    token, the link's first message (PROTOCOL.md 10)."""

    type: Literal["enter"]
    token: str


@final
class Ready(TypedDict):
    """The game process has made its agent: the referee may ``start`` the game
    (PROTOCOL.md 10)."""

    type: Literal["ready"]


#: The message types of each direction (PROTOCOL.md 3-6).
CLIENT_TYPES = frozenset({"hello", "challenge", "create", "join", "enter", "watch", "revoke",
                          "submit", "predict", "weights", "commit", "instance", "advice", "label",
                          "costs", "reveal"})
SERVER_TYPES = frozenset({"welcome", "created", "entered", "done", "revoked", "submitted",
                          "watching",
                          "rounds", "start", "instance", "advice", "prediction", "answer",
                          "reveal?", "end", "error"})
