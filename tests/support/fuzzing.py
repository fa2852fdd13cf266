"""Hypothesis fuzzing of the sans-I/O cores: the codec, the message checks, the server's
session state machine, the rules and opponents a peer asks for, both referees, and whole
games through the remote players and the driver over a connection in memory.

Each ``*_case`` function is one property: it takes one generated input and asserts that
no exception but the typed one escapes (a :class:`ProtocolError` with a code PROTOCOL.md
section 6 names, a referee's :class:`MoveError`) and that the state after it is
consistent. :func:`run` drives a property for a number of generated cases and returns
how many ran; tests/protocol/test_fuzz.py runs each a few thousand times, ``python -m
tests.support.fuzz_long --cases N`` as long as one likes.
"""

from __future__ import annotations

import asyncio
import collections
import math
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from littlestone import adversaries as _adversaries  # noqa: F401 - registers the built-ins
from littlestone import learners as _learners  # noqa: F401 - registers the built-ins
from littlestone.adversaries.base import ADVERSARIES
from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.commitment import digest
from littlestone.games.errors import MoveError
from littlestone.games.experts import ExpertsReferee, check_vector, check_weights
from littlestone.games.mistake_bound import MistakeBoundReferee
from littlestone.learners.base import LEARNERS
from littlestone.protocol.codec import Limits, decode, encode
from littlestone.protocol.errors import Code, ProtocolError
from littlestone.protocol.messages import ROLES, SCHEMAS, check
from littlestone.protocol.session import LOBBY_MESSAGES, ROLE_MESSAGES, ServerSession
from littlestone.server.net.policy import Opponents, admit, admit_rules
from littlestone.server.net.settings import Budgets
from tests.support import ROOT

__all__ = ["CASES", "run"]

# -- values and messages ---------------------------------------------------------------

#: Integers at and across every msgpack boundary (and the 64-bit ones).
EDGE_INTS = st.sampled_from([0, 1, -1, 2, 127, 128, 255, 256, 65535, 65536, 2**31 - 1, 2**31,
                             2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, -(2**63)])
INTS = st.one_of(st.integers(-3, 12), EDGE_INTS, st.integers(-(2**63), 2**64 - 1))
SCALARS = st.one_of(st.none(), st.booleans(), INTS, st.floats(), st.text(max_size=12),
                    st.binary(max_size=40))
#: Any value a msgpack frame can carry (nested a few levels).
WIRE_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(st.text(max_size=8), inner, max_size=5)),
    max_leaves=12,
)


def _vector(n: int) -> Any:
    return st.lists(st.floats(), min_size=n, max_size=n)


GOOD_RULES = [{"game": "mistake-bound", "class": "thresholds:n=8", "experts": None,
               "rounds": 5, "horizon": 5},
              {"game": "experts", "class": None, "experts": 3, "rounds": 4, "horizon": None}]
#: One well-formed message of every type, to mutate.
VALID: dict[str, dict[str, Any]] = {
    "hello": {"version": 1, "role": "learner", "agent": "a", "token": "tok", "capabilities": []},
    "challenge": {"rules": GOOD_RULES[0], "opponent": "random-target", "seed": 7},
    "create": {"rules": GOOD_RULES[1], "seed": None},
    "join": {"game_id": "g"},
    "enter": {"tournament": "week-3"},
    "watch": {"game_id": "g"},
    "predict": {"t": 1, "p": 0.5},
    "weights": {"t": 1, "w": np.full(3, 1 / 3).tobytes()},
    "commit": {"digest": bytes(32)},
    "instance": {"t": 1, "x": 3},
    "advice": {"t": 1, "advice": [0.0, 1.0, 0.5]},
    "label": {"t": 1, "y": 1},
    "costs": {"t": 1, "v": [0.0, 1.0, 0.5]},
    "reveal": {"target": 3, "salt": bytes(16)},
    "welcome": {"version": 1, "session": "s", "server": "x", "limits": {}},
    "start": {"game_id": "g", "role": "learner", "rules": GOOD_RULES[0], "seed": 1,
              "commitment": bytes(32)},
    "prediction": {"t": 1, "p": 0.0},
    "answer": {"t": 1},
    "end": {"status": "complete", "result": {}, "key": bytes(32)},
    "error": {"code": "bad_message", "message": "m"},
    "revoke": {"name": "bob"},
}
VALID = {kind: fields for kind, fields in VALID.items() if kind in SCHEMAS}


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    """A message of a known type, well formed or with one field dropped, retyped, set to
    an edge value, an unknown key added, or its type renamed."""
    kind = draw(st.sampled_from(sorted(SCHEMAS)))
    message: dict[str, Any] = {"type": kind, **VALID.get(kind, {})}
    for _ in range(draw(st.integers(0, 3))):
        how = draw(st.sampled_from(["drop", "value", "int", "extra", "type", "t"]))
        fields = sorted(k for k in message if k != "type")
        if how == "drop" and fields:
            del message[draw(st.sampled_from(fields))]
        elif how == "value" and fields:
            message[draw(st.sampled_from(fields))] = draw(WIRE_VALUES)
        elif how == "int" and fields:
            message[draw(st.sampled_from(fields))] = draw(INTS)
        elif how == "extra":
            message[draw(st.text(max_size=6))] = draw(WIRE_VALUES)
        elif how == "type":
            message["type"] = draw(st.one_of(st.sampled_from(sorted(SCHEMAS)),
                                             st.text(max_size=8), INTS))
        elif how == "t":
            message["t"] = draw(INTS)
    if kind in ("challenge", "create") and draw(st.booleans()):
        rules = dict(draw(st.sampled_from(GOOD_RULES)))
        rules[draw(st.sampled_from(["rounds", "experts", "horizon", "game", "class"]))] = draw(
            st.one_of(INTS, WIRE_VALUES))
        message["rules"] = rules
    return message


