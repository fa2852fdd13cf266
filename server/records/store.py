"""The embedded index: one SQLite database per data folder (``DIR/littlestone.db``).

WAL mode and a busy timeout let several processes (two ``play`` runs, a server and a
tournament) write at once; nothing to start or configure. Tables: ``games`` (one row per
game, written when it starts and updated when it ends) and ``agents`` (the specs and
content hashes of the agents that played).

>>> import tempfile, pathlib
>>> store = Store(pathlib.Path(tempfile.mkdtemp()))
>>> game_id = store.start_game({"game": "mistake-bound", "class": "thresholds:n=4",
...     "learner": "halving", "adversary": "random-target", "seed": 0, "horizon": 5},
...     log="x.lslog")
>>> store.finish_game(game_id, {"status": "complete", "rounds": 5, "mistakes": 1})
>>> [(g["learner"], g["status"], g["mistakes"]) for g in store.games()]
[('halving', 'complete', 1.0)]
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_DATA", "Store", "new_game_id", "utc_now"]

#: Where games are kept unless ``--data`` says otherwise.
DEFAULT_DATA = "littlestone-data"
SCHEMA_VERSION = 1
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
    log TEXT
);
CREATE INDEX IF NOT EXISTS games_learner ON games (learner);
CREATE INDEX IF NOT EXISTS games_adversary ON games (adversary);
CREATE INDEX IF NOT EXISTS games_class ON games (class);
CREATE INDEX IF NOT EXISTS games_status ON games (status);
CREATE TABLE IF NOT EXISTS tokens (
    name TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL
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
"""

_RESULT_COLUMNS = ("rounds", "status", "mistakes", "expected_mistakes", "regret",
                   "expected_regret", "bound", "bound_name")


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_game_id() -> str:
    """A sortable, unique game id: UTC time to the microsecond and 6 random hex digits."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


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


class Store:
    """The index of one data folder."""

    def __init__(self, data: Path) -> None:
        self.data = Path(data)
        self.data.mkdir(parents=True, exist_ok=True)
        self.path = self.data / "littlestone.db"
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
        _retry_locked(lambda: self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}"))

    def close(self) -> None:
        self._db.close()

    def start_game(self, info: dict[str, Any], log: str, game_id: str | None = None) -> str:
        """Index a game as it starts (status ``running``); returns its id."""
        game_id = game_id or new_game_id()
        self._db.execute(
            "INSERT INTO games (game_id, started, source, game, class, experts, learner, "
            "adversary, seed, horizon, status, log) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "'running', ?)",
            (game_id, utc_now(), info.get("source", "play"), info["game"], info.get("class"),
             info.get("experts"), info["learner"], info["adversary"], info.get("seed"),
             info.get("horizon"), log),
        )
        return game_id

    def add_agent(self, spec: str, sha256: str) -> None:
        """Remember an agent's spec and content hash."""
        self._db.execute("INSERT OR IGNORE INTO agents VALUES (?, ?, ?)", (spec, sha256, utc_now()))

    def finish_game(self, game_id: str, result: dict[str, Any]) -> None:
        """Record a game's result."""
        values = [result.get(k) for k in _RESULT_COLUMNS]
        sets = ", ".join(f"{k} = ?" for k in _RESULT_COLUMNS)
        self._db.execute(f"UPDATE games SET finished = ?, {sets} WHERE game_id = ?",
                         (utc_now(), *values, game_id))

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
        return [dict(row) for row in self._db.execute(sql, (*args, limit))]

    def add_token(self, name: str) -> str:
        """A new token for ``name`` (replacing any earlier one): returned once, stored as
        its SHA-256 only."""
        token = "ls_" + secrets.token_urlsafe(24)  # never starts with "-" (a CLI option)
        digest = hashlib.sha256(token.encode()).hexdigest()
        self._db.execute("INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)",
                         (name, digest, utc_now()))
        return token

    def token_account(self, sha256: str) -> str | None:
        """The name a token (given by its SHA-256) belongs to."""
        row = self._db.execute("SELECT name FROM tokens WHERE sha256 = ?", (sha256,)).fetchone()
        return None if row is None else str(row["name"])

    def start_tournament(self, name: str, config_sha256: str) -> None:
        """Record a tournament (once; a changed config under the same name is refused)."""
        row = self._db.execute("SELECT config_sha256 FROM tournaments WHERE name = ?",
                               (name,)).fetchone()
        if row is None:
            self._db.execute("INSERT OR IGNORE INTO tournaments VALUES (?, ?, ?)",
                             (name, config_sha256, utc_now()))
        elif row["config_sha256"] != config_sha256:
            from littlestone.games.errors import SpecError

            raise SpecError(f"tournament {name!r} already ran with another configuration "
                            "in this data folder: give it another name")

    def tournament_keys(self, name: str) -> set[str]:
        """The pairings of a tournament already played."""
        rows = self._db.execute("SELECT key FROM tournament_games WHERE tournament = ?", (name,))
        return {str(r["key"]) for r in rows}

    def add_tournament_game(self, name: str, key: str, row: dict[str, Any]) -> None:
        """A finished pairing (once: a second write of the same pairing is ignored)."""
        self._db.execute(
            "INSERT OR IGNORE INTO tournament_games VALUES (?, ?, ?, ?, ?, ?)",
            (name, key, row.get("game_id"), row["status"], json.dumps(row, default=str),
             utc_now()))

    def tournament_games(self, name: str) -> list[dict[str, Any]]:
        """Every played pairing, with its log path."""
        out = []
        for r in self._db.execute(
            "SELECT t.row, g.log FROM tournament_games t LEFT JOIN games g "
            "ON g.game_id = t.game_id WHERE t.tournament = ? ORDER BY t.key", (name,)
        ):
            row = json.loads(r["row"])
            row["log"] = r["log"]
            out.append(row)
        return out

    def game(self, game_id: str) -> dict[str, Any] | None:
        """One game's row."""
        row = self._db.execute("SELECT * FROM games WHERE game_id = ?", (game_id,)).fetchone()
        return dict(row) if row is not None else None
