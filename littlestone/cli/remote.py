"""A player's commands against a server: ``connect`` (play an agent), ``submit`` (a
file to a competition) and ``watch`` (a game as it is played). They import the client,
never the server: ``connect`` also runs in every tournament's sandbox
(:mod:`.sandboxed`), whose start pays for what it imports."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import ssl
import sys
import time
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from littlestone import adversaries, learners
from littlestone.cli.common import emit, game_output, regular_file, table
from littlestone.client import play_remote, submit_file, watch_remote
from littlestone.games.classes import make_class
from littlestone.games.errors import AgentCrashed, ServerClosed, ServerError, UsageError
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.protocol.wire import Submitted
from littlestone.transport import client_tls

__all__ = ["TOKEN_VARIABLE", "connect", "submit", "watch"]

T = TypeVar("T")


#: A submitted file's most bytes this client reads (a server's own limit is lower).
SUBMIT_READ_MAX = 16 << 20


def submit(args: argparse.Namespace) -> int:
    """``littlestone submit URL FILE.py:Class``: the server's verdict; exit 0 when the
    version is accepted, 1 when refused."""
    token = _token_of(args)
    if ".py:" not in args.agent:
        raise UsageError("submit: name the file and its class, as FILE.py:Class")
    path = Path(args.agent.partition(".py:")[0] + ".py")
    regular_file("submit:", str(path))
    try:
        with open(path, "rb") as f:
            source = f.read(SUBMIT_READ_MAX + 1)
    except OSError as exc:
        raise UsageError(f"submit: cannot read {path}: {exc.strerror}") from None
    if len(source) > SUBMIT_READ_MAX:
        raise UsageError(f"submit: {path} is over {SUBMIT_READ_MAX >> 20} MiB: not an agent")
    agent = f"{path.name}:{args.agent.partition('.py:')[2]}"
    answer = _client("submit", args.url, submit_file(args.url, agent, source, token,
                                                     args.competition, _client_tls(args)))
    if args.json:
        print(json.dumps({k: v for k, v in answer.items() if k != "type"}))
    else:
        print_submitted(answer)
    return 0 if answer["verdict"] == "accepted" else 1


def print_submitted(answer: Submitted) -> None:
    """``submit``'s answer as the terminal shows it, each check marked as ``check``
    marks it (``tip`` a passed check with a suggestion, ``ok``, ``FAIL``)."""
    said = "(the same file as before) " if answer["duplicate"] else ""
    print(f"{answer['competition']}: version {answer['version']} {said}"
          f"{answer['verdict'].upper()}" + (f" ({answer['reason']})"
                                             if answer["reason"] else ""))
    print(f"  {answer['message']}")
    for row in answer["checks"]:
        tip = bool(row.get("advice"))
        print(f"  {'tip ' if tip else 'ok  ' if row['ok'] else 'FAIL'}  {row['check']}"
              + (f": {row['message']}" if row["message"] and (tip or not row["ok"]) else ""))
    print(f"  sha256 {answer['sha256']}")


#: The environment variable a client's token may come from.
TOKEN_VARIABLE = "LITTLESTONE_TOKEN"


#: A token file's most bytes (a token is about 36 characters).
TOKEN_FILE_MAX = 4096


def _token_of(args: argparse.Namespace) -> str | None:
    """The client's token: --token-file (``-``: standard input), else $LITTLESTONE_TOKEN
    (never a command-line argument: other local users see those)."""
    if getattr(args, "token_file", None):
        where = f"{args.command}: --token-file {args.token_file}"
        path = Path(args.token_file)
        if args.token_file != "-":
            regular_file(f"{args.command}: --token-file", args.token_file)
        try:
            if args.token_file == "-":
                raw = sys.stdin.buffer.readline(TOKEN_FILE_MAX + 1)
            else:
                with open(path, "rb") as f:
                    raw = f.read(TOKEN_FILE_MAX + 1)
        except OSError as exc:
            raise UsageError(f"{args.command}: cannot read --token-file {args.token_file}: "
                             f"{exc.strerror}") from None
        if len(raw) > TOKEN_FILE_MAX:
            raise UsageError(f"{where} holds more than {TOKEN_FILE_MAX} bytes: not a token")
        try:
            token = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            raise UsageError(f"{where} is not a token (not ASCII text)") from None
        if not token:
            raise UsageError(f"{args.command}: --token-file {args.token_file} is empty")
        return token
    return os.environ.get(TOKEN_VARIABLE) or None


def connect(args: argparse.Namespace) -> int:
    args.token = _token_of(args)  # before the agent's own code runs: it never sees stdin
    agent: Any = (learners.LEARNERS.make(args.learner) if args.learner
                  else adversaries.ADVERSARIES.make(args.adversary))
    if args.tournament:
        if not args.token:
            raise UsageError("connect: --tournament needs a token (--token-file or "
                             f"${TOKEN_VARIABLE}): its name is the entrant")
        try:
            out = _client("connect", args.url, play_remote(
                args.url, agent, None, GameSpec("experts", 0, experts=1), token=args.token,
                name=args.name, tournament=args.tournament, tls=_client_tls(args)))
        except AgentCrashed as exc:  # (a submission's game: its owner reads this line)
            raise UsageError(f"connect: {exc}") from None
        print(json.dumps(out) if args.json else
              f"tournament {args.tournament}: played {len(out['games'])} games")
        return 0
    if args.join:
        given = [flag for flag, value in (("--game", args.game), ("--class", args.hclass),
                                          ("--experts", args.experts), ("--rounds", args.rounds),
                                          ("--seed", args.seed)) if value is not None]
        if given:
            raise UsageError(f"connect: --join plays the rules and seed its creator chose: "
                             f"drop {', '.join(given)}")
        game = GameSpec(EXPERTS, 0, experts=1)  # (unused: the start message's rules hold)
    else:
        if args.rounds is None:
            raise UsageError("connect: --rounds is required")
        hclass = make_class(args.hclass) if args.hclass else None
        game = GameSpec(args.game or MISTAKE_BOUND, args.rounds, hclass, args.experts)
        reason = agent.unsupported(game)
        if reason:
            raise UsageError(f"connect: {agent.spec} cannot play this game: {reason}")
        if args.seed is None:  # the server would choose one; chosen here, it is printed
            args.seed = secrets.randbits(62)
    started = time.perf_counter()

    def created(game_id: str) -> None:
        print(f"littlestone: created game {game_id}; waiting for the other player",
              file=sys.stderr, flush=True)

    try:
        out = _client("connect", args.url, play_remote(
            args.url, agent, args.vs, game, args.seed, args.token, name=args.name,
            join=args.join, on_created=created, tls=_client_tls(args)))
    except AgentCrashed as exc:  # what play records; the server sees a disconnection
        raise UsageError(f"connect: {exc} (the server records the game as "
                         f"disconnected:{exc.role})") from None
    out["log"] = None  # the log is the server's (replay GAME_ID --data on its side)
    out["seconds"] = round(time.perf_counter() - started, 6)
    class_spec = out.get("class")
    played = make_class(class_spec) if class_spec else None
    emit(game_output(out, played, out.get("experts")), args.json)
    return 0


def _client_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    if not args.tls_ca:
        return None
    regular_file(f"{args.command}: --tls-ca", args.tls_ca)
    try:
        return client_tls(args.tls_ca)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"{args.command}: cannot use the certificate authority "
                         f"{args.tls_ca}: {exc}") from None


def _client(command: str, url: str, run: Coroutine[Any, Any, T]) -> T:
    """Run a client coroutine: the server's errors, an unreachable server and a closed
    connection become one line (exit status 2)."""
    try:
        return asyncio.run(run)
    except AgentCrashed:
        raise
    except (ServerError, ServerClosed) as exc:  # ServerClosed: "the server shut down: ..."
        raise UsageError(f"{command}: {exc}") from None
    except (OSError, TimeoutError) as exc:
        reason = str(exc) or type(exc).__name__
        if url.startswith("wss://") and isinstance(exc, ssl.SSLError | ConnectionError):
            reason = (f"the TLS handshake failed ({reason}): is it a plain ws:// server, or "
                      "one whose certificate needs --tls-ca?")
        raise UsageError(f"{command}: cannot reach {url}: {reason}") from None
    except Exception as exc:  # websockets' handshake and URI errors
        raise UsageError(f"{command}: {type(exc).__name__}: {exc}") from None


def watch(args: argparse.Namespace) -> int:
    def show(message: Mapping[str, Any]) -> None:  # (a spectator's message, shown)
        if args.json:
            print(json.dumps(message), flush=True)
        elif message["type"] == "watching":
            print(f"watching {message['game_id']}: {message['learner']} vs "
                  f"{message['adversary']}, {message['rules']['game']}, "
                  f"{message['rules'].get('class') or ''} {message['rules']['rounds']} rounds; "
                  f"round {message['t']} so far", flush=True)
        else:
            totals = {k: message[k] for k in ("mistakes", "expected_mistakes", "loss",
                                              "regret", "expected_regret") if k in message}
            print(f"round {message['t']}: " + ", ".join(
                f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}"
                for k, v in totals.items()), flush=True)

    end = _client("watch", args.url, watch_remote(args.url, args.game_id, _token_of(args),
                                                  on_message=show, tls=_client_tls(args)))
    if args.json:
        print(json.dumps(end))
    else:
        print(f"end: {end['status']}")
        table(end["result"])
    return 0
