"""Side-by-side benchmarks: each figure next to a baseline measured in the same run.

Run with ``make bench`` (or ``python -m benchmarks.run [--quick]``). Machines here are
noisy: read the ratios, not the absolute times. Each timing is the best of ``repeat``
runs. Results are recorded in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks import ldim_issue18
from benchmarks.experts_round import RandomCostsAdversary, bench_experts_round
from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import FiniteClass, HalfspaceClass, MatrixClass, make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec, game_seeds
from littlestone.games.ldim import LdimSolver, solver_for
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.server.records.logged import play_logged


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    """The shortest wall time of ``repeat`` runs, and the last run's value."""
    best, value = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        value = run()
        best = min(best, time.perf_counter() - started)
    return best, value


def plain_memoised_ldim(matrix: np.ndarray) -> int:
    """The baseline: docs/theory.md's recursion memoised on the version-space bitset, instances
    in their natural order, with only the two cheap prunings (stop at the ceiling
    floor(log2 |V|); skip x when 1 + floor(log2 min(|V0|, |V1|)) cannot beat the best).
    No balanced-first order, no capped solves, no collapsing of equivalent splits."""
    packed = np.packbits(matrix, axis=0, bitorder="little")
    columns = [int.from_bytes(packed[:, x].tobytes(), "little") for x in range(matrix.shape[1])]
    memo: dict[int, int] = {}

    def solve(v: int) -> int:
        if v in memo:
            return memo[v]
        ceiling = v.bit_count().bit_length() - 1
        best = 0
        for column in columns:
            one = v & column
            if one and one != v:
                zero = v ^ one
                if min(one.bit_count(), zero.bit_count()).bit_length() <= best:
                    continue
                best = max(best, 1 + min(solve(one), solve(zero)))
                if best == ceiling:
                    break
        memo[v] = best
        return best

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        return solve((1 << matrix.shape[0]) - 1)
    finally:
        sys.setrecursionlimit(limit)


def _matrix(spec: str) -> np.ndarray:
    hclass = make_class(spec)
    assert isinstance(hclass, FiniteClass)
    return hclass.matrix()


def cpu_best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    """The least CPU time of ``repeat`` runs (this process's, ``time.process_time``:
    the machine is shared, and the time other processes hold its cores is not ours),
    and the last run's value."""
    best, value = float("inf"), None
    for _ in range(repeat):
        started = time.process_time()
        value = run()
        best = min(best, time.process_time() - started)
    return best, value


def bench_ldim_frontier(quick: bool) -> list[tuple[str, float, float, str]]:
    """Exact Ldim at the frontier (issues 18 and 32): intervals and a random 65536 x 24
    matrix, in CPU seconds, next to the solver as issue 18 left it
    (``benchmarks/ldim_issue18.py``), each run with a fresh cache; with the instance
    checks a CPU second of ours (the unit of ``LDIM_BUDGET``)."""
    repeat = 1 if quick else 2
    rows = []
    cases: list[tuple[str, np.ndarray, bool]] = [
        ("random 65536x24 (seed 0)",
         np.random.default_rng(0).integers(0, 2, size=(65536, 24)).astype(bool), True),
        ("intervals:n=128", _matrix("intervals:n=128"), True),
        ("intervals:n=200", _matrix("intervals:n=200"), True),
        ("intervals:n=300", _matrix("intervals:n=300"), not quick),
    ]
    for name, matrix, with_baseline in cases:
        ours, solver = cpu_best_of(repeat, functools.partial(_fresh_solver, matrix))
        value = solver.ldim()
        base = float("nan")
        if with_baseline:
            base, expected = cpu_best_of(repeat, functools.partial(_issue18_ldim, matrix))
            assert value == expected, (name, value, expected)
        checks = solver.spent
        rows.append((f"exact Ldim, {name} (Ldim {value}), CPU s\n"
                     f"    vs the solver of issue 18; {checks / ours / 1e6:.2f}M instance checks"
                     " a CPU second", ours, base, "s"))
    return rows


