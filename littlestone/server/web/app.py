"""Routing: the page, its JSON API, static files, logging in, and the live feed.

:func:`attach` makes a :class:`~littlestone.server.net.server.GameServer` answer plain
HTTP on its own port (``littlestone serve``); :func:`serve_web` serves the page alone,
in a thread (``littlestone tournament --serve``). The routes are a table,
:data:`ROUTES` (method, path pattern, handler; :mod:`.routes` finds a request's): an
unknown path is a 404, a known one asked with another method a 405 that names the
methods it takes (``Allow``). All are read-only:

- ``/``, ``/games/ID``, ``/tournaments/NAME``, ``/play``, ``/class``: the pages
  (``?part=`` a fragment);
- ``/api/games``, ``/api/games/ID``, ``/api/games/ID/curve``,
  ``/api/games/ID/records?start=&count=``, ``/api/tournaments``,
  ``/api/tournaments/NAME``, ``/api/tree?class=SPEC``, ``/api/live``, ``/api/play``,
  ``/api/play/class?spec=SPEC``: JSON;
- ``/live/ID`` (a WebSocket): a running game's spectator feed (PROTOCOL.md 5.4) as JSON
  messages; the browser's messages are never read: it cannot send a move;
- ``/competitions/NAME`` (``?part=board``), ``/competitions/NAME/versions/ID`` (a
  version's check and games: its student's and an admin's), ``/competitions/NAME/
  ranking.csv`` and ``ranking.json`` (the export), ``/api/competitions/NAME``; a
  competition's upload form sends the file on the agents' endpoint, as ``submit``
  (PROTOCOL.md 4.2), with a play ticket;
- ``/static/NAME``, ``/login``, ``/logout``;
- ``POST /api/play/ticket``: a play ticket for the page's script (PROTOCOL.md 3.2),
  which then plays on the agents' endpoint like any client: the one route that hands
  out something, and only to this origin's page.

Database work and log reading run in worker threads, each with its own connection to
the index: a page never holds up a game. The heavy work a viewer may start (a tree:
exact Ldim) runs in a thread of its own within the page's budget (``serve
--page-cpu``, :mod:`.data`), beyond which the answer is 503: it never holds up
another page either.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgpack
from websockets.datastructures import MultipleValuesError
from websockets.http11 import Request, Response

from littlestone.server.net.admission import TICKET_TTL_S
from littlestone.server.net.server import GameServer
from littlestone.server.net.settings import HUMAN, REVOKE_CHECK_S
from littlestone.server.records.store import Store
from littlestone.server.records.submissions import folder_of
from littlestone.server.tournament.competition import Competition, export, standings
from littlestone.server.tournament.competition.standings import stamp, version_games
from littlestone.server.web import data, filters, pages, play
from littlestone.server.web.access import (
    COOKIE,
    PUBLIC,
    Access,
    hidden_games,
    privilege,
    store_tokens,
    token_of,
    viewer,
)
from littlestone.server.web.renders import Rendered, Renders
from littlestone.server.web.responses import (
    entity_tag,
    error,
    html_response,
    json_response,
    matches,
    not_modified,
    redirect,
    respond,
    static_file,
)
from littlestone.server.web.routes import WEBSOCKET, Found, Route, find, split_target
from littlestone.transport import Connection, Handler, Upgrade, serve

__all__ = ["ROUTES", "Visit", "WebApp", "attach", "serve_web"]

log = logging.getLogger(__name__)

#: Worker threads for the page's database and log work.
WORKERS = 2
#: Games a list shows when the query does not say (``?limit=``).
LIST_LIMIT = 50


@functools.lru_cache(maxsize=2)
def _as_json(frame: bytes) -> bytes:
    """A spectator message as JSON, once for all the browsers that watch its game (each
    re-encoding it made a crowd of feeds slow the game down: 800 doubled its time)."""
    return json.dumps(msgpack.unpackb(frame, raw=False), default=str).encode()


class _JsonSpectator:
    """A browser watching a game: each spectator message, re-encoded as JSON (UTF-8,
    in a binary frame), if its connection takes it at once (else it misses it)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def send_nowait(self, frame: bytes) -> bool:
        try:  # (called from the game's log writer: a browser can never break a game)
            return self.connection.send_nowait(_as_json(frame))
        except Exception:
            log.exception("the live feed could not send a message")
            return False


