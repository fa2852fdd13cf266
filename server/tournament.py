"""Tournaments: every learner x adversary x class x seed, ranked and reported.

A tournament is one TOML file (see :func:`load_config` and README). Built-in agents play
in worker processes through the local driver; an agent given as a file
(``submissions/alice.py:Learner``) plays in a sandboxed subprocess that talks the wire
protocol (``littlestone connect``) to a server the tournament runs on loopback, so the
referee never runs inside a submission. Results go into the data folder's SQLite index as
each game ends; running the same command again continues where it stopped.

Sandbox in force for file agents: its own process session (killed, with any child it
forked, when its game ends or it overruns), RLIMIT_AS and RLIMIT_CPU from ``[limits]``,
an empty environment (no inherited secrets) and a fresh working directory. There is no
filesystem or network namespace (bubblewrap is not used: the agent must reach the
loopback server); ``Sandbox.describe()`` says so in every report.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import html
import itertools
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from games.classes import FiniteClass, HalfspaceClass, make_class
from games.errors import BudgetExceeded, LittlestoneError, SpecError
from games.game import EXPERTS, GAMES, MISTAKE_BOUND, GameSpec
from games.ldim import class_ldim

__all__ = ["Pairing", "TournamentConfig", "absolute_spec", "load_config", "rank",
           "run_tournament"]


class ConfigError(LittlestoneError):
    """A tournament file that cannot be used: names the file, the line and the key."""


@dataclass(frozen=True)
class Limits:
    """Per-agent limits for submitted agents."""

    move_deadline: float = 5.0
    time_bank: float = 30.0
    memory_mb: int = 1024
    cpu_seconds: int = 120
    #: How long the tournament waits for a remote agent to enter.
    remote_wait: float = 120.0


@dataclass(frozen=True)
class TournamentConfig:
    name: str
    rounds: int
    seeds: tuple[int, ...]
    games: tuple[str, ...]
    classes: tuple[str, ...]
    experts: int | None
    learners: tuple[str, ...]
    adversaries: tuple[str, ...]
    limits: Limits
    source: str = ""
    #: host:port the tournament's server listens on (remote agents connect there).
    listen: str = "127.0.0.1:0"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()


_KNOWN = {
    "tournament": {"name", "rounds", "seeds", "games", "experts", "listen"},
    "limits": {"move_deadline", "time_bank", "memory_mb", "cpu_seconds", "remote_wait"},
    "classes": {"spec"},
    "": {"tournament", "classes", "learners", "adversaries", "limits"},
}


def _line_of(text: str, key: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(key):
            return number
    return 0


def load_config(path: str | Path) -> TournamentConfig:
    """Read and check a tournament file::

        [tournament]
        name = "week-3"
        rounds = 200
        seeds = [0, 1, 2]            # or a count: seeds = 3
        games = ["mistake-bound"]    # and/or "experts"
        experts = 4                  # d, for experts games without a class

        [[classes]]
        spec = "thresholds:n=255"

        learners = ["halving", "soa", "submissions/alice.py:Learner"]
        adversaries = ["random-target", "shattered-tree"]

        [limits]                     # for submitted agents
        move_deadline = 5.0          # seconds a move
        time_bank = 30.0             # seconds over the deadlines, a game
        memory_mb = 1024             # RLIMIT_AS
        cpu_seconds = 120            # RLIMIT_CPU
        remote_wait = 120            # seconds to wait for a remote agent to enter

    ``remote:NAME`` in ``learners`` or ``adversaries`` is an agent that enters with the
    token named NAME (``littlestone connect URL --token T --learner SPEC --tournament
    NAME``), against built-in opponents; ``[tournament] listen = "HOST:PORT"`` (default
    ``127.0.0.1:0``, a free port, announced on stderr) is where it connects.

    (``learners`` and ``adversaries`` are top-level keys: put them before the first
    table.) Unknown keys and bad values raise ConfigError naming file, line and key.
    """
    path = Path(path)
    try:
        text = path.read_text()
        data = tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{path}:{_line_of(text, key.split('.')[-1])}: {key}: {message}")

    for table, known in (("", _KNOWN[""]), ("tournament", _KNOWN["tournament"]),
                         ("limits", _KNOWN["limits"])):
        section = data if not table else data.get(table, {})
        if not isinstance(section, dict):
            raise fail(table, "must be a table")
        for key in section:
            if key not in known:
                raise fail(f"{table}.{key}" if table else key, "unknown key")
    head = data.get("tournament", {})
    name = head.get("name")
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise fail("tournament.name", "a name of letters, digits, - _ . is required")
    rounds = head.get("rounds")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise fail("tournament.rounds", "an integer >= 1 is required")
    seeds_raw = head.get("seeds", 1)
    if isinstance(seeds_raw, int) and not isinstance(seeds_raw, bool) and seeds_raw >= 1:
        seeds = tuple(range(seeds_raw))
    elif isinstance(seeds_raw, list) and seeds_raw and all(
        isinstance(s, int) and not isinstance(s, bool) for s in seeds_raw
    ):
        seeds = tuple(seeds_raw)
    else:
        raise fail("tournament.seeds", "a count >= 1 or a list of integers")
    games = head.get("games", [MISTAKE_BOUND])
    if not isinstance(games, list) or not games or any(g not in GAMES for g in games):
        raise fail("tournament.games", f"a list of {', '.join(GAMES)}")
    experts = head.get("experts")
    if experts is not None and (isinstance(experts, bool) or not isinstance(experts, int)
                                or experts < 1):
        raise fail("tournament.experts", "an integer >= 1")
    classes_raw = data.get("classes", [])
    if not isinstance(classes_raw, list):
        raise fail("classes", "use [[classes]] tables with a spec")
    classes = []
    for entry in classes_raw:
        if not isinstance(entry, dict) or set(entry) - _KNOWN["classes"] or "spec" not in entry:
            raise fail("classes", "each [[classes]] has exactly a spec")
        try:
            make_class(entry["spec"])
        except SpecError as exc:
            raise fail("classes.spec", str(exc)) from None
        classes.append(entry["spec"])
    if MISTAKE_BOUND in games and not classes:
        raise fail("classes", "the mistake-bound game needs at least one [[classes]]")
    agents = {}
    for key in ("learners", "adversaries"):
        value = data.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise fail(key, "a non-empty list of agent specs")
        agents[key] = tuple(value)
    limits_raw = data.get("limits", {})
    try:
        limits = Limits(**limits_raw)
    except TypeError as exc:
        raise fail("limits", str(exc)) from None
    for key, value in vars(limits).items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise fail(f"limits.{key}", "a positive number")
    listen = head.get("listen", "127.0.0.1:0")
    host, _, port = str(listen).rpartition(":")
    if not host or not port.isdigit():
        raise fail("tournament.listen", "HOST:PORT, e.g. 127.0.0.1:8765")
    return TournamentConfig(name, rounds, seeds, tuple(games), tuple(classes), experts,
                            agents["learners"], agents["adversaries"], limits, text, listen)


def is_file_agent(spec: str) -> bool:
    return ".py:" in spec or spec.endswith(".py")


def absolute_spec(spec: str) -> str:
    """A file agent's spec with an absolute path (the sandbox runs elsewhere)."""
    path, sep, rest = spec.partition(".py:")
    return f"{Path(path + '.py').resolve()}:{rest}" if sep else spec


