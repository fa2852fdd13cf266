"""A competition: students submit files over the network while it is open, each version
is checked at once and rated against the field as it comes, and at the close the
ranking is frozen.

``littlestone serve --competition FILE.toml`` runs one. Its file is a tournament file
(:func:`.config.load_config`: the rounds, seeds, games, classes, limits; ``learners``
and ``adversaries`` are the built-ins in the field) with a ``[competition]`` table::

    [competition]
    submitted = ["learner"]            # the roles students submit: learner, adversary
    opens = 2026-11-25T08:00:00Z       # (optional) TOML date-times, with their offset
    closes = 2026-12-02T08:00:00Z
    versions_per_day = 10              # a token's versions in any 24 hours
    max_kb = 64                        # a file's most KiB
    final = "last"                     # the ranking is on each student's last version,
                                       # or on its "best"
    version_disk_mb = 64               # the disk one version (file, logs) may take
    check_seconds = 30                 # its own checks' time in the sandbox

What a ``submit`` starts, and its budget (SECURITY.md, "A competition's submissions"):

1. at once, on the event loop: refused (PROTOCOL.md 4.2) when the competition is not
   open, the file is over ``max_kb``, the token's versions (this one too, at
   ``version_disk_mb`` each) would pass its disk budget (the server's ledger,
   ``--token-disk-mb``), the token has a check running, or :data:`CHECKS_WAITING`
   checks wait already;
2. in one of :data:`CHECKS_AT_ONCE` worker threads: a duplicate (the same bytes from the
   same token) is answered with its version, not checked nor rated again; over
   ``versions_per_day`` it is refused; else the file is stored
   (``competitions/NAME/ACCOUNT/vN.py``, its row in the index) and checked in the
   sandbox under the competition's limits (:func:`.preflight.check_file`: its own checks
   for ``check_seconds`` at most, then *plays a game* refereed here, each game under the
   limits' deadlines): a file that does not load, plays another role, or fails what a
   tournament scores is ``refused`` and not entered;
3. an accepted version waits in the index for the one rating worker (:class:`Rater`):
   a ``littlestone competition rate`` process, its own session, plays its games
   against the field (the built-ins and every version accepted before it:
   :func:`.run.rate_entrant`, incremental, each game stored as it ends under a key of the
   files' bytes), each game under the limits. Stopped, the process group is killed: its
   games in flight were never stored, those stored stay, and the next start rates the
   version again, playing only what is missing: no game lost or played twice.

The standings (:func:`standings`) rank each student's last rated version (or best) with
the built-ins; at the close, once nothing waits to be rated, they are frozen
(``competitions/NAME/final.json``) and exported as they are (:func:`export`).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import csv
import dataclasses
import hashlib
import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from littlestone.games.errors import LittlestoneError
from littlestone.protocol import build
from littlestone.protocol.errors import Code, ProtocolError
from littlestone.protocol.wire import Submit, Submitted
from littlestone.sandbox import Sandbox
from littlestone.server.net.disk import DiskLedger, Unavailable
from littlestone.server.net.peers import OverBudget
from littlestone.server.records.database import utc_now
from littlestone.server.records.store import Store
from littlestone.server.records.submissions import INTERRUPTED
from littlestone.server.tournament.config import (
    COMPETITION_TABLE,
    ConfigError,
    TournamentConfig,
    load_config,
)
from littlestone.server.tournament.preflight import ROLES, check_file, check_games
from littlestone.server.tournament.ranking import rank
from littlestone.server.tournament.run import rate_entrant

__all__ = ["CHECKS_AT_ONCE", "CHECKS_WAITING", "Competition", "CompetitionConfig",
           "export", "load_competition", "rate_version", "standings"]

log = logging.getLogger(__name__)

#: Checks that run at once (each a sandbox, then its check games), and checks that may
#: wait for one of them; past that, a submission is refused ``unavailable``.
CHECKS_AT_ONCE = 2
CHECKS_WAITING = 8
#: How often the rating worker looks for work when nothing woke it (seconds).
RATER_POLL_S = 1.0
#: The CSV export's columns (the JSON export has the same keys per row).
EXPORT_COLUMNS = ("role", "rank", "entrant", "version", "score", "median", "games",
                  "failed", "sha256")
_KNOWN = {"submitted", "opens", "closes", "versions_per_day", "max_kb", "final",
          "version_disk_mb", "check_seconds"}


@dataclass(frozen=True)
class CompetitionConfig:
    """A competition's file: its tournament (the field's built-ins, the games, the
    limits) and the ``[competition]`` table (the module's docstring)."""

    tournament: TournamentConfig
    path: Path
    submitted: tuple[str, ...] = ("learner",)
    opens: datetime | None = None
    closes: datetime | None = None
    versions_per_day: int = 10
    max_bytes: int = 64 << 10
    final: str = "last"
    version_disk_mb: int = 64
    check_seconds: float = 30.0

    @property
    def name(self) -> str:
        return self.tournament.name

    def state(self, now: datetime) -> str:
        """``open``, ``not_open`` (before ``opens``) or ``closed`` (from ``closes``)."""
        if self.opens is not None and now < self.opens:
            return "not_open"
        if self.closes is not None and now >= self.closes:
            return "closed"
        return "open"


def load_competition(path: str | Path) -> CompetitionConfig:
    """Read and check a competition's file (ConfigError naming the file and key)."""
    tournament = load_config(path, competition=True)
    raw = tomllib.loads(tournament.source).get(COMPETITION_TABLE)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a competition's file needs a [{COMPETITION_TABLE}] table")

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{path}: {COMPETITION_TABLE}.{key}: {message}")

    for key in raw:
        if key not in _KNOWN:
            raise fail(key, "unknown key")
    submitted = raw.get("submitted", ["learner"])
    if not isinstance(submitted, list) or not submitted or any(r not in ROLES
                                                               for r in submitted):
        raise fail("submitted", "a list of learner, adversary")
    times: dict[str, datetime | None] = {}
    for key in ("opens", "closes"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            raise fail(key, "a TOML date-time with its offset, e.g. 2026-12-02T08:00:00Z")
        times[key] = value
    if times["opens"] and times["closes"] and times["closes"] <= times["opens"]:
        raise fail("closes", "must come after opens")
    counts = {}
    for key, default in (("versions_per_day", 10), ("max_kb", 64), ("version_disk_mb", 64)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 1 << 20:
            raise fail(key, "a whole number from 1 to 2^20 - 1")
        counts[key] = value
    seconds = raw.get("check_seconds", 30)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not \
            0 < seconds <= 600:
        raise fail("check_seconds", "a number of seconds, above 0 and at most 600")
    final = raw.get("final", "last")
    if final not in ("last", "best"):
        raise fail("final", "last or best")
    return CompetitionConfig(tournament, Path(path).resolve(), tuple(submitted),
                             times["opens"], times["closes"], counts["versions_per_day"],
                             counts["max_kb"] << 10, final, counts["version_disk_mb"],
                             float(seconds))


def version_spec(data: Path, row: dict[str, Any]) -> str:
    """The entrant a version is in the competition's tournament: its stored file and
    its class (``/DATA/competitions/NAME/ann/v2.py:Learner``)."""
    return f"{(data / row['path']).resolve()}:{row['agent'].partition('.py:')[2]}"


# -- the door: submissions as they come --------------------------------------------------


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
        self.rater = Rater(self)

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

    async def submit(self, account: str, message: Submit, disk: DiskLedger
                     ) -> Submitted:
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
        disk.check([account], self.version_disk * (self._stored[account] + 1))
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
        same = store.duplicate(self.name, account, digest)
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
            verdict = check_file(f"{path.name}:{cls}", path, cls, self.sandbox, path.parent,
                                 self.config.check_seconds, roles,
                                 check_games(self.config.tournament))  # (its own classes)
        except Exception:  # the sandbox's own failure, not the file's: checked again
            log.exception("competition %s: the check of %s v%d of %s could not run",
                          self.name, agent, row["version"], account)
            store.set_verdict(row["id"], "refused", None, INTERRUPTED,
                              {"message": "the check could not run: submit it again"})
            raise Unavailable("the check could not run here; try again later") from None
        report = {"message": verdict.message, "checks": verdict.rows, "kind": verdict.kind,
                  "forked": verdict.forked}
        reason = verdict.refused
        if reason is None and verdict.kind not in roles:
            reason = "role_not_accepted"
            report["message"] = (f"{agent} is {'an' if verdict.kind == 'adversary' else 'a'} "
                                 f"{verdict.kind}: this competition takes "
                                 f"{' and '.join(r + 's' for r in roles)}")
        elif reason is None and not verdict.ready:
            reason = "check_failed"
            report["message"] = (f"{agent} fails what the competition scores: "
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

    def _answer(self, row: dict[str, Any], duplicate: bool) -> Submitted:
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
                               [{"check": c["check"], "ok": c["ok"], "message": c["message"]}
                                for c in report.get("checks", [])])

    # -- the close -------------------------------------------------------------------

    def final_path(self) -> Path:
        return self.data / "competitions" / self.name / "final.json"

    def freeze(self) -> bool:
        """At the close, once nothing waits for its check or rating: the standings
        frozen, once (True when they are)."""
        if self.final_path().exists():
            return True
        if self.config.state(self.now()) != "closed":
            return False
        store = self.store()
        if any(v["verdict"] == "checking" or v["rating"] in ("queued", "rating")
               for v in store.submissions(self.name)):
            return False
        final = standings(store, self.config, self.data)
        final.update(final=True, frozen=utc_now())
        self.final_path().parent.mkdir(parents=True, exist_ok=True)
        partial = self.final_path().with_suffix(".part")
        partial.write_text(json.dumps(final, default=str))
        partial.replace(self.final_path())
        log.info("competition %s: closed; the final ranking is frozen", self.name)
        return True


class Rater:
    """The one rating worker: a thread that rates the accepted versions in the order
    they came, each in a ``littlestone competition rate`` process of its own session
    (killed, with its sandboxes, when the server stops)."""

    def __init__(self, competition: Competition) -> None:
        self.competition = competition
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._run, name="littlestone-rater",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        competition = self.competition
        store = competition.store()
        while not self._stop.is_set():
            try:
                row = store.next_queued(competition.name)
                if row is None:
                    competition.freeze()
                    self._wake.wait(RATER_POLL_S)
                    self._wake.clear()
                    continue
                self._rate(store, row)
            except Exception:
                log.exception("competition %s: the rating worker failed; it goes on",
                              competition.name)
                self._stop.wait(RATER_POLL_S)

    def _rate(self, store: Store, row: dict[str, Any]) -> None:
        competition = self.competition
        store.set_rating(row["id"], "rating")
        folder = competition.data / "competitions" / competition.name
        folder.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "littlestone", "competition", "rate",
                str(competition.config.path), "--data", str(competition.data),
                "--version", str(row["id"])]
        if competition.unsafe:
            argv.append("--unsafe-no-sandbox")
        log.info("competition %s: rating %s v%d of %s", competition.name, row["agent"],
                 row["version"], row["account"])
        with open(folder / "rating.log", "ab") as out:
            self._process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=out, start_new_session=True,
                                             preexec_fn=_die_with_server)
            code = self._process.wait()
        self._process = None
        if self._stop.is_set():
            return  # (killed: rated again at the next start, its stored games kept)
        store.set_rating(row["id"], "rated" if code == 0 else "failed")
        if code != 0:
            log.warning("competition %s: the rating of v%d of %s failed (exit status %s; "
                        "see %s)", competition.name, row["version"], row["account"], code,
                        folder / "rating.log")


def _die_with_server() -> None:
    """(In the rating process, before it runs.) Killed when the server's rating thread
    dies, even by ``kill -9`` of the server: no orphan goes on rating beside the next
    start's (Linux's ``PR_SET_PDEATHSIG``; elsewhere, nothing)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def rate_version(config: CompetitionConfig, data: Path, ident: int, unsafe: bool = False,
                 workers: int = 1) -> int:
    """(``littlestone competition rate``.) Rate one accepted version: its games against
    the built-ins and every version accepted before it, those not stored yet
    (:func:`.run.rate_entrant`); each is stored as it ends. Returns the games stored."""
    data = Path(data).resolve()
    store = Store(data)
    row = store.submission(ident)
    if row is None or row["verdict"] != "accepted":
        raise LittlestoneError(f"competition {config.name}: no accepted version {ident}")
    before = [v for v in store.submissions(config.name)
              if v["verdict"] == "accepted" and v["id"] < ident and v["rating"] != "failed"]
    learners = list(config.tournament.learners)
    adversaries = list(config.tournament.adversaries)
    for version in before:
        (learners if version["role"] == "learner" else adversaries).append(
            version_spec(data, version))
    field = dataclasses.replace(config.tournament, learners=tuple(learners),
                                adversaries=tuple(adversaries))
    report = rate_entrant(field, data, version_spec(data, row), row["role"], workers,
                          progress=False, keep_going=True, unsafe=unsafe)
    store.set_rating(ident, "rated")
    return len(report.games)


# -- the standings -------------------------------------------------------------------


def standings(store: Store, config: CompetitionConfig, data: Path) -> dict[str, Any]:
    """The competition as it stands: the frozen final ranking once there is one; else
    each student's last rated version (or best, as the file says) ranked with the
    built-ins on the games between them, and every version with its verdict and its
    own scores (against every entrant it played)."""
    data = Path(data).resolve()
    final = data / "competitions" / config.name / "final.json"
    if final.exists():
        frozen: dict[str, Any] = json.loads(final.read_text())
        return frozen
    versions = store.submissions(config.name)
    rows = store.tournament_games(config.name)
    for row in rows:
        row.pop("log", None)
    everyone = rank(config.name, rows, [])
    of_spec = {version_spec(data, v): v for v in versions if v["verdict"] == "accepted"}
    scores: dict[str, dict[str, Any]] = {}
    for role, entries in (("learner", everyone.learners),
                          ("adversary", everyone.adversaries)):
        for entry in entries:
            scores[entry[role]] = entry
    games_of: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        for role in ("learner", "adversary"):
            if row[role] in of_spec:
                games_of.setdefault(row[role], []).append(row)
    chosen: dict[tuple[str, str], dict[str, Any]] = {}
    for spec, version in of_spec.items():
        if version["rating"] != "rated":
            continue
        key = (version["account"], version["role"])
        held = chosen.get(key)
        if held is None or _better(config.final, spec, version_spec(data, held), version,
                                   held, scores):
            chosen[key] = version
    entered = {version_spec(data, v) for v in chosen.values()}
    field = entered | set(config.tournament.learners) | set(config.tournament.adversaries)
    board = rank(config.name, [r for r in rows if r["learner"] in field
                               and r["adversary"] in field], [])
    by_spec = {version_spec(data, v): v for v in chosen.values()}
    ranking = []
    for role, entries in (("learner", board.learners), ("adversary", board.adversaries)):
        for entry in entries:
            held = by_spec.get(entry[role])
            ranking.append({
                "role": role, "rank": entry["rank"],
                "entrant": held["account"] if held else entry[role],
                "version": held["version"] if held else None,
                "score": _number(entry.get("worst" if role == "learner" else "forcing")),
                "median": _number(entry.get("median")),
                "games": entry["games"], "failed": entry["failed"],
                "sha256": held["sha256"] if held else None,
                "builtin": held is None})
    listed = []
    for version in versions:
        spec = version_spec(data, version)
        mine = games_of.get(spec, [])
        entry = scores.get(spec, {})
        listed.append({
            "id": version["id"], "account": version["account"], "version": version["version"],
            "agent": version["agent"], "sha256": version["sha256"], "bytes": version["bytes"],
            "submitted": version["submitted"], "verdict": version["verdict"],
            "reason": version["reason"], "role": version["role"], "rating": version["rating"],
            "score": _number(entry.get("worst" if version["role"] == "learner"
                                       else "forcing")),
            "games": len(mine), "failed": sum(g["status"] != "complete" for g in mine),
            "report": version["report"],
            "game_list": [{"game_id": g.get("game_id"), "status": g["status"],
                           "message": g.get("message", ""), "class": g.get("class"),
                           "learner": _named(g["learner"], of_spec),
                           "adversary": _named(g["adversary"], of_spec),
                           "mistakes": (g.get("result") or {}).get("mistakes")}
                          for g in mine]})
    return {"competition": config.name, "final": False, "frozen": None,
            "mode": config.final, "submitted": list(config.submitted),
            "opens": _when(config.opens), "closes": _when(config.closes),
            "games": len(rows), "ranking": ranking, "versions": listed}


def _better(final: str, spec: str, held_spec: str, version: dict[str, Any],
            held: dict[str, Any], scores: dict[str, dict[str, Any]]) -> bool:
    """Whether ``version`` replaces ``held`` as its student's entry: the later one
    (``last``), or the better ranked one (``best``; the later on a tie)."""
    if final == "last":
        return bool(version["id"] > held["id"])
    mine, theirs = scores.get(spec, {}).get("rank"), scores.get(held_spec, {}).get("rank")
    if mine is None:
        return False
    return theirs is None or mine < theirs or (mine == theirs and version["id"] > held["id"])


def _named(spec: str, of_spec: dict[str, dict[str, Any]]) -> str:
    """An entrant as the page names it: ``ann v2`` for a version, else its spec."""
    version = of_spec.get(spec)
    return spec if version is None else f"{version['account']} v{version['version']}"


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def export(board: dict[str, Any], form: str) -> str:
    """The ranking as CSV (:data:`EXPORT_COLUMNS`) or JSON (the same rows, and whether
    it is final).

    >>> board = {"competition": "w", "final": True, "frozen": "2026-12-02T08:00:00Z",
    ...          "ranking": [{"role": "learner", "rank": 1, "entrant": "ann", "version": 2,
    ...                       "score": 0.5, "median": 0.25, "games": 4, "failed": 0,
    ...                       "sha256": "ab", "builtin": False}]}
    >>> print(export(board, "csv").strip())
    role,rank,entrant,version,score,median,games,failed,sha256
    learner,1,ann,2,0.5,0.25,4,0,ab
    """
    rows = [{key: entry.get(key) for key in EXPORT_COLUMNS} for entry in board["ranking"]]
    if form == "json":
        return json.dumps({"competition": board["competition"], "final": board["final"],
                           "frozen": board.get("frozen"), "ranking": rows}, indent=1)
    out = io.StringIO()
    writer = csv.DictWriter(out, EXPORT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return out.getvalue()
