"""A tournament's games filtered on the server by entrant, status and class: the
tournament page's games table and ``/api/tournaments/NAME/games`` (docs/reference/web.md).

An **entrant** matches a game it played on either side, by its spec or by the name the
page shows it under (:func:`.data.entrant_name`: ``alice/v1.py:FractionVote``); a
**status** matches exactly, or as a prefix when it ends with ``*`` (``crash:*``), as
``/api/games`` filters; ``failed`` matches every game not ``complete``; a **class**
matches exactly. The games are read from the index's tournament rows, in the order of
their pairing's key, and one page of them answered (``limit`` rows,
:data:`.data.BOARD_LIMIT_MAX` at most).

>>> import tempfile, pathlib
>>> from littlestone.server.records.store import Store
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
>>> tournament_games(store, "t", {"status": "failed"})["total"]
1
>>> tournament_games(store, "t", {"status": "complete", "class": "thresholds:n=15"})["total"]
2
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from littlestone.server.records.rows import TournamentGame
from littlestone.server.records.store import Store
from littlestone.server.web.data import BOARD_LIMIT, BOARD_LIMIT_MAX, entrant_name

__all__ = ["FILTERS", "GameFilters", "GamesPage", "matches", "tournament_games"]

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
    if status:
        if status == "failed":
            if row["status"] == "complete":
                return False
        elif status.endswith("*"):
            if not row["status"].startswith(status[:-1]):
                return False
        elif row["status"] != status:
            return False
    hclass = filters.get("class")
    return not hclass or row.get("class") == hclass


def tournament_games(store: Store, name: str, filters: GameFilters, page: int = 1,
                     limit: int = BOARD_LIMIT) -> GamesPage:
    """One page of tournament ``name``'s games that pass ``filters`` (:func:`matches`),
    with the statuses its games have (for the page's form)."""
    rows = max(1, min(limit, BOARD_LIMIT_MAX))
    page = max(1, page)
    kept: list[TournamentGame] = []
    statuses: set[str] = set()
    for row in store.tournament_games(name):
        statuses.add(row["status"])
        shown = (entrant_name(row["learner"], store.data),
                 entrant_name(row["adversary"], store.data))
        if matches(row, filters, shown):
            game = row.copy()
            game.pop("log", None)
            game["learner"], game["adversary"] = shown
            kept.append(game)
    start = (page - 1) * rows
    return {"tournament": name, "games": kept[start:start + rows], "total": len(kept),
            "page": page, "limit": rows, "filters": filters, "statuses": sorted(statuses)}