def remote_account(spec: str) -> str | None:
    """``remote:NAME``: the agent that enters with the token named NAME."""
    return spec.removeprefix("remote:") if spec.startswith("remote:") else None


@dataclass(frozen=True)
class Pairing:
    """One game of the tournament."""

    game: str
    hclass: str | None
    learner: str
    adversary: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.game}|{self.hclass}|{self.learner}|{self.adversary}|{self.seed}"


def pairings(config: TournamentConfig) -> tuple[list[Pairing], list[dict[str, Any]]]:
    """Every pairing to play, and the ones that cannot be played, with the reason."""
    from adversaries import ADVERSARIES
    from learners import LEARNERS

    todo, skipped = [], []
    spaces: list[tuple[str, str | None]] = []
    for game in config.games:
        if game == MISTAKE_BOUND:
            spaces += [(game, c) for c in config.classes]
        else:
            spaces += [(game, c) for c in config.classes
                       if isinstance(make_class(c), FiniteClass)]
            if config.experts is not None:
                spaces.append((game, None))
    for (game, spec), learner, adversary in itertools.product(spaces, config.learners,
                                                               config.adversaries):
        rules = GameSpec(game, config.rounds, make_class(spec) if spec else None,
                         None if spec else config.experts)
        reasons = []
        remote = [s for s in (learner, adversary) if remote_account(s)]
        if remote and (len(remote) == 2 or any(is_file_agent(s) for s in (learner, adversary))):
            skipped.append({"game": game, "class": spec, "learner": learner,
                            "adversary": adversary,
                            "reason": "a remote agent plays built-in opponents only"})
            continue
        for registry, agent_spec in ((LEARNERS, learner), (ADVERSARIES, adversary)):
            if remote_account(agent_spec):
                continue
            try:
                agent = registry.make(agent_spec)
            except SpecError as exc:
                reasons.append(str(exc))
                continue
            reason = agent.unsupported(rules)
            if reason:
                reasons.append(f"{agent_spec}: {reason}")
        if reasons:
            skipped.append({"game": game, "class": spec, "learner": learner,
                            "adversary": adversary, "reason": "; ".join(reasons)})
            continue
        todo += [Pairing(game, spec, learner, adversary, seed) for seed in config.seeds]
    return todo, skipped


