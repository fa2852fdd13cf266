"""One dialect: every message the server or a client sends is built in
``littlestone/protocol/build.py``, and what it builds passes the receiving side's checks
(the client's :func:`~littlestone.protocol.messages.from_server`, the server's
:class:`~littlestone.protocol.session.ServerSession`), so the two directions cannot
drift apart."""

from __future__ import annotations

import ast
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from littlestone.client import CLIENT_LIMITS
from littlestone.protocol import build, wire
from littlestone.protocol.codec import decode, encode
from littlestone.protocol.messages import from_server
from littlestone.protocol.session import ServerSession

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "littlestone"

RULES: wire.Rules = {"game": "mistake-bound", "class": "thresholds:n=4", "experts": None,
                     "rounds": 2, "horizon": 2}
TOTALS: wire.Totals = {"mistakes": 1, "expected_mistakes": 0.75}
W = b"\x00" * 8 + b"\x00\x00\x00\x00\x00\x00\xf0?"  # [0.0, 1.0] as float64 little-endian

#: One message of each builder of :mod:`littlestone.protocol.build`, made by it.
EXAMPLES: dict[str, Callable[[], Any]] = {
    # client -> server
    "hello": lambda: build.hello("learner", "demo", None),
    "challenge": lambda: build.challenge(RULES, "random-target", 7),
    "create": lambda: build.create(RULES, None),
    "join": lambda: build.join("g1"),
    "enter": lambda: build.enter("cup"),
    "watch": lambda: build.watch("g1"),
    "revoke": lambda: build.revoke("bob"),
    "submit": lambda: build.submit(None, "mine.py:Mine", b"class Mine: ...\n"),
    "predict": lambda: build.predict(1, 0.5),
    "weights": lambda: build.weights(1, W),
    "commit": lambda: build.commit(b"\x01" * 32),
    "instance": lambda: build.instance(1, 3),
    "advice": lambda: build.advice(1, None),
    "label": lambda: build.label(1, 0),
    "costs": lambda: build.costs(1, W),
    "reveal": lambda: build.reveal(2, b"\x02" * 16),
    # server -> client
    "welcome": lambda: build.welcome("0123456789abcdef", "littlestone test", {
        "max_frame": 1 << 20, "move_deadline_ms": 1000, "time_bank_ms": 10_000,
        "lobby_idle_ms": 300_000}),
    "error": lambda: build.error("not_found", "no open game 'g1'"),
    "created": lambda: build.created("g1"),
    "entered": lambda: build.entered("cup"),
    "done": lambda: build.done("cup"),
    "revoked": lambda: build.revoked("bob"),
    "submitted": lambda: build.submitted("cup", 2, "ab" * 32, "accepted", None, "learner",
                                         False, "accepted as a learner", [
                                             {"check": "imports", "ok": True, "message": ""}]),
    "start": lambda: build.start("g1", "learner", RULES, 7, b"\x03" * 32),
    "instance_request": lambda: build.instance_request(2, 3, label={"t": 1, "y": 1}),
    "advice_request": lambda: build.advice_request(2, W, outcome={"t": 1, "costs": W,
                                                                  "y": None}),
    "prediction": lambda: build.prediction(1, 0.5),
    "answer": lambda: build.answer(1, w=W),
    "reveal_asked": build.reveal_asked,
    "end": lambda: build.end("complete", {"mistakes": 1}, "g1", b"\x04" * 32),
    "spectator_end": lambda: build.spectator_end("g1", "complete", {"mistakes": 1}),
    "watching": lambda: build.watching("g1", RULES, "halving", "random-target", 2, TOTALS),
    "rounds": lambda: build.rounds("g1", 1, 2, [0.5, 1.0], [1, 0], [1, 1], TOTALS),
    "expert_rounds": lambda: build.expert_rounds("g1", 3, 1, [None], [0.5], [0.25], {
        "loss": 0.5, "expected_loss": 0.25, "regret": 0.0, "expected_regret": -0.25}),
}

#: What the server's session must have seen before it takes each client message: the
#: role (and token privilege) that sends it, and whether it is a move of a game.
ROLE_OF = {"watch": "spectator", "predict": "learner", "weights": "learner",
           "commit": "adversary", "instance": "adversary", "advice": "adversary",
           "label": "adversary", "costs": "adversary", "reveal": "adversary"}


def _direction(name: str) -> str:
    """``client`` or ``server``: which side sends what the builder builds (its return
    type is a member of which union of :mod:`.wire`)."""
    returned = typing.get_type_hints(getattr(build, name))["return"]
    if returned in typing.get_args(wire.ClientMessage):
        return "client"
    assert returned in typing.get_args(wire.ServerMessage), name
    return "server"


