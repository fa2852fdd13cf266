"""Server-side agents in processes of their own: the heavy ones a peer may challenge.

An agent whose moves may take long (``slow_moves``: exact Ldim, the randomised value,
a list rebuilt from every example), and any agent on a large class (its moves linear in
|H|: :data:`IN_PROCESS_HYPOTHESES`), is set up and played in a **host**, a process of its
own forked for its game from a fork server that has the agents imported (a few
milliseconds, no import; the fork server itself starts with the first host a process
needs, in the hosts' lane, about a second once: a server that hosts no agent never
pays for it), and killed when the game ends or its peer leaves: whatever it
computed and cached goes with it, and nothing it does can hold the server's event loop,
its threads or its memory. The host is held to :class:`HostLimits`:

- memory: its address space is capped (``RLIMIT_AS``) at what it had when it started
  plus the game's memory budget, and exact Ldim's caches at the solver budget (beyond
  either, the move fails with ``over_budget``);
- CPU: each call (the set-up, each move) may spend its CPU seconds and no more: a
  profiling timer (``ITIMER_PROF``, the process's CPU clock) stops it in the host, and
  the server kills a host whose call runs past them with a margin (a loop in C that the
  timer could not stop) and ends its game.

A host runs at a lower priority than the server (:data:`HOST_NICE`). The server's side
of an agent in a host is a :class:`HostedLearner` or
:class:`HostedAdversary`: a :class:`~littlestone.learners.Learner` (or
:class:`~littlestone.adversaries.Adversary`) whose moves are made in the host. A move
past its budget raises :class:`MoveOverBudget` (the runner scores it as the agent's
``over_budget`` fault); a host that died raises :class:`HostGone`.

>>> from littlestone.games.classes import make_class
>>> from littlestone.games.game import GameSpec
>>> from littlestone.learners import LEARNERS
>>> game = GameSpec("mistake-bound", 5, make_class("thresholds:n=7"))
>>> import asyncio
>>> host = AgentHost.open(HostLimits(setup_cpu_s=5.0, move_cpu_s=1.0,
...                                  memory_bytes=256 << 20, solver_bytes=64 << 20))
>>> soa = asyncio.run(host.set_up(LEARNERS.make("soa"), game, seed=1))
>>> soa.predict(3), soa.predict(0), isinstance(soa, Learner)
(1.0, 1.0, True)
>>> host.kill(); host.alive
False
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import importlib
import math
import multiprocessing
import multiprocessing.connection
import os
import pickle
import resource
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from littlestone.adversaries.base import Adversary
from littlestone.games.agents import Agent
from littlestone.games.classes import FiniteClass
from littlestone.games.errors import (
    BudgetExceeded,
    CpuSpent,
    HostGone,
    MoveOverBudget,
    UnsupportedGame,
)
from littlestone.games.game import EXPERTS, Bound, GameSpec
from littlestone.learners.base import Learner
from littlestone.protocol.messages import rules_from_wire, rules_to_wire
from littlestone.protocol.wire import Rules
from littlestone.sandbox.kernel import die_with_parent

__all__ = ["HOST_PRELOAD", "IN_PROCESS_HYPOTHESES", "IN_PROCESS_SEQUENCE", "AgentHost",
           "HostGone", "HostLimits", "HostedAdversary", "HostedLearner", "MoveOverBudget",
           "fork_server", "hosted", "sequence_size"]

#: What the fork server imports once, so that a host starts with the agents loaded.
HOST_PRELOAD = ["numpy", "networkx", "littlestone.learners", "littlestone.adversaries",
                "littlestone.games.ldim", "littlestone.games.randomized",
                "littlestone.server.net.hosts"]
#: CPU seconds a call may run past its budget before the server kills its host (the
#: profiling timer stops it well before, in Python code), and how often it looks.
KILL_MARGIN_S = 1.0
WATCH_EVERY_S = 0.25
#: The niceness of a host: on a busy machine the server's own process (admissions, the
#: index, the page, the moves it relays) runs first.
HOST_NICE = 10


@dataclass(frozen=True)
class HostLimits:
    """What a host may spend: CPU seconds of its set-up and of each move (its process's
    CPU clock), bytes of address space beyond what it started with, bytes of exact
    Ldim's caches (counted as they are made: :attr:`~littlestone.games.ldim.LdimSolver.nbytes`)."""

    setup_cpu_s: float
    move_cpu_s: float
    memory_bytes: int
    solver_bytes: int
    #: CPU seconds of all the moves of its game (awaited by the server's driver: each is
    #: within ``move_cpu_s``): once spent, every further move is ``over_budget``
    #: without being asked (the third forfeits), so that a long game of an agent whose
    #: moves cost tens of milliseconds (soa-experts: every state's exact Ldim) cannot
    #: take the machine's CPU for hours.
    game_cpu_s: float = math.inf