@dataclasses.dataclass(frozen=True)
class Visit:
    """A request as a route's handler sees it: the values of its path's ``{names}``,
    its query, who is looking (None on an open route: nobody is asked), the running
    games' figures and those hidden from this viewer, the index as the handler's
    thread reads it, and the app."""

    request: Request
    params: dict[str, str]
    query: dict[str, str]
    who: str | None
    live: data.Live
    hidden: frozenset[str]
    store: Store
    app: WebApp

    def number(self, name: str, default: int) -> int:
        """An integer of the query (ValueError, a 400, when it is not one)."""
        return int(self.query.get(name, default))


#: What a handler answers: a response, a WebSocket's handler, or None: not found (a 404).
Answer = Response | Upgrade | None


# -- the handlers: one a route ---------------------------------------------------------


def index(visit: Visit) -> Answer:
    games = data.games(visit.store, visit.live, visit.number("limit", LIST_LIMIT), visit.hidden)
    if visit.query.get("part") == "games":
        return html_response(pages.games_table(games))
    competition = visit.app.competition
    return html_response(pages.index_page(games, data.tournaments(visit.store), visit.who,
                                          competition.name if competition else None))


def game_page(visit: Visit) -> Answer:
    game_id = visit.params["game_id"]
    game = data.game(visit.store, visit.live, game_id)
    if game is None:
        return None
    records = data.records(visit.store, game_id, visit.number("start", 1), pages.REPLAY_ROWS)
    return html_response(pages.game_page(game, data.curve(visit.store, game_id), records,
                                         visit.who))


def tournament_page(visit: Visit) -> Answer:
    """A tournament's page; ``?part=board`` its leaderboard alone (404 until it has
    one). A tournament not started yet (``tournament --serve``) has a page that waits."""
    name = visit.params["name"]
    board = data.tournament(visit.store, name)
    if board is not None and _students_games(visit):
        hidden = [g.copy() for g in board["failed"]]
        for g in hidden:
            g["message"] = ""
        board["failed"] = hidden
    if visit.query.get("part") == "board":
        return None if board is None else html_response(pages.leaderboard(board))
    games = None if board is None else _tournament_games(visit)
    return html_response(pages.tournament_page(name, board, visit.who, games))


def _students_games(visit: Visit) -> bool:
    """Whether the tournament asked for is the competition's and the viewer no admin:
    its games' messages are then not shown (a version's traceback is its student's:
    ``/competitions/NAME/versions/ID``)."""
    competition = visit.app.competition
    return competition is not None and competition.name == visit.params["name"] and \
        privilege(visit.request, visit.app.access) != "admin"


def _tournament_games(visit: Visit) -> filters.GamesPage:
    """A tournament's games filtered by the query's ``entrant``, ``status`` and ``class``
    (:mod:`.filters`), one page of them; a competition's without their messages (a
    version's traceback is its student's), but for an admin."""
    name = visit.params["name"]
    entrant, status, hclass = (visit.query.get(k, "").strip() for k in filters.FILTERS)
    asked: filters.GameFilters = {}
    if entrant:
        asked["entrant"] = entrant
    if status:
        asked["status"] = status
    if hclass:
        asked["class"] = hclass
    found = filters.tournament_games(visit.store, name, asked, visit.number("page", 1),
                                     visit.number("limit", data.BOARD_LIMIT))
    if _students_games(visit):
        for game in found["games"]:
            game.pop("message", None)
    return found


def api_tournament_games(visit: Visit) -> Answer:
    """``/api/tournaments/NAME/games?entrant=&status=&class=&page=&limit=``: one page of
    a tournament's games, filtered on the server (:mod:`.filters`)."""
    if not visit.store.has_tournament(visit.params["name"]):
        return None
    return json_response(_tournament_games(visit))


def api_games(visit: Visit) -> Answer:
    filters = {k: visit.query.get(k) for k in ("learner", "adversary", "class", "status")}
    return json_response({"games": data.games(visit.store, visit.live,
                                              visit.number("limit", LIST_LIMIT),
                                              visit.hidden, **filters)})