# -- playing one pairing ------------------------------------------------------------------


def _rules(config: TournamentConfig, pairing: Pairing) -> GameSpec:
    hclass = make_class(pairing.hclass) if pairing.hclass else None
    return GameSpec(pairing.game, config.rounds, hclass, None if hclass else config.experts)


def _play_builtin(args: tuple[TournamentConfig, Pairing, str]) -> dict[str, Any]:
    """In a worker process: a built-in pair through the local driver, logged."""
    from adversaries import ADVERSARIES
    from learners import LEARNERS
    from server.logged import play_logged

    config, pairing, data = args
    done = play_logged(_rules(config, pairing), LEARNERS.make(pairing.learner),
                       ADVERSARIES.make(pairing.adversary), pairing.seed, Path(data),
                       source=f"tournament:{config.name}")
    return {"game_id": done.game_id, "status": done.result.status,
            "message": done.result.message, "result": done.result.to_dict()}


#: How often a running agent's game is checked, and how long it may outlive its game.
POLL_SECONDS = 0.2
GRACE_SECONDS = 2.0


class Sandbox:
    """Runs a submitted agent as ``littlestone connect`` in a limited subprocess."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    @staticmethod
    def describe() -> str:
        return ("own process session (killed with its children at the end of its game), "
                "RLIMIT_AS and RLIMIT_CPU, empty environment, fresh working directory; "
                "no filesystem or network namespace")

    def _preexec(self) -> None:  # runs in the child, before exec
        memory = self.limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        cpu = int(self.limits.cpu_seconds)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def run(self, argv: list[str], timeout: float,
            game_over: Callable[[], bool] | None = None) -> tuple[int | None, str, str, bool]:
        """(exit status or None if killed, stdout tail, stderr tail, forked?).

        ``game_over`` is polled: once it says the agent's game has ended, the agent has
        :data:`GRACE_SECONDS` to exit before it is killed (a hung agent outlives its game)."""
        workdir = tempfile.mkdtemp(prefix="littlestone-agent-")
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
        # output goes to files, not pipes: a forked child holding a pipe open cannot
        # keep us waiting once the agent itself has exited
        with open(Path(workdir) / ".stdout", "w+b") as out_file, \
                open(Path(workdir) / ".stderr", "w+b") as err_file:
            proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out_file,
                                    stderr=err_file, start_new_session=True,
                                    preexec_fn=self._preexec)
            code: int | None = None
            started, over_at = time.monotonic(), None
            while time.monotonic() - started < timeout:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = proc.wait(timeout=POLL_SECONDS)
                    break
                if over_at is None and game_over is not None and game_over():
                    over_at = time.monotonic()
                if over_at is not None and time.monotonic() - over_at > GRACE_SECONDS:
                    break
            forked = _kill_session(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            out = _tail(out_file)
            err = _tail(err_file)
        shutil.rmtree(workdir, ignore_errors=True)
        return code, out, err, forked


def _tail(file: Any, size: int = 2000) -> str:
    file.seek(0, os.SEEK_END)
    file.seek(max(0, file.tell() - size))
    return str(file.read().decode("utf-8", "replace"))


def _kill_session(sid: int) -> bool:
    """Kill every process of session ``sid``; whether there were others than its leader."""
    others = False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            session = int(fields[3])  # pid comm state ppid pgrp session ...
        except (OSError, IndexError, ValueError):
            continue
        if session == sid and int(entry.name) != sid:
            others = True
    with contextlib.suppress(Exception):
        os.killpg(sid, signal.SIGKILL)
    return others


def _play_file_agent(config: TournamentConfig, pairing: Pairing, url: str, token: str,
                     data: Path, sandbox: Sandbox) -> dict[str, Any]:
    """A game with one or two submitted agents, through the loopback server."""

    base = [sys.executable, "-m", "server.cli", "connect", url, f"--token={token}",
            "--game", pairing.game, "--rounds", str(config.rounds), "--json"]
    if pairing.hclass:
        base += ["--class", pairing.hclass]
    elif config.experts is not None:
        base += ["--experts", str(config.experts)]
    timeout = config.rounds * config.limits.move_deadline + config.limits.time_bank + 30
    tag = hashlib.sha256(f"{config.name}|{pairing.key}".encode()).hexdigest()[:16]
    roles = [(role, absolute_spec(spec)) for role, spec in (("learner", pairing.learner),
                                                        ("adversary", pairing.adversary))
             if is_file_agent(spec)]
    notes: list[str] = []
    if len(roles) == 1:
        role, spec = roles[0]
        other = pairing.adversary if role == "learner" else pairing.learner
        argv = [*base, f"--{role}", spec, "--vs", other, "--seed", str(pairing.seed),
                "--name", f"{role}-{tag}"]
        code, _, err, forked = sandbox.run(argv, timeout, lambda: _ended(data, tag))
        outcomes = [(role, code, err, forked)]
    else:
        outcomes = _play_two_files(base, roles, pairing, tag, timeout, sandbox, data)
    row = _tagged_game(data, tag)
    for role, code, err, forked in outcomes:
        if forked:
            notes.append(f"the {role} forked a child process (killed)")
        if code is None:
            notes.append(f"the {role} overran its time and was killed")
        elif code != 0:
            last = [line for line in err.strip().splitlines() if line][-1:] or ["no message"]
            notes.append(f"the {role} exited with status {code}: {last[0][:300]}")
    if row is None:
        role = outcomes[0][0]
        status = f"crash:{role}:no_game"
        return {"game_id": None, "status": status, "message": "; ".join(notes) or
                "the agent never started its game", "result": {"status": status}}
    result = {k: row[k] for k in ("rounds", "mistakes", "expected_mistakes", "regret",
                                  "expected_regret", "bound", "bound_name")}
    result["status"] = row["status"]
    return {"game_id": row["game_id"], "status": row["status"], "message": "; ".join(notes),
            "result": result}


def _play_remote_agent(config: TournamentConfig, account: str, pairs: list[Pairing],
                       server: tuple[Any, Any], record: Callable[[Pairing, dict[str, Any]],
                                                                 None]) -> None:
    """Every game of one remote agent, in turn, on its connection (it enters with
    ``littlestone connect URL --token T --learner SPEC --tournament NAME``)."""
    import asyncio

    from adversaries import ADVERSARIES
    from learners import LEARNERS
    from server.store import Store

    game_server, loop = server
    deadline = time.monotonic() + config.limits.remote_wait
    role = None
    while time.monotonic() < deadline:
        role = game_server.entrant(config.name, account)
        if role is not None:
            break
        time.sleep(0.1)
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
        coroutine = game_server.play_entrant(config.name, account, _rules(config, pairing),
                                             pairing.seed, opponent)
        game_id = asyncio.run_coroutine_threadsafe(coroutine, loop).result()
        store = Store(game_server.settings.data)  # this thread's own connection
        row = store.game(game_id) if game_id else None
        store.close()
        if row is None:
            record(pairing, {"game_id": None, "status": f"disconnected:{wanted}",
                             "message": f"remote agent {account!r} left",
                             "result": {"status": f"disconnected:{wanted}"}})
            role = game_server.entrant(config.name, account)
            continue
        result = {k: row[k] for k in ("rounds", "mistakes", "expected_mistakes", "regret",
                                      "expected_regret", "bound", "bound_name", "status")}
        record(pairing, {"game_id": game_id, "status": row["status"], "message": "",
                         "result": result})
        role = game_server.entrant(config.name, account)


def _tagged_game(data: Path, tag: str) -> dict[str, Any] | None:
    """The index row of the game the submitted agents tagged ``tag`` played, if any."""
    from server.store import Store

    store = Store(data)
    try:
        rows = (store.games(limit=1, learner=f"remote:learner-{tag}")
                or store.games(limit=1, adversary=f"remote:adversary-{tag}"))
        return rows[0] if rows else None
    finally:
        store.close()


def _ended(data: Path, tag: str) -> bool:
    """Whether the server has finished the game of the agents tagged ``tag``."""
    row = _tagged_game(data, tag)
    return row is not None and row["status"] != "running"


def _play_two_files(base: list[str], roles: list[tuple[str, str]], pairing: Pairing,
                    tag: str, timeout: float, sandbox: Sandbox, data: Path) -> list[Any]:
    """Both agents are files: one creates the game, the other joins it."""
    (role_a, spec_a), (role_b, spec_b) = roles
    results: dict[str, Any] = {}
    creator_argv = [*base, f"--{role_a}", spec_a, "--create", "--seed", str(pairing.seed),
                    "--name", f"{role_a}-{tag}"]
    game_id_holder: dict[str, str] = {}

    def creator() -> None:
        results[role_a] = sandbox.run(creator_argv, timeout, lambda: _ended(data, tag))

    # the creator prints the game id on stderr as soon as it is created: run it and poll
    thread = threading.Thread(target=creator)
    thread.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not game_id_holder:
        time.sleep(0.05)
        game_id_holder.update(_OPEN_GAMES.pop(f"{role_a}-{tag}", {}))
    if game_id_holder:
        joiner = [*base, f"--{role_b}", spec_b, "--join", game_id_holder["id"],
                  "--name", f"{role_b}-{tag}"]
        results[role_b] = sandbox.run(joiner, timeout, lambda: _ended(data, tag))
    thread.join()
    outcomes = []
    for role in (role_a, role_b):
        code, _, err, forked = results.get(role, (None, "", "it never joined its game", False))
        outcomes.append((role, code, err, forked))
    return outcomes


#: Games created by file agents, by agent name: filled by the tournament's server.
_OPEN_GAMES: dict[str, dict[str, str]] = {}


# -- the tournament ---------------------------------------------------------------------


def normaliser(game: GameSpec) -> tuple[float | None, str]:
    """What a game's score is divided by: Ldim(H) (mistake-bound), sqrt(T ln d) (experts)."""
    if game.game == EXPERTS:
        d = game.n_experts
        return math.sqrt(game.rounds * math.log(max(d, 2))), "sqrt(T ln d)"
    if isinstance(game.hclass, FiniteClass):
        try:
            value, _ = class_ldim(game.hclass)
            return (float(value) if value else None), "Ldim(H)"
        except BudgetExceeded:
            return math.log2(game.hclass.size), "log2|H| (Ldim beyond budget)"
    if isinstance(game.hclass, HalfspaceClass) and game.hclass.margin > 0:
        return math.floor(1 / game.hclass.margin**2), "1/margin^2"
    return None, "raw"


