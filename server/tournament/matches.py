"""Playing one pairing of a tournament, wherever its agents live.

- built-in pairs: through the local driver, logged (:func:`play_builtin`, run in a
  worker process or on Ray);
- submitted files: each in its :class:`~.sandbox.Sandbox` as a ``littlestone connect``
  client of the tournament's loopback server (:class:`LoopbackServer`), so that the
  referee never runs inside a submission (:func:`play_file_agent`);
- remote agents: the entrants connected with ``--tournament``
  (:func:`play_remote_agent`).

Each returns (or records) an outcome: ``game_id``, ``status``, ``message``, ``result``.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from littlestone.adversaries import ADVERSARIES
from littlestone.learners import LEARNERS
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.records.logged import play_logged
from littlestone.server.records.store import Store
from littlestone.server.tournament.config import (
    TournamentConfig,
    absolute_spec,
    is_file_agent,
    remote_account,
)
from littlestone.server.tournament.pairing import Pairing, rules
from littlestone.server.tournament.sandbox import Sandbox

__all__ = ["LoopbackServer", "play_builtin", "play_file_agent", "play_remote_agent"]


def play_builtin(args: tuple[TournamentConfig, Pairing, str]) -> dict[str, Any]:
    """In a worker process: a built-in pair through the local driver, logged."""
    config, pairing, data = args
    done = play_logged(rules(config, pairing), LEARNERS.make(pairing.learner),
                       ADVERSARIES.make(pairing.adversary), pairing.seed, Path(data),
                       source=f"tournament:{config.name}")
    return {"game_id": done.game_id, "status": done.result.status,
            "message": done.result.message, "result": done.result.to_dict()}


def play_file_agent(config: TournamentConfig, pairing: Pairing, url: str, token: str,
                     data: Path, sandbox: Sandbox) -> dict[str, Any]:
    """A game with one or two submitted agents, through the loopback server."""

    base = [sys.executable, "-m", "littlestone", "connect", url, f"--token={token}",
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


def play_remote_agent(config: TournamentConfig, account: str, pairs: list[Pairing],
                       server: tuple[Any, Any], record: Callable[[Pairing, dict[str, Any]],
                                                                 None]) -> None:
    """Every game of one remote agent, in turn, on its connection (it enters with
    ``littlestone connect URL --token T --learner SPEC --tournament NAME``)."""
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
        coroutine = game_server.play_entrant(config.name, account, rules(config, pairing),
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


class LoopbackServer:
    """A game server on 127.0.0.1 in a thread, for submitted agents, with a fresh token."""

    def __init__(self, config: TournamentConfig, data: Path) -> None:
        self.config, self.data = config, data

    def __enter__(self) -> tuple[str, str, tuple[Any, Any]]:
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
        token = Store(self.data).add_token(f"tournament-{self.config.name}")
        host = self.config.listen.rpartition(":")[0]
        return f"ws://{host}:{self.server.port}", token, (self.server, self.loop)

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
