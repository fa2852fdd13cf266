"""A tournament's games filtered on the server by entrant, status and class: the
tournament page's games table and ``/api/tournaments/NAME/games`` (docs/reference/web.md).

An **entrant** matches a game it played on either side, by its spec or by the name the
page shows it under (:func:`.data.entrant_name`: ``alice/v1.py:FractionVote``); a
**status** matches exactly, or as a prefix when it ends with ``*`` (``crash:*``), as
``/api/games`` filters; ``failed`` matches every game not ``complete``; a **class**
matches exactly. The games are read from the index's tournament rows, in the order of
their pairing's key, by indexed queries (:func:`tournament_games`), and one page of them
answered (``limit`` rows, :data:`.data.BOARD_LIMIT_MAX` at most).

>>> import tempfile, pathlib
>>> from littlestone.server.records.store import Store, TournamentMatch
>>> store = Store(pathlib.Path(tempfile.mkdtemp()))
>>> for key, (learner, status) in enumerate([("soa", "complete"),
...         ("/srv/week-5/mine.py:Mine", "crash:learner:ZeroDivisionError"),
...         ("halving", "complete")]):
...     _ = store.add_tournament_game("t", str(key), {"game_id": None, "status": status,
...         "game": "mistake-bound", "class": "thresholds:n=15", "learner": learner,
...         "adversary": "shattered-tree", "seed": 0, "result": {}})
>>> found = tournament_games(store, "t", {"entrant": "mine.py:Mine"})
>>> found["total"], [g["learner"] for g in found["games"]]
(1, ['mine.py:Mine'])
>>> tournament_games(store, "t", {"status": "crash:*"})["statuses"]
['complete', 'crash:learner:ZeroDivisionError']
>>> tournament_games(store, "t", {"status": "failed"})["total"]
1
>>> tournament_games(store, "t", {"status": "complete", "class": "thresholds:n=15"})["total"]
2
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from littlestone.server.records.rows import TournamentGame
from littlestone.server.records.store import Store, TournamentMatch
from littlestone.server.web.data import BOARD_LIMIT, BOARD_LIMIT_MAX, entrant_name

__all__ = ["COUNT_CAP", "FILTERS", "GameFilters", "GamesPage", "matches", "status_matches",
           "tournament_games"]

#: The most games ``total`` counts (past it, the answer says ``more``: "10000+ games"):
#: a count reads every matching index entry, so an unbounded one would grow with the
#: tournament.
COUNT_CAP = 10_000

#: The filters a request may give, as its query names them.
FILTERS = ("entrant", "status", "class")

#: A request's filters (each absent or empty: not filtered on).
GameFilters = TypedDict("GameFilters", {"entrant": str, "status": str, "class": str},
                        total=False)


class GamesPage(TypedDict):
    """One page of a tournament's filtered games: the ``games`` (entrants named as the
    page names them, no log path), how many match in all (``total``), the page (from
    1), its ``limit`` and the ``filters`` applied."""

    tournament: str
    games: list[TournamentGame]
    total: int
    page: int
    limit: int
    filters: GameFilters
    statuses: NotRequired[list[str]]
    more: NotRequired[bool]


def status_matches(status: str, asked: str) -> bool:
    """Whether a game's ``status`` passes the status filter ``asked``."""
    if asked == "failed":
        return status != "complete"
    if asked.endswith("*"):
        return status.startswith(asked[:-1])
    return status == asked


def matches(row: TournamentGame, filters: GameFilters, shown: tuple[str, str]) -> bool:
    """Whether a game passes ``filters``; ``shown``: its learner's and adversary's names
    as the page shows them.

    >>> row = {"learner": "soa", "adversary": "tree", "status": "crash:adversary:E",
    ...        "class": "thresholds:n=15"}
    >>> [matches(row, f, ("soa", "tree")) for f in ({"status": "crash:*"},
    ...     {"status": "crash"}, {"entrant": "tree"}, {"class": "thresholds:n=7"})]
    [True, False, True, False]
    """
    entrant = filters.get("entrant")
    if entrant and entrant not in (row["learner"], row["adversary"], *shown):
        return False
    status = filters.get("status")
    if status and not status_matches(row["status"], status):
        return False
    hclass = filters.get("class")
    return not hclass or row.get("class") == hclass


def _match(store: Store, name: str, filters: GameFilters, statuses: list[str]
           ) -> TournamentMatch:
    """The index's query for ``filters``: an entrant resolved to the specs it names
    (itself, and each spec of the tournament's entrants shown under that name: the
    distinct entrants, read by a skip scan of their indexes, not the games), a status
    to those of ``statuses`` (the tournament's) it matches."""
    match: TournamentMatch = {}
    entrant = filters.get("entrant")
    if entrant:
        match["specs"] = {entrant} | {spec for spec in store.tournament_entrants(name)
                                      if entrant_name(spec, store.data) == entrant}
    status = filters.get("status")
    if status:  # the tournament's statuses are few, read by a skip scan of their index
        match["statuses"] = {s for s in statuses
                             if status_matches(s, status)}
    if filters.get("class"):
        match["hclass"] = filters["class"]
    return match


def tournament_games(store: Store, name: str, filters: GameFilters, page: int = 1,
                     limit: int = BOARD_LIMIT) -> GamesPage:
    """One page of tournament ``name``'s games that pass ``filters`` (:func:`matches`),
    with the statuses its games have (for the page's form).

    Its cost does not grow with the tournament (issue 41: a peer refreshing the page is
    not a lever): each filter is a range of an index of the tournament's games, the page
    is read in key order from it, the statuses are a skip scan of the status index, and
    ``total`` counts at most :data:`COUNT_CAP` games (``more``: there are more); a page
    reads the pages before it, so ``page`` stops at the one that holds the
    :data:`COUNT_CAP`-th game (past it nothing is counted nor shown: a deeper page asked
    is that one)."""
    rows = max(1, min(limit, BOARD_LIMIT_MAX))
    page = max(1, min(page, COUNT_CAP // rows + 1))
    statuses = store.tournament_statuses(name)
    match = _match(store, name, filters, statuses)
    kept: list[TournamentGame] = []
    for row in store.filtered_tournament_games(name, match, (page - 1) * rows, rows):
        game = row.copy()
        game.pop("log", None)
        game["learner"], game["adversary"] = (entrant_name(row["learner"], store.data),
                                              entrant_name(row["adversary"], store.data))
        kept.append(game)
    total = store.count_tournament_games(name, match, COUNT_CAP + 1)
    found: GamesPage = {"tournament": name, "games": kept, "total": min(total, COUNT_CAP),
                        "page": page, "limit": rows, "filters": filters,
                        "statuses": statuses}
    if total > COUNT_CAP:
        found["more"] = True
    return found
