"""Who a session is and what it may hold of a server: its token's account and role, or
a tournament's one-time credential (:class:`Credentials`), its token's share of
connections and games (:class:`Tally`, :class:`~.settings.ConnectionLimits`), and its
lobby's message rate (:class:`MessageRate`).

>>> tally = Tally()
>>> with tally.hold("ann"):
...     tally["ann"]
1
>>> tally["ann"], "ann" in tally
(0, False)
>>> rate = MessageRate(per_second=1.0, burst=2, now=lambda: 0.0)
>>> [rate.take(), rate.take(), rate.take()]
[True, True, False]
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterator

from littlestone.server.records.store import Store

__all__ = ["Credentials", "MessageRate", "Tally"]


class Credentials:
    """Tokens, looked up by their SHA-256 in the data folder's index, and the one-time
    credentials of a tournament's submissions, kept in memory only."""

    def __init__(self, store: Store) -> None:
        self.store = store
        #: One-time credentials not yet used (sha256 -> account), and the accounts that
        #: may only enter one tournament (account -> tournament).
        self.grants: dict[str, str] = {}
        self.restricted: dict[str, str] = {}

    def account(self, token: str) -> tuple[str, str] | None:
        """The account and role of a token (PROTOCOL.md 3.1); a one-time credential is
        used up by this (one connection)."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        granted = self.grants.pop(digest, None)
        if granted is not None:
            return granted, "player"
        return self.store.token_account(digest)

    def grant(self, tournament: str, account: str) -> str:
        """A one-time credential for ``account``, good for one connection that may only
        ``enter`` ``tournament`` (a submission's, for its game), until :meth:`revoke`."""
        token = "ls1_" + secrets.token_urlsafe(24)
        self.grants[hashlib.sha256(token.encode()).hexdigest()] = account
        self.restricted[account] = tournament
        return token

    def revoke(self, account: str) -> None:
        """The credential of ``account`` is void, used or not."""
        self.grants = {k: v for k, v in self.grants.items() if v != account}
        self.restricted.pop(account, None)


class Tally(Counter[str]):
    """How many of something (connections, games) each account holds now."""

    @contextlib.contextmanager
    def hold(self, key: str | None) -> Iterator[None]:
        """One more for ``key`` while the block runs (nothing for None: no account)."""
        if key is None:
            yield
            return
        self[key] += 1
        try:
            yield
        finally:
            self[key] -= 1
            if self[key] <= 0:
                del self[key]


class MessageRate:
    """A token bucket: ``per_second`` messages on average, ``burst`` at once."""

    def __init__(self, per_second: float, burst: int,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.per_second, self.burst, self.now = per_second, float(burst), now
        self.allowance, self.checked = float(burst), now()

    def take(self) -> bool:
        """Whether one more message is within the rate (it is then counted)."""
        now = self.now()
        self.allowance = min(self.burst,
                             self.allowance + (now - self.checked) * self.per_second)
        self.checked = now
        if self.allowance < 1:
            return False
        self.allowance -= 1
        return True
