"""The rating lanes of a competition (:class:`Rater`): several workers, each rating one
accepted version at a time (:func:`rate_version`) in a child of its warm process
(:mod:`.lane`, :class:`WarmLane`: started once, so that a version does not pay a
Python's start and its imports), incremental (a game stored stays stored), fair across tokens (the
next version rated is the oldest-waiting token's:
:meth:`~littlestone.server.records.submissions.SubmissionTable.claim_next`), each
version's rating within ``rating_seconds`` of wall time (past it, its games not played
yet are recorded as its own fault, ``over_time``): a slow version slows only itself."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from littlestone.games.errors import LittlestoneError
from littlestone.sandbox.host import LOAD_SECONDS as SANDBOX_START_S
from littlestone.sandbox.kernel import die_with_parent
from littlestone.server.net.hosts import HOST_ENVIRONMENT
from littlestone.server.records.rows import SubmissionRow
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition.config import (
    CompetitionConfig,
    default_raters,
    version_spec,
)
from littlestone.server.tournament.config import is_file_agent
from littlestone.server.tournament.field import TERMINATE_WAIT_S
from littlestone.server.tournament.run import rate_entrant

__all__ = ["OVERRUN_WAIT_S", "OVER_TIME", "RATER_POLL_S", "REAP_WAIT_S", "Rater", "WarmLane",
           "rate_version"]

log = logging.getLogger(__name__)

#: How often an idle rating lane looks for work when nothing woke it (seconds).
RATER_POLL_S = 1.0
#: The exit status of a rating stopped by a SIGTERM (queued again, not failed).
TERMINATED = 143
#: Seconds a stopping server gives the versions being rated to end their games in
#: flight (``interrupted``, with footers) before it kills them: a worker's own wait
#: (:data:`.field.TERMINATE_WAIT_S`) and a little more.
STOP_WAIT_S = TERMINATE_WAIT_S + 5.0
#: Seconds the second run of a rating past its ``rating_seconds`` (the one that records
#: its games left ``over_time``) may take: it loads the version again when its first
#: load never ended (a version asleep at its import). Past it the version's rating is
#: ``failed``, its fault, and the lane rates the next.
OVERRUN_WAIT_S = STOP_WAIT_S
#: Seconds a version's child that ended abnormally (killed from outside, or over its
#: time) is given for what it started to be gone before the games it left ``running``
#: are ended ``interrupted`` (:meth:`.store.Store.sweep`: only those whose process is
#: gone), so that no game stays ``running`` until the server's next start.
REAP_WAIT_S = 10.0
#: Seconds a version's rating may take to load its opponents beyond ``load_seconds``
#: and a sandbox's start each (:meth:`Rater._loading_seconds`): the rating's own start.
LOADING_SLACK_S = 30.0
#: The status :meth:`WarmLane.rate` gives when the lane itself ended mid-rating (not an
#: exit status: those are 0 to 255, or a signal's negative number).
LANE_ENDED = 256
#: The status of a rating whose lane could not start (its file changed or broken).
LANE_DOWN = 257
#: The status of a rating whose opponents' loads took over their budget
#: (:meth:`Rater._loading_seconds`): not the version's fault, but the server's (it
#: stalls), so it is treated as a kill from outside (queued again, once).
LOADS_OVER = 258
#: The message of a game recorded ``over_time``: its version's rating ran out of time.
OVER_TIME = ("the version's rating took longer than the competition's rating_seconds: "
             "its games not played by then count as its own fault")


class Rater:
    """The rating lanes: ``lanes`` threads (default: the competition's ``raters``, else
    :func:`.config.default_raters`), each rating one version at a time in a child of its
    warm ``littlestone competition rate --lane`` process (started with the lane), the
    child in a session of its own (killed, with its sandboxes, when its time is up or the
    server stops, however it stops). ``store`` gives the calling thread's connection to
    the index in ``data``; ``idle`` is called whenever a lane finds nothing to rate (the
    close's freeze)."""

    def __init__(self, config: CompetitionConfig, data: Path, unsafe: bool,
                 store: Callable[[], Store], idle: Callable[[], object],
                 lanes: int | None = None) -> None:
        self.config, self.data, self.unsafe = config, data, unsafe
        self.store, self.idle = store, idle
        self.lanes = lanes or config.raters or default_raters()
        self._wake = threading.Event()
        self._stop = threading.Event()
        #: Each lane's warm process (:mod:`.lane`), once it rated a version.
        self._lanes: dict[int, WarmLane] = {}
        #: The versions queued again once after their rating was killed from outside.
        self._retried: set[int] = set()
        #: The lanes that do not start because the competition's file changed (said once).
        self._down: set[int] = set()
        self._threads = [threading.Thread(target=self._run, args=(lane,), daemon=True,
                                          name=f"littlestone-rater-{lane}")
                         for lane in range(self.lanes)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Stop the lanes: each version being rated gets SIGTERM (its games in flight
        end ``interrupted``, with their footers) and :data:`STOP_WAIT_S` to end, then
        every lane is killed with what it started; the versions cut are rated again at
        the next start, their stored games kept."""
        self._stop.set()
        self._wake.set()
        lanes = list(self._lanes.values())
        for warm in lanes:
            warm.terminate_child()
        deadline = time.monotonic() + STOP_WAIT_S
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        for warm in lanes:
            warm.close()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout=30)

    def _run(self, lane: int) -> None:
        store = self.store()
        folder = self.data / "competitions" / self.config.name
        folder.mkdir(parents=True, exist_ok=True)
        self._warm(lane, folder)  # (warm before its first version comes)
        while not self._stop.is_set():
            try:
                row = store.claim_next(self.config.name)
                if row is None:
                    self.idle()
                    self._wake.wait(RATER_POLL_S)
                    self._wake.clear()
                    continue
                self._rate(store, row, lane)
            except Exception:
                log.exception("competition %s: rating lane %d failed; it goes on",
                              self.config.name, lane)
                self._stop.wait(RATER_POLL_S)

    def _rate(self, store: Store, row: SubmissionRow, lane: int) -> None:
        name = self.config.name
        folder = self.data / "competitions" / name
        folder.mkdir(parents=True, exist_ok=True)
        log.info("competition %s: lane %d rates %s v%d of %s", name, lane, row["agent"],
                 row["version"], row["account"])
        loading = self._loading_seconds(store, row)
        code = self._process(row["id"], False, folder, lane, self.config.rating_seconds,
                             loading)
        if code is None and not self._stop.is_set():  # over its time: the rest its fault
            log.warning("competition %s: the rating of v%d of %s took over %g s "
                        "(rating_seconds): its games left are recorded over_time", name,
                        row["version"], row["account"], self.config.rating_seconds)
            self._end_orphans(store, lane)
            code = self._process(row["id"], True, folder, lane, OVERRUN_WAIT_S, loading)
            if code is None:  # (its second run too: asleep at its import, say)
                log.warning("competition %s: v%d of %s did not record its games left "
                            "over_time within %g s: its rating failed", name,
                            row["version"], row["account"], OVERRUN_WAIT_S)
                code = 1
        if self._stop.is_set():
            return  # (killed: rated again at the next start, its stored games kept)
        if code == LANE_DOWN:  # (not its fault: it waits for a lane that can start)
            store.set_rating(row["id"], "queued")
            self._stop.wait(RATER_POLL_S)
            return
        if code != 0:
            self._end_orphans(store, lane)
        if code in (TERMINATED, -signal.SIGTERM):  # (stopped from outside, not its fault)
            log.warning("competition %s: the rating of v%d of %s was stopped by a "
                        "SIGTERM: it is queued again", name, row["version"], row["account"])
            store.set_rating(row["id"], "queued")
            return
        if (code in (LANE_ENDED, LOADS_OVER) or (code is not None and code < 0)) \
                and row["id"] not in self._retried:
            # (killed from outside, the lane or its child: a kill -9, the OOM killer; or
            # by the lane, its opponents' loads stalled: not the version's doing, whose
            # code runs in its sandbox: rated again, once)
            self._retried.add(row["id"])
            log.warning("competition %s: the rating of v%d of %s was cut short, not by "
                        "its doing (%s): it is queued again, once", name, row["version"],
                        row["account"], _why(code))
            store.set_rating(row["id"], "queued")
            return
        store.set_rating(row["id"], "rated" if code == 0 else "failed")
        if code != 0:
            log.warning("competition %s: the rating of v%d of %s failed (%s; see %s)", name,
                        row["version"], row["account"], _why(code), folder / "rating.log")

    def _end_orphans(self, store: Store, lane: int) -> None:
        """After a version's child ended abnormally: what it started killed and gone
        (its group; :data:`REAP_WAIT_S` at most), then the games it left ``running``
        ended ``interrupted``."""
        warm = self._lanes.get(lane)
        group = None if warm is None else warm.last_child
        deadline = time.monotonic() + REAP_WAIT_S
        while group is not None and not self._stop.is_set() and _group_alive(group) \
                and time.monotonic() < deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
            self._stop.wait(0.05)
        store.sweep()

    def _loading_seconds(self, store: Store, row: SubmissionRow) -> float:
        """The most the loads of a version's opponents may take in its rating, apart from
        its own ``rating_seconds`` (:meth:`WarmLane.rate`): ``load_seconds`` and a
        sandbox's start (:data:`~littlestone.sandbox.host.LOAD_SECONDS`) for each
        version it meets (and each file of the field's own), and :data:`LOADING_SLACK_S`.
        Each load is cut at its own ``load_seconds`` in its sandbox, and one that failed
        is not loaded again, so this is reached only when the server itself stalls."""
        field = self.config.tournament
        files = sum(is_file_agent(s) for s in (*field.learners, *field.adversaries))
        each = field.limits.load_seconds + SANDBOX_START_S
        return (len(opponents(store, self.config, row)) + files) * each + LOADING_SLACK_S

    def _process(self, ident: int, overrun: bool, folder: Path, lane: int,
                 seconds: float | None, loading: float | None = None) -> int | None:
        """Rate version ``ident`` in ``lane``'s warm process (started at its first
        version, and again when it ended); the rating's exit status, None when it took
        over ``seconds`` of its own (then it is killed, with everything it started),
        :data:`LOADS_OVER` when its opponents' loads took over ``loading`` (killed
        too), :data:`LANE_ENDED` when the lane ended meanwhile, :data:`LANE_DOWN` when
        it could not start."""
        warm = self._warm(lane, folder)
        return LANE_DOWN if warm is None else warm.rate(ident, overrun, seconds, loading)

    def _warm(self, lane: int, folder: Path) -> WarmLane | None:
        """``lane``'s warm process, started if it is not running (None: it could not
        start, or the rater stops). A lane reads the competition's file as it starts: it
        starts only while the file is what the server started with (an edit, a typo,
        would rate versions under other rules than the server's, or fail them all)."""
        warm = self._lanes.get(lane)
        if warm is not None and warm.process.poll() is None:
            return warm
        if warm is not None:
            warm.close()
        try:
            changed = self.config.path.read_bytes() != self.config.tournament.source.encode()
        except OSError:
            changed = True
        if changed:
            if lane in self._down:
                return None  # (said once)
            self._down.add(lane)
            log.error("competition %s: rating lane %d does not start: %s changed (or "
                      "went) since the server started; the versions wait, queued, until it "
                      "is put back as it was (or the server restarted)", self.config.name,
                      lane, self.config.path)
            return None
        argv = [sys.executable, "-m", "littlestone", "competition", "rate",
                str(self.config.path), "--data", str(self.data), "--lane"]
        if self.unsafe:
            argv.append("--unsafe-no-sandbox")
        self._down.discard(lane)
        try:
            warm = self._lanes[lane] = WarmLane(argv, folder / "rating.log")
        except (OSError, EOFError):
            log.exception("competition %s: rating lane %d could not start",
                          self.config.name, lane)
            return None
        if self._stop.is_set():  # (stopped while it started: stop() may have missed it)
            warm.close()
            return None
        return warm


class WarmLane:
    """The server's end of a warm rating lane (:mod:`.lane`): its process, started
    with ``argv`` in a session of its own, dying with the server however the server
    ends, its standard error appended to ``log``."""

    def __init__(self, argv: list[str], log_path: Path) -> None:
        with open(log_path, "ab") as out:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=out, bufsize=0,
                start_new_session=True, env={**os.environ, **HOST_ENVIRONMENT},
                preexec_fn=functools.partial(die_with_parent, os.getpid()))
        self._buffer = b""
        #: The version's child that runs now, if any (the leader of its own group).
        self.child: int | None = None
        #: The last version's child (its group: what it started).
        self.last_child: int | None = None
        self._line(None)  # ready

    def rate(self, ident: int, overrun: bool, seconds: float | None,
             loading: float | None = None) -> int | None:
        """Rate one version; its child's exit status (:data:`LANE_ENDED`: the lane
        itself ended), or None when it took over ``seconds`` (then its group is
        killed). The version's clock stops while its child loads its opponents (between
        its ``loading`` and ``loaded`` lines, :mod:`.lane`): their loads are their own
        time, within ``loading`` seconds in all (None: no limit), past which its group
        is killed too (:data:`LOADS_OVER`)."""
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(f"{ident} {int(overrun)}\n".encode())
            started = (self._line(None) or "").split()
            self.child = self.last_child = int(started[1])
            own, aside = seconds, loading  # (the time left of each)
            while True:
                since = time.monotonic()
                said = self._line(own)
                if said is None:  # over its time
                    self._cut()
                    return None
                own = None if own is None else own - (time.monotonic() - since)
                if said.startswith("loading "):  # (its opponents' loads: their time)
                    since = time.monotonic()
                    said = self._line(aside)
                    if said is None:  # (over theirs: the server stalls)
                        self._cut()
                        return LOADS_OVER
                    aside = None if aside is None else aside - (time.monotonic() - since)
                if said.startswith("ended "):
                    return int(said.split()[2])
        except (OSError, IndexError, ValueError, EOFError):  # (the lane ended)
            self.close()
            return LANE_ENDED
        finally:
            self.child = None

    def _cut(self) -> None:
        """The version's child is over its time: killed with its group, its end read."""
        self.kill_child()
        while not (self._line(None) or "").startswith("ended "):  # (its end)
            pass

    def _line(self, seconds: float | None) -> str | None:
        """The lane's next line, or None when none came within ``seconds`` (EOFError
        when the lane ended)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = None if seconds is None else time.monotonic() + seconds
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise EOFError("the rating lane ended")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def terminate_child(self) -> None:
        """Ask the version's child that runs now to stop (SIGTERM: its games in flight
        end ``interrupted``, with their footers; :data:`.field.TERMINATE_WAIT_S` at
        most)."""
        child = self.child
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGTERM)

    def kill_child(self) -> None:
        """Kill the version's child that runs now, with its whole group."""
        child = self.child
        if child is not None:
            try:
                os.killpg(child, signal.SIGKILL)
            except ProcessLookupError:  # (not its group's leader yet)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)

    def close(self) -> None:
        """Kill the lane, its version's child with it, and wait for it."""
        self.kill_child()
        _kill(self.process)


