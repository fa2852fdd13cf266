"""``conformance``: PROTOCOL.md's cases against a server (``conformance server URL``)
or a client program (``conformance client -- CMD ...``), as a table of the cases passed
and failed with their sections; exit 0 when every case passes, 1 when one fails, and 2 with
one line when no case can run (a server that accepts no connection, a program not found)."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import urllib.parse
from collections.abc import Sequence

from littlestone.cli.common import UsageError
from littlestone.cli.remote import _client_tls, _token_of
from littlestone.conformance import (
    CLIENT_CASES,
    SERVER_CASES,
    URL_VARIABLE,
    CaseResult,
    ServerUnderTest,
    run_client_cases,
    run_server_cases,
)
from littlestone.conformance.script import Case

__all__ = ["conformance", "results_table"]


def _chosen(cases: Sequence[Case], wanted: list[str] | None, command: str) -> list[Case]:
    if not wanted:
        return list(cases)
    known = {case.id for case in cases}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise UsageError(f"conformance {command}: no case {unknown[0]!r} (known: "
                         f"{', '.join(sorted(known))})")
    return [case for case in cases if case.id in wanted]


def results_table(results: Sequence[CaseResult]) -> str:
    """The verdicts as a table: case, PROTOCOL.md section, verdict, and why.

    >>> print(results_table([CaseResult("hello", "3", "hello and welcome", "pass"),
    ...                      CaseResult("version", "3, 8", "v2", "fail", "no close")]))
    case     section  verdict
    hello    3        pass
    version  3, 8     FAIL     no close
    1 passed, 1 failed
    """
    width = max(len("case"), *(len(r.id) for r in results))
    section = max(len("section"), *(len(r.section) for r in results))
    lines = [f"{'case':<{width}}  {'section':<{section}}  verdict"]
    for r in results:
        verdict = "FAIL" if r.verdict == "fail" else r.verdict
        lines.append(f"{r.id:<{width}}  {r.section:<{section}}  {verdict:<7}"
                     + (f"  {r.detail}" if r.detail else "").rstrip())
    counts = {v: sum(r.verdict == v for r in results) for v in ("pass", "fail", "skip")}
    lines.append(f"{counts['pass']} passed, {counts['fail']} failed"
                 + (f", {counts['skip']} skipped" if counts["skip"] else ""))
    return "\n".join(line.rstrip() for line in lines)


#: Seconds ``conformance server`` waits for the server to accept a connection before it
#: runs any case.
CONNECT_SECONDS = 10.0


def _reachable(url: str) -> None:
    """A server listens at ``url``, or :class:`UsageError` in one line (not a table of
    every case failing for that one reason)."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "wss" else 80)
    except ValueError:
        port = None
    if parts.scheme not in ("ws", "wss") or not parts.hostname or port is None:
        raise UsageError(f"conformance server: {url!r} is not a ws:// or wss:// URL")
    try:
        socket.create_connection((parts.hostname, port), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise UsageError(f"conformance server: cannot connect to {url}: "
                         f"{exc.strerror or exc}") from None


def conformance(args: argparse.Namespace) -> int:
    if args.conformance_command == "server":
        if not args.url.startswith(("ws://", "wss://")):
            raise UsageError(f"conformance server: {args.url!r} is not a ws:// or wss:// URL")
        cases = _chosen(SERVER_CASES, args.case, "server")
        _reachable(args.url)
        server = ServerUnderTest(_token_of(args))
        results = asyncio.run(run_server_cases(args.url, server, cases, _client_tls(args)))
    else:
        argv = list(args.program)
        if argv[:1] == ["--"]:
            argv = argv[1:]
        if not argv:
            raise UsageError("conformance client: name the client program after --, with "
                             f"{{url}} in its arguments or reading ${URL_VARIABLE}")
        if shutil.which(argv[0]) is None:
            raise UsageError(f"conformance client: cannot run {argv[0]!r}: no such "
                             "executable program")
        cases = _chosen(CLIENT_CASES, args.case, "client")
        results = asyncio.run(run_client_cases(argv, cases=cases))
    if args.json:
        print(json.dumps({"cases": [vars(r) for r in results],
                          "passed": sum(r.verdict == "pass" for r in results),
                          "failed": sum(r.verdict == "fail" for r in results)}))
    else:
        print(results_table(results))
    return 1 if any(r.verdict == "fail" for r in results) else 0
