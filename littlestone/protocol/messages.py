"""The messages of PROTOCOL.md: their fields, checked; values to and from the wire.

:func:`check` validates a decoded message against the schema of its type (unknown keys
are ignored, PROTOCOL.md 1); a missing field or a value of the wrong type is a
``bad_message`` :class:`~littlestone.protocol.errors.ProtocolError` naming the field.
:func:`from_client` and :func:`from_server` check a peer's message and narrow it to its
type (:mod:`littlestone.protocol.wire`), the one place each side does.

>>> check({"type": "predict", "t": 3, "p": 1})
{'type': 'predict', 't': 3, 'p': 1}
>>> check({"type": "predict", "t": True, "p": 0.5})
Traceback (most recent call last):
...
littlestone.games.errors.ProtocolError: predict.t must be int
>>> vector_to_wire(np.array([0.5, 0.25])) == np.array([0.5, 0.25]).tobytes()
True
>>> vector_from_wire([0.5, 0.25]).tolist()
[0.5, 0.25]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import ClassBudget, HalfspaceClass, HypothesisClass
from littlestone.games.errors import ProtocolError
from littlestone.games.game import GAMES, GameSpec
from littlestone.protocol.errors import Code
from littlestone.protocol.wire import PROTOCOL_VERSION, ClientMessage, Rules, ServerMessage

__all__ = [
    "PROTOCOL_VERSION",
    "ROLES",
    "SCHEMAS",
    "SEED_MAX",
    "SEED_MIN",
    "T_MAX",
    "check",
    "from_client",
    "from_server",
    "instance_from_wire",
    "instance_to_wire",
    "instances_to_wire",
    "rules_from_wire",
    "rules_to_wire",
    "vector_from_wire",
    "vector_to_wire",
]

#: The game seeds a peer may ask for: signed 64-bit integers (PROTOCOL.md 4).
SEED_MIN, SEED_MAX = -(1 << 63), (1 << 63) - 1
ROLES = ("learner", "adversary", "spectator")
#: The largest round number and the largest ``rules`` integer (rounds, experts, horizon)
#: a peer may send: what the index keeps, a signed 64-bit integer (PROTOCOL.md 6).
T_MAX = SEED_MAX
#: The messages of a round: their ``t`` is a round number, 1 .. T_MAX (PROTOCOL.md 5).
ROUND_MESSAGES = frozenset({"predict", "weights", "instance", "advice", "label", "costs",
                            "prediction", "answer"})
#: The integers of a ``rules`` map: each nil or 0 .. T_MAX (``game`` and ``class`` are
#: checked by :func:`rules_from_wire`).
RULES_INTS = ("rounds", "experts", "horizon")

NONE = type(None)
_NUMBER = (int, float)
_VECTOR = (bytes, list)

#: For each message type: its fields and the types each may take (PROTOCOL.md 3-6).
SCHEMAS: dict[str, dict[str, tuple[type, ...]]] = {
    # client -> server
    "hello": {"version": (int,), "role": (str,), "agent": (str,), "token": (str, NONE),
              "capabilities": (list,)},
    "challenge": {"rules": (dict,), "opponent": (str,), "seed": (int, NONE)},
    "create": {"rules": (dict,), "seed": (int, NONE)},
    "join": {"game_id": (str,)},
    "enter": {"tournament": (str,)},
    "watch": {"game_id": (str,)},
    "revoke": {"name": (str,)},
    "submit": {"competition": (str, NONE), "agent": (str,), "source": (bytes,)},
    "predict": {"t": (int,), "p": _NUMBER},
    "weights": {"t": (int,), "w": _VECTOR},
    "commit": {"digest": (bytes,)},
    "instance": {"t": (int,), "x": (int, bytes, list)},
    "advice": {"t": (int,), "advice": (*_VECTOR, NONE)},
    "label": {"t": (int,), "y": (int,)},
    "costs": {"t": (int,), "v": _VECTOR},
    "reveal": {"target": (int, bytes, list, NONE), "salt": (bytes,)},
    # server -> client
    "welcome": {"version": (int,), "session": (str,), "server": (str,), "limits": (dict,)},
    "created": {"game_id": (str,)},
    "entered": {"tournament": (str,)},
    "done": {"tournament": (str,)},
    "revoked": {"name": (str,)},
    "submitted": {"competition": (str,), "version": (int,), "sha256": (str,),
                  "verdict": (str,), "reason": (str, NONE), "role": (str, NONE),
                  "duplicate": (bool,), "message": (str,), "checks": (list,)},
    "watching": {"game_id": (str,), "rules": (dict,), "learner": (str,), "adversary": (str,),
                 "t": (int,)},
    "rounds": {"game_id": (str,), "t0": (int,), "n": (int,), "t": (int,)},
    "start": {"game_id": (str,), "role": (str,), "rules": (dict,), "seed": (int,),
              "commitment": (bytes, NONE)},
    "prediction": {"t": (int,), "p": _NUMBER},
    "answer": {"t": (int,)},
    "reveal?": {},
    "end": {"status": (str,), "result": (dict,), "key": (bytes, NONE)},
    "error": {"code": (str,), "message": (str,)},
}


def _type_names(types: tuple[type, ...]) -> str:
    names = {int: "int", float: "float", str: "str", bytes: "bin", list: "array",
             dict: "map", NONE: "nil", bool: "bool"}
    return " or ".join(names.get(t, t.__name__) for t in types)


# (message: a peer's map, any fields until this holds it to its type's schema)
def check(message: dict[str, Any]) -> dict[str, Any]:
    """The message itself, if its fields match the schema of its type."""
    kind = message.get("type")
    schema = SCHEMAS.get(kind) if isinstance(kind, str) else None
    if schema is None:
        raise ProtocolError(Code.BAD_MESSAGE, f"unknown message type {kind!r}")
    for name, types in schema.items():
        if name not in message:
            if NONE in types:
                message[name] = None
                continue
            raise ProtocolError(Code.BAD_MESSAGE, f"{kind}.{name} is missing")
        value = message[name]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise ProtocolError(Code.BAD_MESSAGE, f"{kind}.{name} must be {_type_names(types)}")
    if kind in ROUND_MESSAGES and not 1 <= message["t"] <= T_MAX:
        raise ProtocolError(Code.BAD_MESSAGE, f"{kind}.t must be a round number, 1 .. 2**63-1")
    if kind in ("challenge", "create"):
        if message["seed"] is not None and not SEED_MIN <= message["seed"] <= SEED_MAX:
            raise ProtocolError(Code.BAD_MESSAGE, f"{kind}.seed must be a signed 64-bit "
                                "integer")
        _check_rules(kind, message["rules"])
    return message


# (message: a client's map before check: any fields)
def from_client(message: dict[str, Any]) -> ClientMessage:
    """A client's message, checked (:func:`check`), as its type (:mod:`.wire`): the one
    place the server narrows a peer's message. The session (:mod:`.session`) returns it
    only once it knows its type is one a client sends now (any other is
    ``out_of_turn``)."""
    return cast("ClientMessage", check(message))


# (message: a server's map before check: any fields)
def from_server(message: dict[str, Any]) -> ServerMessage:
    """A server's message, checked (:func:`check`), as its type (:mod:`.wire`): the one
    place the client narrows a peer's message. The client reads a message's keys only
    after testing its ``type``, and passes over a type it does not expect."""
    return cast("ServerMessage", check(message))


def _check_rules(kind: str, rules: Mapping[str, Any]) -> None:
    """The integers of a ``rules`` map, in range (before any budget is asked about them).

    >>> _check_rules("create", {"game": "experts", "experts": -1})
    Traceback (most recent call last):
    ...
    littlestone.games.errors.ProtocolError: create.rules.experts must be nil or an int 0 ...1
    """
    for name in RULES_INTS:
        value = rules.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 0 <= value <= T_MAX):
            raise ProtocolError(Code.BAD_MESSAGE, f"{kind}.rules.{name} must be nil or an "
                                "int 0 .. 2**63-1")


def vector_to_wire(vector: NDArray[np.float64]) -> bytes:
    """A vector as bin: float64 little-endian."""
    return np.ascontiguousarray(vector, dtype="<f8").tobytes()


def vector_from_wire(value: Any) -> NDArray[np.float64]:
    """A vector from bin (float64 little-endian) or an array of numbers."""
    if isinstance(value, bytes):
        if len(value) % 8:
            raise ProtocolError(Code.BAD_MESSAGE, f"a vector of {len(value)} bytes is not "
                                "float64 little-endian")
        return np.frombuffer(value, dtype="<f8")  # read-only: a move is not to be changed
    if isinstance(value, list) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value
    ):
        return np.asarray(value, dtype=np.float64)
    raise ProtocolError(Code.BAD_MESSAGE, "a vector is a bin of float64 or an array of numbers")


def instance_to_wire(hclass: HypothesisClass, x: Any) -> Any:
    """An instance as PROTOCOL.md 2 encodes it."""
    if isinstance(hclass, HalfspaceClass):
        return vector_to_wire(x)
    value = int(x)
    if value >= 1 << 63:
        return value.to_bytes((value.bit_length() + 7) // 8, "little")
    return value


def instances_to_wire(hclass: HypothesisClass, xs: Any) -> list[Any]:
    """A block of instances as :func:`instance_to_wire` encodes each (vectors in one
    conversion, not one a row)."""
    if isinstance(hclass, HalfspaceClass):
        return [row.tobytes() for row in np.ascontiguousarray(xs, dtype="<f8")]
    return [instance_to_wire(hclass, x) for x in xs]


def instance_from_wire(hclass: HypothesisClass, value: Any) -> Any:
    """An instance from the wire (its domain is the referee's to check). A ``bin`` is
    an instance only of a class whose domain goes past 64-bit integers (PROTOCOL.md 2:
    a boolean class of more than 62 variables); anywhere else it is ``bad_message``.

    >>> from littlestone.games.classes import make_class
    >>> instance_from_wire(make_class("thresholds:n=7"), 3)
    3
    >>> instance_from_wire(make_class("thresholds:n=7"), b"\\x03")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.ProtocolError: an instance of thresholds:n=7 is an int, not a bin
    """
    if isinstance(hclass, HalfspaceClass):
        return vector_from_wire(value)
    if isinstance(value, bytes):
        if getattr(hclass, "domain_size", 0) <= 1 << 63:
            raise ProtocolError(Code.BAD_MESSAGE, f"an instance of {hclass.spec} is an int, "
                                "not a bin")
        return int.from_bytes(value, "little")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ProtocolError(Code.BAD_MESSAGE, "an instance of a finite class is an int or a bin")


def rules_to_wire(game: GameSpec) -> Rules:
    """A game's rules as the ``rules`` map."""
    return {"game": game.game, "class": game.hclass.spec if game.hclass else None,
            "experts": game.experts if game.hclass is None else None, "rounds": game.rounds,
            "horizon": game.horizon}


def rules_from_wire(rules: Mapping[str, Any], budget: ClassBudget | None = None) -> GameSpec:
    """A ``rules`` map to a GameSpec (class specs are parsed here: SpecError if bad,
    BudgetExceeded beyond ``budget``)."""
    from littlestone.games.classes import UNLIMITED, make_class

    game, spec = rules.get("game"), rules.get("class")
    rounds, experts = rules.get("rounds"), rules.get("experts")
    if game not in GAMES:
        raise ProtocolError(Code.BAD_MESSAGE, f"rules.game must be one of {', '.join(GAMES)}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 0:
        raise ProtocolError(Code.BAD_MESSAGE, "rules.rounds must be an int >= 0")
    if spec is not None and not isinstance(spec, str):
        raise ProtocolError(Code.BAD_MESSAGE, "rules.class must be a class spec or nil")
    if experts is not None and (isinstance(experts, bool) or not isinstance(experts, int)):
        raise ProtocolError(Code.BAD_MESSAGE, "rules.experts must be an int or nil")
    horizon = rules.get("horizon", rounds)
    hclass = make_class(spec, budget or UNLIMITED) if spec else None
    return GameSpec(game, rounds, hclass, experts, horizon_known=horizon is not None)
