"""The index's database: one SQLite file per data folder (``DIR/littlestone.db``), its
tables, and the migrations that bring an index written by an older littlestone up to
date.

WAL mode and a busy timeout let several processes (two ``play`` runs, two servers, a
server and a tournament) write at once; nothing to start or configure. A schema
version adds columns (:data:`SCHEMA_VERSION`, ``PRAGMA user_version``); a data
migration rewrites rows, once (the ``migrations`` table). What the tables hold is the
business of the classes built on :class:`Database`: :class:`~.store.Store` (games,
agents, tournaments, the anchors' key), :class:`~.tokens.TokenTable` (tokens),
:class:`~.submissions.SubmissionTable` (a competition's submitted versions) and
:class:`~.scores.ScoreTable` (the tournaments' stored scores: ``score_cells``, and
``score_stamps``, which the triggers below bump on every change of a tournament's games
or of its competition's submissions).

Nothing but this module opens the index: SQLite keeps its locks as POSIX locks, which a
process loses on closing *any* descriptor of the file, so a stray ``open()`` of it (say,
to read it as a log) lets another connection delete the WAL under the holder and lose
rows. :func:`~littlestone.server.records.folder.is_index` tells the index's files by
name and identity without opening them; the log reader refuses them.

>>> import tempfile, pathlib
>>> database = Database(pathlib.Path(tempfile.mkdtemp()))
>>> database.path.name, database.schema_version() == SCHEMA_VERSION
('littlestone.db', True)
>>> database.close()
"""

from __future__ import annotations

import functools
import random
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from littlestone.games.errors import StoreError
from littlestone.server.records.folder import INDEX_NAME, opened

__all__ = ["BUSY_TIMEOUT_S", "SCHEMA_VERSION", "TRANSIENT_ERRORS", "Database", "StoreError",
           "retry_locked", "utc_now"]

#: 2: ``games.chain_sha256`` and ``games.chain_hmac`` (the anchors), ``secrets``.
#: 3: ``tokens.role``, ``games.owner`` (the process that runs a game, for
#: :meth:`.store.Store.sweep`).
#: 4: ``games.pairing``, unique: the tournament's pairing (``TOURNAMENT|KEY``) a game is
#: recorded as, so that no pairing is ever recorded by two games (a killed server's
#: rating and the restart's, two raters); ``submissions.rating_started`` (the lanes'
#: fairness).
#: 5: indexes on a tournament's games by status, learner, adversary and class (each with
#: the key, the games table's order), so that one filtered page of its games reads that
#: page, not the tournament (web/filters.py); ``tournaments.schedule`` (a sampled
#: tournament's field, for its live page: :meth:`.store.Store.start_tournament`).
SCHEMA_VERSION = 5
#: How long a statement waits for another process's lock before it fails.
BUSY_TIMEOUT_S = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    game_id TEXT PRIMARY KEY,
    started TEXT NOT NULL,
    finished TEXT,
    source TEXT,
    game TEXT NOT NULL,
    class TEXT,
    experts INTEGER,
    learner TEXT NOT NULL,
    adversary TEXT NOT NULL,
    seed INTEGER,
    horizon INTEGER,
    rounds INTEGER,
    status TEXT NOT NULL,
    mistakes REAL,
    expected_mistakes REAL,
    regret REAL,
    expected_regret REAL,
    bound REAL,
    bound_name TEXT,
    log TEXT,
    chain_sha256 TEXT,
    chain_hmac TEXT,
    owner TEXT,
    pairing TEXT
);
CREATE INDEX IF NOT EXISTS games_learner ON games (learner);
CREATE INDEX IF NOT EXISTS games_adversary ON games (adversary);
CREATE INDEX IF NOT EXISTS games_class ON games (class);
CREATE INDEX IF NOT EXISTS games_status ON games (status);
CREATE TABLE IF NOT EXISTS tokens (
    name TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT 'player'
);
CREATE TABLE IF NOT EXISTS tournaments (
    name TEXT PRIMARY KEY,
    config_sha256 TEXT NOT NULL,
    started TEXT NOT NULL,
    schedule TEXT
);
CREATE TABLE IF NOT EXISTS tournament_games (
    tournament TEXT NOT NULL,
    key TEXT NOT NULL,
    game_id TEXT,
    status TEXT NOT NULL,
    row TEXT NOT NULL,
    finished TEXT NOT NULL,
    PRIMARY KEY (tournament, key)
);
CREATE TABLE IF NOT EXISTS agents (
    spec TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    PRIMARY KEY (spec, sha256)
);
CREATE TABLE IF NOT EXISTS secrets (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS disk (
    account TEXT NOT NULL,
    game_id TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (account, game_id)
);
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    competition TEXT NOT NULL,
    account TEXT NOT NULL,
    version INTEGER NOT NULL,
    agent TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    path TEXT NOT NULL,
    submitted TEXT NOT NULL,
    role TEXT,
    verdict TEXT NOT NULL,
    reason TEXT,
    report TEXT NOT NULL DEFAULT '{}',
    rating TEXT NOT NULL DEFAULT 'none',
    rated TEXT,
    rating_started TEXT,
    UNIQUE (competition, account, version)
);
CREATE INDEX IF NOT EXISTS submissions_hash ON submissions (competition, account, sha256);
CREATE TABLE IF NOT EXISTS score_cells (
    tournament TEXT NOT NULL,
    learner TEXT NOT NULL,
    adversary TEXT NOT NULL,
    cell TEXT NOT NULL,
    changed INTEGER NOT NULL,
    PRIMARY KEY (tournament, learner, adversary)
);
CREATE INDEX IF NOT EXISTS score_cells_changed ON score_cells (tournament, changed);
CREATE TABLE IF NOT EXISTS score_stamps (
    tournament TEXT PRIMARY KEY,
    stamp INTEGER NOT NULL,
    built INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0
);
CREATE TRIGGER IF NOT EXISTS score_stamp_game_added AFTER INSERT ON tournament_games BEGIN
    INSERT INTO score_stamps (tournament, stamp) VALUES (NEW.tournament, 1)
    ON CONFLICT (tournament) DO UPDATE SET stamp = stamp + 1;
