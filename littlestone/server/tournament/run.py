"""Running a tournament: what is left to play and why, fanned out, recorded as it ends,
then ranked and reported.

Every game is stored under a key that holds what it depends on (:func:`.pairing.version`:
the rules, the limits and the bytes of each submitted file that plays it), so a second
run plays only what is missing: after a stop, the rest; after a file changed, that
entrant's games (its old ones are forgotten); after an entrant was added or removed,
its games. The ranking is computed from what is stored (:func:`rate_entrant` is the same
for one new or re-submitted entrant against a stored field).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, cast

from littlestone.games.errors import SandboxMissing, SpecError
from littlestone.protocol.messages import rules_to_wire
from littlestone.sandbox import Sandbox
from littlestone.server.net.hosts import fork_server
from littlestone.server.records.logged import end_from_logs
from littlestone.server.records.rows import GameOutcome, GameRow, ResultRow, TournamentGame
from littlestone.server.records.store import RESULT_COLUMNS, STORAGE_STATUS, Store
from littlestone.server.tournament.completion import rank_sampled
from littlestone.server.tournament.config import TournamentConfig, is_file_agent, remote_account
from littlestone.server.tournament.field import (
    Job,
    LocalWorker,
    RayWorker,
    default_sandboxes,
    plan,
    play_jobs,
    probe_entrants,
)
from littlestone.server.tournament.matches import (
    Arena,
    play_builtin,
    play_file_agent,
    play_remote_agent,
)
from littlestone.server.tournament.pairing import (
    Entrant,
    Pairing,
    candidates,
    file_digests,
    judge,
    load_entrants,
    rules,
    spaces,
)
from littlestone.server.tournament.progress import BUILT_IN, REMOTE, SUBMITTED, Estimate
from littlestone.server.tournament.ranking import Replayed, TournamentReport, Unloaded, rank, score
from littlestone.server.tournament.report import write_report
from littlestone.server.tournament.schedule import SampledSchedule, current_keys, is_sampled

__all__ = ["PROGRESS_SECONDS", "SandboxMissing", "rate_entrant", "run_tournament"]


#: How often a long run says how far it is when no progress bar is drawn (off a
#: terminal, or with ``--json``).
PROGRESS_SECONDS = 30.0
#: Built-in games a Ray actor plays at once (each call's round trip is paid once).
RAY_BUILTIN_BATCH = 50
#: Built-in games played here rather than in a pool of worker processes: starting and
#: stopping the pool costs about a second, a sampled stage of a new version's few games
#: some 10 ms each.
FEW_GAMES = 16
#: Entrants a line names for one reason to play or forget games (``--json`` has all).
NAMED = 5


def run_tournament(config: TournamentConfig, data: Path, workers: int,
                   progress: bool = True, ray_address: str | None = None,
                   keep_going: bool = False, unsafe: bool = False,
                   log_level: str = "auto", sandboxes: int | None = None,
                   fresh_processes: bool = False, only: str | None = None,
                   overrun: str | None = None,
                   aside: Callable[[], AbstractContextManager[object]] | None = None,
                   remember_failed_loads: bool = False) -> TournamentReport:
    """Load every entrant, play every game not yet stored under its key, then rank and
    report what is stored.

    Built-in pairs fan out over ``workers`` local processes, or over a Ray cluster when
    ``ray_address`` is given (``"local"`` starts a local Ray instance with ``workers``
    CPUs). Submitted files are loaded and played only in a :class:`Sandbox`
    (bubblewrap; with ``unsafe``, a plain subprocess: SandboxMissing without it where
    bubblewrap cannot run): each loaded once, in at most ``sandboxes`` sandboxes alive
    at once (default: by the memory available), its games played by fresh children of
    it on ``workers`` worker processes or on the Ray cluster's nodes, whose results and
    logs come back here; ``fresh_processes``: a sandbox started for each game instead,
    as before sandboxes were loaded once (slower; kept to compare). When an entrant
    cannot be loaded the tournament stops before playing (``report.stopped``), unless
    ``keep_going``: then its games are recorded as its fault (``load_failed:ROLE``), and
    it ranks last. What it plays and why, and how far it is, go to stderr.

    ``only`` (a competition's rating lane): only the games of that entrant (and the
    built-ins' among themselves) are played, and no other pairing is forgotten, so that
    lanes rating other versions at the same time neither play nor drop each other's
    games. ``overrun`` (with ``only``: the
    reason its rating ran out of time): its games not stored yet are not played but
    recorded as its fault, ``over_time:ROLE``. ``aside`` (with ``only``): the context
    the other entrants' loads run in, apart from that entrant's own (a rating lane's
    clock stops there: an opponent's load is its own time, not the rated version's).
    ``remember_failed_loads`` (a competition's ratings): a file that failed to load
    (its import, its time, its memory; not the server's sandbox) is remembered by its
    spec and bytes and not loaded again, its games recorded ``load_failed`` at once, as
    at its first load; a plain tournament loads it again at each run."""
    store = Store(data)
    # (games whose logs ended but whose rows a full index, or a death between the two,
    # left running: ended as their logs say, and their pairings recorded, not replayed)
    ended = end_from_logs(store)
    sandbox = None
    if any(is_file_agent(s) for s in (*config.learners, *config.adversaries)):
        problem = Sandbox.unavailable()
        if problem is not None and not unsafe:
            raise SandboxMissing(f"tournament {config.name}: submissions run only in a "
                                 f"sandbox, and {problem}; --unsafe-no-sandbox runs them "
                                 "without one")
        sandbox = Sandbox(config.limits, unsafe=unsafe)
    digests = file_digests(config)
    stored = store.tournament_games(config.name)
    stored_keys = store.tournament_keys(config.name)
    # (played again: an entrant that could not be loaded, and a game the server's full
    # disk stopped, :data:`.records.store.STORAGE_STATUS`, nobody's fault)
    retry = {_key_of(r) for r in stored if str(r["status"]).startswith("load_failed:")
             or r["status"] == STORAGE_STATUS}
    schedule = (SampledSchedule(config, digests, config.games_per_version)
                if is_sampled(config) else None)
    if schedule is None:
        games, never = candidates(config, digests)
        if only is not None:  # (its games, and the built-ins' among themselves)
            def own(learner: str, adversary: str) -> bool:
                return only in (learner, adversary) or not (
                    is_file_agent(learner) or is_file_agent(adversary))

            games = [g for g in games if own(g.learner, g.adversary)]
            never = [s for s in never if own(s["learner"], s["adversary"])]
        current = {g.key for g in games}
    else:  # (its games are chosen as it goes: the field's every game is never listed)
        games, never = [], []
        current = current_keys(config, digests, stored)
    stale = [] if only is not None else sorted(stored_keys - current)
    pending = [g for g in games if g.key not in stored_keys or g.key in retry]
    fleet = _Fleet(config, data, store, workers, unsafe, ray_address, sandboxes,
                   fresh_processes)
    bar: _Progress | None = None
    try:
        entrants = load_entrants(config, sandbox, _ProbeCache(
            data, config, digests, fleet.probe, only, aside, remember_failed_loads))
        unloaded: list[Unloaded] = [{"entrant": e.spec, "role": e.role, "reason": e.failed}
                    for e in entrants.values() if e.failed is not None]
        _, skipped = judge(games, config, entrants)
        skipped = never + skipped
        if unloaded and not keep_going:
            report = rank(config.name, [], skipped)
            report.unloaded, report.stopped = unloaded, True
            return report
        todo, _ = judge(pending, config, entrants)
        replays = _replays(todo, stored, stale, retry & current, digests, config)
        _say(f"littlestone: tournament {config.name}: {replays['summary']}")
        store.start_tournament(config.name, config.identity(), None if schedule is None else {
            "schedule": "sampled", "games_per_version": config.games_per_version,
            "learners": list(config.learners), "adversaries": list(config.adversaries),
            "spaces": len(spaces(config)), "seeds": len(config.seeds)})
        store.drop_tournament_games(config.name, sorted(set(stale) | (retry & current)))
        failed_roles = {(e["role"], e["entrant"]): e["reason"] for e in unloaded}

        def broken(p: Pairing) -> tuple[str, str] | None:
            for role, spec in (("learner", p.learner), ("adversary", p.adversary)):
                if (role, spec) in failed_roles:
                    return role, failed_roles[(role, spec)]
            return None

        unplayable = [p for p in todo if broken(p) or p.declined]
        adopted = _adopted(config, ended, [p for p in todo if p not in set(unplayable)])
        playing = [p for p in todo if p not in set(unplayable) and p not in adopted]
        remote = [p for p in playing if remote_account(p.learner) or remote_account(p.adversary)]
        builtin = [p for p in playing if p not in set(remote) and not (
            is_file_agent(p.learner) or is_file_agent(p.adversary))]
        files = [p for p in playing if is_file_agent(p.learner) or is_file_agent(p.adversary)]
        kind_of = {p.key: kind for kind, some in ((BUILT_IN, builtin), (SUBMITTED, files),
                                                  (REMOTE, remote)) for p in some}
        bar = _Progress(config.name, len(games) - len(pending),
                        len(games) - len(pending) + len(todo), progress,
                        {BUILT_IN: len(builtin), SUBMITTED: len(files), REMOTE: len(remote)})
        lock = fleet.lock  # (one writer at a time: Ray's landed games share it)
        rules_of: dict[tuple[str, str | None], Any] = {}

        def record(pairing: Pairing, outcome: GameOutcome) -> None:
            space = (pairing.game, pairing.hclass)
            if space not in rules_of:
                rules_of[space] = rules(config, pairing)
            scored = score(rules_of[space], outcome)
            with lock:
                store.add_tournament_game(config.name, pairing.key, {
                    "game_id": outcome["game_id"], "status": outcome["status"],
                    "message": outcome.get("message", ""), "game": pairing.game,
                    "class": pairing.hclass, "learner": pairing.learner,
                    "adversary": pairing.adversary, "seed": pairing.seed,
                    "fault": scored["fault"], "horizon": scored["horizon"],
                    "normaliser": scored["normaliser"],
                    "normaliser_value": scored["normaliser_value"], "raw": scored["raw"],
                    "score": scored["score"], "score_realised": scored["score_realised"],
                    "forcing": scored["forcing"], "forcing_realised": scored["forcing_realised"],
                    "result": outcome["result"], "version": pairing.version,
                    "learner_sha256": digests.get(pairing.learner),
                    "adversary_sha256": digests.get(pairing.adversary),
                })
                bar.update(outcome["status"] != "complete", kind_of.get(pairing.key))

        if overrun is not None:  # (the entrant's fault, as a game it forfeits)
            at_fault = "learner" if only in {p.learner for p in todo} else "adversary"
            over = {p for p in todo if only in (p.learner, p.adversary)}
            for pairing in over:
                status = f"over_time:{at_fault}"
                record(pairing, {"game_id": None, "status": status, "message": overrun,
                                 "result": {"status": status}})
            unplayable = [p for p in unplayable if p not in over]
            builtin = [p for p in builtin if p not in over]
            files = [p for p in files if p not in over]
            remote = [p for p in remote if p not in over]
        for pairing, row in adopted.items():
            record(pairing, {"game_id": row["game_id"], "status": str(row["status"]),
                             "message": "", "result": cast("ResultRow", {
                                 k: row.get(k) for k in RESULT_COLUMNS})})
        for pairing in unplayable:
            role, reason = broken(pairing) or (pairing.declined, pairing.reason)
            status = f"{'load_failed' if broken(pairing) else 'declined'}:{role}"
            record(pairing, {"game_id": None, "status": status, "message": reason,
                             "result": {"status": status}})
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as beside:
            if remote:
                bar.begin(REMOTE)
            remotes = beside.submit(_play_remote, config, data, remote, record) if remote \
                else None
            bar.begin(BUILT_IN)
            fleet.play_builtin(builtin, log_level, record)
            if files:
                assert sandbox is not None
                bar.begin(SUBMITTED)
                fleet.play_files(files, sandbox, record)
            if remotes is not None:
                remotes.result()
        while schedule is not None and (chosen := schedule.next_games(
                store.tournament_games(config.name))):  # (the stale ones were dropped)
            staged, declined = judge(chosen, config, entrants)
            skipped += declined
            current |= {p.key for p in chosen}
            _say(f"littlestone: tournament {config.name}: sampled stage {schedule.stage}: "
                 f"plays {len(staged)} games (at least {schedule.k} of each entrant)")
            for pairing in staged:
                kind_of[pairing.key] = (SUBMITTED if is_file_agent(pairing.learner)
                                        or is_file_agent(pairing.adversary) else BUILT_IN)
            bar.grow({kind: sum(kind_of[p.key] == kind for p in staged)
                      for kind in (BUILT_IN, SUBMITTED)})
            for pairing in staged:
                if broken(pairing) or pairing.declined:
                    role, reason = broken(pairing) or (pairing.declined, pairing.reason)
                    status = f"{'load_failed' if broken(pairing) else 'declined'}:{role}"
                    record(pairing, {"game_id": None, "status": status, "message": reason,
                                     "result": {"status": status}})
            playable = [p for p in staged if not (broken(p) or p.declined)]
            bar.begin(BUILT_IN)
            fleet.play_builtin([p for p in playable if not (
                is_file_agent(p.learner) or is_file_agent(p.adversary))], log_level, record)
            with_files = [p for p in playable
                          if is_file_agent(p.learner) or is_file_agent(p.adversary)]
            if with_files:
                assert sandbox is not None
                bar.begin(SUBMITTED)
                fleet.play_files(with_files, sandbox, record)
        bar.close()
        loads, cpu = fleet.loads, sum(float(w.cpu) for w in fleet.field)
    finally:
        if bar is not None:
            bar.close()
        fleet.close()
    rows = store.tournament_games(config.name)
    if schedule is not None:
        rows = [r for r in rows if _key_of(r) in current]
        report = rank_sampled(config.name, rows, skipped, config.learners, config.adversaries,
                              len(spaces(config)), len(config.seeds))
    else:
        report = rank(config.name, rows, skipped)
    report.unloaded = unloaded
    report.sandbox = sandbox.describe() if sandbox is not None else "no submissions"
    report.replayed = {**replays, "sandboxes_loaded": loads,
                       "field_cpu_seconds": round(cpu, 3)}
    report.report = str(write_report(report, data))
    return report


def rate_entrant(config: TournamentConfig, data: Path, entrant: str, role: str,
                 workers: int, **options: Any) -> TournamentReport:
    """Rate one new or re-submitted entrant (a spec, as ``role``) against the field
    stored in ``data`` under ``config``: it joins the config if it is not in it, only
    its games are played (those of its earlier file forgotten), and the ranking comes
    from what is stored (:func:`run_tournament`'s ``options``)."""
    if role == "learner" and entrant not in config.learners:
        config = dataclasses.replace(config, learners=(*config.learners, entrant))
    elif role == "adversary" and entrant not in config.adversaries:
        config = dataclasses.replace(config, adversaries=(*config.adversaries, entrant))
    return run_tournament(config, data, workers, **options)


def _adopted(config: TournamentConfig, ended: list[GameRow], todo: list[Pairing]
             ) -> dict[Pairing, GameRow]:
    """The pairings to play whose games were played to their logs' end already
    (:func:`~littlestone.server.records.logged.end_from_logs`): matched by game, class,
    seed and each side's spec as the game recorded it (a submitted side is named by its
    one-time account, :func:`~.matches.play_file_agent`'s, which names the pairing's key).
    A game stopped from outside (``interrupted``, ``aborted:*``) is played again."""
    if not ended:
        return {}
    by_game: dict[tuple[object, ...], GameRow] = {
        (r.get("game"), r.get("class"), r.get("seed"), r.get("learner"),
         r.get("adversary")): r for r in ended
               if not str(r["status"]).startswith(("aborted", "interrupted"))}
    found: dict[Pairing, GameRow] = {}
    for pairing in todo:
        tag = hashlib.sha256(f"{config.name}|{pairing.key}".encode()).hexdigest()[:16]
        sides = [f"remote:{role}-{tag}" if is_file_agent(spec) else spec
                 for role, spec in (("learner", pairing.learner),
                                    ("adversary", pairing.adversary))]
        row = by_game.get((pairing.game, pairing.hclass, pairing.seed, *sides))
        if row is not None:
            found[pairing] = row
    return found


def _key_of(row: TournamentGame) -> str:
    """A stored row's key (as :attr:`Pairing.key` made it)."""
    base = f"{row['game']}|{row['class']}|{row['learner']}|{row['adversary']}|{row['seed']}"
    return f"{base}|{row['version']}" if row.get("version") else base


def _replays(todo: list[Pairing], stored: list[TournamentGame], stale: list[str],
             retry: set[str], digests: dict[str, str | None], config: TournamentConfig
             ) -> Replayed:
    """What a run plays and why, what it keeps and what it forgets, as ``--json`` and the
    terminal say it: games counted by reason, with the entrants the reason names."""
    by_base = {_key_of({**r, "version": None}): r for r in stored}
    by_key = {_key_of(r): r for r in stored}
    seen = {(role, r[role]) for r in stored for role in ("learner", "adversary")}
    why: dict[str, tuple[int, list[str]]] = {}

    def count(reason: str, entrants: list[str], into: dict[str, tuple[int, list[str]]]) -> None:
        n, names = into.get(reason, (0, []))
        into[reason] = (n + 1, names + [e for e in entrants if e not in names])

    for game in todo:
        old = by_base.get(game.base)
        sides = (("learner", game.learner), ("adversary", game.adversary))
        if game.key in retry:  # (only the side whose load failed: issue 44)
            failed = str(by_key[game.key]["status"]).split(":")[1:2] if game.key in by_key \
                else []
            count("failed to load before", [s for role, s in sides if is_file_agent(s)
                                            and (not failed or failed[0] in (role, "both"))],
                  why)
        elif old is None:
            new = [spec for role, spec in sides if (role, spec) not in seen]
            count("new" if new else "not played yet", new, why)
        elif not old.get("version"):
            count("stored before games were keyed by their files", [], why)
        else:
            changed = [spec for role, spec in sides
                       if old.get(f"{role}_sha256") != digests.get(spec)]
            count("file changed" if changed else "the rules or limits changed", changed, why)
    entered = {*config.learners, *config.adversaries}
    gone: dict[str, tuple[int, list[str]]] = {}
    stale_set = set(stale)
    for row in stored:
        if _key_of(row) in stale_set:
            left = [row[role] for role in ("learner", "adversary") if row[role] not in entered]
            count("no longer entered" if left else "superseded", left, gone)

    def said(reasons: dict[str, tuple[int, list[str]]]) -> str:
        def names(entrants: list[str]) -> str:
            if len(entrants) <= NAMED:
                return ", ".join(entrants)
            return f"{', '.join(entrants[:NAMED])} and {len(entrants) - NAMED} more"

        return "; ".join(f"{n} {reason}" + (f": {names(who)}" if who else "")
                         for reason, (n, who) in sorted(reasons.items(),
                                                        key=lambda r: -r[1][0]))

    parts = [f"plays {len(todo)} games" + (f" ({said(why)})" if why else "")]
    parts.append(f"keeps {len(stored) - len(stale_set) - len(retry)} stored")
    if gone:
        parts.append(f"forgets {sum(n for n, _ in gone.values())} ({said(gone)})")
    return {"played": len(todo), "why": {k: {"games": n, "entrants": e}
                                         for k, (n, e) in why.items()},
            "forgotten": {k: {"games": n, "entrants": e} for k, (n, e) in gone.items()},
            "summary": ", ".join(parts)}


class _ProbeCache:
    """Probe answers of submitted files, kept in the data folder by what they depend on
    (role, spec, the file's bytes, the game spaces asked): a file loaded once need not
    be loaded again to be listed, only to play. Failures are kept only when
    ``remember_failed``, under ``failed:ROLE:STAMP`` (a competition's ratings: a file
    asleep at its import costs the ratings that meet it one load in all, not one each),
    and never the server's own (:attr:`.pairing.Entrant.servers`). With ``only``, the
    other entrants are loaded first, inside ``aside()``, then ``only`` on its own."""

    def __init__(self, data: Path, config: TournamentConfig,
                 digests: dict[str, str | None],
                 probe: Callable[[list[tuple[str, str]]], dict[tuple[str, str], Entrant]],
                 only: str | None = None,
                 aside: Callable[[], AbstractContextManager[object]] | None = None,
                 remember_failed: bool = False) -> None:
        self.path = data / "tournaments" / f"{config.name}-probes.json"
        self.name = config.name
        self.probe, self.only = probe, only
        self.aside: Callable[[], AbstractContextManager[object]] = (
            aside or contextlib.nullcontext)
        self.remember_failed = remember_failed
        asked = json.dumps([rules_to_wire(rules(config, s)) for s in spaces(config)])
        self.stamp = {spec: hashlib.sha256(f"{spec}|{digest}|{asked}".encode()).hexdigest()
                      for spec, digest in digests.items()}

    def _known(self) -> dict[str, object]:
        known: dict[str, object] = {}  # (the file as read: each entry checked where used)
        with contextlib.suppress(OSError, ValueError):
            read = json.loads(self.path.read_text())
            if isinstance(read, dict):
                known = read
        return known

    def __call__(self, entrants: list[tuple[str, str]]) -> dict[tuple[str, str], Entrant]:
        known = self._known()
        found: dict[tuple[str, str], Entrant] = {}
        asking = []
        for role, spec in entrants:
            kept = known.get(f"{role}:{self.stamp.get(spec)}")
            failed = known.get(f"failed:{role}:{self.stamp.get(spec)}")
            if isinstance(kept, list):
                found[(role, spec)] = Entrant(spec, role, tuple(kept))
            elif self.remember_failed and isinstance(failed, str):
                found[(role, spec)] = Entrant(spec, role, failed=f"{failed} (at its first "
                                              "load: it is not loaded again)")
            else:
                asking.append((role, spec))
        if len(asking) > 1:
            _say(f"littlestone: tournament {self.name}: loading {len(asking)} submissions, "
                 "each in its sandbox")
        others = [e for e in asking if e[1] != self.only]
        fresh: dict[tuple[str, str], Entrant] = {}
        if others:
            with self.aside():  # (their loads, their time)
                fresh.update(self.probe(others))
        if len(others) < len(asking):
            fresh.update(self.probe([e for e in asking if e[1] == self.only]))
        found.update(fresh)
        learned: dict[str, object] = {}
        for (role, spec), entrant in fresh.items():
            if entrant.failed is None:
                learned[f"{role}:{self.stamp.get(spec)}"] = list(entrant.unsupported)
            elif self.remember_failed and not entrant.servers:
                learned[f"failed:{role}:{self.stamp.get(spec)}"] = entrant.failed
        if learned:  # (read again: another rating lane may have written meanwhile)
            with contextlib.suppress(OSError):
                self.path.parent.mkdir(parents=True, exist_ok=True)
                written = self.path.with_name(f"{self.path.name}.{os.getpid()}")
                written.write_text(json.dumps({**self._known(), **learned}))
                written.replace(self.path)
        return found


class _Fleet:
    """Where the games are played: built-in pairs in worker processes (or Ray tasks),
    submissions on field workers (local processes or Ray actors, started on first
    use), remote agents here."""

    def __init__(self, config: TournamentConfig, data: Path, store: Store, workers: int,
                 unsafe: bool, ray_address: str | None, sandboxes: int | None,
                 fresh_processes: bool) -> None:
        self.config, self.data, self.store, self.workers = config, data, store, max(1, workers)
        self.unsafe, self.ray_address, self.fresh = unsafe, ray_address, fresh_processes
        self.sandboxes = sandboxes
        self.field: list[Any] = []
        self.ray: Any = None
        self.ray_started = False
        self.lock = threading.Lock()
        self.fresh_loads = 0

    @property
    def loads(self) -> int:
        return self.fresh_loads + sum(int(w.loads) for w in self.field)

    def _ray(self) -> Any:
        if self.ray is None:
            assert self.ray_address is not None
            try:
                import ray
            except ImportError:
                raise SpecError("--ray needs Ray: pip install 'littlestone[ray]'") from None
            if not ray.is_initialized():
                self.ray_started = True
                if self.ray_address == "local":  # a cluster of its own, even if one runs here
                    ray.init(address="local", num_cpus=self.workers, include_dashboard=False,
                             log_to_driver=False, configure_logging=False)
                else:
                    ray.init(address=self.ray_address, log_to_driver=False,
                             configure_logging=False)
            self.ray = ray
        return self.ray

    def _workers(self) -> list[Any]:
        """The field workers, started on first use."""
        if not self.field:
            if self.ray_address is not None:
                ray = self._ray()
                count = max(1, int(ray.cluster_resources().get("CPU", 1)))
                capacity = max(4, (self.sandboxes or default_sandboxes()) // count)
                self.field = [RayWorker(ray, self.config, self.store, self.lock, self.unsafe,
                                        capacity, {"scheduling_strategy": "SPREAD"})
                              for _ in range(count)]
            else:
                capacity = max(4, (self.sandboxes or default_sandboxes()) // self.workers)
                self.field = [LocalWorker(self.config, self.data, self.unsafe, capacity)
                              for _ in range(self.workers)]
        return self.field

    def probe(self, entrants: list[tuple[str, str]]) -> dict[tuple[str, str], Entrant]:
        """Load and probe submitted entrants (on the field workers, whose pools keep
        them loaded for their games; a sandbox each with ``fresh_processes``)."""
        if self.fresh:
            from littlestone.server.tournament.pairing import probe

            sandbox = Sandbox(self.config.limits, unsafe=self.unsafe)
            self.fresh_loads += len(entrants)
            return {(role, spec): probe(self.config, spec, role, sandbox)
                    for role, spec in entrants}
        return probe_entrants(self._workers(), entrants)

    def play_builtin(self, games: list[Pairing], level: str,
                     record: Callable[[Pairing, GameOutcome], None]) -> None:
        if not games:
            return
        if self.ray_address is not None:
            self._ray_builtin(games, level, record)
        elif self.workers <= 1 or len(games) <= FEW_GAMES:
            for pairing in games:
                record(pairing, play_builtin((self.config, pairing, str(self.data), level)))
        else:
            # the pool's processes come from the hosts' fork server, never forked from
            # this process: it runs threads (a progress bar, sandboxes, a caller's), and a
            # child forked while one of them held a lock (SQLite's allocator, seen here)
            # waited for it forever
            with concurrent.futures.ProcessPoolExecutor(max_workers=self.workers,
                                                        mp_context=fork_server()) as pool:
                futures = {pool.submit(play_builtin, (self.config, p, str(self.data), level)): p
                           for p in games}
                for future in concurrent.futures.as_completed(futures):
                    record(futures[future], future.result())

    def _ray_builtin(self, games: list[Pairing], level: str,
                     record: Callable[[Pairing, GameOutcome], None]) -> None:
        """Built-in pairs on the Ray actors (which hold the cluster's CPUs), each batch
        played into a folder of the actor's own and sent back (:func:`.field.land`)."""
        jobs = [Job(-1 - i, tuple(games[i:i + RAY_BUILTIN_BATCH]), builtin=True)
                for i in range(0, len(games), RAY_BUILTIN_BATCH)]
        workers = self._workers()
        play_jobs(workers, jobs, record, level)

    def play_files(self, games: list[Pairing], sandbox: Sandbox,
                   record: Callable[[Pairing, GameOutcome], None]) -> None:
        """Games with submissions: on the field workers, in jobs (:func:`.field.plan`);
        with ``fresh_processes``, a sandbox started for each game, here."""
        if self.fresh:
            self.fresh_loads += sum(is_file_agent(s) for g in games
                                    for s in (g.learner, g.adversary))
            with Arena(self.config, self.data, unix=True, tcp=False) as arena, \
                    concurrent.futures.ThreadPoolExecutor(max_workers=self.workers) as threads:
                futures = {threads.submit(play_file_agent, self.config, p, arena, sandbox): p
                           for p in games}
                for future in concurrent.futures.as_completed(futures):
                    record(futures[future], future.result())
            return
        workers = self._workers()
        capacity = max(4, (self.sandboxes or default_sandboxes()) // len(workers))
        play_jobs(workers, plan(games, len(workers), capacity), record)

    def close(self) -> None:
        for worker in self.field:
            with contextlib.suppress(Exception):
                worker.close()
        if self.ray is not None and self.ray_started:
            self.ray.shutdown()


def _play_remote(config: TournamentConfig, data: Path, remote: list[Pairing],
                 record: Callable[[Pairing, GameOutcome], None]) -> None:
    """Remote agents on their connections, to this process's own server."""
    with Arena(config, data, unix=False, tcp=True) as arena, \
            concurrent.futures.ThreadPoolExecutor(max_workers=4) as threads:
        accounts = sorted({a for p in remote for a in (remote_account(p.learner),
                                                        remote_account(p.adversary)) if a})
        _say(f"littlestone: tournament {config.name}: remote agents "
             f"({', '.join(accounts)}) connect to {arena.url} with --tournament "
             f"{config.name}")
        for done in [threads.submit(play_remote_agent, config, account,
                                    [p for p in remote if account in (
                                        remote_account(p.learner), remote_account(p.adversary))],
                                    arena, record) for account in accounts]:
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


def _say(line: str) -> None:
    """A line on stderr, on its own even while a progress bar is drawn there."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        print(line, file=sys.stderr, flush=True)
    else:
        tqdm.write(line, file=sys.stderr)
        sys.stderr.flush()


class _Progress:
    """How far a run is: games done and left, games per second, and the time left as
    :class:`.progress.Estimate` reckons it from each kind of game's own rate (or that it
    is unknown, and why). A tqdm bar on a terminal (when ``wanted``; its own estimate,
    from one rate for every kind, is not shown); else a line every
    :data:`PROGRESS_SECONDS`. Both are said again while no game ends (a slow entrant's
    games), by a thread of their own."""

    def __init__(self, name: str, done: int, total: int, wanted: bool,
                 left: dict[str, int] | None = None) -> None:
        self.name, self.total, self.failed = name, total, 0
        self.done = self.start = done
        self.started = self.said = time.monotonic()
        self.estimate = Estimate(left if left is not None else {BUILT_IN: total - done},
                                 self.started)
        self.bar: Any = None
        self.lock = threading.Lock()
        self.closed = threading.Event()
        if wanted and sys.stderr.isatty():  # off a terminal (a log): no \r redraws
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, initial=done, unit="game", file=sys.stderr,
                                dynamic_ncols=True, bar_format="{l_bar}{bar}| {n_fmt}/"
                                "{total_fmt} [{elapsed}, {rate_fmt}{postfix}]")
            except ImportError:  # pragma: no cover - tqdm is a dependency
                self.bar = None
        self.ticker: threading.Thread | None = None
        if wanted:
            self.ticker = threading.Thread(target=self._tick, daemon=True,
                                           name="littlestone-progress")
            self.ticker.start()

    def left_in_words(self, now: float) -> str:
        """The time left, or why it is not known.

        >>> p = _Progress("t", 0, 30, False, {"built-in": 10, "submitted": 20})
        >>> for k in range(10):
        ...     p.estimate.ended("built-in", p.started + (k + 1) / 100)
        >>> p.left_in_words(p.started + 1)
        'time left unknown (20 with submissions not timed yet)'
        """
        estimate = self.estimate
        seconds = estimate.seconds_left(now)
        if seconds is not None:
            return f"about {_duration(seconds)} left"
        untimed = estimate.untimed()
        if untimed:
            names = {BUILT_IN: "between built-ins", SUBMITTED: "with submissions",
                     REMOTE: "with remote agents"}
            return ("time left unknown (" + ", ".join(
                f"{n} {names.get(kind, kind)}" for kind, n in untimed.items())
                + " not timed yet)")
        quiet = estimate.stalled(now)
        return f"time left unknown (no game has ended for {_duration(quiet or 0)})"

    def line(self, now: float | None = None) -> str:
        """The state in words.

        >>> p = _Progress("t", 0, 100, False)
        >>> for k in range(40):
        ...     p.estimate.ended("built-in", p.started + (k + 1) / 4)
        >>> p.done = 40
        >>> p.line(p.started + 10)
        'littlestone: tournament t: 40 of 100 games, 60 left, 4.0 games/s, about 15 s left'
        """
        now = time.monotonic() if now is None else now
        elapsed = max(now - self.started, 1e-9)
        rate = (self.done - self.start) / elapsed
        left = self.total - self.done
        return (f"littlestone: tournament {self.name}: {self.done} of {self.total} games, "
                f"{left} left, {rate:.1f} games/s, {self.left_in_words(now)}")

    def grow(self, left: dict[str, int]) -> None:
        """More games to play, of each kind (a sampled schedule's next stage)."""
        with self.lock:
            for kind, games in left.items():
                self.total += games
                self.estimate.add(kind, games)
            if self.bar is not None:
                self.bar.total = self.total
                self.bar.refresh()

    def begin(self, kind: str) -> None:
        """The games of ``kind`` start being played."""
        with self.lock:
            self.estimate.begin(kind, time.monotonic())

    def update(self, failed: bool, kind: str | None = None) -> None:
        """A game ended (``kind``: which, None: one not played, which costs no time)."""
        with self.lock:
            self.failed += failed
            self.done += 1
            if kind is not None:
                self.estimate.ended(kind, time.monotonic())
            if self.bar is not None:
                self.bar.set_postfix_str(self._postfix(), refresh=False)
                self.bar.update(1)
            elif time.monotonic() - self.said > PROGRESS_SECONDS:
                self.said = time.monotonic()
                _say(self.line())

    def _postfix(self) -> str:
        return f"failed={self.failed}, {self.left_in_words(time.monotonic())}"

    def _tick(self) -> None:
        """Say it again while no game ends: each second on the bar, each
        :data:`PROGRESS_SECONDS` on a line."""
        while not self.closed.wait(1.0 if self.bar is not None else PROGRESS_SECONDS):
            with self.lock:
                if self.bar is not None:
                    self.bar.set_postfix_str(self._postfix())
                elif time.monotonic() - self.said > PROGRESS_SECONDS:
                    self.said = time.monotonic()
                    _say(self.line())

    def close(self) -> None:
        self.closed.set()
        if self.ticker is not None:
            self.ticker.join(5)
        if self.bar is not None:
            self.bar.close()


def _duration(seconds: float) -> str:
    """
    >>> _duration(42.4), _duration(600), _duration(4000)
    ('42 s', '10 min', '1 h 7 min')
    """
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min"
