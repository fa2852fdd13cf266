"""A connection's protocol state, server side: the handshake, then what may come next.

Sans-I/O: frames in, checked messages out, or a :class:`~littlestone.protocol.errors.ProtocolError`
saying what is wrong (``fatal`` ones mean: send it and close). The server tells the
session what it waits for (:meth:`ServerSession.expect`) as the game goes.

>>> from littlestone.protocol.codec import encode
>>> session = ServerSession(tokens={"t0k": ("alice", "player")}.get)
>>> hello = {"type": "hello", "version": 1, "role": "learner", "agent": "demo",
...          "token": "t0k", "capabilities": []}
>>> session.receive(encode(hello))["agent"], session.state, session.account
('demo', 'lobby', 'alice')
>>> session.start_game(); session.expect("predict", t=1)
>>> session.receive(encode({"type": "label", "t": 1, "y": 0}))
Traceback (most recent call last):
...
littlestone.games.errors.ProtocolError: a learner does not send label
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable

from littlestone.protocol import build
from littlestone.protocol.codec import DEFAULT_LIMITS, Limits, decode
from littlestone.protocol.errors import Code, ProtocolError
from littlestone.protocol.messages import ROLES, from_client
from littlestone.protocol.wire import PROTOCOL_VERSION, ClientMessage, Hello, Welcome, WelcomeLimits

__all__ = ["AGENT_NAME_MAX", "LOBBY_MESSAGES", "PRIVILEGES", "ROLE_MESSAGES", "ServerSession",
           "printable"]

#: What a player may send between games (a spectator: only ``watch``; ``revoke``: only
#: a token of role admin; ``submit``: a file to a competition, PROTOCOL.md 4.2).
LOBBY_MESSAGES = frozenset({"challenge", "create", "join", "enter", "watch", "revoke",
                            "submit"})
#: What a token lets its holder do (PROTOCOL.md 3.1), and the longest agent name.
PRIVILEGES = ("player", "spectator", "admin")
AGENT_NAME_MAX = 64
#: What each role may send during a game (PROTOCOL.md 5).
ROLE_MESSAGES = {
    "learner": frozenset({"predict", "weights"}),
    "adversary": frozenset({"commit", "instance", "advice", "label", "costs", "reveal"}),
    "spectator": frozenset(),
}


def printable(name: str) -> bool:
    r"""Whether a name a peer chose may be shown on a terminal as it is: printable
    characters only (no escape codes, no line breaks), at most :data:`AGENT_NAME_MAX`.

    >>> printable("my-learner v2"), printable("\x1b[2Jowned"), printable("a\nb")
    (True, False, False)
    """
    return len(name) <= AGENT_NAME_MAX and name.isprintable()


class ServerSession:
    """The server's view of one connection.

    ``tokens`` maps a token to its account name and privilege (``None`` if unknown);
    with ``anonymous=True`` a missing token is accepted (a ``player`` with no account).
    """

    def __init__(self, tokens: Callable[[str], tuple[str, str] | None] | None = None,
                 anonymous: bool = False, limits: Limits = DEFAULT_LIMITS) -> None:
        self.tokens = tokens
        self.anonymous = anonymous
        self.limits = limits
        self.state = "hello"
        self.id = secrets.token_hex(8)
        self.role: str | None = None
        self.agent = ""
        self.account: str | None = None
        #: SHA-256 (hex) of the token that said hello, when it named an account: the
        #: server looks it up again before each lobby request (a revoked token stops).
        self.token_digest: str | None = None
        #: What the token lets this session do: one of :data:`PRIVILEGES`.
        self.privilege = "player"
        #: What the peer said of itself in ``hello.capabilities`` (the strings; a server
        #: acts on those it knows, e.g. ``human``, and ignores the rest).
        self.capabilities: frozenset[str] = frozenset()
        self._expected: frozenset[str] = frozenset()
        self._t: int | None = None
        #: The rounds of this game in which the player faulted (a late move for one of
        #: them is dropped, not a new fault).
        self._faulted: set[int] = set()

    def receive(self, frame: bytes | str) -> ClientMessage:
        """Decode and check one frame from the peer."""
        if self.state == "closed":
            raise ProtocolError(Code.OUT_OF_TURN, "the session is closed", fatal=True)
        try:
            message = from_client(decode(frame, self.limits))
        except ProtocolError as exc:
            if self.state == "hello":  # nothing is trusted before the handshake
                exc.fatal = True
            raise
        kind = message["type"]
        if self.state == "hello":
            return self._hello(message)
        if self.state == "lobby":
            if kind not in LOBBY_MESSAGES:
                raise ProtocolError(Code.OUT_OF_TURN, f"{kind} before a game: send challenge, "
                                    "create or join")
            if kind == "revoke":
                if self.privilege != "admin":
                    raise ProtocolError(Code.UNAUTHORIZED, "only an admin token revokes tokens")
                return message
            if self.role == "spectator" and kind != "watch":
                raise ProtocolError(Code.OUT_OF_TURN, "a spectator only watches: send watch")
            if kind == "watch" and self.role != "spectator":
                raise ProtocolError(Code.OUT_OF_TURN, "only a spectator watches: connect "
                                    "with role spectator")
            return message
        assert self.role is not None
        if kind not in ROLE_MESSAGES[self.role]:
            raise ProtocolError(Code.OUT_OF_TURN, f"a {self.role} does not send {kind}")
        if kind not in self._expected:
            waiting = " or ".join(sorted(self._expected)) or "nothing"
            raise ProtocolError(Code.OUT_OF_TURN, f"{kind} out of turn: waiting for {waiting}")
        if self._t is not None and "t" in message and message["t"] != self._t:
            error = ProtocolError(Code.OUT_OF_TURN, f"{kind} for round {message['t']}: this is "
                                  f"round {self._t}")
            # a late move for a round already scored after this player's fault is dropped
            # (PROTOCOL.md 6); any other round but the current one is a fault
            error.stale = message["t"] < self._t and message["t"] in self._faulted
            raise error
        return message

    def _hello(self, message: ClientMessage) -> Hello:
        if message["type"] != "hello":
            raise ProtocolError(Code.OUT_OF_TURN, "send hello first", fatal=True)
        if message["version"] != PROTOCOL_VERSION:
            raise ProtocolError(Code.UNSUPPORTED_VERSION, f"protocol version "
                                f"{message['version']} is not supported (this server speaks "
                                f"{PROTOCOL_VERSION})")
        if message["role"] not in ROLES:
            raise ProtocolError(Code.BAD_MESSAGE, f"role must be one of {', '.join(ROLES)}",
                                fatal=True)
        if not printable(message["agent"]):
            raise ProtocolError(Code.BAD_MESSAGE, f"hello.agent must be at most {AGENT_NAME_MAX} "
                                "printable characters (no control or escape codes)", fatal=True)
        token = message["token"]
        if token is None:
            if not self.anonymous:
                raise ProtocolError(Code.UNAUTHORIZED, "a token is required")
        else:
            found = self.tokens(token) if self.tokens is not None else None
            if found is None and not self.anonymous:
                raise ProtocolError(Code.UNAUTHORIZED, "unknown token")
            if found is not None:
                self.account, self.privilege = found
                self.token_digest = hashlib.sha256(token.encode()).hexdigest()
        if self.privilege == "spectator" and message["role"] != "spectator":
            raise ProtocolError(Code.UNAUTHORIZED, "this token only watches: connect with "
                                "role spectator")
        self.role, self.agent, self.state = message["role"], message["agent"], "lobby"
        self.capabilities = frozenset(c for c in message["capabilities"] if isinstance(c, str))
        return message

    def welcome(self, server: str, limits: WelcomeLimits) -> Welcome:
        """The ``welcome`` answering a good hello."""
        return build.welcome(self.id, server, limits)

    def start_game(self) -> None:
        """A game begins: only in-game messages from now."""
        self.state, self._expected, self._t = "game", frozenset(), None
        self._faulted = set()

    def fault(self, t: int | None) -> None:
        """The player faulted in round t: a late move for it will be dropped."""
        if t is not None:
            self._faulted.add(t)

    def expect(self, *kinds: str, t: int | None = None) -> None:
        """What the game waits for now (and for which round)."""
        self._expected, self._t = frozenset(kinds), t

    def end_game(self) -> None:
        """Back to the lobby."""
        self.state, self._expected, self._t = "lobby", frozenset(), None
        self._faulted = set()

    def close(self) -> None:
        self.state = "closed"