#: The game of a hosted agent's set-up, as the calls that take one say it (the host
#: keeps its own copy; a class is not pickled for each call).
_GAME = "__game__"

_context_lock = threading.Lock()
_context: Any = None


#: The environment the fork server starts in: numpy's libraries on one thread (a host
#: computes on one core, and a thread's memory arena would be address space the host's
#: cap does not see used).
HOST_ENVIRONMENT = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                           "MKL_NUM_THREADS")}


def fork_server() -> Any:
    """The multiprocessing context whose fork server has :data:`HOST_PRELOAD` imported,
    running (started at its first use, once a process, in :data:`HOST_ENVIRONMENT`).

    multiprocessing has one fork server a process, and whoever starts it decides what it
    imports and its environment: the hosts, a tournament's pool and a sweep's pool all
    take their processes from here. (A host that still finds its modules not imported,
    from a fork server its caller started, imports them before it caps its size.)"""
    global _context
    with _context_lock:
        if _context is None:
            from multiprocessing import forkserver

            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(HOST_PRELOAD)
            saved = {name: os.environ.get(name) for name in HOST_ENVIRONMENT}
            os.environ.update(HOST_ENVIRONMENT)
            try:
                forkserver.ensure_running()
            finally:
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
            _context = context
        return _context


def die_with_fork_server() -> None:
    """(First thing in a process the fork server forked.) Killed when the fork server
    ends, and the fork server ends when the process that started it does, ``kill -9``
    included: no host or field worker outlives a killed server or rating process.

    multiprocessing hands every process it forks the write end of the fork server's
    "alive" pipe, so that the fork server ends only once all of them have: with each
    child also dying with the fork server, neither would ever end. A child here starts
    a fork server of its own if it needs one (multiprocessing does, as the pipe's end
    is all it inherits), so it closes the one it inherited."""
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver  # (multiprocessing's one fork server; private)
    alive = server._forkserver_alive_fd
    if alive is not None and server._forkserver_pid is None:  # (inherited, not its own)
        with contextlib.suppress(OSError):
            os.close(alive)
        server._forkserver_alive_fd = None
    die_with_parent(requester=getattr(multiprocessing.parent_process(), "pid", None))


def _reap(process: Any) -> None:
    """Wait for a killed host's end (a second at most), and release what its process
    object holds."""
    with contextlib.suppress(Exception):
        process.join(timeout=1.0)
        process.close()


