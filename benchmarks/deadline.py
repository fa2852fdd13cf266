"""The deadline night, measured (``python -m benchmarks.deadline [--quick]``): a class
submits its versions within a compressed last hour (10% of the versions slow in their
rating, 5% slow in their check games, 5% broken) while browser-like clients refresh the
standings' board; it prints p50/p99 of submit -> verdict, submit -> rated and the
board's latency, beside a lone submit's figures measured in the same run, on the same
server, before the rush.

The issue's targets (issue 41): p99 submit -> verdict <= 10 s, p99 submit -> rated
<= 3 min for 40 students x 5 versions, and a slow student adding <= 10% to anyone
else's wait (:func:`beside_slow`: an honest version's waits alone and beside slow
students', on one server, interleaved). Tests never time anything:
tests/server/tournament/test_rating_lanes.py plays the attacks, and tests/benchmarks
runs this bench at its smallest size.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.students import broken, honest, slow_check, slow_rating
from littlestone.client import submit_file
from littlestone.games.errors import ServerError
from littlestone.sandbox import Sandbox
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition import Competition, load_competition
from littlestone.server.web import attach
from tests.support.competitions import competition_file


@dataclass
class Figures:
    """What one run measured (seconds)."""

    verdict: list[float] = field(default_factory=list)
    verdict_honest: list[float] = field(default_factory=list)
    rated: list[float] = field(default_factory=list)
    rated_honest: list[float] = field(default_factory=list)
    page: list[float] = field(default_factory=list)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Night:
    """A competition served with its page, and its students' tokens."""

    def __init__(self, folder: Path, students: int, rating_seconds: float) -> None:
        (folder / "c.toml").write_text(competition_file(
            "deadline", 80, limits={"move_deadline": 0.5, "time_bank": 0.2},
            versions_per_day=10, rating_seconds=rating_seconds))
        self.data = folder / "data"
        self.competition = Competition(load_competition(folder / "c.toml"), self.data,
                                       unsafe=Sandbox.unavailable() is not None)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.server = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(60)
        self.admin = self.server.store.add_token("teacher", role="admin")
        self.tokens = [self.server.store.add_token(f"s{i:02d}") for i in range(students + 1)]

    async def _start(self) -> GameServer:
        server = GameServer(ServerSettings(port=0, data=self.data))
        self.competition.attach(server)
        self.web = attach(server, public=False)
        await server.start()
        return server

    def submit(self, token: str, source: str, figures: Figures, honest: bool) -> None:
        """One version: its verdict's time, and (accepted) its rating's."""
        started = time.monotonic()
        try:
            answer = asyncio.run(submit_file(self.server.url, "mine.py:Mine",
                                             source.encode(), token))
        except ServerError:
            return
        figures.verdict.append(time.monotonic() - started)
        if honest:
            figures.verdict_honest.append(time.monotonic() - started)
        if answer["verdict"] != "accepted":
            return
        store = Store(self.data)
        try:
            while True:
                rows = [v for v in store.submissions("deadline")
                        if v["sha256"] == answer["sha256"]]
                if rows and rows[-1]["rating"] in ("rated", "failed", "superseded"):
                    break
                time.sleep(0.1)
        finally:
            store.close()
        if rows[-1]["rating"] == "superseded":
            return
        figures.rated.append(time.monotonic() - started)
        if honest:
            figures.rated_honest.append(time.monotonic() - started)

    def board(self, figures: Figures, stop: threading.Event, every: float) -> None:
        """A browser tab: the board every ``every`` seconds, its latency kept."""
        request = urllib.request.Request(
            f"{self.server.url.replace('ws://', 'http://')}/competitions/deadline?part=board",
            headers={"Authorization": f"Bearer {self.admin}"})
        while not stop.is_set():
            started = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    answer.read()
                figures.page.append(time.monotonic() - started)
            except OSError:
                figures.page.append(30.0)
            stop.wait(every)

    def close(self) -> None:
        self.competition.close()
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(60)
        self.web.close()


