"""Commands for a class: ``tournament`` and a submission's pre-flight ``check``."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from littlestone import adversaries, learners
from littlestone.games.errors import LittlestoneError, SpecError, where_raised
from littlestone.protocol.messages import rules_from_wire
from littlestone.sandbox import Sandbox, serve_forks
from littlestone.server.cli.common import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    TerminalSafe,
    UsageError,
    operator_log,
)
from littlestone.server.tournament import Limits, load_config, run_tournament
from littlestone.server.tournament.config import file_of
from littlestone.server.tournament.preflight import Refereed, play_check_games
from littlestone.server.tournament.ranking import TournamentReport
from littlestone.server.tournament.run import check_ray_address
from littlestone.testing import (
    CHECK_EXPERTS,
    CHECK_ROUNDS,
    IN_TOURNAMENT,
    Advice,
    CheckSkipped,
    in_tournament,
    refereed_games,
    yield_checks,
)

__all__ = ["check", "leaderboard_lines", "probe", "tournament", "zygote"]

#: How long ``check`` lets an agent run its checks in the sandbox.
CHECK_SECONDS = 60


#: The exit status of a tournament that stopped because entrants failed to load.
EXIT_ENTRANTS_FAILED = 3


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
    try:
        print(f"littlestone: the leaderboard, live: {url}tournaments/{config.name}",
              file=sys.stderr, flush=True)
        code = _tournament(args, config)
        print(f"littlestone: still serving {url} (Ctrl-C to stop)", file=sys.stderr,
              flush=True)
        threading.Event().wait()
        return code
    except KeyboardInterrupt:
        return 0
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
    if report.stopped:
        print(f"littlestone: tournament {config.name} not played: "
              f"{len(report.unloaded)} entrant(s) failed to load (--keep-going plays the "
              "others and ranks them last)", file=sys.stderr)
        return EXIT_ENTRANTS_FAILED
    if args.json:
        return 0
    print(f"tournament {config.name}: {len(report.games)} games "
          f"({sum(g['status'] != 'complete' for g in report.games)} not complete)")
    for line in leaderboard_lines(report):
        print(line)
    print(f"sandbox: {report.sandbox}")
    print(f"report: {report.report}")
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
    rank  learner  worst  realised  median  realised  failed
      1=  coin         1      1.25     1      1.25  0  (tied with soa)
      1=  soa          1         1     1         1  0  (tied with coin)
    rank  adversary  forcing  realised  failed
    """

    def num(value: Any) -> str:
        return "-" if value is None else f"{value:.3g}"

    def position(row: dict[str, Any]) -> str:
        return "-" if row["rank"] is None else f"{row['rank']}{'=' if row['tied_with'] else ''}"

    def notes(row: dict[str, Any]) -> str:
        out = f"{row['failed']} {' '.join(row['failures'])}".rstrip()
        if row["unscored"]:
            out += f"; {row['unscored']} not scored ({' '.join(row['unscored_statuses'])})"
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
                     f"{num(row['median_realised']):>9}  {notes(row)}")
    lines.append(f"{'rank':>4}  {'adversary':<{width}} {'forcing':>9} {'realised':>9}  failed")
    for row in report.adversaries:
        lines.append(f"{position(row):>4}  {row['adversary']:<{width}} "
                     f"{num(row['forcing']):>9} {num(row['forcing_realised']):>9}  "
                     f"{notes(row)}")
    lines.append("scores: expected mistakes or regret over the coin (realised beside), "
                 "normalised; = marks an exact tie (shared rank, by name); a player at "
                 "fault loses every round it did not play (--json: rules)")
    return lines


def check(args: argparse.Namespace) -> int:
    if ".py:" not in args.agent:
        raise UsageError("check: name an agent file and class, as FILE.py:Class")
    if not args.in_sandbox:  # run the checks inside the tournament's sandbox
        return _check_in_sandbox(args)
    agent: Any
    try:
        agent = learners.LEARNERS.make(args.agent)
    except SpecError as exc:
        if "is not a learner" not in str(exc):
            raise
        try:
            agent = adversaries.ADVERSARIES.make(args.agent)
        except SpecError as again:
            if "is not an adversary" not in str(again):
                raise
            raise UsageError(f"check: {args.agent} is neither a learner nor an adversary: "
                             "subclass littlestone.learners.Learner or "
                             "littlestone.adversaries.Adversary") from None
    kind = "learner" if isinstance(agent, learners.Learner) else "adversary"
    rows: list[dict[str, Any]] = []
    for check in yield_checks(agent):
        name = check.__name__.removeprefix("check_").replace("_", " ")
        row: dict[str, Any] = {"check": name, "ok": True, "skipped": False, "advice": False,
                               "message": "", "in_tournament": in_tournament(check),
                               "refereed": False}
        try:
            check()
        except CheckSkipped as exc:
            row.update(skipped=True, message=str(exc))
        except Advice as exc:  # passed, with a suggestion (a docstring example)
            row.update(advice=True, message=str(exc))
        except AssertionError as exc:
            row.update(ok=False, message=str(exc))
        except Exception as exc:  # the agent's own bug, with its file and line
            where = where_raised(exc)
            row.update(ok=False, message=f"{type(exc).__name__}: {exc}"
                       + (f" at {where}" if where else ""))
        rows.append(row)
    sys.stdout.flush()
    print(json.dumps({"agent": args.agent, "kind": kind, "checks": rows}))
    return 0


