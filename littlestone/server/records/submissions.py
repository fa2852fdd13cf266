"""The index's submissions: each version a token submitted to a competition, its file's
hash, size and place in the data folder, its check's verdict and where its rating is.

A version is numbered per competition and token from 1, in the order it came; its file
lies at ``competitions/NAME/ACCOUNT/vN.py`` in the data folder (the path kept here is
relative to it). ``verdict`` is ``checking`` while the check runs, then ``accepted`` or
``refused`` (with a ``reason`` code and the check's ``report``, JSON); an accepted
version's ``rating`` goes ``queued``, ``rating``, ``rated`` (or ``failed``), or from
``queued`` to ``superseded`` when the same token's newer version is accepted before a
rating lane took it (it is never rated). The lanes take the queued versions fairly
(:meth:`SubmissionTable.claim_next`): the next is the oldest-waiting *token's*, not the
oldest version. What a competition does with them is
:mod:`littlestone.server.tournament.competition`'s business.

>>> import tempfile, pathlib
>>> table = SubmissionTable(pathlib.Path(tempfile.mkdtemp()))
>>> first = table.add_submission("week-5", "ann", "ann.py:Learner", "ab" * 32, 120)
>>> first["version"], first["path"], first["verdict"]
(1, 'competitions/week-5/ann/v1.py', 'checking')
>>> table.set_verdict(first["id"], "accepted", "learner", None, {"checks": []})
>>> table.duplicate("week-5", "ann", "ab" * 32)["version"]
1
>>> table.next_queued("week-5")["id"] == first["id"]
True
>>> second = table.add_submission("week-5", "ann", "ann.py:Learner", "cd" * 32, 120)
>>> table.set_verdict(second["id"], "accepted", "learner", None, {"checks": []})
>>> table.submission(first["id"])["rating"], table.claim_next("week-5")["version"]
('superseded', 2)
>>> table.claim_next("week-5") is None  # (the lane took it: no other lane does)
True
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import cast

from littlestone.server.records.database import Database, retry_locked, utc_now
from littlestone.server.records.rows import SubmissionReport, SubmissionRow

__all__ = ["ERRORED", "INTERRUPTED", "VERDICTS", "SubmissionTable"]

#: A version's verdicts: its check runs, then it is entered or not.
VERDICTS = ("checking", "accepted", "refused")
#: The reason of a version whose check a stopped server never finished (it is not
#: taken for the same file submitted again).
INTERRUPTED = "interrupted"
#: The reasons of an *errored* version: it did not compile or load, or its check was
#: cut short by the server. As on Kaggle, errored versions do not count against
#: ``versions_per_day`` (a one-line fix is not a version's worth of the day).
ERRORED = ("syntax_error", "load_failed", INTERRUPTED)


class SubmissionTable(Database):
    """The statements on the ``submissions`` table of an index."""

    def add_submission(self, competition: str, account: str, agent: str, sha256: str,
                       size: int) -> SubmissionRow:
        """A new version of ``account``'s submission (its number the next one), in
        ``checking``; returns its row (the file is the caller's to write at its path)."""
        def insert() -> SubmissionRow:
            self._db.execute("BEGIN IMMEDIATE")
            with self._db:  # (one transaction: two versions never share a number)
                last = self._db.execute(
                    "SELECT MAX(version) FROM submissions WHERE competition = ? AND "
                    "account = ?", (competition, account)).fetchone()[0]
                version = int(last or 0) + 1
                path = f"competitions/{competition}/{folder_of(account)}/v{version}.py"
                cursor = self._db.execute(
                    "INSERT INTO submissions (competition, account, version, agent, sha256, "
                    "bytes, path, submitted, verdict) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                    "'checking')", (competition, account, version, agent, sha256, size,
                                    path, utc_now()))
                row = self._submission(int(cursor.lastrowid or 0))
                assert row is not None  # (inserted in this transaction)
                return row

        added: SubmissionRow = retry_locked(insert)
        return added

    def _submission(self, ident: int) -> SubmissionRow | None:
        rows = self._db.execute("SELECT * FROM submissions WHERE id = ?", (ident,)).fetchall()
        return _row(rows[0]) if rows else None

    def submission(self, ident: int) -> SubmissionRow | None:
        """One version by its id."""
        rows = self._run("SELECT * FROM submissions WHERE id = ?", (ident,))
        return _row(rows[0]) if rows else None

    def set_verdict(self, ident: int, verdict: str, role: str | None, reason: str | None,
                    report: SubmissionReport) -> None:
        """A version's check is over: ``accepted`` ones are queued for their rating, and
        the same token's older versions still queued are ``superseded``."""
        rating = "queued" if verdict == "accepted" else "none"

        def enter() -> None:
            self._db.execute("BEGIN IMMEDIATE")
            with self._db:
                self._db.execute(
                    "UPDATE submissions SET verdict = ?, role = ?, reason = ?, report = ?, "
                    "rating = ? WHERE id = ?", (verdict, role, reason,
                                                json.dumps(report, default=str), rating,
                                                ident))
                if verdict == "accepted":
                    self._db.execute(
                        "UPDATE submissions SET rating = 'superseded' WHERE rating = "
                        "'queued' AND id < ? AND (competition, account) = (SELECT "
                        "competition, account FROM submissions WHERE id = ?)", (ident, ident))

        retry_locked(enter)

    def set_rating(self, ident: int, rating: str) -> None:
        """Where a version's rating is: ``queued``, ``rating`` or ``rated``."""
        rated = utc_now() if rating == "rated" else None
        self._change("UPDATE submissions SET rating = ?, rated = ? WHERE id = ?",
                     (rating, rated, ident))

    def claim_next(self, competition: str) -> SubmissionRow | None:
        """The next version a rating lane rates, now ``rating`` (None: none waits). It is
        the oldest-waiting token's: each token waits from its first version queued since
        its last rating started (a newer version superseding it keeps its place), and
        the token that waited longest goes first; one claim per version, whatever the
        lanes asking at once."""
        def claim() -> SubmissionRow | None:
            self._db.execute("BEGIN IMMEDIATE")
            with self._db:
                rows = self._db.execute(
                    "SELECT s.id FROM submissions s WHERE s.competition = ? AND s.rating = "
                    "'queued' ORDER BY (SELECT MIN(w.submitted) FROM submissions w WHERE "
                    "w.competition = s.competition AND w.account = s.account AND w.rating "
                    "IN ('queued', 'superseded') AND w.submitted >= COALESCE((SELECT "
                    "MAX(r.rating_started) FROM submissions r WHERE r.competition = "
                    "s.competition AND r.account = s.account), '')), s.id LIMIT 1",
                    (competition,)).fetchall()
                if not rows:
                    return None
                self._db.execute("UPDATE submissions SET rating = 'rating', rating_started = "
                                 "? WHERE id = ?", (utc_now(), rows[0]["id"]))
                return self._submission(int(rows[0]["id"]))

        claimed: SubmissionRow | None = retry_locked(claim)
        return claimed

    def duplicate(self, competition: str, account: str, sha256: str,
                  agent: str | None = None, settings: str | None = None
                  ) -> SubmissionRow | None:
        """The version of ``account`` with these bytes already, if any (an interrupted
        check is not one: the file is checked again). With ``agent``, it also names the
        same class (``FILE.py:Class``: the same bytes naming another class are another
        version); with ``settings``, it was checked under the same competition settings
        (its report's ``settings``)."""
        rows = self._run("SELECT * FROM submissions WHERE competition = ? AND account = ? "
                         "AND sha256 = ? AND verdict != 'checking' AND "
                         "COALESCE(reason, '') != ? ORDER BY version",
                         (competition, account, sha256, INTERRUPTED))
        for row in map(_row, rows):
            if agent is not None and (row["agent"].partition(".py:")[2]
                                      != agent.partition(".py:")[2]):
                continue
            if settings is not None and row["report"].get("settings") != settings:
                continue
            return row
        return None

    def submitted_since(self, competition: str, account: str, hours: float,
                        now: datetime | None = None) -> int:
        """How many versions ``account`` submitted in the last ``hours``, not counting
        the errored ones (:data:`ERRORED`)."""
        since = ((now or datetime.now(UTC)) - timedelta(hours=hours)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")  # (as utc_now writes it)
        rows = self._run("SELECT COUNT(*) AS n FROM submissions WHERE competition = ? AND "
                         "account = ? AND submitted > ? AND NOT (verdict = 'refused' AND "
                         f"COALESCE(reason, '') IN ({', '.join('?' * len(ERRORED))}))",
                         (competition, account, since, *ERRORED))
        return int(rows[0]["n"])

    def submissions(self, competition: str, account: str | None = None
                    ) -> list[SubmissionRow]:
        """Every version of a competition (of one account), in the order they came."""
        if account is None:
            rows = self._run("SELECT * FROM submissions WHERE competition = ? ORDER BY id",
                             (competition,))
        else:
            rows = self._run("SELECT * FROM submissions WHERE competition = ? AND account = ? "
                             "ORDER BY id", (competition, account))
        return [_row(r) for r in rows]

    def next_queued(self, competition: str) -> SubmissionRow | None:
        """The oldest version waiting for its rating."""
        rows = self._run("SELECT * FROM submissions WHERE competition = ? AND rating IN "
                         "('queued', 'rating') ORDER BY id LIMIT 1", (competition,))
        return _row(rows[0]) if rows else None

    def resume_submissions(self, competition: str) -> int:
        """After a stop: a check that never ended is ``refused`` as interrupted (its file
        may be submitted again); a rating that never ended is queued again (its games
        stored stay, the rest are played). Returns the ratings queued again."""
        self._change("UPDATE submissions SET verdict = 'refused', reason = ?, report = ? "
                     "WHERE competition = ? AND verdict = 'checking'",
                     (INTERRUPTED, json.dumps({"message": "the server stopped during its "
                                               "check: submit it again"}), competition))
        return self._change("UPDATE submissions SET rating = 'queued' WHERE competition = ? "
                            "AND rating = 'rating'", (competition,))


def folder_of(account: str) -> str:
    """The folder of an account's versions: its name, when that is a plain one (letters,
    digits, ``-_.``, not starting with a dot), else a digest of it: no name reaches
    outside the competition's folder.

    >>> folder_of("ann"), folder_of(".."), folder_of("a/b")[:8]
    ('ann', 'account-5ec1f7e700f37c3d', 'account-')
    """
    if re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}", account):
        return account
    return "account-" + hashlib.sha256(account.encode()).hexdigest()[:16]


def _row(row: sqlite3.Row) -> SubmissionRow:
    """A row read back: its columns (``SELECT *``: those of :class:`.SubmissionRow`),
    its report parsed."""
    out = dict(row)
    out["report"] = json.loads(out.get("report") or "{}")
    return cast("SubmissionRow", out)