def _fresh_solver(matrix: np.ndarray) -> LdimSolver:
    solver = LdimSolver(matrix)  # a fresh solver: no cache from an earlier run
    solver.ldim()
    return solver


def _issue18_ldim(matrix: np.ndarray) -> int:
    return ldim_issue18.LdimSolver(matrix).ldim()


def _solver_ldim(matrix: np.ndarray) -> int:
    return LdimSolver(matrix).ldim()  # a fresh solver: no cache from an earlier run


def bench_ldim(repeat: int) -> list[tuple[str, float, float, str]]:
    rows = []
    cases = [
        ("thresholds:n=1023", make_class("thresholds:n=1023")),
        ("random 4096x20 (seed 0)", None),
    ]
    for name, hclass in cases:
        if isinstance(hclass, FiniteClass):
            matrix = hclass.matrix()
        else:
            matrix = np.random.default_rng(0).integers(0, 2, size=(4096, 20)).astype(bool)
        ours, value = cpu_best_of(repeat, functools.partial(_solver_ldim, matrix))
        base, expected = cpu_best_of(1, functools.partial(plain_memoised_ldim, matrix))
        assert value == expected, (name, value, expected)
        rows.append((f"exact Ldim, {name} (Ldim {value}), CPU s", ours, base, "s"))
    return rows


def bare_perceptron(xs: np.ndarray, ys: list[int]) -> int:
    """The baseline loop: Perceptron over a stream, no referee, no agents."""
    w = np.zeros(xs.shape[1])
    mistakes = 0
    for x, y in zip(xs, ys, strict=True):
        if (float(w @ x) > 0.0) != (y == 1):
            if y:
                w += x
            else:
                w -= x
            mistakes += 1
    return mistakes


def bench_perceptron(rounds: int, repeat: int) -> list[tuple[str, float, float, str]]:
    hclass = make_class("halfspaces:d=100,margin=0.1")
    assert isinstance(hclass, HalfspaceClass)
    game = GameSpec(MISTAKE_BOUND, rounds, hclass)

    def local_game() -> float:
        learner, adversary = LEARNERS.make("perceptron"), ADVERSARIES.make("random-target")
        return play(game, learner, adversary, 0).mistakes

    def draw_stream() -> tuple[np.ndarray, list[int]]:
        """The random-target adversary's stream for seed 0, drawn as it draws it."""
        adversary = ADVERSARIES.make("random-target")
        adversary.start(game, game_seeds(0).adversary)
        xs: list[np.ndarray] = []
        ys: list[list[int]] = []
        while (drawn := sum(len(y) for y in ys)) < rounds:
            block = adversary.moves(rounds - drawn)
            assert block is not None
            xs.append(np.asarray(block[0]))
            ys.append(block[1])
        return np.vstack(xs), [y for part in ys for y in part]

    def logged_game(data: Path) -> float:
        learner, adversary = LEARNERS.make("perceptron"), ADVERSARIES.make("random-target")
        return play_logged(game, learner, adversary, 0, data).result.mistakes

    xs, ys = draw_stream()
    ours, mistakes = best_of(repeat, local_game)
    with tempfile.TemporaryDirectory() as data:  # made and removed outside the timings
        logged, logged_mistakes = best_of(repeat, functools.partial(logged_game, Path(data)))
    assert logged_mistakes == mistakes
    loop_only, bare_mistakes = best_of(repeat, lambda: bare_perceptron(xs, ys))
    with_draw, _ = best_of(repeat, lambda: bare_perceptron(*draw_stream()))
    assert mistakes == bare_mistakes, (mistakes, bare_mistakes)
    name = f"local game, perceptron vs random-target, halfspaces:d=100, {rounds} rounds"
    return [
        (f"{name}\n    vs bare loop drawing the same stream", rounds / ours, rounds / with_draw,
         "rounds/s"),
        (f"{name}\n    vs bare loop over the pre-drawn stream", rounds / ours, rounds / loop_only,
         "rounds/s"),
        (f"{name}, logged\n    vs bare loop drawing the same stream", rounds / logged,
         rounds / with_draw, "rounds/s"),
        (f"{name}, logged\n    vs the same game unlogged", rounds / logged, rounds / ours,
         "rounds/s"),
    ]


