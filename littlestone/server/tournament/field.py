"""A field of submissions: each loaded once, its games grouped, on local workers or Ray.

A game with a submitted file is played by a fresh child of the file's loaded sandbox
(:class:`~littlestone.sandbox.SandboxPool`), refereed on a direct link (:mod:`.direct`;
the experts game in a game server); a :class:`FieldWorker` holds the referee's socket
and a game server on private Unix sockets (an :class:`~.matches.Arena`), a pool of
loaded sandboxes bounded by memory, and plays :data:`GAMES_AT_ONCE` games at a time,
never two at once in one sandbox. :func:`plan` cuts the games into :class:`Job` s so
that few sandboxes are loaded at once: the submitted adversaries in blocks that a worker
keeps loaded, every learner's games against a block together, one learner after
another.

Workers run in processes of their own on this machine (:class:`LocalWorker`, writing
into the data folder as built-in games do), or as Ray actors (:class:`RayWorker`) that
play into a folder of their own and send each game's log and index row back: the
tournament's process alone writes the data folder (:func:`land`), so that the nodes
share no file system. Submitted files travel with the jobs, by their bytes.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import hashlib
import math
import multiprocessing.connection
import os
import resource
import shutil
import signal
import tempfile
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from littlestone.adversaries import ADVERSARIES
from littlestone.games.errors import Terminated
from littlestone.learners import LEARNERS
from littlestone.sandbox import Sandbox, SandboxPool
from littlestone.server.net.hosts import die_with_fork_server, fork_server
from littlestone.server.records.logged import index_landed, play_logged
from littlestone.server.records.logs import read_log
from littlestone.server.records.rows import GameOutcome, GameRow, result_row
from littlestone.server.records.store import Store
from littlestone.server.tournament.config import TournamentConfig, file_of, is_file_agent
from littlestone.server.tournament.direct import Door, direct_game
from littlestone.server.tournament.matches import Arena, play_file_agent
from littlestone.server.tournament.pairing import Entrant, Pairing, probe, rules

__all__ = ["GAMES_AT_ONCE", "SANDBOX_MB", "TERMINATE_WAIT_S", "FieldWorker", "Job",
           "LocalWorker", "RayWorker", "default_sandboxes", "land", "plan", "play_jobs",
           "sandbox_keys"]

#: Games a worker plays at once (each with its own sandboxes: a sandbox plays one game
#: at a time). A game mostly waits on its players' round trips, and a slow entrant's
#: game on its moves: three keep a worker's core busy.
GAMES_AT_ONCE = 3
#: Seconds a worker that got SIGTERM gives its games to end (a move awaited on a direct
#: link ends by its deadline) before it exits whatever holds it.
TERMINATE_WAIT_S = 10.0
#: The memory a loaded sandbox is reckoned to hold, for :func:`default_sandboxes`: its
#: fork server (Python, numpy and the package) measured 61 MiB resident, 45 MiB
#: proportional, 41 MiB of its own; a game's child adds its own pages while it runs.
SANDBOX_MB = 64
#: The share of the machine's available memory that loaded sandboxes may take.
SANDBOX_MEMORY_SHARE = 0.25
#: Learners a job holds (a worker's unit of work: about a minute of games).
JOB_LEARNERS = 4


def default_sandboxes() -> int:
    """How many loaded sandboxes may be alive at once on this machine: a quarter of its
    available memory, :data:`SANDBOX_MB` each (at least 4)."""
    available = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) >> 10
    return max(4, int(available * SANDBOX_MEMORY_SHARE) // SANDBOX_MB)


def sandbox_keys(pairing: Pairing) -> set[str]:
    """The loaded sandboxes a game needs: one per submitted side (role and spec)."""
    return {f"{role}:{spec}" for role, spec in (("learner", pairing.learner),
                                                ("adversary", pairing.adversary))
            if is_file_agent(spec)}


@dataclass(frozen=True)
class Job:
    """Games for one worker, in order: ``block`` names the submitted adversaries they
    share (a worker that keeps a block's sandboxes loaded takes its next job)."""

    block: int
    games: tuple[Pairing, ...]
    #: Built-in pairs only (on Ray: played by the same actors, through the local driver).
    builtin: bool = False


def plan(games: list[Pairing], workers: int, capacity: int) -> list[Job]:
    """Cut the games with submissions into jobs: the submitted adversaries in blocks
    that fit a worker's ``capacity`` of loaded sandboxes beside the learners it plays
    at once (at least one block per worker), and in each block every learner's games
    against it together, :data:`JOB_LEARNERS` learners a job. A submitted learner's
    games against built-in adversaries go with its games in one block.

    >>> g = [Pairing("mistake-bound", "c", f"l{i}.py:L", f"a{j}.py:A", 0)
    ...      for i in range(3) for j in range(4)]
    >>> [(job.block, len(job.games)) for job in plan(g, 2, 8)]
    [(0, 6), (1, 6)]
    """
    adversaries = sorted({g.adversary for g in games if is_file_agent(g.adversary)})
    per_block = max(1, capacity - GAMES_AT_ONCE - 2)
    count = max(min(workers, len(adversaries)), math.ceil(len(adversaries) / per_block), 1)
    blocks = [adversaries[k::count] for k in range(count)]
    block_of = {a: k for k, block in enumerate(blocks) for a in block}
    learners = sorted({g.learner for g in games})
    home = {learner: i % count for i, learner in enumerate(learners)}
    if not adversaries:  # learners against built-ins only: spread them over the workers
        count = max(1, min(workers, len(learners)))
        home = {learner: i % count for i, learner in enumerate(learners)}
    by: dict[tuple[int, str], list[Pairing]] = {}
    for game in games:
        block = block_of.get(game.adversary, home[game.learner])
        by.setdefault((block, game.learner), []).append(game)
    jobs = []
    for block in range(count):
        mine = [learner for learner in learners if (block, learner) in by]
        for start in range(0, len(mine), JOB_LEARNERS):
            chunk = mine[start:start + JOB_LEARNERS]
            jobs.append(Job(block, tuple(g for learner in chunk for g in by[(block, learner)])))
    return jobs


class _Picker:
    """Hands a job's games to the worker's threads: the first whose sandboxes are free."""

    def __init__(self, games: tuple[Pairing, ...]) -> None:
        self.games = [(game, sandbox_keys(game)) for game in games]
        self.busy: set[str] = set()
        self.changed = threading.Condition()

    def take(self) -> Pairing | None:
        with self.changed:
            while self.games:
                for i, (game, keys) in enumerate(self.games):
                    if not keys & self.busy:
                        del self.games[i]
                        self.busy |= keys
                        return game
                self.changed.wait()
            return None

    def done(self, game: Pairing) -> None:
        with self.changed:
            self.busy -= sandbox_keys(game)
            self.changed.notify_all()


class FieldWorker:
    """An arena (a game server on a private Unix socket, writing into ``data``), the
    referee's door for direct links (:mod:`.direct`: the mistake-bound game, refereed
    in the game's own thread) and a pool of at most ``capacity`` loaded sandboxes,
    playing jobs :data:`GAMES_AT_ONCE` games at a time. ``files`` maps a submitted spec
    to its file where it is not where the config says (a Ray node's own copy)."""

    def __init__(self, config: TournamentConfig, data: Path, unsafe: bool, capacity: int,
                 files: Mapping[str, Path] | None = None, at_once: int = GAMES_AT_ONCE) -> None:
        self.config, self.data, self.files = config, data, dict(files or {})
        self.at_once = at_once
        self.sandbox = Sandbox(config.limits, unsafe=unsafe)
        self.arena = Arena(config, data, unix=True, tcp=False).__enter__()
        #: The referee's socket for direct links (:mod:`.direct`), bound into the loaded
        #: sandboxes in place of the arena's game server (which plays the experts game).
        self.door = Door(Path(self.arena.folder.name)) if direct_game(config) else None
        self.pool = SandboxPool(self.sandbox, self.door.path if self.door is not None
                                else self.arena.socket, capacity)
        #: The threads playing a game now (:meth:`interrupt` stops their games).
        self._players: set[int] = set()
        self._players_lock = threading.Lock()
        self._stopping = False

    def probe(self, role: str, spec: str) -> Entrant:
        """Load an entrant (into the pool) and ask which of the tournament's games it
        can play."""
        return probe(self.config, spec, role, self.sandbox, pool=self.pool,
                     file=self.files.get(spec))

    def play(self, games: tuple[Pairing, ...],
             on_game: Callable[[Pairing, GameOutcome], None]) -> None:
        """Play ``games``, handing each outcome to ``on_game`` as it ends."""
        picker = _Picker(games)

        def player() -> None:
            while (game := picker.take()) is not None:
                with self._players_lock:
                    if self._stopping:  # (stopped: no new game)
                        picker.done(game)
                        return
                    self._players.add(threading.get_ident())
                try:
                    outcome = play_file_agent(self.config, game, self.arena, self.sandbox,
                                              self.pool, self.files, self.door)
                finally:
                    with self._players_lock:
                        self._players.discard(threading.get_ident())
                    picker.done(game)
                on_game(game, outcome)

        with concurrent.futures.ThreadPoolExecutor(max_workers=self.at_once) as threads:
            for done in [threads.submit(player) for _ in range(self.at_once)]:
                done.result()

    def interrupt(self) -> int:
        """Stop the games being played (a SIGTERM): :class:`~littlestone.games.errors.
        Terminated` is raised in each game's thread, as a signal would in the main
        thread, so that each ends as a stop from outside does (its log's footer, its row
        ``interrupted``: :func:`~littlestone.server.records.logged.recorded`), at its
        next step of Python (a move awaited on a direct link: by its deadline at the
        latest); its outcome is not sent, so a restart plays its pairing again. Returns
        the games stopped."""
        with self._players_lock:
            self._stopping = True
            players = list(self._players)
        for ident in players:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                                       ctypes.py_object(Terminated))
        return len(players)

    @property
    def loads(self) -> int:
        return self.pool.loads

    def cpu_seconds(self) -> float:
        """The CPU time of this worker's process and of the sandboxes it loaded."""
        own = resource.getrusage(resource.RUSAGE_SELF)
        return own.ru_utime + own.ru_stime + self.pool.cpu_seconds()

    def ship(self, game_id: str | None) -> Shipped | None:
        """:func:`ship` a game of this worker's arena (read in the arena's own thread)."""
        server = self.arena.unix
        assert server is not None

        async def shipped() -> Shipped | None:
            return ship(server.store, game_id)

        return self.arena.call(shipped())

    def close(self) -> None:
        self.pool.close()
        if self.door is not None:
            self.door.close()
        self.arena.__exit__(None, None, None)