def _cpu_of(pid: int) -> float | None:
    """CPU seconds (user and system) process ``pid`` has spent, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


_TICKS = os.sysconf("SC_CLK_TCK")


class AgentHost:
    """One agent's process: set it up (:meth:`set_up`), call its moves, kill it.
    One caller at a time (a game's moves come one after another)."""

    def __init__(self, limits: HostLimits, process: Any,
                 connection: multiprocessing.connection.Connection) -> None:
        self.limits = limits
        self._process = process
        self._connection = connection
        self.pid: int = process.pid
        #: CPU seconds of the host's calls (as it measured them): its set-up, its moves.
        self.setup_cpu = 0.0
        #: CPU seconds of the last moves (a few: a long game keeps no list of them all),
        #: and of all its moves.
        self.move_cpu: collections.deque[float] = collections.deque(maxlen=64)
        self.moves_cpu = 0.0
        self._killed = False

    @classmethod
    def open(cls, limits: HostLimits) -> AgentHost:
        """A new host (blocks a few milliseconds; the first in a process also starts the
        fork server, about a second)."""
        context = fork_server()
        mine, theirs = context.Pipe(duplex=True)
        process = context.Process(target=_host_main, args=(theirs, limits), daemon=True,
                                  name="littlestone-host")
        process.start()
        theirs.close()
        return cls(limits, process, mine)

    @property
    def alive(self) -> bool:
        return not self._killed and self._process.is_alive()

    def on_closed(self, _: object) -> None:
        """A callback: a player of the host's game left (:meth:`kill`)."""
        self.kill()

    def kill(self) -> None:
        """End the host now (SIGKILL): its work stops, its memory is the system's. Its
        end is waited for in a thread of its own: the caller is the server's loop, and
        the kernel takes tens of milliseconds to free a large host's memory (45 ms for
        500 MiB here), which the loop's admissions must not wait behind."""
        if self._killed:
            return
        self._killed = True
        with contextlib.suppress(Exception):
            self._process.kill()
        with contextlib.suppress(Exception):
            self._connection.close()
        threading.Thread(target=_reap, args=(self._process,), daemon=True,
                         name="littlestone-host-reaper").start()

    # -- calls -------------------------------------------------------------------------

    def _send(self, message: tuple[Any, ...]) -> None:
        """Send a call."""
        if self._killed:
            raise HostGone("the agent's process was stopped (its game is over)")
        try:
            self._connection.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            self.kill()
            raise HostGone("the agent's process is gone") from exc

    def _watch(self, first: float | None, cpu_s: float) -> float:
        """A look at a call that runs long (every :data:`WATCH_EVERY_S`): kill the host
        once it has spent more than ``cpu_s`` + :data:`KILL_MARGIN_S` of CPU on it (it
        stops itself at ``cpu_s``: it is stuck where its timer cannot reach). ``first``
        is the host's CPU clock at the first look, less the most it may have spent
        before it (the host's clock is not read for every call: most are short)."""
        if self._killed:
            raise HostGone("the agent's process was stopped (its game is over)")
        spent = _cpu_of(self.pid)
        if spent is None:
            self.kill()
            raise HostGone("the agent's process is gone")
        if first is None:
            return spent - WATCH_EVERY_S
        if spent - first > cpu_s + KILL_MARGIN_S:
            self.kill()
            raise HostGone(f"the agent's process spent more than {cpu_s:g} s of CPU on "
                           "one call and was stopped", over_budget=True)
        return first

    def _answer(self, message: tuple[Any, ...]) -> Any:
        """The answer to ``message``, read (it is there): its value, or the error it
        names, raised here."""
        if self._killed:
            raise HostGone("the agent's process was stopped (its game is over)")
        try:
            kind, value, cpu = pickle.loads(self._connection.recv_bytes())
        except (EOFError, OSError) as exc:
            self.kill()
            raise HostGone("the agent's process is gone") from exc
        if message[0] == "setup":
            self.setup_cpu = cpu
        else:
            self.move_cpu.append(cpu)
            self.moves_cpu += cpu
        if kind == "ok":
            return value
        if kind == "over_budget":
            raise MoveOverBudget(value)
        if kind == "unsupported":
            raise UnsupportedGame(value)
        raise HostGone(f"the agent raised {value}")

    def _call(self, message: tuple[Any, ...], cpu_s: float) -> Any:
        """A call, waited for in the calling thread (which watches the host's CPU)."""
        self._send(message)
        first: float | None = None
        while True:
            try:
                if self._connection.poll(WATCH_EVERY_S):
                    break
            except (EOFError, OSError) as exc:
                self.kill()
                raise HostGone("the agent's process is gone") from exc
            first = self._watch(first, cpu_s)
        return self._answer(message)

    async def _call_async(self, message: tuple[Any, ...], cpu_s: float) -> Any:
        """A call, awaited on the event loop (no thread waits for it; a timer watches
        the host's CPU while it runs long)."""
        loop = asyncio.get_running_loop()
        self._send(message)
        answered: asyncio.Future[None] = loop.create_future()
        first: float | None = None
        timer: asyncio.TimerHandle | None = None

        def readable() -> None:
            if not answered.done():
                answered.set_result(None)

        def look() -> None:
            nonlocal first, timer
            if answered.done():
                return
            try:
                first = self._watch(first, cpu_s)
            except HostGone as exc:
                answered.set_exception(exc)
                return
            timer = loop.call_later(WATCH_EVERY_S, look)

        # The loop watches a copy of the connection's descriptor, closed only once it is
        # no longer watched: kill() may close the connection meanwhile (its peer left),
        # and a socket opened next could get the same number while the loop still
        # watched it (the loop's next use of that number then failed).
        try:
            fd = os.dup(self._connection.fileno())
        except (OSError, ValueError) as exc:  # (closed: killed before the call)
            self.kill()
            raise HostGone("the agent's process was stopped (its game is over)") from exc
        timer = loop.call_later(WATCH_EVERY_S, look)
        try:
            loop.add_reader(fd, readable)
            await answered
        finally:
            if timer is not None:
                timer.cancel()
            with contextlib.suppress(Exception):
                loop.remove_reader(fd)
            os.close(fd)
        return self._answer(message)

    async def set_up(self, agent: Agent, game: GameSpec, seed: int
                     ) -> HostedLearner | HostedAdversary:
        """Build ``agent`` (by its spec) in the host and start it on ``game`` with its
        ``seed``, within the set-up's CPU seconds; its side in the server. Raises
        MoveOverBudget past the budget, UnsupportedGame if it cannot play the game,
        HostGone if the host died."""
        role = "learner" if isinstance(agent, Learner) else "adversary"
        spec = getattr(agent, "served_as", None) or agent.spec  # (an operator's file agent)
        info = await self._call_async(("setup", role, spec, rules_to_wire(game), seed),
                                      self.limits.setup_cpu_s)
        proxy: HostedLearner | HostedAdversary = (
            HostedLearner(self, agent, info) if role == "learner"
            else HostedAdversary(self, agent, info))
        return proxy

    def move(self, name: str, *args: Any) -> Any:
        """One move of the hosted agent (its method ``name``), within the move's CPU
        seconds, waited for in the calling thread."""
        return self._call(("call", name, args), self.limits.move_cpu_s)

    async def move_async(self, name: str, *args: Any) -> Any:
        """:meth:`move`, awaited on the event loop: one of its game's moves, which
        together may spend ``game_cpu_s`` (beyond, MoveOverBudget, the host not asked)."""
        if self.moves_cpu >= self.limits.game_cpu_s:
            raise MoveOverBudget(f"the agent has spent its {self.limits.game_cpu_s:g} s of "
                                 "CPU for this game's moves")
        return await self._call_async(("call", name, args), self.limits.move_cpu_s)


# -- the server's side of a hosted agent ---------------------------------------------------


class _Hosted:
    """What both sides of a hosted agent share: the host, the agent's spec and what the
    host said of it once started."""

    slow_moves = True  # (a server's runner awaits them off its event loop)
    host: AgentHost
    real: Agent

    # (info: what the host said of the agent, read with defaults)
    def _bind(self, host: AgentHost, agent: Agent, info: Mapping[str, Any]) -> None:
        self.host, self.real = host, agent
        self.deterministic = bool(info.get("deterministic", agent.deterministic))

    @property
    def spec(self) -> str:
        return self.real.spec

    # (the agent's own parameters: Agent.params's type)
    def params(self) -> dict[str, Any]:
        return self.real.params()

    def __repr__(self) -> str:
        return f"<hosted {self.real.spec} in process {self.host.pid}>"


class HostedLearner(_Hosted, Learner):
    """A learner played in its host (:class:`AgentHost`)."""

    games = frozenset({"mistake-bound", "experts"})

    # (info: what the host said of the agent, read with defaults)
    def __init__(self, host: AgentHost, agent: Agent, info: Mapping[str, Any]) -> None:
        self._bind(host, agent, info)

    def start(self, game: GameSpec, seed: int) -> None:
        """Set up already, in the host (:meth:`AgentHost.set_up`)."""

    def predict(self, x: Any) -> float:
        return float(self.host.move("predict", x))

    def update(self, x: Any, y: int) -> None:
        self.host.move("update", x, y)

    def weights(self, advice: Any) -> Any:
        return self.host.move("weights", advice)

    def update_costs(self, costs: Any, y: int | None) -> None:
        self.host.move("update_costs", costs, y)

    def bound(self, game: GameSpec) -> Bound | None:
        bound: Bound | None = self.host.move("bound", _GAME)
        return bound

    # (measured: the game's result as Learner.final_bound takes it)
    def final_bound(self, game: GameSpec, measured: Mapping[str, Any]) -> Bound | None:
        bound: Bound | None = self.host.move("final_bound", _GAME, dict(measured))
        return bound

    # (the agent's own report: Learner.report's type)
    def report(self) -> dict[str, Any]:
        report: dict[str, Any] = self.host.move("report")  # (as the agent gave it)
        return report


class HostedAdversary(_Hosted, Adversary):
    """An adversary played in its host (:class:`AgentHost`)."""

    games = frozenset({"mistake-bound", "experts"})

    # (info: what the host said of the agent, read with defaults)
    def __init__(self, host: AgentHost, agent: Agent, info: Mapping[str, Any]) -> None:
        self._bind(host, agent, info)
        self.oblivious = bool(info.get("oblivious", False))

    def start(self, game: GameSpec, seed: int) -> None:
        """Set up already, in the host (:meth:`AgentHost.set_up`)."""

    def commitment(self) -> bytes | None:
        digest: bytes | None = self.host.move("commitment")
        return digest

    def reveal(self) -> tuple[Any, bytes] | None:
        revealed: tuple[Any, bytes] | None = self.host.move("reveal")
        return revealed

    def instance(self) -> Any:
        return self.host.move("instance")

    def label(self, x: Any, p: float) -> int:
        return int(self.host.move("label", x, p))

    def moves(self, n: int) -> tuple[Any, list[int]] | None:
        block: tuple[Any, list[int]] | None = self.host.move("moves", n)
        return block

    def advice(self) -> Any:
        return self.host.move("advice")

    def costs(self, answer: Any) -> Any:
        return self.host.move("costs", answer)


#: Hypotheses of a finite class up to which an agent that does not think long plays in
#: the server's own process: its moves then cost it milliseconds at most (an agent's
#: move is linear in |H| at worst: 9 ms for ogd at 2^16, and 0.56 s and 224 MiB of
#: temporaries at 2^22, benchmarks/README.md); beyond, in a host of its own.
IN_PROCESS_HYPOTHESES = 1 << 16
#: Numbers an oblivious adversary may draw for its whole sequence in the server's own
#: process: it commits to the sequence before round 1, playing it once at its set-up
#: (rounds, times the experts of an experts game or the dimension of a halfspace), and
#: keeps blocks of it (``random-costs`` on 10^5 experts: 2.9 s of set-up for 1000
#: rounds, linear in the rounds, and 880 MiB a block); beyond, in a host of its own.
IN_PROCESS_SEQUENCE = 1 << 16


def sequence_size(game: GameSpec) -> int:
    """The numbers of a game's whole sequence: rounds times the width of a round (its
    experts, a halfspace's dimension, else 1).

    >>> sequence_size(GameSpec("experts", 1000, experts=100_000))
    100000000
    """
    width = game.n_experts if game.game == EXPERTS else getattr(game.hclass, "d", 1)
    return game.rounds * max(1, int(width))


def hosted(agent: Any, game: GameSpec | None = None) -> bool:
    """Whether a server plays ``agent`` on ``game`` in a host of its own: an agent whose
    moves may take long (``slow_moves``), any agent on a finite class of more than
    :data:`IN_PROCESS_HYPOTHESES` hypotheses, an oblivious adversary of the experts game
    whose sequence is longer than :data:`IN_PROCESS_SEQUENCE`; not one already hosted.

    >>> from littlestone.adversaries import ADVERSARIES
    >>> from littlestone.games.classes import make_class
    >>> from littlestone.learners import LEARNERS
    >>> big = GameSpec("mistake-bound", 9, make_class("thresholds:n=100000"))
    >>> hosted(LEARNERS.make("soa")), hosted(LEARNERS.make("halving"))
    (True, False)
    >>> hosted(LEARNERS.make("halving"), big)
    True
    >>> costs = ADVERSARIES.make("random-costs")
    >>> hosted(costs, GameSpec("experts", 50, experts=3))
    False
    >>> hosted(costs, GameSpec("experts", 1000, experts=100_000))
    True
    >>> hosted(ADVERSARIES.make("random-target"),
    ...        GameSpec("mistake-bound", 10**6, make_class("halfspaces:d=20")))
    False
    """
    if isinstance(agent, _Hosted) or not isinstance(agent, Learner | Adversary):
        return False  # (one hosted already, or a remote player)
    large = game is not None and isinstance(game.hclass, FiniteClass) and (
        game.hclass.size > IN_PROCESS_HYPOTHESES)
    # (the experts game's: an oblivious adversary's halfspace instances are drawn a round
    # at a time, cheaply, in the server's process, as before)
    long_sequence = game is not None and game.game == EXPERTS and bool(
        getattr(agent, "oblivious", False)) and sequence_size(game) > IN_PROCESS_SEQUENCE
    return bool(getattr(agent, "slow_moves", False)) or large or long_sequence


# -- the host's side ----------------------------------------------------------------------


def _on_profiling_timer(signum: int, frame: Any) -> None:
    raise CpuSpent()


def _confine(limits: HostLimits) -> None:
    """The host's own limits: its address space, one thread for numpy's libraries, the
    profiling timer's handler, exact Ldim's caches."""
    from littlestone.games import ldim

    for module in HOST_PRELOAD:  # (imported already, unless a caller's fork server forked it)
        importlib.import_module(module)
    with contextlib.suppress(Exception):
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    with open("/proc/self/status") as status:
        size = next(int(line.split()[1]) * 1024 for line in status
                    if line.startswith("VmSize:"))
    cap = size + limits.memory_bytes
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    signal.signal(signal.SIGPROF, _on_profiling_timer)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the server's Ctrl-C is the server's)
    with contextlib.suppress(OSError):
        os.nice(HOST_NICE)
    ldim.bound_new_solvers(limits.solver_bytes)


