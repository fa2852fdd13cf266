"""A logged game, from its log's header to its index row's anchor: what every place
that plays a game for the records runs (``play`` and tournaments' built-in pairs through
:func:`play_logged`, the game server, a tournament's direct link), so that each game
leaves a log under ``DIR/games/`` and a row in ``DIR/littlestone.db`` that keeps the
log's final chain digest (its anchor), however it ends.

A :class:`GameRecording` writes the log's header (:meth:`~GameRecording.open`), indexes
the game ``running`` (:meth:`~GameRecording.index_start`), hands its
:class:`~.logs.LogWriter` to the game for the rounds, then ends the log
(:meth:`~GameRecording.end` with the result, or :meth:`~GameRecording.cut_short` by what
stopped it) and finishes the row with the log's anchor
(:meth:`~GameRecording.index_end`); :func:`recorded` runs the whole of it around a game
where the index is written on the game's thread. A game that did not end its log (its
process killed) stays ``running`` until :meth:`.store.Store.sweep` marks it
``interrupted``. How a game without a result ends (:meth:`~GameRecording.cut_short`):

- refused by its agents' rules (:class:`~littlestone.games.errors.UnsupportedGame`): its
  log removed, its row ``refused``;
- its log could not be written (:class:`~.logs.LogWriteError`, the disk full): its log as
  far as it was written, no footer; its row ``aborted:storage``, with the rounds the log
  holds and no anchor;
- an error of the referee's (an :class:`Exception`), or a stop from outside (a signal, a
  cancellation): a footer with the status (``failed`` or ``stopped``: the server's
  ``aborted:internal`` and ``aborted:shutdown``, ``play``'s ``aborted``) and the game key;
  its row with that status, the rounds and the anchor.

A row the index cannot end (SQLite's ``database or disk is full``) stays ``running``
behind a log that has its footer: this process ends it at its next chance (the next game
it indexes in the folder, :func:`end_unended`), and once the process is gone the next
tournament run ends it from the footer (:func:`end_from_logs`) and records its pairing
instead of playing it again.

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

import contextlib
import hashlib
import sqlite3
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from littlestone import __version__
from littlestone.adversaries.base import Adversary
from littlestone.games.agents import Agent
from littlestone.games.errors import UnsupportedGame
from littlestone.games.game import GameResult, GameSeeds, GameSpec, ResultFields, game_seeds
from littlestone.learners.base import Learner
from littlestone.local import play
from littlestone.protocol.messages import PROTOCOL_VERSION
from littlestone.server.records.database import utc_now
from littlestone.server.records.logs import LogWriteError, LogWriter, log_level, read_log
from littlestone.server.records.rows import (
    AgentIdentity,
    GameRow,
    GameStart,
    LogFooter,
    LoggedRules,
    LogHeader,
)
from littlestone.server.records.store import (
    RESULT_COLUMNS,
    STORAGE_STATUS,
    Store,
    _owner_alive,
    new_game_id,
)

__all__ = ["ABORTED", "INTERNAL", "REFUSED", "SHUTDOWN", "GameRecording", "LoggedGame",
           "agent_identity", "end_from_logs", "end_unended", "game_info", "index_landed",
           "log_footer", "log_header", "package_version", "play_logged", "recorded"]


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


#: The status of a game its agents' rules refused before its first move (its log removed).
REFUSED = "refused"
#: The status of a game ended by an error of the referee's (the server, the direct link).
INTERNAL = "aborted:internal"
#: The status of a game stopped with its server (a shutdown, a cancellation).
SHUTDOWN = "aborted:shutdown"
#: The status of a game ``play`` did not end, for an error or a signal.
ABORTED = "aborted"


class GameRecording:
    """One game's log and index row, from the header to the anchor (see the module's
    docstring). ``learner``/``adversary``: the players' identities as the header keeps
    them (their specs go into the row); ``seed``: the game seed the row keeps;
    ``level``: how much the log keeps (:data:`~.logs.LOG_LEVELS`: ``none`` writes no
    file and anchors nothing)."""

    def __init__(self, data: Path, game: GameSpec, seeds: GameSeeds, seed: int,
                 learner: AgentIdentity, adversary: AgentIdentity, source: str,
                 level: str = "full", game_id: str | None = None) -> None:
        self.game_id = game_id or new_game_id()
        self.seeds, self.level = seeds, level
        self.path = Path(data) / "games" / f"{self.game_id}.lslog"
        self.header = log_header(self.game_id, source, game, seeds, learner, adversary)
        self.start: GameStart = {**game_info(game), "learner": learner["spec"],
                                 "adversary": adversary["spec"], "seed": seed,
                                 "horizon": game.rounds, "source": source}
        self._log_writer: LogWriter | None = None
        #: What the row ends with (its result's columns, and the anchor or None), once
        #: the log has ended.
        self.outcome: tuple[ResultFields, bytes | None] | None = None
        #: The error a footer met (the disk full), when the log could not be ended.
        self.write_error: LogWriteError | None = None

    @property
    def log(self) -> Path | None:
        """The log's file (None with log level ``none``)."""
        return None if self.level == "none" else self.path

    def open(self, background: bool = False) -> LogWriter:
        """Write the log's header (:class:`~.logs.LogWriteError` if it cannot be); the
        writer is the game's to log its rounds with (``background``: in a thread)."""
        self._log_writer = LogWriter(self.path, self.header, background=background,
                                     level=self.level)
        return self._log_writer

    @property
    def writer(self) -> LogWriter:
        """The log's writer, once :meth:`open` has written the header."""
        assert self._log_writer is not None, "the log is not open (open)"
        return self._log_writer

    def index_start(self, store: Store) -> None:
        """Index the game ``running``, its log named (none with log level ``none``); the
        rows a full index left unended are ended first (:func:`end_unended`)."""
        end_unended(store)
        store.start_game(self.start, None if self.log is None else str(self.path),
                         self.game_id)

    def index_unbegun(self, store: Store, error: LogWriteError) -> None:
        """Index a game whose log's header could not be written (the disk full): a row
        ``aborted:storage`` with no log and no round, the header's bytes removed. (The
        server's fault: a tournament records it for nobody and plays it again.)"""
        self.write_error = error
        self.path.unlink(missing_ok=True)
        store.start_game(self.start, None, self.game_id)
        self.outcome = {"status": STORAGE_STATUS, "rounds": 0}, None
        store.finish_game(self.game_id, self.outcome[0])

    def discard(self) -> None:
        """Remove the log of a game that never started (it was refused, or the index
        could not take its row)."""
        self.writer.abandon()
        self.path.unlink(missing_ok=True)

    def end(self, result: GameResult) -> None:
        """End the log with the game's result and the game key (its footer):
        :class:`~.logs.LogWriteError` if it cannot be written."""
        self.writer.close(log_footer(self.seeds, result))
        self.outcome = result.to_dict(), self._anchor()

    def cut_short(self, error: BaseException, failed: str = INTERNAL,
                  stopped: str = SHUTDOWN) -> str:
        """End the log of a game that raised ``error`` instead of a result, as the
        module's docstring says (``failed``: the status of an error of the referee's;
        ``stopped``: of a stop from outside); returns the game's status. A footer that
        cannot be written leaves the row without an anchor, with the rounds the log holds
        (:attr:`write_error` says why)."""
        writer = self.writer
        if isinstance(error, UnsupportedGame):
            self.discard()
            self.outcome = {"status": REFUSED}, None
            return REFUSED
        if isinstance(error, LogWriteError):
            self.write_error = error
            writer.abandon()
            self.outcome = {"status": STORAGE_STATUS, "rounds": writer.rounds_kept}, None
            return STORAGE_STATUS
        status = failed if isinstance(error, Exception) else stopped
        try:
            writer.close(log_footer(self.seeds, None, status))
        except LogWriteError as exc:
            self.write_error = exc
            self.outcome = {"status": status, "rounds": writer.rounds_kept}, None
        else:
            self.outcome = {"status": status, "rounds": writer.rounds_written}, self._anchor()
        return status

    def index_end(self, store: Store) -> None:
        """Finish the game's row as its log ended: its result and the log's anchor. An
        index that cannot take it (``database or disk is full``) leaves the row
        ``running`` and raises; the row is ended at the next chance, the next game this
        process indexes in the folder (:func:`end_unended`), or, once the process is
        gone, by the next run from the log's footer (:func:`end_from_logs`)."""
        assert self.outcome is not None, "the log has not ended (end or cut_short)"
        result, chain = self.outcome
        try:
            end_unended(store)
            store.finish_game(self.game_id, result, chain=chain)
        except sqlite3.OperationalError:
            with _UNENDED_LOCK:
                _UNENDED.setdefault(str(store.data), {})[self.game_id] = self.outcome
            raise

    def _anchor(self) -> bytes | None:
        """The log's final chain digest, which the row keeps (none without a log)."""
        return None if self.log is None else self.writer.chain


