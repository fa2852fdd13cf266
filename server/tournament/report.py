"""The tournament's static HTML report: leaderboard, payoff heatmap (coloured on the
theoretical scale, :mod:`.charts`), every game with its curve (axes, legend, the bound),
its log and the command that verifies it.

The report is ``DIR/reports/NAME.html``; each game's log is linked (a hard link, or a
copy across file systems) into ``DIR/reports/NAME-logs/``, so that the report and that
folder can be published together, away from the data folder, without a broken link.

Imports the log reader, the ranking's report and the charts.
"""

from __future__ import annotations

import contextlib
import html
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from littlestone.charts import curve_svg, heat_color, heat_legend
from littlestone.games.game import ExpertsRecord
from littlestone.server.records.logs import GameLogData, LogError, read_log
from littlestone.server.tournament.ranking import (
    RULES,
    SCORING,
    TournamentReport,
    fault,
    figures,
)

__all__ = ["curve_of", "log_path", "write_report"]


def log_path(log: str | None, data: Path) -> Path | None:
    """A game's log as the index names it: relative to the working directory (as older
    indexes kept it) or to the data folder; None when neither exists."""
    if not log:
        return None
    path = Path(log)
    for candidate in (path, data / path):
        if candidate.is_file():
            return candidate
    return None


def curve_of(source: Path | GameLogData, points: int = 2000) -> dict[str, Any] | None:
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


def _curve(row: dict[str, Any], data: Path) -> str:
    """The game's curve with axes, its expected curve and the bound, from its log."""
    path = log_path(row.get("log"), data)
    curve = curve_of(path, 300) if path is not None else None
    if not curve or not curve["t"]:
        return ""
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

#: The scores each leaderboard ranks on, in order.
_KEYS = {"learner": ("worst", "median"), "adversary": ("forcing",)}


def _fault_note(row: dict[str, Any]) -> str:
    """How a game was scored, when a fault ended it (:data:`.ranking.SCORING`).

    >>> print(_fault_note({"status": "rule_violation:adversary:margin"}))
    <br><small>the adversary's fault: learner not scored; adversary forced nothing:
    min(0, as played)</small>
    """
    who = fault(row["status"])
    if who == "none":
        return ""
    learner, adversary = SCORING[who]
    whose = "nobody's fault" if who == "nobody" else f"the {who}'s fault"
    text = html.escape(f"{whose}: learner {learner}; adversary {adversary}", quote=False)
    return f"<br><small>{text}</small>"


def _score_cell(row: dict[str, Any], side: int) -> str:
    """A game's score for its learner (``side`` 0) or its adversary (1), as the ranking
    counts it, realised in brackets where it differs; - when not scored for that side.

    >>> _score_cell({"game": "mistake-bound", "status": "complete", "horizon": 30,
    ...              "normaliser_value": 4.0, "result": {"rounds": 30, "mistakes": 3,
    ...                                                  "expected_mistakes": 2.5}}, 0)
    '0.625 <small>(0.75)</small>'
    """
    scored = figures(row)[side]
    if scored is None:
        return "-"
    value, realised = scored.to_float()
    shown = f"{value:.3g}"
    return shown if realised == value else f"{shown} <small>({realised:.3g})</small>"