def kind_of(rank: int) -> str:
    """The kind of version number ``rank`` of the rush: 10% slow in rating, 5% slow in
    checks, 5% broken, the rest honest (spread evenly)."""
    slot = rank % 20
    return {0: "slow_rating", 10: "slow_rating", 5: "slow_check", 15: "broken"}.get(
        slot, "honest")


# the students' files (:mod:`benchmarks.students`): a slow rating is honest in the check's
# 60 rounds, then each move just under the 0.5 s deadline; a slow check is fast in its
# own checks and slow in the refereed check games
SOURCES: dict[str, Callable[[str], str]] = {
    "honest": lambda tag: honest(tag=tag),
    "slow_rating": lambda tag: slow_rating(seconds=0.45, after=60, tag=tag),
    "slow_check": lambda tag: slow_check(seconds=0.3, tag=tag),
    "broken": lambda tag: broken(tag=tag)}


def run(students: int, versions: int, span: float, tabs: int,
        rating_seconds: float) -> tuple[Figures, Figures, float]:
    """The lone submit's figures, the rush's, and the load average after the rush."""
    folder = Path(tempfile.mkdtemp(prefix="littlestone-bench-deadline-"))
    night = Night(folder, students, rating_seconds)
    try:
        lone, rush = Figures(), Figures()
        stop = threading.Event()
        tab = threading.Thread(target=night.board, args=(lone, stop, 0.2), daemon=True)
        tab.start()
        night.submit(night.tokens[-1], honest(tag="alone"), lone, honest=True)
        stop.set()
        tab.join()

        stop = threading.Event()
        tab_threads = [threading.Thread(target=night.board, args=(rush, stop, 1.5),
                                        daemon=True) for _ in range(tabs)]
        for thread in tab_threads:
            thread.start()
        plan = random.Random(41)
        rank = 0

        def student(index: int, times: list[float], kinds: list[str]) -> None:
            started = time.monotonic()
            for number, (at, kind) in enumerate(zip(times, kinds, strict=True)):
                time.sleep(max(0.0, at - (time.monotonic() - started)))
                night.submit(night.tokens[index],
                             SOURCES[kind](f"s{index} v{number}"), rush,
                             honest=kind == "honest")

        schedule = []
        for index in range(students):
            times = sorted(plan.uniform(0, span) for _ in range(versions))
            kinds = []
            for _ in range(versions):
                kinds.append(kind_of(rank))
                rank += 1
            schedule.append((index, times, kinds))
        with concurrent.futures.ThreadPoolExecutor(students) as pool:
            for done in [pool.submit(student, *plan_) for plan_ in schedule]:
                done.result()
        stop.set()
        for thread in tab_threads:
            thread.join()
        load = os.getloadavg()[0]
        return lone, rush, load
    finally:
        night.close()
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Beside:
    """An honest student's waits, alone and beside slow students (seconds)."""

    alone: Figures = field(default_factory=Figures)
    beside: Figures = field(default_factory=Figures)


def beside_slow(rounds: int, rating_seconds: float) -> tuple[Beside, float]:
    """"A slow student adds <= 10% to anyone else's wait", measured: ``rounds`` times
    an honest version submitted alone, then an honest version submitted at the moment
    one student submits a version slow in its rating and another a version slow in its
    check games (each round waits for every rating to end, so that no slow version runs
    into the next round's alone). The same server, the rounds interleaved so that drift
    falls on both; with the load average after them."""
    folder = Path(tempfile.mkdtemp(prefix="littlestone-bench-beside-"))
    night = Night(folder, 4, rating_seconds)
    alone_token, honest_token, slow_rating_token, slow_check_token = night.tokens[:4]
    figures = Beside()
    try:
        for number in range(rounds):
            night.submit(alone_token, honest(tag=f"alone {number}"), figures.alone,
                         honest=True)
            side = Figures()
            slow = [threading.Thread(target=night.submit, args=(
                        token, SOURCES[kind](f"beside {number}"), side, False))
                    for token, kind in ((slow_rating_token, "slow_rating"),
                                        (slow_check_token, "slow_check"))]
            for thread in slow:
                thread.start()
            night.submit(honest_token, honest(tag=f"beside {number}"),
                         figures.beside, honest=True)
            for thread in slow:
                thread.join()
        return figures, os.getloadavg()[0]
    finally:
        night.close()
        shutil.rmtree(folder, ignore_errors=True)