@dataclass
class TournamentReport:
    name: str
    games: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    learners: list[dict[str, Any]] = field(default_factory=list)
    adversaries: list[dict[str, Any]] = field(default_factory=list)
    payoff: dict[str, dict[str, float | None]] = field(default_factory=dict)
    sandbox: str = ""
    report: str = ""

    def leaderboard(self) -> dict[str, Any]:
        return {"tournament": self.name, "learners": self.learners,
                "adversaries": self.adversaries, "payoff": self.payoff,
                "games": len(self.games), "failed": [g for g in self.games
                                                     if g["status"] != "complete"],
                "skipped": self.skipped, "sandbox": self.sandbox, "report": self.report}


def rank(name: str, rows: list[dict[str, Any]], skipped: list[dict[str, Any]]
         ) -> TournamentReport:
    """Learners by worst-case normalised score over adversaries (lower is better),
    adversaries by mean forcing power (higher is better), and the payoff matrix."""
    report = TournamentReport(name, rows, skipped, sandbox=Sandbox.describe())
    cells: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        if row.get("score") is not None:
            cells.setdefault((row["learner"], row["adversary"]), []).append(row["score"])
    learners = sorted({r["learner"] for r in rows})
    adversaries = sorted({r["adversary"] for r in rows})
    for learner in learners:
        report.payoff[learner] = {}
        for adversary in adversaries:
            scores = cells.get((learner, adversary))
            report.payoff[learner][adversary] = (sum(scores) / len(scores)) if scores else None
    for learner in learners:
        values = [v for v in report.payoff[learner].values() if v is not None]
        failed = [r for r in rows if r["learner"] == learner and r["status"] != "complete"]
        report.learners.append({
            "learner": learner, "worst": max(values) if values else None,
            "mean": sum(values) / len(values) if values else None,
            "games": sum(1 for r in rows if r["learner"] == learner), "failed": len(failed),
            "failures": sorted({r["status"] for r in failed}),
        })
    report.learners.sort(key=lambda r: (r["worst"] is None, r["worst"] or 0.0,
                                        r["mean"] or 0.0, r["learner"]))
    for position, row in enumerate(report.learners, 1):
        row["rank"] = position
        tied = [other["learner"] for other in report.learners if other is not row
                and (other["worst"], other["mean"]) == (row["worst"], row["mean"])]
        row["tied_with"] = tied  # equal scores: ordered by name, and said so
    for adversary in adversaries:
        values = [v for lrn in learners
                  if (v := report.payoff[lrn][adversary]) is not None]
        failed = [r for r in rows if r["adversary"] == adversary and r["status"] != "complete"]
        report.adversaries.append({
            "adversary": adversary,
            "forcing": (sum(values) / len(values)) if values else None,
            "games": sum(1 for r in rows if r["adversary"] == adversary),
            "failed": len(failed), "failures": sorted({r["status"] for r in failed}),
        })
    report.adversaries.sort(key=lambda r: (r["forcing"] is None, -(r["forcing"] or 0.0),
                                           r["adversary"]))
    for position, row in enumerate(report.adversaries, 1):
        row["rank"] = position
    return report


