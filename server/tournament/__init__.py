"""Tournaments: every learner x adversary x class x seed, ranked and reported.

A tournament is one TOML file (:mod:`.config`). Its games (:mod:`.pairing`) are played
where their agents live (:mod:`.matches`): built-in pairs in worker processes through
the local driver, submitted files in a :mod:`.sandbox` as clients of a server the
tournament runs on loopback, remote agents on their own connection. Results go into
the data folder's SQLite index as each game ends (:mod:`.run`: running the same command
again continues where it stopped), then are ranked (:mod:`.ranking`) and reported as
one static page (:mod:`.report`).

This room imports the games, the agents, the records and the network room.
"""

from __future__ import annotations

from littlestone.server.tournament.config import (
    ConfigError,
    Limits,
    TournamentConfig,
    load_config,
)
from littlestone.server.tournament.pairing import Pairing
from littlestone.server.tournament.ranking import rank
from littlestone.server.tournament.run import run_tournament

__all__ = ["ConfigError", "Limits", "Pairing", "TournamentConfig",
           "load_config", "rank", "run_tournament"]
