"""The worst a peer's one message can cost the server, by the spec family it names
(issue 25; the table of SECURITY.md, "What one message costs").

    .venv/bin/python -m benchmarks.worst_message            # every family, a few minutes
    .venv/bin/python -m benchmarks.worst_message --family thresholds --json

For each class family a peer may name (and the experts game), the largest specs the
default budgets admit (the most hypotheses, and for exact-Ldim agents the largest truth
table), and every server-side opponent that can play them, it measures what the server
does for one message of the peer, on the code paths the server takes:

- ``challenge``: the admission (:func:`littlestone.server.net.policy.admit`, in this
  process: the class built, the budgets checked) and the opponent's set-up: in its host
  process for the agents that think long or play a large class
  (:mod:`littlestone.server.net.hosts`, with the default limits: reported apart, as
  the host's), else in this process;
- a move: the opponent's answer to one message (a learner's ``predict`` and ``update``,
  an adversary's ``instance`` and ``label``, or a block of an oblivious adversary's
  ``moves``; ``weights`` and ``update_costs``, ``advice`` and ``costs`` in the experts
  game), the worst of the first :data:`MOVES`; and the referee's work for one round of
  the spec (:func:`referee_round`), in the server's process whoever plays.

CPU is the CPU clock of the thread (in this process) or of the host process that did
the work; memory is the peak of what the work allocated (tracemalloc, numpy's arrays
included) in this process, or the peak of the host's private memory (sampled every
2 ms) above what it held before. The figures are the machine's (``checks_per_second``
is printed beside them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import threading
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import FiniteClass, HalfspaceClass
from littlestone.games.errors import LittlestoneError
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.games.ldim import checks_per_second
from littlestone.learners import LEARNERS
from littlestone.learners.base import Learner
from littlestone.protocol.errors import ProtocolError
from littlestone.server.net.hosts import AgentHost, HostGone, HostLimits, MoveOverBudget, hosted
from littlestone.server.net.policy import Opponents, admit, calibrated
from littlestone.server.net.settings import Budgets

#: Moves measured per pairing (the first ones: a cold cache is the dearest).
MOVES = 3
#: The specs measured for each family: the most hypotheses (or dimension) the default
#: budgets admit, and the largest truth table an exact-Ldim agent may build.
FAMILIES: dict[str, list[str]] = {
    "thresholds": ["thresholds:n=4194303", "thresholds:n=4095"],
    "singletons": ["singletons:n=4194304", "singletons:n=4096"],
    "intervals": ["intervals:n=2895", "intervals:n=300"],
    "monotone-disjunctions": ["monotone-disjunctions:n=22", "monotone-disjunctions:n=12"],
    "k-disjunctions": ["k-disjunctions:n=65536,k=1", "k-disjunctions:n=13,k=4"],
    "conjunctions": ["conjunctions:n=13", "conjunctions:n=9"],
    "quadratic": ["quadratic:n=2000", "quadratic:n=63"],
    "halfspaces": ["halfspaces:d=4096"],
    "experts": ["experts:100000"],
}


@dataclass
class Cost:
    """The worst of one kind of message: CPU seconds and MiB, and who cost them."""

    cpu: float = 0.0
    mib: float = 0.0
    cpu_by: str = ""
    mib_by: str = ""

    def add(self, cpu: float, mib: float, who: str, mib_by: str | None = None) -> None:
        if cpu > self.cpu:
            self.cpu, self.cpu_by = cpu, who
        if mib > self.mib:
            self.mib, self.mib_by = mib, mib_by or who


@dataclass
class Family:
    """The worst of a family's messages: what the server's own process spends on a
    challenge and on a move, and what a host spends (an agent's process, bounded by
    its limits, gone with its game)."""

    name: str
    challenge: Cost = field(default_factory=Cost)
    move: Cost = field(default_factory=Cost)
    host_setup: Cost = field(default_factory=Cost)
    host_move: Cost = field(default_factory=Cost)
    refused: list[str] = field(default_factory=list)

    def costs(self) -> tuple[Cost, Cost, Cost, Cost]:
        return self.challenge, self.move, self.host_setup, self.host_move

    def merge(self, other: Family) -> None:
        """The worst of this family's costs and ``other``'s."""
        for mine, theirs in zip(self.costs(), other.costs(), strict=True):
            mine.add(theirs.cpu, theirs.mib, theirs.cpu_by, theirs.mib_by)
        self.refused.extend(other.refused)


@contextlib.contextmanager
def measured(out: list[float]) -> Iterator[None]:
    """The block's CPU seconds (this thread) and peak MiB allocated (tracemalloc)."""
    tracemalloc.start()
    started = time.thread_time()
    try:
        yield
    finally:
        cpu = time.thread_time() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[:] = [cpu, peak / 2**20]