def _check_in_sandbox(args: argparse.Namespace) -> int:
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
    sandbox = Sandbox(Limits(), unsafe=args.unsafe_no_sandbox)
    inside = f"{sandbox.inside(file)}:{rest}"

    def ours(text: str) -> str:
        return text.replace(inside, args.agent).replace(sandbox.inside(file), str(file))

    run = sandbox.run(file, ["check", inside, "--in-sandbox"], timeout=CHECK_SECONDS)
    if run.code is None:
        raise UsageError(f"check: {args.agent} did not finish its checks in {CHECK_SECONDS} s "
                         "(a hang?): a tournament would kill it")
    if run.forked:
        print(f"littlestone: warning: {args.agent} started other processes: in a "
              "tournament that ends its game as its fault", file=sys.stderr)
    if run.code not in (0, 1):
        last = [line for line in run.err.strip().splitlines() if line][-1:] or ["no message"]
        said = last[0].removeprefix("littlestone: error: ").removeprefix("check: ")
        raise UsageError(ours(f"check: {said}"))
    own = _own_report(run.out)
    rows = [_own_row(row, ours) for row in (own["checks"] if own is not None else [])]
    kinds = [own["kind"]] if own is not None and own.get("kind") in ROLES else list(ROLES)
    for kind in kinds:  # (without its report: as what it loads as)
        played = play_check_games(args.agent, kind, refereed_games(kind), CHECK_ROUNDS,
                                  CHECK_EXPERTS, sandbox, Path.cwd())
        if not (played[:1] and played[0].status.startswith("load_failed")
                and f"is not a{'n' if kind == 'adversary' else ''} {kind}"
                in played[0].message):
            break
    said_row = next((r for r in rows if r["check"] == PLAYS), None)
    refereed = _refereed_row(args.agent, played, said_row)
    at = rows.index(said_row) if said_row is not None else 0  # (in its place, once)
    rows = [r for r in rows if r["check"] != PLAYS]
    rows.insert(at, refereed)
    if own is None:
        rows.append(_own_row({"check": "own checks", "ok": False, "message": "its process "
                              "printed no report of its own checks (did it exit early?)"}, ours))
    return _verdict(args, kind, rows)


def _own_row(row: dict[str, Any], ours: Callable[[str], str]) -> dict[str, Any]:
    """A row of the submission's own report, as an advice row: only its name, outcome
    and message are taken from it (what a failure costs in a tournament is ours)."""
    name = str(row["check"])[:100]
    return {"check": name, "ok": row["ok"], "skipped": row.get("skipped") is True,
            "advice": row.get("advice") is True and row["ok"],
            "message": ours(str(row.get("message", "")))[:2000],
            "in_tournament": IN_TOURNAMENT.get("check_" + name.replace(" ", "_"), ""),
            "refereed": False}


#: The check a tournament scores, which ``check`` referees from outside the submission.
PLAYS = "plays a game"
ROLES = ("learner", "adversary")


def _own_report(out: str) -> dict[str, Any] | None:
    """The report the sandboxed run printed: its last line that reads as one (the
    submission may print around it)."""
    for line in reversed(out.strip().splitlines()):
        try:
            report = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(report, dict) and isinstance(report.get("checks"), list) and all(
                isinstance(r, dict) and isinstance(r.get("check"), str)
                and isinstance(r.get("ok"), bool) for r in report["checks"]):
            return report
    return None