# -- local workers: processes of their own --------------------------------------------

def serve_worker(conn: multiprocessing.connection.Connection,
                 environment: Mapping[str, str]) -> None:
    """A local worker process (:class:`LocalWorker`): a FieldWorker on the data folder,
    serving the connection ``conn``, in its tournament's ``environment``."""
    # (a grandchild through the fork server: the rating process's own death signal
    # does not reach it)
    die_with_fork_server()
    os.environ.clear()  # (the fork server's is as it was when the fork server started)
    os.environ.update(environment)
    config, data, unsafe, capacity = conn.recv()
    worker = FieldWorker(config, Path(data), unsafe, capacity)
    sending = threading.Lock()

    def terminated(signum: int, frame: Any) -> None:
        # (the games end with their footers; the process ends when they have, or
        # after TERMINATE_WAIT_S whatever holds it)
        worker.interrupt()
        watchdog = threading.Timer(TERMINATE_WAIT_S, os._exit, (143,))
        watchdog.daemon = True
        watchdog.start()
        raise Terminated

    signal.signal(signal.SIGTERM, terminated)

    def send(*message: Any) -> None:
        with sending:
            conn.send(message)

    try:
        while True:
            try:
                message = conn.recv()
            except EOFError:  # (the tournament is gone)
                break
            if message[0] == "stop":
                break
            try:
                if message[0] == "probe":
                    for role, spec in message[1]:
                        send("probed", role, spec, worker.probe(role, spec))
                else:
                    worker.play(message[1], lambda game, outcome: send("game", game, outcome))
            except Exception:  # a bug of ours: the tournament says it and stops
                send("error", traceback.format_exc())
            send("done", worker.loads, worker.cpu_seconds())
    except Terminated:  # (its games ended interrupted: nothing more to say)
        pass
    finally:
        worker.close()


