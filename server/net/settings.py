"""What a game server is started with, and the numbers of its rules (PROTOCOL.md 3, 6).

Imports nothing of the server's: the players, the driver and the server read it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from littlestone.protocol.codec import DEFAULT_LIMITS, Limits

__all__ = ["FAULTS_TO_FORFEIT", "HANDSHAKE_TIMEOUT_S", "LOBBY_FAULTS", "LOBBY_MAX_FRAME",
           "REMOTE_BLOCK", "Budgets", "ServerSettings"]

#: The fault that forfeits a game (PROTOCOL.md 6).
FAULTS_TO_FORFEIT = 3
#: Seconds a new connection has to send its ``hello`` (PROTOCOL.md 3).
HANDSHAKE_TIMEOUT_S = 10.0
#: Largest frame a session sends in the lobby (its messages are small); a larger one is
#: not decoded, and closes the connection (PROTOCOL.md 1.1).
LOBBY_MAX_FRAME = 64 << 10
#: Bad messages a session may send in the lobby; the last closes it (PROTOCOL.md 4.1).
LOBBY_FAULTS = 16
#: Rounds an oblivious built-in adversary hands over at a time against a remote learner
#: (smaller than the local driver's blocks: a block's arrays live while its rounds
#: cross the network, and 2048-round blocks fragmented the heap by ~15 MiB).
REMOTE_BLOCK = 256


@dataclass(frozen=True)
class Budgets:
    """What a peer may ask a server for (PROTOCOL.md 1.2; ``serve --help``). Each is
    checked before anything is built for the game, and a request beyond one is refused
    with ``over_budget``; the server and every other game go on."""

    #: Rounds of one game.
    max_rounds: int = 1_000_000
    #: Hypotheses of a finite class (each evaluation array is |H| long).
    max_hypotheses: int = 1 << 22
    #: Dimension d of ``halfspaces``.
    max_dimension: int = 4096
    #: Experts of an experts game.
    max_experts: int = 100_000
    #: Instance checks exact Ldim may spend for a server-side SOA or shattered-tree (about
    #: 0.1-0.2 microseconds each: about a second), and the largest truth table |H| x |X|
    #: it may build.
    ldim_work: int = 5_000_000
    max_truth_table: int = 1 << 24
    #: Estimated memory of one game (the class, the opponent's tables, the blocks of
    #: instances in flight, the history kept for the final check), in MiB.
    game_memory_mb: int = 256
    #: Estimated disk one game takes (its log, the history of a halfspace game's
    #: instances kept for the final check), in MiB.
    game_disk_mb: int = 1024
    #: Games the server referees at once.
    max_games: int = 256


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
    budgets: Budgets = Budgets()
    #: Agents the operator serves beyond the registered built-ins: name -> spec (a file
    #: agent ``FILE.py:Class``, loaded when the server starts). Peers name them by name.
    agents: tuple[tuple[str, str], ...] = ()
    #: Listen on this Unix socket instead of host:port (a tournament's, for sandboxes).
    unix: Path | None = None
    #: How much a game's log keeps: ``full``, or ``none`` (the index row only). A remote
    #: player's moves cannot be re-simulated, so ``compact`` keeps them too (= ``full``).
    log_level: str = "full"