def _session_for(kind: str) -> ServerSession:
    """A server session in the state in which a client sends ``kind``."""
    session = ServerSession(tokens={"adm": ("root", "admin"), "tok": ("alice", "player")}.get,
                            anonymous=True)
    if kind == "hello":
        return session
    session.receive(encode(build.hello(ROLE_OF.get(kind, "learner"), "demo",
                                       "adm" if kind == "revoke" else "tok")))
    if kind in ROLE_OF and ROLE_OF[kind] != "spectator":
        session.start_game()
        session.expect(kind, t=None if kind in ("commit", "reveal") else 1)
    return session


def test_every_builder_has_an_example():
    assert set(EXAMPLES) == set(build.__all__)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_message_built_passes_the_receivers_checks(name):
    message = EXAMPLES[name]()
    returned = typing.get_type_hints(getattr(build, name))["return"]
    assert message["type"] == typing.get_args(typing.get_type_hints(returned)["type"])[0]
    frame = encode(message)
    if _direction(name) == "server":
        assert message["type"] in wire.SERVER_TYPES
        decoded = decode(frame, CLIENT_LIMITS)
        assert decoded == message  # (from_server fills an absent nullable field in)
        assert from_server(decoded)["type"] == message["type"]
    else:
        assert message["type"] in wire.CLIENT_TYPES
        received = _session_for(message["type"]).receive(frame)
        assert received == message


def test_the_server_builds_every_server_type_and_the_client_every_client_type():
    """Every message type of each direction has a builder on its sender's side."""
    built: dict[str, set[str]] = {"client": set(), "server": set()}
    for name in EXAMPLES:
        built[_direction(name)].add(EXAMPLES[name]()["type"])
    assert built == {"client": set(wire.CLIENT_TYPES), "server": set(wire.SERVER_TYPES)}


# -- no message dicts outside protocol/ ----------------------------------------------

#: The ``{"type": ...}`` dicts built outside ``littlestone/protocol/`` that are not
#: PROTOCOL.md's messages, or not yet: (file, enclosing function, type) and why.
NOT_PROTOCOL = {
    ("server/web/app.py", "watch", "gone"):
        "the web page's JSON live feed tells a browser the game is over; not PROTOCOL.md",
}
#: Folders that write PROTOCOL.md's messages by hand on purpose, and why.
INDEPENDENT = {
    "conformance/": "the conformance kit writes every message from PROTOCOL.md by hand, "
                    "wrong ones included, so that a fault of the builders cannot hide in both "
                    "the server it tests and itself",
}


def message_dicts(source: str) -> list[tuple[str, str]]:
    """The dicts of ``source`` (displays, ``dict(...)`` calls) with a string constant
    under ``"type"``: each as (the enclosing function, or ``""`` at module level, the
    type)."""
    found: list[tuple[str, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Dict):
                for key, value in zip(child.keys, child.values, strict=True):
                    if (isinstance(key, ast.Constant) and key.value == "type"
                            and isinstance(value, ast.Constant)
                            and isinstance(value.value, str)):
                        found.append((function, value.value))
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and (
                    child.func.id == "dict"):
                found.extend((function, keyword.value.value) for keyword in child.keywords
                             if keyword.arg == "type" and isinstance(keyword.value, ast.Constant)
                             and isinstance(keyword.value.value, str))
            visit(child, function)

    visit(ast.parse(source), "")
    return found


def test_the_check_finds_a_message_built_by_hand():
    source = ("class Host:\n"
              "    async def send(self, ws, g):\n"
              "        await ws.send(encode({'game_id': g, 'type': 'created'}))\n"
              "row = {'name': p.name, 'type': p.type.__name__}\n"
              "ERROR = dict(type='error')\n")
    assert message_dicts(source) == [("send", "created"), ("", "error")]


def test_no_message_is_built_outside_protocol():
    """Every outgoing message is built by :mod:`littlestone.protocol.build`; the
    exceptions are listed with their reasons, and each still exists."""
    built, seen = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith(("protocol/", *INDEPENDENT)):
            continue
        for function, kind in message_dicts(path.read_text()):
            if (name, function, kind) in NOT_PROTOCOL:
                seen.add((name, function, kind))
            else:
                built.append(f"{name}: {function or '(module)'} builds {kind!r}")
    assert not built, "build these with littlestone.protocol.build:\n" + "\n".join(built)
    stale = set(NOT_PROTOCOL) - seen
    assert not stale, f"no longer built there: drop from the lists {sorted(map(str, stale))}"
