"""The embedded index: one SQLite database per data folder (``DIR/littlestone.db``).

WAL mode and a busy timeout let several processes (two ``play`` runs, two servers, a
server and a tournament) write at once; nothing to start or configure. Tables: ``games``
(one row per game, written when it starts and updated when it ends, with the final
chain digest of its log: its *anchor*), ``agents`` (the specs and content hashes of the
agents that played), ``tokens``, ``tournaments`` and ``secrets`` (the folder's key for
the anchors' HMACs, made on first use).

Nothing but this module opens the index: SQLite keeps its locks as POSIX locks, which a
process loses on closing *any* descriptor of the file, so a stray ``open()`` of it (say,
to read it as a log) lets another connection delete the WAL under the holder and lose
rows. :func:`is_index` tells the index's files by name and identity without opening
them; :func:`~littlestone.server.records.logs.read_log` refuses them.

>>> import tempfile, pathlib
>>> store = Store(pathlib.Path(tempfile.mkdtemp()))
>>> game_id = store.start_game({"game": "mistake-bound", "class": "thresholds:n=4",
...     "learner": "halving", "adversary": "random-target", "seed": 0, "horizon": 5},
...     log="x.lslog")
>>> store.finish_game(game_id, {"status": "complete", "rounds": 5, "mistakes": 1})
>>> [(g["learner"], g["status"], g["mistakes"]) for g in store.games()]
[('halving', 'complete', 1.0)]
>>> is_index(store.path), is_index(store.data / "x.lslog")
(True, False)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import os
import random
import secrets
import socket
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from littlestone.games.errors import LittlestoneError
from littlestone.server.records.folder import (
    DATA_VARIABLE,
    DEFAULT_DATA,
    INDEX_NAME,
    default_data,
    is_index,
    opened,
)
from littlestone.server.records.logs import read_log

__all__ = ["DATA_VARIABLE", "DEFAULT_DATA", "INDEX_NAME", "INTERRUPTED", "RESULT_COLUMNS",
           "TOKEN_ROLES", "Store", "StoreError", "TokenError", "anchor_hmac", "default_data",
           "is_index", "new_game_id", "process_owner", "utc_now"]

#: 2: ``games.chain_sha256`` and ``games.chain_hmac`` (the anchors), ``secrets``.
#: 3: ``tokens.role``, ``games.owner`` (the process that runs a game, for :meth:`Store.sweep`).
SCHEMA_VERSION = 3
BUSY_TIMEOUT_S = 30.0
#: The name of the folder's key for the anchors' HMACs in the ``secrets`` table.
ANCHOR_SECRET = "log-anchor"

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
    owner TEXT
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
    started TEXT NOT NULL
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
CREATE TABLE IF NOT EXISTS migrations (
    name TEXT PRIMARY KEY,
    applied TEXT NOT NULL
);
"""

#: The data migrations (rewrites of existing rows, not columns), each applied once to an
#: index, in one write transaction, and recorded in ``migrations``: name -> SQL.
_DATA_MIGRATIONS = {
    # logs were indexed by the path given at play time (relative to that working
    # directory, or absolute); a log always lies at DIR/games/GAME_ID.lslog, so its path
    # relative to the data folder is known: a data folder is then movable and copyable.
    "relative-log-paths": "UPDATE games SET log = 'games/' || game_id || '.lslog' "
                          "WHERE log != 'games/' || game_id || '.lslog' "
                          "AND log LIKE '%/games/' || game_id || '.lslog'",
}

#: The columns each schema version added to tables an older version made (``ALTER TABLE``
#: on open, for an index written by an older littlestone).
_ADDED_COLUMNS = {
    2: [("games", "chain_sha256", "TEXT"), ("games", "chain_hmac", "TEXT")],
    3: [("tokens", "role", "TEXT NOT NULL DEFAULT 'player'"), ("games", "owner", "TEXT")],
}

#: What a token lets its holder do (PROTOCOL.md 3.1): a ``player`` plays and watches its
#: own games, a ``spectator`` only watches, an ``admin`` may do anything, revoking
#: tokens over the network included.
TOKEN_ROLES = ("player", "spectator", "admin")
#: The status of a game whose process ended without finishing it (``kill -9``, a power
#: cut): set by :meth:`Store.sweep`; the log holds the game up to its last whole round.
INTERRUPTED = "interrupted"

#: The columns of a game's row that :meth:`Store.finish_game` fills from its result.
RESULT_COLUMNS = ("rounds", "status", "mistakes", "expected_mistakes", "regret",
                   "expected_regret", "bound", "bound_name")


class TokenError(ValueError):
    """A token that cannot be added as asked (a taken name, an unknown role)."""