class LocalWorker:
    """A :class:`FieldWorker` in a process of its own, writing into the data folder; it
    is spoken to over a pipe. The process comes from the hosts' fork server (numpy and
    the agents imported already), never forked from the tournament's process: that runs
    threads, and may be anybody's script."""

    def __init__(self, config: TournamentConfig, data: Path, unsafe: bool, capacity: int) -> None:
        context = fork_server()
        self.conn, theirs = context.Pipe(duplex=True)
        # (not a daemon: a daemon's hosts, its games' built-in agents, could not start)
        self.process = context.Process(target=serve_worker, args=(theirs, dict(os.environ)),
                                       name="littlestone-field-worker")
        self.process.start()
        theirs.close()
        self.conn.send((config, str(data), unsafe, capacity))
        self.loads = 0
        #: The CPU seconds of the worker's process and sandboxes, as of its last job.
        self.cpu = 0.0

    def _serve(self, message: tuple[Any, ...], on: Callable[[tuple[Any, ...]], None]) -> None:
        self.conn.send(message)
        while True:
            try:
                answer = self.conn.recv()
            except EOFError:
                raise RuntimeError("a tournament worker process died") from None
            if answer[0] == "done":
                self.loads, self.cpu = answer[1], answer[2]
                return
            if answer[0] == "error":
                raise RuntimeError(f"a tournament worker failed:\n{answer[1]}")
            on(answer)

    def probe(self, entrants: list[tuple[str, str]]) -> dict[tuple[str, str], Entrant]:
        found: dict[tuple[str, str], Entrant] = {}
        self._serve(("probe", entrants), lambda a: found.__setitem__((a[1], a[2]), a[3]))
        return found

    def play(self, job: Job, on_game: Callable[[Pairing, GameOutcome], None]) -> None:
        self._serve(("play", job.games), lambda a: on_game(a[1], a[2]))

    def terminate(self) -> None:
        """Stop the worker now (its tournament was stopped by a signal): SIGTERM, which
        ends its games in play ``interrupted`` with their footers (:meth:`FieldWorker.
        interrupt`), and wait for it (:data:`TERMINATE_WAIT_S` and a little more)."""
        if self.process.exitcode is None and self.process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)
            self.process.join(TERMINATE_WAIT_S + 2)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(("stop",))
        self.process.join(30)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        self.process.close()
        self.conn.close()


