"""A class's field of submissions, side by side with its baselines (``make bench``, or
``python -m benchmarks.field [--students N]``).

:func:`make_field` writes a class: each student submits a learner and an adversary,
variants of ``examples/`` and of the built-ins, some of them crashing in some games,
slow, or starting processes; the tournament adds 8 built-in learners and 6 built-in
adversaries, 3 classes and 3 seeds (40 students: 48 x 46 pairs x 9 = 19,872 games).

- :func:`bench_pair`: the marginal cost of a 200-round game with both sides submitted,
  one worker, next to the same game between built-in agents, and next to the floor a
  connection's round trips set (a raw ping-pong over a direct link, and over a
  WebSocket).
- :func:`bench_field`: the whole field on this machine's cores, every game refereed and
  logged, next to the rate of one sandbox per game (measured on a sample); then one
  re-submitted learner re-rated (its games only) against the stored field.
- :func:`bench_ray`: a field of submissions on a local Ray cluster of two nodes next to
  one node.

Tests never time anything; ``tests/benchmarks/test_bench_smoke.py`` runs a small field.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from littlestone.server.tournament import load_config, run_tournament

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BUILTIN_LEARNERS = ["halving", "soa", "consistent", "follow-the-leader", "hedge",
                    "weighted-majority", "winnow", "ogd"]
BUILTIN_ADVERSARIES = ["random-target", "shattered-tree", "iid", "iid:dist=zipf",
                       "randomized-value", "winnow-lower-bound"]
CLASSES = ["thresholds:n=63", "monotone-disjunctions:n=6", "intervals:n=16"]
ROUNDS = 200
SEEDS = 3

_SUBCLASS = '''from littlestone.{package}.{module} import {base}


class {name}({base}):
    """{base}, as student {k} submitted it."""
'''
_CRASHES = '''from littlestone.{package}.{module} import {base}


class {name}({base}):
    """{base} that raises in round 50 of one game in three."""

    def reset(self, game, seed):
        super().reset(game, seed)
        self.t, self.doomed = 0, seed % 3 == 0

    def {move}(self, *args):
        self.t += 1
        if self.doomed and self.t == 50:
            raise RuntimeError("student {k} crashed")
        return super().{move}(*args)
'''
_SLOW = '''import time

from littlestone.{package}.{module} import {base}


class {name}({base}):
    """{base} that thinks a millisecond a move."""

    def {move}(self, *args):
        time.sleep(0.001)
        return super().{move}(*args)
'''
_FORKS = '''import os
import time

from littlestone.{package}.{module} import {base}


class {name}({base}):
    """{base} that starts a process in round 10 of one game in four."""

    def reset(self, game, seed):
        super().reset(game, seed)
        self.t, self.forks = 0, seed % 4 == 0

    def {move}(self, *args):
        self.t += 1
        if self.forks and self.t == 10 and os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        return super().{move}(*args)
'''
_LEARNER_BASES = [("halving", "Halving"), ("consistent", "SOA"),
                  ("consistent", "Consistent"), ("experts", "FollowTheLeader")]
_ADVERSARY_BASES = [("random_target", "RandomTarget"), ("shattered_tree", "ShatteredTree"),
                    ("random_target", "IID")]


def _student_learner(k: int) -> tuple[str, str]:
    """Student k's learner: (source, class name)."""
    kind = k % 8
    if kind == 0:
        return (EXAMPLES / "minimal_learner.py").read_text(), "MajorityVote"
    module, base = _LEARNER_BASES[(kind - 1) % len(_LEARNER_BASES)] if kind < 5 else \
        _LEARNER_BASES[0]
    template = {5: _CRASHES, 6: _SLOW, 7: _FORKS}.get(kind, _SUBCLASS)
    return template.format(package="learners", module=module, base=base, name="Learner",
                           k=k, move="predict"), "Learner"


def _student_adversary(k: int) -> tuple[str, str]:
    """Student k's adversary: (source, class name)."""
    kind = (k + 3) % 8
    if kind in (0, 4):
        return (EXAMPLES / "minimal_adversary.py").read_text(), "Contrarian"
    module, base = _ADVERSARY_BASES[(kind - 1) % len(_ADVERSARY_BASES)] if kind < 4 else \
        _ADVERSARY_BASES[0]
    template = {5: _CRASHES, 6: _SLOW, 7: _FORKS}.get(kind, _SUBCLASS)
    return template.format(package="adversaries", module=module, base=base,
                           name="Adversary", k=k, move="instance"), "Adversary"


