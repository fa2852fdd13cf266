"""The ``littlestone`` command line.

Every sub-command has ``--help``; ``--json`` prints one JSON object on the last line of
stdout for machines to read. Bad input (an unknown class or agent, a bad parameter, a
missing or malformed file, an agent that cannot play the game) prints one line naming
the problem on stderr and exits with status 2, never a traceback. Set
``LITTLESTONE_DEBUG=1`` to see the traceback of an internal error.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import ssl
import sys
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import adversaries
import learners
import server.replay  # noqa: F401 - registers the replay adversary
from games.classes import FiniteClass, HalfspaceClass, make_class
from games.errors import BudgetExceeded, LittlestoneError
from games.game import EXPERTS, GAMES, MISTAKE_BOUND, GameSpec
from games.ldim import LDIM_BUDGET, class_ldim, shattered_tree, solver_for
from server.store import DEFAULT_DATA

__all__ = ["main"]

T = TypeVar("T")

EXIT_USAGE = 2
EXIT_INTERNAL = 1


class UsageError(Exception):
    """Bad command-line input: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="littlestone",
        description="A referee for the games of online learning theory.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    ldim = sub.add_parser(
        "ldim", help="exact Littlestone dimension of a class",
        description="Size, domain size and exact Littlestone dimension of a hypothesis class.",
    )
    ldim.add_argument("--class", dest="hclass", required=True, metavar="SPEC",
                      help="hypothesis class, e.g. thresholds:n=1023")
    ldim.add_argument("--tree", metavar="FILE.graphml",
                      help="write a shattered tree of depth Ldim(H) as GraphML")
    ldim.add_argument("--budget", type=int, default=LDIM_BUDGET, metavar="N",
                      help=f"most instance checks to spend (default {LDIM_BUDGET})")
    ldim.add_argument("--json", action="store_true", help="print one JSON object")

    play = sub.add_parser(
        "play", help="play one game locally",
        description="Play one game between a learner and an adversary, in process.",
    )
    play.add_argument("--game", choices=GAMES, default=MISTAKE_BOUND)
    play.add_argument("--learner", required=True, metavar="SPEC",
                      help="learner spec, e.g. halving or path/to/file.py:MyLearner")
    play.add_argument("--adversary", required=True, metavar="SPEC",
                      help="adversary spec, e.g. random-target")
    play.add_argument("--class", dest="hclass", metavar="SPEC",
                      help="hypothesis class (experts game: its hypotheses are the experts)")
    play.add_argument("--experts", type=int, metavar="D", help="number of experts (experts game)")
    play.add_argument("--rounds", type=int, required=True, metavar="T", help="horizon T")
    play.add_argument("--seed", type=int, default=0, metavar="S", help="game seed (default 0)")
    play.add_argument("--tree", metavar="FILE.graphml",
                      help="write the tree the adversary played (shattered-tree) as GraphML")
    play.add_argument("--data", default=DEFAULT_DATA, metavar="DIR",
                      help=f"where the game's log and index go (default {DEFAULT_DATA})")
    play.add_argument("--json", action="store_true", help="print one JSON object")

    games = sub.add_parser(
        "games", help="list logged games",
        description="List the most recent logged games with their results, newest first.",
    )
    games.add_argument("--data", default=DEFAULT_DATA, metavar="DIR")
    for column in ("learner", "adversary", "class", "status"):
        games.add_argument(f"--{column}", metavar="SPEC",
                           help=f"only games with this {column} (a trailing * matches a prefix)")
    games.add_argument("--limit", type=int, default=20, metavar="N", help="at most N games")
    games.add_argument("--json", action="store_true", help="print one JSON object")

    replay = sub.add_parser(
        "replay", help="show, verify, re-play, plot or export a logged game",
        description="Show a logged game (by log file or game id). Exit status: 0 fine, "
        "1 --verify found a difference, 2 no such log, 3 not a littlestone log, "
        "4 corrupted (the hash chain breaks), 5 incomplete (cut off; shown as far as it goes).",
    )
    replay.add_argument("log", metavar="LOG_OR_GAME_ID")
    replay.add_argument("--data", default=DEFAULT_DATA, metavar="DIR")
    replay.add_argument("--verify", action="store_true",
                        help="re-simulate from the seeds and compare every record")
    replay.add_argument("--against", metavar="LEARNER_SPEC",
                        help="play the logged sequence against another learner")
    replay.add_argument("--plot", metavar="FILE.png|svg", help="plot mistakes or regret")
    replay.add_argument("--export", choices=("csv", "jsonl"),
                        help="print every round as CSV or JSON lines")
    replay.add_argument("--page", type=int, default=1, metavar="N",
                        help="which page of rounds to show (default 1)")
    replay.add_argument("--page-size", type=int, default=20, metavar="M",
                        help="rounds per page (default 20)")
    replay.add_argument("--json", action="store_true", help="print one JSON object")

    serve = sub.add_parser(
        "serve", help="run the game server",
        description="Serve games over WebSockets (PROTOCOL.md) until SIGINT or SIGTERM.",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--data", default=DEFAULT_DATA, metavar="DIR")
    serve.add_argument("--anonymous", action="store_true",
                       help="accept agents without a token (local experiments)")
    serve.add_argument("--move-deadline", type=float, default=10.0, metavar="SECONDS")
    serve.add_argument("--time-bank", type=float, default=60.0, metavar="SECONDS")
    serve.add_argument("--max-frame", type=int, default=1 << 20, metavar="BYTES")
    serve.add_argument("--tls-cert", metavar="PEM",
                       help="serve wss:// (TLS) with this certificate chain")
    serve.add_argument("--tls-key", metavar="PEM",
                       help="the certificate's private key (if not in --tls-cert)")

    connect_ = sub.add_parser(
        "connect", help="play a local agent against a server-side opponent",
        description="Play a learner or an adversary (built-in or from a file) against an "
        "opponent on a littlestone server; prints what play prints.",
    )
    connect_.add_argument("url", metavar="URL", help="e.g. ws://127.0.0.1:8765")
    side = connect_.add_mutually_exclusive_group(required=True)
    side.add_argument("--learner", metavar="SPEC")
    side.add_argument("--adversary", metavar="SPEC")
    opponent = connect_.add_mutually_exclusive_group(required=True)
    opponent.add_argument("--vs", metavar="OPPONENT_SPEC", help="a server-side opponent")
    opponent.add_argument("--create", action="store_true",
                          help="open a game for another remote agent; prints its id")
    opponent.add_argument("--join", metavar="GAME_ID", help="join a game another agent opened")
    opponent.add_argument("--tournament", metavar="NAME",
                          help="enter a running tournament under the token's name")
    connect_.add_argument("--game", choices=GAMES, default=MISTAKE_BOUND)
    connect_.add_argument("--class", dest="hclass", metavar="SPEC")
    connect_.add_argument("--experts", type=int, metavar="D")
    connect_.add_argument("--rounds", type=int, metavar="T")
    connect_.add_argument("--seed", type=int, metavar="S")
    connect_.add_argument("--token", metavar="TOKEN")
    connect_.add_argument("--name", default="littlestone-client", metavar="NAME",
                          help="the agent's name in the hello (and in the server's index)")
    connect_.add_argument("--json", action="store_true", help="print one JSON object")
    connect_.add_argument("--tls-ca", metavar="PEM", help="for wss://: trust this certificate "
                          "authority (a self-signed server) instead of the system's")

    watch = sub.add_parser(
        "watch", help="follow a game a server is refereeing",
        description="Follow a running game on a littlestone server as a spectator: a line "
        "per batch of rounds (the running totals), then the result.",
    )
    watch.add_argument("url", metavar="URL", help="e.g. ws://127.0.0.1:8765")
    watch.add_argument("game_id", metavar="GAME_ID",
                       help="a running game's id (littlestone games --status running)")
    watch.add_argument("--token", metavar="TOKEN")
    watch.add_argument("--json", action="store_true",
                       help="print each message as one JSON line")
    watch.add_argument("--tls-ca", metavar="PEM", help="for wss://: trust this certificate "
                       "authority (a self-signed server) instead of the system's")

    token = sub.add_parser("token", help="manage server tokens",
                           description="Server tokens (stored hashed in DIR/littlestone.db).")
    token_sub = token.add_subparsers(dest="token_command", required=True, parser_class=_Parser)
    add = token_sub.add_parser("add", help="create a token for NAME and print it once")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--data", default=DEFAULT_DATA, metavar="DIR")

    tournament = sub.add_parser(
        "tournament", help="run a tournament from a TOML file",
        description="Play every learner x adversary x class x seed of CONFIG.toml (resumable), "
        "rank them and write DIR/reports/NAME.html.",
    )
    tournament.add_argument("config", metavar="CONFIG.toml")
    tournament.add_argument("--data", default=DEFAULT_DATA, metavar="DIR")
    tournament.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N")
    tournament.add_argument("--ray", metavar="ADDRESS",
                            help="fan out over a Ray cluster at ADDRESS ('local' starts one "
                            "with --workers CPUs); needs the ray extra")
    tournament.add_argument("--json", action="store_true", help="print the leaderboard")

    check = sub.add_parser(
        "check", help="check an agent file before submitting it",
        description="Run the generic agent check suite on FILE.py:Class (a learner or an "
        "adversary) against built-in opponents; exit 0 when every check passes, else 1.",
    )
    check.add_argument("agent", metavar="FILE.py:Class")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.add_argument("--in-sandbox", action="store_true", help=argparse.SUPPRESS)

    registries = (("learners", learners.LEARNERS), ("adversaries", adversaries.ADVERSARIES))
    for kind, registry in registries:
        lister = sub.add_parser(kind, help=f"list the registered {kind}",
                                description=f"List the registered {kind}.")
        lister.add_argument("--json", action="store_true", help="print one JSON object")
        lister.set_defaults(registry=registry)
    return parser


def _ldim(args: argparse.Namespace) -> int:
    hclass = make_class(args.hclass)
    if isinstance(hclass, HalfspaceClass):
        raise UsageError(
            f"ldim: {hclass.spec} is an infinite class; its Ldim is not computed "
            "(the Perceptron bound caps it at floor(1/margin^2))"
        )
    assert isinstance(hclass, FiniteClass)
    started = time.perf_counter()
    value, method = class_ldim(hclass, budget=args.budget)
    seconds = time.perf_counter() - started
    if args.tree:
        if method != "exact":
            raise UsageError(f"ldim: {hclass.spec} is too large to build its shattered tree")
        _write_tree(hclass, args.tree)
    out = {"class": hclass.spec, "size": hclass.size, "domain": hclass.domain_size,
           "ldim": value, "seconds": round(seconds, 6), "method": method}
    if args.tree:
        out["tree"] = args.tree
    _emit(out, args.json)
    return 0


def _write_tree(hclass: FiniteClass, path: str) -> None:
    _write_graph(shattered_tree(solver_for(hclass), hclass), path)


def _write_graph(graph: Any, path: str) -> None:
    import networkx as nx

    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        nx.write_graphml(graph, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path!r}: {exc.strerror}") from None


def _play(args: argparse.Namespace) -> int:
    from server.logged import play_logged

    if args.rounds < 0:
        raise UsageError("play: --rounds must be >= 0")
    if args.experts is not None and args.experts < 1:
        raise UsageError("play: --experts must be >= 1")
    hclass = make_class(args.hclass) if args.hclass else None
    if args.game == MISTAKE_BOUND and hclass is None:
        raise UsageError("play: the mistake-bound game needs --class")
    game = GameSpec(args.game, args.rounds, hclass, args.experts)
    learner = learners.LEARNERS.make(args.learner)
    adversary = adversaries.ADVERSARIES.make(args.adversary)
    played_tree = getattr(adversary, "played_tree", None)
    if args.tree and played_tree is None:
        raise UsageError(f"play: --tree: adversary {adversary.spec} does not play a tree")
    started = time.perf_counter()
    done = play_logged(game, learner, adversary, args.seed, Path(args.data),
                       learner_spec=args.learner, adversary_spec=args.adversary)
    result = done.result
    seconds = time.perf_counter() - started
    if args.tree and played_tree is not None:
        _write_graph(played_tree(), args.tree)
    out: dict[str, Any] = {
        "game": args.game, "learner": learner.spec, "adversary": adversary.spec,
        "class": hclass.spec if hclass is not None else None, "horizon": args.rounds,
        "seed": args.seed,
    }
    scores = result.to_dict()
    scores.pop("game")
    if not scores["message"]:
        scores.pop("message")
    out.update(scores)
    out.update(_class_keys(hclass))
    if args.game == EXPERTS:
        out["experts"] = game.n_experts
    out["game_id"], out["log"] = done.game_id, str(done.log)
    out["seconds"] = round(seconds, 6)
    _emit(out, args.json)
    return 0


def _class_keys(hclass: Any) -> dict[str, Any]:
    """``size`` and ``ldim`` of a finite class, as play and connect print them."""
    if not isinstance(hclass, FiniteClass):
        return {}
    try:
        ldim: int | None = class_ldim(hclass)[0]
    except BudgetExceeded:
        ldim = None
    return {"size": hclass.size, "ldim": ldim}


def _emit(out: dict[str, Any], as_json: bool) -> None:
    """One JSON object, or an aligned table."""
    if as_json:
        print(json.dumps(out))
    else:
        _table(out)


def _games(args: argparse.Namespace) -> int:
    from server.store import Store

    if not (Path(args.data) / "littlestone.db").is_file():
        raise UsageError(f"games: no games in {args.data} (no littlestone.db)")
    rows = Store(Path(args.data)).games(limit=args.limit, learner=args.learner,
                                        adversary=args.adversary, status=args.status,
                                        **{"class": getattr(args, "class")})
    if args.json:
        print(json.dumps({"games": rows}))
        return 0
    print(f"{'game_id':<30} {'learner':<22} {'adversary':<22} {'class':<28} {'rounds':>7} "
          f"{'mistakes':>9} {'regret':>9}  status")
    for row in rows:
        def num(value: Any) -> str:
            return "-" if value is None else f"{value:.6g}"
        print(f"{row['game_id']:<30} {row['learner'][:22]:<22} {row['adversary'][:22]:<22} "
              f"{(row['class'] or '-')[:28]:<28} {num(row['rounds']):>7} "
              f"{num(row['mistakes']):>9} {num(row['regret']):>9}  {row['status']}")
    return 0


EXIT_VERIFY_FAILED, EXIT_FOREIGN, EXIT_CORRUPTED, EXIT_INCOMPLETE = 1, 3, 4, 5
#: How long ``check`` lets an agent run its checks in the sandbox.
CHECK_SECONDS = 60


def _replay(args: argparse.Namespace) -> int:
    from server import replay
    from server.logs import ForeignLog, LogCorrupted, LogError, read_log

    try:
        path = replay.resolve(args.log, args.data)
        log = read_log(path)
    except ForeignLog as exc:
        print(f"littlestone: error: {exc}", file=sys.stderr)
        return EXIT_FOREIGN
    except LogCorrupted as exc:
        print(f"littlestone: error: {path}: {exc}", file=sys.stderr)
        return EXIT_VERIFY_FAILED if args.verify else EXIT_CORRUPTED
    except (LogError, OSError) as exc:
        raise UsageError(f"replay: {exc}") from None
    if args.verify:
        report = replay.verify(log)
        if args.json:
            print(json.dumps({"verified": report.ok, "message": report.message,
                              "rounds_checked": report.rounds_checked}))
        else:
            print(("verified: " if report.ok else "differs: ") + report.message)
        return 0 if report.ok else EXIT_VERIFY_FAILED
    if args.against:
        original, other = replay.against(log, args.against)
        left, right = original.to_dict(), other.to_dict()
        if args.json:
            print(json.dumps({"original": {"learner": log.header["learner"]["spec"], **left},
                              "against": {"learner": args.against, **right}}))
            return 0
        keys = [k for k in left if k in right and k != "message"]
        width = max(len(k) for k in keys)
        print(f"{'':<{width}}  {log.header['learner']['spec']:>24}  {args.against:>24}")
        for key in keys:
            print(f"{key:<{width}}  {_cell(left[key]):>24}  {_cell(right[key]):>24}")
        return 0
    if args.plot:
        replay.plot(log, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    elif args.export:
        replay.export(log, args.export, sys.stdout)
    elif args.json:
        out = {"game": log.header["rules"]["game"], "learner": log.header["learner"]["spec"],
               "adversary": log.header["adversary"]["spec"],
               "class": log.header["rules"].get("class"), "horizon": log.header["rules"]["rounds"],
               "seed": log.header.get("seed"), "game_id": log.header.get("game_id"),
               "log": str(path), "rounds_logged": log.n_rounds, "status": log.status}
        out.update((log.footer or {}).get("result", {}))
        out["status"] = log.status
        print(json.dumps(out))
    else:
        print(replay.summary_table(log), end="")
        if args.page < 1 or args.page_size < 1:
            raise UsageError("replay: --page and --page-size must be >= 1")
        first = (args.page - 1) * args.page_size
        shown = list(itertools.islice(replay.rows(log), first, first + args.page_size))
        if shown:
            print()
            keys = [k for k in shown[0] if k not in ("advice", "weights", "costs")]
            print("  ".join(f"{k:>10}" for k in keys))
            for row in shown:
                print("  ".join(f"{_cell(row[k]):>10}" for k in keys))
            pages = max(1, -(-log.n_rounds // args.page_size))
            print(f"(rounds {first + 1}-{first + len(shown)} of {log.n_rounds}; "
                  f"page {args.page} of {pages}: --page N)")
    if log.footer is None:
        print(f"littlestone: warning: {path} is incomplete: {log.n_rounds} whole rounds, no "
              f"footer ({log.trailing} bytes cut off)", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _serve(args: argparse.Namespace) -> int:
    import asyncio

    from protocol.codec import Limits
    from server.net import ServerSettings, serve_forever

    if args.tls_key and not args.tls_cert:
        raise UsageError("serve: --tls-key needs --tls-cert")
    tls = None
    if args.tls_cert:
        from server.transport import server_tls

        try:
            tls = server_tls(args.tls_cert, args.tls_key)
        except (OSError, ssl.SSLError) as exc:  # a missing file, not PEM, a key that differs
            raise UsageError(f"serve: cannot use the TLS certificate {args.tls_cert}: "
                             f"{exc}") from None
    settings = ServerSettings(args.host, args.port, Path(args.data), args.anonymous,
                              args.move_deadline, args.time_bank, Limits(max_frame=args.max_frame),
                              tls)

    def ready(server: Any) -> None:
        mode = "ANONYMOUS: agents need no token" if args.anonymous else "tokens required"
        print(f"littlestone serving on {server.url} ({mode}); data in {args.data}", flush=True)

    try:
        asyncio.run(serve_forever(settings, ready))
    except OSError as exc:
        raise UsageError(f"serve: cannot listen on {args.host}:{args.port}: {exc.strerror}"
                         ) from None
    print("littlestone: server stopped", file=sys.stderr)
    return 0


def _connect(args: argparse.Namespace) -> int:
    from server.net import play_remote

    agent: Any = (learners.LEARNERS.make(args.learner) if args.learner
                  else adversaries.ADVERSARIES.make(args.adversary))
    if args.tournament:
        if not args.token:
            raise UsageError("connect: --tournament needs --token (its name is the entrant)")
        out = _client("connect", args.url, play_remote(
            args.url, agent, None, GameSpec("experts", 0, experts=1), token=args.token,
            name=args.name, tournament=args.tournament, tls=_client_tls(args)))
        print(json.dumps(out) if args.json else
              f"tournament {args.tournament}: played {len(out['games'])} games")
        return 0
    if args.rounds is None:
        raise UsageError("connect: --rounds is required")
    hclass = make_class(args.hclass) if args.hclass else None
    game = GameSpec(args.game, args.rounds, hclass, args.experts)
    reason = agent.unsupported(game)
    if reason:
        raise UsageError(f"connect: {agent.spec} cannot play this game: {reason}")
    started = time.perf_counter()

    def created(game_id: str) -> None:
        print(f"littlestone: created game {game_id}; waiting for the other player",
              file=sys.stderr, flush=True)

    out = _client("connect", args.url, play_remote(
        args.url, agent, args.vs, game, args.seed, args.token, name=args.name, join=args.join,
        on_created=created, tls=_client_tls(args)))
    out.update(_class_keys(hclass))
    out["seconds"] = round(time.perf_counter() - started, 6)
    _emit(out, args.json)
    return 0


def _client_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    from server.transport import client_tls

    if not args.tls_ca:
        return None
    try:
        return client_tls(args.tls_ca)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"{args.command}: cannot use the certificate authority "
                         f"{args.tls_ca}: {exc}") from None


def _client(command: str, url: str, run: Coroutine[Any, Any, T]) -> T:
    """Run a client coroutine: the server's errors, an unreachable server and a closed
    connection become one line (exit status 2)."""
    import asyncio

    from server.net import ServerError

    try:
        return asyncio.run(run)
    except ServerError as exc:
        raise UsageError(f"{command}: {exc}") from None
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"{command}: cannot reach {url}: {exc}") from None
    except Exception as exc:  # websockets' handshake and URI errors, a closed connection
        raise UsageError(f"{command}: {type(exc).__name__}: {exc}") from None


def _watch(args: argparse.Namespace) -> int:
    from server.net import watch_remote

    def show(message: dict[str, Any]) -> None:
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

    end = _client("watch", args.url, watch_remote(args.url, args.game_id, args.token,
                                                  on_message=show, tls=_client_tls(args)))
    if args.json:
        print(json.dumps(end))
    else:
        print(f"end: {end['status']}")
        _table(end["result"])
    return 0


def _token(args: argparse.Namespace) -> int:
    from server.store import Store

    token = Store(Path(args.data)).add_token(args.name)
    print(token)
    print(f"littlestone: token for {args.name!r} stored (hashed) in {args.data}; it is shown "
          "only this once", file=sys.stderr)
    return 0


def _tournament(args: argparse.Namespace) -> int:
    from server.tournament import load_config, run_tournament

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


def _check(args: argparse.Namespace) -> int:
    from games.errors import SpecError
    from server.checks import yield_checks

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
    from server.tournament import Limits, Sandbox, absolute_spec

    agent = absolute_spec(args.agent)
    argv = [sys.executable, "-m", "server.cli", "check", agent, "--in-sandbox"]
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


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return f"[{len(value)}]"
    return str(value)


def _list_agents(args: argparse.Namespace) -> int:
    rows = []
    for agent_id in args.registry.ids():
        cls = args.registry[agent_id]
        rows.append({
            "id": agent_id,
            "games": sorted(cls.games),
            "deterministic": cls.deterministic,
            "parameters": [
                {"name": p.name, "type": p.type.__name__, "default": p.default}
                for p in cls.param_info()
            ],
            "description": cls.describe(),
        })
    if args.json:
        print(json.dumps({args.command: rows}))
        return 0
    for row in rows:
        params = ", ".join(f"{p['name']}={p['default']}" for p in row["parameters"]) or "-"
        print(f"{row['id']:<22} {','.join(row['games']):<24} {params}")
        print(f"{'':<22} {row['description']}")
    return 0


def _table(out: dict[str, Any]) -> None:
    width = max(len(k) for k in out)
    for key, value in out.items():
        if isinstance(value, float):
            value = f"{value:.6g}"
        print(f"{key:<{width}}  {value}")


COMMANDS = {"ldim": _ldim, "play": _play, "learners": _list_agents, "adversaries": _list_agents,
            "games": _games, "replay": _replay, "serve": _serve, "connect": _connect,
            "watch": _watch, "token": _token, "check": _check, "tournament": _tournament}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = _parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"littlestone: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (LittlestoneError, RecursionError) as exc:
        print(f"littlestone: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("littlestone: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:
        if os.environ.get("LITTLESTONE_DEBUG"):
            raise
        print(f"littlestone: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
