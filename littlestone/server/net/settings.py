"""What a game server is started with, and the numbers of its rules (PROTOCOL.md 3, 6).

Imports nothing of the server's: the players, the driver and the server read it. The
fault that forfeits a game is the game loop's (:mod:`littlestone.games.loop`), the
same in every runner; re-exported here with the server's other numbers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ssl
from dataclasses import dataclass
from pathlib import Path

from littlestone.games.loop import FAULTS_TO_FORFEIT
from littlestone.protocol.codec import DEFAULT_LIMITS, Limits

__all__ = ["FAULTS_TO_FORFEIT", "GUESTS_SHARE", "HUMAN", "LOBBY_FAULTS", "LOBBY_MAX_FRAME",
           "REMOTE_BLOCK", "REVOKE_CHECK_S",
           "Budgets", "ConnectionLimits", "ServerSettings", "raise_fd_limit"]

#: Largest frame a session sends in the lobby (its messages are small); a larger one is
#: not decoded, and closes the connection (PROTOCOL.md 1.1).
LOBBY_MAX_FRAME = 64 << 10
#: Bad messages a session may send in the lobby; the last closes it (PROTOCOL.md 4.1).
LOBBY_FAULTS = 16
#: Rounds an oblivious built-in adversary hands over at a time against a remote learner
#: (smaller than the local driver's blocks: a block's arrays live while its rounds
#: cross the network, and 2048-round blocks fragmented the heap by ~15 MiB).
REMOTE_BLOCK = 256
#: Seconds between the checks that a spectator's token (over the wire, or a web page's
#: live feed) was not revoked while it watches (PROTOCOL.md 3.1).
REVOKE_CHECK_S = 5.0
#: The capability a peer names in its ``hello`` when a person makes its moves (the web
#: page's play, or any client): its games get the server's deadlines for people
#: (:attr:`ServerSettings.human_move_deadline`, PROTOCOL.md 3.2).
HUMAN = "human"
#: The share of ``Budgets.max_games`` that guests (``serve --public-play``) may hold in
#: all, whatever their addresses: the rest is the token holders' (PROTOCOL.md 3.2).
GUESTS_SHARE = 0.5


@dataclass(frozen=True)
class Budgets:
    """What a peer may ask a server for (PROTOCOL.md 1.2; ``serve --help``). Each is
    checked before anything is built for the game, and a request beyond one is refused
    with ``over_budget``; the server and every other game go on. The work a request
    starts is held to the CPU seconds and bytes stated here whatever it is (a
    server-side agent's set-up and each of its moves, a page's tree)."""

    #: Rounds of one game.
    max_rounds: int = 1_000_000
    #: Hypotheses of a finite class (each evaluation array is |H| long).
    max_hypotheses: int = 1 << 22
    #: Dimension d of ``halfspaces``.
    max_dimension: int = 4096
    #: Experts of an experts game.
    max_experts: int = 100_000
    #: CPU seconds the set-up of a server-side agent may take (its class built, exact
    #: Ldim or the randomised value of the whole class): beyond, the challenge is
    #: refused (``over_budget``); and each of its moves: beyond, the move is its
    #: ``over_budget`` fault (PROTOCOL.md 6). Measured on the CPU clock of the process
    #: that does the work, not on the wall clock.
    setup_cpu_s: float = 5.0
    move_cpu_s: float = 2.0
    #: CPU seconds all the moves of a server-side agent that plays in a process of its
    #: own (:mod:`.hosts`) may take over one game: beyond, each move is its
    #: ``over_budget`` fault (the third forfeits). 10^6 rounds of SOA on a small class
    #: take about 200 s.
    game_cpu_s: float = 600.0
    #: Instance checks exact Ldim may spend on one question of a server-side agent (SOA,
    #: shattered-tree ...: their ``budget`` parameter may not exceed it). None: what
    #: ``setup_cpu_s`` buys at the solver's speed on this machine, measured when the
    #: server starts (:func:`littlestone.games.ldim.checks_per_second`).
    ldim_work: int | None = None
    #: The largest truth table |H| x |X| such an agent may build.
    max_truth_table: int = 1 << 24
    #: The caches exact Ldim may fill for one server-side agent, in MiB (counted in its
    #: game's memory).
    solver_memory_mb: int = 64
    #: Estimated memory of one game (the class, the opponent's tables and caches, the
    #: blocks of instances in flight, the history kept for the final check), in MiB: a
    #: server-side agent that runs in a process of its own is held to it there.
    game_memory_mb: int = 256
    #: Estimated disk one game takes (its log, the history of a halfspace game's
    #: instances kept for the final check), in MiB.
    game_disk_mb: int = 1024
    #: The disk one token's games may take, in MiB: the logs of its games in the index
    #: and the estimates of those it plays now.
    token_disk_mb: int = 4096
    #: The disk the data folder may take in all, in MiB (its logs, counted when the
    #: server starts and as games end, and the estimates of the games running).
    data_disk_mb: int = 16384
    #: Free space the data folder's disk must keep after a new game's estimate, in MiB
    #: (what the index, the logs' footers and the operating system need).
    min_free_mb: int = 256
    #: CPU seconds one page's tree (``/api/tree``, the play page's class) may take.
    page_cpu_s: float = 2.0
    #: Games the server referees at once.
    max_games: int = 256


@dataclass(frozen=True)
class ConnectionLimits:
    """What one peer, one address or one token may hold of a server, and for how long
    (PROTOCOL.md 1.1; ``serve --help``, which refuses numbers that are not positive).
    Every number of the kind is here and nowhere else."""

    #: Seconds a new connection has to send its ``hello`` (PROTOCOL.md 3).
    handshake_s: float = 10.0
    #: Seconds a session may stay in the lobby without sending a message (a spectator
    #: watching, an entrant waiting for its tournament's games and a creator waiting for
    #: its joiner are not idle); then it is closed with ``timeout``.
    lobby_idle_s: float = 300.0
    #: Seconds a created game waits for its second player; then it expires (``timeout``).
    create_expiry_s: float = 600.0
    #: Open connections in all (raised file-descriptor limit permitting: see
    #: :func:`raise_fd_limit`); one more is told ``over_budget`` and closed.
    max_connections: int = 1024
    #: Open connections from one IP address (handshakes included): one more is dropped
    #: before its handshake.
    per_address: int = 64
    #: Open connections of one token's account.
    per_token: int = 16
    #: Games one token's account plays at once (challenges and created games; a
    #: tournament's games are the tournament's, not counted).
    games_per_token: int = 8
    #: Lobby messages a session may send per second, on average, and in a burst; one more
    #: is a fault (``over_budget``), as a bad message is.
    message_rate: float = 20.0
    message_burst: int = 40
    #: Games one IP address plays at once as a guest of the page's public play
    #: (``serve --public-play``; PROTOCOL.md 3.2): guests have no token to count by.
    guest_games: int = 2


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's soft limit of open files towards its hard limit, to at
    least ``wanted`` if it may; returns the soft limit now in force."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard == resource.RLIM_INFINITY else min(hard, max(soft, wanted))
    if target != resource.RLIM_INFINITY and target > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


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
    connections: ConnectionLimits = ConnectionLimits()
    #: Agents the operator serves beyond the registered built-ins: name -> spec (a file
    #: agent ``FILE.py:Class``, loaded when the server starts). Peers name them by name.
    agents: tuple[tuple[str, str], ...] = ()
    #: Listen on this Unix socket instead of host:port (a tournament's, for sandboxes).
    unix: Path | None = None
    #: How much a game's log keeps: ``full``, or ``none`` (the index row only). A remote
    #: player's moves cannot be re-simulated, so ``compact`` keeps them too (= ``full``).
    log_level: str = "full"
    #: The per-move deadline and the time bank of a player whose ``hello`` says it is a
    #: person (capability :data:`HUMAN`): generous, and the server's, never the peer's.
    human_move_deadline: float = 120.0
    human_time_bank: float = 600.0
    #: The rounds of a game a person plays: its deadlines are long, so its game's slot
    #: is held at most about ``human_max_rounds`` x ``human_move_deadline`` (33 hours
    #: by default), not 10^6 x 120 s (PROTOCOL.md 3.2). The page's own form offers 100.
    human_max_rounds: int = 1000
    #: The web page lets anyone play as a guest, without a token (``serve --public-play``;
    #: opt-in, within ``ConnectionLimits.guest_games`` per address).
    public_play: bool = False

    def for_player(self, capabilities: frozenset[str]) -> ServerSettings:
        """The settings a player's moves are timed by: a person's deadlines when its
        ``hello`` named :data:`HUMAN`, else these.

        >>> settings = ServerSettings()
        >>> settings.for_player(frozenset({"human"})).move_deadline
        120.0
        >>> settings.for_player(frozenset()) is settings
        True
        """
        if HUMAN not in capabilities:
            return self
        return dataclasses.replace(self, move_deadline=self.human_move_deadline,
                                   time_bank=self.human_time_bank)