def _json(found: Any) -> Answer:
    return None if found is None else json_response(found)


def api_game(visit: Visit) -> Answer:
    return _json(data.game(visit.store, visit.live, visit.params["game_id"]))


def api_curve(visit: Visit) -> Answer:
    return _json(data.curve(visit.store, visit.params["game_id"]))


def api_records(visit: Visit) -> Answer:
    return _json(data.records(visit.store, visit.params["game_id"], visit.number("start", 1),
                              visit.number("count", pages.REPLAY_ROWS)))


def api_tournaments(visit: Visit) -> Answer:
    return json_response({"tournaments": data.tournaments(visit.store)})


def api_tournament(visit: Visit) -> Answer:
    """A tournament's board, one page of it (``?page=`` from 1, ``?limit=`` rows of each
    list: :data:`.data.BOARD_LIMIT` unless said, :data:`.data.BOARD_LIMIT_MAX` at most);
    a competition's without its games' messages (a version's traceback is its
    student's: ``/competitions/NAME/versions/ID``), but for an admin."""
    board = data.tournament(visit.store, visit.params["name"], visit.number("page", 1),
                            visit.number("limit", data.BOARD_LIMIT))
    competition = visit.app.competition
    if board is not None and competition is not None and competition.name == \
            visit.params["name"] and privilege(visit.request, visit.app.access) != "admin":
        failed = [g.copy() for g in board["failed"]]
        for g in failed:
            g.pop("message", None)
        board["failed"] = failed
    return _json(board)


def api_tree(visit: Visit) -> Answer:
    """A class's shattered tree: only a class played here (a viewer builds nothing
    else), within the page's budget (beyond: 503)."""
    spec = visit.query.get("class")
    if not spec or spec.endswith("*") or not visit.store.games(limit=1, **{"class": spec}):
        return None
    return json_response(data.tree(spec, visit.app.page_cpu_s))


def api_live(visit: Visit) -> Answer:
    return json_response({"running": [{"game_id": g, "round": t, **totals}
                                      for g, (t, totals) in visit.live.items()]})


def static(visit: Visit) -> Answer:
    return static_file(visit.params["name"]) or error(404, "no such file", False)


def _another_page(request: Request) -> bool:
    """A request a page of another origin made the browser send: of another site, or of
    a sibling of this one (another port of this host), as ``Sec-Fetch-Site`` says
    (``same-origin``: this page's own; ``none``: the person, typing or following a
    bookmark)."""
    return request.headers.get("Sec-Fetch-Site", "none").lower() not in ("same-origin",
                                                                          "none")


def _same_origin(request: Request) -> bool:
    """Whether a request provably comes from this origin's own page: the browser says
    ``Sec-Fetch-Site: same-origin``, or, a browser too old to say, its ``Origin`` (else
    its ``Referer``) is this host. A sibling of the site (another subdomain or port:
    ``same-site``), a typed address (``none``) or a request that says nothing is not.

    >>> from websockets.datastructures import Headers
    >>> def asks(**headers):
    ...     return _same_origin(Request("/login", Headers({"Host": "h:1", **headers})))
    >>> asks(**{"Sec-Fetch-Site": "same-origin"}), asks(**{"Sec-Fetch-Site": "same-site"})
    (True, False)
    >>> asks(Referer="http://h:1/login"), asks(Origin="http://h:2"), asks()
    (True, False, False)
    """
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None:
        return site.lower() == "same-origin"
    host = request.headers.get("Host")
    source = request.headers.get("Origin") or request.headers.get("Referer")
    return source is not None and host is not None and urlsplit(source).netloc == host


def login(visit: Visit) -> Answer:
    """``POST /login`` with the token as a bearer token (the form's script), or
    ``GET /login?token=`` (the form without JavaScript): a cookie for the page. Only
    this origin's own form may log a browser in (:func:`_same_origin`): a sibling site's
    page would otherwise log a student in as someone else (login CSRF)."""
    request = visit.request
    token = token_of(request) if request.method == "POST" else visit.query.get("token")
    if token is None:
        return html_response(pages.login_page())
    if not _same_origin(request):
        return error(403, "log in with this page's own form", request.method == "POST")
    if visit.app.access.tokens(token) is None:
        if request.method == "POST":
            return error(401, "unknown token", True)
        return html_response(pages.login_page("unknown token"), 401)
    server = visit.app.server
    secure = "; Secure" if server is not None and server.settings.tls else ""
    cookie = [("Set-Cookie", f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
               f"{secure}")]
    if request.method == "POST":
        return respond(204, b"", "text/plain", cookie)
    return redirect("/", cookie)