def run_tournament(config: TournamentConfig, data: Path, workers: int,
                   progress: bool = True, ray_address: str | None = None) -> TournamentReport:
    """Play every pairing not yet played, then rank and report.

    Built-in pairs fan out over ``workers`` local processes, or over a Ray cluster when
    ``ray_address`` is given (``"local"`` starts a local Ray instance with ``workers``
    CPUs; the data folder must be reachable by every Ray worker: a shared filesystem)."""
    from server.store import Store

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
        game = _rules(config, pairing)
        norm, norm_name = normaliser(game)
        result = outcome["result"]
        raw = result.get("regret") if pairing.game == EXPERTS else result.get("mistakes")
        score = (raw / norm) if (raw is not None and norm) else raw
        with lock:
            store.add_tournament_game(config.name, pairing.key, {
                "game_id": outcome["game_id"], "status": outcome["status"],
                "message": outcome.get("message", ""), "game": pairing.game,
                "class": pairing.hclass, "learner": pairing.learner,
                "adversary": pairing.adversary, "seed": pairing.seed, "raw": raw,
                "score": score, "normaliser": norm_name, "result": result,
            })
            finished[0] += 1
            left = len(pending) - finished[0]
            bar.update(outcome["status"] != "complete", running=min(max(workers, 1), left))

    if builtin and ray_address is not None:
        _run_on_ray(config, builtin, str(data), workers, ray_address, record)
    elif builtin:
        if workers <= 1:
            for pairing in builtin:
                record(pairing, _play_builtin((config, pairing, str(data))))
        else:
            with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(_play_builtin, (config, p, str(data))): p
                           for p in builtin}
                for future in concurrent.futures.as_completed(futures):
                    record(futures[future], future.result())
    if files or remote:
        with _LoopbackServer(config, data) as (url, token, server):
            sandbox = Sandbox(config.limits)
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
                futures2 = {threads.submit(_play_file_agent, config, p, url, token, data,
                                           sandbox): p for p in files}
                accounts = sorted({a for p in remote for a in (remote_account(p.learner),
                                                                remote_account(p.adversary))
                                   if a})
                if accounts:
                    print(f"littlestone: tournament {config.name}: remote agents "
                          f"({', '.join(accounts)}) connect to {url} with --tournament "
                          f"{config.name}", file=sys.stderr, flush=True)
                futures3 = {threads.submit(_play_remote_agent, config, account,
                                           [p for p in remote if account in (
                                               remote_account(p.learner),
                                               remote_account(p.adversary))],
                                           server, record): account for account in accounts}
                for future in concurrent.futures.as_completed(futures2):
                    record(futures2[future], future.result())
                for future3 in concurrent.futures.as_completed(futures3):
                    future3.result()
            import asyncio

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
        play = ray.remote(_play_builtin)
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