END;
CREATE TRIGGER IF NOT EXISTS score_stamp_game_dropped AFTER DELETE ON tournament_games BEGIN
    INSERT INTO score_stamps (tournament, stamp) VALUES (OLD.tournament, 1)
    ON CONFLICT (tournament) DO UPDATE SET stamp = stamp + 1;
END;
CREATE TRIGGER IF NOT EXISTS score_stamp_submitted AFTER INSERT ON submissions BEGIN
    INSERT INTO score_stamps (tournament, stamp) VALUES (NEW.competition, 1)
    ON CONFLICT (tournament) DO UPDATE SET stamp = stamp + 1;
END;
CREATE TRIGGER IF NOT EXISTS score_stamp_verdict AFTER UPDATE ON submissions BEGIN
    INSERT INTO score_stamps (tournament, stamp) VALUES (NEW.competition, 1)
    ON CONFLICT (tournament) DO UPDATE SET stamp = stamp + 1;
END;
CREATE TRIGGER IF NOT EXISTS score_stamp_withdrawn AFTER DELETE ON submissions BEGIN
    INSERT INTO score_stamps (tournament, stamp) VALUES (OLD.competition, 1)
    ON CONFLICT (tournament) DO UPDATE SET stamp = stamp + 1;
END;
CREATE TABLE IF NOT EXISTS migrations (
    name TEXT PRIMARY KEY,
    applied TEXT NOT NULL
);
"""

#: The data migrations (rewrites of existing rows, not columns), each applied once to an
#: index, in one write transaction, and recorded in ``migrations``: name -> its SQL
#: statements, in order.
_DATA_MIGRATIONS: dict[str, str | tuple[str, ...]] = {
    # logs were indexed by the path given at play time (relative to that working
    # directory, or absolute); a log always lies at DIR/games/GAME_ID.lslog, so its path
    # relative to the data folder is known: a data folder is then movable and copyable.
    "relative-log-paths": "UPDATE games SET log = 'games/' || game_id || '.lslog' "
                          "WHERE log != 'games/' || game_id || '.lslog' "
                          "AND log LIKE '%/games/' || game_id || '.lslog'",
    # the pairings recorded before games.pairing (schema 4), each on its game
    "recorded-pairings": "UPDATE games SET pairing = (SELECT MIN(t.tournament || '|' || "
                         "t.key) FROM tournament_games t WHERE t.game_id = games.game_id) "
                         "WHERE pairing IS NULL AND game_id IN (SELECT game_id FROM "
                         "tournament_games)",
    # a game a learner ended by its own fault was credited to its adversary (the
    # learner's figure as its ``forcing``); since issue 44 it is not scored for the
    # adversary (ranking.SCORING: won by forfeit). The rows' stored ``forcing`` (read by
    # the ratings) is cleared, and their tournaments' stored cells marked stale: the
    # next reader rebuilds them under the rules of today (scores.ScoreTable).
    "forfeits-not-credited": (
        "UPDATE score_stamps SET built = 0 WHERE tournament IN (SELECT tournament FROM "
        "tournament_games WHERE json_extract(row, '$.fault') = 'learner' AND "
        "(json_extract(row, '$.forcing') IS NOT NULL OR "
        "json_extract(row, '$.forcing_realised') IS NOT NULL))",
        "UPDATE tournament_games SET row = json_set(row, '$.forcing', NULL, "
        "'$.forcing_realised', NULL) WHERE json_extract(row, '$.fault') = 'learner' AND "
        "(json_extract(row, '$.forcing') IS NOT NULL OR "
        "json_extract(row, '$.forcing_realised') IS NOT NULL)"),
}

#: The columns each schema version added to tables an older version made (``ALTER TABLE``
#: on open, for an index written by an older littlestone).
_ADDED_COLUMNS = {
    2: [("games", "chain_sha256", "TEXT"), ("games", "chain_hmac", "TEXT")],
    3: [("tokens", "role", "TEXT NOT NULL DEFAULT 'player'"), ("games", "owner", "TEXT")],
    4: [("games", "pairing", "TEXT"), ("submissions", "rating_started", "TEXT")],
    5: [("tournaments", "schedule", "TEXT")],
}

#: The indexes each schema version added on those columns (made once they exist).
_ADDED_INDEXES = {
    4: ["CREATE UNIQUE INDEX IF NOT EXISTS games_pairing ON games (pairing)"],
    5: ["CREATE INDEX IF NOT EXISTS tournament_games_status ON tournament_games "
        "(tournament, status, key)",
        "CREATE INDEX IF NOT EXISTS tournament_games_learner ON tournament_games "
        "(tournament, json_extract(row, '$.learner'), key)",
        "CREATE INDEX IF NOT EXISTS tournament_games_adversary ON tournament_games "
        "(tournament, json_extract(row, '$.adversary'), key)",
        "CREATE INDEX IF NOT EXISTS tournament_games_class ON tournament_games "
        "(tournament, json_extract(row, '$.class'), key)"],
}


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: SQLite's errors that a moment later may be gone: the database locked (busy), or a
#: reader of the write-ahead log that found no steady snapshot in its tries while
#: others wrote ("locking protocol", SQLITE_PROTOCOL: seen under load).
TRANSIENT_ERRORS = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED,
                              sqlite3.SQLITE_PROTOCOL})


def retry_locked(action: Callable[[], Any]) -> Any:
    """``action()``, again after a short random pause while its error is one of
    :data:`TRANSIENT_ERRORS` (or, from an error without its code, says "locked"), for
    up to :data:`BUSY_TIMEOUT_S`."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", None)
            transient = ("locked" in str(exc) if code is None
                         else (code & 0xFF) in TRANSIENT_ERRORS)
            if not transient or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.05))


