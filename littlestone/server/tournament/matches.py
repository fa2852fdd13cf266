"""Playing one pairing of a tournament, wherever its agents live.

- built-in pairs: through the local driver, logged (:func:`play_builtin`, run in a
  worker process or on Ray);
- submitted files: each runs in its :class:`~.sandbox.Sandbox` as ``littlestone connect
  unix:SOCKET --tournament NAME``, an entrant of the tournament's own server
  (:class:`Arena`), with a one-time credential on its standard input that is good for
  entering this tournament once and is revoked when its game ends. The server dictates
  the game (rules, opponent, seed): the agent learns only its own seed
  (:func:`play_file_agent`);
- remote agents: the entrants connected with ``--tournament`` over TCP
  (:func:`play_remote_agent`).

Each returns (or records) an outcome: ``game_id``, ``status``, ``message``, ``result``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import hashlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from littlestone.adversaries import ADVERSARIES
from littlestone.games.errors import ProtocolError, SandboxError
from littlestone.learners import LEARNERS
from littlestone.protocol.frames import FrameSocket
from littlestone.sandbox import LoadedSandbox, Run, Sandbox, SandboxPool
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.records.logged import play_logged
from littlestone.server.records.rows import GameOutcome, GameRow, ResultRow, result_row
from littlestone.server.records.store import RESULT_COLUMNS, Store
from littlestone.server.tournament.config import (
    TournamentConfig,
    file_of,
    is_file_agent,
    remote_account,
)
from littlestone.server.tournament.direct import Door, play_direct, thread_store
from littlestone.server.tournament.pairing import Pairing, rules

__all__ = ["ENTER_SECONDS", "Arena", "play_builtin", "play_file_agent", "play_remote_agent"]

#: How long a submission has, once started, to enter its game, and how often the
#: tournament looks whether it has.
ENTER_SECONDS = 60.0
ENTER_POLL_SECONDS = 0.002
T = TypeVar("T")

def _outcome(row: GameRow, message: str) -> GameOutcome:
    """A played game's outcome, from its index row."""
    return {"game_id": row["game_id"], "status": row["status"], "message": message,
            "result": cast("ResultRow", {k: row[k] for k in RESULT_COLUMNS})}


def play_builtin(args: tuple[TournamentConfig, Pairing, str, str]) -> GameOutcome:
    """In a worker process: a built-in pair through the local driver, logged (at the log
    level of the fourth item, :data:`~littlestone.server.records.logs.LOG_LEVELS`)."""
    config, pairing, data, level = args
    done = play_logged(rules(config, pairing), LEARNERS.make(pairing.learner),
                       ADVERSARIES.make(pairing.adversary), pairing.seed, Path(data),
                       source=f"tournament:{config.name}", level=level)
    return {"game_id": done.game_id, "status": done.result.status,
            "message": done.result.message, "result": result_row(done.result)}


class Arena:
    """The tournament's game servers, in a thread of their own: on a private Unix socket
    for sandboxed submissions (``unix``), and on ``[tournament] listen`` for remote
    agents (``tcp``)."""

    def __init__(self, config: TournamentConfig, data: Path, unix: bool, tcp: bool) -> None:
        self.config, self.data = config, data
        self.want_unix, self.want_tcp = unix, tcp
        self.unix: GameServer | None = None
        self.tcp: GameServer | None = None
        self.socket: Path | None = None

    def __enter__(self) -> Arena:
        limits = self.config.limits
        self.folder = tempfile.TemporaryDirectory(prefix="littlestone-arena-")
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        failed: list[BaseException] = []

        async def start() -> None:
            common = {"data": self.data, "move_deadline": limits.move_deadline,
                      "time_bank": limits.time_bank}
            if self.want_unix:
                self.socket = Path(self.folder.name) / "littlestone.sock"
                self.unix = GameServer(ServerSettings(unix=self.socket, **common))  # type: ignore[arg-type]
                self.unix.tournaments.add(self.config.name)
                await self.unix.start()
                self.socket.chmod(0o666)  # a sandbox's uid connects; the folder is private
            if self.want_tcp:
                host, _, port = self.config.listen.rpartition(":")
                self.tcp = GameServer(ServerSettings(host=host, port=int(port), **common))  # type: ignore[arg-type]
                self.tcp.tournaments.add(self.config.name)
                await self.tcp.start()

        def run() -> None:  # the servers and their SQLite connections live in this thread
            asyncio.set_event_loop(self.loop)
            try:
                self.loop.run_until_complete(start())
            except BaseException as exc:  # e.g. the TCP port is taken
                failed.append(exc)
                ready.set()
                return
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(30)
        if failed:
            self.folder.cleanup()
            raise failed[0]
        return self

    @property
    def url(self) -> str:
        """Where remote agents connect."""
        assert self.tcp is not None
        return self.tcp.url

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coroutine`` on the servers' loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            for server in (self.unix, self.tcp):
                if server is not None:
                    await server.release(self.config.name)
                    await server.stop()

        try:
            self.call(stop(), 60)
        except (TimeoutError, concurrent.futures.TimeoutError):
            print("littlestone: warning: the tournament's server did not stop in 60 s",
                  file=sys.stderr)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        if not self.thread.is_alive():
            # (left open, the loop would be closed by the garbage collector, later, in
            # whatever code runs then, where its finalizer fails if the stack is full)
            self.loop.close()
        self.folder.cleanup()