def bench_halving(rounds: int, repeat: int) -> list[tuple[str, float, float, str]]:
    hclass = make_class("monotone-disjunctions:n=20")
    game = GameSpec(MISTAKE_BOUND, rounds, hclass)
    assert isinstance(hclass, FiniteClass)
    masks = hclass._arrays[0]

    def local_game() -> float:
        return play(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 0).mistakes

    def one_vote_pass() -> None:
        """The baseline: one bare numpy pass over all 2^20 hypotheses per round."""
        x = 0b1011_0110_0001_1000_0101
        for _ in range(rounds):
            np.count_nonzero((masks & x) != 0)

    ours, _ = best_of(repeat, local_game)
    base, _ = best_of(repeat, one_vote_pass)
    return [(f"local game, halving vs random-target, monotone-disjunctions:n=20, {rounds} rounds"
             "\n    vs one bare numpy vote over all 2^20 hypotheses per round",
             rounds / ours, rounds / base, "rounds/s")]


def bench_hedge(rounds: int, repeat: int) -> list[tuple[str, float, float, str]]:
    d = 100_000
    costs = np.random.default_rng(0).random((64, d))

    def learner_alone() -> None:
        hedge = LEARNERS.make("hedge")
        hedge.start(GameSpec(EXPERTS, rounds, experts=d), 0)
        for t in range(rounds):
            hedge.weights(None)
            hedge.update_costs(costs[t % 64], None)

    def bare_hedge() -> None:
        """The baseline: exp-weights, normalise, expected loss, update; no referee.
        BLAS on one thread, as the local driver plays an experts game (OpenBLAS's pool
        costs a 10^5-long product more than it saves on this machine)."""
        eta = np.sqrt(2 * np.log(d) / rounds)
        scores = np.zeros(d)
        with threadpool_limits(1, user_api="blas"):
            for t in range(rounds):
                w = np.exp(scores - scores.max())
                w /= w.sum()
                float(w @ costs[t % 64])
                scores -= eta * costs[t % 64]

    def local_game() -> None:
        play(GameSpec(EXPERTS, rounds, experts=d), LEARNERS.make("hedge"), RandomCostsAdversary(),
             0)

    ours, _ = best_of(repeat, learner_alone)
    game, _ = best_of(repeat, local_game)
    base, _ = best_of(repeat, bare_hedge)
    name = f"hedge, 10^5 experts, {rounds} rounds"
    return [
        (f"{name}: the learner alone\n    vs a bare numpy Hedge loop", rounds / ours,
         rounds / base, "rounds/s"),
        (f"{name}: local game with the referee\n    vs a bare numpy Hedge loop", rounds / game,
         rounds / base, "rounds/s"),
    ]


def bench_versus_river(rounds: int, repeat: int) -> list[tuple[str, float, float, str]]:
    """Perceptron and Winnow with d = 1000, each next to River's Perceptron (through the
    River adapter) in the same local game: same class, same seed, same stream."""
    rows = []
    for learner, spec in (("perceptron", "halfspaces:d=1000,margin=0.05"),
                          ("winnow", "k-disjunctions:n=1000,k=1")):
        game = GameSpec(MISTAKE_BOUND, rounds, make_class(spec))

        def run(name: str, game: GameSpec = game) -> None:
            play(game, LEARNERS.make(name), ADVERSARIES.make("random-target"), 0)

        ours, _ = best_of(repeat, functools.partial(run, learner))
        river, _ = best_of(1, functools.partial(run, "river:linear_model.Perceptron"))
        rows.append((f"local game, {learner}, {spec}, {rounds} rounds\n"
                     "    vs River's linear_model.Perceptron through the river adapter",
                     rounds / ours, rounds / river, "rounds/s"))
    return rows


