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
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import numpy as np
from markupsafe import Markup

from littlestone.charts import curve_svg, environment
from littlestone.games.errors import LogError
from littlestone.games.game import ExpertsRecord
from littlestone.sandbox.host import SUBMISSION_DIR
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

__all__ = ["CSV_COLUMNS", "Curve", "FailureGroup", "curve_of", "failure_groups", "headline",
           "write_csv", "write_report"]


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


def _figure(exact: str | None, value: float | None) -> str:
    """A score as the headline says it: exact when short (``1``, ``13/60``), else 3
    significant digits."""
    if exact is not None and len(exact) <= 7:
        return exact
    return fmt(value)


def _names(rows: list[Standing], role: Role) -> str:
    """The names of an equal first place: one, ``a and b``, or the first three of many."""
    names = [str(r[role]) for r in rows]
    if len(names) <= 3:
        return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    return f"{', '.join(names[:3])} and {len(names) - 3} more"


def headline(report: TournamentReport) -> str:
    """Who won and why, in one line: what the report, the terminal and the page open with.

    >>> from littlestone.server.tournament.ranking import rank
    >>> def game(learner, adversary, mistakes):
    ...     return {"game": "mistake-bound", "status": "complete", "learner": learner,
    ...             "adversary": adversary, "horizon": 30, "normaliser_value": 4.0,
    ...             "result": {"rounds": 30, "mistakes": mistakes}}
    >>> print(headline(rank("t", [game("soa", "tree", 4), game("halving", "tree", 4),
    ...                           game("coin", "tree", 9), game("soa", "random", 1),
    ...                           game("halving", "random", 2), game("coin", "random", 3)],
    ...                     [])))  # doctest: +NORMALIZE_WHITESPACE
    Winner among learners: soa, the lowest worst score (1, tied with halving; its median 5/8
    breaks the tie); among adversaries: tree, the highest median score forced (1).
    """
    learners = [r for r in report.learners if r.get("rank") == 1]
    adversaries = [r for r in report.adversaries if r.get("rank") == 1]
    if not learners and not adversaries:
        return "No winner: no game was scored."
    parts = []
    if learners:
        first = learners[0]
        why = _figure(first.get("worst_exact"), first.get("worst"))
        level = [r for r in report.learners if r.get("rank") is not None
                 and r not in learners and r.get("worst_exact") == first.get("worst_exact")]
        if level:
            why += (f", tied with {_names(level, 'learner')}; "
                    f"{'its' if len(learners) == 1 else 'their'} median "
                    f"{_figure(first.get('median_exact'), first.get('median'))} breaks the tie")
        together = " (tied)" if len(learners) > 1 else ""
        parts.append(f"Winner among learners: {_names(learners, 'learner')}{together}, the "
                     f"lowest worst score ({why})")
    else:
        parts.append("No learner has a scored game")
    if adversaries:
        first = adversaries[0]
        together = " (tied)" if len(adversaries) > 1 else ""
        parts.append(f"among adversaries: {_names(adversaries, 'adversary')}{together}, the "
                     "highest median score forced "
                     f"({_figure(first.get('forcing_exact'), first.get('forcing'))})")
    else:
        parts.append("no adversary has a scored game")
    return "; ".join(parts) + "."


#: How a group of failed games says what its entrant did, by the status's kind.
_DID = {"crash": "crashed", "forfeit": "forfeited", "illegal_move": "made an illegal move",
        "rule_violation": "broke a rule", "disconnected": "disconnected",
        "absent": "was absent", "load_failed": "failed to load", "declined": "declined",
        "stalled": "stalled", "forked": "forked"}