def _pack(value: Any) -> bytes:
    frame: bytes = msgpack.packb(value, use_bin_type=True)
    return frame


@st.composite
def frames(draw: st.DrawFn) -> bytes | str:
    """A frame: a message (see :func:`messages`), any msgpack value, random bytes, text;
    then possibly truncated, with bytes flipped, inserted or appended, or two frames
    run together."""
    source = draw(st.sampled_from(["message", "message", "value", "bytes", "text"]))
    if source == "text":
        return draw(st.text(max_size=30))
    if source == "bytes":
        frame = draw(st.binary(max_size=64))
    elif source == "value":
        frame = _pack(draw(WIRE_VALUES))
    else:
        frame = _pack(draw(messages()))
    how = draw(st.sampled_from(["none", "none", "truncate", "flip", "insert", "append"]))
    if how == "truncate" and frame:
        frame = frame[: draw(st.integers(0, len(frame) - 1))]
    elif how == "flip" and frame:
        i = draw(st.integers(0, len(frame) - 1))
        frame = frame[:i] + bytes([frame[i] ^ draw(st.integers(1, 255))]) + frame[i + 1:]
    elif how == "insert":
        i = draw(st.integers(0, len(frame)))
        frame = frame[:i] + draw(st.binary(min_size=1, max_size=8)) + frame[i:]
    elif how == "append":
        frame += _pack(draw(messages()))
    return frame


# -- the codec and the checks -------------------------------------------------------------

SMALL = Limits(max_frame=1 << 12, max_depth=4, max_str=64, max_items=16)


def codec_case(frame: bytes | str, small: bool) -> None:
    """decode, then check: a message map, or bad_message; nothing else."""
    try:
        message = decode(frame, SMALL if small else Limits())
    except ProtocolError as exc:
        assert exc.code is Code.BAD_MESSAGE and exc.message, exc
        return
    assert type(message) is dict and type(message["type"]) is str
    try:
        checked = check(message)
    except ProtocolError as exc:
        assert exc.code is Code.BAD_MESSAGE and exc.message, exc
        return
    for name, types in SCHEMAS[checked["type"]].items():
        assert isinstance(checked[name], types), (name, checked)
    # a checked message survives a round trip unchanged (as bytes: NaN != NaN)
    assert encode(check(decode(encode(checked)))) == encode(checked)


def message_case(message: dict[str, Any]) -> None:
    """check on a (possibly mutated) message: the same message back, or bad_message."""
    try:
        checked = check(dict(message))
    except ProtocolError as exc:
        assert exc.code is Code.BAD_MESSAGE, exc
        return
    kind = checked["type"]
    assert kind in SCHEMAS
    if "t" in SCHEMAS[kind] and kind not in ("watching", "rounds"):
        assert 1 <= checked["t"] < 2**63


# -- the rules a peer asks for --------------------------------------------------------------