def bench_shattered_tree(repeat: int) -> list[tuple[str, float, float, str]]:
    """Seconds per round of shattered-tree against SOA, both on one shared Ldim solver,
    next to the class's exact Ldim computed from scratch (the cold cache) in the same run."""
    rows = []
    rng = np.random.default_rng(0)
    cases = [("thresholds:n=4095", make_class("thresholds:n=4095")),
             ("random 2048x24 (seed 0)",
              MatrixClass(rng.integers(0, 2, size=(2048, 24)), spec="matrix:random-2048x24"))]
    for name, hclass in cases:
        assert isinstance(hclass, FiniteClass)
        cold, ldim = best_of(1, functools.partial(_solver_ldim, hclass.matrix()))
        rounds = ldim + 20
        game = GameSpec(MISTAKE_BOUND, rounds, hclass)
        solver = solver_for(hclass)
        solver.ldim()
        hits, lookups = solver.hits, solver.lookups

        def run(game: GameSpec = game) -> float:
            return play(game, LEARNERS.make("soa"), ADVERSARIES.make("shattered-tree"), 0).mistakes

        seconds, mistakes = best_of(repeat, run)
        assert mistakes == ldim, (mistakes, ldim)
        rate = (solver.hits - hits) / max(solver.lookups - lookups, 1)
        rows.append((f"shattered-tree vs soa, {name}: s/round ({rounds} rounds, Ldim {ldim}, "
                     f"cache hit rate {rate:.0%})\n    vs the class's exact Ldim from a cold cache",
                     seconds / rounds, cold, "s"))
    return rows


MEMORY_SCRIPT = """
import sys, tempfile
from pathlib import Path
from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.game import GameSpec
from littlestone.learners import LEARNERS
from littlestone.server.records.logged import play_logged
rounds, spec, learner = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with tempfile.TemporaryDirectory() as data:
    game = GameSpec("mistake-bound", rounds, make_class(spec))
    done = play_logged(game, LEARNERS.make(learner), ADVERSARIES.make("random-target"), 0,
                       Path(data))
    size = done.log.stat().st_size
# VmHWM, the peak RSS of this process image (ru_maxrss would carry the parent's across exec)
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(int(peak.split()[1]), size)
"""


