"""Who a session is and what it may hold of a server: its token's account and role, a
tournament's one-time credential, or a web page's play ticket (:class:`Credentials`),
its token's share of connections and games (:class:`Tally`,
:class:`~.settings.ConnectionLimits`), and its lobby's message rate (:class:`MessageRate`).

>>> tally = Tally()
>>> with tally.hold("ann"):
...     tally["ann"]
1
>>> tally["ann"], "ann" in tally
(0, False)
>>> rate = MessageRate(per_second=1.0, burst=2, now=lambda: 0.0)
>>> [rate.take(), rate.take(), rate.take()]
[True, True, False]

A play ticket (PROTOCOL.md 3.2) is good for one connection, soon, as a player of the
account it was minted for (a page's logged-in token, which stays in its HttpOnly
cookie), and only while that token is valid:

>>> import tempfile, pathlib
>>> store = Store(pathlib.Path(tempfile.mkdtemp()))
>>> token = store.add_token("ann", "admin")
>>> credentials = Credentials(store)
>>> ticket = credentials.ticket(token)
>>> credentials.account(ticket), credentials.account(ticket)
(('ann', 'player'), None)
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from littlestone.server.records.store import Store

__all__ = [
    "GUEST",
    "GUEST_IPV6_PREFIX",
    "TICKETS_MAX",
    "TICKET_TTL_S",
    "Credentials",
    "MessageRate",
    "Tally",
    "Ticket",
    "guest_network",
]

#: Seconds a play ticket may wait for its connection's ``hello``.
TICKET_TTL_S = 30.0
#: Play tickets not yet used that a server keeps at most (the oldest go first).
TICKETS_MAX = 4096
#: The account a guest's ticket names until its connection says from where it comes
#: (its lobby then names it ``guest-`` and a keyed hash of the address).
GUEST = "guest"
#: The prefix of an IPv6 network that is one guest (an ISP gives a host or a home a /64
#: at least: each of its addresses is not a new guest).
GUEST_IPV6_PREFIX = 64


def guest_network(address: str) -> str:
    """What a guest is counted by: an IPv4 address whole (an IPv4-mapped IPv6 address as
    its IPv4 address), an IPv6 address's /64 network, anything else as it is.

    >>> guest_network("10.0.0.7"), guest_network("::ffff:10.0.0.7")
    ('10.0.0.7', '10.0.0.7')
    >>> guest_network("2001:db8:1:2:3:4:5:6"), guest_network("unix")
    ('2001:db8:1:2::/64', 'unix')
    """
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])  # (a zone id: fe80::1%eth0)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, GUEST_IPV6_PREFIX), strict=False))
    return str(ip)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Ticket:
    """A play ticket: the account it plays as, the SHA-256 of the token it was minted
    for (None: a guest's, on a server whose operator opened public play), and until when
    (monotonic clock) its ``hello`` may come."""

    account: str
    parent: str | None
    expires: float

    @property
    def guest(self) -> bool:
        return self.parent is None


class Credentials:
    """Tokens, looked up by their SHA-256 in the data folder's index, and the one-time
    credentials of a tournament's submissions, kept in memory only."""

    def __init__(self, store: Store) -> None:
        self.store = store
        #: One-time credentials not yet used (sha256 -> account), and the accounts that
        #: may only enter one tournament (account -> tournament).
        self.grants: dict[str, str] = {}
        self.restricted: dict[str, str] = {}
        #: Play tickets not yet used, by SHA-256 (in the order they were minted), and
        #: those used by a session still open (its lobby forgets it when it closes).
        self.tickets: dict[str, Ticket] = {}
        self.redeemed: dict[str, Ticket] = {}
        #: The key of the guests' names (a guest is named by its address, unreadably).
        self._guest_key = secrets.token_bytes(16)

    def account(self, token: str) -> tuple[str, str] | None:
        """The account and role of a token (PROTOCOL.md 3.1); a one-time credential or
        a play ticket is used up by this (one connection)."""
        digest = _digest(token)
        granted = self.grants.pop(digest, None)
        if granted is not None:
            return granted, "player"
        ticket = self.tickets.pop(digest, None)
        if ticket is not None:
            if ticket.expires < time.monotonic() or (
                    ticket.parent is not None and self.store.token_account(ticket.parent) is None):
                return None  # too late, or its token was revoked meanwhile
            self.redeemed[digest] = ticket
            return ticket.account, "player"
        return self.store.token_account(digest)

    def ticket(self, token: str | None, ttl_s: float = TICKET_TTL_S) -> str:
        """A play ticket for the account of ``token`` (None: a guest's): a player of
        that account for one connection whose ``hello`` comes within ``ttl_s`` seconds
        (PROTOCOL.md 3.2). LookupError: an unknown token; PermissionError: a token that
        only watches."""
        now = time.monotonic()
        parent = None
        account = GUEST
        if token is not None:
            parent = _digest(token)
            found = self.store.token_account(parent)
            if found is None:
                raise LookupError("unknown token")
            account, role = found
            if role == "spectator":
                raise PermissionError("this token only watches: it cannot play")
        # the oldest go first, expired or over the cap; the first of the rest stops the
        # look (a mint looks at a few tickets, not at every one held: a guests' flood
        # keeps TICKETS_MAX of them). A ticket minted later with a shorter ``ttl_s`` may
        # expire before an older one: it stays until it is used, refused, or evicted.
        while self.tickets:
            digest = next(iter(self.tickets))
            if len(self.tickets) < TICKETS_MAX and self.tickets[digest].expires >= now:
                break
            del self.tickets[digest]
        ticket = "lsp_" + secrets.token_urlsafe(24)
        self.tickets[_digest(ticket)] = Ticket(account, parent, now + ttl_s)
        return ticket

    def parent(self, digest: str) -> str | None:
        """The digest a session's token is checked by before each lobby request: its own,
        or, for a play ticket, its token's (None: a guest's, with nothing to revoke)."""
        ticket = self.redeemed.get(digest)
        return digest if ticket is None else ticket.parent

    def guest_name(self, address: str) -> str:
        """A guest's account: ``guest-`` and a keyed hash of its network (the same all
        the server's life, unreadable as an address). An IPv4 guest is its address; an
        IPv6 guest is its /64 (:data:`GUEST_IPV6_PREFIX`), which one host or one home
        is given whole: its 2^64 addresses are one guest, with one ``--guest-games``
        share.

        >>> import tempfile, pathlib
        >>> credentials = Credentials(Store(pathlib.Path(tempfile.mkdtemp())))
        >>> name = credentials.guest_name("10.0.0.7")
        >>> name.startswith("guest-"), name == credentials.guest_name("10.0.0.7")
        (True, True)
        >>> name == credentials.guest_name("10.0.0.8")
        False
        >>> credentials.guest_name("2001:db8::1") == credentials.guest_name("2001:db8::ff:2")
        True
        >>> credentials.guest_name("2001:db8::1") == credentials.guest_name("2001:db8:0:1::1")
        False
        """
        mac = hmac.new(self._guest_key, guest_network(address).encode(),
                       hashlib.sha256).hexdigest()
        return f"guest-{mac[:8]}"

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
