"""Running a tournament: what is left to play, fanned out, recorded as it ends, then
ranked and reported (resumable: a second run plays only what is missing).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from littlestone.games.errors import SpecError
from littlestone.server.records.store import Store
from littlestone.server.tournament.config import TournamentConfig, is_file_agent, remote_account
from littlestone.server.tournament.matches import (
    LoopbackServer,
    play_builtin,
    play_file_agent,
    play_remote_agent,
)
from littlestone.server.tournament.pairing import Pairing, pairings, rules
from littlestone.server.tournament.ranking import TournamentReport, rank, score
from littlestone.server.tournament.report import write_report
from littlestone.server.tournament.sandbox import Sandbox

__all__ = ["run_tournament"]


def run_tournament(config: TournamentConfig, data: Path, workers: int,
                   progress: bool = True, ray_address: str | None = None) -> TournamentReport:
    """Play every pairing not yet played, then rank and report.

    Built-in pairs fan out over ``workers`` local processes, or over a Ray cluster when
    ``ray_address`` is given (``"local"`` starts a local Ray instance with ``workers``
    CPUs; the data folder must be reachable by every Ray worker: a shared filesystem)."""
    store = Store(data)
    store.start_tournament(config.name, config.sha256)
    todo, skipped = pairings(config)
    done_keys = store.tournament_keys(config.name)
    pending = [p for p in todo if p.key not in done_keys]
    remote = [p for p in pending if remote_account(p.learner) or remote_account(p.adversary)]
    builtin = [p for p in pending if p not in remote and not (
        is_file_agent(p.learner) or is_file_agent(p.adversary))]
    files = [p for p in pending if p not in builtin and p not in remote]
    bar = _progress(len(todo), len(todo) - len(pending), progress)
    lock = threading.Lock()
    finished = [0]  # games of this run recorded so far

    def record(pairing: Pairing, outcome: dict[str, Any]) -> None:
        scored = score(rules(config, pairing), outcome)
        with lock:
            store.add_tournament_game(config.name, pairing.key, {
                "game_id": outcome["game_id"], "status": outcome["status"],
                "message": outcome.get("message", ""), "game": pairing.game,
                "class": pairing.hclass, "learner": pairing.learner,
                "adversary": pairing.adversary, "seed": pairing.seed, **scored,
                "result": outcome["result"],
            })
            finished[0] += 1
            left = len(pending) - finished[0]
            bar.update(outcome["status"] != "complete", running=min(max(workers, 1), left))

    if builtin and ray_address is not None:
        _run_on_ray(config, builtin, str(data), workers, ray_address, record)
    elif builtin:
        if workers <= 1:
            for pairing in builtin:
                record(pairing, play_builtin((config, pairing, str(data))))
        else:
            with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(play_builtin, (config, p, str(data))): p
                           for p in builtin}
                for future in concurrent.futures.as_completed(futures):
                    record(futures[future], future.result())
    if files or remote:
        with LoopbackServer(config, data) as (url, token, server):
            sandbox = Sandbox(config.limits)
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
                futures2 = {threads.submit(play_file_agent, config, p, url, token, data,
                                           sandbox): p for p in files}
                accounts = sorted({a for p in remote for a in (remote_account(p.learner),
                                                                remote_account(p.adversary))
                                   if a})
                if accounts:
                    print(f"littlestone: tournament {config.name}: remote agents "
                          f"({', '.join(accounts)}) connect to {url} with --tournament "
                          f"{config.name}", file=sys.stderr, flush=True)
                futures3 = {threads.submit(play_remote_agent, config, account,
                                           [p for p in remote if account in (
                                               remote_account(p.learner),
                                               remote_account(p.adversary))],
                                           server, record): account for account in accounts}
                for future in concurrent.futures.as_completed(futures2):
                    record(futures2[future], future.result())
                for future3 in concurrent.futures.as_completed(futures3):
                    future3.result()
            asyncio.run_coroutine_threadsafe(server[0].release(config.name), server[1]).result(30)
    bar.close()
    rows = store.tournament_games(config.name)
    report = rank(config.name, rows, skipped)
    report.report = str(write_report(report, data))
    return report


def _run_on_ray(config: TournamentConfig, pairs: list[Pairing], data: str, workers: int,
                address: str, record: Callable[[Pairing, dict[str, Any]], None]) -> None:
    try:
        import ray
    except ImportError:
        raise SpecError("--ray needs Ray: pip install 'littlestone[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        if address == "local":
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        play = ray.remote(play_builtin)
        refs = {play.remote((config, p, data)): p for p in pairs}
        waiting = list(refs)
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1)
            for ref in done:
                record(refs[ref], ray.get(ref))
    finally:
        if started_here:
            ray.shutdown()


class _progress:
    """A tqdm bar of games done and failed (no bar when not wanted or not installed)."""

    def __init__(self, total: int, done: int, wanted: bool) -> None:
        self.failed = 0
        self.bar: Any = None
        if wanted:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, initial=done, unit="game", file=sys.stderr,
                                dynamic_ncols=True)
            except ImportError:  # pragma: no cover - tqdm is a dependency
                self.bar = None

    def update(self, failed: bool, running: int = 0) -> None:
        self.failed += failed
        if self.bar is not None:
            self.bar.set_postfix(running=running, failed=self.failed)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