def logout(visit: Visit) -> Answer:
    if _another_page(visit.request):
        return error(403, "another site's page may not log you in or out", False)
    return redirect("/login", [("Set-Cookie", f"{COOKIE}=; Max-Age=0; Path=/; "
                                "HttpOnly; SameSite=Strict")])


def _other_origin(request: Request) -> bool:
    """A request from a page of another origin (its ``Origin``, when it says one; or
    ``Sec-Fetch-Site``: another site, or a sibling of this one, e.g. another port)."""
    origin = request.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("Host"):
        return True
    return request.headers.get("Sec-Fetch-Site", "same-origin").lower() not in (
        "same-origin", "none")


def _by_cookie(request: Request) -> bool:
    """Whether a request's token comes in its cookie (not a bearer token)."""
    scheme = request.headers.get("Authorization", "").partition(" ")[0]
    return scheme.lower() != "bearer" and token_of(request) is not None


def _says_origin(request: Request) -> bool:
    """Whether a request says where it comes from (``Origin`` or ``Sec-Fetch-Site``):
    PROTOCOL.md 3.2 gives a cookie's request a ticket only then (a request that says
    neither is refused 403, whatever else it says)."""
    return "Origin" in request.headers or "Sec-Fetch-Site" in request.headers


def live_feed(visit: Visit) -> Answer:
    """The WebSocket of a running game's spectator feed, for a page of this origin."""
    origin = visit.request.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc != visit.request.headers.get("Host"):
        return error(403, "another site's page may not watch here", True)
    return Upgrade(visit.app.watch(visit.params["game_id"], token_of(visit.request)))


def play_page(visit: Visit) -> Answer:
    """The play page: a form for the game, and room for the script to play it."""
    server = visit.app.server
    return html_response(pages.play_page(
        play.MENU, visit.who, server is not None,
        server.settings.for_player(frozenset({HUMAN})) if server is not None else None,
        guests=server is not None and server.settings.public_play))


def play_ticket(visit: Visit) -> Answer:
    """``POST /api/play/ticket``: a play ticket (PROTOCOL.md 3.2) for the page's script, for
    the account of the request's token (its HttpOnly cookie), or a guest's when the
    operator opened public play (``serve --public-play``). Only this origin's page may
    ask: the ticket is in the answer, which the script sends in its ``hello``."""
    request, server = visit.request, visit.app.server
    if _other_origin(request) or (_by_cookie(request) and not _says_origin(request)):
        return error(403, "another site's page may not play here", True)
    if server is None:
        return error(404, "no games are played here: this port serves the page", True)
    token = token_of(request)
    if token is not None and visit.app.access.tokens(token) is None:
        token = None  # an unknown or revoked token: as if none (a guest, if guests play)
    if token is None and not server.settings.public_play:
        return error(401, "log in with a token to play (this server's operator has not "
                     "opened play to guests)", True)
    try:
        ticket = server.credentials.ticket(token)
    except PermissionError as exc:
        return error(403, str(exc), True)
    except LookupError:
        return error(401, "unknown token", True)
    return json_response({"ticket": ticket, "expires_in": TICKET_TTL_S,
                          "guest": token is None})


def api_play(visit: Visit) -> Answer:
    """The play page's menu, and the deadlines a person's moves get here."""
    server = visit.app.server
    limits = None
    if server is not None:
        human = server.settings.for_player(frozenset({HUMAN}))
        limits = {"move_deadline_ms": int(human.move_deadline * 1000),
                  "time_bank_ms": int(human.time_bank * 1000),
                  "guests": server.settings.public_play}
    return json_response({**play.MENU, "limits": limits})


def api_play_class(visit: Visit) -> Answer:
    """A menu class's truth table, Ldim and shattered tree (:func:`.play.class_info`)."""
    return _json(play.class_info(visit.query.get("spec", "")))