def plain(message: str) -> str:
    """A failed game's message as a teacher or a student reads it: the exception and its
    line in the submission's own file, not how the process that raised it exited, the
    status said again, nor the sandbox's path (issue 44 item 4).

    >>> plain("the learner exited with status 2: littlestone: error: connect: "
    ...       "crash:learner:ZeroDivisionError: learner raised ZeroDivisionError: division "
    ...       "by zero at /submission/mine.py:12 in predict (the referee records the game "
    ...       "as disconnected:learner)")
    'ZeroDivisionError: division by zero at mine.py:12 in predict'
    """
    text = re.sub(r"^the (learner|adversary) exited with status \d+: ", "", message)
    text = text.removeprefix("littlestone: error: ").removeprefix("connect: ")
    text = re.sub(r"^crash:(learner|adversary):\w+: (learner|adversary) raised ", "", text)
    text = re.sub(r" \(the referee records the game as [\w:]+\)$", "", text)
    return text.replace(f"{SUBMISSION_DIR}/", "")


class FailureGroup(TypedDict):
    """Games one entrant ended the same way (:func:`failure_groups`): its ``role`` and
    spec (``entrant``; ``None`` for nobody's fault), the ``status``, how many ``games``,
    the first one's ``message`` and ``first`` game, and the group in one ``line``."""

    entrant: str | None
    role: str
    status: str
    games: int
    message: str
    first: str
    line: str


def failure_groups(rows: list[TournamentGame]) -> list[FailureGroup]:
    """The games that did not end ``complete``, one group an entrant at fault and status,
    largest first (then by entrant): the line a teacher reads instead of a line a game.

    >>> def game(learner, status, seed, message=""):
    ...     return {"learner": learner, "adversary": "tree", "class": "thresholds:n=15",
    ...             "seed": seed, "status": status, "message": message}
    >>> groups = failure_groups([game("alice/v1.py:Mine", "crash:learner:ZeroDivisionError",
    ...                                s, "ZeroDivisionError at mine.py:12") for s in (3, 4)]
    ...                         + [game("soa", "aborted:shutdown", 0)])
    >>> for group in groups: print(group["line"])  # doctest: +NORMALIZE_WHITESPACE
    alice/v1.py:Mine crashed in 2 games: ZeroDivisionError at mine.py:12
        (first: vs tree on thresholds:n=15, seed 3)
    1 game aborted:shutdown (nobody's fault) (first: soa vs tree on thresholds:n=15, seed 0)
    """
    groups: dict[tuple[str, str | None], list[TournamentGame]] = {}
    for row in rows:
        status = str(row["status"])
        if status == "complete":
            continue
        who = fault(status)
        entrant = (row["learner"] if who == "learner" else
                   row["adversary"] if who == "adversary" else None)
        groups.setdefault((status, entrant), []).append(row)
    out: list[FailureGroup] = []
    for (status, entrant), games in sorted(groups.items(), key=lambda kv: (
            -len(kv[1]), kv[0][1] or "", kv[0][0])):
        head = games[0]
        pair = (f"vs {head['adversary']}" if fault(status) == "learner" else
                f"vs {head['learner']}" if fault(status) == "adversary" else
                f"{head['learner']} vs {head['adversary']}")
        first = f"{pair} on {head.get('class')}, seed {head.get('seed')}"
        said = str(head.get("message") or "")
        message = plain(said)
        n = f"{len(games)} game{'s' if len(games) != 1 else ''}"
        if entrant is None:
            line = f"{n} {status} (nobody's fault)"
        else:  # (a sandboxed file that raised is recorded disconnected: it crashed)
            kind = "crash" if f"crash:{fault(status)}:" in said else status.partition(":")[0]
            line = f"{entrant} {_DID.get(kind, f'ended by {status}')} in {n}"
        if message:
            line += f": {message}"
        out.append({"entrant": entrant, "role": fault(status), "status": status,
                    "games": len(games), "message": message, "first": first,
                    "line": f"{line} (first: {first})"})
    return out


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
        games=games, curves=curves, curves_max=CURVES_MAX, rules=RULES, data=str(data),
        headline=headline(report))
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
