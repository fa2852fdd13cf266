"""The sans-I/O protocol layer: bytes in, messages or typed errors out."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from littlestone.games.classes import make_class
from littlestone.games.errors import SpecError
from littlestone.protocol import build
from littlestone.protocol.codec import Limits, decode, encode
from littlestone.protocol.errors import CLOSE_CODES, Code, ProtocolError
from littlestone.protocol.messages import (
    SCHEMAS,
    check,
    instance_from_wire,
    instance_to_wire,
    rules_from_wire,
    vector_from_wire,
)
from littlestone.protocol.session import ServerSession

HELLO = {"type": "hello", "version": 1, "role": "learner", "agent": "a", "token": "good",
         "capabilities": []}


def error_of(fn, *args):
    with pytest.raises(ProtocolError) as info:
        fn(*args)
    return info.value


@pytest.mark.parametrize(
    ("frame", "fragment"),
    [
        ("text", "text frames"),
        (b"", "truncated"),
        (b"\xc1", "malformed"),
        (msgpack.packb([1, 2]), "map"),
        (msgpack.packb({"kind": "x"}), "string 'type'"),
        (msgpack.packb({1: 2}), "malformed"),
        (msgpack.packb({"type": "x"}) + b"\x00", "extra bytes"),
        (msgpack.packb({"type": "x", "s": "a" * 70_000}), "exceeds max_str_len(65536)"),
        (msgpack.packb({"type": "x", "a": list(range(70_000))}), "exceeds max_array_len"),
        (b"\xd4\x01\x00", "exceeds max_ext_len"),
        (msgpack.packb({"type": "x", "n": [[[[[[[[[1]]]]]]]]]}), "max_depth(8)"),
        (msgpack.packb({"type": "x", "s": b"\xff\xfe".decode("latin-1")})[:-1], "truncated"),
        (b"\x81\xa4type\xa3\xff\xfe\xfd", "malformed"),  # invalid utf-8
    ],
)
def test_bad_bytes_become_bad_message(frame, fragment):
    error = error_of(decode, frame)
    assert error.code is Code.BAD_MESSAGE
    assert fragment in error.message


def test_frame_size_limit_both_sides():
    limits = Limits(max_frame=100)
    ok = encode({"type": "x", "b": b"\x00" * 80})
    assert len(ok) <= 100 and decode(ok, limits)["b"] == b"\x00" * 80
    too_big = encode({"type": "x", "b": b"\x00" * 100})
    assert "exceeds max_frame(100)" in error_of(decode, too_big, limits).message


def test_truncated_at_every_byte():
    frame = encode({"type": "instance", "t": 12, "x": b"\x01" * 40, "label": {"t": 11, "y": 1}})
    for cut in range(len(frame)):
        assert error_of(decode, frame[:cut]).code is Code.BAD_MESSAGE
    assert decode(frame)["t"] == 12


def test_every_schema_field_is_checked():
    samples = {int: 1, float: 0.5, str: "s", bytes: b"b", list: [], dict: {}, type(None): None,
               bool: False}
    for kind, schema in SCHEMAS.items():
        good = {"type": kind, **{k: samples[types[0]] for k, types in schema.items()}}
        assert check(dict(good))["type"] == kind
        for field, types in schema.items():
            if type(None) in types:
                continue
            missing = {k: v for k, v in good.items() if k != field}
            assert f"{kind}.{field} is missing" in error_of(check, missing).message
            wrong = dict(good, **{field: True if bool not in types else 1})  # (never an int)
            assert f"{kind}.{field} must be" in error_of(check, wrong).message
    assert "unknown message type" in error_of(check, {"type": "frobnicate"}).message
    extra = check({"type": "join", "game_id": "g", "future": 1})
    assert extra["future"] == 1  # unknown keys are ignored


def test_values_round_trip():
    halfspaces = make_class("halfspaces:d=3,margin=0.1")
    x = np.array([0.6, 0.8, 0.0])
    assert np.array_equal(instance_from_wire(halfspaces, instance_to_wire(halfspaces, x)), x)
    big = make_class("k-disjunctions:n=100,k=1")
    value = (1 << 99) | 5
    assert instance_from_wire(big, instance_to_wire(big, value)) == value
    small = make_class("thresholds:n=8")
    assert instance_to_wire(small, 3) == 3 and instance_from_wire(small, 3) == 3
    assert error_of(instance_from_wire, small, 2.5).code is Code.BAD_MESSAGE
    assert error_of(vector_from_wire, b"\x00" * 7).code is Code.BAD_MESSAGE
    assert error_of(vector_from_wire, [1, "a"]).code is Code.BAD_MESSAGE


def test_rules():
    rules = {"game": "mistake-bound", "class": "thresholds:n=8", "experts": None, "rounds": 5,
             "horizon": None}
    game = rules_from_wire(rules)
    assert game.rounds == 5 and not game.horizon_known and game.hclass is not None
    assert error_of(rules_from_wire, dict(rules, game="chess")).code is Code.BAD_MESSAGE
    assert error_of(rules_from_wire, dict(rules, rounds=-1)).code is Code.BAD_MESSAGE
    with pytest.raises(SpecError):
        rules_from_wire(dict(rules, **{"class": "circles:r=1"}))


def session(anonymous=False):
    return ServerSession(tokens={"good": ("alice", "player")}.get, anonymous=anonymous)


def test_handshake_errors_are_fatal():
    cases = [
        (dict(HELLO, version=2), Code.UNSUPPORTED_VERSION),
        (dict(HELLO, token=None), Code.UNAUTHORIZED),
        (dict(HELLO, token="bad"), Code.UNAUTHORIZED),
        (dict(HELLO, role="referee"), Code.BAD_MESSAGE),
        ({"type": "join", "game_id": "g"}, Code.OUT_OF_TURN),
        ({"type": "hello"}, Code.BAD_MESSAGE),
    ]
    for message, code in cases:
        error = error_of(session().receive, encode(message))
        assert error.code is code and error.fatal
    assert error_of(session().receive, b"\xc1").fatal
    assert CLOSE_CODES[Code.UNAUTHORIZED] == 1008


def test_anonymous_sessions_need_no_token():
    s = session(anonymous=True)
    s.receive(encode(dict(HELLO, token=None)))
    assert s.state == "lobby" and s.account is None


def test_in_game_turns():
    s = session()
    s.receive(encode(HELLO))
    assert s.welcome("littlestone", {})["session"] == s.id
    assert error_of(s.receive, encode({"type": "predict", "t": 1, "p": 0.5})).code is (
        Code.OUT_OF_TURN)
    s.receive(encode({"type": "challenge", "rules": {}, "opponent": "x", "seed": None}))
    s.start_game()
    s.expect("predict", "weights", t=4)
    assert s.receive(encode({"type": "predict", "t": 4, "p": 0.5}))["p"] == 0.5
    late = error_of(s.receive, encode({"type": "predict", "t": 3, "p": 0.5}))
    assert late.code is Code.OUT_OF_TURN and not late.fatal
    wrong_role = error_of(s.receive, encode({"type": "label", "t": 4, "y": 1}))
    assert "a learner does not send label" in wrong_role.message
    s.expect()
    assert "waiting for nothing" in error_of(
        s.receive, encode({"type": "predict", "t": 4, "p": 0.5})).message
    s.end_game()
    assert s.state == "lobby"
    s.close()
    assert error_of(s.receive, encode(HELLO)).fatal


def test_error_messages_carry_code_and_fatality():
    message = build.error_of(ProtocolError(Code.INTERNAL, "internal error"))
    assert message == {"type": "error", "code": "internal", "message": "internal error",
                       "fatal": True}


def test_the_message_types_have_the_schemas_fields():
    """Each TypedDict of protocol/wire.py holds the fields check() requires of its type
    (and check() knows every type): the keys mypy checks are the keys on the wire."""
    import typing

    from littlestone.protocol import wire
    from littlestone.protocol.messages import SCHEMAS

    for direction, kinds in ((wire.ClientMessage, wire.CLIENT_TYPES),
                             (wire.ServerMessage, wire.SERVER_TYPES)):
        members = typing.get_args(direction)
        seen = set()
        for member in members:
            hints = typing.get_type_hints(member, include_extras=True)
            kind = typing.get_args(hints["type"])[0]
            assert kind in kinds
            seen.add(kind)
            assert set(SCHEMAS[kind]) <= set(hints) - {"type"}, kind
            required = {key for key, hint in hints.items()  # (NotRequired: as written)
                        if typing.get_origin(hint) is not typing.NotRequired} - {"type"}
            assert required <= set(SCHEMAS[kind]), (kind, required - set(SCHEMAS[kind]))
        assert seen == kinds
    assert set(SCHEMAS) == wire.CLIENT_TYPES | wire.SERVER_TYPES