SPECS = st.one_of(
    st.builds(lambda n: f"thresholds:n={n}", INTS),
    st.builds(lambda n: f"singletons:n={n}", st.integers(-2, 5000)),
    st.builds(lambda n, k: f"k-disjunctions:n={n},k={k}", st.integers(-1, 40),
              st.integers(-1, 40)),
    st.builds(lambda d, m: f"halfspaces:d={d},margin={m}", st.integers(-1, 40), st.floats()),
    st.builds(lambda n: f"monotone-disjunctions:n={n}", st.integers(-1, 80)),
    st.builds(lambda n: f"intervals:n={n}", st.integers(-1, 300)),
    st.builds(lambda n: f"conjunctions:n={n}", st.integers(-1, 80)),
    st.sampled_from(["matrix:path=/etc/passwd", "matrix:rows=2", "thresholds", "nosuch:n=3",
                     "thresholds:n=4,n=5", "thresholds:n=", ":", "", "thresholds:n=4:x",
                     "thresholds:n=\u0663", "thresholds:n=1e3", "halfspaces:d=3"]),
    st.text(max_size=20),
)
RULE_VALUES = st.one_of(INTS, WIRE_VALUES)
TINY = Budgets(max_rounds=1000, max_hypotheses=4096, max_dimension=16, max_experts=64,
               ldim_work=10_000, max_truth_table=1 << 16, game_memory_mb=16, game_disk_mb=16)
SERVED = Opponents()


@st.composite
def rules(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"game": draw(st.sampled_from(["mistake-bound", "experts"]))}
    out["class"] = draw(st.one_of(st.none(), SPECS))
    for key in ("experts", "rounds", "horizon"):
        if draw(st.booleans()):
            out[key] = draw(st.one_of(st.none(), st.integers(-2, 70), INTS))
    if draw(st.integers(0, 4)) == 0:
        out[draw(st.sampled_from([*sorted(out), "x"]))] = draw(RULE_VALUES)
    return out


def rules_case(asked: dict[str, Any]) -> None:
    """A challenge's rules, checked as the server admits them: a game within the budgets,
    or bad_message, unsupported_game or over_budget."""
    try:
        check({"type": "create", "rules": asked, "seed": None})
        game = admit_rules(asked, TINY)
    except ProtocolError as exc:
        assert exc.code in (Code.BAD_MESSAGE, Code.UNSUPPORTED_GAME, Code.OVER_BUDGET), exc
        assert not exc.fatal
        return
    assert 0 <= game.rounds <= TINY.max_rounds


PARAM_VALUES = st.one_of(
    st.sampled_from(["0", "1", "-1", "0.5", "1e308", "nan", "inf", "-inf", "", "x", "2**64",
                     "18446744073709551616", "0x10", "1_000", "\u00b2", "\u0663", "3.5.1",
                     "/etc/passwd", "a,b", "a=b", "lin", "sqrt"]),
    st.integers(-(2**70), 2**70).map(str), st.floats().map(repr), st.text(max_size=8),
)


@st.composite
def opponents(draw: st.DrawFn) -> tuple[str, str]:
    """A role and an opponent spec: a registered agent (or not) with any parameters."""
    role = draw(st.sampled_from(["learner", "adversary"]))
    registry = ADVERSARIES if role == "learner" else LEARNERS
    name = draw(st.one_of(st.sampled_from(sorted(registry.ids())), st.text(max_size=8)))
    params = []
    known = [p.name for p in registry[name].param_info()] if name in registry else []
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.one_of(st.sampled_from(known), st.text(max_size=6)) if known
                   else st.text(max_size=6))
        params.append(f"{key}={draw(PARAM_VALUES)}")
    spec = name + (":" + ",".join(params) if params else "")
    return role, spec


HERE = str(ROOT)
OPPONENT_RULES: list[dict[str, Any]] = [
    {"game": "mistake-bound", "class": "thresholds:n=15", "rounds": 20},
    {"game": "mistake-bound", "class": "halfspaces:d=3,margin=0.2", "rounds": 20},
    {"game": "experts", "class": None, "experts": 4, "rounds": 20},
    {"game": "experts", "class": "singletons:n=5", "rounds": 20},
]


def opponents_case(rules_and_opponent: tuple[int, tuple[str, str]]) -> None:
    """An opponent a peer names, with any parameters, for any rules: the agent the server
    would build, or bad_message, unsupported_game, over_budget; never another exception."""
    index, (role, spec) = rules_and_opponent
    registry = ADVERSARIES if role == "learner" else LEARNERS
    try:
        admit(OPPONENT_RULES[index], spec, registry, TINY, SERVED)
    except ProtocolError as exc:
        assert exc.code in (Code.BAD_MESSAGE, Code.UNSUPPORTED_GAME, Code.OVER_BUDGET), exc
        assert not exc.fatal and HERE not in exc.message, exc  # nothing of the server's disk


# -- the server's session state machine ------------------------------------------------------