class _LoopbackServer:
    """A game server on 127.0.0.1 in a thread, for submitted agents, with a fresh token."""

    def __init__(self, config: TournamentConfig, data: Path) -> None:
        self.config, self.data = config, data

    def __enter__(self) -> tuple[str, str, tuple[Any, Any]]:
        import asyncio

        from server.net import GameServer, ServerSettings

        host, _, port = self.config.listen.rpartition(":")
        settings = ServerSettings(host=host, port=int(port), data=self.data,
                                  move_deadline=self.config.limits.move_deadline,
                                  time_bank=self.config.limits.time_bank)
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:  # the server and its SQLite connection live in this thread
            asyncio.set_event_loop(self.loop)
            self.server = GameServer(settings)
            self.server.on_created = lambda name, game_id: _OPEN_GAMES.__setitem__(
                name, {"id": game_id})
            self.loop.run_until_complete(self.server.start())
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)
        from server.store import Store

        token = Store(self.data).add_token(f"tournament-{self.config.name}")
        host = self.config.listen.rpartition(":")[0]
        return f"ws://{host}:{self.server.port}", token, (self.server, self.loop)

    def __exit__(self, *exc: object) -> None:
        import asyncio

        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


# -- the report ------------------------------------------------------------------------


def _color(value: float | None, top: float) -> str:
    if value is None:
        return "#eee"
    share = min(1.0, value / top) if top > 0 else 0.0
    return f"hsl({int(120 - 120 * share)}, 70%, {int(85 - 25 * share)}%)"


