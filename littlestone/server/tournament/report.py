"""The tournament's static HTML report: leaderboard, payoff heatmap (coloured on the
theoretical scale, :mod:`littlestone.charts`), every game with its curve (axes, legend,
the bound), its log and the command that verifies it. The page is a Jinja2 template
(``templates/report.html``) that escapes every value.

The report is ``DIR/reports/NAME.html``; each game's log is linked (a hard link, or a
copy across file systems) into ``DIR/reports/NAME-logs/``, so that the report and that
folder can be published together, away from the data folder, without a broken link.

Imports the log reader, the ranking's report and the charts (and their templates).
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import numpy as np
from markupsafe import Markup

from littlestone.charts import curve_svg, environment
from littlestone.games.errors import LogError
from littlestone.games.game import ExpertsRecord
from littlestone.server.records.folder import log_file
from littlestone.server.records.logs import GameLogData, read_log
from littlestone.server.records.rows import TournamentGame
from littlestone.server.tournament.ranking import (
    RULES,
    SCORING,
    Role,
    Standing,
    TournamentReport,
    fault,
    figures,
)

if TYPE_CHECKING:
    import jinja2

__all__ = ["CSV_COLUMNS", "Curve", "curve_of", "write_csv", "write_report"]


class Curve(TypedDict):
    """A logged game's cumulative curve (:func:`curve_of`): rounds ``t``, the realised
    ``value`` (``kind``: mistakes or regret) and its ``expected`` value over the referee's
    coin, the rounds and status of the log; the page adds the game's bound."""

    kind: str
    t: list[int]
    value: list[float]
    expected: list[float]
    rounds: int
    status: str
    bound: NotRequired[float | None]
    bound_name: NotRequired[str | None]


class _Shown(Standing, total=False):
    """A leaderboard's line as the report shows it, with the exact figures a tie is on."""

    exact: str


