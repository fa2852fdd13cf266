"""The argument parser: every sub-command, its options and its ``--help``."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

from littlestone import __version__
from littlestone.cli.common import (
    LOG_FORMATS,
    OPERATOR_LOG_LEVELS,
    Parser,
    count_int,
    port_int,
    positive_float,
    positive_int,
    seed_int,
)
from littlestone.games.game import GAMES, MISTAKE_BOUND
from littlestone.games.ldim import LDIM_BUDGET
from littlestone.server.net.settings import Budgets, ConnectionLimits, ServerSettings
from littlestone.server.records.folder import DATA_VARIABLE, DEFAULT_DATA, default_data
from littlestone.server.records.logs import AUTO_FULL_BYTES, LOG_LEVELS
from littlestone.server.records.tokens import TOKEN_ROLES

#: The frames ``serve --max-frame`` may allow: room for a lobby message, at most 64 MiB.
MIN_FRAME, MAX_FRAME = 4096, 64 << 20


class _NoToken(argparse.Action):
    """``--token T``: refused, naming the ways a token may come (a command line is seen by
    every local user, in ``ps`` and in shell histories)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        parser.error("--token: a token is never given on the command line; use "
                     "--token-file FILE (- for standard input) or $LITTLESTONE_TOKEN")


def _bank(text: str) -> float:
    value = 0.0 if text.strip() in ("0", "0.0") else positive_float(text)
    return value


def _frame(text: str) -> int:
    value = positive_int(text)
    if not MIN_FRAME <= value <= MAX_FRAME:
        raise argparse.ArgumentTypeError(f"{value} is not between {MIN_FRAME} and {MAX_FRAME}")
    return value

__all__ = ["build_parser"]

LOG_HELP = ("how much the game's log keeps: full (every round), compact (the seeds and the "
            "result; replay re-simulates the rounds), none (no log), auto (default: full "
            f"unless the log would pass {AUTO_FULL_BYTES >> 20} MiB, then compact)")


def _operator_log(command: argparse.ArgumentParser, default: str) -> None:
    """``--log-level`` and ``--log-format``: the server's log on standard error."""
    command.add_argument("--log-level", choices=OPERATOR_LOG_LEVELS, default=default,
                         help="the server's log on standard error: info shows where it "
                         "listens, each game's start, faults and end, every refusal with "
                         "its code, budgets hit, shutdown; debug adds each connection; "
                         f"never a token nor a game key (default {default})")
    command.add_argument("--log-format", choices=LOG_FORMATS, default="text",
                         help="text: a line per record; json: one JSON object per line, "
                         "with the record's fields (game_id, status, code, peer, "
                         "token_name ...) (default text)")


