"""Commands that run in this process: ``ldim``, ``play``, ``learners``, ``adversaries``."""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path
from typing import Any

from littlestone import adversaries, learners
from littlestone.games.classes import FiniteClass, HalfspaceClass, make_class
from littlestone.games.errors import BudgetExceeded
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import class_ldim, shattered_tree, solver_for, too_large
from littlestone.games.randomized import class_randomized_value
from littlestone.games.vcdim import class_vcdim
from littlestone.server.cli.common import UsageError, class_keys, emit
from littlestone.server.records.logged import play_logged

__all__ = ["ldim", "list_agents", "play"]

#: Instance checks `ldim` spends on the randomised value before printing null.
LDIM_EXTRAS_BUDGET = 1_600_000


def ldim(args: argparse.Namespace) -> int:
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
    out.update(_beside_ldim(hclass))
    if args.tree:
        out["tree"] = args.tree
    emit(out, args.json)
    return 0


def _beside_ldim(hclass: FiniteClass) -> dict[str, Any]:
    """VCdim(H) (<= Ldim(H), UML Thm 21.9) and the randomised value v(H) (the minimax
    expected mistakes, games.randomized), each ``None`` beyond its budget."""
    out: dict[str, Any] = {"vcdim": None, "vcdim_method": None, "randomized_value": None,
                           "randomized_value_exact": None}
    with contextlib.suppress(BudgetExceeded):
        out["vcdim"], out["vcdim_method"] = class_vcdim(hclass)
    if too_large(hclass) is None:
        try:
            value = class_randomized_value(hclass, budget=LDIM_EXTRAS_BUDGET)
            out["randomized_value"], out["randomized_value_exact"] = float(value), str(value)
        except BudgetExceeded:
            pass
    return out


def _write_tree(hclass: FiniteClass, path: str) -> None:
    _write_graph(shattered_tree(solver_for(hclass), hclass), path)


def _write_graph(graph: Any, path: str) -> None:
    import networkx as nx

    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        nx.write_graphml(graph, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path!r}: {exc.strerror}") from None


def play(args: argparse.Namespace) -> int:
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
    out.update(class_keys(hclass))
    if args.game == EXPERTS:
        out["experts"] = game.n_experts
    out["game_id"], out["log"] = done.game_id, str(done.log)
    out["seconds"] = round(seconds, 6)
    emit(out, args.json)
    return 0


def list_agents(args: argparse.Namespace) -> int:
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