#: What runs a submission's process for a game: (arguments, timeout, standard input,
#: game over?, census, alone) -> its Run (:meth:`.Sandbox.run`, :meth:`.LoadedSandbox.run`).
Runner = Callable[[list[str], float, bytes, Callable[[], bool],
                   Callable[[Callable[[], bool]], None], bool], Run]


def play_file_agent(config: TournamentConfig, pairing: Pairing, arena: Arena,
                    sandbox: Sandbox, pool: SandboxPool | None = None,
                    files: Mapping[str, Path] | None = None,
                    door: Door | None = None) -> GameOutcome:
    """A game with one or two submitted files, each in its sandbox: a fresh child of the
    file's loaded sandbox in ``pool`` (loaded once, :class:`.SandboxPool`), or without a
    pool a sandbox of its own, started for this game alone. Each enters with a one-time
    credential: with a ``door``, on a direct link that this thread referees
    (:mod:`.direct`); else into the arena's Unix-socket game server. ``files``: where a
    spec's file is, when not where the config says (a Ray node's copy)."""
    server = arena.unix
    assert server is not None and arena.socket is not None
    tag = hashlib.sha256(f"{config.name}|{pairing.key}".encode()).hexdigest()[:16]
    roles = [(role, spec) for role, spec in (("learner", pairing.learner),
                                             ("adversary", pairing.adversary))
             if is_file_agent(spec)]
    accounts = {role: f"{role}-{tag}" for role, _ in roles}
    timeout = (ENTER_SECONDS + config.rounds * config.limits.move_deadline
               + config.limits.time_bank + 30)
    over = threading.Event()
    runs: dict[str, concurrent.futures.Future[Run]] = {}
    counts: dict[str, Callable[[], bool]] = {}
    unloaded: dict[str, str] = {}
    with contextlib.ExitStack() as leases, \
            concurrent.futures.ThreadPoolExecutor(max_workers=len(roles)) as threads:
        runners: dict[str, Runner] = {}
        loaded: list[LoadedSandbox] = []
        leased: dict[str, LoadedSandbox] = {}
        for role, spec in roles:  # (in one order: two games never wait for each other)
            file = _file(config, spec, files)
            if pool is None:
                runners[role] = functools.partial(_fresh, sandbox, file, arena.socket)
                continue
            try:
                loaded.append(leases.enter_context(pool.lease(f"{role}:{spec}", file)))
            except SandboxError as exc:
                unloaded[role] = str(exc)
                continue
            runners[role] = loaded[-1].run
            leased[role] = loaded[-1]
        if door is not None and leased:  # (after the loads: a sandbox loaded now would
            # keep this thread's one CPU)
            cpus = leases.enter_context(_one_cpu())
            for role, each in leased.items():
                runners[role] = functools.partial(each.run, cpus=cpus)
        links: dict[str, concurrent.futures.Future[FrameSocket]] = {}
        tokens: list[str] = []
        for role, spec in roles:
            if role not in runners:
                continue
            file, rest = _file(config, spec, files), file_of(spec, config.base)[1]
            if door is not None:
                token, links[role] = door.expect()
                tokens.append(token)
                args = ["direct", sandbox.socket(door.path), role, f"{sandbox.inside(file)}:{rest}"]
            else:
                token = arena.call(_grant(server, config.name, accounts[role]))
                args = ["connect", f"unix:{sandbox.socket(arena.socket)}", f"--{role}",
                        f"{sandbox.inside(file)}:{rest}", "--tournament", config.name,
                        "--token-file", "-", "--name", accounts[role]]
            runs[role] = threads.submit(runners[role], args, timeout, (token + "\n").encode(),
                                        over.is_set, functools.partial(counts.__setitem__,
                                                                       role), True)
        game_id = None
        if door is not None:
            entered = _await_links(links, runs)
            for token in tokens:
                door.revoke(token)
            came = set(entered)
            try:
                if len(came) == len(roles):
                    game_id = play_direct(config, pairing, entered, accounts, arena.data)
                forked = {role for role in came if role in counts and counts[role]()}
            finally:
                for link in entered.values():
                    link.close()
            row = thread_store(arena.data).game(game_id) if game_id else None
        else:
            came = _await_entrants(server, config.name, accounts, runs)
            if len(came) == len(roles):
                game_id = arena.call(_play(server, config, pairing, accounts))
            # before done: an agent waiting for it still has every process it started
            forked = {role for role in came if role in counts and counts[role]()}
            for account in accounts.values():
                arena.call(_release(server, config.name, account))
            row = arena.call(_game_row(server, game_id)) if game_id else None
        over.set()
        if row is not None and row["status"] == "complete" and not forked:
            for each in loaded:  # (what a process prints after a good game is not needed)
                each.end()
        outcomes = {role: future.result() for role, future in runs.items()}
    forked |= {role for role, run in outcomes.items() if run.forked}
    for role in forked:
        outcomes[role].forked = True
    notes = [f"the {role}'s sandbox could not be loaded: {why}"
             for role, why in unloaded.items()] + _notes(outcomes)
    if row is None:
        absent = [role for role, _ in roles if role not in came] or [roles[0][0]]
        status = f"crash:{absent[0] if len(absent) == 1 else 'both'}:no_game"
        return {"game_id": None, "status": status, "result": {"status": status},
                "message": "; ".join(notes) or f"the {' and the '.join(absent)} never "
                "started its game"}
    outcome = _outcome(row, "; ".join(notes))
    if forked and outcome["status"] == "complete":  # played to its end, but not alone
        status = f"forked:{next(iter(forked)) if len(forked) == 1 else 'both'}"
        outcome["status"] = outcome["result"]["status"] = status
    stalled = sorted(role for role, run in outcomes.items() if run.stalled)
    if stalled and outcome["status"].split(":")[1:2] != stalled:
        # it stopped or killed its own fork server, which watched it: whatever the game
        # became meanwhile (its opponent may have missed deadlines), it is its fault
        status = f"stalled:{stalled[0] if len(stalled) == 1 else 'both'}"
        outcome["status"] = outcome["result"]["status"] = status
    return outcome


