"""The network room: the game server, its players and its spectators (PROTOCOL.md).

The WebSocket connections both ends use are :mod:`littlestone.transport`.

- :mod:`.settings`: what a server is started with, and the fault ladder's numbers;
- :mod:`.players`: remote learners and adversaries (deadlines, time bank, faults);
- :mod:`.driver`: a game with remote players, through the same referees as ``play``;
- :mod:`.spectators`: a running game's rounds for those who watch it;
- :mod:`.server`: sessions, challenges, open games, tournament entrants.

The client, which a student's agent runs, is :mod:`littlestone.client`.
This room imports the games, the agents, the protocol and the records; only the
command line and tournaments import it.
"""

from __future__ import annotations

from littlestone.server.net.server import GameServer, serve_forever
from littlestone.server.net.settings import FAULTS_TO_FORFEIT, ServerSettings

__all__ = ["FAULTS_TO_FORFEIT", "GameServer", "ServerSettings", "serve_forever"]