@contextlib.contextmanager
def recorded(recording: GameRecording, store: Store, failed: str = INTERNAL,
             stopped: str = SHUTDOWN, background: bool = False) -> Iterator[LogWriter]:
    """A game's log and its row in ``store``, around the game: the header and the row
    ``running`` on entry (the log removed if the row cannot be written), the log's writer
    for the rounds; the game ends its log with :meth:`GameRecording.end`, and on an
    error or a stop the log is cut short (:meth:`GameRecording.cut_short`, ``failed``,
    ``stopped``) and the error raised again; the row is finished either way.

    >>> import tempfile
    >>> from littlestone.games.classes import make_class
    >>> from littlestone.server.records.logs import read_log
    >>> data = Path(tempfile.mkdtemp())
    >>> store = Store(data)
    >>> game = GameSpec("mistake-bound", 5, make_class("thresholds:n=4"))
    >>> who: AgentIdentity = {"spec": "halving", "sha256": "-"}
    >>> recording = GameRecording(data, game, game_seeds(0), 0, who, who, "play")
    >>> with recorded(recording, store) as writer:
    ...     raise RuntimeError("a bug of the referee's")
    Traceback (most recent call last):
    ...
    RuntimeError: a bug of the referee's
    >>> row = store.game(recording.game_id)
    >>> row["status"], read_log(recording.log).status
    ('aborted:internal', 'aborted:internal')
    >>> row["chain_sha256"] == read_log(recording.log).chain.hex()
    True
    >>> store.close()
    """
    writer = recording.open(background)
    try:
        recording.index_start(store)
    except BaseException:
        recording.discard()
        raise
    try:
        yield writer
    except BaseException as error:
        recording.cut_short(error, failed, stopped)
        raise
    finally:
        recording.index_end(store)