def write_report(report: TournamentReport, data: Path) -> Path:
    """DIR/reports/NAME.html: a static, self-contained page."""
    esc = html.escape
    path = data / "reports" / f"{report.name}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    logs = data / "reports" / f"{report.name}-logs"
    adversaries = sorted({a for row in report.payoff.values() for a in row})

    def fmt(value: Any) -> str:
        return "-" if value is None else (f"{value:.3g}" if isinstance(value, float)
                                          else esc(str(value)))

    def fmt2(value: Any, realised: Any) -> str:
        """A score with its realised figure beside it, when they differ."""
        if value == realised or realised is None:
            return fmt(value)
        return f"{fmt(value)} <small>({fmt(realised)})</small>"

    def position(row: dict[str, Any]) -> str:
        return "-" if row["rank"] is None else f"{row['rank']}{'=' if row['tied_with'] else ''}"

    def notes(row: dict[str, Any], role: str) -> str:
        exact = ", ".join(f"{key} {row[f'{key}_exact']}" for key in _KEYS[role])
        tie = (f"<br><small>tied with {esc(', '.join(row['tied_with']))} (exactly equal: "
               f"{esc(exact)}; listed by name)</small>" if row["tied_with"] else "")
        return f"{esc(row[role])}{tie}"

    def failures(row: dict[str, Any]) -> str:
        out = f"{row['failed']} {esc(', '.join(row['failures']))}"
        if row["unscored"]:
            out += (f"<br><small>{row['unscored']} not scored: "
                    f"{esc(', '.join(row['unscored_statuses']))}</small>")
        return out

    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(report.name)}"
             "</title><style>body{font:14px sans-serif;margin:2em}table{border-collapse:"
             "collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 7px}"
             "code{font-size:12px}</style></head><body>",
             f"<h1>Tournament {esc(report.name)}</h1>",
             f"<p>{len(report.games)} games. Sandbox for submitted agents: "
             f"{esc(report.sandbox)}.</p>",
             f"<h2>Learners</h2><p>{esc(RULES)}</p><p>Scores are expected figures; the "
             "realised ones (the coin as it fell) are in brackets where they differ. "
             "<em>failed</em>: games the entrant ended by its own fault.</p>"
             "<table><tr><th>rank</th><th>learner</th><th>worst</th><th>median</th>"
             "<th>games</th><th>failed</th></tr>"]
    for row in report.learners:
        parts.append(f"<tr><td>{position(row)}</td><td>{notes(row, 'learner')}</td>"
                     f"<td>{fmt2(row['worst'], row['worst_realised'])}</td>"
                     f"<td>{fmt2(row['median'], row['median_realised'])}</td>"
                     f"<td>{row['games']}</td><td>{failures(row)}</td></tr>")
    parts.append("</table><h2>Adversaries</h2><table><tr><th>rank</th><th>adversary</th>"
                 "<th>forcing power</th><th>games</th><th>failed</th></tr>")
    for row in report.adversaries:
        parts.append(f"<tr><td>{position(row)}</td><td>{notes(row, 'adversary')}</td>"
                     f"<td>{fmt2(row['forcing'], row['forcing_realised'])}</td>"
                     f"<td>{row['games']}</td><td>{failures(row)}</td></tr>")
    parts.append("</table><h2>Payoff matrix</h2><p>The learner's mean score against each "
                 "adversary (realised in brackets); - where no game of the pair was scored "
                 "for the learner.</p><table><tr><th>learner \\ adversary</th>"
                 + "".join(f"<th>{esc(a)}</th>" for a in adversaries) + "</tr>")
    for learner, row in report.payoff.items():
        realised = report.payoff_realised.get(learner, {})
        parts.append(f"<tr><th>{esc(learner)}</th>" + "".join(
            f"<td style='background:{heat_color(row.get(a))}'>"
            f"{fmt2(row.get(a), realised.get(a))}</td>" for a in adversaries) + "</tr>")
    parts.append("</table>" + heat_legend())
    if report.unloaded:
        parts.append("<h2>Entrants that failed to load</h2><ul class='failed'>" + "".join(
            f"<li>{esc(u['role'])} {esc(u['entrant'])}: {esc(str(u['reason']))}</li>"
            for u in report.unloaded) + "</ul>")
    if report.skipped:
        parts.append("<h2>Pairings not played</h2><ul>" + "".join(
            f"<li>{esc(s['learner'])} vs {esc(s['adversary'])} on {esc(str(s['class']))} "
            f"({esc(s['game'])}): {esc(s['reason'])}</li>" for s in report.skipped) + "</ul>")
    curves = len(report.games) <= CURVES_MAX
    parts.append("<h2>Games</h2>" + ("" if curves else (
        f"<p>{len(report.games)} games: curves are drawn for at most {CURVES_MAX}; "
        "<code>littlestone replay GAME_ID --plot FILE.svg</code> draws any game's.</p>"))
        + "<table><tr><th>learner</th><th>adversary</th><th>class</th>"
        "<th>seed</th><th>status</th><th>learner's score</th><th>adversary's "
        "forcing</th><th>curve</th><th>log</th></tr>")
    for row in report.games:
        verify = (f"<code>littlestone replay {esc(row['game_id'])} --data {esc(str(data))} "
                  f"--verify</code>" if row.get("game_id") else "")
        source = log_path(row.get("log"), data)
        log = (f"<a href='{esc(_publish_log(source, logs).relative_to(path.parent).as_posix())}'"
               f">log</a> {verify}" if source is not None else esc(row.get("message") or ""))
        parts.append(f"<tr><td>{esc(row['learner'])}</td><td>{esc(row['adversary'])}</td>"
                     f"<td>{esc(str(row['class']))}</td><td>{row['seed']}</td>"
                     f"<td>{esc(row['status'])}{_fault_note(row)}<br><small>"
                     f"{esc(row.get('message') or '')}</small></td>"
                     f"<td>{_score_cell(row, 0)}</td>"
                     f"<td>{_score_cell(row, 1)}</td>"
                     f"<td>{_curve(row, data) if curves else ''}</td>"
                     f"<td>{log}</td></tr>")
    parts.append("</table></body></html>")
    path.write_text("\n".join(parts))
    return path