def process_owner() -> str:
    """This process, as the ``owner`` of the games it runs: host, pid and the process's
    start time (a pid is reused; a pid with the same start time is the same process)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid())}"


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), or ``?``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "?"
    return stat.rsplit(")", 1)[1].split()[19]


def _owner_alive(owner: str | None) -> bool:
    """Whether the process that owns a running game still runs. A game of another host is
    taken as alive (its host sweeps it); one with no owner (an older index) as gone."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname():
        return True
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError):
        return True
    return started in ("?", _start_time(pid))


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_game_id() -> str:
    """A sortable, unique game id: UTC time to the microsecond and 6 random hex digits."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def anchor_hmac(secret: bytes, game_id: str, chain_sha256: str) -> str:
    """HMAC-SHA256 under a data folder's secret of a game id and its log's final chain
    digest (hexadecimal), as the index keeps it beside the digest.

    >>> anchor_hmac(bytes(32), "g1", "ab" * 32)[:16]
    '50db594e37bf2030'
    """
    message = f"littlestone log anchor\n{game_id}\n{chain_sha256}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _retry_locked(action: Callable[[], Any]) -> Any:
    """``action()``, again after a short random pause while the database is locked, for
    up to :data:`BUSY_TIMEOUT_S`."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.05))


class StoreError(LittlestoneError):
    """A data folder that cannot be used: not a folder, not writable, or an index that is
    not a littlestone index (the command line prints one line, exit status 2)."""