def _host_main(connection: multiprocessing.connection.Connection, limits: HostLimits) -> None:
    """A host's loop: a set-up, then calls, each answered (kind, value, CPU seconds)."""
    die_with_fork_server()
    _confine(limits)
    agent: Any = None
    game: GameSpec | None = None
    while True:
        try:
            message = pickle.loads(connection.recv_bytes())
        except (EOFError, OSError):
            return
        started = time.process_time()
        budget = limits.setup_cpu_s if message[0] == "setup" else limits.move_cpu_s
        answer: tuple[str, Any]
        try:
            signal.setitimer(signal.ITIMER_PROF, budget)
            try:
                if message[0] == "setup":
                    agent, game = _set_up(*message[1:])
                    value: Any = {"oblivious": getattr(agent, "oblivious", False),
                                  "deterministic": agent.deterministic}
                else:
                    _, name, args = message
                    method: Callable[..., Any] = getattr(agent, name)
                    value = method(*(game if a == _GAME else a for a in args))
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            answer = ("ok", value)
        except CpuSpent:
            answer = ("over_budget", f"over budget: the {_what(message)} needs more than "
                      f"{budget:g} s of CPU")
        except MemoryError:
            answer = ("over_budget", f"over budget: the {_what(message)} needs more than "
                      f"{limits.memory_bytes >> 20} MiB")
        except BudgetExceeded as exc:
            answer = ("over_budget", f"over budget: {exc}")
        except UnsupportedGame as exc:
            answer = ("unsupported", str(exc))
        except Exception as exc:  # the agent's bug: its game ends against it
            answer = ("crash", type(exc).__name__)
        try:
            connection.send_bytes(pickle.dumps((*answer, time.process_time() - started),
                                               pickle.HIGHEST_PROTOCOL))
        except (OSError, pickle.PicklingError):
            return


def _what(message: tuple[Any, ...]) -> str:
    return "set-up" if message[0] == "setup" else f"move ({message[1]})"


def _set_up(role: str, spec: str, rules: Rules, seed: int) -> tuple[Agent, GameSpec]:
    from littlestone.adversaries.base import ADVERSARIES
    from littlestone.learners.base import LEARNERS

    registry: Any = LEARNERS if role == "learner" else ADVERSARIES
    agent: Agent = registry.make(spec)
    game = rules_from_wire(rules)
    reason = agent.unsupported(game)  # type: ignore[attr-defined]
    if reason is not None:
        raise UnsupportedGame(f"{spec} cannot play this game: {reason}")
    agent.start(game, seed)  # type: ignore[attr-defined]
    return agent, game