def _curve(row: dict[str, Any]) -> str:
    """A small SVG of cumulative mistakes (or regret) with the bound, from the log."""
    from server.logs import LogError, read_log

    if not row.get("log"):
        return ""
    try:
        records = list(read_log(row["log"]).records())
    except (LogError, OSError):
        return ""
    if not records:
        return ""
    from games.game import ExpertsRecord

    ys = [float(r.regret) if isinstance(r, ExpertsRecord) else float(r.mistakes)
          for r in records]
    raw_bound = row.get("result", {}).get("bound")
    bound = float(raw_bound) if raw_bound is not None else None
    top = max(max(ys), bound or 0.0, 1.0)
    width, height = 160, 40
    step = max(1, len(ys) // 80)
    points = " ".join(f"{i * width / max(len(ys) - 1, 1):.1f},{height - y * height / top:.1f}"
                      for i, y in enumerate(ys) if i % step == 0 or i == len(ys) - 1)
    bound_y = height - (bound or 0.0) * height / top
    bound_line = (f'<line x1="0" x2="{width}" y1="{bound_y:.1f}" y2="{bound_y:.1f}" '
                  f'stroke="crimson" stroke-dasharray="3,2"/>' if bound is not None else "")
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'{bound_line}<polyline fill="none" stroke="#225" points="{points}"/></svg>')