#: Whether tokens carry a privilege (player, spectator, admin: PROTOCOL.md 3.1).
PRIVILEGED = hasattr(ServerSession(), "privilege")
NAMES = {"good": ("alice", "player"), "admin": ("root", "admin"), "watcher": ("eve", "spectator")}
TOKENS: dict[str, Any] = NAMES if PRIVILEGED else {k: v[0] for k, v in NAMES.items()}
HELLOS = st.builds(
    lambda version, role, token, agent: _pack({"type": "hello", "version": version,
                                               "role": role, "agent": agent, "token": token,
                                               "capabilities": []}),
    st.sampled_from([1, 1, 1, 2, 0, -1, 2**64 - 1]),
    st.sampled_from([*ROLES, "referee", ""]),
    st.sampled_from(["good", "good", "admin", "watcher", "bad", None, ""]),
    st.text(max_size=8),
)
KINDS = sorted({k for kinds in ROLE_MESSAGES.values() for k in kinds})
SESSION_OPS = st.lists(st.one_of(
    st.tuples(st.just("frame"), frames()),
    st.tuples(st.just("frame"), HELLOS),
    st.tuples(st.just("frame"), st.builds(lambda m: _pack(m), messages())),
    st.tuples(st.just("start"), st.none()),
    st.tuples(st.just("expect"), st.tuples(st.lists(st.sampled_from(KINDS), max_size=3),
                                           st.one_of(st.none(), st.integers(1, 6)))),
    st.tuples(st.just("fault"), st.one_of(st.none(), st.integers(1, 6))),
    st.tuples(st.just("end"), st.none()),
    st.tuples(st.just("close"), st.none()),
), max_size=25)
SESSION_CODES = {Code.BAD_MESSAGE, Code.UNSUPPORTED_VERSION, Code.UNAUTHORIZED,
                 Code.OUT_OF_TURN}


def session_case(anonymous: bool, ops: list[tuple[str, Any]]) -> int:
    """Frames and the server's calls in any order: each frame is a checked message the
    state allows, or a typed error (fatal before the handshake), and the state moves
    only as PROTOCOL.md 4.1 draws it."""
    session = ServerSession(tokens=TOKENS.get, anonymous=anonymous, limits=SMALL)
    expected: set[str] = set()
    t_expected: int | None = None
    faulted: set[int] = set()
    received = 0
    for op, arg in ops:
        if op == "start":
            if session.state == "lobby":
                session.start_game()
                expected, t_expected, faulted = set(), None, set()
            continue
        if op == "expect":
            if session.state == "game":
                session.expect(*arg[0], t=arg[1])
                expected, t_expected = set(arg[0]), arg[1]
            continue
        if op == "fault":
            if session.state == "game":
                session.fault(arg)
                if arg is not None:
                    faulted.add(arg)
            continue
        if op == "end":
            if session.state == "game":
                session.end_game()
            continue
        if op == "close":
            session.close()
            continue
        before = session.state
        received += 1
        try:
            message = session.receive(arg)
        except ProtocolError as exc:
            assert exc.code in SESSION_CODES, exc
            assert session.state == before  # an error changes no state
            # fatal: anything before the handshake, or a privilege the token has not
            assert exc.fatal is (before in ("hello", "closed") or exc.code is Code.UNAUTHORIZED)
            if exc.stale:
                assert before == "game" and t_expected is not None
            continue
        kind = message["type"]
        if before == "hello":
            assert message["type"] == "hello" and session.state == "lobby"
            assert session.role in ROLES
            known = NAMES.get(message["token"] or "")
            assert session.account == (known[0] if known else None)
            assert anonymous or session.account is not None
        elif before == "lobby":
            assert kind in LOBBY_MESSAGES and session.state == "lobby"
            if kind == "revoke":
                assert getattr(session, "privilege", None) == "admin"
            else:
                assert (kind == "watch") is (session.role == "spectator")
        else:
            assert before == "game"
            assert session.role is not None and kind in ROLE_MESSAGES[session.role]
            assert kind in expected
            if t_expected is not None and "t" in message:
                assert message["t"] == t_expected
    return received


# -- the referees -------------------------------------------------------------------------------

MOVE_VALUES = st.one_of(
    st.integers(-3, 12), EDGE_INTS, st.floats(), st.booleans(), st.none(), st.binary(max_size=40),
    st.text(max_size=4),
    st.lists(st.floats(), max_size=4),
    st.lists(st.floats(-1.5, 1.5), min_size=2, max_size=2).map(np.array),
    st.lists(st.floats(0, 1), min_size=3, max_size=3).map(np.array),
    st.sampled_from([np.array([0.6, 0.8]), np.array([1.0, 0.0]), np.array([1 / 3] * 3),
                     np.array([0.0, 1.0, 0.5]), np.int64(2), np.float64(0.5)]),
)
MB_CLASSES = ["thresholds:n=4", "singletons:n=3", "halfspaces:d=2,margin=0.1",
              "halfspaces:d=2,margin=0.1,agnostic=true"]