def _why(code: int | None) -> str:
    """A rating's end, as the log says it.

    >>> _why(1), _why(-9), _why(LANE_ENDED)
    ('exit status 1', 'killed by signal 9', 'its lane ended')
    """
    if code == LANE_ENDED:
        return "its lane ended"
    if code == LOADS_OVER:
        return "its opponents' loads took over their budget"
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exit status {code}"


def _group_alive(group: int) -> bool:
    """Whether a process of ``group`` is left (a zombie not reaped yet too: its games'
    rows still name it)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == group:
            return True
    return False


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill a rating process's group and wait for it (what it started dies with it)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        process.wait(30)


def rate_version(config: CompetitionConfig, data: Path, ident: int, unsafe: bool = False,
                 workers: int = 1, overrun: bool = False,
                 aside: Callable[[], AbstractContextManager[object]] | None = None) -> int:
    """(``littlestone competition rate``.) Rate one accepted version: its games against
    the built-ins and every version of the other role accepted before it (not
    superseded nor failed; the versions of its own role, which it never meets, are not
    in its field: loading them would only cost its rating time, a version asleep at its
    import ``load_seconds`` of every later rating), those not stored yet
    (:func:`.run.rate_entrant`, only this version's games: other lanes rate others at
    once); each is stored as it ends. ``overrun``: its rating ran
    out of time, and its games not stored yet are recorded ``over_time``, its fault,
    without being played. Its opponents are loaded first, inside ``aside()`` (a warm
    lane's child: its clock stops there, :mod:`.lane`), then the version itself; an
    opponent that fails to load (asleep at its import past ``load_seconds``, say) is
    remembered by its file's bytes and never loaded again by a later rating, its games
    ``load_failed``, its own fault (:func:`.run.run_tournament`'s
    ``remember_failed_loads``). Returns the games stored. A version whose stored file is gone
    (deleted from the data folder) is not rated: LittlestoneError (its rating
    ``failed``; its student's previous version stays on the board)."""
    data = Path(data).resolve()
    store = Store(data)
    row = store.submission(ident)
    # (an accepted version has its role: the check's)
    if row is None or row["verdict"] != "accepted" or row["role"] is None:
        raise LittlestoneError(f"competition {config.name}: no accepted version {ident}")
    if not (data / row["path"]).is_file():  # (the server lost it: not the student's fault,
        raise LittlestoneError(  # nor a version to rank last in place of its previous one)
            f"competition {config.name}: the file of v{row['version']} of {row['account']} "
            f"is gone from the data folder ({row['path']}): it cannot be rated")
    before = opponents(store, config, row)
    learners = list(config.tournament.learners)
    adversaries = list(config.tournament.adversaries)
    for version in before:
        (learners if version["role"] == "learner" else adversaries).append(
            version_spec(data, version))
    field = dataclasses.replace(config.tournament, learners=tuple(learners),
                                adversaries=tuple(adversaries))
    entrant = version_spec(data, row)
    report = rate_entrant(field, data, entrant, row["role"], workers, progress=False,
                          keep_going=True, unsafe=unsafe, only=entrant,
                          overrun=OVER_TIME if overrun else None, aside=aside,
                          remember_failed_loads=True)
    store.set_rating(ident, "rated")
    return len(report.games)


def opponents(store: Store, config: CompetitionConfig, row: SubmissionRow
              ) -> list[SubmissionRow]:
    """The versions a version's rating meets besides the built-ins: those of the other
    role accepted before it, not ``failed`` nor ``superseded``."""
    return [v for v in store.submissions(config.name)
            if v["verdict"] == "accepted" and v["id"] < row["id"]
            and v["role"] != row["role"] and v["rating"] not in ("failed", "superseded")]