def private_mib(pid: int) -> float:
    """A process's private memory (what it alone holds: not the pages it shares with the
    fork server it came from), in MiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            return sum(int(line.split()[1]) for line in rollup
                       if line.startswith(("Private_Clean:", "Private_Dirty:"))) / 1024
    except (OSError, ValueError):
        return 0.0


@contextlib.contextmanager
def peak_private(pid: int, out: list[float]) -> Iterator[None]:
    """The peak of a host's private memory while the block runs (sampled every 2 ms)."""
    done = threading.Event()
    peak = [private_mib(pid)]

    def sample() -> None:
        while not done.wait(0.002):
            peak[0] = max(peak[0], private_mib(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield
    finally:
        done.set()
        sampler.join()
        out[:] = [max(peak[0], private_mib(pid))]


def rules_of(spec: str) -> dict[str, Any]:
    if spec.startswith("experts:"):
        return {"game": EXPERTS, "class": None, "experts": int(spec.split(":")[1]),
                "rounds": 1000}
    return {"game": MISTAKE_BOUND, "class": spec, "rounds": 1000}


def inputs(game: GameSpec, rng: np.random.Generator) -> Iterator[Any]:
    """Instances (or advice vectors) a peer might send."""
    hclass = game.hclass
    while True:
        if isinstance(hclass, HalfspaceClass):
            v = rng.normal(size=hclass.d)
            yield v / np.linalg.norm(v)
        elif isinstance(hclass, FiniteClass):
            yield int(rng.integers(min(hclass.domain_size, 1 << 62)))
        else:
            yield rng.random(game.n_experts)


def moves_of(agent: Any, game: GameSpec, x: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """The calls one peer's message makes of the opponent."""
    if isinstance(agent, Learner):
        if game.game == EXPERTS:
            advice = x if game.hclass is None else None
            costs = np.full(game.n_experts, 0.5)
            return [("weights", (advice,)), ("update_costs", (costs, None))]
        return [("predict", (x,)), ("update", (x, 0))]
    if getattr(agent, "oblivious", False) and game.game == MISTAKE_BOUND:
        return [("moves", (256,))]
    if game.game == EXPERTS:
        w = np.full(game.n_experts, 1.0 / game.n_experts)
        return [("advice", ()), ("costs", (w,))]
    return [("instance", ()), ("label", (x, 0.5))]


def measure(family: Family, spec: str, opponent: str, registry: Any, budgets: Budgets,
            limits: HostLimits, seconds: float, by_agent: Family | None = None) -> None:
    """The costs of ``opponent`` on ``spec``, added to its class family's and to its own
    (``by_agent``: the worst of an agent family over every class)."""
    who = f"{opponent} on {spec}"
    if by_agent is not None:
        part = Family(family.name)
        measure(part, spec, opponent, registry, budgets, limits, seconds)
        family.merge(part)
        by_agent.merge(part)
        return
    out: list[float] = []
    try:
        with measured(out):
            game, agent = admit(rules_of(spec), opponent, registry, budgets, Opponents())
    except ProtocolError as exc:
        family.refused.append(f"{who}: {exc.code.value}")
        return
    admission_cpu, admission_mib = out
    assert agent is not None
    rng = np.random.default_rng(0)
    xs = inputs(game, rng)
    if hosted(agent, game):
        host = AgentHost.open(limits)
        try:
            base = private_mib(host.pid)
            peak: list[float] = []
            family.challenge.add(admission_cpu, admission_mib, who)
            try:
                with peak_private(host.pid, peak):
                    proxy = asyncio.run(host.set_up(agent, game, 1))
            except (MoveOverBudget, LittlestoneError, HostGone) as exc:
                family.host_setup.add(host.setup_cpu, max(0.0, peak[0] - base), who)
                family.refused.append(f"{who}: set-up refused ({type(exc).__name__})")
                return
            family.host_setup.add(host.setup_cpu, peak[0] - base, who)
            held = private_mib(host.pid)
            for _ in range(MOVES):
                before = host.moves_cpu
                x = next(xs)
                with peak_private(host.pid, peak):
                    for name, args in moves_of(proxy, game, x):
                        with contextlib.suppress(MoveOverBudget, LittlestoneError):
                            getattr(proxy, name)(*args)
                if not host.alive:
                    break
                family.host_move.add(host.moves_cpu - before, max(0.0, peak[0] - held), who)
                held = private_mib(host.pid)
        finally:
            host.kill()
        return
    try:
        with measured(out):
            agent.start(game, 1)
    except LittlestoneError as exc:
        family.refused.append(f"{who}: {exc}")
        return
    family.challenge.add(admission_cpu + out[0], admission_mib + out[1], who)
    started = time.monotonic()
    for _ in range(MOVES):
        x = next(xs)
        try:
            with measured(out):
                for name, args in moves_of(agent, game, x):
                    getattr(agent, name)(*args)
        except (LittlestoneError, NotImplementedError, ValueError):
            break
        family.move.add(out[0], out[1], who)
        if time.monotonic() - started > seconds:
            break


def referee_round(family: Family, spec: str, budgets: Budgets) -> None:
    """The referee's work for one round (the instance checked, the prediction scored,
    the version space cut by the label; in the experts game the weights checked and the
    costs scored), in the server's process: the worst of :data:`MOVES` rounds."""
    from littlestone.games.experts import ExpertsReferee
    from littlestone.games.game import game_seeds
    from littlestone.games.mistake_bound import MistakeBoundReferee
    from littlestone.local import history_for
    from littlestone.server.net.policy import admit_rules

    game = admit_rules(rules_of(spec), budgets)
    coin = game_seeds(0).referee
    rng = np.random.default_rng(0)
    xs = inputs(game, rng)
    out: list[float] = []
    if game.game == EXPERTS:
        experts = ExpertsReferee(game.n_experts, game.rounds, coin)
        for _ in range(MOVES):
            with measured(out):
                experts.weights(np.full(game.n_experts, 1.0 / game.n_experts))
                experts.costs(next(xs))
            family.move.add(out[0], out[1], f"the referee on {spec}")
        return
    assert game.hclass is not None
    referee = MistakeBoundReferee(game.hclass, game.rounds, coin, history=history_for(game))
    for _ in range(MOVES):
        x = next(xs)
        with measured(out):
            referee.instance(x)
            referee.prediction(0.5)
            referee.label(0)
        family.move.add(out[0], out[1], f"the referee on {spec}")


#: Specs of a served agent measured beside its plain name: a wrapper is as dear as what
#: it wraps (``conservative:of=soa`` plays SOA, held to the same budgets).
VARIANTS: dict[str, list[str]] = {"conservative": ["conservative:of=soa"]}


def opponents_for(spec: str) -> list[tuple[str, str, Any]]:
    """The server's agents that may play ``spec``'s game: (agent family, spec, registry)."""
    served = Opponents()
    game = EXPERTS if spec.startswith("experts:") else MISTAKE_BOUND
    pairs = []
    for registry in (LEARNERS, ADVERSARIES):
        for name in served.names(registry):
            if game in registry[name].games:
                for named in [name, *VARIANTS.get(name, [])]:
                    pairs.append((name, named, registry))
    return pairs


def run(families: list[str], seconds: float,
        agents: dict[str, Family] | None = None) -> list[Family]:
    """The worst costs of each class family in ``families`` (and of each agent family,
    over those classes, into ``agents``)."""
    budgets = calibrated(Budgets())
    limits = HostLimits(budgets.setup_cpu_s, budgets.move_cpu_s,
                        budgets.game_memory_mb << 20, budgets.solver_memory_mb << 20,
                        budgets.game_cpu_s)
    agents = {} if agents is None else agents
    out = []
    for name in families:
        family = Family(name)
        for spec in FAMILIES[name]:
            referee_round(family, spec, budgets)
            for agent_family, opponent, registry in opponents_for(spec):
                by_agent = agents.setdefault(agent_family, Family(agent_family))
                measure(family, spec, opponent, registry, budgets, limits, seconds, by_agent)
        out.append(family)
        print(f"{name}: " + "; ".join(
            f"{what} {cost.cpu:.3f} s ({cost.cpu_by}), {cost.mib:.1f} MiB ({cost.mib_by})"
            for what, cost in (("challenge", family.challenge), ("move", family.move),
                               ("host set-up", family.host_setup),
                               ("host move", family.host_move))), flush=True)
    return out


def hosting_cost(games: int = 20, moves: int = 2000) -> dict[str, float]:
    """What playing an agent in a host of its own costs, against playing it in the
    server's process: a host's start (fork and set-up) per game, and per move the wall
    time and the CPU of both processes, for a cheap move (SOA on ``thresholds:n=255``
    once its cache is warm: ``predict`` and ``update``), awaited as the server's driver
    awaits it."""
    from littlestone.games.classes import make_class

    limits = HostLimits(5.0, 2.0, 256 << 20, 64 << 20)
    game = GameSpec(MISTAKE_BOUND, moves, make_class("thresholds:n=255"))
    agent = LEARNERS.make("soa")
    AgentHost.open(limits).kill()  # (the fork server, started)

    async def start_games() -> tuple[float, float, float]:
        wall, cpu, host_cpu = 0.0, 0.0, 0.0
        for _ in range(games):
            started, before = time.perf_counter(), time.process_time()
            host = AgentHost.open(limits)
            await host.set_up(agent, game, 1)
            wall += time.perf_counter() - started
            cpu += time.process_time() - before
            host_cpu += host.setup_cpu
            host.kill()
        return wall / games, cpu / games, host_cpu / games

    async def hosted_moves() -> tuple[float, float, float]:
        host = AgentHost.open(limits)
        await host.set_up(agent, game, 1)
        xs = np.random.default_rng(0).integers(255, size=moves)
        for x in xs[:50]:  # (warm)
            await host.move_async("predict", int(x))
        spent = host.moves_cpu
        started, before = time.perf_counter(), time.process_time()
        for x in xs:
            await host.move_async("predict", int(x))
            await host.move_async("update", int(x), 0)
        wall = time.perf_counter() - started
        cpu = time.process_time() - before
        host.kill()
        return wall / moves, cpu / moves, (host.moves_cpu - spent) / moves

    local = LEARNERS.make("soa")
    local.start(game, 1)
    xs = np.random.default_rng(0).integers(255, size=moves)
    for x in xs[:50]:
        local.predict(int(x))
    started = time.thread_time()
    for x in xs:
        local.predict(int(x))
        local.update(int(x), 0)
    in_process = (time.thread_time() - started) / moves
    start_wall, start_cpu, start_host = asyncio.run(start_games())
    move_wall, move_cpu, move_host = asyncio.run(hosted_moves())
    return {"host_start_wall_ms": 1e3 * start_wall, "host_start_server_cpu_ms": 1e3 * start_cpu,
            "host_start_host_cpu_ms": 1e3 * start_host,
            "move_in_process_us": 1e6 * in_process, "move_hosted_wall_us": 1e6 * move_wall,
            "move_hosted_server_cpu_us": 1e6 * move_cpu, "move_hosted_host_cpu_us": 1e6 * move_host}


def compact(families: list[Family], by_agent: list[Family]) -> str:
    """The two tables of SECURITY.md: CPU seconds / MiB only, the server's process
    (the worst of a challenge and a move) beside an agent's host (of its set-up and a
    move), and for a class family who cost the most."""
    def cell(*costs: Cost) -> str:
        cpu, mib = max(c.cpu for c in costs), max(c.mib for c in costs)
        return f"{cpu:.2f} s / {mib:.0f} MiB" if cpu or mib else "-"

    def who(*costs: Cost) -> str:
        worst = max(costs, key=lambda c: c.cpu)
        return worst.cpu_by or "-"

    lines = ["| class family | server: a challenge | server: a move | host: set-up | "
             "host: a move | dearest server message (CPU) |", "|---|---|---|---|---|---|"]
    for f in families:
        lines.append(f"| {f.name} | {cell(f.challenge)} | {cell(f.move)} | "
                     f"{cell(f.host_setup)} | {cell(f.host_move)} | "
                     f"{who(f.challenge, f.move)} |")
    lines += ["", "| agent family | server: a challenge or a move | host: set-up or a move |",
              "|---|---|---|"]
    for f in by_agent:
        lines.append(f"| `{f.name}` | {cell(f.challenge, f.move)} | "
                     f"{cell(f.host_setup, f.host_move)} |")
    return "\n".join(lines)


def tables(families: list[Family], by_agent: list[Family]) -> str:
    """The two markdown tables: by class family, by agent family."""
    lines = []
    for title, rows in (("class family", families), ("agent family", by_agent)):
        lines += [f"\n| {title} | server: challenge | server: move | host: set-up | "
                  "host: move |", "|---|---|---|---|---|"]
        for f in rows:
            lines.append(f"| {f.name} | " + " | ".join(
                f"{c.cpu:.3f} s ({c.cpu_by}), {c.mib:.0f} MiB ({c.mib_by})"
                if c.cpu_by or c.mib_by else "-" for c in f.costs()) + " |")
    refused = sorted({r for f in by_agent for r in f.refused})
    if refused:
        lines.append("\nrefused at admission or set-up: " + "; ".join(refused))
    return "\n".join(lines)


def from_json(paths: list[str]) -> tuple[list[Family], list[Family]]:
    """Families from the ``--json`` output of runs over parts of :data:`FAMILIES` (run
    at once), merged: an agent family's worst over every run."""
    families: list[Family] = []
    agents: dict[str, Family] = {}
    for path in paths:
        with open(path) as lines:
            last = [line for line in lines if line.startswith("[")][-1]
        for row in json.loads(last):
            family = Family(row["family"], Cost(**row["challenge"]), Cost(**row["move"]),
                            Cost(**row["host_setup"]), Cost(**row["host_move"]),
                            row["refused"])
            if family.name in FAMILIES:
                families.append(family)
            else:
                agents.setdefault(family.name, Family(family.name)).merge(family)
    order = list(FAMILIES)
    families.sort(key=lambda f: order.index(f.name))
    return families, [agents[name] for name in sorted(agents)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES))
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="wall seconds of moves per in-process pairing at most")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--hosting", action="store_true",
                        help="only what a host costs against the server's own process")
    parser.add_argument("--tables", nargs="+", metavar="JSON_OUTPUT",
                        help="only the tables, from the --json output of runs (merged)")
    parser.add_argument("--compact", action="store_true",
                        help="with --tables: SECURITY.md's tables (numbers only)")
    args = parser.parse_args()
    if args.tables:
        print((compact if args.compact else tables)(*from_json(args.tables)))
        return
    if args.hosting:
        for key, value in hosting_cost().items():
            print(f"{key}: {value:.1f}")
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    print(f"exact Ldim here: {checks_per_second():.3g} instance checks a CPU second; "
          f"defaults: {Budgets.setup_cpu_s:g} s a set-up, {Budgets.move_cpu_s:g} s a move, "
          f"{Budgets.game_memory_mb} MiB a game", flush=True)
    agents: dict[str, Family] = {}
    families = run(args.family or list(FAMILIES), args.seconds, agents)
    by_agent = [agents[name] for name in sorted(agents)]
    if args.json:
        print(json.dumps([{"family": f.name, "challenge": vars(f.challenge),
                           "move": vars(f.move), "host_setup": vars(f.host_setup),
                           "host_move": vars(f.host_move), "refused": f.refused}
                          for f in families + by_agent]))
        return
    print(tables(families, by_agent))


if __name__ == "__main__":
    main()
