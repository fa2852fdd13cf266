"""The kit's cases as scripts, sans I/O: a case yields steps and is sent back events.

A case is a generator. It yields a :class:`Connect`, a :class:`Send` or a
:class:`Receive` and gets back what happened: nothing for a send, a :class:`Message`,
:class:`Closed`, :class:`Garbled` or :class:`Silence` for a receive. It ends by returning
(passed), by raising :class:`CaseFailed` with one line saying what differs from the
spec, or :class:`CaseSkipped` with why it could not run. The runner
(:mod:`littlestone.conformance.runner`) only moves the frames and owns the clocks, so a
case is read, and tested, as a plain sequence of messages.

>>> def case():
...     yield Connect()
...     yield Send(frame({"type": "hello", "version": 2}))
...     yield from expect_error("unsupported_version", fatal=True)
>>> script = case()
>>> next(script), script.send(None)
(Connect(conn=0), Send(frame=b'\\x82\\xa4type\\xa5hello\\xa7version\\x02', conn=0))
>>> script.send(None)
Receive(wait=10.0, conn=0)
>>> script.send(Message({"type": "error", "code": "bad_message", "fatal": True}))
Traceback (most recent call last):
...
littlestone.games.errors.CaseFailed: expected error unsupported_version, got error bad_message
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from littlestone.games.errors import CaseFailed, CaseSkipped

__all__ = [
    "Case",
    "CaseFailed",
    "CaseSkipped",
    "Closed",
    "Connect",
    "Event",
    "Garbled",
    "Message",
    "PeerMap",
    "Receive",
    "Script",
    "Send",
    "Silence",
    "Step",
    "check",
    "expect",
    "expect_close",
    "expect_error",
    "frame",
    "receive",
    "shown",
]

#: Seconds a case waits for a message it expects (the runner's default).
WAIT = 10.0


#: A message as the peer sent it, decoded but not checked: any keys, any values (a case
#: checks what it needs, and a wrong peer is what the kit is for).
PeerMap = dict[str, Any]


@dataclass(frozen=True)
class Connect:
    """Open connection ``conn`` (closing the one it named before)."""

    conn: int = 0


@dataclass(frozen=True)
class Send:
    """Send one frame on ``conn``: bytes as a binary frame, a str as a text frame."""

    frame: bytes | str
    conn: int = 0


@dataclass(frozen=True)
class Receive:
    """Wait up to ``wait`` seconds for the next event of ``conn``."""

    wait: float = WAIT
    conn: int = 0


Step = Connect | Send | Receive


@dataclass(frozen=True)
class Message:
    """A binary frame holding a msgpack map (its keys as sent)."""

    body: PeerMap

    @property
    def type(self) -> object:
        return self.body.get("type")


@dataclass(frozen=True)
class Closed:
    """The connection closed: the peer's close code (None: no close frame)."""

    code: int | None
    reason: str = ""


@dataclass(frozen=True)
class Garbled:
    """A frame that is not a msgpack map in a binary frame."""

    why: str


@dataclass(frozen=True)
class Silence:
    """Nothing came within the wait."""


Event = Message | Closed | Garbled | Silence
#: A case's script: steps out, events (None after a connect or a send) back.
Script = Generator[Step, Event | None, None]


@dataclass(frozen=True)
class Case:
    """One conformance case: a stable id, the PROTOCOL.md section it checks, a title."""

    id: str
    section: str
    title: str
    script: Callable[..., Script | None] = field(repr=False)
    #: The issue-43 point whose fix the case is written to (the spec's intended behaviour).
    point: int | None = None


def frame(message: Mapping[str, object]) -> bytes:
    """A message as the bytes of one binary frame."""
    packed: bytes = msgpack.packb(message, use_bin_type=True)
    return packed


def shown(event: Event | None) -> str:
    """An event in a failure's line, short."""
    if isinstance(event, Message):
        body = event.body
        if body.get("type") == "error":
            return f"error {body.get('code')} ({'fatal' if body.get('fatal') else 'not fatal'})"
        return f"{body.get('type')} {_brief(body)}"
    if isinstance(event, Closed):
        return f"a close with code {event.code}" if event.code else "a close without a code"
    if isinstance(event, Garbled):
        return event.why
    return "nothing"


def _brief(body: Mapping[str, object]) -> str:
    text = repr({k: v for k, v in body.items() if k != "type"})
    return text if len(text) <= 120 else text[:117] + "..."


def check(condition: object, problem: str) -> None:
    """Fail the case with ``problem`` unless ``condition`` holds."""
    if not condition:
        raise CaseFailed(problem)


def receive(wait: float = WAIT, conn: int = 0) -> Generator[Step, Event | None, Event]:
    """The next event of ``conn``."""
    event = yield Receive(wait, conn)
    assert event is not None, "the runner answers a Receive with an event"
    return event


def expect(kind: str, wait: float = WAIT, conn: int = 0,
           skip: tuple[str, ...] = ()) -> Generator[Step, Event | None, PeerMap]:
    """The next message, which must be of type ``kind`` (those of types ``skip`` passed
    over); its map."""
    while True:
        event = yield from receive(wait, conn)
        if isinstance(event, Message) and event.type in skip:
            continue
        if isinstance(event, Message) and event.type == kind:
            return event.body
        if kind == "error" and isinstance(event, Message) and event.type == "error":
            return event.body
        raise CaseFailed(f"expected {kind}, got {shown(event)}")


def expect_error(code: str, fatal: bool, wait: float = WAIT, conn: int = 0,
                 skip: tuple[str, ...] = ()) -> Generator[Step, Event | None, PeerMap]:
    """The next message must be an ``error`` with this code and ``fatal`` flag, and a
    message string."""
    while True:
        event = yield from receive(wait, conn)
        if not (isinstance(event, Message) and event.type in skip):
            break
    wanted = f"error {code} ({'fatal' if fatal else 'not fatal'})"
    if not (isinstance(event, Message) and event.type == "error"):
        raise CaseFailed(f"expected {wanted}, got {shown(event)}")
    body = event.body
    if body.get("code") != code:
        raise CaseFailed(f"expected error {code}, got error {body.get('code')}")
    check(body.get("fatal") is fatal, f"expected {wanted}, got {shown(event)}")
    check(isinstance(body.get("message"), str), "the error's message is not a string")
    return body


def expect_close(code: int | None, wait: float = WAIT,
                 conn: int = 0) -> Generator[Step, Event | None, None]:
    """The connection must close next, with this close code (None: any)."""
    event = yield from receive(wait, conn)
    if not isinstance(event, Closed):
        raise CaseFailed(f"expected a close with code {code}, got {shown(event)}")
    if code is not None and event.code != code:
        raise CaseFailed(f"expected a close with code {code}, got {shown(event)}")
