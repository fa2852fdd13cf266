"""Commands for a class: ``tournament`` and a submission's pre-flight ``check``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from littlestone import adversaries, learners
from littlestone.games.errors import SpecError
from littlestone.server.checks import yield_checks
from littlestone.server.cli.common import UsageError
from littlestone.server.tournament import (
    Limits,
    absolute_spec,
    load_config,
    run_tournament,
)
from littlestone.server.tournament.sandbox import Sandbox

__all__ = ["check", "tournament"]

#: How long ``check`` lets an agent run its checks in the sandbox.
CHECK_SECONDS = 60


def tournament(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise UsageError("tournament: --workers must be >= 1")
    config = load_config(args.config)
    report = run_tournament(config, Path(args.data), args.workers, progress=not args.json,
                            ray_address=args.ray)
    if args.json:
        print(json.dumps(report.leaderboard(), default=str))
        return 0
    print(f"tournament {config.name}: {len(report.games)} games "
          f"({sum(g['status'] != 'complete' for g in report.games)} not complete)")
    print(f"{'rank':>4}  {'learner':<40} {'worst':>8} {'mean':>8}  failed")
    for row in report.learners:
        def num(v: Any) -> str:
            return "-" if v is None else f"{v:.3g}"
        tie = f"  (tied with {', '.join(row['tied_with'])})" if row["tied_with"] else ""
        print(f"{row['rank']:>4}  {row['learner'][:40]:<40} {num(row['worst']):>8} "
              f"{num(row['mean']):>8}  {row['failed']} {' '.join(row['failures'])}{tie}")
    print(f"{'rank':>4}  {'adversary':<40} {'forcing':>8}")
    for row in report.adversaries:
        forcing = "-" if row["forcing"] is None else f"{row['forcing']:.3g}"
        print(f"{row['rank']:>4}  {row['adversary'][:40]:<40} {forcing:>8}")
    print(f"report: {report.report}")
    return 0


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
        agent = adversaries.ADVERSARIES.make(args.agent)
    kind = "learner" if isinstance(agent, learners.Learner) else "adversary"
    rows = []
    for check in yield_checks(agent):
        name = check.__name__.removeprefix("check_").replace("_", " ")
        try:
            check()
            rows.append({"check": name, "ok": True, "message": ""})
        except AssertionError as exc:
            rows.append({"check": name, "ok": False, "message": str(exc)})
        except Exception as exc:  # the agent's own bug, shown in plain words
            rows.append({"check": name, "ok": False,
                         "message": f"{type(exc).__name__}: {exc}"})
    sys.stdout.flush()
    passed = all(r["ok"] for r in rows)
    if args.json:
        print(json.dumps({"agent": args.agent, "kind": kind, "passed": passed, "checks": rows}))
    else:
        print(f"{args.agent}: {'a learner' if kind == 'learner' else 'an adversary'}")
        for row in rows:
            print(f"  {'ok  ' if row['ok'] else 'FAIL'}  {row['check']}"
                  + (f": {row['message']}" if row["message"] else ""))
        print("every check passed: ready for a tournament" if passed
              else "some checks failed: the tournament would record these against it")
    return 0 if passed else 1


def _check_in_sandbox(args: argparse.Namespace) -> int:
    agent = absolute_spec(args.agent)
    argv = [sys.executable, "-m", "littlestone", "check", agent, "--in-sandbox"]
    if args.json:
        argv.append("--json")
    limits = Limits()
    code, out, err, forked = Sandbox(limits).run(argv, timeout=CHECK_SECONDS)
    sys.stdout.write(out.replace(agent, args.agent))
    if code is None:
        raise UsageError(f"check: {args.agent} did not finish its checks in {CHECK_SECONDS} s "
                         "(a hang?): a tournament would kill it")
    if forked:
        print(f"littlestone: warning: {args.agent} forked a child process: a tournament "
              "records that against it", file=sys.stderr)
    if code not in (0, 1):
        last = [line for line in err.strip().splitlines() if line][-1:] or ["no message"]
        raise UsageError(f"check: {last[0].removeprefix('littlestone: error: ')}")
    return code
