"""A learner that tries to carry what it learnt in one game into the next, every way a
process can: a module global of another module, a class attribute of the package, a
file in its /tmp, the environment, an open descriptor, a System V shared memory segment
(``Leaky`` leaves all but the last, ``LeakyIpc`` that one alone). In its first move it
raises when a mark of an earlier game is there, and leaves its marks."""

import ctypes
import os
import random
import sys
from pathlib import Path

from littlestone.learners.halving import Halving

#: The System V key of its segment, and the descriptor it leaves open.
KEY = 0x1EA7
FD = 60


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def found():
    """The marks of an earlier game that are here."""
    seen = []
    if getattr(Halving, "leaky_mark", False):
        seen.append("class attribute")
    if getattr(sys, "leaky_mark", False):
        seen.append("module global")
    if (Path.cwd() / "leaky-mark").exists():
        seen.append("file in /tmp")
    if os.environ.get("LEAKY_MARK"):
        seen.append("environment")
    try:
        if os.readlink(f"/proc/self/fd/{FD}").startswith("pipe:"):
            seen.append("open descriptor")
    except OSError:
        pass
    if _libc().shmget(KEY, 0, 0) >= 0:
        seen.append("System V shared memory")
    return seen


def mark(ipc):
    if ipc:
        _libc().shmget(KEY, 4096, 0o1000 | 0o600)  # IPC_CREAT
        return
    Halving.leaky_mark = True
    sys.leaky_mark = True
    (Path.cwd() / "leaky-mark").write_text(str(random.random()))
    os.environ["LEAKY_MARK"] = "1"
    read, write = os.pipe()
    os.dup2(read, FD)
    os.close(read)
    os.write(write, b"leaky")
    sys.leaky_pipe = (FD, write)


class Leaky(Halving):
    """Halving, that leaves marks after its first move and raises if it finds one."""

    ipc = False

    def predict(self, x):
        if not getattr(self, "checked", False):
            self.checked = True
            seen = found()
            if seen:
                raise RuntimeError("leaked from an earlier game: " + ", ".join(seen))
            mark(self.ipc)
        return super().predict(x)


class LeakyIpc(Leaky):
    """The same with a System V shared memory segment."""

    ipc = True