def build_parser() -> argparse.ArgumentParser:
    data = default_data()
    data_help = f"the data folder: logs and index (default ${DATA_VARIABLE}, else {DEFAULT_DATA})"
    parser = Parser(
        prog="littlestone",
        description="A referee for the games of online learning theory.",
    )
    parser.add_argument("--version", action="version", version=f"littlestone {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

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

    pac = sub.add_parser(
        "pac", help="the PAC track: consistency and online-to-batch, measured",
        description="Many runs of a PAC learner on i.i.d. examples of a target, each "
        "output's true error measured exactly against epsilon and delta. A consistent "
        "learner gets (1/epsilon)(ln|H| + ln(1/delta)) examples; a deterministic mistake-"
        "bound learner, made conservative, runs until a hypothesis survives "
        "(1/epsilon) ln((floor(M)+1)/delta) of them in a row; on halfspaces, the "
        "Perceptron's random iterate against 1/(n gamma^2).",
    )
    pac.add_argument("--class", dest="hclass", required=True, metavar="SPEC",
                     help="a class, or a concept class of the PAC notes: "
                     "monotone-conjunctions:n=N, k-cnf:n=N,k=K, decision-lists:n=N")
    pac.add_argument("--learner", required=True, metavar="SPEC")
    pac.add_argument("--conversion", choices=("consistency", "survivor"),
                     help="consistency (a learner that counts its hypotheses: the default "
                     "then) or the longest survivor")
    pac.add_argument("--epsilon", type=float, default=0.1)
    pac.add_argument("--delta", type=float, default=0.05)
    pac.add_argument("--dist", choices=("uniform", "zipf", "bernoulli"), default="uniform",
                     help="the examples' distribution; bernoulli: each variable 1 with "
                     "probability --q")
    pac.add_argument("--q", type=float, default=0.5, help="the bernoulli distribution's q")
    pac.add_argument("--examples", type=count_int, default=None, metavar="N",
                     help="examples per run: of the random iterate (halfspaces, default 200), "
                     "or instead of the consistency bound's m")
    pac.add_argument("--repeat", type=count_int, default=100, metavar="R")
    pac.add_argument("--seed", type=seed_int, default=0, metavar="S")
    pac.add_argument("--json", action="store_true", help="print one JSON object")

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
    play.add_argument("--rounds", type=count_int, required=True, metavar="T", help="horizon T")
    play.add_argument("--seed", type=seed_int, default=0, metavar="S",
                      help="game seed (default 0)")
    play.add_argument("--tree", metavar="FILE.graphml",
                      help="write the tree the adversary played (shattered-tree) as GraphML")
    play.add_argument("--data", default=data, metavar="DIR", help=data_help)
    play.add_argument("--log", choices=LOG_LEVELS, default="auto", help=LOG_HELP)
    play.add_argument("--json", action="store_true", help="print one JSON object")

    games = sub.add_parser(
        "games", help="list logged games",
        description="List the most recent logged games with their results, newest first.",
    )
    games.add_argument("--data", default=data, metavar="DIR", help=data_help)
    for column in ("learner", "adversary", "class", "status"):
        games.add_argument(f"--{column}", metavar="SPEC",
                           help=f"only games with this {column} (a trailing * matches a prefix)")
    games.add_argument("--limit", type=int, default=20, metavar="N", help="at most N games")
    games.add_argument("--json", action="store_true", help="print one JSON object")

    replay = sub.add_parser(
        "replay", help="show, verify, re-play, plot or export a logged game",
        description="Show a logged game (by log file or game id). Exit status: 0 fine, "
        "1 --verify found a difference or nothing anchors the log, 2 no such log, "
        "3 not a littlestone log (or the SQLite index), "
        "4 corrupted (the hash chain breaks), 5 incomplete (cut off; shown as far as it goes).",
    )
    replay.add_argument("log", metavar="LOG_OR_GAME_ID")
    replay.add_argument("--data", metavar="DIR", help=data_help + "; when named, its index "
                        "alone anchors the log, not one that lies beside it")
    action = replay.add_mutually_exclusive_group()  # one thing at a time
    action.add_argument("--verify", action="store_true",
                        help="check the log's anchor in the index, re-simulate from the "
                        "seeds and compare every record")
    action.add_argument("--against", metavar="LEARNER_SPEC",
                        help="play the logged sequence against another learner")
    action.add_argument("--plot", metavar="FILE.png|svg|pdf", help="plot mistakes or regret")
    action.add_argument("--export", choices=("csv", "jsonl"),
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
    serve.add_argument("--port", type=port_int, default=8765)
    serve.add_argument("--data", default=data, metavar="DIR", help=data_help)
    serve.add_argument("--log", choices=("full", "none"), default="full",
                       help="full: every round (a remote player's moves cannot be "
                       "re-simulated); none: the index row only (default full)")
    serve.add_argument("--anonymous", action="store_true",
                       help="accept agents without a token (local experiments)")
    serve.add_argument("--move-deadline", type=positive_float, default=10.0, metavar="SECONDS",
                       help="seconds a player has for each move (default 10)")
    serve.add_argument("--time-bank", type=_bank, default=60.0, metavar="SECONDS",
                       help="seconds a player may run over its deadlines in a game (default "
                       "60; 0: none)")
    human = ServerSettings()
    serve.add_argument("--human-move-deadline", type=positive_float,
                       default=human.human_move_deadline, metavar="SECONDS",
                       help="seconds for each move of a player that says it is a person "
                       f"(the web page's play; default {human.human_move_deadline:g})")
    serve.add_argument("--human-time-bank", type=_bank, default=human.human_time_bank,
                       metavar="SECONDS", help="a person's time bank in a game (default "
                       f"{human.human_time_bank:g})")
    serve.add_argument("--max-frame", type=_frame, default=1 << 20, metavar="BYTES",
                       help=f"largest frame a peer may send in a game ({MIN_FRAME}-"
                       f"{MAX_FRAME}; default {1 << 20})")
    serve.add_argument("--tls-cert", metavar="PEM",
                       help="serve wss:// (TLS) with this certificate chain")
    serve.add_argument("--tls-key", metavar="PEM",
                       help="the certificate's private key (if not in --tls-cert)")
    serve.add_argument("--public", action="store_true",
                       help="show the web page (http://HOST:PORT/) and its API to anyone, "
                       "read-only, without a token (default: a token is needed)")
    serve.add_argument("--public-play", action="store_true",
                       help="let anyone play on the web page as a guest, without a token "
                       "(a classroom; implies --public; --guest-games per address)")
    serve.add_argument("--no-web", action="store_true",
                       help="answer no plain HTTP: agents' WebSockets only")
    serve.add_argument("--competition", metavar="FILE.toml",
                       help="run a competition: students submit files (littlestone submit, "
                       "or the page's form), each is checked and rated against the field "
                       "while it is open (docs/guides/teacher.md)")
    serve.add_argument("--unsafe-no-sandbox", action="store_true",
                       help="--competition: run submissions without bubblewrap where it "
                       "cannot run (they can then read your files and use the network)")
    serve.add_argument("--agent", action="append", default=[], metavar="NAME=SPEC",
                       help="also serve this agent to peers under NAME (a built-in with its "
                       "parameters, or your own FILE.py:Class: loaded now, trusted); "
                       "repeatable. Peers otherwise get registered built-ins only")
    _operator_log(serve, "info")
    budgets = serve.add_argument_group(
        "budgets", "what one peer may ask for (PROTOCOL.md 1.2); beyond: over_budget")
    for field in dataclasses.fields(Budgets):
        flag = "--" + field.name.removesuffix("_s").replace("_", "-")
        help_text = {
            "max_rounds": "rounds of one game", "max_hypotheses": "hypotheses of a class",
            "max_dimension": "dimension of halfspaces", "max_experts": "experts of a game",
            "setup_cpu_s": "CPU seconds of a server-side agent's set-up",
            "move_cpu_s": "CPU seconds of one move of a server-side agent (beyond: its "
                          "over_budget fault)",
            "ldim_work": "exact-Ldim instance checks of one question of a server-side SOA "
                         "or shattered-tree",
            "max_truth_table": "|H| x |X| cells exact Ldim may build",
            "solver_memory_mb": "MiB of exact-Ldim caches one server-side agent may fill",
            "game_memory_mb": "estimated MiB one game may hold",
            "game_disk_mb": "estimated MiB one game may write (log, halfspace history)",
            "token_disk_mb": "MiB of logs one token's games may take",
            "data_disk_mb": "MiB the data folder may take",
            "min_free_mb": "MiB the data folder's disk keeps free",
            "page_cpu_s": "CPU seconds of one page's tree",
            "game_cpu_s": "CPU seconds of a hosted agent's moves over one game",
            "max_games": "games refereed at once",
        }[field.name]
        seconds = field.name.endswith("_s")
        default = ("what --setup-cpu buys at the speed measured at start"
                   if field.default is None else f"{field.default:g}" if seconds
                   else str(field.default))
        budgets.add_argument(flag, dest=field.name, type=positive_float if seconds
                             else positive_int, default=field.default,
                             metavar="SECONDS" if seconds else "N",
                             help=f"{help_text} (default {default})")
    limits = serve.add_argument_group(
        "connections", "what one connection, address or token may hold, and for how long "
        "(PROTOCOL.md 1.1)")
    for field in dataclasses.fields(ConnectionLimits):
        seconds = field.name.endswith("_s")
        flag = "--" + field.name.removesuffix("_s").replace("_", "-")
        help_text = {
            "handshake_s": "seconds a new connection has to say hello",
            "lobby_idle_s": "seconds a session may idle between games",
            "create_expiry_s": "seconds a created game waits for its second player",
            "max_connections": "connections in all (the file-descriptor limit is raised)",
            "per_address": "connections from one IP address",
            "per_token": "connections of one token",
            "games_per_token": "games one token plays at once",
            "message_rate": "lobby messages a second, on average",
            "message_burst": "lobby messages in a burst",
            "guest_games": "games one address plays at once as a guest (--public-play)",
        }[field.name]
        parse = positive_float if seconds or field.name == "message_rate" else positive_int
        limits.add_argument(flag, dest=field.name, type=parse, default=field.default,
                            metavar="SECONDS" if seconds else "N",
                            help=f"{help_text} (default {field.default:g})")

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
    connect_.add_argument("--game", choices=GAMES, help=f"default {MISTAKE_BOUND}")
    connect_.add_argument("--class", dest="hclass", metavar="SPEC")
    connect_.add_argument("--experts", type=int, metavar="D")
    connect_.add_argument("--rounds", type=count_int, metavar="T")
    connect_.add_argument("--seed", type=seed_int, metavar="S")
    connect_.add_argument("--token", action=_NoToken, help=argparse.SUPPRESS)
    connect_.add_argument("--token-file", metavar="FILE",
                          help="read the token from FILE (- for standard input)")
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
    watch.add_argument("--token", action=_NoToken, help=argparse.SUPPRESS)
    watch.add_argument("--token-file", metavar="FILE",
                       help="read the token from FILE (- for standard input); else "
                       "$LITTLESTONE_TOKEN")
    watch.add_argument("--json", action="store_true",
                       help="print each message as one JSON line")
    watch.add_argument("--tls-ca", metavar="PEM", help="for wss://: trust this certificate "
                       "authority (a self-signed server) instead of the system's")

    submit = sub.add_parser(
        "submit", help="submit an agent file to a server's competition",
        description="Send FILE.py to the competition a littlestone server runs (serve "
        "--competition): the server stores it as your next version, checks it in its "
        "sandbox and answers with the verdict; an accepted version is then rated against "
        "the field (its scores on the server's page). Exit 0 when accepted, 1 when refused.",
    )
    submit.add_argument("url", metavar="URL", help="e.g. ws://127.0.0.1:8765")
    submit.add_argument("agent", metavar="FILE.py:Class")
    submit.add_argument("--competition", metavar="NAME",
                        help="the competition's name (default: the one the server runs)")
    submit.add_argument("--token", action=_NoToken, help=argparse.SUPPRESS)
    submit.add_argument("--token-file", metavar="FILE",
                        help="read the token from FILE (- for standard input); else "
                        "$LITTLESTONE_TOKEN")
    submit.add_argument("--json", action="store_true", help="print the answer as JSON")
    submit.add_argument("--tls-ca", metavar="PEM", help="for wss://: trust this certificate "
                        "authority (a self-signed server) instead of the system's")

    kit = sub.add_parser(
        "conformance", help="run PROTOCOL.md's conformance cases against a server or a client",
        description="PROTOCOL.md's cases, in the spirit of the Autobahn test suite: a table of "
        "the cases passed and failed with their sections; exit 0 when every case passes, 1 "
        "when one fails.")
    kit_sub = kit.add_subparsers(dest="conformance_command", required=True,
                                 parser_class=Parser)
    kit_server = kit_sub.add_parser(
        "server", help="play the server cases against the server at URL",
        description="Play each server case (a small scripted client) against URL.")
    kit_server.add_argument("url", metavar="URL", help="e.g. ws://127.0.0.1:8765")
    kit_server.add_argument("--token", action=_NoToken, help=argparse.SUPPRESS)
    kit_server.add_argument("--token-file", metavar="FILE",
                            help="read the token from FILE (- for standard input); else "
                            "$LITTLESTONE_TOKEN; none for an --anonymous server")
    kit_server.add_argument("--tls-ca", metavar="PEM", help="for wss://: trust this "
                            "certificate authority instead of the system's")
    kit_client = kit_sub.add_parser(
        "client", help="run a client program against a scripted server",
        description="Start a scripted server on loopback and run CMD against it once per "
        "run; CMD finds the server's URL in $LITTLESTONE_URL or in place of {url} in its "
        "arguments.")
    kit_client.add_argument("program", nargs=argparse.REMAINDER, metavar="-- CMD ...")
    for kit_command in (kit_server, kit_client):
        kit_command.add_argument("--case", action="append", metavar="ID",
                                 help="run only this case (repeatable)")
        kit_command.add_argument("--json", action="store_true", help="print one JSON object")

    competition = sub.add_parser(
        "competition", help="a competition's ranking, exported",
        description="The ranking of a competition (serve --competition FILE.toml) as its "
        "data folder holds it: final once it closed, else as it stands.")
    competition_sub = competition.add_subparsers(dest="competition_command", required=True,
                                                 parser_class=Parser)
    exported = competition_sub.add_parser("export", help="print the ranking as CSV or JSON")
    exported.add_argument("config", metavar="FILE.toml")
    exported.add_argument("--data", default=data, metavar="DIR", help=data_help)
    exported.add_argument("--format", choices=("csv", "json"), default="csv")
    rate = competition_sub.add_parser("rate", help=argparse.SUPPRESS)  # the server's worker
    rate.add_argument("config", metavar="FILE.toml")
    rate.add_argument("--data", default=data, metavar="DIR", help=data_help)
    rate.add_argument("--version", type=positive_int)
    rate.add_argument("--lane", action="store_true")  # (a warm lane: versions on stdin)
    rate.add_argument("--unsafe-no-sandbox", action="store_true")
    rate.add_argument("--overrun", action="store_true")  # (its time is up: the rest its fault)

    token = sub.add_parser("token", help="manage server tokens",
                           description="Server tokens (stored hashed in DIR/littlestone.db).")
    token_sub = token.add_subparsers(dest="token_command", required=True, parser_class=Parser)
    add = token_sub.add_parser("add", help="create a token for NAME and print it once")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--role", choices=TOKEN_ROLES, default="player",
                     help="player: plays, watches its own games; spectator: only watches; "
                     "admin: anything, revoking tokens over the network too (default player)")
    add.add_argument("--replace", action="store_true",
                     help="NAME has a token already: void it and make a new one")
    add.add_argument("--data", default=data, metavar="DIR", help=data_help)
    listed = token_sub.add_parser("list", help="the tokens' names, roles and dates (never "
                                  "the tokens)")
    listed.add_argument("--data", default=data, metavar="DIR", help=data_help)
    listed.add_argument("--json", action="store_true", help="print one JSON object")
    revoke = token_sub.add_parser("revoke", help="void NAME's token (its open connections "
                                  "keep their games; new ones are refused)")
    revoke.add_argument("name", metavar="NAME")
    revoke.add_argument("--data", default=data, metavar="DIR", help=data_help)

    tournament = sub.add_parser(
        "tournament", help="run a tournament from a TOML file",
        description="Play every learner x adversary x class x seed of CONFIG.toml (resumable), "
        "rank them and write DIR/reports/NAME.html. Exit 0; 1 when an entrant named as a "
        "file ended a game by its own fault (a crash, an illegal move, a forfeit, a "
        "timeout...) or failed to load under --keep-going; 3 when entrants failed to load "
        "and the tournament stopped.",
    )
    tournament.add_argument("config", metavar="CONFIG.toml")
    tournament.add_argument("--data", default=data, metavar="DIR", help=data_help)
    tournament.add_argument("--log", choices=LOG_LEVELS, default="auto",
                            help=LOG_HELP + " (built-in pairs; games with a submission keep "
                            "their moves: they cannot be re-simulated)")
    tournament.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N")
    tournament.add_argument("--ray", metavar="ADDRESS",
                            help="fan out over a Ray cluster at ADDRESS ('local' starts one "
                            "with --workers CPUs); needs the ray extra")
    tournament.add_argument("--sandboxes", type=positive_int, metavar="N",
                            help="submissions kept loaded at once, over all workers "
                            "(default: a quarter of the available memory, 64 MiB each)")
    tournament.add_argument("--json", action="store_true", help="print the leaderboard")
    tournament.add_argument("--junit-xml", metavar="PATH",
                            help="also write one JUnit XML test case an entrant, failed "
                            "when a file entrant ended games by its own fault (for a "
                            "course's CI)")
    tournament.add_argument("--keep-going", action="store_true",
                            help="when entrants fail to load, play the others and rank "
                            "them last (default: stop, exit status 3)")
    tournament.add_argument("--unsafe-no-sandbox", action="store_true",
                            help="run submissions without bubblewrap where it cannot run "
                            "(they can then read your files and use the network)")
    tournament.add_argument("--serve", type=port_int, metavar="PORT",
                            help="show the leaderboard filling in live on a web page at "
                            "http://HOST:PORT/ (0: any free port), served until Ctrl-C "
                            "after the tournament ends")
    tournament.add_argument("--host", default="127.0.0.1",
                            help="where --serve listens (default 127.0.0.1)")
    tournament.add_argument("--public", action="store_true",
                            help="--serve's page needs no token (read-only)")
    _operator_log(tournament, "warning")

    check = sub.add_parser(
        "check", help="check an agent file before submitting it",
        description="Run the generic agent check suite on FILE.py:Class (a learner or an "
        "adversary) against built-in opponents; exit 0 when every check passes, else 1.",
    )
    check.add_argument("agent", metavar="FILE.py:Class")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.add_argument("--class", dest="classes", action="append", metavar="SPEC",
                       help="play the check games on this class only, the mistake-bound "
                       "game (repeat for several): the classes of your tournament")
    check.add_argument("--competition", metavar="FILE.toml",
                       help="play the check games of a tournament or competition's file: "
                       "its games on its classes, as its own check of a submission does")
    check.add_argument("--junit-xml", metavar="PATH",
                       help="also write the checks as a JUnit XML report (for a course's CI)")
    check.add_argument("--in-sandbox", action="store_true", help=argparse.SUPPRESS)
    check.add_argument("--games", help=argparse.SUPPRESS)  # the check games, as JSON
    check.add_argument("--unsafe-no-sandbox", action="store_true",
                       help="run the checks without bubblewrap where it cannot run")
    init = sub.add_parser(
        "init", help="write a first agent file and its test, to edit",
        description="Write FILE.py, a learner (or an adversary) to edit, and test_FILE.py "
        "beside it, which runs the check suite on it under pytest. Neither is overwritten.")
    init.add_argument("file", metavar="FILE.py")
    init.add_argument("--adversary", action="store_true", help="an adversary, not a learner")
    init.add_argument("--name", metavar="CLASS", help="the class's name (default MyLearner)")
    sub.add_parser("probe", help=argparse.SUPPRESS)  # a tournament's, in its sandbox
    zygote = sub.add_parser("zygote", help=argparse.SUPPRESS)  # a loaded sandbox's fork server
    zygote.add_argument("--scratch", required=True)
    zygote.add_argument("--namespace", action="store_true")

    for kind in ("learners", "adversaries"):
        lister = sub.add_parser(kind, help=f"list the registered {kind}",
                                description=f"List the registered {kind}.")
        lister.add_argument("--json", action="store_true", help="print one JSON object")
    # argparse lists a sub-command whose help is SUPPRESS as "==SUPPRESS==" (issue 44):
    # the sandbox's own commands are left out of --help and its usage line
    hidden = {"probe", "zygote"}
    sub._choices_actions = [a for a in sub._choices_actions if a.dest not in hidden]
    sub.metavar = "{" + ",".join(c for c in sub.choices if c not in hidden) + "}"
    return parser