#: Rows whose end a full index refused, by data folder and game: their result and anchor.
_UNENDED: dict[str, dict[str, tuple[ResultFields, bytes | None]]] = {}
_UNENDED_LOCK = threading.Lock()


def end_unended(store: Store) -> list[str]:
    """End the rows of ``store``'s folder that a full index left ``running`` in this
    process (:meth:`GameRecording.index_end`), now that it may take them; returns their
    ids. (A row still refused stays for the next chance.)"""
    with _UNENDED_LOCK:
        waiting = dict(_UNENDED.get(str(store.data), {}))
    ended = []
    for game_id, (result, chain) in waiting.items():
        store.finish_game(game_id, result, chain=chain)
        with _UNENDED_LOCK:
            _UNENDED.get(str(store.data), {}).pop(game_id, None)
        ended.append(game_id)
    return ended


def end_from_logs(store: Store) -> list[GameRow]:
    """End, as their logs ended, the rows left ``running`` by a process that is gone but
    whose logs have their footers (its index was full when the game ended, or it died
    between the footer and the row): the footer's status and result, and the log's
    anchor. Returns those rows, ended; a log without a footer is left to
    :meth:`.store.Store.sweep` (``interrupted``)."""
    ended = []
    for row in store.games(limit=10_000, status="running"):
        if _owner_alive(row.get("owner")) or not row.get("log"):
            continue
        try:
            log = read_log(Path(str(row["log"])))
        except Exception:  # (a missing or damaged log: the sweep's)
            continue
        if log.footer is None or not log.status:
            continue
        result = {**{k: v for k, v in log.result.items() if k in RESULT_COLUMNS},
                  "status": log.status, "rounds": log.n_rounds}
        store.finish_game(row["game_id"], cast("ResultFields", result), chain=log.chain)
        with _UNENDED_LOCK:
            _UNENDED.get(str(store.data), {}).pop(row["game_id"], None)
        done = store.game(row["game_id"])
        if done is not None:
            ended.append(done)
    return ended


def index_landed(store: Store, row: GameRow, log: Path | None) -> None:
    """Index a game played and logged in another data folder (a tournament's node), whose
    log now lies at ``log`` in this one: its row as the node recorded it, its anchor (the
    log's final chain digest, as the node recorded it) under this folder's key."""
    start = cast("GameStart", row)  # (a row of the index holds every column of a start)
    store.start_game(start, None if log is None else str(log), row["game_id"])
    chain = row.get("chain_sha256")
    store.finish_game(row["game_id"], {k: row.get(k) for k in RESULT_COLUMNS},
                      chain=bytes.fromhex(chain) if chain else None)


def play_logged(
    game: GameSpec, learner: Learner, adversary: Adversary, seed: int, data: Path,
    source: str = "play", learner_spec: str | None = None, adversary_spec: str | None = None,
    key: bytes | None = None, level: str = "auto",
) -> LoggedGame:
    """Play through the local driver, logging every round and indexing the game; a game
    cut short (an error, a signal) is recorded ``aborted`` (:func:`recorded`).

    ``learner_spec``/``adversary_spec`` are the specs as given (a file spec rebuilds a
    file agent on replay); by default the agents' own specs. ``key``: the game key
    (default: the public key of ``seed``, :func:`~littlestone.games.game.game_seeds`).
    ``level``: how much the log keeps (:data:`~.logs.LOG_LEVELS`; ``auto``: in full unless
    it would be large, then ``compact``: the seeds and the result, re-simulated on replay).
    """
    seeds = game_seeds(seed, key)
    learner_info: AgentIdentity = {**agent_identity(learner),
                                   "spec": learner_spec or learner.spec}
    adversary_info: AgentIdentity = {**agent_identity(adversary),
                                     "spec": adversary_spec or adversary.spec}
    recording = GameRecording(Path(data), game, seeds, seed, learner_info, adversary_info,
                              source, log_level(level, game))
    store = Store(Path(data))
    try:
        with recorded(recording, store, ABORTED, ABORTED, background=True) as writer:
            for agent in (learner_info, adversary_info):
                store.add_agent(agent["spec"], agent["sha256"])
            result = play(game, learner, adversary, seed, log=writer, key=seeds.key)
            recording.end(result)
    finally:
        store.close()
    return LoggedGame(result, recording.game_id, recording.log)