def bench_log_memory() -> list[tuple[str, float, float, str]]:
    """Peak RSS of a logged 10^6-round game next to a 10^5-round one (flat memory), and
    the log's bytes per round."""
    rows = []
    for spec, learner, big in (("thresholds:n=1023", "halving", 1_000_000),
                               ("halfspaces:d=100,margin=0.1", "perceptron", 200_000)):
        measured = {}
        for rounds in (big // 10, big):
            out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, str(rounds), spec, learner],
                                 capture_output=True, text=True, check=True).stdout.split()
            measured[rounds] = (int(out[0]) / 1024, int(out[1]) / rounds)
        rows.append((f"logged game, {learner}, {spec}: peak RSS MiB, {big} rounds\n"
                     f"    vs {big // 10} rounds; log: {measured[big][1]:.1f} bytes per round",
                     measured[big][0], measured[big // 10][0], "MiB"))
    return rows


PING_PONG_SERVER = """
import asyncio, sys
import msgpack
from websockets.asyncio.server import serve

async def echo(ws):
    async for frame in ws:  # one binary frame each way per round: the stack's limit
        message = msgpack.unpackb(frame)
        await ws.send(msgpack.packb({"type": "predict", "t": message.get("t", 0), "p": 0.0}))

async def main():
    async with serve(echo, "127.0.0.1", 0, compression=None, ping_interval=None,
                     max_size=None) as server:
        print(list(server.sockets)[0].getsockname()[1], flush=True)
        await asyncio.Future()

asyncio.run(main())
"""


def _spawn(args: list[str]) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"ws://[^:]+:(\d+)", line)
    port = int(found.group(1)) if found else int(line)
    return proc, port


async def _ping_pong(url: str, rounds: int, payload: bytes) -> None:
    import msgpack
    from websockets.asyncio.client import connect as ws_connect

    async with ws_connect(url, compression=None, ping_interval=None, proxy=None,
                          max_size=None) as ws:
        for t in range(rounds):
            await ws.send(msgpack.packb({"type": "instance", "t": t, "x": payload}))
            msgpack.unpackb(await ws.recv())


def _alternating(repeat: int, ours: Callable[[], Any], base: Callable[[], Any]
                 ) -> tuple[float, float]:
    """Best wall times of ``ours`` and ``base`` run in turn (a drift of the machine's
    speed then hits both alike)."""
    best_ours = best_base = float("inf")
    for _ in range(repeat):
        best_ours = min(best_ours, best_of(1, ours)[0])
        best_base = min(best_base, best_of(1, base)[0])
    return best_ours, best_base


def bench_remote(rounds: int, clients: int, lengths: tuple[int, ...], repeat: int
                 ) -> list[tuple[str, float, float, str]]:
    """A remote game over loopback (the server in another process) next to a raw
    websockets + msgpack ping-pong with frames of the same size; then ``clients``
    concurrent games (of each length in ``lengths``) next to as many ping-pong clients."""
    import asyncio

    from littlestone.client import play_remote

    hclass = make_class("halfspaces:d=100,margin=0.1")
    payload = bytes(800)
    rows = []
    with tempfile.TemporaryDirectory() as data:
        server, port = _spawn([sys.executable, "-m", "littlestone", "serve", "--anonymous",
                               "--port", "0", "--data", data, *LOOPBACK_CROWD])
        echo, echo_port = _spawn([sys.executable, "-c", PING_PONG_SERVER])
        try:
            url, echo_url = f"ws://127.0.0.1:{port}", f"ws://127.0.0.1:{echo_port}"

            async def games(n: int, length: int) -> None:
                game = GameSpec(MISTAKE_BOUND, length, hclass)
                await asyncio.gather(*[play_remote(url, LEARNERS.make("perceptron"),
                                                   "random-target", game, s)
                                       for s in range(n)])

            async def ping_pongs(n: int, length: int) -> None:
                await asyncio.gather(*[_ping_pong(echo_url, length, payload)
                                       for _ in range(n)])

            ours, base = _alternating(repeat, lambda: asyncio.run(games(1, rounds)),
                                      lambda: asyncio.run(ping_pongs(1, rounds)))
            rows.append((f"remote game, perceptron (client) vs random-target (server), "
                         f"halfspaces:d=100, {rounds} rounds\n    vs a raw websockets + "
                         "msgpack ping-pong, 800-byte frames", rounds / ours, rounds / base,
                         "rounds/s"))
            for length in lengths:
                ours, base = _alternating(
                    repeat, lambda n=length: asyncio.run(games(clients, n)),  # type: ignore[misc]
                    lambda n=length: asyncio.run(ping_pongs(clients, n)))  # type: ignore[misc]
                total = clients * length
                rows.append((f"{clients} concurrent remote games of {length} rounds: aggregate"
                             f"\n    vs {clients} concurrent raw ping-pong clients of {length} "
                             "rounds", total / ours, total / base, "rounds/s"))
        finally:
            for proc in (server, echo):
                proc.terminate()
                proc.wait(timeout=20)
    return rows


#: Every client of a concurrent bench is 127.0.0.1: the server's per-address cap (64
#: sockets, PROTOCOL.md 1.1) would drop all but the first 64 of them.
LOOPBACK_CROWD = ("--per-address", "1024")


def bench_remote_experts(rounds: int, clients: int, length: int, repeat: int
                         ) -> list[tuple[str, float, float, str]]:
    """A remote Hedge learner (d = 100: the hypotheses of thresholds:n=99 as experts)
    against random-target on the server, next to the raw ping-pong with 800-byte
    frames; then ``clients`` such games at once next to as many ping-pong clients."""
    import asyncio

    from littlestone.client import play_remote

    game = GameSpec(EXPERTS, rounds, make_class("thresholds:n=99"))
    payload = bytes(800)
    rows = []
    with tempfile.TemporaryDirectory() as data:
        server, port = _spawn([sys.executable, "-m", "littlestone", "serve", "--anonymous",
                               "--port", "0", "--data", data, *LOOPBACK_CROWD])
        echo, echo_port = _spawn([sys.executable, "-c", PING_PONG_SERVER])
        try:
            url, echo_url = f"ws://127.0.0.1:{port}", f"ws://127.0.0.1:{echo_port}"

            async def games(n: int, length: int) -> None:
                spec = GameSpec(EXPERTS, length, game.hclass)
                outs = await asyncio.gather(*[play_remote(url, LEARNERS.make("hedge"),
                                                          "random-target", spec, s)
                                              for s in range(n)])
                assert all(out["status"] == "complete" for out in outs), outs[0]

            async def ping_pongs(n: int, length: int) -> None:
                await asyncio.gather(*[_ping_pong(echo_url, length, payload)
                                       for _ in range(n)])

            ours, base = _alternating(repeat, lambda: asyncio.run(games(1, rounds)),
                                      lambda: asyncio.run(ping_pongs(1, rounds)))
            rows.append((f"remote experts game, hedge (client, d = 100) vs random-target "
                         f"(server), thresholds:n=99, {rounds} rounds\n    vs a raw websockets"
                         " + msgpack ping-pong, 800-byte frames", rounds / ours, rounds / base,
                         "rounds/s"))
            ours, base = _alternating(repeat, lambda: asyncio.run(games(clients, length)),
                                      lambda: asyncio.run(ping_pongs(clients, length)))
            total = clients * length
            rows.append((f"{clients} concurrent remote experts games of {length} rounds: "
                         f"aggregate\n    vs {clients} concurrent raw ping-pong clients of "
                         f"{length} rounds", total / ours, total / base, "rounds/s"))
        finally:
            for proc in (server, echo):
                proc.terminate()
                proc.wait(timeout=20)
    return rows


def bench_soak(peers: int, games: int) -> list[tuple[str, float, float, str]]:
    """``benchmarks.soak`` (a tenth of the peers misbehaving) in a child process: the
    honest moves' server-side clock p99 and the server's event-loop lag p99, each beside
    its figure for one peer alone earlier in the same run; and the games a second.
    Raises when a well-behaved game failed or differed from the local driver's."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.soak", "--peers", str(peers),
                          "--games", str(games), "--json"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent, check=False)
    report = json.loads(out.stdout)
    if out.returncode or report["n_failures"]:
        raise RuntimeError(f"the soak failed: {report['failures'][:3]}")
    done = sum(report["well_behaved"].values())
    where = f"{peers} peers x {games} games, server on {report['server_loop']}"
    return [
        (f"soak, {where}: honest moves p99 (server-side move clock)\n    vs one peer alone",
         report["move_p99_ms"], report["baseline_move_p99_ms"], "ms"),
        (f"soak, {where}: the server's event-loop lag p99\n    vs one peer alone",
         report["loop_lag_p99_ms"], report["baseline_loop_lag_p99_ms"], "ms"),
        (f"soak, {where}: well-behaved games a second ({done} games)\n    (no baseline)",
         done / report["elapsed_s"], done / report["elapsed_s"], "games/s"),
    ]


TOURNAMENT = """
learners = ["halving", "soa", "perceptron", "hedge", "follow-the-leader"]
adversaries = ["random-target", "shattered-tree"]
[tournament]
name = "bench"
rounds = 2000
seeds = 10
games = ["mistake-bound"]
[[classes]]
spec = "thresholds:n=255"
[[classes]]
spec = "monotone-disjunctions:n=6"
"""


def bench_tournament() -> list[tuple[str, float, float, str]]:
    """A 200-game built-in tournament with --workers 2 next to --workers 1."""
    from littlestone.server.tournament import load_config, run_tournament

    with tempfile.TemporaryDirectory() as tmp:
        config_path = Path(tmp) / "bench.toml"
        config_path.write_text(TOURNAMENT)
        config = load_config(config_path)
        seconds: dict[Any, float] = {}
        for workers in (1, 2, "ray"):
            started = time.perf_counter()
            report = run_tournament(config, Path(tmp) / f"data{workers}",
                                    2 if workers == "ray" else int(workers), progress=False,
                                    ray_address="local" if workers == "ray" else None)
            seconds[workers] = time.perf_counter() - started
            assert len(report.games) == 200
    overhead_ms = (seconds["ray"] - seconds[2]) / 200 * 1000
    return [("tournament of 200 built-in games (5 learners x 2 adversaries x 2 classes x 10 "
             "seeds), --workers 2\n    vs --workers 1", 200 / seconds[2], 200 / seconds[1],
             "games/s"),
            (f"the same with --ray local (2 CPUs; Ray start included): overhead "
             f"{overhead_ms:.1f} ms a game\n    vs --workers 2", 200 / seconds["ray"],
             200 / seconds[2], "games/s")]


def bench_coin(repeat: int) -> list[tuple[str, float, float, str]]:
    """The referee's coin (SHAKE-256 stream) next to numpy's PCG64, which it replaced."""
    from littlestone.games.coin import Coin

    n = 1_000_000
    ours, _ = best_of(repeat, lambda: Coin(bytes(32)).random(n))
    base, _ = best_of(repeat, lambda: np.random.default_rng(0).random(n))
    single, _ = best_of(repeat, lambda: [c.random() for c in [Coin(bytes(32))]
                                         for _ in range(100_000)])
    base_single, _ = best_of(repeat, lambda: [g.random() for g in [np.random.default_rng(0)]
                                              for _ in range(100_000)])
    return [("referee coin, 10^6 draws in blocks: SHAKE-256 stream\n    vs numpy PCG64",
             n / ours, n / base, "draws/s"),
            ("referee coin, 10^5 draws one at a time: SHAKE-256 stream (buffered)\n"
             "    vs numpy PCG64 Generator.random()", 100_000 / single, 100_000 / base_single,
             "draws/s")]


SUBMISSIONS = """learners = ["{agent}"]
adversaries = ["random-target"]
[tournament]
name = "{name}"
rounds = 200
seeds = {games}
[[classes]]
spec = "thresholds:n=63"
"""


def bench_sandbox(games: int) -> list[tuple[str, float, float, str]]:
    """Submission games in bubblewrap, a sandbox started for each game (as before
    sandboxes were loaded once: ``fresh_processes``), next to the same games as plain
    subprocesses (--unsafe-no-sandbox), and next to the same learner built in (in
    process). (Loaded once: :mod:`benchmarks.field`.)"""
    from littlestone.sandbox import Sandbox
    from littlestone.server.tournament import load_config, run_tournament

    if Sandbox.unavailable() is not None:
        return []
    agent = Path(__file__).resolve().parent.parent / "examples" / "minimal_learner.py"
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, spec, unsafe in (("sandbox", f"{agent}:MajorityVote", False),
                                    ("plain", f"{agent}:MajorityVote", True),
                                    ("builtin", "halving", False)):
            path = Path(tmp) / f"{label}.toml"
            path.write_text(SUBMISSIONS.format(agent=spec, name=label, games=games))
            started = time.perf_counter()
            report = run_tournament(load_config(path), Path(tmp) / label, 1, progress=False,
                                    unsafe=unsafe, fresh_processes=True)
            seconds[label] = time.perf_counter() - started
            assert len(report.games) == games
    per = {k: v / games for k, v in seconds.items()}
    return [(f"a submission's 200-round game in a bubblewrap started for it (probe included), "
             f"{games} games, one at a time: {per['sandbox'] * 1000:.0f} ms a game\n    vs the "
             "same as a plain "
             "subprocess (--unsafe-no-sandbox)", games / seconds["sandbox"],
             games / seconds["plain"], "games/s"),
            (f"the same in bubblewrap\n    vs halving built in (in process: "
             f"{per['builtin'] * 1000:.0f} ms a game)", games / seconds["sandbox"],
             games / seconds["builtin"], "games/s")]


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bench_server_memory(rounds: int) -> list[tuple[str, float, float, str]]:
    """The server's peak RSS after a remote game of ``rounds`` rounds, next to a fresh
    server's after one of rounds / 10 (flat memory: the ratio stays near 1)."""
    import asyncio

    from littlestone.client import play_remote

    peaks = {}
    for n in (rounds // 10, rounds):
        with tempfile.TemporaryDirectory() as data:
            server, port = _spawn([sys.executable, "-m", "littlestone", "serve", "--anonymous",
                                   "--port", "0", "--data", data])
            try:
                game = GameSpec(MISTAKE_BOUND, n, make_class("thresholds:n=1023"))
                asyncio.run(play_remote(f"ws://127.0.0.1:{port}", LEARNERS.make("halving"),
                                        "random-target", game, 0))
                peaks[n] = _peak_rss_mib(server.pid)
            finally:
                server.terminate()
                server.wait(timeout=20)
    return [(f"server peak RSS (MiB) after a remote {rounds}-round game, thresholds:n=1023\n"
             f"    vs after a {rounds // 10}-round game", peaks[rounds], peaks[rounds // 10],
             "MiB")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and repeats")
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else 3
    rows = bench_ldim(repeat)
    rows += bench_ldim_frontier(args.quick)
    rows += bench_perceptron(20_000 if args.quick else 200_000, repeat)
    rows += bench_halving(200 if args.quick else 2000, repeat)
    rows += bench_hedge(200 if args.quick else 2000, repeat)
    rows += bench_experts_round(repeat, args.quick)
    rows += bench_versus_river(2000 if args.quick else 10_000, repeat)
    rows += bench_shattered_tree(repeat)
    rows += bench_log_memory()
    rows += bench_remote(2000 if args.quick else 20_000, 100,
                         (50,) if args.quick else (2000, 200), repeat)
    rows += bench_remote_experts(2000 if args.quick else 20_000, 100,
                                 50 if args.quick else 2000, repeat)
    rows += bench_soak(50 if args.quick else 500, 1 if args.quick else 2)
    rows += bench_tournament()
    rows += bench_sandbox(5 if args.quick else 20)
    from benchmarks.course import bench_course, bench_course_ray
    from benchmarks.deadline import bench_deadline
    from benchmarks.field import bench_cpu, bench_field, bench_pair, bench_ray, bench_sampled
    from benchmarks.round_floor import rows as round_floor

    rows += round_floor(200 if args.quick else 2000, 1 if args.quick else 3)
    rows += bench_pair(4, 12) if args.quick else bench_pair()
    rows += bench_cpu(10 if args.quick else 40)
    rows += bench_field(4, 2) if args.quick else bench_field()
    rows += bench_deadline(args.quick)
    rows += bench_ray(2 if args.quick else 6)
    # (the sampled schedule against the round robin: the 40-student field's round robin
    # is played again here, some half an hour of both cores)
    rows += bench_sampled(4, 2, 16) if args.quick else bench_sampled()
    rows += bench_course(100, 8) if args.quick else bench_course()
    rows += bench_course_ray(40, 4) if args.quick else bench_course_ray()
    rows += bench_coin(repeat)
    rows += bench_server_memory(100_000 if args.quick else 1_000_000)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (the field's rows print "
          "theirs)")
    print(f"{'benchmark':<84} {'ours':>12} {'baseline':>12} {'ratio':>7}")
    for name, ours, base, unit in rows:
        ratio = base / ours if unit in ("s", "MiB", "ms") else ours / base
        label, *more = name.split("\n")
        print(f"{label:<84} {ours:>12.4g} {base:>12.4g} {ratio:>6.2f}x  {unit}")
        for line in more:
            print(line)
    print("ratio: how many times faster than the baseline (> 1 is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
