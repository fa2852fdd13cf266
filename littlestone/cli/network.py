"""A server's commands: ``serve`` (the game server, its web page and a competition's
submissions) and ``token`` (the data folder's tokens). A player's commands are in
:mod:`.remote`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import ssl
import sys
from pathlib import Path
from typing import Any

from littlestone.cli.common import operator_log, regular_file
from littlestone.games.errors import TokenError, UsageError
from littlestone.protocol.codec import Limits
from littlestone.server.net import ServerSettings, serve_forever
from littlestone.server.net.eventloop import loop_name
from littlestone.server.net.eventloop import run as run_server
from littlestone.server.net.settings import Budgets, ConnectionLimits
from littlestone.server.records.store import Store
from littlestone.transport import server_tls

__all__ = ["serve", "token"]


def serve(args: argparse.Namespace) -> int:
    if args.tls_key and not args.tls_cert:
        raise UsageError("serve: --tls-key needs --tls-cert")
    tls = None
    if args.tls_cert:
        for option, path in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
            regular_file(f"serve: {option}", path)
        try:
            tls = server_tls(args.tls_cert, args.tls_key)
        except (OSError, ssl.SSLError) as exc:  # a missing file, not PEM, a key that differs
            raise UsageError(f"serve: cannot use the TLS certificate {args.tls_cert}: "
                             f"{exc}") from None
    agents = []
    for item in args.agent:
        name, eq, spec = item.partition("=")
        if not eq or not name or not spec:
            raise UsageError(f"serve: --agent {item!r}: use NAME=SPEC")
        agents.append((name, spec))
    budgets = Budgets(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Budgets)})
    connections = ConnectionLimits(**{f.name: getattr(args, f.name)
                                      for f in dataclasses.fields(ConnectionLimits)})
    settings = ServerSettings(
        host=args.host, port=args.port, data=Path(args.data), anonymous=args.anonymous,
        move_deadline=args.move_deadline, time_bank=args.time_bank,
        limits=Limits(max_frame=args.max_frame), tls=tls, budgets=budgets,
        connections=connections, agents=tuple(agents), log_level=args.log,
        human_move_deadline=args.human_move_deadline, human_time_bank=args.human_time_bank,
        public_play=args.public_play and not args.no_web)
    public = args.public or args.public_play

    def ready(server: Any) -> None:
        mode = "ANONYMOUS: agents need no token" if args.anonymous else "tokens required"
        print(f"littlestone serving on {server.url} ({mode}); data in {args.data}", flush=True)
        if not args.no_web:
            page = server.url.replace("ws", "http", 1) + "/"
            view = ("public: anyone may play as a guest" if settings.public_play
                    else "public, read-only" if public
                    else "a token is needed: log in with one from `littlestone token add`")
            print(f"littlestone: web page on {page} ({view})", flush=True)
            if competition is not None:
                print(competition_banner(competition, server.url, page), flush=True)

    competition = None
    if args.competition:
        from littlestone.server.tournament.competition import Competition, load_competition

        competition = Competition(load_competition(args.competition), Path(args.data),
                                  unsafe=args.unsafe_no_sandbox)

    def setup(server: Any) -> None:
        if competition is not None:
            competition.attach(server)
        if not args.no_web:
            from littlestone.server.web import attach

            attach(server, public=public)

    try:
        loop_name()  # (an event loop asked for by name, which this machine lacks)
    except ValueError as exc:
        raise UsageError(f"serve: {exc}") from None
    try:
        with operator_log(args.log_level, args.log_format):
            run_server(serve_forever(settings, ready, setup))
    except OSError as exc:
        raise UsageError(f"serve: cannot listen on {args.host}:{args.port}: {exc.strerror}"
                         ) from None
    finally:
        if competition is not None:
            competition.close()
    print("littlestone: server stopped", file=sys.stderr)
    return 0


def token(args: argparse.Namespace) -> int:
    """``token add``, ``token list``, ``token revoke``: the data folder's tokens."""
    store = Store(Path(args.data))
    if args.token_command == "list":
        rows = store.tokens()
        if args.json:
            print(json.dumps({"tokens": rows}))
        else:
            for row in rows:
                print(f"{row['name']:<24} {row['role']:<10} {row['created']}")
        return 0
    if not args.name or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in args.name):
        raise UsageError(f"token {args.token_command}: {args.name!r}: a name is letters, "
                         "digits, - _ . (it is the agent's account, and remote:NAME in a "
                         "tournament)")
    if args.token_command == "revoke":
        if not store.revoke_token(args.name):
            raise UsageError(f"token revoke: no token named {args.name!r} in {args.data}")
        print(f"littlestone: the token of {args.name!r} is revoked", file=sys.stderr)
        return 0
    try:
        token = store.add_token(args.name, args.role, replace=args.replace)
    except TokenError as exc:
        raise UsageError(f"token add: {exc}") from None
    print(token)
    print(f"littlestone: {args.role} token for {args.name!r} stored (hashed) in {args.data}; "
          "it is shown only this once", file=sys.stderr)
    return 0


def competition_banner(competition: Any, url: str, page: str) -> str:
    """What ``serve --competition`` says of its competition as it starts: open, not open
    yet, or closed (it used to say "submissions open" of a closed one)."""
    config = competition.config
    said = {"open": f"submissions open on {url}",
            "not_open": f"not open yet: submissions from {config.opens} on {url}",
            "closed": f"closed at {config.closes}: no more submissions"}[
        config.state(competition.now())]
    return (f"littlestone: competition {competition.name}: {said}, standings on "
            f"{page}competitions/{competition.name}")
