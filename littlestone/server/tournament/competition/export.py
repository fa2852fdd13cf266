"""A competition's ranking exported as CSV or JSON (:func:`export`): the CSV with its
scores to :data:`SCORE_DIGITS` decimals, as the page shows them, and whether the ranking
is ``final`` or ``provisional`` in its ``standing`` column; the JSON with every digit."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from littlestone.server.tournament.competition.standings import Standings

__all__ = ["EXPORT_COLUMNS", "SCORE_DIGITS", "export", "fixed"]

#: The CSV export's columns (the JSON export has the same keys per row, and says
#: ``final`` once): ``rating``, ``rating_low`` and ``rating_high`` are a sampled
#: schedule's rating and its interval (:mod:`littlestone.server.tournament.ratings`;
#: empty in a round robin's); ``standing`` is ``final`` (frozen at the close) or
#: ``provisional``.
EXPORT_COLUMNS = ("role", "rank", "entrant", "version", "score", "median", "rating",
                  "rating_low", "rating_high", "games", "failed", "sha256", "standing")
#: Decimals of a score on the competition's page and in its CSV (:func:`fixed`).
SCORE_DIGITS = 4


def fixed(value: Any) -> str:
    """A score as the competition's page and its CSV show it: :data:`SCORE_DIGITS`
    decimals (the JSON keeps every digit), empty for none.

    >>> fixed(None), fixed(2 / 3), fixed(1)
    ('', '0.6667', '1.0000')
    """
    return "" if value is None else f"{float(value):.{SCORE_DIGITS}f}"


def export(board: Standings | Mapping[str, Any], form: str) -> str:
    """The ranking of ``board`` (:class:`.standings.Standings`, or a viewer's copy of
    them) as CSV (:data:`EXPORT_COLUMNS`, scores :func:`fixed`) or JSON (the same rows
    with every digit, and whether it is final).

    >>> board = {"competition": "w", "final": True, "frozen": "2026-12-02T08:00:00Z",
    ...          "ranking": [{"role": "learner", "rank": 1, "entrant": "ann", "version": 2,
    ...                       "score": 0.5, "median": 0.25, "games": 4, "failed": 0,
    ...                       "sha256": "ab", "builtin": False}]}
    >>> print(export(board, "csv").strip())
    role,rank,entrant,version,score,median,rating,rating_low,rating_high,games,failed,sha256,standing
    learner,1,ann,2,0.5000,0.2500,,,,4,0,ab,final
    """
    standing = "final" if board["final"] else "provisional"
    rows = [{key: entry.get(key) for key in EXPORT_COLUMNS if key != "standing"}
            for entry in board["ranking"]]
    if form == "json":
        return json.dumps({"competition": board["competition"], "final": board["final"],
                           "frozen": board.get("frozen"), "ranking": rows}, indent=1)
    out = io.StringIO()
    writer = csv.DictWriter(out, EXPORT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        shown = {k: "" if v is None else v for k, v in row.items()}
        shown["score"], shown["median"] = fixed(row["score"]), fixed(row["median"])
        writer.writerow({**shown, "standing": standing})
    return out.getvalue()
