"""Play a game with its log and its index row: what ``play`` and tournaments' built-in
pairs run, so that every game leaves a log under ``DIR/games/`` and a row in
``DIR/littlestone.db`` that keeps the log's final chain digest (its anchor).

>>> import tempfile, pathlib
>>> from littlestone.games.classes import make_class
>>> from littlestone.learners import LEARNERS
>>> from littlestone.adversaries import ADVERSARIES
>>> data = pathlib.Path(tempfile.mkdtemp())
>>> game = GameSpec("mistake-bound", 50, make_class("thresholds:n=31"))
>>> done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 0, data)
>>> from littlestone.server.records.logs import read_log
>>> row = Store(data).game(done.game_id)
>>> done.result.status, done.log.exists(), row["status"]
('complete', True, 'complete')
>>> row["chain_sha256"] == read_log(done.log).chain.hex()
True
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

from littlestone import __version__
from littlestone.adversaries.base import Adversary
from littlestone.games.agents import Agent
from littlestone.games.errors import UnsupportedGame
from littlestone.games.game import GameResult, GameSeeds, GameSpec, game_seeds
from littlestone.learners.base import Learner
from littlestone.local import play
from littlestone.protocol.messages import PROTOCOL_VERSION
from littlestone.server.records.database import utc_now
from littlestone.server.records.logs import LogWriter, log_level
from littlestone.server.records.rows import (
    AgentIdentity,
    GameStart,
    LogFooter,
    LoggedRules,
    LogHeader,
)
from littlestone.server.records.store import Store, new_game_id

__all__ = ["LoggedGame", "agent_identity", "game_info", "log_footer", "log_header",
           "package_version", "play_logged"]

def package_version() -> str:
    """The package's version (it is in every log header, and re-simulating a log needs
    the version that wrote it)."""
    return __version__


@dataclass
class LoggedGame:
    """A finished game: its result, its id and its log."""

    result: GameResult
    game_id: str
    #: None when the game was played with log level ``none``.
    log: Path | None


def agent_identity(agent: Agent) -> AgentIdentity:
    """An agent's spec, and the SHA-256 of its file when it comes from one."""
    module = type(agent).__module__
    out: AgentIdentity = {"spec": agent.spec, "class": f"{module}.{type(agent).__qualname__}"}
    source = getattr(sys.modules.get(module), "__file__", None)
    if source and module.startswith("littlestone_agent_"):
        out["file"] = source
        out["sha256"] = hashlib.sha256(Path(source).read_bytes()).hexdigest()
    else:
        out["sha256"] = f"littlestone {package_version()}"
    return out


def game_info(game: GameSpec) -> LoggedRules:
    """The game's rules as the log header keeps them."""
    return {"game": game.game, "class": game.hclass.spec if game.hclass else None,
            "rounds": game.rounds, "experts": game.experts,
            "horizon_known": game.horizon_known}


def log_header(game_id: str, source: str, game: GameSpec, seeds: GameSeeds,
               learner: AgentIdentity, adversary: AgentIdentity) -> LogHeader:
    """A log's header. The seeds are not in it, only S and SHA-256 of the game key: the
    key goes into the footer, once the game is over (:func:`log_footer`)."""
    return {
        "game_id": game_id, "package": package_version(), "protocol": PROTOCOL_VERSION,
        "started": utc_now(), "source": source, "rules": game_info(game), "seed": seeds.game,
        "key_sha256": seeds.commitment.hex(), "learner": learner, "adversary": adversary,
    }


def log_footer(seeds: GameSeeds, result: GameResult | None, status: str = ""
               ) -> LogFooter:
    """A log's footer: the result (or, for a game cut short without one, ``status``)
    and the game key, which re-derives every seed now that the game is over."""
    footer: LogFooter = {"status": status, "finished": utc_now(), "result": {},
                              "key": seeds.key.hex()}
    if result is not None:
        footer["status"], footer["result"] = result.status, result.to_dict()
        if result.revealed is not None:  # a witness, for replays
            revealed = result.revealed
            footer["revealed"] = revealed.tolist() if hasattr(revealed, "tolist") else revealed
    return footer


def play_logged(
    game: GameSpec, learner: Learner, adversary: Adversary, seed: int, data: Path,
    source: str = "play", learner_spec: str | None = None, adversary_spec: str | None = None,
    key: bytes | None = None, level: str = "auto",
) -> LoggedGame:
    """Play through the local driver, logging every round and indexing the game.

    ``learner_spec``/``adversary_spec`` are the specs as given (a file spec rebuilds a
    file agent on replay); by default the agents' own specs. ``key``: the game key
    (default: the public key of ``seed``, :func:`~littlestone.games.game.game_seeds`).
    ``level``: how much the log keeps (:data:`~.logs.LOG_LEVELS`; ``auto``: in full unless
    it would be large, then ``compact``: the seeds and the result, re-simulated on replay).
    """
    level = log_level(level, game)
    data = Path(data)
    store = Store(data)
    game_id = new_game_id()
    path = data / "games" / f"{game_id}.lslog"
    seeds = game_seeds(seed, key)
    learner_info: AgentIdentity = {**agent_identity(learner),
                                   "spec": learner_spec or learner.spec}
    adversary_info: AgentIdentity = {**agent_identity(adversary),
                                     "spec": adversary_spec or adversary.spec}
    header = log_header(game_id, source, game, seeds, learner_info, adversary_info)
    info: GameStart = {**game_info(game), "learner": learner_info["spec"],
            "adversary": adversary_info["spec"], "seed": seed, "horizon": game.rounds,
            "source": source}
    try:
        store.start_game(info, log=None if level == "none" else str(path), game_id=game_id)
        for agent in (learner_info, adversary_info):
            store.add_agent(agent["spec"], agent["sha256"])
        writer = LogWriter(path, header, level=level)
        try:
            result = play(game, learner, adversary, seed, log=writer, key=seeds.key)
        except UnsupportedGame:
            writer.abandon()
            path.unlink(missing_ok=True)
            store.finish_game(game_id, {"status": "refused"})
            raise
        except BaseException:
            writer.abandon()
            store.finish_game(game_id, {"status": "aborted"},
                              chain=None if level == "none" else writer.chain)
            raise
        writer.close(log_footer(seeds, result))
        store.finish_game(game_id, result.to_dict(),  # the log's anchor
                          chain=None if level == "none" else writer.chain)
    finally:
        store.close()
    return LoggedGame(result, game_id, None if level == "none" else path)