# -- Ray: actors with a folder of their own, sending logs back -------------------------

class Shipped(TypedDict):
    """A game sent back from a Ray node (:func:`ship`): its index row (without its log's
    path there), its log's bytes and the agents (spec, SHA-256) its header names."""

    row: dict[str, Any]  # a GameRow less its log, handed on as start_game's GameStart
    log: bytes | None
    agents: list[tuple[str, str]]


def ship(store: Store, game_id: str | None) -> Shipped | None:
    """A game played into a worker's own data folder, as :func:`land` takes it back:
    its index row, its log's bytes and the agents its header names; the log is then
    removed from the worker's folder."""
    if game_id is None:
        return None
    row = store.game(game_id)
    if row is None:
        return None
    log = Path(row["log"]) if row["log"] else None
    data = log.read_bytes() if log is not None and log.is_file() else None
    agents = []
    if log is not None and data is not None:
        with contextlib.suppress(Exception):
            header = read_log(log).header
            agents = [(header[r]["spec"], header[r]["sha256"]) for r in ("learner", "adversary")]
        log.unlink()
    return {"row": {k: v for k, v in row.items() if k != "log"}, "log": data,
            "agents": agents}


def land(store: Store, shipped: Shipped | None) -> None:
    """Write a game played on another node into this data folder: its log under
    ``games/`` and its index row, anchored under this folder's key (the log's chain
    digest, as the node recorded it)."""
    if shipped is None:
        return
    row = shipped["row"]
    game_id = row["game_id"]
    path = None
    if shipped["log"] is not None:
        path = store.data / "games" / f"{game_id}.lslog"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(shipped["log"])
    index_landed(store, cast("GameRow", row), path)  # (a GameRow less its log)
    for spec, sha256 in shipped["agents"]:
        store.add_agent(spec, sha256)


