"""The tournament's static HTML report: leaderboard, payoff heatmap, every game with
its curve, its log and the command that verifies it.

Imports the log reader and the ranking's report.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from littlestone.games.game import ExpertsRecord
from littlestone.server.records.logs import LogError, read_log
from littlestone.server.tournament.ranking import (
    RULES,
    SCORING,
    TournamentReport,
    fault,
    figures,
)

__all__ = ["write_report"]


def _color(value: float | None, top: float) -> str:
    if value is None:
        return "#eee"
    share = min(1.0, value / top) if top > 0 else 0.0
    return f"hsl({int(120 - 120 * share)}, 70%, {int(85 - 25 * share)}%)"


def _curve(row: dict[str, Any]) -> str:
    """A small SVG of cumulative mistakes (or regret) with the bound, from the log."""
    if not row.get("log"):
        return ""
    try:
        records = list(read_log(row["log"]).records())
    except (LogError, OSError):
        return ""
    if not records:
        return ""
    ys = [float(r.regret) if isinstance(r, ExpertsRecord) else float(r.mistakes)
          for r in records]
    raw_bound = row.get("result", {}).get("bound")
    bound = float(raw_bound) if raw_bound is not None else None
    top = max(max(ys), bound or 0.0, 1.0)
    width, height = 160, 40
    step = max(1, len(ys) // 80)
    points = " ".join(f"{i * width / max(len(ys) - 1, 1):.1f},{height - y * height / top:.1f}"
                      for i, y in enumerate(ys) if i % step == 0 or i == len(ys) - 1)
    bound_y = height - (bound or 0.0) * height / top
    bound_line = (f'<line x1="0" x2="{width}" y1="{bound_y:.1f}" y2="{bound_y:.1f}" '
                  f'stroke="crimson" stroke-dasharray="3,2"/>' if bound is not None else "")
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'{bound_line}<polyline fill="none" stroke="#225" points="{points}"/></svg>')


#: The scores each leaderboard ranks on, in order.
_KEYS = {"learner": ("worst", "mean"), "adversary": ("forcing",)}


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
    numbers = [v for row in report.payoff.values() for v in row.values() if v is not None]
    top = max(numbers) if numbers else 1.0
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
             "<table><tr><th>rank</th><th>learner</th><th>worst</th><th>mean</th>"
             "<th>games</th><th>failed</th></tr>"]
    for row in report.learners:
        parts.append(f"<tr><td>{position(row)}</td><td>{notes(row, 'learner')}</td>"
                     f"<td>{fmt2(row['worst'], row['worst_realised'])}</td>"
                     f"<td>{fmt2(row['mean'], row['mean_realised'])}</td>"
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
            f"<td style='background:{_color(row.get(a), top)}'>"
            f"{fmt2(row.get(a), realised.get(a))}</td>" for a in adversaries) + "</tr>")
    parts.append("</table>")
    if report.skipped:
        parts.append("<h2>Pairings not played</h2><ul>" + "".join(
            f"<li>{esc(s['learner'])} vs {esc(s['adversary'])} on {esc(str(s['class']))} "
            f"({esc(s['game'])}): {esc(s['reason'])}</li>" for s in report.skipped) + "</ul>")
    parts.append("<h2>Games</h2><table><tr><th>learner</th><th>adversary</th><th>class</th>"
                 "<th>seed</th><th>status</th><th>learner's score</th><th>adversary's "
                 "forcing</th><th>curve</th><th>log</th></tr>")
    for row in report.games:
        verify = (f"<code>littlestone replay {esc(row['game_id'])} --data {esc(str(data))} "
                  f"--verify</code>" if row.get("game_id") else "")
        log = (f"<a href='{esc(os.path.relpath(row['log'], path.parent))}'>log</a> {verify}"
               if row.get("log") else esc(row.get("message") or ""))
        parts.append(f"<tr><td>{esc(row['learner'])}</td><td>{esc(row['adversary'])}</td>"
                     f"<td>{esc(str(row['class']))}</td><td>{row['seed']}</td>"
                     f"<td>{esc(row['status'])}{_fault_note(row)}<br><small>"
                     f"{esc(row.get('message') or '')}</small></td>"
                     f"<td>{_score_cell(row, 0)}</td>"
                     f"<td>{_score_cell(row, 1)}</td><td>{_curve(row)}</td>"
                     f"<td>{log}</td></tr>")
    parts.append("</table></body></html>")
    path.write_text("\n".join(parts))
    return path
