"""Re-simulating a logged game: its rules and agents made again from its header, its
seeds from the key its footer reveals, and the game played again through the local
runner. :func:`filled` re-derives the rounds of a compact log this way; verification
(:mod:`.verify`) and the ``replay`` adversary (:mod:`.playback`) build on it.

What the log may make this process build is decided by :mod:`.strangers` (a log nothing
anchors is held to a peer's budgets). The agents are made from their specs through the
registries, so a game played against the ``replay`` adversary re-simulates only where
:mod:`.playback` is imported (as :mod:`.verify`, :mod:`.replay` and the command line
do).

>>> import tempfile, pathlib
>>> from littlestone.games.classes import make_class
>>> from littlestone.learners import LEARNERS
>>> from littlestone.adversaries import ADVERSARIES
>>> from littlestone.server.records.logged import play_logged
>>> from littlestone.server.records.logs import read_log
>>> data = pathlib.Path(tempfile.mkdtemp())
>>> game = GameSpec("mistake-bound", 30, make_class("thresholds:n=63"))
>>> done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 3,
...                    data, level="compact")
>>> compact = read_log(done.log)
>>> is_compact(compact), compact.n_rounds, filled(compact).n_rounds
(True, 0, 30)
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from littlestone.adversaries.base import ADVERSARIES, Adversary
from littlestone.games.agents import Registry
from littlestone.games.errors import LogError
from littlestone.games.game import EXPERTS, GameResult, GameSpec, public_key
from littlestone.learners.base import LEARNERS, Learner
from littlestone.local import play
from littlestone.server.records.anchors import anchoring
from littlestone.server.records.logs import GameLogData
from littlestone.server.records.logs.format import ExpertRow, RoundColumns
from littlestone.server.records.strangers import agent_spec, rules_of

__all__ = ["filled", "game_agents", "game_key", "game_spec", "is_compact", "resimulated"]


def game_spec(log: GameLogData, anchored: bool = True) -> GameSpec:
    """The rules of a logged game (``anchored`` False: within the budgets of a log nothing
    anchors, :mod:`.strangers`)."""
    return rules_of(log.header, anchored)


def game_key(log: GameLogData) -> bytes:
    """The key the game's seeds derive from: revealed in the footer and checked against
    the SHA-256 in the header; a game without a footer can be re-derived only if its
    key was the public one of its seed (``play``). LogError when it cannot be had."""
    promised = log.header.get("key_sha256")
    if not isinstance(promised, str):
        raise LogError("the log names no game key (written before littlestone 0.3): "
                       "re-simulate it with the version that wrote it")
    revealed = log.footer.get("key") if log.footer else None
    if revealed is None:
        key = public_key(int(log.header["seed"]))
        if hashlib.sha256(key).hexdigest() != promised:
            raise LogError("the game ended before its key was revealed: its seeds and coin "
                           "cannot be re-derived")
        return key
    try:
        key = bytes.fromhex(str(revealed))
    except ValueError:
        raise LogError("the footer's game key is not hexadecimal") from None
    if hashlib.sha256(key).hexdigest() != promised:
        raise LogError("the game key in the footer does not match the SHA-256 the header "
                       "committed to")
    return key


def game_agents(log: GameLogData, anchored: bool) -> tuple[Learner, Adversary]:
    """The logged game's agents, made again from their specs; LogError when a file agent
    changed since the game (its re-simulation would be another game; checked before the
    file is imported) or the log may not have them built (:func:`.strangers.agent_spec`)."""
    agents = []
    roles: tuple[tuple[Literal["learner", "adversary"], Registry[Any]], ...] = (
        ("learner", LEARNERS), ("adversary", ADVERSARIES))
    for role, registry in roles:
        info = log.header[role]
        agents.append(registry.make(agent_spec(log.header, role, info, anchored)))
    learner, adversary = agents
    assert isinstance(learner, Learner) and isinstance(adversary, Adversary)
    return learner, adversary


def is_compact(log: GameLogData) -> bool:
    """Whether the log keeps no rounds (log level ``compact``): :func:`filled` re-derives
    them."""
    return log.header.get("log_level") == "compact"


def resimulated(log: GameLogData, spec: GameSpec, learner: Learner, adversary: Adversary
                ) -> tuple[GameResult, list[Any]]:
    """The game played again from the log's seed and key: its result and every record.
    LogError when the key cannot be had (:func:`game_key`)."""
    kept: list[Any] = []
    result = play(spec, learner, adversary, int(log.header["seed"]), on_record=kept.append,
                  key=game_key(log))
    return result, kept


def filled(log: GameLogData, data: str | Path | None = None, game_id: str | None = None
           ) -> GameLogData:
    """The log with its rounds: a compact log's re-derived by re-simulating the game from
    its seeds and revealed key with the same agents (LogError when that cannot be done:
    a remote player, a changed agent file, a log nothing anchors asking beyond a peer's
    budgets; ``data`` and ``game_id`` as :func:`.anchors.anchoring`'s, which tells whether
    the log is anchored); any other log as it is."""
    if not is_compact(log) or log.n_rounds:
        return log
    if any(str(log.header[r]["spec"]).startswith("remote:") for r in ("learner", "adversary")):
        raise LogError("a compact log of a game with a remote player keeps no moves to show")
    anchored = anchoring(log, data, game_id).anchored is True
    spec = game_spec(log, anchored)
    learner, adversary = game_agents(log, anchored)
    _, kept = resimulated(log, spec, learner, adversary)
    logged_rounds = log.result.get("rounds", len(kept))
    if logged_rounds != len(kept):
        raise LogError(f"re-simulating the compact log gives {len(kept)} rounds, its footer "
                       f"{logged_rounds}")
    if log.header["rules"]["game"] == EXPERTS:
        # (an ExpertsRecord's fields, its Nones left out)
        rounds = [cast("ExpertRow", {k: v for k, v in r._asdict().items() if v is not None})
                  for r in kept]
        return dataclasses.replace(log, expert_rounds=rounds)
    columns: RoundColumns = {
        "x": [r.x for r in kept], "p": np.array([r.p for r in kept], dtype=np.float64),
        "y": np.array([r.y for r in kept], dtype=np.int8),
        "prediction": np.array([r.prediction for r in kept], dtype=np.int8)}
    return dataclasses.replace(log, columns=columns)