def beside_rows(figures: Beside) -> list[tuple[str, float, float, float]]:
    """(what, beside slow students' median, alone median, added %) in seconds."""
    out = []
    for name, beside, alone in (
            ("honest submit -> verdict", figures.beside.verdict, figures.alone.verdict),
            ("honest submit -> rated", figures.beside.rated, figures.alone.rated)):
        ours = statistics.median(beside) if beside else float("nan")
        base = statistics.median(alone) if alone else float("nan")
        out.append((name, ours, base, 100.0 * (ours / base - 1.0)))
    return out


def rows(lone: Figures, rush: Figures) -> list[tuple[str, float, float, float, float]]:
    """(what, rush p50, rush p99, lone p50, lone p99) in seconds."""
    out = []
    for name, ours, alone in (("submit -> verdict", rush.verdict, lone.verdict),
                              ("submit -> verdict, honest versions", rush.verdict_honest,
                               lone.verdict_honest),
                              ("submit -> rated", rush.rated, lone.rated),
                              ("submit -> rated, honest versions", rush.rated_honest,
                               lone.rated_honest),
                              ("standings board GET", rush.page, lone.page)):
        out.append((name, statistics.median(ours) if ours else float("nan"),
                    percentile(ours, 0.99),
                    statistics.median(alone) if alone else float("nan"),
                    percentile(alone, 0.99)))
    return out


def bench_deadline(quick: bool) -> list[tuple[str, float, float, str]]:
    """``benchmarks.run``'s rows: each p99 of the rush beside the lone submit's."""
    size = (4, 2, 20.0, 4) if quick else (40, 5, 360.0, 40)
    lone, rush, _ = run(*size, rating_seconds=60.0)
    figures, _ = beside_slow(1 if quick else 3, rating_seconds=60.0)
    return [(f"deadline rush ({size[0]}x{size[1]}): {name} p99 (beside: alone)", p99,
             alone99, "s") for name, _, p99, _, alone99 in rows(lone, rush)] + [
        (f"deadline: {name} beside slow students, median (beside: alone)", ours, base, "s")
        for name, ours, base, _ in beside_rows(figures)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="4 students x 2 versions in 20 s, 4 tabs")
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--span", type=float, default=360.0,
                        help="the last hour, compressed to this many seconds")
    parser.add_argument("--tabs", type=int, default=40)
    parser.add_argument("--rating-seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of an honest version alone, then beside slow ones")
    args = parser.parse_args()
    if args.quick:
        args.students, args.versions, args.span, args.tabs, args.rounds = 4, 2, 20.0, 4, 1
    lone, rush, load = run(args.students, args.versions, args.span, args.tabs,
                           args.rating_seconds)
    print(f"deadline: {args.students} students x {args.versions} versions in "
          f"{args.span:g} s, {args.tabs} tabs; load average {load:.1f} "
          f"on {os.cpu_count()} cores")
    print("| what | rush p50 | rush p99 | lone p50 | lone p99 |")
    print("|---|---|---|---|---|")
    for name, p50, p99, alone50, alone99 in rows(lone, rush):
        print(f"| {name} | {p50:.2f} s | {p99:.2f} s | {alone50:.2f} s | {alone99:.2f} s |")
    figures, load = beside_slow(args.rounds, args.rating_seconds)
    print(f"\na slow student beside: {args.rounds} rounds of an honest version alone, then "
          f"beside one version slow in rating and one slow in its check games; load "
          f"average {load:.1f} (target: <= 10% added)")
    print("| what | beside p50 | alone p50 | added |")
    print("|---|---|---|---|")
    for name, ours, base, added in beside_rows(figures):
        print(f"| {name} | {ours:.2f} s | {base:.2f} s | {added:+.0f}% |")


if __name__ == "__main__":
    main()