def write_report(report: TournamentReport, data: Path) -> Path:
    """DIR/reports/NAME.html: a static, self-contained page."""
    esc = html.escape
    path = data / "reports" / f"{report.name}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    numbers = [v for row in report.payoff.values() for v in row.values() if v is not None]
    top = max(numbers) if numbers else 1.0
    adversaries = sorted({a for row in report.payoff.values() for a in row})

    def fmt(value: Any) -> str:
        return "-" if value is None else (f"{value:.3g}" if isinstance(value, float)
                                          else esc(str(value)))

    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(report.name)}"
             "</title><style>body{font:14px sans-serif;margin:2em}table{border-collapse:"
             "collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 7px}"
             "code{font-size:12px}</style></head><body>",
             f"<h1>Tournament {esc(report.name)}</h1>",
             f"<p>{len(report.games)} games. Sandbox for submitted agents: "
             f"{esc(report.sandbox)}.</p>",
             "<h2>Learners</h2><p>Score: mistakes / Ldim(H) (mistake-bound), regret / "
             "sqrt(T ln d) (experts), averaged over classes and seeds; ranked by the worst "
             "adversary (lower is better).</p><table><tr><th>rank</th><th>learner</th>"
             "<th>worst</th><th>mean</th><th>games</th><th>failed</th></tr>"]
    for row in report.learners:
        tie = (f"<br><small>tied with {esc(', '.join(row['tied_with']))} (ordered by name)"
               "</small>" if row.get("tied_with") else "")
        parts.append(f"<tr><td>{row['rank']}</td><td>{esc(row['learner'])}{tie}</td>"
                     f"<td>{fmt(row['worst'])}</td><td>{fmt(row['mean'])}</td>"
                     f"<td>{row['games']}</td><td>{row['failed']} "
                     f"{esc(', '.join(row['failures']))}</td></tr>")
    parts.append("</table><h2>Adversaries</h2><table><tr><th>rank</th><th>adversary</th>"
                 "<th>forcing power</th><th>games</th><th>failed</th></tr>")
    for row in report.adversaries:
        parts.append(f"<tr><td>{row['rank']}</td><td>{esc(row['adversary'])}</td>"
                     f"<td>{fmt(row['forcing'])}</td><td>{row['games']}</td>"
                     f"<td>{row['failed']} {esc(', '.join(row['failures']))}</td></tr>")
    parts.append("</table><h2>Payoff matrix</h2><table><tr><th>learner \\ adversary</th>"
                 + "".join(f"<th>{esc(a)}</th>" for a in adversaries) + "</tr>")
    for learner, row in report.payoff.items():
        parts.append(f"<tr><th>{esc(learner)}</th>" + "".join(
            f"<td style='background:{_color(row.get(a), top)}'>{fmt(row.get(a))}</td>"
            for a in adversaries) + "</tr>")
    parts.append("</table>")
    if report.skipped:
        parts.append("<h2>Pairings not played</h2><ul>" + "".join(
            f"<li>{esc(s['learner'])} vs {esc(s['adversary'])} on {esc(str(s['class']))} "
            f"({esc(s['game'])}): {esc(s['reason'])}</li>" for s in report.skipped) + "</ul>")
    parts.append("<h2>Games</h2><table><tr><th>learner</th><th>adversary</th><th>class</th>"
                 "<th>seed</th><th>status</th><th>score</th><th>curve</th><th>log</th></tr>")
    for row in report.games:
        verify = (f"<code>littlestone replay {esc(row['game_id'])} --data {esc(str(data))} "
                  f"--verify</code>" if row.get("game_id") else "")
        log = (f"<a href='{esc(os.path.relpath(row['log'], path.parent))}'>log</a> {verify}"
               if row.get("log") else esc(row.get("message") or ""))
        parts.append(f"<tr><td>{esc(row['learner'])}</td><td>{esc(row['adversary'])}</td>"
                     f"<td>{esc(str(row['class']))}</td><td>{row['seed']}</td>"
                     f"<td>{esc(row['status'])}<br><small>{esc(row.get('message') or '')}"
                     f"</small></td><td>{fmt(row.get('score'))}</td><td>{_curve(row)}</td>"
                     f"<td>{log}</td></tr>")
    parts.append("</table></body></html>")
    path.write_text("\n".join(parts))
    return path