def make_field(folder: Path, students: int, name: str = "field", seeds: int = SEEDS,
               rounds: int = ROUNDS, builtins: bool = True, first: int = 0,
               classes: tuple[str, ...] = tuple(CLASSES), schedule: str = "round-robin",
               games_per_version: int = 48) -> Path:
    """Write the submissions of ``students`` students (numbered from ``first``: student
    k's kind is k mod 8) under ``folder/submissions`` and the tournament file
    ``folder/NAME.toml`` (its ``schedule``, :mod:`littlestone.server.tournament.schedule`);
    returns its path."""
    submissions = folder / "submissions"
    submissions.mkdir(parents=True, exist_ok=True)
    learners = list(BUILTIN_LEARNERS) if builtins else []
    adversaries = list(BUILTIN_ADVERSARIES) if builtins else []
    for k in range(first, first + students):
        for role, (source, cls), into in (("learner", _student_learner(k), learners),
                                          ("adversary", _student_adversary(k), adversaries)):
            path = submissions / f"student{k:02d}_{role}.py"
            path.write_text(source)
            into.append(f"submissions/{path.name}:{cls}")
    config = folder / f"{name}.toml"
    config.write_text(
        f"learners = {json.dumps(learners)}\nadversaries = {json.dumps(adversaries)}\n\n"
        f'[tournament]\nname = "{name}"\nrounds = {rounds}\nseeds = {seeds}\n'
        f'schedule = "{schedule}"\ngames_per_version = {games_per_version}\n'
        'games = ["mistake-bound"]\n\n'
        + "".join(f'[[classes]]\nspec = "{c}"\n\n' for c in classes)
        + "[limits]\nmove_deadline = 2\ntime_bank = 5\ncpu_seconds = 60\n")
    return config


