"""How much of a game its log keeps: the log levels, and ``auto`` resolved by the size a
full log would take.

>>> LOG_LEVELS
('auto', 'full', 'compact', 'none')
"""

from __future__ import annotations

from littlestone.games.errors import LogError
from littlestone.games.game import GameSpec
from littlestone.server.records.logs.format import FULL_ARRAYS_MAX

__all__ = ["AUTO_FULL_BYTES", "LOG_LEVELS", "estimated_bytes", "log_level"]

#: How much of a game its log keeps: ``full`` every round; ``compact`` the header and the
#: footer only (the seeds, the revealed key, the agents and the result: a game whose
#: agents all ran in process is re-simulated to show its rounds, ``replay``); ``none``
#: no log at all (the index row alone). ``auto`` (the default of ``play`` and
#: tournaments) is ``full`` up to :data:`AUTO_FULL_BYTES` of estimated log, else ``compact``.
LOG_LEVELS = ("auto", "full", "compact", "none")
#: The largest estimated log ``auto`` keeps in full.
AUTO_FULL_BYTES = 64 << 20


def estimated_bytes(game: GameSpec) -> int:
    """About how many bytes a full log of ``game`` takes (per round: p, y and the
    prediction, the instance, and in the experts game the advice, weights and costs).

    >>> from littlestone.games.classes import make_class
    >>> estimated_bytes(GameSpec("mistake-bound", 200_000, make_class("halfspaces:d=100")))
    162000000
    """
    d = getattr(game.hclass, "n_features", 1) if game.game == "mistake-bound" else 1
    if game.game == "mistake-bound":
        return game.rounds * (10 + 8 * max(d, 1))
    arrays = 3 * 8 * game.n_experts if game.n_experts <= FULL_ARRAYS_MAX else 3 * 90
    return game.rounds * (160 + arrays)


def log_level(level: str, game: GameSpec) -> str:
    """``level`` with ``auto`` resolved for ``game``.

    >>> from littlestone.games.classes import make_class
    >>> log_level("auto", GameSpec("mistake-bound", 1000, make_class("thresholds:n=7")))
    'full'
    >>> log_level("auto", GameSpec("experts", 100_000, experts=1000))
    'compact'
    """
    if level not in LOG_LEVELS:
        raise LogError(f"log level {level!r}: one of {', '.join(LOG_LEVELS)}")
    if level != "auto":
        return level
    return "full" if estimated_bytes(game) <= AUTO_FULL_BYTES else "compact"
