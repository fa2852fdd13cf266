"""The commands a submission's sandbox runs (:mod:`littlestone.sandbox`): ``probe``
(which games the agent plays), ``zygote`` (a loaded sandbox's fork server, whose games
are ``direct``, ``connect`` or ``probe``) and ``check --in-sandbox`` (the student's
checks, run on the agent). A tournament starts hundreds of these processes, so this
module imports only the agents, the protocol and the client: never the tournament or
the server.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from littlestone import adversaries, learners
from littlestone.cli.common import EXIT_INTERNAL, EXIT_USAGE, TerminalSafe
from littlestone.games.errors import LittlestoneError, SpecError, UsageError, where_raised
from littlestone.protocol.messages import rules_from_wire
from littlestone.sandbox.zygote import serve_forks

if TYPE_CHECKING:  # (not imported in the sandbox: the tournament's code stays outside)
    from littlestone.server.tournament.preflight import CheckRow

__all__ = ["check", "probe", "zygote"]


def check(args: argparse.Namespace) -> int:
    """``check FILE.py:Class``: a student's checks of an agent. The command runs them in
    the tournament's sandbox (:func:`.tournaments.check_in_sandbox`), where the same
    command, with ``--in-sandbox``, runs them on the agent and prints its rows as JSON."""
    if ".py:" not in args.agent:
        raise UsageError("check: name an agent file and class, as FILE.py:Class")
    if not args.in_sandbox:
        from littlestone.cli.tournaments import check_in_sandbox

        return check_in_sandbox(args)
    from littlestone.games.errors import Advice, CheckSkipped
    from littlestone.testing import in_tournament, yield_checks

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
    rows: list[CheckRow] = []
    games = None if args.games is None else [
        (str(g), None if c is None else str(c), None if e is None else int(e))
        for g, c, e in json.loads(args.games)]
    for check in yield_checks(agent, games):
        name = check.__name__.removeprefix("check_").replace("_", " ")
        row: CheckRow = {"check": name, "ok": True, "skipped": False, "advice": False,
                               "message": "", "in_tournament": in_tournament(check),
                               "refereed": False}
        try:
            check()
        except CheckSkipped as exc:
            row.update({"skipped": True, "message": str(exc)})
        except Advice as exc:  # passed, with a suggestion (a docstring example)
            row.update({"advice": True, "message": str(exc)})
        except AssertionError as exc:
            row.update({"ok": False, "message": str(exc)})
        except Exception as exc:  # the agent's own bug, with its file and line
            where = where_raised(exc)
            row.update({"ok": False, "message": f"{type(exc).__name__}: {exc}"
                        + (f" at {where}" if where else "")})
        rows.append(row)
    sys.stdout.flush()
    print(json.dumps({"agent": args.agent, "kind": kind, "checks": rows}))
    return 0


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
    (the experts game, through the arena's game server), ``probe`` or ``check
    --in-sandbox`` (a student's checks) as its own process would."""
    from littlestone.cli import remote
    from littlestone.cli.parser import build_parser

    parser = build_parser()
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "connect": remote.connect, "probe": probe, "check": check}

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
    from littlestone.client import enter_direct, play_direct
    from littlestone.games.errors import AgentCrashed

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