def class_page(visit: Visit) -> Answer:
    """The class mode: everyone's games of the last hour, and mistakes against Ldim
    (``?part=board``: the part the script refreshes)."""
    board = play.class_mode(visit.store, visit.live, visit.hidden)
    if visit.query.get("part") == "board":
        return html_response(pages.class_board(board))
    return html_response(pages.class_page(board, visit.who))


#: Versions of other students the competition's page lists beside the viewer's own
#: (the newest; the API pages through them all).
VERSIONS_SHOWN = 100
#: Rows of the ranking and of the versions one page of ``/api/competitions/NAME`` holds
#: unless ``?limit=`` says, and the most it may say.
COMPETITION_LIMIT, COMPETITION_LIMIT_MAX = 100, 500
#: The content type of a page.
HTML = "text/html; charset=utf-8"


def _this_competition(visit: Visit) -> Competition | None:
    competition = visit.app.competition
    if competition is None or competition.name != visit.params["name"]:
        return None
    return competition


def _tag(visit: Visit, competition: Competition) -> str:
    """The ETag of what a competition's route answers this viewer: the standings' stamp
    (:func:`.standings.stamp`: any game or submission changes it), who is looking and
    what was asked; and the competition's state (open, closed), which the clock moves
    without a change in the index."""
    seen = stamp(visit.store, competition.config, competition.data)
    return entity_tag(seen, str(visit.who), privilege(visit.request, visit.app.access),
                      visit.request.path, competition.config.state(competition.now()))


# (the competition's standings, as competition.standings returns them)
def _competition(visit: Visit, competition: Competition, newest: int | None = None
                 ) -> dict[str, Any]:
    """A competition's standings as the viewer may see them: a version's check is its
    student's and an admin's only (``own``); the others see its verdict and scores.
    ``newest``: only the viewer's own versions and the ``newest`` last are listed (the
    page), ``versions_total`` counting them all."""
    board = standings(visit.store, competition.config, competition.data)
    admin = privilege(visit.request, visit.app.access) == "admin"
    shown = []
    versions = board["versions"]
    last = {v["id"] for v in versions[-newest:]} if newest else set()
    for version in versions:
        own = admin or (visit.who not in (None, PUBLIC) and version["account"] == visit.who)
        if newest is not None and not own and version["id"] not in last:
            continue
        if own:
            shown.append({**version, "own": True})
        else:
            shown.append({**{k: v for k, v in version.items()
                             if k not in ("report", "game_list")}, "own": False})
    return {**board, "versions": shown, "versions_total": len(versions)}


def _fresh(visit: Visit, competition: Competition) -> tuple[str, Response | None]:
    """The ETag of a competition's answer, and 304 Not Modified when the request's
    ``If-None-Match`` holds it (nothing changed since: nothing is read or rendered)."""
    tag = _tag(visit, competition)
    return tag, (not_modified(tag) if matches(visit.request, tag) else None)


def competition_page(visit: Visit) -> Answer:
    """A competition's page (``?part=board``: its standings and versions alone, which
    the page's script asks for with ``If-None-Match``: 304 while nothing changed)."""
    competition = _this_competition(visit)
    if competition is None:
        return None
    tag, unchanged = _fresh(visit, competition)
    if unchanged is not None:
        return unchanged

    def render() -> Rendered:
        board = _competition(visit, competition, VERSIONS_SHOWN)
        board = {**board, "versions_more": board["versions_total"] - len(board["versions"]),
                 "state": competition.config.state(competition.now())}
        if visit.query.get("part") == "board":
            text = pages.competition_board(competition.name, board)
        else:
            may_submit = (visit.who not in (None, PUBLIC)
                          and privilege(visit.request, visit.app.access) != "spectator")
            text = pages.competition_page(competition.name, board, visit.who, may_submit)
        return text.encode(), HTML, []

    return _rendered(visit, tag, render)


def _rendered(visit: Visit, tag: str, render: Callable[[], Rendered]) -> Response:
    """A competition's answer for ``tag``, rendered once for every request that asks for
    it (:class:`.renders.Renders`), with its ETag."""
    body, kind, extra = visit.app.renders.answer(tag, render)
    return respond(200, body, kind, [*extra, ("ETag", tag)])