class _RayField:
    """The body of a Ray actor: a FieldWorker on a folder of its own; the submitted
    files arrive by their bytes (kept by SHA-256, under their own names)."""

    def __init__(self, config: TournamentConfig, unsafe: bool, capacity: int) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="littlestone-ray-"))
        self.config, self.unsafe, self.capacity = config, unsafe, capacity
        self.files: dict[str, Path] = {}
        self.worker: FieldWorker | None = None

    def _ready(self, files: Mapping[str, tuple[str, bytes]]) -> FieldWorker:
        for spec, (name, content) in files.items():
            if spec not in self.files:
                folder = self.folder / "files" / hashlib.sha256(content).hexdigest()
                folder.mkdir(parents=True, exist_ok=True)
                (folder / name).write_bytes(content)
                self.files[spec] = folder / name
        if self.worker is None:
            self.worker = FieldWorker(self.config, self.folder / "data", self.unsafe,
                                      self.capacity, self.files)
        self.worker.files.update(self.files)
        return self.worker

    def probe(self, entrants: list[tuple[str, str]],
              files: Mapping[str, tuple[str, bytes]]) -> list[tuple[str, str, Entrant]]:
        worker = self._ready(files)
        return [(role, spec, worker.probe(role, spec)) for role, spec in entrants]

    def play(self, games: tuple[Pairing, ...], files: Mapping[str, tuple[str, bytes]]
             ) -> tuple[list[tuple[Pairing, GameOutcome, Shipped | None]], int,
                        float]:
        worker = self._ready(files)
        out: list[tuple[Pairing, GameOutcome, Shipped | None]] = []
        lock = threading.Lock()

        def keep(game: Pairing, outcome: GameOutcome) -> None:
            shipped = worker.ship(outcome.get("game_id"))
            with lock:
                out.append((game, outcome, shipped))

        worker.play(games, keep)
        return out, worker.loads, worker.cpu_seconds()

    def play_builtin(self, games: list[Pairing], level: str
                     ) -> list[tuple[Pairing, GameOutcome, Shipped | None]]:
        return play_builtin_batch(self.config, games, level)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def play_builtin_batch(config: TournamentConfig, games: list[Pairing], level: str
                       ) -> list[tuple[Pairing, GameOutcome, Shipped | None]]:
    """(On a Ray node.) Built-in pairs through the local driver, into a folder of its
    own, each sent back (:func:`ship`) and the folder removed."""
    folder = Path(tempfile.mkdtemp(prefix="littlestone-ray-"))
    out = []
    try:
        store = Store(folder)
        try:
            for game in games:
                done = play_logged(rules(config, game), LEARNERS.make(game.learner),
                                   ADVERSARIES.make(game.adversary), game.seed, folder,
                                   source=f"tournament:{config.name}", level=level)
                outcome: GameOutcome = {
                    "game_id": done.game_id, "status": done.result.status,
                    "message": done.result.message, "result": result_row(done.result)}
                out.append((game, outcome, ship(store, done.game_id)))
        finally:
            store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def submitted_files(config: TournamentConfig, specs: set[str]) -> dict[str, tuple[str, bytes]]:
    """The bytes of the submitted files ``specs`` name, as a Ray node receives them."""
    out = {}
    for spec in specs:
        if is_file_agent(spec):
            file, _ = file_of(spec, config.base)
            with contextlib.suppress(OSError):
                out[spec] = (file.name, file.read_bytes())
    return out


