"""Tournaments: every learner x adversary x class x seed, ranked and reported.

A tournament is one TOML file (:mod:`.config`). Its games (:mod:`.pairing`) are played
where their agents live (:mod:`.matches`): built-in pairs in worker processes through
the local driver, submitted files in their sandboxes, each loaded once, as clients of a
game server a field worker runs on a private Unix socket (:mod:`.field`: local worker
processes or Ray actors), remote agents on their own connection. Results go into the
data folder's SQLite index as each game ends, keyed by what each game depends on
(:mod:`.run`: running the same command again plays only what is missing or changed),
then are ranked (:mod:`.ranking`) and reported as one static page (:mod:`.report`).
A field too big for a round robin plays k games of each version instead, chosen as the
ratings come in (:mod:`.schedule`), and is ranked by a model fitted on the stored scores,
each rating with its interval (:mod:`.ratings`).

This room imports the games, the agents, the records and the network room.
"""

from __future__ import annotations

from littlestone.games.errors import ConfigError
from littlestone.server.tournament.config import Limits, TournamentConfig, load_config
from littlestone.server.tournament.pairing import Pairing
from littlestone.server.tournament.ranking import rank
from littlestone.server.tournament.run import rate_entrant, run_tournament

__all__ = ["ConfigError", "Limits", "Pairing", "TournamentConfig",
           "load_config", "rank", "rate_entrant", "run_tournament"]