MB_MOVES = ["instance", "prediction", "prediction_fault", "label", "commit", "reveal",
            "queue", "queued_round", "score_queued", "abort"]
EXPERTS_MOVES = ["advice", "instance", "weights", "prediction", "answer_fault", "label",
                 "costs", "commit", "reveal", "abort"]
#: What each phase of a referee waits for (the move a fuzzed game plays most often).
DUE = {"instance": ["instance", "instance", "instance", "queue"],
       "prediction": ["prediction", "prediction", "prediction_fault"],
       "label": ["label"], "reveal": ["reveal"],
       "answer": ["weights", "weights", "prediction", "answer_fault"],
       "outcome": ["label", "costs"], "over": ["abort"]}


def _due(referee: Any) -> list[str]:
    """The moves the rules allow now (one of them may still be refused for its value)."""
    phase = referee.phase.value
    queued = getattr(referee, "_queued_y", ())
    if phase == "instance" and getattr(referee, "_queue_next", 0) < len(queued):
        return ["queued_round", "score_queued"]
    if phase == "advice":
        due = ["instance"] if referee.hclass is not None else ["advice"]
    else:
        due = DUE[phase]
    first = referee.t == 0 and referee._committed is None and phase in ("instance", "advice")
    return [*due, "commit"] if first else due


UNIT = st.sampled_from([np.array([0.6, 0.8]), np.array([-0.8, 0.6]), np.array([1.0, 0.0])])
SALTS = st.one_of(st.binary(min_size=16, max_size=20), st.binary(max_size=15))


def _good(data: st.DataObject, referee: Any, op: str) -> Any:
    """A value the rules may well accept for ``op`` (a label may still empty V_t, a
    reveal may name the wrong target)."""
    draw = data.draw
    halfspace = getattr(referee, "version_space", 0) is None
    hclass = referee.hclass
    domain = hclass.domain_size - 1 if isinstance(hclass, FiniteClass) else 0
    if op == "instance":
        return draw(UNIT) if halfspace else draw(st.integers(0, domain))
    if op in ("prediction", "queued_round"):
        return draw(st.sampled_from([0.0, 0.5, 1.0, 0.25]))
    if op == "label":
        return draw(st.integers(0, 1))
    if op == "commit":
        return draw(st.binary(min_size=32, max_size=32))
    if op == "reveal":
        return (draw(UNIT) if halfspace else draw(st.integers(0, 4)), draw(SALTS))
    if op == "queue":
        n = draw(st.integers(0, min(3, referee.rounds - referee.t)))
        xs = [draw(UNIT) if halfspace else draw(st.integers(0, domain)) for _ in range(n)]
        return (xs, [draw(st.integers(0, 1)) for _ in range(n)])
    if op == "score_queued":
        left = len(referee._queued_y) - referee._queue_next
        return [draw(st.sampled_from([0.0, 1.0, 0.5])) for _ in range(draw(st.integers(0, left)))]
    if op in ("advice", "costs"):
        return draw(st.sampled_from([None, np.array([0.0, 1.0, 0.5]), [1.0, 1.0, 0.0]]))
    if op == "weights":
        return draw(st.sampled_from([np.full(3, 1 / 3), [1.0, 0.0, 0.0], [0.2, 0.3, 0.5]]))
    return None


def _bad(data: st.DataObject, op: str) -> Any:
    """Any value, in the shape the move takes."""
    draw = data.draw
    if op == "reveal":
        return (draw(MOVE_VALUES), draw(MOVE_VALUES))
    if op == "queue":
        return (draw(st.lists(MOVE_VALUES, max_size=4)),
                draw(st.lists(st.one_of(st.integers(-1, 2), MOVE_VALUES), max_size=4)))
    if op == "score_queued":
        return draw(st.lists(MOVE_VALUES, max_size=4))
    return draw(MOVE_VALUES)


def _apply(referee: Any, op: str, arg: Any) -> None:
    if op in ("prediction_fault", "answer_fault"):
        getattr(referee, op)()
    elif op == "abort":
        referee.abort("aborted:fuzz")
    elif op in ("reveal", "queue"):
        getattr(referee, op)(*arg)
    else:
        getattr(referee, op)(arg)


