"""Commands for a class: ``tournament``, ``competition`` and a submission's pre-flight
``check`` (run in its sandbox: the agent's side of it is :mod:`.sandboxed`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypedDict

from littlestone.cli.common import operator_log
from littlestone.games.classes import make_class
from littlestone.games.errors import LittlestoneError, UsageError
from littlestone.games.game import MISTAKE_BOUND
from littlestone.sandbox import Sandbox
from littlestone.server.tournament import Limits, load_config, run_tournament
from littlestone.server.tournament.config import file_of, is_file_agent
from littlestone.server.tournament.preflight import CHECK_SECONDS, CheckRow, check_file, check_games
from littlestone.server.tournament.ranking import Standing, TournamentReport, fault
from littlestone.server.tournament.report import failure_groups, headline
from littlestone.server.tournament.run import check_ray_address
from littlestone.testing import CheckGame

__all__ = ["EntrantCase", "check_in_sandbox", "competition", "entrant_cases", "leaderboard_lines",
           "tournament"]

#: The exit status of a tournament that stopped because entrants failed to load.
EXIT_ENTRANTS_FAILED = 3
#: The exit status of a tournament in which a file entrant ended games by its own fault
#: (or failed to load, under ``--keep-going``): a course's CI fails on it.
EXIT_ENTRANT_AT_FAULT = 1
#: The groups of failed games the terminal lists (the report lists every game).
FAILURE_GROUPS_SHOWN = 20


def tournament(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise UsageError("tournament: --workers must be >= 1")
    if args.ray is not None:
        check_ray_address(args.ray)
    config = load_config(args.config)
    with operator_log(args.log_level, args.log_format):  # (its arena runs game servers)
        return _tournament_served(args, config)


def _tournament_served(args: argparse.Namespace, config: Any) -> int:
    """The tournament, and with ``--serve`` its live page until Ctrl-C."""
    if args.serve is None:
        return _tournament(args, config)
    from littlestone.server.web import serve_web

    try:
        web = serve_web(Path(args.data), args.host, args.serve, public=args.public)
        url = web.__enter__()
    except OSError as exc:
        raise UsageError(f"tournament: cannot serve on {args.host}:{args.serve}: "
                         f"{exc.strerror or exc}") from None
    code = 0  # (Ctrl-C after the tournament: its own exit status)
    try:
        print(f"littlestone: the leaderboard, live: {url}tournaments/{config.name}"
              + ("" if args.public else " (the page asks for a token: `littlestone token "
                 f"add NAME --data {args.data}` prints one; --public needs none)"),
              file=sys.stderr, flush=True)
        code = _tournament(args, config)
        print(f"littlestone: still serving {url} (Ctrl-C to stop)", file=sys.stderr,
              flush=True)
        while True:  # (until Ctrl-C: a wait with no timeout never wakes for a SIGINT
            time.sleep(0.5)  # that the kernel gave another thread; this one looks again)
    except KeyboardInterrupt:
        return code
    finally:
        web.__exit__(None, None, None)


def _tournament(args: argparse.Namespace, config: Any) -> int:
    report = run_tournament(config, Path(args.data), args.workers, progress=not args.json,
                            ray_address=args.ray, keep_going=args.keep_going,
                            unsafe=args.unsafe_no_sandbox, log_level=args.log,
                            sandboxes=args.sandboxes)
    for failed in report.unloaded:
        print(f"littlestone: {failed['role']} {failed['entrant']} failed to load: "
              f"{failed['reason']}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.leaderboard(), default=str))
    cases = entrant_cases(report)
    if args.junit_xml:
        from littlestone.cli.junit import write_junit_for

        write_junit_for("tournament", args.junit_xml, config.name, cases)
    if report.stopped:
        print(f"littlestone: tournament {config.name} not played: "
              f"{len(report.unloaded)} entrant(s) failed to load (--keep-going plays the "
              "others and ranks them last)", file=sys.stderr)
        return EXIT_ENTRANTS_FAILED
    code = EXIT_ENTRANT_AT_FAULT if any(not c["ok"] for c in cases) else 0
    if args.json:
        return code
    print(headline(report))
    print(f"tournament {config.name}: {len(report.games)} games "
          f"({sum(g['status'] != 'complete' for g in report.games)} not complete)")
    for line in leaderboard_lines(report):
        print(line)
    groups = failure_groups(report.games)
    if groups:
        print(f"games not complete, by entrant at fault ({len(groups)} groups):")
        for group in groups[:FAILURE_GROUPS_SHOWN]:
            print(f"  {group['line']}")
        if len(groups) > FAILURE_GROUPS_SHOWN:
            print(f"  ... and {len(groups) - FAILURE_GROUPS_SHOWN} more (the report lists "
                  "every game)")
    print(f"sandbox: {report.sandbox}")
    print(f"report: {report.report}")
    return code


class EntrantCase(TypedDict):
    """An entrant as a test case of ``tournament --junit-xml`` (the rows
    :func:`.junit.write_junit` takes): failed (``ok`` False) when it is a file entrant
    that ended games by its own fault or failed to load."""

    check: str
    ok: bool
    skipped: bool
    advice: bool
    message: str


def entrant_cases(report: TournamentReport) -> list[EntrantCase]:
    """One case an entrant, in leaderboard order, then those that failed to load: a file
    entrant's faults (:func:`.report.failure_groups`) fail it; a built-in or remote
    entrant's are kept as its case's output (a course's CI judges the students' files).

    >>> from littlestone.server.tournament import rank
    >>> def game(learner, status):
    ...     return {"game": "mistake-bound", "status": status, "learner": learner,
    ...             "adversary": "tree", "horizon": 4, "normaliser_value": 2.0, "seed": 0,
    ...             "class": "thresholds:n=3", "message": "ValueError at mine.py:3",
    ...             "result": {"rounds": 1, "mistakes": 1}}
    >>> cases = entrant_cases(rank("t", [game("mine.py:Mine", "crash:learner:ValueError"),
    ...                                  game("soa", "complete")], []))
    >>> [(c["check"], c["ok"]) for c in cases]
    [('learner soa', True), ('learner mine.py:Mine', False), ('adversary tree', True)]
    >>> print(cases[1]["message"])  # doctest: +NORMALIZE_WHITESPACE
    mine.py:Mine crashed in 1 game: ValueError at mine.py:3
        (first: vs tree on thresholds:n=3, seed 0)
    """
    groups = failure_groups(report.games)
    cases: list[EntrantCase] = []
    for role, rows in (("learner", report.learners), ("adversary", report.adversaries)):
        for row in rows:
            name = str(row.get(role))
            lines = [g["line"] for g in groups if g["entrant"] == name and g["role"] == role]
            cases.append({"check": f"{role} {name}", "skipped": False, "advice": False,
                          "ok": not (lines and is_file_agent(name)),
                          "message": "\n".join(lines)})
    for unloaded in report.unloaded:
        cases.append({"check": f"{unloaded['role']} {unloaded['entrant']}", "ok": False,
                      "skipped": False, "advice": False,
                      "message": f"failed to load: {unloaded['reason']}"})
    return cases


def competition(args: argparse.Namespace) -> int:
    """``competition export``: the ranking (final once closed) as CSV or JSON;
    ``competition rate`` (the server's rating worker): rate one version, or serve a warm
    rating lane (``--lane``: ``competition.lane.serve_lane``)."""
    from littlestone.server.records.store import Store
    from littlestone.server.tournament.competition import (
        export,
        load_competition,
        rate_version,
        standings,
    )

    config = load_competition(args.config)
    if args.competition_command == "rate":
        from littlestone.server.tournament.competition.lane import serve_lane

        data = Path(args.data)

        def rate(ident: int, overrun: bool,
                 aside: Callable[[], AbstractContextManager[object]] | None = None) -> int:
            return rate_version(config, data, ident, unsafe=args.unsafe_no_sandbox,
                                overrun=overrun, aside=aside)

        if not args.lane and args.version is None:
            raise UsageError("competition rate: --version N (or --lane, the server's)")
        with operator_log("warning", "text"):
            if args.lane:
                return serve_lane(rate, data / "competitions" / config.name / "rating.log")
            rate(args.version, args.overrun)
        return 0
    if not (Path(args.data) / "littlestone.db").is_file():
        raise UsageError(f"competition: {args.data} holds no competition (no index); "
                         "--data DIR names the data folder its server uses")
    store = Store(Path(args.data))
    if not store.has_tournament(config.name) and not store.submissions(config.name):
        # (an empty CSV, exit 0, read as "nobody submitted": refused instead)
        raise UsageError(f"competition: {args.data} holds no competition {config.name} (no "
                         "version submitted, no game played); --data DIR names the data "
                         "folder its server uses")
    sys.stdout.write(export(standings(store, config, Path(args.data)), args.format))
    return 0


def leaderboard_lines(report: TournamentReport) -> list[str]:
    """The leaderboards as the terminal shows them: expected scores with the realised
    ones beside, ``=`` after a rank shared by an exact tie, ``-`` for no scored game.

    >>> from littlestone.server.tournament import rank
    >>> def game(learner, mistakes, expected):
    ...     return {"game": "mistake-bound", "status": "complete", "learner": learner,
    ...             "adversary": "tree", "horizon": 30, "normaliser_value": 4.0,
    ...             "result": {"rounds": 30, "mistakes": mistakes,
    ...                        "expected_mistakes": expected}}
    >>> lines = leaderboard_lines(rank("t", [game("soa", 4, 4), game("coin", 5, 4)], []))
    >>> print("\\n".join(lines[:4]))
    rank  learner       worst  realised    median  realised  failed
      1=  coin           1.00      1.25      1.00      1.25  0  (tied with soa)
      1=  soa            1.00      1.00      1.00      1.00  0  (tied with coin)
    rank  adversary   forcing  realised  failed
    """

    def num(value: Any) -> str:  # (fixed precision: a column's figures line up)
        return "-" if value is None else f"{value:.2f}"

    def position(row: Standing) -> str:
        return "-" if row["rank"] is None else f"{row['rank']}{'=' if row['tied_with'] else ''}"

    def notes(row: Standing, role: str) -> str:
        out = f"{row['failed']} {' '.join(row['failures'])}".rstrip()
        won = row.get("won_by_forfeit", 0)
        if won:
            out += f"; {won} won by forfeit"
        if row["unscored"] > won:
            statuses = [s for s in row["unscored_statuses"] if fault(s) in (role, "nobody")]
            out += f"; {row['unscored'] - won} not scored ({' '.join(statuses)})"
        if row["tied_with"]:
            out += f"  (tied with {', '.join(row['tied_with'])})"
        return out

    # names in full, never cut: the column is as wide as the longest
    width = max([len("adversary"), *(len(r["learner"]) for r in report.learners),
                 *(len(r["adversary"]) for r in report.adversaries)])
    lines = [f"{'rank':>4}  {'learner':<{width}} {'worst':>9} {'realised':>9} {'median':>9} "
             f"{'realised':>9}  failed"]
    for row in report.learners:
        lines.append(f"{position(row):>4}  {row['learner']:<{width}} {num(row['worst']):>9} "
                     f"{num(row['worst_realised']):>9} {num(row['median']):>9} "
                     f"{num(row['median_realised']):>9}  {notes(row, 'learner')}")
    lines.append(f"{'rank':>4}  {'adversary':<{width}} {'forcing':>9} {'realised':>9}  failed")
    for row in report.adversaries:
        lines.append(f"{position(row):>4}  {row['adversary']:<{width}} "
                     f"{num(row['forcing']):>9} {num(row['forcing_realised']):>9}  "
                     f"{notes(row, 'adversary')}")
    lines.append("scores: expected mistakes or regret over the coin (realised beside), "
                 "normalised; = marks an exact tie (shared rank, by name); a player at "
                 "fault loses every round it did not play (--json: rules)")
    return lines


def check_in_sandbox(args: argparse.Namespace) -> int:
    """The checks run where a tournament would run the submission: in its sandbox. What
    that process reports is the submission's own word (its code runs there and can
    rewrite it); *plays a game*, the one check a tournament scores, is then played here,
    by a server refereeing the sandboxed submission (server/tournament/preflight.py)."""
    file, rest = file_of(args.agent, Path.cwd())
    if not file.is_file():
        raise UsageError(f"check: no such file {str(file)!r}")
    problem = Sandbox.unavailable()
    if problem is not None and not args.unsafe_no_sandbox:
        raise UsageError(f"check: submissions run only in a sandbox, and {problem} "
                         "(--unsafe-no-sandbox runs the checks without one)")
    limits, seconds, games = _check_games(args)
    sandbox = Sandbox(limits, unsafe=args.unsafe_no_sandbox)
    verdict = check_file(args.agent, file, rest, sandbox, Path.cwd(), seconds, games=games)
    if verdict.forked:
        print(f"littlestone: warning: {args.agent} started other processes: in a "
              "tournament that ends its game as its fault", file=sys.stderr)
    if verdict.refused is not None:
        raise UsageError(verdict.message)
    assert verdict.kind is not None
    return _verdict(args, verdict.kind, verdict.rows)


def _check_games(args: argparse.Namespace) -> tuple[Limits, float, list[CheckGame] | None]:
    """The limits, seconds and games of ``check``: the suite's, the mistake-bound game on
    each ``--class`` given, or a tournament or competition file's own (``--competition``:
    its games on its classes, under its limits, as its check of a submission)."""
    if args.classes and args.competition:
        raise UsageError("check: give --class or --competition, not both")
    if args.classes:
        for spec in args.classes:
            try:
                make_class(spec)
            except LittlestoneError as exc:
                raise UsageError(f"check: --class {spec}: {exc}") from None
        return Limits(), CHECK_SECONDS, [(MISTAKE_BOUND, spec, None) for spec in args.classes]
    if args.competition:
        try:
            config = load_config(args.competition, competition=True)
        except (OSError, LittlestoneError) as exc:
            raise UsageError(f"check: --competition: {exc}") from None
        return config.limits, CHECK_SECONDS, check_games(config)
    return Limits(), CHECK_SECONDS, None


def _verdict(args: argparse.Namespace, kind: str, rows: list[CheckRow]) -> int:
    """Print the rows and the verdict (written here, outside the submission's process).
    Advice (a passed check with a suggestion) is shown and passes: exit status 0."""
    passed = all(r["ok"] for r in rows)
    costly = [r["check"] for r in rows if not r["ok"] and r["in_tournament"]]
    if args.junit_xml:
        from littlestone.cli.junit import write_junit_for

        write_junit_for("check", args.junit_xml, args.agent, rows)
    if args.json:
        print(json.dumps({"agent": args.agent, "kind": kind, "passed": passed,
                          "ready": not costly, "checks": rows}))
    else:
        print(f"{args.agent}: {'a learner' if kind == 'learner' else 'an adversary'}")
        for row in rows:
            mark = ("skip" if row["skipped"] else "tip " if row["advice"] else
                    "ok  " if row["ok"] else "FAIL")
            scored = ("" if (row["ok"] and not row["advice"]) or row["skipped"] else
                      f"  [tournament: {row['in_tournament']}]" if not row["ok"]
                      and row["in_tournament"] else
                      "  [advice: a tournament does not score this]")
            print(f"  {mark}  {row['check']}" + (f": {row['message']}" if row["message"]
                                                  else "") + scored)
        advice = [r["check"] for r in rows if not r["ok"] and not r["in_tournament"]]
        tips = [r["check"] for r in rows if r["advice"]]
        if passed and tips:
            print(f"every check passed: ready for a tournament (advice: {', '.join(tips)})")
        elif passed:
            print("every check passed: ready for a tournament")
        elif costly:
            print(f"not ready: a tournament would score these against it: {', '.join(costly)}")
        else:
            print(f"ready for a tournament (what it scores passed); advice to fix: "
                  f"{', '.join(advice)}")
    return 0 if passed else 1
