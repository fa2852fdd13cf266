"""The ``littlestone`` command line.

Every sub-command has ``--help``; ``--json`` prints one JSON object on the last line of
stdout for machines to read. Bad input (an unknown class or agent, a bad parameter, a
missing or malformed file, an agent that cannot play the game) prints one line naming
the problem on stderr and exits with status 2, never a traceback. Set
``LITTLESTONE_DEBUG=1`` to see the traceback of an internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import adversaries
import learners
from games.classes import FiniteClass, HalfspaceClass, make_class
from games.errors import BudgetExceeded, LittlestoneError
from games.game import EXPERTS, GAMES, MISTAKE_BOUND, GameSpec
from games.ldim import LDIM_BUDGET, class_ldim, shattered_tree, solver_for

__all__ = ["main"]

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
    play.add_argument("--json", action="store_true", help="print one JSON object")

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
    if args.json:
        print(json.dumps(out))
    else:
        _table(out)
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
    from server.local import play

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
    result = play(game, learner, adversary, seed=args.seed)
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
    if isinstance(hclass, FiniteClass):
        try:
            out["ldim"], _ = class_ldim(hclass)
        except BudgetExceeded:
            out["ldim"] = None
    if args.game == EXPERTS:
        out["experts"] = game.n_experts
    out["seconds"] = round(seconds, 6)
    if args.json:
        print(json.dumps(out))
    else:
        _table(out)
    return 0


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


COMMANDS = {"ldim": _ldim, "play": _play, "learners": _list_agents, "adversaries": _list_agents}


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