def _play(data: st.DataObject, referee: Any, moves: list[str], steps: int) -> int:
    """Up to ``steps`` moves, mostly the one due with a good value, else any move with
    any value, until the game is over. Only a MoveError may escape the referee, and it
    ends the game with its status (or leaves an ended game as it was). Returns the moves
    played."""
    for i in range(steps):
        due = data.draw(st.integers(0, 19)) < 18
        op = data.draw(st.sampled_from(_due(referee) if due else moves))
        good = data.draw(st.integers(0, 19)) < 17
        arg = _good(data, referee, op) if good else _bad(data, op)
        was_over, status = referee.over, referee.status
        try:
            _apply(referee, op, arg)
        except MoveError as exc:
            assert referee.over
            assert referee.status == (status if was_over else exc.status)
            assert exc.status.split(":")[1] in ("learner", "adversary")
        result = referee.result()
        assert 0 <= result.rounds == referee.t <= referee.rounds
        assert math.isfinite(result.expected_mistakes) and result.expected_mistakes >= -1e-9
        assert result.expected_mistakes <= result.rounds + 1e-9
        assert 0 <= result.mistakes <= result.rounds
        if referee.over:
            assert result.status == referee.status
            return i + 1
    return steps


_CLASSES: dict[str, Any] = {}


def _class(spec: str) -> Any:
    """Classes are immutable: built once."""
    if spec not in _CLASSES:
        _CLASSES[spec] = make_class(spec)
    return _CLASSES[spec]


def mistake_bound_case(data: st.DataObject, spec: str, rounds: int) -> int:
    """A game of any moves with any values: typed MoveErrors only, consistent scores."""
    return _play(data, MistakeBoundReferee(_class(spec), rounds, seed=0), MB_MOVES, 40)


def experts_case(data: st.DataObject, class_derived: bool, rounds: int) -> int:
    """The experts referee under any moves and values."""
    hclass = _class("thresholds:n=2") if class_derived else None  # 3 hypotheses
    assert hclass is None or (isinstance(hclass, FiniteClass) and hclass.size == 3)
    return _play(data, ExpertsReferee(3, rounds, seed=0, hclass=hclass), EXPERTS_MOVES, 40)


def checks_agree_case(values: Any, d: int, advice: bool) -> None:
    """The checks a server makes of a remote move before playing it (check_weights,
    check_vector) refuse exactly what the referee refuses: a remote player's bad move
    is a fault, and a move they pass never ends the game."""
    referee = ExpertsReferee(d, 1, seed=0)
    try:
        check_weights(values, d)
        pre = None
    except MoveError as exc:
        pre = exc.status
    try:
        referee.weights(values)
        after = None
    except MoveError as exc:
        after = exc.status
    assert pre == after, (pre, after)
    if advice:
        referee = ExpertsReferee(d, 1, seed=0)
        try:
            check_vector(values, d, "adversary", "advice")
            pre = None
        except MoveError as exc:
            pre = exc.status
        try:
            referee.advice(values)
            after = None
        except MoveError as exc:
            after = exc.status
        assert pre == after, (pre, after)


WEIGHT_VALUES = st.one_of(
    MOVE_VALUES,
    st.lists(st.one_of(st.floats(), st.floats(0, 1), st.integers(-1, 2)), min_size=0,
             max_size=4),
    st.integers(1, 4).flatmap(lambda n: st.lists(st.floats(0, 1), min_size=n, max_size=n)
                              .map(lambda w: [x / (sum(w) or 1) for x in w])),
)


def reveal_case(case: tuple[int, bytes, Any, Any]) -> None:
    """Commit, play two rounds by the target, reveal anything: complete exactly when the
    reveal is the committed target and salt, else a typed MoveError."""
    target, salt, reveal_target, reveal_salt = case
    hclass = _class("thresholds:n=4")
    referee = MistakeBoundReferee(hclass, 2, seed=0)
    referee.commit(digest(hclass, target, salt))
    for x in (1, 3):
        referee.instance(x)
        referee.prediction(0.5)
        referee.label(int(x < target))
    same_salt = isinstance(reveal_salt, bytes) and reveal_salt == salt
    honest = (same_salt and isinstance(reveal_target, int | np.integer)
              and not isinstance(reveal_target, bool) and int(reveal_target) == target)
    try:
        referee.reveal(reveal_target, reveal_salt)
    except MoveError as exc:
        assert not honest, exc
        assert referee.status == exc.status
        return
    assert honest and referee.status == "complete"


# -- the players and the driver, over a connection in memory ---------------------------------