def competition_version(visit: Visit) -> Answer:
    """One version's check and games: its student's and an admin's (else 404)."""
    competition = _this_competition(visit)
    if competition is None:
        return None
    board = _competition(visit, competition)
    version = next((v for v in board["versions"] if str(v["id"]) == visit.params["ident"]
                    and v["own"]), None)
    if version is None:
        return None
    games = version_games(visit.store, competition.config, competition.data, version)
    return html_response(pages.competition_version(competition.name, {
        **version, "game_list": games}, visit.who))


def competition_export(visit: Visit) -> Answer:
    """``ranking.csv``, ``ranking.json``: the ranking as ``competition export`` prints
    it (final once closed; the CSV says which in its ``standing`` column)."""
    form = {"ranking.csv": "csv", "ranking.json": "json"}.get(visit.params["file"])
    competition = _this_competition(visit) if form is not None else None
    if competition is None or form is None:
        return None
    tag, unchanged = _fresh(visit, competition)
    if unchanged is not None:
        return unchanged
    def render() -> Rendered:
        kind = "text/csv; charset=utf-8" if form == "csv" else "application/json"
        board = standings(visit.store, competition.config, competition.data)
        return export(board, form).encode(), kind, [(
            "Content-Disposition",
            f'attachment; filename="{competition.name}-ranking.{form}"')]

    return _rendered(visit, tag, render)


def api_competition(visit: Visit) -> Answer:
    """A competition's standings as JSON (full precision), one page of its ranking and
    of its versions (``?page=`` from 1, ``?limit=`` rows of each: :data:`COMPETITION_LIMIT`
    unless said, :data:`COMPETITION_LIMIT_MAX` at most), with each list's length."""
    competition = _this_competition(visit)
    if competition is None:
        return None
    tag, unchanged = _fresh(visit, competition)
    if unchanged is not None:
        return unchanged
    page = max(1, visit.number("page", 1))
    limit = max(1, min(visit.number("limit", COMPETITION_LIMIT), COMPETITION_LIMIT_MAX))
    def render() -> Rendered:
        board = _competition(visit, competition)
        start = (page - 1) * limit
        return json.dumps({**board, "ranking": board["ranking"][start:start + limit],
                           "versions": board["versions"][start:start + limit],
                           "page": page, "limit": limit,
                           "ranking_total": len(board["ranking"]),
                           "versions_total": len(board["versions"])},
                          default=str).encode(), "application/json", []

    return _rendered(visit, tag, render)


#: The route table: the first route whose method and pattern fit a request answers it.
ROUTES: list[Route[Callable[[Visit], Answer]]] = [
    Route("GET", "/", index),
    Route("GET", "/games/{game_id}", game_page),
    Route("GET", "/tournaments/{name}", tournament_page),
    Route("GET", "/api/games", api_games),
    Route("GET", "/api/games/{game_id}", api_game),
    Route("GET", "/api/games/{game_id}/curve", api_curve),
    Route("GET", "/api/games/{game_id}/records", api_records),
    Route("GET", "/api/tournaments", api_tournaments),
    Route("GET", "/api/tournaments/{name}", api_tournament),
    Route("GET", "/api/tournaments/{name}/games", api_tournament_games),
    Route("GET", "/competitions/{name}", competition_page),
    Route("GET", "/competitions/{name}/versions/{ident}", competition_version),
    Route("GET", "/competitions/{name}/{file}", competition_export),
    Route("GET", "/api/competitions/{name}", api_competition),
    Route("GET", "/api/tree", api_tree, heavy=True),
    Route("GET", "/api/live", api_live),
    Route("GET", "/api/play", api_play, worker=False),
    Route("GET", "/api/play/class", api_play_class, heavy=True),
    Route("GET", "/play", play_page, worker=False),
    Route("POST", "/api/play/ticket", play_ticket, worker=False),
    Route("GET", "/class", class_page, heavy=True),
    Route(WEBSOCKET, "/live/{game_id}", live_feed, worker=False),
    Route("GET", "/static/{name}", static, guarded=False, worker=False),
    Route("GET", "/login", login, guarded=False, worker=False),
    Route("POST", "/login", login, guarded=False, worker=False),
    Route("GET", "/logout", logout, guarded=False, worker=False),
]