def _run(config: Path, data: Path, workers: int, **options: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    report = run_tournament(load_config(config), data, workers, progress=False, **options)
    return time.perf_counter() - started, report


PAIRS = """learners = {learners}
adversaries = {adversaries}
[tournament]
name = "{name}"
rounds = 200
seeds = {seeds}
[[classes]]
spec = "thresholds:n=63"
"""


def _pairs_seconds(folder: Path, learners: list[str], adversaries: list[str], seeds: int,
                   **options: Any) -> float:
    """The time of a one-worker tournament of ``learners`` x ``adversaries``, ``seeds``
    games a pair."""
    name = f"pairs{abs(hash((*learners, *adversaries, seeds, str(options)))) % 10**8}"
    config = folder / f"{name}.toml"
    config.write_text(PAIRS.format(learners=json.dumps(learners),
                                   adversaries=json.dumps(adversaries), name=name, seeds=seeds))
    seconds, report = _run(config, folder / name, 1, **options)
    assert len(report.games) == len(learners) * len(adversaries) * seeds, report.games
    return seconds


def _marginal(folder: Path, learners: list[str], adversaries: list[str], small: int,
              large: int, **options: Any) -> float:
    """Seconds a game, beyond the start-up: (T(large) - T(small)) / the games between."""
    pairs = len(learners) * len(adversaries)
    return ((_pairs_seconds(folder, learners, adversaries, large, **options)
             - _pairs_seconds(folder, learners, adversaries, small, **options))
            / (pairs * (large - small)))


async def _ping_pongs(path: str, count: int) -> None:
    from littlestone.protocol.codec import decode, encode
    from littlestone.transport import connect

    async with connect(f"unix:{path}") as ws:
        frame = encode({"type": "predict", "t": 1, "p": 0.5})
        for _ in range(count):
            await ws.send(frame)
            decode(await ws.recv())


def _echo_server(path: str, ready: Any) -> None:
    from littlestone.transport import serve_unix

    async def echo(ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        with contextlib.suppress(ConnectionClosed):
            while True:
                await ws.send(await ws.recv())

    async def main() -> None:
        server = await serve_unix(echo, path)
        ready.set()
        await asyncio.Event().wait()
        await server.close()

    asyncio.run(main())


def round_trip_floor(round_trips: int = 400, repeat: int = 5) -> float:
    """The seconds of ``round_trips`` msgpack frames echoed over a WebSocket on a Unix
    socket (this package's transport, the echo in another process): the floor of a
    200-round game between two remote players, which makes two a round."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "echo.sock")
        ready = multiprocessing.get_context("fork").Event()
        server = multiprocessing.get_context("fork").Process(target=_echo_server,
                                                             args=(path, ready), daemon=True)
        server.start()
        try:
            ready.wait(30)
            best = float("inf")
            for _ in range(repeat):
                started = time.perf_counter()
                asyncio.run(_ping_pongs(path, round_trips))
                best = min(best, time.perf_counter() - started)
        finally:
            server.kill()
            server.join()
    return best


def _frame_echo(sock: Any, other: Any) -> None:
    from littlestone.protocol.frames import FrameSocket

    other.close()  # (the parent's end, inherited by the fork: its close must reach here)
    link = FrameSocket(sock)
    with contextlib.suppress(EOFError):
        while True:
            link.send(link.recv())


def direct_floor(round_trips: int = 400, repeat: int = 5) -> float:
    """The seconds of ``round_trips`` messages echoed on a direct link (length-prefixed
    msgpack on a Unix socket, :mod:`littlestone.protocol.frames`, blocking calls, the
    echo in another process, each receive by a deadline as the referee's): the floor of
    a 200-round game on direct links, whose referee makes two round trips a round."""
    import socket

    from littlestone.protocol.frames import FrameSocket

    best = float("inf")
    for _ in range(repeat):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        echo = multiprocessing.get_context("fork").Process(target=_frame_echo,
                                                            args=(theirs, ours), daemon=True)
        echo.start()
        theirs.close()
        link = FrameSocket(ours)
        message = {"type": "instance", "t": 1, "x": 17}
        link.send(message)
        link.recv()  # (the echo is up)
        started = time.perf_counter()
        for _ in range(round_trips):
            link.send(message)
            link.recv(time.monotonic() + 60)
        best = min(best, time.perf_counter() - started)
        link.close()
        echo.join()
    return best


def bench_pair(small: int = 10, large: int = 40) -> list[tuple[str, float, float, str]]:
    """The marginal cost of a 200-round game with both sides submitted (the examples'
    learner and adversary), one worker, against the same game between built-in agents
    (halving and random-target), each (T(large) - T(small)) / the games between, in one
    run: one pair (a game at a time: its latency), then three submitted learners x
    three submitted adversaries (the worker plays three games at once); the round-trip
    floor; and a sandbox started for each game, as before."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for k in range(3):
            shutil.copy(EXAMPLES / "minimal_learner.py", folder / f"learner{k}.py")
            shutil.copy(EXAMPLES / "minimal_adversary.py", folder / f"adversary{k}.py")
        learners = [str(folder / f"learner{k}.py:MajorityVote") for k in range(3)]
        adversaries = [str(folder / f"adversary{k}.py:Contrarian") for k in range(3)]
        one = _marginal(folder, learners[:1], adversaries[:1], small, large)
        builtin = _marginal(folder, ["halving"], ["random-target"], small, large)
        nine = _marginal(folder, learners, adversaries, max(1, small // 9),
                         max(2, large // 9))
        nine_builtin = _marginal(folder, ["halving", "soa", "consistent"],
                                 ["random-target", "iid", "shattered-tree"],
                                 max(1, small // 9), max(2, large // 9))
        fresh = _marginal(folder, learners[:1], adversaries[:1], 2, 6, fresh_processes=True)
    floor, direct = round_trip_floor(), direct_floor()
    return [(f"a 200-round game, both sides submitted (loaded once), one pair, one worker: "
             f"marginal {one * 1000:.0f} ms a game\n    vs built-in halving vs random-target "
             f"({builtin * 1000:.1f} ms a game; ratio = how many times slower)",
             one, builtin, "s"),
            (f"the same, 3 submitted learners x 3 submitted adversaries, one worker (3 games "
             f"at once): {nine * 1000:.0f} ms a game\n    vs 3 x 3 built-in pairs, one worker "
             f"({nine_builtin * 1000:.1f} ms a game)", nine, nine_builtin, "s"),
            (f"one pair vs its floor, 400 round trips on a direct link (blocking, "
             f"length-prefixed msgpack, Unix socket: {direct * 1000:.0f} ms)", one, direct, "s"),
            (f"one pair vs 400 WebSocket round trips on a Unix socket ({floor * 1000:.0f} ms; "
             "the floor of the game server's path)", one, floor, "s"),
            (f"one pair vs a sandbox started for each game, as before ({fresh * 1000:.0f} ms "
             "a game)", one, fresh, "s")]


def _cpu_of_games(folder: Path, rounds: int, games: int, one_cpu: bool = True
                  ) -> tuple[float, float, float, float]:
    """CPU seconds a game of ``rounds`` rounds, both sides submitted (the examples'),
    one worker, one game at a time: (the worker, the two fork servers, the two game
    processes, the whole machine's), measured by the kernel over ``games`` games after
    one to load them (the machine's: every CPU's busy time, the kernel's own workers
    included, which no process's figure counts; a quiet machine's figure);
    ``one_cpu=False``: each game's processes where the kernel puts them, as before
    :func:`littlestone.server.tournament.matches._one_cpu`."""
    from unittest import mock

    from littlestone.server.tournament import matches
    from littlestone.server.tournament.field import FieldWorker
    from littlestone.server.tournament.pairing import pairings

    config_path = folder / f"cpu{rounds}.toml"
    config_path.write_text(PAIRS.format(learners='["learner.py:MajorityVote"]',
                                        adversaries='["adversary.py:Contrarian"]',
                                        name=f"cpu{rounds}", seeds=games + 1)
                           .replace("rounds = 200", f"rounds = {rounds}"))
    config = load_config(config_path)
    played, _ = pairings(config, {})
    worker = FieldWorker(config, folder / f"data{rounds}-{one_cpu}", False, 4)
    spread = mock.patch.object(matches, "_one_cpu", lambda: contextlib.nullcontext(None))
    try:
        with contextlib.nullcontext() if one_cpu else spread:
            worker.play(tuple(played[:1]), lambda game, outcome: None)  # (loaded)
            before = (*_split(worker), _machine_busy())
            worker.play(tuple(played[1:]), lambda game, outcome: None)
            after = (*_split(worker), _machine_busy())
    finally:
        worker.close()
    worker_cpu, servers, children, machine = ((b - a) / games for a, b in zip(
        before, after, strict=True))
    return worker_cpu, servers, children, machine


def _machine_busy() -> float:
    """The CPU seconds every CPU of this machine has been busy since it started
    (``/proc/stat``: all but idle and waiting for I/O)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(v) for v in fields]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def bench_cpu(games: int = 40, short: int = 10) -> list[tuple[str, float, float, str]]:
    """Where a submitted pair's game spends its CPU: the tournament's worker (refereeing,
    the sandboxes' bookkeeping), the two fork servers, the two game processes; next to a
    built-in pair's game (halving vs random-target, in process, logged), all CPU seconds
    measured by the kernel. The same pair's games of ``short`` rounds, in the same run,
    split a game's CPU into its set-up (what a game costs whatever its rounds: the fork,
    loading the submission, the log, the index rows, the teardown) and its rounds."""
    from littlestone.adversaries import ADVERSARIES
    from littlestone.learners import LEARNERS
    from littlestone.server.records.logged import play_logged
    from littlestone.server.tournament.pairing import Pairing, rules

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(EXAMPLES / "minimal_learner.py", folder / "learner.py")
        shutil.copy(EXAMPLES / "minimal_adversary.py", folder / "adversary.py")
        *full, machine = _cpu_of_games(folder, ROUNDS, games)
        brief = _cpu_of_games(folder, short, games)[:3]
        spread = sum(_cpu_of_games(folder, ROUNDS, games, one_cpu=False)[:3])
        config_path = folder / "builtin.toml"
        config_path.write_text(PAIRS.format(learners='["halving"]',
                                            adversaries='["random-target"]',
                                            name="builtin", seeds=1))
        game = rules(load_config(config_path), Pairing(
            "mistake-bound", "thresholds:n=63", "halving", "random-target", 0))
        started = time.process_time()
        for seed in range(games):
            play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"),
                        seed, folder / "builtin")
        builtin = (time.process_time() - started) / games
    total, setup = sum(full), sum(brief)
    # (a line through the two: the set-up is what a game of no rounds would cost)
    per_round = [(f - b) / (ROUNDS - short) for f, b in zip(full, brief, strict=True)]
    fixed = [b - r * short for b, r in zip(brief, per_round, strict=True)]
    ms, us = (lambda v: f"{v * 1000:.0f}"), (lambda v: f"{v * 1e6:.0f}")
    return [(f"CPU of a {ROUNDS}-round game, both sides submitted: {ms(total)} ms (the "
             f"worker, refereeing: {ms(full[0])}; the two fork servers: {ms(full[1])}; the "
             f"two game processes: {ms(full[2])})\n    vs a built-in pair's "
             f"({builtin * 1000:.1f} ms)", total, builtin, "s"),
            (f"its set-up (a game of no rounds, from {short}- and {ROUNDS}-round games): "
             f"{ms(sum(fixed))} ms (the worker {ms(fixed[0])}, the fork servers "
             f"{ms(fixed[1])}, the game processes {ms(fixed[2])}); a round: "
             f"{us(sum(per_round))} us (the worker {us(per_round[0])}, the fork servers "
             f"{us(per_round[1])}, the game processes {us(per_round[2])})\n    vs the "
             f"whole game (a {short}-round game: {ms(setup)} ms)",
             sum(fixed), total, "s"),
            (f"CPU of a {ROUNDS}-round game, both sides submitted, the referee's thread and "
             f"the game processes on one CPU: {ms(total)} ms\n    vs each where the kernel "
             f"puts it, as before ({ms(spread)} ms)", total, spread, "s"),
            (f"the machine's CPU a {ROUNDS}-round game, both sides submitted (every CPU's "
             f"busy time, the kernel's own workers included): {ms(machine)} ms\n    vs its "
             f"processes' ({ms(total)} ms)", machine, total, "s")]


def _split(worker: Any) -> tuple[float, float, float]:
    """CPU seconds so far: the worker's process, its fork servers', their children's."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    servers = children = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for loaded in worker.pool._alive.values():
        for pid in loaded.sandbox._pids(loaded.proc, loaded.uid):
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
                servers += (int(fields[11]) + int(fields[12])) / tick
                children += (int(fields[13]) + int(fields[14])) / tick
    return own.ru_utime + own.ru_stime, servers, children


def bench_field(students: int = 40, workers: int = 2, sample: int = 24
                ) -> list[tuple[str, float, float, str]]:
    """The field of ``students`` on ``workers`` workers, then one learner re-submitted;
    the baseline, one sandbox per game, on ``sample`` of the field's games."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = make_field(folder, students)
        seconds, report = _run(config, folder / "data", workers)
        games = len(report.games)
        played = sum(g["game_id"] is not None for g in report.games)
        failed = sum(g["status"] != "complete" for g in report.games)
        loads = report.replayed["sandboxes_loaded"]
        again = folder / "submissions" / "student01_learner.py"
        again.write_text(again.read_text() + "\n# re-submitted after the deadline\n")
        rerate, rerated = _run(config, folder / "data", workers)
        replayed = rerated.replayed["played"]
        shutil.rmtree(folder / "data")
        small = make_field(folder / "sample", max(2, students // 20), name="sample",
                           seeds=1, builtins=False)
        base_seconds, base = _run(small, folder / "sample" / "data", workers,
                                  fresh_processes=True)
    rate, base_rate = games / seconds, len(base.games) / base_seconds
    return [(f"the field of {students} students, {games} games ({played} played, {failed} "
             f"not complete; {loads} sandbox loads), --workers {workers}: "
             f"{seconds:.0f} s\n    vs one sandbox per game ({len(base.games)} games of "
             "submissions: the rate before)", rate, base_rate, "games/s"),
            (f"one re-submitted learner re-rated ({replayed} games, the rest stored): "
             f"{rerate:.1f} s\n    vs the whole field", rerate, seconds, "s")]


def bench_sampled(students: int = 40, workers: int = 2, k: int = 48,
                  reference: Path | None = None, again: bool = False, keep: Path | None = None
                  ) -> list[tuple[str, float, float, str]]:
    """The field of ``students`` rated by the sampled schedule (``k`` games a version)
    next to its round robin, played in the same run (or read from the data folder
    ``reference``, where the same field's round robin was stored): Kendall's tau-b of
    the two rankings (ties as ties) and the agreement on the pairs the round robin
    orders, learners and adversaries, whether the top 5 are in the same order, and the
    share of the round robin's games the sampled schedule played.

    ``again``: the round robin played a second time instead of the sampled schedule.
    ``keep``: the round robin played in this run is stored there (a later run's
    ``reference``).
    A submission's game is dealt from a fresh secret key (:mod:`.tournament.direct`):
    two round robins of one field differ by their games' luck, and their agreement is
    what any ranking of the field can be held to."""
    from benchmarks.course import agreement

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_field(folder, students)
        if reference is None:
            exact_seconds, exact = _run(folder / "field.toml", keep or folder / "exact",
                                        workers)
        else:
            exact_seconds, exact = _run(folder / "field.toml", reference, workers)
        if again:
            seconds, sampled = _run(folder / "field.toml", folder / "again", workers)
        else:
            sampled_config = make_field(folder, students, name="field", schedule="sampled",
                                        games_per_version=k)
            seconds, sampled = _run(sampled_config, folder / "sampled", workers)
    found = agreement(exact, sampled)
    (tau_l, ordered_l, top_l), (tau_a, ordered_a, top_a) = found["learner"], found["adversary"]
    what = ("its round robin played again" if again
            else f"rated by the sampled schedule, k = {k}")
    return [(f"the field of {students} students {what}: {len(sampled.games)} games in "
             f"{seconds:.0f} s; Kendall tau-b against the round robin {tau_l:.3f} "
             f"(learners), {tau_a:.3f} (adversaries), on the pairs it orders "
             f"{ordered_l:.3f}, {ordered_a:.3f}; top 5 in the same order: {top_l} "
             f"(learners), {top_a} (adversaries)\n    vs the round robin's "
             f"{len(exact.games)} games ({exact_seconds:.0f} s"
             + (", stored before)" if reference is not None else ")"),
             float(len(sampled.games)), float(len(exact.games)), "games")]


def bench_ray(students: int = 6) -> list[tuple[str, float, float, str]]:
    """A field of submissions only on a local Ray cluster of two nodes (one CPU each)
    next to one node."""
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError:
        return []
    rates, cores = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = make_field(folder, students, name="rayfield", seeds=2, builtins=False)
        for nodes in (1, 2):
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
            for _ in range(nodes - 1):
                cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
            try:
                ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
                seconds, report = _run(config, folder / f"data{nodes}", 1,
                                       ray_address=cluster.address)
            finally:
                ray.shutdown()
                cluster.shutdown()
            rates[nodes] = len(report.games) / seconds
            cores[nodes] = report.replayed["field_cpu_seconds"] / seconds
    return [(f"a field of {students} students' submissions ({students * students * 6} games) "
             f"on a local Ray cluster of two nodes (1 CPU each; their actors and sandboxes "
             f"kept {cores[2]:.2f} cores busy)\n    vs one node (which kept {cores[1]:.2f} of "
             f"this machine's {os.cpu_count()} cores busy)", rates[2], rates[1], "games/s")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=["pair", "cpu", "field", "ray", "none"])
    parser.add_argument("--schedule", choices=["round-robin", "sampled", "again"],
                        default="round-robin", help="sampled: the sampled schedule's "
                        "agreement with the round robin on the field (only that); again: "
                        "the round robin's agreement with itself played a second time")
    parser.add_argument("--games-per-version", type=int, default=48)
    parser.add_argument("--reference", type=Path, help="with --schedule sampled|again: a data "
                        "folder where the same field's round robin is stored")
    parser.add_argument("--keep", type=Path, help="with --schedule sampled|again and no "
                        "--reference: store the round robin played in this run there")
    args = parser.parse_args(argv)
    print(f"load average at the start: {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    if args.schedule in ("sampled", "again"):
        rows += bench_sampled(args.students, args.workers, args.games_per_version,
                              args.reference, again=args.schedule == "again",
                              keep=args.keep)
        args.only = "none"
    if args.only in (None, "pair"):
        rows += bench_pair()
    if args.only in (None, "pair", "cpu"):
        rows += bench_cpu()
    if args.only in (None, "field"):
        rows += bench_field(args.students, args.workers)
    if args.only in (None, "ray"):
        rows += bench_ray()
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    for name, ours, base, unit in rows:
        ratio = base / ours if unit == "s" else ours / base
        label, *more = name.split("\n")
        print(f"{label:<100} {ours:>10.4g} {base:>10.4g} {ratio:>7.3g}x  {unit}")
        for line in more:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