@contextlib.contextmanager
def _one_cpu() -> Iterator[set[int] | None]:
    """This thread on the CPU it runs on now, for one game on direct links (and the
    game's processes with it: :meth:`.LoadedSandbox.run`'s ``cpus``), given back its
    CPUs after; yields that CPU (None where it cannot be told or kept: one CPU only).

    A round is four wake-ups in turn, the referee's and two game processes', never two
    at once: on one CPU each wakes its peer at the cost of a switch, where the kernel
    spread them over the CPUs and each wake-up crossed them (an interrupt, a cold cache):
    a game's CPU time fell by a third, its rounds' wall time by nearly half on this
    2-core machine (benchmarks/README.md, issue 42). The kernel chose the CPU, as it
    spreads the games at once; a game keeps it to its end."""
    cpus: set[int] | None = None
    allowed: set[int] = set()
    with contextlib.suppress(OSError, AttributeError, ValueError, IndexError):
        allowed = os.sched_getaffinity(0)
        if len(allowed) > 1:
            # (the thread's last CPU: field 39 of its stat)
            stat = Path("/proc/thread-self/stat").read_text().rpartition(")")[2].split()
            here = int(stat[36])
            if here in allowed:
                os.sched_setaffinity(0, {here})
                cpus = {here}
    try:
        yield cpus
    finally:
        if cpus is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, allowed)


def _file(config: TournamentConfig, spec: str, files: Mapping[str, Path] | None) -> Path:
    return files[spec] if files and spec in files else file_of(spec, config.base)[0]


def _fresh(sandbox: Sandbox, file: Path, socket: Path | None, args: list[str], timeout: float,
           stdin: bytes, game_over: Callable[[], bool],
           census: Callable[[Callable[[], bool]], None], alone: bool) -> Run:
    """One game's run in a sandbox of its own (the path without a pool)."""
    return sandbox.run(file, args, timeout, stdin, socket, game_over, census, alone)


async def _game_row(server: GameServer, game_id: str) -> GameRow | None:
    return server.store.game(game_id)


async def _grant(server: GameServer, tournament: str, account: str) -> str:
    return server.grant(tournament, account)


async def _release(server: GameServer, tournament: str, account: str) -> None:
    server.release_entrant(tournament, account)
    server.revoke(account)


async def _play(server: GameServer, config: TournamentConfig, pairing: Pairing,
                accounts: dict[str, str]) -> str | None:
    game = rules(config, pairing)
    if len(accounts) == 2:
        return await server.play_entrants(config.name, accounts["learner"],
                                          accounts["adversary"], game, pairing.seed)
    ((role, account),) = accounts.items()
    opponent = (ADVERSARIES.make(pairing.adversary) if role == "learner"
                else LEARNERS.make(pairing.learner))
    if server.entrant(config.name, account) != role:
        return None
    return await server.play_entrant(config.name, account, game, pairing.seed, opponent)