class WebApp:
    """The web room's routes over one data folder (and a server's running games)."""

    def __init__(self, data_folder: Path, public: bool, server: GameServer | None = None
                 ) -> None:
        self.data = Path(data_folder)
        self.server = server
        #: The competition this server runs (``serve --competition``), or None.
        door = server.lobby.submissions if server is not None else None
        self.competition = door if isinstance(door, Competition) else None
        #: The index as the event loop reads it (tokens only).
        self.store = server.store if server is not None else Store(self.data)
        self.access = Access(public=public, tokens=store_tokens(self.store))
        #: CPU seconds of one request's heavy work (``serve --page-cpu``).
        self.page_cpu_s = (server.settings.budgets.page_cpu_s if server is not None
                           else data.PAGE_CPU_S)
        #: Competition answers rendered once a tag (:mod:`.renders`).
        self.renders = Renders()
        self._local = threading.local()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            WORKERS, thread_name_prefix="littlestone-web")
        #: The page's heavy work (exact Ldim): one thread, apart from the index's readers,
        #: so that a tree being built never holds up another page.
        self._heavy = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="littlestone-web-heavy")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._heavy.shutdown(wait=False, cancel_futures=True)

    # -- routing (on the event loop) -------------------------------------------------

    def route(self, request: Request) -> Response | Awaitable[Response] | Upgrade | None:
        """A request's answer (the transport's ``http`` hook); ``None`` for an agent's
        WebSocket handshake. A ``HEAD`` is answered as its ``GET`` without the body
        (RFC 9110 9.3.2: the same headers, Content-Length included). A header the
        routes read once (``Origin``, ``Host``, ``Sec-Fetch-Site``, ``Authorization``,
        ``Upgrade``) given twice is a 400: which one counts is ambiguous (it used to
        raise out of the transport, dropping the connection and logging a traceback
        for every such request)."""
        try:
            answer = self._route(request)
        except MultipleValuesError as exc:
            api = split_target(request.path)[0][:1] == ("api",)
            return error(400, f"bad request: the header {exc} is given more than once", api)
        if request.method != "HEAD" or answer is None or isinstance(answer, Upgrade):
            return answer
        if isinstance(answer, Response):
            return dataclasses.replace(answer, body=b"")

        async def headless(answer: Awaitable[Response]) -> Response:
            return dataclasses.replace(await answer, body=b"")

        return headless(answer)

    def _route(self, request: Request) -> Response | Awaitable[Response] | Upgrade | None:
        path, query = split_target(request.path)
        upgrade = request.headers.get("Upgrade", "").lower() == "websocket"
        found = find(ROUTES, WEBSOCKET if upgrade else request.method, path)
        if not isinstance(found, Found):
            if upgrade:
                return None  # the agents' endpoint, as it always was
            api = path[:1] == ("api",)
            if found.status == 405:
                allow = ", ".join(found.allow)
                return error(405, f"not allowed here: this path takes {allow}", api,
                             [("Allow", allow)])
            return error(404, "not found", api)
        route, params = found.route, found.params
        who: str | None = None
        hidden: frozenset[str] = frozenset()
        live: data.Live = {}
        if route.guarded:
            who = viewer(request, self.access)
            if who is None:
                if route.api:
                    return error(401, "a token is needed (Authorization: Bearer TOKEN)", True)
                return html_response(pages.login_page(), 401)
            running = self.server.running if self.server is not None else {}
            hidden = frozenset(hidden_games(request, self.access, running))
            if any(value in hidden for value in params.values()):
                return error(404, "not found", route.api)  # a player follows its own games
            live = {game_id: value for game_id, value in data.live_snapshot(running).items()
                    if game_id not in hidden}

        def answer(store: Store) -> Response | Upgrade:
            shut = hidden
            if route.guarded and self.competition is not None:
                rating = self._rating_hidden(request, who, store)
                if any(value in rating for value in params.values()):
                    return error(404, "not found", route.api)
                shut = hidden | rating
            visit = Visit(request, params, query, who, live, shut, store, self)
            try:
                answered = route.handler(visit)
            except ValueError as exc:  # a bad number in the query
                return error(400, f"bad request: {exc}", route.api)
            except data.PageBudget as exc:  # more than the page does for a viewer
                return error(503, str(exc), route.api, [("Retry-After", "60")])
            return error(404, "not found", route.api) if answered is None else answered

        if not route.worker:
            return answer(self.store)
        return self._in_thread(answer, self._heavy if route.heavy else self._pool)

    def _rating_hidden(self, request: Request, who: str | None, store: Store) -> frozenset[str]:
        """The running games of a competition's ratings this viewer may not follow:
        another account's (they run in the rater's process, so the server's broadcasts
        do not know them). A running rating game is its student's and an admin's only;
        to everyone else, the public view and spectators too, it does not exist until
        it ends (then it is listed like any finished game)."""
        if privilege(request, self.access) == "admin":
            return frozenset()
        mine = folder_of(who) if who is not None else None  # (as the versions' folders)
        return frozenset(game_id for game_id, folders in data.rating_games(store).items()
                         if mine not in folders)

    def _in_thread(self, work: Callable[[Store], Response | Upgrade],
                   pool: concurrent.futures.ThreadPoolExecutor) -> Awaitable[Response]:
        def call() -> Response:
            store = getattr(self._local, "store", None)
            if store is None:
                store = self._local.store = Store(self.data)
            answer = work(store)
            assert isinstance(answer, Response), "a WebSocket is answered on the event loop"
            return answer

        return asyncio.get_running_loop().run_in_executor(pool, call)

    # -- the live feed ----------------------------------------------------------------

    def watch(self, game_id: str, token: str | None) -> Handler:
        """A browser's live feed of a running game, until it ends, the browser goes or
        ``token`` is revoked."""
        async def watch(connection: Connection) -> None:
            broadcast = self.server.running.get(game_id) if self.server is not None else None
            if broadcast is None:
                await connection.send(json.dumps({"type": "gone", "game_id": game_id})
                                      .encode())
                return
            await connection.send(json.dumps(broadcast.watching(), default=str).encode())
            spectator = _JsonSpectator(connection)
            broadcast.spectators.add(spectator)
            try:
                end = asyncio.ensure_future(broadcast.over.wait())
                try:
                    while not (end.done() or connection.closed.done()):
                        await asyncio.wait((end, connection.closed), timeout=REVOKE_CHECK_S,
                                           return_when=asyncio.FIRST_COMPLETED)
                        if token is not None and self.access.tokens(token) is None:
                            await connection.close(1008, "token revoked")
                            return
                finally:
                    end.cancel()
            finally:
                broadcast.spectators.discard(spectator)

        return watch


