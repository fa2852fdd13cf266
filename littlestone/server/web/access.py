"""Who may look at the page and its API: one function, :func:`viewer`.

A request names its token in an ``Authorization: Bearer TOKEN`` header or in the
``littlestone_token`` cookie (which ``/login`` sets: HttpOnly, SameSite=Strict). With
the operator's public view on (``serve --public``) anyone may read without a token; it
is read-only in every case: no route of the web room changes a game, and the live feed
never reads from the browser.

>>> from websockets.datastructures import Headers
>>> from websockets.http11 import Request
>>> access = Access(public=False, tokens=lambda t: ("bob", "player") if t == "ls_x" else None)
>>> viewer(Request("/api/games", Headers([("Authorization", "Bearer ls_x")])), access)
'bob'
>>> viewer(Request("/", Headers([("Cookie", "a=1; littlestone_token=ls_x")])), access)
'bob'
>>> viewer(Request("/", Headers()), access) is None
True
>>> viewer(Request("/", Headers()), Access(public=True, tokens=lambda t: None))
'public'
>>> privilege(Request("/", Headers([("Authorization", "Bearer ls_x")])), access)
'player'

Roles (PROTOCOL.md 3.1) hold here as on the wire: any token, and the public view, may
read the lists, finished games and tournaments; a running game (its row in the lists,
its page, live feed, curve and records) is a player's only when it plays in it
(:func:`hidden_games`), as ``watch`` is: to another player it does not exist until it
ends; a spectator's or an admin's token, and the operator's public view, see them all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie

from websockets.http11 import Request

from littlestone.server.net.spectators import Broadcast
from littlestone.server.records.store import Store

__all__ = ["COOKIE", "PUBLIC", "Access", "hidden_games", "privilege", "store_tokens", "token_of",
           "viewer"]

#: The cookie that carries a token.
COOKIE = "littlestone_token"
#: The viewer of a request without a token when the public view is on.
PUBLIC = "public"


@dataclass(frozen=True)
class Access:
    """What the web room checks a request against: whether the operator switched the
    public read-only view on, and how a token maps to its account and role (None:
    unknown)."""

    public: bool
    tokens: Callable[[str], tuple[str, str] | None]


def store_tokens(store: Store) -> Callable[[str], tuple[str, str] | None]:
    """Tokens as a data folder's index keeps them (hashed); a one-time credential of a
    tournament's submission is not looked at (nor used up)."""

    def account(token: str) -> tuple[str, str] | None:
        return store.token_account(hashlib.sha256(token.encode()).hexdigest())

    return account


def token_of(request: Request) -> str | None:
    """The token a request carries: its bearer token, else its cookie."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    for raw in request.headers.get_all("Cookie"):
        try:
            morsel = SimpleCookie(raw).get(COOKIE)
        except CookieError:
            continue
        if morsel is not None and morsel.value:
            return morsel.value
    return None


def viewer(request: Request, access: Access) -> str | None:
    """Who is looking: the account of the request's token, :data:`PUBLIC` when it has
    none (or an unknown one) and the public view is on, or None: refused. (The one
    place where the token roles plug in.)"""
    token = token_of(request)
    if token is not None:
        found = access.tokens(token)
        if found is not None:
            return found[0]
    return PUBLIC if access.public else None


def privilege(request: Request, access: Access) -> str:
    """The role of the request's token; the public view reads as a spectator."""
    token = token_of(request)
    found = access.tokens(token) if token is not None else None
    return found[1] if found is not None else "spectator"


def hidden_games(request: Request, access: Access, running: Mapping[str, Broadcast]
                 ) -> set[str]:
    """The running games (id -> their broadcast, with its players' ``accounts``) this
    request may not follow: for a player's token, those it does not play in."""
    if privilege(request, access) != "player":
        return set()
    who = viewer(request, access)
    return {game_id for game_id, broadcast in running.items()
            if who not in getattr(broadcast, "accounts", ())}
