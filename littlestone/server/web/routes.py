"""The route table's machinery: a :class:`Route` is a method, a path pattern and a
handler; :func:`find` picks a request's route out of a table, or says why none fits:
no route has its path (404), or none of those has its method (405, with the methods
that would do, for the ``Allow`` header). A ``GET`` route answers ``HEAD`` too.

A pattern's ``{name}`` matches one path segment. :func:`split_target` decodes each
segment on its own (so ``%2F`` inside a segment is data, not a separator) and drops
the empty ones (``//games//g1/`` is ``/games/g1``).

>>> table = [Route("GET", "/games/{game_id}", "a game"), Route("GET", "/login", "form"),
...          Route("POST", "/login", "log in"), Route(WEBSOCKET, "/live/{game_id}", "feed")]
>>> path, query = split_target("//games/g%2F1/?start=3")
>>> path, query
(('games', 'g/1'), {'start': '3'})
>>> found = find(table, "HEAD", path)
>>> found.route.handler, found.params
('a game', {'game_id': 'g/1'})
>>> find(table, "DELETE", ("login",))
Refused(status=405, allow=('GET', 'HEAD', 'POST'))
>>> find(table, "GET", ("live", "g1")), find(table, WEBSOCKET, ("login",))
(Refused(status=404, allow=()), Refused(status=404, allow=()))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar
from urllib.parse import parse_qsl, unquote

__all__ = ["WEBSOCKET", "Found", "Refused", "Route", "find", "split_target"]

#: The method of a route that takes a WebSocket handshake (a ``GET`` with ``Upgrade:
#: websocket``): such a route answers nothing else, and plain requests never see it.
WEBSOCKET = "WEBSOCKET"

Handler = TypeVar("Handler")


@dataclass(frozen=True)
class Route(Generic[Handler]):
    """One line of a route table: ``method`` and ``pattern`` (``/games/{game_id}``)
    select ``handler``. ``guarded``: only for a viewer (a token, or the public view);
    ``worker``: answered in a worker thread (it reads the index or the logs), not on
    the event loop; ``heavy``: in the thread of the page's heavy work (exact Ldim, under
    the page's budget), apart from the index's readers."""

    method: str
    pattern: str
    handler: Handler
    guarded: bool = True
    worker: bool = True
    heavy: bool = False
    segments: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "segments", tuple(s for s in self.pattern.split("/") if s))

    @property
    def api(self) -> bool:
        """Its errors are JSON (the API's routes and the live feed's: scripts read them),
        not a page."""
        return self.method == WEBSOCKET or self.segments[:1] == ("api",)

    def match(self, path: tuple[str, ...]) -> dict[str, str] | None:
        """The path's values of the pattern's ``{names}``; None: another path."""
        if len(path) != len(self.segments):
            return None
        params = {}
        for mine, theirs in zip(self.segments, path, strict=True):
            if mine.startswith("{") and mine.endswith("}"):
                params[mine[1:-1]] = theirs
            elif mine != theirs:
                return None
        return params


@dataclass(frozen=True)
class Found(Generic[Handler]):
    """The route a request takes, and the values of its pattern's names."""

    route: Route[Handler]
    params: dict[str, str]


@dataclass(frozen=True)
class Refused:
    """No route takes the request: 404 (no route has its path) or 405 (``allow``: the
    methods its path takes)."""

    status: int
    allow: tuple[str, ...] = ()


def find(table: list[Route[Handler]], method: str, path: tuple[str, ...]
         ) -> Found[Handler] | Refused:
    """The first route of ``table`` for ``method`` (``HEAD`` as ``GET``) and ``path``
    (segments, as :func:`split_target` gives them)."""
    wanted = "GET" if method == "HEAD" else method
    allow: set[str] = set()
    for route in table:
        if (route.method == WEBSOCKET) != (method == WEBSOCKET):
            continue
        params = route.match(path)
        if params is None:
            continue
        if route.method == wanted:
            return Found(route, params)
        allow.update(("GET", "HEAD") if route.method == "GET" else (route.method,))
    return Refused(405, tuple(sorted(allow))) if allow else Refused(404)


def split_target(target: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """A request target's path, as its non-empty segments, each percent-decoded, and
    its query (last value wins)."""
    # (a request's target is a path: urlsplit would read a leading // as a host name)
    raw, _, query = target.partition("?")
    path = tuple(unquote(s) for s in raw.split("/") if s)
    return path, dict(parse_qsl(query))
