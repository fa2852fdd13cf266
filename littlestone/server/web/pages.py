"""The page, rendered on the server from Jinja2 templates (``templates/``: ``base.html``
the frame, one template a page, and the parts the script refreshes): every list and
table is plain HTML that works with JavaScript off; ``static/littlestone.js`` then makes
the live parts live (the curve, the tree, the replay's stepping, lists that refresh
themselves).

Every value is escaped by the templates' environment (:func:`littlestone.charts.environment`,
autoescape on): a name a peer chose shows as text, never as markup, and nothing here
escapes by hand. The functions below only gather what a template shows.

>>> html = games_table([{"game_id": "g1", "game": "mistake-bound", "class": "thresholds:n=7",
...     "learner": "<b>halving</b>", "adversary": "shattered-tree", "round": 3, "horizon": 9,
...     "mistakes": 3.0, "regret": None, "status": "running"}])
>>> "&lt;b&gt;halving" in html and "3 / 9" in html and 'href="/games/g1"' in html
True
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, NotRequired, TypedDict
from urllib.parse import quote

from littlestone.charts import SCALE_NOTE, curve_svg, environment, heat_color
from littlestone.server.records.rows import TournamentRow
from littlestone.server.tournament.competition.export import fixed
from littlestone.server.tournament.ranking import RULES
from littlestone.server.tournament.report import FailureGroup, failure_groups

if TYPE_CHECKING:
    import jinja2

    from littlestone.server.net.settings import ServerSettings
    from littlestone.server.tournament.report import Curve
    from littlestone.server.web.data import Board, PageGame, Rounds
    from littlestone.server.web.filters import GamesPage
    from littlestone.server.web.play import ClassBoard, Menu

__all__ = ["FAILED_SHOWN", "REPLAY_ROWS", "class_board", "class_page", "competition_board",
           "competition_page", "competition_version", "error_page",
           "game_page", "games_table", "index_page", "leaderboard", "login_page",
           "play_page", "render", "tournament_page"]

#: Rounds one page of a game's replay shows.
REPLAY_ROWS = 20
#: Failed games a tournament's page lists (the API has them all).
FAILED_SHOWN = 100
#: The game summary's rows, in order.
SUMMARY = ("learner", "adversary", "game", "class", "experts", "horizon", "round", "mistakes",
           "expected_mistakes", "regret", "expected_regret", "status", "seed", "tournament",
           "started", "finished")


def num(value: Any) -> str:
    """A figure as the page shows it: 4 significant digits, ``-`` for none (the
    templates' ``num`` filter; what it returns is escaped like any value).

    >>> num(None), num(2 / 3), num(12), num("<i>")
    ('-', '0.6667', '12', '<i>')
    """
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def segment(value: Any) -> str:
    """A value as one segment of a path, every reserved character quoted (``/`` too:
    the router decodes each segment on its own).

    >>> segment("class 1/a?b")
    'class%201%2Fa%3Fb'
    """
    return quote(str(value), safe="")


@functools.cache
def _templates() -> jinja2.Environment:
    env = environment("littlestone.server.web")
    env.filters.update(num=num, segment=segment, fixed=fixed)
    env.globals.update(scale_note=SCALE_NOTE, rules=RULES, replay_page=REPLAY_ROWS,
                       failed_shown=FAILED_SHOWN)
    return env


def render(template: str, **context: Any) -> str:
    """A template of ``templates/`` with ``context`` (every value escaped)."""
    return _templates().get_template(template).render(**context)


class _Frame(TypedDict):
    """What ``base.html`` gets of every page."""

    title: str
    viewer: str | None
    attributes: dict[str, str]
    public_note: str


#: What the header says to a viewer without a token on a public page, and on the play
#: page (where a person does more than read: issue 44), whether guests may play or not.
PUBLIC_NOTE = "public read-only view"
PUBLIC_PLAY_NOTES = {True: "public: guests may play here",
                     False: "public view: playing needs a token (littlestone token add NAME)"}


def _frame(title: str, viewer: str | None, kind: str = "index",
           data: dict[str, str] | None = None, public_note: str = PUBLIC_NOTE) -> _Frame:
    """What ``base.html`` gets: the title, who is looking, the body's ``data-*``
    attributes (the page's kind, and what its script reads) and what the header says
    to a public viewer."""
    attributes = {"data-page": kind, **{f"data-{k}": v for k, v in (data or {}).items()}}
    return {"title": title, "viewer": viewer, "attributes": attributes,
            "public_note": public_note}


def games_table(rows: list[PageGame]) -> str:
    """Running and recent games: learner, adversary, class, round, mistakes, regret,
    status (each row links to its game)."""
    return render("games_table.html", games=rows)


def index_page(games: list[PageGame], tournaments: list[TournamentRow],
               viewer: str | None, competition: str | None = None) -> str:
    return render("index.html", games=games, tournaments=tournaments,
                  competition=competition, **_frame("Games", viewer))


class ReplayRow(NamedTuple):
    """A round as the replay shows it: its instance, the learner's p and prediction, the
    label, the running score (mistakes or regret) and the version space's size after it
    (or the learner's weights)."""

    t: int
    x: Any
    p: float | None
    prediction: Any
    label: int | None
    score: float | None
    tail: Any


def _replay_rows(game: PageGame, records: Rounds | None) -> list[ReplayRow]:
    if records is None:
        return []
    experts = game["game"] == "experts"
    rows = []
    for r in records["records"]:
        tail: str | int | None
        if experts:
            weights = r.get("weights")
            tail = ", ".join(f"{w:.3g}" for w in weights) if weights else None
        else:
            tail = r.get("version_space")
        rows.append(ReplayRow(r["t"], r["x"], r.get("p"), r.get("prediction", r.get("drawn")),
                              r.get("y"), r.get("mistakes", r.get("regret")), tail))
    return rows


def game_page(game: PageGame, curve: Curve | None, records: Rounds | None,
              viewer: str | None) -> str:
    """A game: its summary, its curve against the bound, the shattered tree (when its
    adversary walks one), and its rounds one by one."""
    kind = "regret" if game["game"] == "experts" else "mistakes"
    svg = None
    if curve and curve["t"]:
        svg = curve_svg(curve["t"], curve["value"], curve["expected"], game["bound"],
                        game["bound_name"] or "", kind, width=640, height=260)
    data = {"game-id": game["game_id"], "game": game["game"], "status": game["status"],
            "live": "1" if game.get("live") else "0", "class": str(game.get("class") or ""),
            "tree": "1" if game.get("tree") else "0",
            "bound": "" if game.get("bound") is None else repr(game["bound"]),
            "bound-name": str(game.get("bound_name") or "")}
    return render("game.html", game=game, kind=kind, curve=svg, records=records,
                  summary=[(k, game.get(k)) for k in SUMMARY],
                  replay=_replay_rows(game, records),
                  **_frame(f"Game {game['game_id']}", viewer, "game", data))


class _Shown(TypedDict):
    """What ``leaderboard.html`` gets (:func:`_board`); no board: nothing recorded yet."""

    board: Board | None
    adversaries: NotRequired[list[str]]
    heatmap: NotRequired[list[tuple[str, list[tuple[str, float | None]]]]]
    failed_groups: NotRequired[list[FailureGroup]]


def _board(board: Board) -> _Shown:
    """What ``leaderboard.html`` gets: the board, the heatmap's columns and its rows
    (each learner's cells: colour and score, in the columns' order), its failed games
    grouped by entrant and status (:func:`.report.failure_groups`)."""
    adversaries = sorted({a for cells in board["payoff"].values() for a in cells})
    heatmap = [(learner, [(heat_color(cells.get(a)), cells.get(a)) for a in adversaries])
               for learner, cells in board["payoff"].items()]
    return {"board": board, "adversaries": adversaries, "heatmap": heatmap,
            "failed_groups": failure_groups(board["failed"])}


def leaderboard(board: Board) -> str:
    """A tournament's leaderboards, payoff heatmap (theoretical scale) and failures."""
    return render("leaderboard.html", **_board(board))


def tournament_page(name: str, board: Board | None, viewer: str | None,
                    games: GamesPage | None = None) -> str:
    """A tournament's standings, refreshed as its games end (``board`` None: it has
    recorded nothing yet, and the page waits for its first game), and its games as
    filtered (:mod:`.filters`; None: no table)."""
    shown: _Shown = _board(board) if board is not None else {"board": None}
    return render("tournament.html", name=name, **shown, games=games,
                  **_frame(f"Tournament {name}", viewer, "tournament", {"tournament": name}))


def competition_board(name: str, board: Mapping[str, object]) -> str:
    """A competition's standings and versions (the part its page refreshes)."""
    return render("competition_board.html", name=name, board=board)


def competition_page(name: str, board: Mapping[str, object], viewer: str | None,
                     may_submit: bool) -> str:
    """A competition: the upload form (a logged-in player), its standings, versions."""
    return render("competition.html", name=name, board=board, may_submit=may_submit,
                  **_frame(f"Competition {name}", viewer, "competition"))


def competition_version(name: str, version: Mapping[str, object], viewer: str | None) -> str:
    """One version, for its student or an admin: its check and its games' messages."""
    return render("competition_version.html", name=name, version=version,
                  **_frame(f"{name}: {version['account']} v{version['version']}", viewer,
                           "competition"))


def play_page(menu: Menu, viewer: str | None, games_here: bool,
              human: ServerSettings | None, guests: bool = False) -> str:
    """The play page: the form that sets up a game (server-rendered; playing it needs the
    script, whose moves travel on a WebSocket), and the room the script plays in.
    ``human``: the settings a person's moves are timed by (None: no games here);
    ``guests``: whether a viewer without a token may play (``serve --public-play``)."""
    return render("play.html", menu=menu, games_here=games_here, human=human,
                  **_frame("Play it yourself", viewer, "play",
                           public_note=PUBLIC_PLAY_NOTES[guests]))


def class_board(board: ClassBoard) -> str:
    """The class mode's part the script refreshes: the histogram of mistakes against
    Ldim(H), and the games of the last hour."""
    return render("class_board.html", board=board)


def class_page(board: ClassBoard, viewer: str | None) -> str:
    """The class mode: what a teacher puts on the projector while the class plays."""
    return render("class.html", board=board, **_frame("Class mode", viewer, "class"))


def login_page(message: str = "") -> str:
    """The form that logs in with a token (``message``: why the last try failed)."""
    return render("login.html", message=message, **_frame("Log in", None, "login"))


def error_page(status: int, message: str) -> str:
    """An error as a short page.

    >>> "<p>no such game: &lt;x&gt;</p>" in error_page(404, "no such game: <x>")
    True
    """
    return render("error.html", status=status, message=message)