class MemoryPeer:
    """A connection in memory (what :mod:`littlestone.server.net.players` uses of one):
    each frame the server sends is answered at once by ``respond``; a read with nothing
    to read is a deadline passed (TimeoutError)."""

    def __init__(self, loop: asyncio.AbstractEventLoop,
                 respond: Callable[[dict[str, Any]], list[Any]]) -> None:
        self.loop, self.respond = loop, respond
        self.inbox: collections.deque[Any] = collections.deque()
        self._stop = False

    def send_nowait(self, frame: bytes) -> bool:
        self.inbox.extend(self.respond(msgpack.unpackb(frame)))
        return True

    async def send(self, frame: bytes) -> None:
        self.send_nowait(frame)

    async def recv(self, deadline: float | None = None) -> Any:
        if not self.inbox:
            raise TimeoutError
        return self.inbox.popleft()

    async def answer(self, hook: Callable[[Any], bool]) -> None:
        self._stop = False
        while self.inbox and not self._stop:
            if not hook(self.inbox[0]):
                return  # declined: it waits for recv
            self.inbox.popleft()

    def stop_answering(self) -> None:
        self._stop = True


DRIVER_GAMES = {
    # name: (game, class spec, experts, rounds, local learner, local adversary)
    "remote learner vs oblivious": ("mistake-bound", "thresholds:n=8", None, 6, None,
                                    "random-target"),
    "remote adversary vs halving": ("mistake-bound", "thresholds:n=8", None, 6, "halving", None),
    "both remote, mistake-bound": ("mistake-bound", "thresholds:n=8", None, 6, None, None),
    "remote learner vs cover-flip": ("experts", None, 3, 5, None, "cover-flip"),
    "remote adversary vs hedge": ("experts", None, 3, 5, "hedge", None),
    "both remote, class experts": ("experts", "thresholds:n=2", None, 5, None, None),
}
IN_GAME = {"bad_message", "out_of_turn", "illegal_move", "timeout"}


def _peer(data: st.DataObject, role: str, game: Any) -> Callable[[dict[str, Any]], list[Any]]:
    """A remote player that mostly answers as it should: sometimes with a bad value, the
    wrong round, junk, or nothing at all; after an error, it may send its move again."""
    draw = data.draw
    d = game.experts or 3
    last: list[Any] = []

    def first(t: int) -> list[dict[str, Any]]:
        if game.game == "experts" and game.hclass is None:
            return [{"type": "advice", "t": t, "advice": [0.0, 1.0, 0.5][:d]}]
        return [{"type": "instance", "t": t, "x": t % 3}]

    def good(message: dict[str, Any]) -> list[dict[str, Any]]:
        kind, t = message["type"], message.get("t", 0)
        if role == "learner" and kind == "instance":
            return [{"type": "predict", "t": t, "p": 0.5}]
        if role == "learner" and kind == "advice":
            return [{"type": "weights", "t": t, "w": [1 / d] * d}]
        if role == "adversary" and kind == "prediction":
            return [{"type": "label", "t": t, "y": int(t % 3 < 2)},
                    *(first(t + 1) if t < game.rounds else [])]
        if role == "adversary" and kind == "answer":
            outcome = ({"type": "costs", "t": t, "v": [1.0, 0.0, 0.5][:d]}
                       if game.hclass is None and message.get("w") is not None
                       else {"type": "label", "t": t, "y": 1})
            return [outcome, *(first(t + 1) if t < game.rounds else [])]
        return []

    def respond(message: dict[str, Any]) -> list[Any]:
        kind = message["type"]
        if kind == "error":
            return list(last) if draw(st.booleans()) else []
        moves = good(message)
        if kind == "start" and role == "adversary":
            moves = first(1)
        if not moves:
            return []
        out: list[Any] = [msgpack.packb(m, use_bin_type=True) for m in moves]
        last[:] = out  # frames: bytes, as a connection delivers them
        how = draw(st.sampled_from(["good"] * 6 + ["value", "t", "junk", "silent", "twice"]))
        if how == "value":
            bad = dict(moves[0])
            key = draw(st.sampled_from(sorted(k for k in bad if k != "type")))
            bad[key] = draw(st.one_of(INTS, WIRE_VALUES))
            out[0] = msgpack.packb(bad, use_bin_type=True)
        elif how == "t":
            bad = {**moves[0], "t": draw(INTS)}
            out[0] = msgpack.packb(bad, use_bin_type=True)
        elif how == "junk":
            out.insert(draw(st.integers(0, len(out))), draw(frames()))
        elif how == "silent":
            out = []
        elif how == "twice":
            out = out + out
        return out

    return respond


