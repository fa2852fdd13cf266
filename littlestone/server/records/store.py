"""The index of a data folder: its games, the agents that played them, the tournaments
that paired them, and the key of the anchors (the tables are made and migrated by
:mod:`.database`; the tokens live in :mod:`.tokens`).

A game's row is written when it starts (status ``running``, with the process that runs
it: its ``owner``) and updated when it ends, with the final chain digest of its log and
that digest's HMAC under the folder's key (``secrets``, made on first use): the log's
*anchor* (:mod:`.anchors`). A process that dies mid-game leaves its rows ``running``:
:meth:`Store.sweep` marks them ``interrupted``.

>>> import tempfile, pathlib
>>> store = Store(pathlib.Path(tempfile.mkdtemp()))
>>> game_id = store.start_game({"game": "mistake-bound", "class": "thresholds:n=4",
...     "learner": "halving", "adversary": "random-target", "seed": 0, "horizon": 5},
...     log="x.lslog")
>>> store.finish_game(game_id, {"status": "complete", "rounds": 5, "mistakes": 1})
>>> [(g["learner"], g["status"], g["mistakes"]) for g in store.games()]
[('halving', 'complete', 1.0)]
>>> store.sweep()  # a game left running by a process that is gone: none here
[]
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import socket
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict, cast

from littlestone.server.records.database import Database, utc_now
from littlestone.server.records.folder import log_file
from littlestone.server.records.logs import read_log
from littlestone.server.records.rows import (
    GameRow,
    GameStart,
    ResultColumn,
    TournamentGame,
    TournamentRow,
)
from littlestone.server.records.scores import ScoreTable
from littlestone.server.records.submissions import SubmissionTable
from littlestone.server.records.tokens import TokenTable

__all__ = ["ANCHOR_SECRET", "INTERRUPTED", "RESULT_COLUMNS", "STORAGE_STATUS", "SampledField",
           "Store", "TournamentMatch", "anchor_hmac", "new_game_id", "process_owner"]

#: The name of the folder's key for the anchors' HMACs in the ``secrets`` table.
ANCHOR_SECRET = "log-anchor"
#: The status of a game whose process ended without finishing it (``kill -9``, a power
#: cut): set by :meth:`Store.sweep`; the log holds the game up to its last whole round.
INTERRUPTED = "interrupted"
#: The status of a game ended because its log could not be written (the disk full): its
#: row is finished without an anchor, its log holds the game up to its last whole frame.
STORAGE_STATUS = "aborted:storage"

#: The columns of a game's row that :meth:`Store.finish_game` fills from its result.
RESULT_COLUMNS: tuple[ResultColumn, ...] = (
    "rounds", "status", "mistakes", "expected_mistakes", "regret", "expected_regret", "bound",
    "bound_name")


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


def _usable(log: Path | None) -> str | None:
    """A log's path as a row the index gives back names it (:func:`.folder.log_file`)."""
    return None if log is None else str(log)


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


