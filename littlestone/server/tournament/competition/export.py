"""A competition's ranking exported as CSV or JSON (:func:`export`)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from littlestone.server.tournament.competition.standings import Standings

__all__ = ["EXPORT_COLUMNS", "export"]

#: The CSV export's columns (the JSON export has the same keys per row). ``rating``,
#: ``rating_low`` and ``rating_high``: a sampled schedule's rating and its interval
#: (:mod:`littlestone.server.tournament.ratings`; empty in a round robin's).
EXPORT_COLUMNS = ("role", "rank", "entrant", "version", "score", "median", "rating",
                  "rating_low", "rating_high", "games", "failed", "sha256")


def export(board: Standings | Mapping[str, Any], form: str) -> str:
    """The ranking of ``board`` (:class:`.standings.Standings`, or a viewer's copy of
    them) as CSV (:data:`EXPORT_COLUMNS`) or JSON (the same rows, and whether it is
    final).

    >>> board = {"competition": "w", "final": True, "frozen": "2026-12-02T08:00:00Z",
    ...          "ranking": [{"role": "learner", "rank": 1, "entrant": "ann", "version": 2,
    ...                       "score": 0.5, "median": 0.25, "games": 4, "failed": 0,
    ...                       "sha256": "ab", "builtin": False}]}
    >>> print(export(board, "csv").strip())
    role,rank,entrant,version,score,median,rating,rating_low,rating_high,games,failed,sha256
    learner,1,ann,2,0.5,0.25,,,,4,0,ab
    """
    rows = [{key: entry.get(key) for key in EXPORT_COLUMNS} for entry in board["ranking"]]
    if form == "json":
        return json.dumps({"competition": board["competition"], "final": board["final"],
                           "frozen": board.get("frozen"), "ranking": rows}, indent=1)
    out = io.StringIO()
    writer = csv.DictWriter(out, EXPORT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return out.getvalue()