def attach(server: GameServer, public: bool = False) -> WebApp:
    """Serve the page on ``server``'s own port (call before ``server.start()``)."""
    app = WebApp(server.settings.data, public, server)
    server.http = app.route
    return app


def void(_: object) -> None:
    """Discard a value."""


async def _refuse(connection: Connection) -> None:
    await connection.close(1008, "no games are played here: this port serves the page")


@contextlib.contextmanager
def serve_web(data_folder: Path, host: str, port: int, public: bool = False
              ) -> Iterator[str]:
    """Serve the page alone (no games) in a thread while the block runs; yields its
    URL. Refuses with OSError when the port cannot be had."""
    ready: concurrent.futures.Future[str] = concurrent.futures.Future()
    stop: list[Callable[[], None]] = []

    async def run() -> None:
        app = WebApp(data_folder, public)
        server = await serve(_refuse, host, port)
        server.http = app.route
        done = asyncio.Event()
        stop.append(lambda: void(loop.call_soon_threadsafe(done.set)))
        ready.set_result(f"http://{host}:{server.port}/")
        try:
            await done.wait()
        finally:
            await server.close()
            app.close()

    def thread() -> None:
        try:
            loop.run_until_complete(run())
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
        finally:
            loop.close()

    loop = asyncio.new_event_loop()
    worker = threading.Thread(target=thread, name="littlestone-web", daemon=True)
    worker.start()
    url = ready.result(timeout=30)
    try:
        yield url
    finally:
        for call in stop:
            call()
        worker.join(timeout=10)