def _await_entrants(server: GameServer, tournament: str, accounts: dict[str, str],
                    runs: dict[str, concurrent.futures.Future[Run]]) -> set[str]:
    """The roles whose agent entered, waiting until all have or the others are gone."""
    deadline = time.monotonic() + ENTER_SECONDS
    entered: set[str] = set()
    while time.monotonic() < deadline:
        entered = {role for role, account in accounts.items()
                   if server.entrant(tournament, account) == role}
        waiting = [role for role in accounts if role not in entered]
        if not waiting or all(role not in runs or runs[role].done() for role in waiting):
            break
        time.sleep(ENTER_POLL_SECONDS)
    return entered


def _await_links(links: dict[str, concurrent.futures.Future[FrameSocket]],
                 runs: dict[str, concurrent.futures.Future[Run]]) -> dict[str, FrameSocket]:
    """The direct links of the roles whose game process entered and then made its agent
    (``ready``), waiting until all have or the others' processes are gone, at most
    :data:`ENTER_SECONDS` in all."""
    deadline = time.monotonic() + ENTER_SECONDS
    while time.monotonic() < deadline:
        waiting = [role for role, link in links.items() if not link.done()]
        if not waiting or all(runs[role].done() for role in waiting):
            break
        either: list[concurrent.futures.Future[Any]] = [links[role] for role in waiting]
        either += [runs[role] for role in waiting]
        concurrent.futures.wait(either, timeout=max(0.0, deadline - time.monotonic()),
                                return_when=concurrent.futures.FIRST_COMPLETED)
    entered = {}
    for role, link in links.items():  # each made its agent (imported the submission)?
        if not link.done() or link.cancelled():
            continue
        with contextlib.suppress(TimeoutError, EOFError, ProtocolError):
            if link.result().recv(deadline)["type"] == "ready":
                entered[role] = link.result()
                continue
        link.result().close()
    return entered


def _notes(outcomes: dict[str, Run]) -> list[str]:
    """What the submissions' runs say against them."""
    notes = []
    for role, run in outcomes.items():
        if run.forked:
            notes.append(f"the {role} started other processes (killed)")
        if run.over_memory:
            notes.append(f"the {role} held more memory than its limit over all its "
                         "processes (killed)")
        if run.stalled:
            notes.append(f"the {role} stopped or killed its own sandbox (killed)")
        elif run.code is None and not run.ended:
            if not (run.forked or run.over_memory):  # (else killed for that, said above)
                notes.append(f"the {role} overran its time and was killed")
        elif run.code != 0 and not run.ended:  # (ended: killed at once after a good game)
            last = [line for line in run.err.strip().splitlines() if line][-1:] or [
                "no message"]
            notes.append(f"the {role} exited with status {run.code}: {last[0][:300]}")
        if run.truncated:
            notes.append(f"the {role}'s output was cut at its limit")
    return notes


def play_remote_agent(config: TournamentConfig, account: str, pairs: list[Pairing],
                      arena: Arena, record: Callable[[Pairing, GameOutcome], None]
                      ) -> None:
    """Every game of one remote agent, in turn, on its connection (it enters with
    ``littlestone connect URL --token-file F --learner SPEC --tournament NAME``)."""
    server = arena.tcp
    assert server is not None
    deadline = time.monotonic() + config.limits.remote_wait
    role = None
    while time.monotonic() < deadline:
        role = server.entrant(config.name, account)
        if role is not None:
            break
        time.sleep(0.1)
    store = Store(arena.data)  # this thread's own connection
    for pairing in pairs:
        wanted = "learner" if remote_account(pairing.learner) == account else "adversary"
        if role != wanted:
            status = f"absent:{wanted}"
            why = (f"remote agent {account!r} did not enter within {config.limits.remote_wait} s"
                   if role is None else f"remote agent {account!r} entered as a {role}")
            record(pairing, {"game_id": None, "status": status, "message": why,
                             "result": {"status": status}})
            continue
        opponent = (ADVERSARIES.make(pairing.adversary) if wanted == "learner"
                    else LEARNERS.make(pairing.learner))
        game_id = arena.call(server.play_entrant(config.name, account, rules(config, pairing),
                                                 pairing.seed, opponent))
        row = store.game(game_id) if game_id else None
        if row is None:
            record(pairing, {"game_id": None, "status": f"disconnected:{wanted}",
                             "message": f"remote agent {account!r} left",
                             "result": {"status": f"disconnected:{wanted}"}})
        else:
            record(pairing, _outcome(row, ""))
        role = server.entrant(config.name, account)
    store.close()