class RayWorker:
    """A :class:`FieldWorker` as a Ray actor (``ray`` imported and initialised by the
    caller), on a node of the cluster: the games come back with their logs, which
    :func:`land` writes into the data folder."""

    def __init__(self, ray: Any, config: TournamentConfig, store: Store,
                 landing: threading.Lock, unsafe: bool, capacity: int,
                 options: dict[str, Any] | None = None) -> None:  # (Ray's, as given)
        self.ray, self.config, self.store, self.landing = ray, config, store, landing
        actor = ray.remote(num_cpus=1)(_RayField)
        self.actor = actor.options(**(options or {})).remote(config, unsafe, capacity)
        self.sent: set[str] = set()
        self.loads = 0
        self.cpu = 0.0

    def _files(self, specs: set[str]) -> dict[str, tuple[str, bytes]]:
        files = submitted_files(self.config, specs - self.sent)
        self.sent |= set(files)
        return files

    def probe(self, entrants: list[tuple[str, str]]) -> dict[tuple[str, str], Entrant]:
        found = self.ray.get(self.actor.probe.remote(entrants, self._files(
            {spec for _, spec in entrants})))
        return {(role, spec): entrant for role, spec, entrant in found}

    def play(self, job: Job, on_game: Callable[[Pairing, GameOutcome], None],
             level: str = "auto") -> None:
        if job.builtin:
            played = self.ray.get(self.actor.play_builtin.remote(list(job.games), level))
        else:
            specs = {s for g in job.games for s in (g.learner, g.adversary)}
            played, self.loads, self.cpu = self.ray.get(
                self.actor.play.remote(job.games, self._files(specs)))
        for game, outcome, shipped in played:
            with self.landing:
                land(self.store, shipped)
            on_game(game, outcome)

    def close(self) -> None:
        """End the actor, and let go of its handle now, while Ray runs: a handle freed
        later, by the garbage collector after the caller's ``ray.shutdown()``, may wait
        in Ray's own code (a test once waited 12 minutes in its teardown, in Ray's C++
        after its shutdown: the likeliest cause)."""
        with contextlib.suppress(Exception):
            self.ray.get(self.actor.close.remote(), timeout=60)
        with contextlib.suppress(Exception):
            self.ray.kill(self.actor)
        self.actor = None


def play_jobs(workers: list[Any], jobs: list[Job],
              on_game: Callable[[Pairing, GameOutcome], None], level: str = "auto") -> None:
    """Play every job on the workers (each a :class:`LocalWorker` or :class:`RayWorker`),
    one thread each: a worker takes the next job of the block it holds, else a block
    nobody holds, else the block with the most jobs left."""
    left: dict[int, list[Job]] = {}
    for job in jobs:
        left.setdefault(job.block, []).append(job)
    held: dict[int, int | None] = {}
    lock = threading.Lock()

    def next_job(worker: int) -> Job | None:
        with lock:
            block = held.get(worker)
            if block is None or not left.get(block):
                taken = {b for w, b in held.items() if w != worker}
                free = [b for b in sorted(left) if left[b] and b not in taken]
                busiest = sorted((b for b in left if left[b]), key=lambda b: -len(left[b]))
                choice: list[int | None] = [*free, *busiest, None]
                block = choice[0]
                held[worker] = block
            return left[block].pop(0) if block is not None else None

    def run(index: int) -> None:
        while (job := next_job(index)) is not None:
            if job.builtin:
                workers[index].play(job, on_game, level)
            else:
                workers[index].play(job, on_game)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(workers))) as threads:
        try:
            for done in [threads.submit(run, i) for i in range(len(workers))]:
                done.result()
        except BaseException:  # (a SIGTERM, or a worker's error: the others stop now,
            for worker in workers:  # their games in play ended with their footers)
                terminate = getattr(worker, "terminate", None)
                if terminate is not None:
                    terminate()
            raise


def probe_entrants(workers: list[Any], entrants: list[tuple[str, str]]
                   ) -> dict[tuple[str, str], Entrant]:
    """Load and probe the submitted ``entrants`` (role, spec), spread over the workers."""
    found: dict[tuple[str, str], Entrant] = {}
    if not entrants or not workers:
        return found
    shares = [entrants[i::len(workers)] for i in range(len(workers))]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(workers)) as threads:
        for done in [threads.submit(w.probe, s) for w, s in zip(workers, shares, strict=True)
                     if s]:
            found.update(done.result())
    return found