class Store:
    """The index of one data folder."""

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
        self._secret: bytes | None = None

    def _open(self) -> None:
        # callers that share a Store across threads serialise their calls (tournaments do)
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        # Switching to WAL takes an exclusive lock and SQLite does not wait for it (the busy
        # timeout does not apply): two processes opening a new index at once retry.
        _retry_locked(lambda: self._db.execute("PRAGMA journal_mode = WAL"))
        self._db.execute("PRAGMA synchronous = NORMAL")
        _retry_locked(lambda: self._db.executescript(_SCHEMA))  # idempotent: IF NOT EXISTS
        _retry_locked(self._migrate)
        for name, sql in _DATA_MIGRATIONS.items():
            _retry_locked(functools.partial(self._migrate_data, name, sql))

    def _migrate(self) -> None:
        """Bring an index written by an older littlestone to :data:`SCHEMA_VERSION` (its
        ``PRAGMA user_version``): add the columns it lacks, in one write transaction, so
        that two processes opening it at once migrate it once."""
        if self._version() >= SCHEMA_VERSION:
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            version = self._version()
            for added in range(version + 1, SCHEMA_VERSION + 1):
                for table, column, kind in _ADDED_COLUMNS.get(added, []):
                    info = self._db.execute(f"PRAGMA table_info({table})")
                    have = {row["name"] for row in info}
                    if column not in have:  # (a table made new has it already)
                        self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            if version < SCHEMA_VERSION:
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _migrate_data(self, name: str, sql: str) -> None:
        """Apply a data migration once (two processes at once: the second sees it done)."""
        done = "SELECT 1 FROM migrations WHERE name = ?"
        if self._db.execute(done, (name,)).fetchone():
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if not self._db.execute(done, (name,)).fetchone():
                self._db.execute(sql)
                self._db.execute("INSERT INTO migrations VALUES (?, ?)", (name, utc_now()))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """One statement and its rows; again while another process holds the index
        locked (beyond the busy timeout's own waiting, :func:`_retry_locked`)."""
        return list(_retry_locked(lambda: self._db.execute(sql, args).fetchall()))

    def close(self) -> None:
        self._db.close()

    def relative_log(self, log: str | Path) -> str:
        """How the index keeps a log's path: relative to the data folder when the log lies
        in it (so that the folder can be moved or copied), else absolute.

        >>> import tempfile
        >>> store = Store(Path(tempfile.mkdtemp()))
        >>> store.relative_log(store.data / "games" / "g.lslog")
        'games/g.lslog'
        >>> store.relative_log("/elsewhere/g.lslog")
        '/elsewhere/g.lslog'
        """
        path = Path(log)
        pairs = ((path, self.data), (Path(os.path.abspath(path)), Path(os.path.abspath(self.data))),
                 (path.resolve(), self.data.resolve()))
        for full, base in pairs:
            with contextlib.suppress(ValueError):
                return full.relative_to(base).as_posix()
        return str(Path(os.path.abspath(path)))

    def log_path(self, stored: str | None) -> str | None:
        """A log's path as the index keeps it, made usable from here: a relative one is
        taken relative to the data folder."""
        if stored is None or Path(stored).is_absolute():
            return stored
        return str(self.data / stored)

    def _row(self, row: sqlite3.Row) -> dict[str, Any]:
        out = dict(row)
        if "log" in out:
            out["log"] = self.log_path(out["log"])
        return out

    def start_game(self, info: dict[str, Any], log: str | None, game_id: str | None = None
                   ) -> str:
        """Index a game as it starts (status ``running``); returns its id. ``log`` is kept
        relative to the data folder (:meth:`relative_log`)."""
        game_id = game_id or new_game_id()
        log = None if log is None else self.relative_log(log)
        self._run(
            "INSERT INTO games (game_id, started, source, game, class, experts, learner, "
            "adversary, seed, horizon, status, log, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, 'running', ?, ?)",
            (game_id, utc_now(), info.get("source", "play"), info["game"], info.get("class"),
             info.get("experts"), info["learner"], info["adversary"], info.get("seed"),
             info.get("horizon"), log, process_owner()),
        )
        return game_id

    def add_agent(self, spec: str, sha256: str) -> None:
        """Remember an agent's spec and content hash."""
        self._run("INSERT OR IGNORE INTO agents VALUES (?, ?, ?)", (spec, sha256, utc_now()))

    def finish_game(self, game_id: str, result: dict[str, Any], chain: bytes | None = None
                    ) -> None:
        """Record a game's result and, with ``chain`` (its log's final chain digest, once
        the log is closed), the log's anchor: the digest and its HMAC under this folder's
        secret, which ``replay --verify`` checks the log against."""
        values = [result.get(k) for k in RESULT_COLUMNS]
        sets = ", ".join(f"{k} = ?" for k in RESULT_COLUMNS)
        digest = chain.hex() if chain is not None else None
        mac = anchor_hmac(self.secret(), game_id, digest) if digest is not None else None
        self._run(f"UPDATE games SET finished = ?, {sets}, chain_sha256 = ?, chain_hmac = ? "
                  "WHERE game_id = ?", (utc_now(), *values, digest, mac, game_id))

    def secret(self) -> bytes:
        """This data folder's key for the anchors' HMACs: 32 random bytes in the
        ``secrets`` table, made on first use."""
        secret = self._stored_secret()
        if secret is None:  # two processes at once: the first one's stays
            self._run("INSERT OR IGNORE INTO secrets VALUES (?, ?, ?)",
                      (ANCHOR_SECRET, secrets.token_bytes(32), utc_now()))
            secret = self._stored_secret()
            assert secret is not None
        return secret

    def _stored_secret(self) -> bytes | None:
        if self._secret is None:
            rows = self._run("SELECT value FROM secrets WHERE name = ?", (ANCHOR_SECRET,))
            self._secret = bytes(rows[0]["value"]) if rows else None
        return self._secret

    def chain_hmac(self, game_id: str, chain_sha256: str) -> str | None:
        """The HMAC an anchor of this folder has for this game and digest (None while the
        folder has no secret, so no anchor at all)."""
        secret = self._stored_secret()
        return None if secret is None else anchor_hmac(secret, game_id, chain_sha256)

    def games(self, limit: int = 50, **filters: str | None) -> list[dict[str, Any]]:
        """The most recent games, newest first; filters on learner, adversary, class, status
        (exact match, or a prefix when it ends with ``*``)."""
        where, args = [], []
        for column in ("learner", "adversary", "class", "status", "game"):
            value = filters.get(column)
            if value:
                if value.endswith("*"):
                    where.append(f"{column} LIKE ? ESCAPE '\\'")
                    args.append(value[:-1].replace("%", "\\%").replace("_", "\\_") + "%")
                else:
                    where.append(f"{column} = ?")
                    args.append(value)
        sql = "SELECT * FROM games"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY game_id DESC LIMIT ?"
        return [self._row(row) for row in self._run(sql, (*args, limit))]

    def add_token(self, name: str, role: str = "player", replace: bool = False) -> str:
        """A new token for ``name`` with ``role``: returned once, stored as its SHA-256
        only. A name that has a token already is refused (:class:`TokenError`) unless
        ``replace``, which voids the old token."""
        if role not in TOKEN_ROLES:
            raise TokenError(f"role {role!r}: one of {', '.join(TOKEN_ROLES)}")
        token = "ls_" + secrets.token_urlsafe(24)  # never starts with "-" (a CLI option)
        digest = hashlib.sha256(token.encode()).hexdigest()
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        added = _retry_locked(lambda: self._db.execute(
            f"{verb} INTO tokens (name, sha256, created, role) VALUES (?, ?, ?, ?)",
            (name, digest, utc_now(), role)).rowcount)
        if not added:
            raise TokenError(f"{name!r} has a token already: revoke it first, or add it "
                             "again with --replace (which voids the old one)")
        return token

    def tokens(self) -> list[dict[str, Any]]:
        """Every token's name, role and creation time (never the token, nor its hash)."""
        rows = self._run("SELECT name, role, created FROM tokens ORDER BY name")
        return [dict(row) for row in rows]

    def revoke_token(self, name: str) -> bool:
        """Void ``name``'s token; False if it has none."""
        return bool(_retry_locked(lambda: self._db.execute(
            "DELETE FROM tokens WHERE name = ?", (name,)).rowcount))

    def token_account(self, sha256: str) -> tuple[str, str] | None:
        """The name and role a token (given by its SHA-256) belongs to."""
        rows = self._run("SELECT name, role FROM tokens WHERE sha256 = ?", (sha256,))
        return (str(rows[0]["name"]), str(rows[0]["role"])) if rows else None

    def sweep(self) -> list[str]:
        """Mark ``interrupted`` every game left ``running`` by a process that is gone (a
        ``kill -9``, a crash, a power cut), with the rounds its log holds up to its last
        whole round; returns their ids. Games of live processes are left alone, so any
        process may sweep a folder that others are playing in."""
        swept = []
        for row in self._run("SELECT game_id, owner, log FROM games WHERE status = 'running'"):
            if _owner_alive(row["owner"]):
                continue
            self._run("UPDATE games SET status = ?, rounds = ?, finished = ? WHERE game_id = ? "
                      "AND status = 'running'", (INTERRUPTED, self._logged_rounds(row["log"]),
                                                 utc_now(), row["game_id"]))
            swept.append(str(row["game_id"]))
        return swept

    def _logged_rounds(self, log: str | None) -> int | None:
        """The whole rounds a log holds (None if it cannot be read)."""
        if not log:
            return None
        try:
            data = read_log(self.log_path(log) or log)
        except Exception:  # a missing or damaged log: the row says interrupted all the same
            return None
        return int(data.n_rounds)

    def start_tournament(self, name: str, config_sha256: str) -> None:
        """Record a tournament, and the identity (config and files) it now runs under:
        its games are keyed by what they depend on, so a changed config or file re-plays
        only the games it changes (:meth:`drop_tournament_games` forgets the others)."""
        self._run("INSERT INTO tournaments VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE "
                  "SET config_sha256 = excluded.config_sha256", (name, config_sha256, utc_now()))

    def drop_tournament_games(self, name: str, keys: list[str]) -> None:
        """Forget these pairings of a tournament (an entrant left, or its file changed);
        their games stay in the index and their logs in the folder."""
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            self._run(f"DELETE FROM tournament_games WHERE tournament = ? AND key IN "
                      f"({', '.join('?' * len(chunk))})", (name, *chunk))

    def tournament_keys(self, name: str) -> set[str]:
        """The pairings of a tournament already played."""
        rows = self._run("SELECT key FROM tournament_games WHERE tournament = ?", (name,))
        return {str(r["key"]) for r in rows}

    def add_tournament_game(self, name: str, key: str, row: dict[str, Any]) -> None:
        """A finished pairing (once: a second write of the same pairing is ignored)."""
        self._run(
            "INSERT OR IGNORE INTO tournament_games VALUES (?, ?, ?, ?, ?, ?)",
            (name, key, row.get("game_id"), row["status"], json.dumps(row, default=str),
             utc_now()))

    def tournament_games(self, name: str) -> list[dict[str, Any]]:
        """Every played pairing, with its log path."""
        out = []
        for r in self._run(
            "SELECT t.row, g.log FROM tournament_games t LEFT JOIN games g "
            "ON g.game_id = t.game_id WHERE t.tournament = ? ORDER BY t.key", (name,)
        ):
            row = json.loads(r["row"])
            row["log"] = self.log_path(r["log"])
            out.append(row)
        return out

    def game(self, game_id: str) -> dict[str, Any] | None:
        """One game's row."""
        rows = self._run("SELECT * FROM games WHERE game_id = ?", (game_id,))
        return self._row(rows[0]) if rows else None


    # -- for the web page (littlestone.server.web) ------------------------------------

    def tournaments(self) -> list[dict[str, Any]]:
        """Every tournament of this folder, newest first, with the games it recorded."""
        return [dict(r) for r in self._run(
            "SELECT t.name, t.started, COUNT(g.key) AS games FROM tournaments t LEFT JOIN "
            "tournament_games g ON g.tournament = t.name GROUP BY t.name "
            "ORDER BY t.started DESC, t.name")]

    def tournament_rows(self, game_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The tournament rows of these games, by game id (whom a tournament's game was
        between, by the names the tournament gave them: a submission's file and class,
        where the game's own row says ``remote:learner-<hash>``)."""
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(game_ids), 500):
            chunk = game_ids[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            for r in self._run(f"SELECT tournament, game_id, row FROM tournament_games "
                               f"WHERE game_id IN ({marks})", tuple(chunk)):
                out[str(r["game_id"])] = {**json.loads(r["row"]), "tournament": r["tournament"]}
        return out
