"""Commands that run in this process: ``ldim``, ``play``, ``learners``, ``adversaries``."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

from littlestone import adversaries, learners
from littlestone.cli.common import emit, game_output, writable
from littlestone.games.classes import FiniteClass, HalfspaceClass, make_class
from littlestone.games.errors import BudgetExceeded, UsageError
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec, PlayedFields
from littlestone.games.ldim import (
    LdimProgress,
    class_ldim,
    shattered_tree,
    solver_for,
    too_large,
)
from littlestone.games.randomized import LDIM_EXTRAS_BUDGET, class_randomized_value
from littlestone.games.vcdim import class_vcdim
from littlestone.server.records.logged import play_logged

__all__ = ["ldim", "list_agents", "play"]

def ldim(args: argparse.Namespace) -> int:
    hclass = make_class(args.hclass)
    if isinstance(hclass, HalfspaceClass):
        raise UsageError(
            f"ldim: {hclass.spec} is an infinite class; its Ldim is not computed "
            "(the Perceptron bound caps it at floor(1/margin^2))"
        )
    assert isinstance(hclass, FiniteClass)
    if args.tree:
        writable(args.tree, "ldim: --tree")
    started = time.perf_counter()
    with _LdimProgressLine(hclass, started):
        value, method = class_ldim(hclass, budget=args.budget)
    seconds = time.perf_counter() - started
    if args.tree:
        if method != "exact":
            raise UsageError(f"ldim: {hclass.spec} is too large to build its shattered tree")
        _write_tree(hclass, args.tree)
    out = {"class": hclass.spec, "size": hclass.size, "domain_size": hclass.domain_size,
           "ldim": value, "seconds": round(seconds, 6), "method": method}
    out.update(_beside_ldim(hclass))
    if args.tree:
        out["tree"] = args.tree
    emit(out, args.json)
    return 0


class _LdimProgressLine:
    """Progress of a long exact-Ldim computation on stderr: after
    :data:`PROGRESS_AFTER_S`, the share of the budget spent and when, at this rate, it
    runs out; a line rewritten in place on a terminal, a line every
    :data:`PROGRESS_EVERY_S` otherwise (a log then gets a few lines, not hundreds)."""

    def __init__(self, hclass: FiniteClass, started: float) -> None:
        self.hclass, self.started, self.shown = hclass, started, 0.0
        self.tty = sys.stderr.isatty()
        self.solver: Any = None

    def __enter__(self) -> _LdimProgressLine:
        if too_large(self.hclass) is None:
            self.solver = solver_for(self.hclass)
            self.solver.progress = self
        return self

    def __call__(self, progress: LdimProgress) -> None:
        now = time.perf_counter()
        elapsed = now - self.started
        if elapsed < PROGRESS_AFTER_S or (not self.tty and now - self.shown < PROGRESS_EVERY_S):
            return
        self.shown = now
        share = progress.spent / max(progress.budget, 1)
        left = elapsed * (1 - share) / max(share, 1e-9)
        line = (f"ldim {self.hclass.spec}: {elapsed:.0f} s, {share:.1%} of the budget of "
                f"{progress.budget} instance checks ({progress.cached} version spaces "
                f"cached); the budget runs out in at most ~{left:.0f} s (--budget N: less)")
        print(("\r\033[K" if self.tty else "") + line, end="" if self.tty else "\n",
              file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self.solver is not None:
            self.solver.progress = None
        if self.tty and self.shown:
            print(file=sys.stderr)


#: Seconds of exact Ldim before its progress is shown, and between two lines off a
#: terminal.
PROGRESS_AFTER_S, PROGRESS_EVERY_S = 2.0, 10.0


class BesideLdim(TypedDict):
    """What ``littlestone ldim`` prints beside Ldim(H): VCdim(H) and how it was found,
    the randomised value v(H) as a float and exactly (None: beyond its budget)."""

    vcdim: int | None
    vcdim_method: str | None
    randomized_value: float | None
    randomized_value_exact: str | None


class AgentParameter(TypedDict):
    """A parameter of an agent, as ``littlestone learners --json`` lists it."""

    name: str
    type: str
    default: Any  # (the parameter's own default: any value its type takes)


class AgentRow(TypedDict):
    """An agent as ``littlestone learners`` / ``adversaries`` lists it."""

    id: str
    games: list[str]
    deterministic: bool
    parameters: list[AgentParameter]
    description: str


def _beside_ldim(hclass: FiniteClass) -> BesideLdim:
    """VCdim(H) (<= Ldim(H), UML Thm 21.9) and the randomised value v(H) (the minimax
    expected mistakes, games.randomized), each ``None`` beyond its budget."""
    out: BesideLdim = {"vcdim": None, "vcdim_method": None, "randomized_value": None,
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
    if args.tree:
        writable(args.tree, "play: --tree")
    started = time.perf_counter()
    done = play_logged(game, learner, adversary, args.seed, Path(args.data),
                       learner_spec=args.learner, adversary_spec=args.adversary,
                       level=args.log)
    result = done.result
    seconds = time.perf_counter() - started
    if args.tree and played_tree is not None:
        _write_graph(played_tree(), args.tree)
    out: PlayedFields = {
        "game": args.game, "learner": learner.spec, "adversary": adversary.spec,
        "class": hclass.spec if hclass is not None else None, "horizon": args.rounds,
        "seed": args.seed,
    }
    scores = result.to_dict()
    scores.pop("game")
    out = {**out, **scores}
    out["game_id"], out["log"] = done.game_id, None if done.log is None else str(done.log)
    out["seconds"] = round(seconds, 6)
    emit(game_output(out, hclass, game.n_experts if args.game == EXPERTS else None),
         args.json)
    return 0 if result.complete else 1  # (a crash or a forfeit: scripts and CI see it)


def list_agents(args: argparse.Namespace) -> int:
    registry = learners.LEARNERS if args.command == "learners" else adversaries.ADVERSARIES
    rows: list[AgentRow] = []
    for agent_id in registry.ids():
        cls = registry[agent_id]
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
