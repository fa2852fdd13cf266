"""A peer as the operator's log names it, and the refusals a server tells it.

Every line a session logs goes through its :class:`PeerLog`: the line starts with the
peer's address and, once it said hello, its token's name (never the token), role and
agent; the same are fields of the record (``peer``, ``token_name``, ``role``, ``agent``,
``session``) for a JSON log. :func:`refuse` tells a peer an error and logs it with its
code (and, for ``over_budget``, the budget hit: :class:`OverBudget`), at most
:data:`REFUSALS_LOGGED` lines a minute for one address and code
(:class:`LogQuota`): a peer that hammers the server cannot fill its disk with lines.

>>> quota = LogQuota(lines=2, window_s=60.0, now=lambda: 0.0)
>>> [quota.take(("1.2.3.4", "unauthorized")) for _ in range(4)]
[0, 0, None, None]
>>> quota.now = lambda: 61.0  # a minute later: logged again, saying how many were not
>>> quota.take(("1.2.3.4", "unauthorized"))
2
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, TypedDict

from littlestone.games.errors import OverBudget, ProtocolError
from littlestone.protocol import build
from littlestone.protocol.codec import encode
from littlestone.protocol.session import ServerSession
from littlestone.transport import Connection

__all__ = ["REFUSALS_LOGGED", "SERVER_BUDGETS", "LogQuota", "OverBudget", "PeerFields", "PeerLog",
           "refuse", "shorten"]

#: Refusals logged a minute for one peer address and error code; the rest are counted,
#: and the next line logged says how many were not.
REFUSALS_LOGGED = 10
#: Characters of a message from the protocol's checks a log line keeps (such a message
#: may quote what the peer sent).
MESSAGE_LOGGED = 200

def shorten(text: str, limit: int = MESSAGE_LOGGED) -> str:
    """``text`` cut to ``limit`` characters, saying so.

    >>> shorten("x" * 10, 4)
    'xxxx... (10 characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


@dataclass
class _Window:
    start: float
    lines: int = 1
    skipped: int = 0


class LogQuota:
    """At most ``lines`` log lines per key in each window of ``window_s`` seconds."""

    #: Keys kept at most; past them, the windows that are over are forgotten.
    MAX_KEYS = 4096

    def __init__(self, lines: int = REFUSALS_LOGGED, window_s: float = 60.0,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.lines, self.window_s, self.now = lines, window_s, now
        self.windows: dict[Any, _Window] = {}

    def take(self, key: Any) -> int | None:
        """None: this line is over the quota (it is counted); else it may be logged, and
        the number is how many lines of the key were not, in the window before."""
        now = self.now()
        window = self.windows.get(key)
        if window is None or now - window.start >= self.window_s:
            if window is None and len(self.windows) >= self.MAX_KEYS:
                self._forget(now)
            self.windows[key] = _Window(now)
            return window.skipped if window is not None else 0
        if window.lines < self.lines:
            window.lines += 1
            return 0
        window.skipped += 1
        return None

    def _forget(self, now: float) -> None:
        self.windows = {k: w for k, w in self.windows.items()
                        if now - w.start < self.window_s}
        if len(self.windows) >= self.MAX_KEYS:  # all in this window: forget them all
            self.windows.clear()


class PeerFields(TypedDict, total=False):
    """Who a peer is, as its log lines' fields say: its address, then, after ``hello``,
    its session, its token's name, its role and its agent."""

    peer: str
    session: str
    token_name: str | None
    role: str | None
    agent: str | None


class PeerLog(logging.LoggerAdapter[logging.Logger]):
    """A session's lines: prefixed with who the peer is, with the same as fields.

    >>> from littlestone.protocol.session import ServerSession
    >>> session = ServerSession(anonymous=True)
    >>> session.account, session.role, session.agent = "alice", "learner", "bot"
    >>> PeerLog(logging.getLogger("demo"), "127.0.0.1", session).process("hi", {})[0]
    "127.0.0.1 alice learner 'bot': hi"
    """

    def __init__(self, logger: logging.Logger, address: str,
                 session: ServerSession | None = None, quota: LogQuota | None = None) -> None:
        super().__init__(logger, {})
        self.address, self.session = address, session
        #: How many refusals of one code this peer's address may still log (the server's).
        self.quota = quota if quota is not None else LogQuota()

    def fields(self) -> PeerFields:
        """Who the peer is, as far as it is known."""
        session = self.session
        if session is None:
            return {"peer": self.address}
        return {"peer": self.address, "session": session.id, "token_name": session.account,
                "role": session.role, "agent": session.agent or None}

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]
                ) -> tuple[Any, MutableMapping[str, Any]]:
        fields = self.fields()
        kwargs["extra"] = {**fields, **(kwargs.get("extra") or {})}
        who = [self.address]
        role = fields.get("role")
        if role is not None:  # (after hello)
            who += [fields["token_name"] or "anonymous", role,
                    repr(fields["agent"] or "")]
        return f"{' '.join(who)}: {msg}", kwargs

    def refused(self, error: ProtocolError) -> None:
        """Log that the peer is told ``error``: its code, and the budget it hit, if one
        (hitting one of the whole server's is a warning)."""
        skipped = self.quota.take((self.address, error.code.value))
        if skipped is None:
            return
        budget = error.budget if isinstance(error, OverBudget) else None
        level = logging.WARNING if budget in SERVER_BUDGETS else logging.INFO
        said = shorten(error.message.removeprefix("over budget: "))
        notes = [f"budget {budget}"] if budget else []
        notes += ["closed"] if error.fatal else []
        notes += [f"{skipped} more of this code not logged"] if skipped else []
        self.log(level, "refused: %s: %s%s", error.code.value, said,
                 f" ({'; '.join(notes)})" if notes else "",
                 extra={"code": error.code.value, "fatal": error.fatal, "budget": budget})


#: The budgets of the whole server (not of one peer).
SERVER_BUDGETS = frozenset({"max_connections", "max_games"})


async def refuse(ws: Connection, peer: PeerLog, error: ProtocolError) -> None:
    """Tell the peer ``error`` (the connection stays open), and log it."""
    peer.refused(error)
    await ws.send(encode(build.error_of(error)))
