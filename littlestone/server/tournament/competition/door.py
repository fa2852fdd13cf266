"""The door of a competition: a ``submit`` admitted or refused at once, then checked
in the check lanes (:data:`CHECKS_AT_ONCE` worker threads, :data:`CHECKS_WAITING` more
waiting; one check per token at a time, so that two tokens' slow files hold two lanes
and no more), stored and entered (:class:`Competition`, the lobby's
:class:`~littlestone.server.net.lobby.Submissions`)."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import hashlib
import logging
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from littlestone.games.errors import LittlestoneError, OverBudget, ProtocolError, Unavailable
from littlestone.protocol import build
from littlestone.protocol.errors import Code
from littlestone.protocol.wire import Submit, Submitted
from littlestone.sandbox import Sandbox
from littlestone.server.net.disk import DiskLedger
from littlestone.server.records.rows import SubmissionReport, SubmissionRow
from littlestone.server.records.store import Store
from littlestone.server.records.submissions import INTERRUPTED
from littlestone.server.tournament.competition.config import CompetitionConfig
from littlestone.server.tournament.competition.rater import Rater
from littlestone.server.tournament.competition.standings import freeze
from littlestone.server.tournament.preflight import as_submitted, check_file, check_games

__all__ = ["CHECKS_AT_ONCE", "CHECKS_WAITING", "Competition"]

log = logging.getLogger(__name__)

#: Checks that run at once (each a sandbox, then its check games: mostly waiting on the
#: file's moves, so two a core and four at least), and checks that may wait for one of
#: them; past that, a submission is refused ``unavailable``. A token has one check at a
#: time: two tokens whose files are slow in their check games hold two lanes, and an
#: honest file takes another (each check within its wall budget, ``check_seconds`` for
#: its own checks and again for its check games).
CHECKS_AT_ONCE = max(4, 2 * (os.cpu_count() or 1))
CHECKS_WAITING = 8


class Competition:
    """A running competition: the lobby's door for ``submit``
    (:class:`littlestone.server.net.lobby.Submissions`), its checks and its rating
    worker. ``now`` is the clock its opening and closing times are read on."""

    def __init__(self, config: CompetitionConfig, data: Path, unsafe: bool = False,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.config, self.data, self.unsafe, self.now = config, Path(data).resolve(), unsafe, now
        self.name = config.name
        #: A submit frame holds the file and a few names (PROTOCOL.md 4.2).
        self.frame_max = config.max_bytes * 2 + 4096
        self.version_disk = config.version_disk_mb << 20
        problem = Sandbox.unavailable()
        if problem is not None and not unsafe:
            raise LittlestoneError(f"competition {self.name}: submissions run only in a "
                                   f"sandbox, and {problem}")
        self.sandbox = Sandbox(config.tournament.limits, unsafe=unsafe)
        self._local = threading.local()
        self._checks = concurrent.futures.ThreadPoolExecutor(
            CHECKS_AT_ONCE, thread_name_prefix="littlestone-check")
        self._waiting = 0
        self._checking: set[str] = set()
        store = self.store()
        #: Versions each token stored (their disk is held against its budget).
        self._stored = collections.Counter(v["account"] for v in store.submissions(self.name))
        requeued = store.resume_submissions(self.name)
        if requeued:
            log.info("competition %s: %d ratings stopped before their end are resumed",
                     self.name, requeued)
        self.rater = Rater(config, self.data, unsafe, self.store, self.freeze)

    def store(self) -> Store:
        """This thread's connection to the index."""
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store(self.data)
        return store

    def attach(self, server: Any) -> None:
        """Take ``server``'s submissions (its lobby's door; call before it starts) and
        start rating."""
        server.lobby.submissions = self
        self.rater.start()

    def close(self) -> None:
        """Stop the rating (its games in flight are lost, to be played again at the next
        start) and the checks waiting."""
        self.rater.stop()
        self._checks.shutdown(wait=False, cancel_futures=True)

    # -- submit (the lobby's) --------------------------------------------------------

    async def submit(self, account: str, message: Submit, disk: DiskLedger) -> Submitted:
        """A ``submit`` from ``account`` (PROTOCOL.md 4.2): refused at once, or checked in
        a worker thread; the ``submitted`` answer."""
        agent, source = message["agent"], message["source"]
        _, dot, cls = agent.partition(".py:")
        if not dot or not cls.isidentifier() or not agent.isprintable() or len(agent) > 200:
            raise ProtocolError(Code.BAD_MESSAGE, "submit.agent names the file and its "
                                "class: FILE.py:Class")
        state = self.config.state(self.now())
        if state != "open":
            when = self.config.opens if state == "not_open" else self.config.closes
            raise Unavailable(f"competition {self.name} is "
                              f"{'not open yet' if state == 'not_open' else 'closed'}"
                              f" ({'it opens' if state == 'not_open' else 'it closed'} "
                              f"at {when:%Y-%m-%d %H:%M %Z})")
        if len(source) > self.config.max_bytes:
            raise OverBudget("max_kb", f"over budget: the file is {len(source)} bytes, over "
                             f"the competition's max_kb ({self.config.max_bytes} bytes)")
        # every version of the token, this one too, against its disk budget (the ledger is
        # the lobby's: read on its loop)
        disk.check([account], self.version_disk * (self._stored[account] + 1), "version")
        if account in self._checking:
            raise OverBudget("checks_per_token", "over budget: a file of this token is being "
                             "checked; wait for its answer")
        if self._waiting >= CHECKS_AT_ONCE + CHECKS_WAITING:
            raise Unavailable(f"the checks are busy ({self._waiting} files); try again in a "
                              "minute")
        self._waiting += 1
        self._checking.add(account)
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._checks, self.enter, account, agent, bytes(source))
        finally:
            self._waiting -= 1
            self._checking.discard(account)

    def enter(self, account: str, agent: str, source: bytes) -> Submitted:
        """(A worker thread.) Store, check and enter one version; its answer."""
        store = self.store()
        digest = hashlib.sha256(source).hexdigest()
        # (a duplicate is the same bytes naming the same class, checked under the same
        # competition file: a changed field or limits checks the file again)
        settings = hashlib.sha256(self.config.tournament.source.encode()).hexdigest()
        same = store.duplicate(self.name, account, digest, agent, settings)
        if same is not None:
            return self._answer(same, duplicate=True)
        most = self.config.versions_per_day
        if store.submitted_since(self.name, account, 24) >= most:
            raise OverBudget("versions_per_day", f"over budget: {most} versions in 24 hours "
                             "already, the competition's versions_per_day; try again later")
        row = store.add_submission(self.name, account, agent, digest, len(source))
        self._stored[account] += 1
        path = self.data / row["path"]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(source)
        except OSError as exc:  # a full disk: nothing entered, the same bytes welcome again
            store.set_verdict(row["id"], "refused", None, INTERRUPTED,
                              {"message": f"the file could not be stored: {exc.strerror}"})
            raise Unavailable("the data folder cannot store the file now; try again "
                              "later") from None
        roles = self.config.submitted
        cls = agent.partition(".py:")[2]
        try:
            verdict = as_submitted(check_file(
                f"{path.name}:{cls}", path, cls, self.sandbox, path.parent,
                self.config.check_seconds, roles, check_games(self.config.tournament)),
                path, agent, row["version"], self.data)  # (its own classes; its own name)
        except Exception:  # the sandbox's own failure, not the file's: checked again
            log.exception("competition %s: the check of %s v%d of %s could not run",
                          self.name, agent, row["version"], account)
            store.set_verdict(row["id"], "refused", None, INTERRUPTED,
                              {"message": "the check could not run: submit it again"})
            raise Unavailable("the check could not run here; try again later") from None
        report: SubmissionReport = {
            "message": verdict.message, "checks": verdict.rows, "kind": verdict.kind,
            "forked": verdict.forked, "settings": settings}
        reason = verdict.refused
        if reason is None and verdict.kind not in roles:
            reason = "role_not_accepted"
            report["message"] = (f"{verdict.agent} is "
                                 f"{'an' if verdict.kind == 'adversary' else 'a'} "
                                 f"{verdict.kind}: this competition takes "
                                 f"{' and '.join(r + 's' for r in roles)}")
        elif reason is None and not verdict.ready:
            reason = "check_failed"
            report["message"] = (f"{verdict.agent} fails what the competition scores: "
                                 f"{', '.join(verdict.costly)}")
        store.set_verdict(row["id"], "refused" if reason else "accepted", verdict.kind,
                          reason, report)
        if reason is None:
            self.rater.wake()
        stored = store.submission(row["id"])
        assert stored is not None
        log.info("competition %s: %s v%d of %s %s%s", self.name, agent, row["version"],
                 account, "accepted" if reason is None else "refused: ", reason or "")
        return self._answer(stored, duplicate=False)

    def _answer(self, row: SubmissionRow, duplicate: bool) -> Submitted:
        report = row["report"]
        accepted = row["verdict"] == "accepted"
        message = str(report.get("message") or "")
        if accepted:
            message = (f"accepted as {'an' if row['role'] == 'adversary' else 'a'} "
                       f"{row['role']}: version {row['version']} "
                       + ("was submitted before: the same file is not rated again"
                          if duplicate else "plays its games against the field now"))
        return build.submitted(self.name, row["version"], row["sha256"], row["verdict"],
                               row["reason"], row["role"], duplicate, message,
                               [{"check": c["check"], "ok": c["ok"], "message": c["message"],
                                 "advice": bool(c.get("advice"))}
                                for c in report.get("checks", [])])

    # -- the close -------------------------------------------------------------------

    def freeze(self) -> bool:
        """At the close, once nothing waits for its check or rating: the standings
        frozen, once (True when they are; :func:`.standings.freeze`)."""
        return freeze(self.store(), self.config, self.data, self.now())