def _refereed_row(agent: str, played: list[Refereed], said: dict[str, Any] | None
                  ) -> dict[str, Any]:
    """*plays a game* as the server recorded the games; where one failed, what the
    submission's own run said of it follows (a crash's file and line)."""
    games = [g for g in played if g.status != "declined"]
    failed = next((g for g in games if g.status != "complete"), None)
    ok, message = True, f"{len(games)} games refereed by a server, outside its process"
    if failed is not None and failed.status.startswith("load_failed"):
        ok, message = False, f"{agent}: not loaded: {failed.message}"
    elif failed is not None:
        ok, message = False, (f"{agent}, {failed.where}: {failed.status} after "
                              f"{failed.rounds} rounds" + (f": {failed.message}"
                                                           if failed.message else ""))
    elif not games:
        ok, message = False, f"{agent}: plays none of the check games"
    elif short := next((g for g in games if g.rounds != CHECK_ROUNDS), None):
        ok, message = False, f"{agent}, {short.where}: ended after {short.rounds} rounds"
    if not ok and failed is not None and said is not None and not said["ok"]:
        own = str(said.get("message", ""))
        message += f" (its own run: {own.partition(failed.where + ': ')[2] or own})"
    return {"check": PLAYS, "ok": ok, "skipped": False, "advice": False, "message": message,
            "in_tournament": IN_TOURNAMENT["check_plays_a_game"], "refereed": True}


def _verdict(args: argparse.Namespace, kind: str, rows: list[dict[str, Any]]) -> int:
    """Print the rows and the verdict (written here, outside the submission's process).
    Advice (a passed check with a suggestion) is shown and passes: exit status 0."""
    passed = all(r["ok"] for r in rows)
    costly = [r["check"] for r in rows if not r["ok"] and r["in_tournament"]]
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


def probe(args: argparse.Namespace) -> int:
    """(Inside a tournament's sandbox.) Load one agent and say which games it can play:
    a JSON request on stdin (``role``, ``spec``, ``games`` as wire rules), one JSON
    line on stdout: ``{"ok": true, "unsupported": [reason or null, ...]}`` or
    ``{"ok": false, "reason": ...}``."""
    request = json.loads(sys.stdin.read())
    registry: Any = learners.LEARNERS if request["role"] == "learner" else (
        adversaries.ADVERSARIES)
    try:
        agent = registry.make(request["spec"])
    except LittlestoneError as exc:
        print(json.dumps({"ok": False, "reason": str(exc)}))
        return 0
    reasons: list[str | None] = []
    for rules in request["games"]:
        try:
            reasons.append(agent.unsupported(rules_from_wire(rules)))
        except Exception as exc:  # the submission's own code
            reasons.append(f"{type(exc).__name__}: {exc}")
    sys.stdout.flush()
    print(json.dumps({"ok": True, "unsupported": reasons}))
    return 0


def zygote(args: argparse.Namespace) -> int:
    """(Inside a tournament's sandbox.) A loaded submission's fork server
    (:func:`littlestone.sandbox.serve_forks`): the command line, the client and the
    agents' registries are imported once, here, and never the submission; each game is
    a fresh child that runs ``direct`` (a game on the referee's direct link), ``connect``
    (the experts game, through the arena's game server) or ``probe`` as its own process
    would."""
    from littlestone.server.cli import network
    from littlestone.server.cli.parser import build_parser

    parser = build_parser()
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "connect": network.connect, "probe": probe}

    def run(argv: list[str]) -> int:
        try:
            if argv[:1] == ["direct"]:
                return _direct(argv[1:])
            parsed = parser.parse_args(argv)
            if parsed.command not in commands:
                return EXIT_USAGE
            return commands[parsed.command](parsed)
        except (UsageError, LittlestoneError, RecursionError) as exc:  # as main() says it
            print(f"littlestone: error: {TerminalSafe.escape(str(exc))}", file=sys.stderr)
            return EXIT_USAGE
        except Exception as exc:
            print(f"littlestone: internal error: {type(exc).__name__}: "
                  f"{TerminalSafe.escape(str(exc))}", file=sys.stderr)
            return EXIT_INTERNAL

    return serve_forks(run, Path(args.scratch), args.namespace)


def _direct(argv: list[str]) -> int:
    """(A loaded sandbox's game process.) ``direct SOCKET ROLE SPEC``: one game on the
    referee's direct link (:func:`littlestone.client.play_direct`), entered with the
    one-time token on standard input before the submission is imported (no local
    variable keeps it)."""
    from littlestone.client import AgentCrashed, enter_direct, play_direct

    path, role, spec = argv
    link = enter_direct(path, sys.stdin.readline().strip())
    agent: Any = (learners.LEARNERS.make(spec) if role == "learner"
                  else adversaries.ADVERSARIES.make(spec))
    try:
        play_direct(link, agent)
    except AgentCrashed as exc:  # as connect says it
        raise UsageError(f"connect: {exc} (the referee records the game as "
                         f"disconnected:{exc.role})") from None
    return 0