class Store(TokenTable, SubmissionTable, ScoreTable, Database):
    """The index of one data folder: its games, agents, tournaments and anchors' key, its
    tokens (:class:`~.tokens.TokenTable`), a competition's submitted versions
    (:class:`~.submissions.SubmissionTable`) and the tournaments' stored scores
    (:class:`~.scores.ScoreTable`: a pairing recorded or forgotten there)."""

    def __init__(self, data: Path) -> None:
        super().__init__(data)
        self._secret: bytes | None = None

    # -- games and their logs ----------------------------------------------------

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

    def _row(self, row: sqlite3.Row) -> GameRow:
        out = cast("GameRow", dict(row))  # (a row of SELECT * FROM games: its columns)
        if "log" in out:
            out["log"] = _usable(log_file(self.data, out["log"]))
        return out

    def start_game(self, info: GameStart, log: str | None, game_id: str | None = None
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

    def finish_game(self, game_id: str, result: Mapping[str, object], chain: bytes | None = None
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

    def charge_disk(self, game_id: str, accounts: list[str], size: int) -> None:
        """Charge the ``size`` bytes a game's log takes on disk to each of the accounts
        that played it (a server's per-token quota; once a game and account)."""
        for account in accounts:
            self._run("INSERT OR REPLACE INTO disk VALUES (?, ?, ?)", (account, game_id, size))

    def disk_by_account(self) -> dict[str, int]:
        """The bytes of logs charged to each account (:meth:`charge_disk`).

        >>> import tempfile
        >>> store = Store(Path(tempfile.mkdtemp()))
        >>> store.charge_disk("g1", ["ann", "bob"], 100); store.charge_disk("g2", ["ann"], 5)
        >>> store.disk_by_account()
        {'ann': 105, 'bob': 100}
        """
        return {str(r["account"]): int(r["total"]) for r in self._run(
            "SELECT account, SUM(bytes) AS total FROM disk GROUP BY account ORDER BY account")}

    def game(self, game_id: str) -> GameRow | None:
        """One game's row."""
        rows = self._run("SELECT * FROM games WHERE game_id = ?", (game_id,))
        return self._row(rows[0]) if rows else None

    def games(self, limit: int = 50, **filters: str | None) -> list[GameRow]:
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
            data = read_log(log_file(self.data, log) or log)
        except Exception:  # a missing or damaged log: the row says interrupted all the same
            return None
        return int(data.n_rounds)

    # -- the anchors' key --------------------------------------------------------

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

    # -- tournaments (littlestone.server.tournament; the page lists them) --------

    def start_tournament(self, name: str, config_sha256: str,
                         schedule: SampledField | None = None) -> None:
        """Record a tournament, and the identity (config and files) it now runs under:
        its games are keyed by what they depend on, so a changed config or file re-plays
        only the games it changes (:meth:`drop_tournament_games` forgets the others);
        and, for a sampled one, its field (``schedule``; None: a round robin), which its
        live page ranks by (:meth:`tournament_schedule`)."""
        field = None if schedule is None else json.dumps(schedule, sort_keys=True)
        self._run("INSERT INTO tournaments (name, config_sha256, started, schedule) VALUES "
                  "(?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET config_sha256 = "
                  "excluded.config_sha256, schedule = excluded.schedule",
                  (name, config_sha256, utc_now(), field))

    def tournament_schedule(self, name: str) -> SampledField | None:
        """A sampled tournament's field as it started (None: a round robin, or a
        tournament recorded before schema 5)."""
        rows = self._run("SELECT schedule FROM tournaments WHERE name = ?", (name,))
        if not rows or rows[0]["schedule"] is None:
            return None
        field: SampledField = json.loads(rows[0]["schedule"])
        return field

    def tournament_keys(self, name: str) -> set[str]:
        """The pairings of a tournament already played."""
        rows = self._run("SELECT key FROM tournament_games WHERE tournament = ?", (name,))
        return {str(r["key"]) for r in rows}

    def tournament_games(self, name: str) -> list[TournamentGame]:
        """Every played pairing, with its log path."""
        out = []
        for r in self._run(
            "SELECT t.row, g.log FROM tournament_games t LEFT JOIN games g "
            "ON g.game_id = t.game_id WHERE t.tournament = ? ORDER BY t.key", (name,)
        ):
            row: TournamentGame = json.loads(r["row"])
            row["log"] = _usable(log_file(self.data, r["log"]))
            out.append(row)
        return out

    def tournaments(self) -> list[TournamentRow]:
        """Every tournament of this folder, newest first, with the games it recorded."""
        return [cast("TournamentRow", dict(r)) for r in self._run(
            "SELECT t.name, t.started, COUNT(g.key) AS games FROM tournaments t LEFT JOIN "
            "tournament_games g ON g.tournament = t.name GROUP BY t.name "
            "ORDER BY t.started DESC, t.name")]

    def tournament_rows(self, game_ids: list[str]) -> dict[str, TournamentGame]:
        """The tournament rows of these games, by game id (whom a tournament's game was
        between, by the names the tournament gave them: a submission's file and class,
        where the game's own row says ``remote:learner-<hash>``)."""
        out: dict[str, TournamentGame] = {}
        for start in range(0, len(game_ids), 500):
            chunk = game_ids[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            for r in self._run(f"SELECT tournament, game_id, row FROM tournament_games "
                               f"WHERE game_id IN ({marks})", tuple(chunk)):
                row: TournamentGame = json.loads(r["row"])
                out[str(r["game_id"])] = {**row, "tournament": r["tournament"]}
        return out

    # -- a tournament's games filtered (the page's games table, web/filters.py) -----
    # Each filter is a WHERE on an index of schema 5 (database._ADDED_INDEXES), so that
    # one page reads the rows it shows and the index entries before them, not the field.

    def _distinct(self, name: str, column: str) -> list[str]:
        """The distinct values of an indexed column of a tournament's games, by a skip
        scan of its index: one seek a value, however many games hold each."""
        rows = self._run(
            f"WITH RECURSIVE v(x) AS (SELECT MIN({column}) FROM tournament_games WHERE "
            f"tournament = ?1 UNION ALL SELECT (SELECT MIN({column}) FROM tournament_games "
            f"WHERE tournament = ?1 AND {column} > v.x) FROM v WHERE v.x IS NOT NULL) "
            f"SELECT x FROM v WHERE x IS NOT NULL", (name,))
        return [str(r["x"]) for r in rows]

    def tournament_statuses(self, name: str) -> list[str]:
        """The statuses a tournament's games have, sorted."""
        return self._distinct(name, "status")

    def tournament_entrants(self, name: str) -> set[str]:
        """The specs that played a tournament's games, on either side."""
        return {*self._distinct(name, _TOURNAMENT_LEARNER),
                *self._distinct(name, _TOURNAMENT_ADVERSARY)}

    def filtered_tournament_games(self, name: str, match: TournamentMatch, offset: int,
                                  limit: int) -> list[TournamentGame]:
        """``limit`` of a tournament's games that ``match``, from the ``offset``-th (by
        key): each of its branches (:func:`_branches`) reads its index in key order up
        to ``offset + limit`` rows, and they are merged."""
        branches, args = _branches(match, "key, row", offset + limit)
        if not branches:
            return []
        return [json.loads(r["row"]) for r in self._run(
            f"{branches} ORDER BY key LIMIT ? OFFSET ?", (name, *args, limit, offset))]

    def count_tournament_games(self, name: str, match: TournamentMatch, cap: int) -> int:
        """How many of a tournament's games ``match``, counted up to ``cap`` (a count
        reads every matching index entry: past ``cap`` it stops, and says ``cap``)."""
        branches, args = _branches(match, "key", cap)
        if not branches:
            return 0
        return int(self._run(f"SELECT COUNT(*) AS n FROM ({branches} LIMIT ?)",
                             (name, *args, cap))[0]["n"])

class SampledField(TypedDict):
    """A sampled tournament's field as its run started it (:mod:`.tournament.schedule`),
    what :func:`.tournament.completion.rank_sampled` needs beside its games."""

    schedule: str
    games_per_version: int
    learners: list[str]
    adversaries: list[str]
    spaces: int
    seeds: int


#: The expressions of a tournament row's sides and class, as schema 5's indexes on
#: ``tournament_games`` name them (a query must spell them alike to use the index).
_TOURNAMENT_LEARNER = "json_extract(row, '$.learner')"
_TOURNAMENT_ADVERSARY = "json_extract(row, '$.adversary')"
_TOURNAMENT_CLASS = "json_extract(row, '$.class')"


class TournamentMatch(TypedDict, total=False):
    """What a filtered page of a tournament's games matches: games played by one of
    ``specs`` on either side, of one of ``statuses`` and of class ``hclass`` (each
    absent: any)."""

    specs: set[str]
    statuses: set[str]
    hclass: str


def _branches(match: TournamentMatch, columns: str, limit: int
              ) -> tuple[str, tuple[object, ...]]:
    """The UNION of one query a side and spec (an entrant), else a status, else the
    class, each an equality on its index so that it reads the index in key order and
    stops at ``limit`` rows (an ``IN`` or a range would read every game it matches, to
    sort them); the other filters are checked on the rows it reads. With the arguments
    after the tournament's name (``?1``); "" when nothing can match."""
    parts: list[str] = []
    args: list[object] = []

    def part(column: str, value: str, checks: list[tuple[str, list[str]]]) -> None:
        where = "".join(f" AND {c} IN ({', '.join('?' * len(v))})" for c, v in checks)
        parts.append(f"SELECT * FROM (SELECT {columns} FROM tournament_games WHERE "
                     f"tournament = ?1 AND {column} = ?{where} ORDER BY key LIMIT ?)")
        args.extend([value, *(x for _, v in checks for x in v), limit])

    statuses = sorted(match["statuses"]) if "statuses" in match else None
    hclass = [match["hclass"]] if match.get("hclass") else []
    if (statuses is not None and not statuses) or ("specs" in match and not match["specs"]):
        return "", ()
    checks = [("status", statuses)] if statuses is not None else []
    checks += [(_TOURNAMENT_CLASS, hclass)] if hclass else []
    if "specs" in match:
        for column in (_TOURNAMENT_LEARNER, _TOURNAMENT_ADVERSARY):
            for spec in sorted(match["specs"]):
                part(column, spec, checks)
    elif statuses is not None:
        for status in statuses:
            part("status", status, checks[1:])
    elif hclass:
        part(_TOURNAMENT_CLASS, hclass[0], [])
    else:
        parts.append(f"SELECT * FROM (SELECT {columns} FROM tournament_games WHERE "
                     f"tournament = ?1 ORDER BY key LIMIT ?)")
        args.append(limit)
    return " UNION ".join(parts), tuple(args)
