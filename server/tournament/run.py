"""Running a tournament: what is left to play, fanned out, recorded as it ends, then
ranked and reported (resumable: a second run plays only what is missing).
"""

from __future__ import annotations

import concurrent.futures
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from littlestone.games.errors import LittlestoneError, SpecError
from littlestone.sandbox import Sandbox
from littlestone.server.records.store import Store
from littlestone.server.tournament.config import TournamentConfig, is_file_agent, remote_account
from littlestone.server.tournament.matches import (
    Arena,
    play_builtin,
    play_file_agent,
    play_remote_agent,
)
from littlestone.server.tournament.pairing import Pairing, load_entrants, pairings, rules
from littlestone.server.tournament.ranking import TournamentReport, rank, score
from littlestone.server.tournament.report import write_report

__all__ = ["SandboxMissing", "run_tournament"]


class SandboxMissing(LittlestoneError):
    """Submissions, and no sandbox to run them in."""


def run_tournament(config: TournamentConfig, data: Path, workers: int,
                   progress: bool = True, ray_address: str | None = None,
                   keep_going: bool = False, unsafe: bool = False,
                   log_level: str = "auto") -> TournamentReport:
    """Load every entrant, play every pairing not yet played, then rank and report.

    Built-in pairs fan out over ``workers`` local processes, or over a Ray cluster when
    ``ray_address`` is given (``"local"`` starts a local Ray instance with ``workers``
    CPUs; the data folder must be reachable by every Ray worker: a shared filesystem).
    Submitted files are loaded and played only in a :class:`Sandbox` (bubblewrap; with
    ``unsafe``, a plain subprocess: SandboxMissing without it where bubblewrap cannot
    run). When an entrant cannot be loaded the tournament stops before playing
    (``report.stopped``), unless ``keep_going``: then its games are recorded as its
    fault (``load_failed:ROLE``), and it ranks last."""
    store = Store(data)
    sandbox = None
    if any(is_file_agent(s) for s in (*config.learners, *config.adversaries)):
        problem = Sandbox.unavailable()
        if problem is not None and not unsafe:
            raise SandboxMissing(f"tournament {config.name}: submissions run only in a "
                                 f"sandbox, and {problem}; --unsafe-no-sandbox runs them "
                                 "without one")
        sandbox = Sandbox(config.limits, unsafe=unsafe)
    entrants = load_entrants(config, sandbox)
    unloaded = [{"entrant": e.spec, "role": e.role, "reason": e.failed}
                for e in entrants.values() if e.failed is not None]
    todo, skipped = pairings(config, entrants)
    if unloaded and not keep_going:
        report = rank(config.name, [], skipped)
        report.unloaded, report.stopped = unloaded, True
        return report
    store.start_tournament(config.name, config.identity())
    done_keys = store.tournament_keys(config.name)
    pending = [p for p in todo if p.key not in done_keys]
    failed_roles = {(e["role"], e["entrant"]): e["reason"] for e in unloaded}

    def broken(p: Pairing) -> tuple[str, str] | None:
        for role, spec in (("learner", p.learner), ("adversary", p.adversary)):
            if (role, spec) in failed_roles:
                return role, failed_roles[(role, spec)]
        return None

    unplayable = [p for p in pending if broken(p) or p.declined]
    pending = [p for p in pending if p not in unplayable]
    remote = [p for p in pending if remote_account(p.learner) or remote_account(p.adversary)]
    builtin = [p for p in pending if p not in remote and not (
        is_file_agent(p.learner) or is_file_agent(p.adversary))]
    files = [p for p in pending if p not in builtin and p not in remote]
    bar = _progress(len(todo), len(todo) - len(pending) - len(unplayable), progress)
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

    for pairing in unplayable:
        role, reason = broken(pairing) or (pairing.declined, pairing.reason)
        status = f"{'load_failed' if broken(pairing) else 'declined'}:{role}"
        record(pairing, {"game_id": None, "status": status, "message": reason,
                         "result": {"status": status}})
    if builtin and ray_address is not None:
        _run_on_ray(config, builtin, str(data), workers, ray_address, record, log_level)
    elif builtin:
        if workers <= 1:
            for pairing in builtin:
                record(pairing, play_builtin((config, pairing, str(data), log_level)))
        else:
            with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(play_builtin, (config, p, str(data), log_level)): p
                           for p in builtin}
                for future in concurrent.futures.as_completed(futures):
                    record(futures[future], future.result())
    if files or remote:
        _play_in_arena(config, data, workers, files, remote, sandbox, record)
    bar.close()
    rows = store.tournament_games(config.name)
    report = rank(config.name, rows, skipped)
    report.unloaded = unloaded
    report.sandbox = sandbox.describe() if sandbox is not None else "no submissions"
    report.report = str(write_report(report, data))
    return report


