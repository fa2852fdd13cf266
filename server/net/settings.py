"""What a game server is started with, and the numbers of its rules (PROTOCOL.md 3, 6).

Imports nothing of the server's: the players, the driver and the server read it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from littlestone.protocol.codec import DEFAULT_LIMITS, Limits

__all__ = ["FAULTS_TO_FORFEIT", "HANDSHAKE_TIMEOUT_S", "REMOTE_BLOCK", "ServerSettings"]

#: The fault that forfeits a game (PROTOCOL.md 6).
FAULTS_TO_FORFEIT = 3
#: Seconds a new connection has to send its ``hello`` (PROTOCOL.md 3).
HANDSHAKE_TIMEOUT_S = 10.0
#: Rounds an oblivious built-in adversary hands over at a time against a remote learner
#: (smaller than the local driver's blocks: a block's arrays live while its rounds
#: cross the network, and 2048-round blocks fragmented the heap by ~15 MiB).
REMOTE_BLOCK = 256


@dataclass(frozen=True)
class ServerSettings:
    """What ``littlestone serve`` is started with."""

    host: str = "127.0.0.1"
    port: int = 8765
    data: Path = Path("littlestone-data")
    anonymous: bool = False
    move_deadline: float = 10.0
    time_bank: float = 60.0
    limits: Limits = DEFAULT_LIMITS
    #: A TLS context (:func:`.transport.server_tls`): the server then speaks wss://.
    tls: ssl.SSLContext | None = None

