"""The network room: the game server, its players and its spectators (PROTOCOL.md).

The WebSocket connections both ends use are :mod:`littlestone.transport`.

- :mod:`.settings`: what a server is started with, and the fault ladder's numbers;
- :mod:`.players`: remote learners and adversaries (deadlines, time bank, faults);
- :mod:`.driver`: a game with remote players, through the same referees as ``play``;
- :mod:`.policy`: what a peer may ask for (the budgets, the served opponents);
- :mod:`.admission`: tokens and credentials, a token's share, the lobby's message rate;
- :mod:`.peers`: a peer as the operator's log names it, and the refusals it is told;
- :mod:`.spectators`: a running game's rounds for those who watch it;
- :mod:`.hosting`: the games a server referees (admitted, played, logged, indexed);
- :mod:`.matchmaking`: open games and their joiners, a tournament's entrants;
- :mod:`.lobby`: a connection's session, from hello to close;
- :mod:`.server`: the server where these meet, and ``littlestone serve``.

The client, which a student's agent runs, is :mod:`littlestone.client`.
This room imports the games, the agents, the protocol and the records; only the
command line and tournaments import it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from littlestone.server.net.server import GameServer, serve_forever
    from littlestone.server.net.settings import FAULTS_TO_FORFEIT, ServerSettings

__all__ = ["FAULTS_TO_FORFEIT", "GameServer", "ServerSettings", "serve_forever"]

# Imported on first use (PEP 562): the command line reads the settings without the server.
_HOMES = {"GameServer": "server", "serve_forever": "server", "FAULTS_TO_FORFEIT": "settings",
          "ServerSettings": "settings"}


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use and kept."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