def _play_in_arena(config: TournamentConfig, data: Path, workers: int, files: list[Pairing],
                   remote: list[Pairing], sandbox: Sandbox | None,
                   record: Callable[[Pairing, dict[str, Any]], None]) -> None:
    """Submitted files in their sandboxes, remote agents on their connections."""
    with Arena(config, data, unix=bool(files), tcp=bool(remote)) as arena, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
        futures = {}
        if files:
            assert sandbox is not None
            futures = {threads.submit(play_file_agent, config, p, arena, sandbox): p
                       for p in files}
        accounts = sorted({a for p in remote for a in (remote_account(p.learner),
                                                        remote_account(p.adversary)) if a})
        if accounts:
            _say(f"littlestone: tournament {config.name}: remote agents "
                 f"({', '.join(accounts)}) connect to {arena.url} with --tournament "
                 f"{config.name}")
        remotes = [threads.submit(play_remote_agent, config, account,
                                  [p for p in remote if account in (
                                      remote_account(p.learner), remote_account(p.adversary))],
                                  arena, record) for account in accounts]
        for future in concurrent.futures.as_completed(futures):
            record(futures[future], future.result())
        for done in concurrent.futures.as_completed(remotes):
            done.result()


#: Seconds ``--ray ADDRESS`` is given to answer a TCP connection before Ray is started.
RAY_REACH_SECONDS = 5.0


def check_ray_address(address: str) -> None:
    """Refuse at once (SpecError) a Ray address nothing listens on: ``ray.init`` would
    wait for it without end. ``local`` and ``auto`` are Ray's to resolve.

    >>> check_ray_address("local")
    >>> check_ray_address("nowhere")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.SpecError: --ray nowhere: give HOST:PORT (or local)
    """
    import socket

    if address in ("local", "auto"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise SpecError(f"--ray {address}: give HOST:PORT (or local)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), RAY_REACH_SECONDS).close()
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise SpecError(f"--ray {address}: no Ray cluster answers there ({why})") from None


def _run_on_ray(config: TournamentConfig, pairs: list[Pairing], data: str, workers: int,
                address: str, record: Callable[[Pairing, dict[str, Any]], None],
                log_level: str = "auto") -> None:
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
        refs = {play.remote((config, p, data, log_level)): p for p in pairs}
        waiting = list(refs)
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1)
            for ref in done:
                record(refs[ref], ray.get(ref))
    finally:
        if started_here:
            ray.shutdown()


def _say(line: str) -> None:
    """A line on stderr, on its own even while a progress bar is drawn there."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        print(line, file=sys.stderr, flush=True)
    else:
        tqdm.write(line, file=sys.stderr)
        sys.stderr.flush()


class _progress:
    """A tqdm bar of games done and failed (no bar when not wanted or not installed)."""

    def __init__(self, total: int, done: int, wanted: bool) -> None:
        self.failed = 0
        self.bar: Any = None
        if wanted and sys.stderr.isatty():  # off a terminal (a log): no \r redraws
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