class Database:
    """One connection to a data folder's index, its tables made and migrated; the
    statements of the classes built on it go through :meth:`run` and :meth:`change`."""

    def __init__(self, data: Path) -> None:
        self.data = Path(data)
        self.path = self.data / INDEX_NAME
        try:
            self.data.mkdir(parents=True, exist_ok=True)
            if not self.data.is_dir():
                raise NotADirectoryError(20, "not a folder")
        except OSError as exc:
            why = "not a folder" if isinstance(exc, FileExistsError) else exc.strerror
            raise StoreError(f"cannot use {str(self.data)!r} as a data folder: {why}") from None
        try:
            self._open()
        except sqlite3.DatabaseError as exc:  # (OperationalError too: unwritable, locked)
            raise StoreError(f"{self.path} is not a usable littlestone index: {exc}") from None
        opened(self.path)

    def _open(self) -> None:
        # callers that share a connection across threads serialise their calls (tournaments do)
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        # Switching to WAL takes an exclusive lock and SQLite does not wait for it (the busy
        # timeout does not apply): two processes opening a new index at once retry.
        retry_locked(lambda: self._db.execute("PRAGMA journal_mode = WAL"))
        self._db.execute("PRAGMA synchronous = NORMAL")
        retry_locked(lambda: self._db.executescript(_SCHEMA))  # idempotent: IF NOT EXISTS
        retry_locked(self._migrate)
        for name, sql in _DATA_MIGRATIONS.items():
            retry_locked(functools.partial(self._migrate_data, name, sql))

    def _migrate(self) -> None:
        """Bring an index written by an older littlestone to :data:`SCHEMA_VERSION` (its
        ``PRAGMA user_version``): add the columns it lacks, in one write transaction, so
        that two processes opening it at once migrate it once."""
        if self.schema_version() >= SCHEMA_VERSION:
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            version = self.schema_version()
            for added in range(version + 1, SCHEMA_VERSION + 1):
                for table, column, kind in _ADDED_COLUMNS.get(added, []):
                    info = self._db.execute(f"PRAGMA table_info({table})")
                    have = {row["name"] for row in info}
                    if column not in have:  # (a table made new has it already)
                        self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                for index in _ADDED_INDEXES.get(added, []):
                    self._db.execute(index)
            if version < SCHEMA_VERSION:
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _migrate_data(self, name: str, sql: str | tuple[str, ...]) -> None:
        """Apply a data migration once (two processes at once: the second sees it done)."""
        done = "SELECT 1 FROM migrations WHERE name = ?"
        if self._db.execute(done, (name,)).fetchone():
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if not self._db.execute(done, (name,)).fetchone():
                for statement in (sql,) if isinstance(sql, str) else sql:
                    self._db.execute(statement)
                self._db.execute("INSERT INTO migrations VALUES (?, ?)", (name, utc_now()))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def schema_version(self) -> int:
        """The schema version of the index (``PRAGMA user_version``)."""
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """One statement and its rows; again while another process holds the index
        locked (beyond the busy timeout's own waiting, :func:`retry_locked`)."""
        return list(retry_locked(lambda: self._db.execute(sql, args).fetchall()))

    def _change(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        """One statement that changes rows, and how many it changed (retried as
        :meth:`_run`)."""
        return int(retry_locked(lambda: self._db.execute(sql, args).rowcount))

    def close(self) -> None:
        """Close the connection (the index's locks go with it)."""
        self._db.close()