def driver_case(data: st.DataObject, name: str) -> int:
    """A whole game through :func:`littlestone.server.net.driver.run_game` with one or
    both players remote: it ends with a status of the rules (complete, a forfeit after
    the third fault, a rule broken), never an exception; faults are the codes of
    PROTOCOL.md 6. Returns the frames the peers sent."""
    from littlestone.games.game import GameSpec, game_seeds
    from littlestone.server.net.driver import run_game
    from littlestone.server.net.players import RemoteAdversary, RemoteLearner
    from littlestone.server.net.settings import FAULTS_TO_FORFEIT, ServerSettings

    name_, spec, experts, rounds, local_learner, local_adversary = DRIVER_GAMES[name]
    game = GameSpec(name_, rounds, _class(spec) if spec else None, experts)
    settings = ServerSettings(move_deadline=1.0, time_bank=0.0)
    sent = [0]

    async def play() -> Any:
        loop = asyncio.get_running_loop()

        def remote(role: str, cls: Any) -> Any:
            respond = _peer(data, role, game)

            def counted(message: dict[str, Any]) -> list[Any]:
                frames_out = respond(message)
                sent[0] += len(frames_out)
                return frames_out

            peer = MemoryPeer(loop, counted)
            session = ServerSession(anonymous=True)
            session.role, session.state = role, "lobby"
            session.start_game()
            player = cls(peer, session, settings)
            peer.send_nowait(msgpack.packb({"type": "start", "role": role}))
            return player

        learner = (LEARNERS.make(local_learner) if local_learner
                   else remote("learner", RemoteLearner))
        adversary = (ADVERSARIES.make(local_adversary) if local_adversary
                     else remote("adversary", RemoteAdversary))
        return await run_game(game, game_seeds(7), learner, adversary)

    result = asyncio.run(play())
    status = result.status
    faults = result.extra.get("faults", [])
    assert {f["code"] for f in faults} <= IN_GAME, faults
    by_role = collections.Counter(f["role"] for f in faults)
    assert all(n <= FAULTS_TO_FORFEIT for n in by_role.values()), by_role
    head = status.split(":")
    if status == "complete":
        assert result.rounds == rounds and all(n < FAULTS_TO_FORFEIT for n in by_role.values())
    elif head[0] == "forfeit":
        assert head[2] in IN_GAME and by_role[head[1]] == FAULTS_TO_FORFEIT, (status, faults)
    else:  # a rule broken by a move the checks before it could not see
        assert head[0] in ("rule_violation", "illegal_move", "out_of_turn"), status
        assert head[1] in ("learner", "adversary"), status
    return sent[0]


# -- running -------------------------------------------------------------------------------------

def _each(case: Callable[..., None]) -> Callable[..., int]:
    """A property over a list of inputs (one hypothesis example, several cases)."""
    def batch(inputs: list[Any], *rest: Any) -> int:
        for one in inputs:
            case(one, *rest)
        return len(inputs)
    return batch


#: Each property with the strategies of its arguments; it returns how many inputs (frames,
#: messages, rules, moves) it took.
CASES: dict[str, tuple[Callable[..., int], tuple[Any, ...]]] = {
    "codec": (_each(codec_case), (st.lists(frames(), min_size=4, max_size=4), st.booleans())),
    "messages": (_each(message_case), (st.lists(messages(), min_size=4, max_size=4),)),
    "rules": (_each(rules_case), (st.lists(rules(), min_size=3, max_size=3),)),
    "opponents": (_each(opponents_case), (
        st.lists(st.tuples(st.integers(0, len(OPPONENT_RULES) - 1), opponents()), min_size=3,
                 max_size=3),)),
    "session": (session_case, (st.booleans(), SESSION_OPS)),
    "mistake-bound referee": (mistake_bound_case, (st.data(), st.sampled_from(MB_CLASSES),
                                                   st.integers(1, 8))),
    "experts referee": (experts_case, (st.data(), st.booleans(), st.integers(1, 6))),
    "driver": (driver_case, (st.data(), st.sampled_from(sorted(DRIVER_GAMES)))),
    "remote checks = referee": (_each(checks_agree_case), (
        st.lists(WEIGHT_VALUES, min_size=4, max_size=4), st.integers(1, 4), st.booleans())),
    "commit and reveal": (_each(reveal_case), (
        st.lists(st.tuples(st.integers(0, 4), st.binary(min_size=16, max_size=20),
                           st.one_of(st.integers(-1, 5), MOVE_VALUES),
                           st.one_of(st.binary(min_size=0, max_size=20), MOVE_VALUES)),
                 min_size=3, max_size=3),)),
}


def run(name: str, examples: int, derandomize: bool = True) -> tuple[int, int]:
    """Run property ``name`` on ``examples`` hypothesis examples; returns how many ran and
    how many inputs (frames, messages, moves) they held."""
    prop, strategies = CASES[name]
    ran = inputs = 0

    @settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize,
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(st.tuples(*strategies))
    def fuzz(args: tuple[Any, ...]) -> None:
        nonlocal ran, inputs
        ran += 1
        inputs += prop(*args)

    fuzz()
    return ran, inputs