def curve_of(source: Path | GameLogData, points: int = 2000) -> Curve | None:
    """A logged game's cumulative curve, at most about ``points`` rounds of it (every
    k-th and the last): ``t``, the realised ``value`` (mistakes or regret) and its
    ``expected`` value over the referee's coin, the ``kind``; None for an unreadable
    log."""
    try:
        log = source if isinstance(source, GameLogData) else read_log(source)
    except (LogError, OSError):
        return None
    step = max(1, log.n_rounds // points)
    if log.n_rounds and log.columns:  # the referee's running totals, vectorised
        y, p, drawn = (np.asarray(log.columns[k]) for k in ("y", "p", "prediction"))
        keep = np.unique(np.r_[np.arange(0, len(y), step), len(y) - 1])
        mistakes = np.cumsum(drawn != y)[keep]
        expected_sum = np.cumsum(np.where(y == 1, 1.0 - p, p))[keep]
        return {"kind": "mistakes", "t": (keep + 1).tolist(),
                "value": mistakes.astype(float).tolist(), "expected": expected_sum.tolist(),
                "rounds": log.n_rounds, "status": log.status}
    ts: list[int] = []
    values: list[float] = []
    expected: list[float] = []
    kind = "mistakes"
    for i, record in enumerate(log.records()):
        if i % step and i != log.n_rounds - 1:
            continue
        ts.append(int(record.t))
        if isinstance(record, ExpertsRecord):
            kind = "regret"
            values.append(float(record.regret))
            expected.append(float(record.expected_regret))
        else:
            values.append(float(record.mistakes))
            expected.append(float(record.expected_mistakes))
    return {"kind": kind, "t": ts, "value": values, "expected": expected,
            "rounds": log.n_rounds, "status": log.status}


def _curve(row: TournamentGame, path: Path | None) -> Markup | None:
    """The game's curve with axes, its expected curve and the bound, from its log."""
    curve = curve_of(path, 300) if path is not None else None
    if not curve or not curve["t"]:
        return None
    result = row.get("result") or {}
    bound = result.get("bound")
    return curve_svg(curve["t"], curve["value"], curve["expected"],
                     float(bound) if bound is not None else None,
                     str(result.get("bound_name") or ""), curve["kind"], width=260,
                     height=120)


def _publish_log(source: Path, folder: Path) -> Path:
    """The log beside the report (a hard link; a copy across file systems)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    if not target.exists():
        try:
            os.link(source, target)
        except OSError:
            with contextlib.suppress(OSError):
                shutil.copy2(source, target)
    return target


#: The most games whose curves the report draws (each reads its log): a class's whole
#: field, some 20,000 games, links each log and the commands that verify and plot it.
CURVES_MAX = 1000



def _fault_note(row: TournamentGame) -> str:
    """How a game was scored, when a fault ended it (:data:`.ranking.SCORING`); "" when
    none did.

    >>> print(_fault_note({"status": "rule_violation:adversary:margin"}))
    the adversary's fault: learner not scored; adversary forced nothing: min(0, as played)
    """
    who = fault(row["status"])
    if who == "none":
        return ""
    learner, adversary = SCORING[who]
    whose = "nobody's fault" if who == "nobody" else f"the {who}'s fault"
    return f"{whose}: learner {learner}; adversary {adversary}"


def _score(row: TournamentGame, side: int) -> tuple[float, float] | None:
    """A game's score for its learner (``side`` 0) or its adversary (1), as the ranking
    counts it, and the realised one; None when not scored for that side.

    >>> _score({"game": "mistake-bound", "status": "complete", "horizon": 30,
    ...         "normaliser_value": 4.0, "result": {"rounds": 30, "mistakes": 3,
    ...                                             "expected_mistakes": 2.5}}, 0)
    (0.625, 0.75)
    """
    scored = figures(row)[side]
    return None if scored is None else scored.to_float()


def fmt(value: Any) -> str:
    """A figure as the report shows it: 3 significant digits, ``-`` for none.

    >>> fmt(None), fmt(2 / 3), fmt(7)
    ('-', '0.667', '7')
    """
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


@functools.cache
def _templates() -> jinja2.Environment:
    env = environment("littlestone.server.tournament")
    env.filters["fmt"] = fmt
    return env


def _with_exact(rows: list[Standing], role: Role) -> list[_Shown]:
    """Leaderboard rows with the exact figures a tie is on (``exact``): the scores each
    leaderboard ranks on, in order."""
    return [{**row, "exact": (f"worst {row.get('worst_exact')}, median {row.get('median_exact')}"
                              if role == "learner" else f"forcing {row.get('forcing_exact')}")}
            for row in rows]


def write_report(report: TournamentReport, data: Path) -> Path:
    """DIR/reports/NAME.html: a static, self-contained page (``templates/report.html``,
    every value escaped)."""
    path = data / "reports" / f"{report.name}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    logs = data / "reports" / f"{report.name}-logs"
    curves = len(report.games) <= CURVES_MAX
    games = []
    for row in report.games:
        source = log_file(data, row.get("log"))
        if source is not None and not source.is_file():
            source = None
        games.append({
            "row": row, "fault": _fault_note(row), "scores": (_score(row, 0), _score(row, 1)),
            "curve": _curve(row, source) if curves else None,
            "log": (_publish_log(source, logs).relative_to(path.parent).as_posix()
                    if source is not None else None)})
    page = _templates().get_template("report.html").render(
        report=report, learners=_with_exact(report.learners, "learner"),
        adversaries_ranked=_with_exact(report.adversaries, "adversary"),
        adversaries=sorted({a for row in report.payoff.values() for a in row}),
        games=games, curves=curves, curves_max=CURVES_MAX, rules=RULES, data=str(data))
    path.write_text(page)
    write_csv(report, path.with_suffix(".csv"))
    return path


#: The columns of the leaderboard's CSV, beside the report (``DIR/reports/NAME.csv``).
CSV_COLUMNS = ("role", "rank", "entrant", "rating", "rating_low", "rating_high", "games")


def write_csv(report: TournamentReport, path: Path) -> None:
    """The leaderboards as CSV (:data:`CSV_COLUMNS`): learners then adversaries, in
    rank order; a sampled tournament's rating and its interval (empty in a round
    robin's)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for role, rows in (("learner", report.learners), ("adversary", report.adversaries)):
        for row in rows:
            writer.writerow(["" if v is None else v for v in (
                role, row.get("rank"), row.get(role), row.get("rating"),
                row.get("rating_low"), row.get("rating_high"), row.get("games"))])
    path.write_text(out.getvalue())
