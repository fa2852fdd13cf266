"""The rater of a competition: one worker that rates the accepted versions in the order
they came (:class:`Rater`), each in a ``littlestone competition rate`` process
(:func:`rate_version`), incremental: a game stored stays stored."""

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
from typing import Any

from littlestone.games.errors import LittlestoneError
from littlestone.sandbox.kernel import die_with_parent
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition.config import CompetitionConfig, version_spec
from littlestone.server.tournament.run import rate_entrant

__all__ = ["RATER_POLL_S", "Rater", "rate_version"]

log = logging.getLogger(__name__)

#: How often the rating worker looks for work when nothing woke it (seconds).
RATER_POLL_S = 1.0


class Rater:
    """The one rating worker: a thread that rates the accepted versions in the order
    they came, each in a ``littlestone competition rate`` process of its own session
    (killed, with its sandboxes, when the server stops). ``store`` gives the calling
    thread's connection to the index in ``data``; ``idle`` is called whenever nothing
    waits to be rated (the close's freeze)."""

    def __init__(self, config: CompetitionConfig, data: Path, unsafe: bool,
                 store: Callable[[], Store], idle: Callable[[], object]) -> None:
        self.config, self.data, self.unsafe = config, data, unsafe
        self.store, self.idle = store, idle
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
        store = self.store()
        while not self._stop.is_set():
            try:
                row = store.next_queued(self.config.name)
                if row is None:
                    self.idle()
                    self._wake.wait(RATER_POLL_S)
                    self._wake.clear()
                    continue
                self._rate(store, row)
            except Exception:
                log.exception("competition %s: the rating worker failed; it goes on",
                              self.config.name)
                self._stop.wait(RATER_POLL_S)

    def _rate(self, store: Store, row: dict[str, Any]) -> None:
        name = self.config.name
        store.set_rating(row["id"], "rating")
        folder = self.data / "competitions" / name
        folder.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "littlestone", "competition", "rate",
                str(self.config.path), "--data", str(self.data),
                "--version", str(row["id"])]
        if self.unsafe:
            argv.append("--unsafe-no-sandbox")
        log.info("competition %s: rating %s v%d of %s", name, row["agent"],
                 row["version"], row["account"])
        with open(folder / "rating.log", "ab") as out:
            self._process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=out, start_new_session=True,
                                             preexec_fn=functools.partial(
                                                 die_with_parent, os.getpid()))
            code = self._process.wait()
        self._process = None
        if self._stop.is_set():
            return  # (killed: rated again at the next start, its stored games kept)
        store.set_rating(row["id"], "rated" if code == 0 else "failed")
        if code != 0:
            log.warning("competition %s: the rating of v%d of %s failed (exit status %s; "
                        "see %s)", name, row["version"], row["account"], code,
                        folder / "rating.log")


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
