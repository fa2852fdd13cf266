"""The rating lanes of a competition (:class:`Rater`): several workers, each rating one
accepted version at a time in a ``littlestone competition rate`` process
(:func:`rate_version`), incremental (a game stored stays stored), fair across tokens (the
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
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from littlestone.games.errors import LittlestoneError
from littlestone.sandbox.kernel import die_with_parent
from littlestone.server.records.rows import SubmissionRow
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition.config import (
    CompetitionConfig,
    default_raters,
    version_spec,
)
from littlestone.server.tournament.run import rate_entrant

__all__ = ["OVER_TIME", "RATER_POLL_S", "Rater", "rate_version"]

log = logging.getLogger(__name__)

#: How often an idle rating lane looks for work when nothing woke it (seconds).
RATER_POLL_S = 1.0
#: The message of a game recorded ``over_time``: its version's rating ran out of time.
OVER_TIME = ("the version's rating took longer than the competition's rating_seconds: "
             "its games not played by then count as its own fault")


class Rater:
    """The rating lanes: ``lanes`` threads (default: the competition's ``raters``, else
    one a core and two at least), each rating one version at a time in a ``littlestone
    competition rate`` process of its own session (killed, with its sandboxes, when the
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
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self._threads = [threading.Thread(target=self._run, args=(lane,), daemon=True,
                                          name=f"littlestone-rater-{lane}")
                         for lane in range(self.lanes)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for process in list(self._processes.values()):
            _kill(process)
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout=30)

    def _run(self, lane: int) -> None:
        store = self.store()
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
        argv = [sys.executable, "-m", "littlestone", "competition", "rate",
                str(self.config.path), "--data", str(self.data),
                "--version", str(row["id"])]
        if self.unsafe:
            argv.append("--unsafe-no-sandbox")
        log.info("competition %s: lane %d rates %s v%d of %s", name, lane, row["agent"],
                 row["version"], row["account"])
        code = self._process(argv, folder, lane, self.config.rating_seconds)
        if code is None and not self._stop.is_set():  # over its time: the rest its fault
            log.warning("competition %s: the rating of v%d of %s took over %g s "
                        "(rating_seconds): its games left are recorded over_time", name,
                        row["version"], row["account"], self.config.rating_seconds)
            code = self._process([*argv, "--overrun"], folder, lane, None)
        if self._stop.is_set():
            return  # (killed: rated again at the next start, its stored games kept)
        store.set_rating(row["id"], "rated" if code == 0 else "failed")
        if code != 0:
            log.warning("competition %s: the rating of v%d of %s failed (exit status %s; "
                        "see %s)", name, row["version"], row["account"], code,
                        folder / "rating.log")

    def _process(self, argv: list[str], folder: Path, lane: int,
                 seconds: float | None) -> int | None:
        """Run a rating process in ``lane``; its exit status, or None when it took over
        ``seconds`` (then it is killed, with everything it started)."""
        with open(folder / "rating.log", "ab") as out:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=out, start_new_session=True,
                                       preexec_fn=functools.partial(die_with_parent,
                                                                    os.getpid()))
            self._processes[lane] = process
            try:
                return process.wait(seconds)
            except subprocess.TimeoutExpired:
                _kill(process)
                return None
            finally:
                del self._processes[lane]


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill a rating process's group and wait for it (what it started dies with it)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        process.wait(30)


def rate_version(config: CompetitionConfig, data: Path, ident: int, unsafe: bool = False,
                 workers: int = 1, overrun: bool = False) -> int:
    """(``littlestone competition rate``.) Rate one accepted version: its games against
    the built-ins and every version accepted before it (not superseded nor failed),
    those not stored yet (:func:`.run.rate_entrant`, only this version's games: other
    lanes rate others at once); each is stored as it ends. ``overrun``: its rating ran
    out of time, and its games not stored yet are recorded ``over_time``, its fault,
    without being played. Returns the games stored."""
    data = Path(data).resolve()
    store = Store(data)
    row = store.submission(ident)
    # (an accepted version has its role: the check's)
    if row is None or row["verdict"] != "accepted" or row["role"] is None:
        raise LittlestoneError(f"competition {config.name}: no accepted version {ident}")
    before = [v for v in store.submissions(config.name)
              if v["verdict"] == "accepted" and v["id"] < ident
              and v["rating"] not in ("failed", "superseded")]
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
                          overrun=OVER_TIME if overrun else None)
    store.set_rating(ident, "rated")
    return len(report.games)
