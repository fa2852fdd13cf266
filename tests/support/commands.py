"""The command line as a user runs it, for the tests of what a hostile file, config or
argument can do: a subprocess of ``python -m littlestone``, and the one line a refusal
prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def cli(*args: str | Path, timeout: float = 60, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m littlestone ARGS`` as a user runs it (bytes: names need not be UTF-8)."""
    return subprocess.run([sys.executable, "-m", "littlestone", *map(os.fsencode, args)],
                          capture_output=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})


def one_line(run: subprocess.CompletedProcess[bytes], *statuses: int) -> str:
    """The one line a refusal prints on stderr, checked: a documented exit status, no
    traceback, no internal error, no control code for the terminal to obey."""
    err = run.stderr.decode(errors="replace")
    assert run.returncode in statuses, (run.returncode, err, run.stdout[-400:])
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert b"\x1b" not in run.stderr and b"\x1b" not in run.stdout
    return err.strip()


