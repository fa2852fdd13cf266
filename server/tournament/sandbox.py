"""The sandbox a submitted agent runs in: a limited subprocess, killed with its children.

Sandbox in force for file agents: its own process session (killed, with any child it
forked, when its game ends or it overruns), RLIMIT_AS and RLIMIT_CPU from ``[limits]``,
an empty environment (no inherited secrets) and a fresh working directory. There is no
filesystem or network namespace (bubblewrap is not used: the agent must reach the
loopback server); :meth:`Sandbox.describe` says so in every report.

Imports nothing of ours but the limits.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from littlestone.server.tournament.config import Limits

__all__ = ["GRACE_SECONDS", "POLL_SECONDS", "Sandbox"]


#: How often a running agent's game is checked, and how long it may outlive its game.
POLL_SECONDS = 0.2
GRACE_SECONDS = 2.0


class Sandbox:
    """Runs a submitted agent as ``littlestone connect`` in a limited subprocess."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    @staticmethod
    def describe() -> str:
        return ("own process session (killed with its children at the end of its game), "
                "RLIMIT_AS and RLIMIT_CPU, empty environment, fresh working directory; "
                "no filesystem or network namespace")

    def _preexec(self) -> None:  # runs in the child, before exec
        memory = self.limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        cpu = int(self.limits.cpu_seconds)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def run(self, argv: list[str], timeout: float,
            game_over: Callable[[], bool] | None = None) -> tuple[int | None, str, str, bool]:
        """(exit status or None if killed, stdout tail, stderr tail, forked?).

        ``game_over`` is polled: once it says the agent's game has ended, the agent has
        :data:`GRACE_SECONDS` to exit before it is killed (a hung agent outlives its game)."""
        workdir = tempfile.mkdtemp(prefix="littlestone-agent-")
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
        # output goes to files, not pipes: a forked child holding a pipe open cannot
        # keep us waiting once the agent itself has exited
        with open(Path(workdir) / ".stdout", "w+b") as out_file, \
                open(Path(workdir) / ".stderr", "w+b") as err_file:
            proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out_file,
                                    stderr=err_file, start_new_session=True,
                                    preexec_fn=self._preexec)
            code: int | None = None
            started, over_at = time.monotonic(), None
            while time.monotonic() - started < timeout:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = proc.wait(timeout=POLL_SECONDS)
                    break
                if over_at is None and game_over is not None and game_over():
                    over_at = time.monotonic()
                if over_at is not None and time.monotonic() - over_at > GRACE_SECONDS:
                    break
            forked = _kill_session(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            out = _tail(out_file)
            err = _tail(err_file)
        shutil.rmtree(workdir, ignore_errors=True)
        return code, out, err, forked


def _tail(file: Any, size: int = 2000) -> str:
    file.seek(0, os.SEEK_END)
    file.seek(max(0, file.tell() - size))
    return str(file.read().decode("utf-8", "replace"))


def _kill_session(sid: int) -> bool:
    """Kill every process of session ``sid``; whether there were others than its leader."""
    others = False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            session = int(fields[3])  # pid comm state ppid pgrp session ...
        except (OSError, IndexError, ValueError):
            continue
        if session == sid and int(entry.name) != sid:
            others = True
    with contextlib.suppress(Exception):
        os.killpg(sid, signal.SIGKILL)
    return others
