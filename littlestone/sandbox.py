"""The sandbox a submitted agent runs in: bubblewrap, resource limits, captured output.

A submission runs as ``python -m littlestone ...`` inside bubblewrap (``bwrap``), with:

- a mount namespace of its own holding only the system's ``/usr``, Python's installation,
  the virtual environment and the littlestone package (all read-only), the submission
  file alone at ``/submission/NAME.py`` (read-only: not its folder, not the others'), a
  private ``/tmp`` (a tmpfs of ``[limits] file_mb``), ``/dev`` and its own ``/proc``;
- a network namespace of its own, with nothing in it: the referee is reached through a
  Unix socket bound at :data:`SOCKET` (no TCP, no loopback service of the host);
- PID, IPC and UTS namespaces of its own: it sees and signals no process outside, and
  every process it starts dies with the sandbox (``--die-with-parent``: killing the
  sandbox kills them all, ``setsid`` or not);
- a user id of its own on the host (a tournament run as root drops to a fresh uid with
  ``setpriv``, no capabilities, no new privileges), so that ``RLIMIT_NPROC`` counts its
  processes only; ``RLIMIT_AS``, ``RLIMIT_CPU``, ``RLIMIT_NPROC``, ``RLIMIT_FSIZE``,
  ``RLIMIT_NOFILE`` from ``[limits]``, no core files;
- an empty environment but ``PATH``, ``HOME=/tmp``, ``LANG`` and one-thread BLAS;
- standard output and error read through pipes, of which the first ``[limits]
  output_kb`` are kept (a flood is drained and dropped, never stored);
- its credential on standard input, never on a command line.

Where bubblewrap cannot run (:meth:`Sandbox.unavailable` says why), submissions are
refused unless the operator passes ``--unsafe-no-sandbox``: then the agent runs as a
plain subprocess with the same limits, its own session, an empty environment and a
fresh working directory, but with the user's view of files and network, and every
report says so.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import os
import pwd
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import littlestone

__all__ = ["GRACE_SECONDS", "POLL_SECONDS", "SOCKET", "Limits", "Run", "Sandbox"]

#: How often a running agent's game is checked, and how long it may outlive its game.
POLL_SECONDS = 0.1
GRACE_SECONDS = 2.0
#: Where the referee's Unix socket is, inside the sandbox.
SOCKET = "/run/littlestone.sock"
#: Where the submission file is, inside the sandbox.
SUBMISSION_DIR = "/submission"
#: Host user ids the sandboxes of a root tournament run as (one per run).
UID_BASE = 200_000
_uids = itertools.count()


@dataclass(frozen=True)
class Limits:
    """Per-agent limits for submitted agents."""

    move_deadline: float = 5.0
    time_bank: float = 30.0
    memory_mb: int = 1024
    cpu_seconds: int = 120
    #: How long the tournament waits for a remote agent to enter.
    remote_wait: float = 120.0
    #: Threads a submission may run at once (RLIMIT_NPROC, which counts processes and
    #: threads; in a game, a second process ends it as the submission's fault); its memory
    #: (memory_mb) is watched over all of them together.
    processes: int = 16
    #: Files it may hold open (RLIMIT_NOFILE).
    open_files: int = 64
    #: Largest file it may write, and the size of its private /tmp, in MiB.
    file_mb: int = 64
    #: Output kept from each of its stdout and stderr, in KiB (the rest is dropped).
    output_kb: int = 64


@dataclass
class Run:
    """What a sandboxed run left: its exit status (None when it was killed: it overran
    its time or outlived its game), its output (capped), whether it started other
    processes, and whether its output was cut."""

    code: int | None
    out: str
    err: str
    forked: bool
    truncated: bool = False
    #: Whether it was killed for holding more than ``memory_mb`` over all its processes.
    over_memory: bool = False


@functools.cache
def _bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox here, or None (checked once, by running it)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    try:
        done = subprocess.run([bwrap, *_namespaces(), "--ro-bind", "/", "/", "--proc",
                               "/proc", "--dev", "/dev", "true"],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not run: {exc}"
    if done.returncode != 0:
        last = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        return f"bubblewrap does not run here: {last[0]}"
    return None


def _namespaces() -> list[str]:
    """bwrap's options for new namespaces (a user namespace only when not root: root
    keeps real uids, so that RLIMIT_NPROC applies to the sandbox's own uid)."""
    spaces = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
              "--unshare-cgroup-try"]
    return spaces if os.geteuid() == 0 else ["--unshare-user", *spaces]


class Sandbox:
    """Runs ``python -m littlestone ARGS`` for one submission, contained."""

    def __init__(self, limits: Limits, unsafe: bool = False) -> None:
        self.limits = limits
        self.unsafe = unsafe

    @staticmethod
    def unavailable() -> str | None:
        """Why submissions cannot be sandboxed on this machine, or None."""
        return _bwrap_problem()

    def describe(self) -> str:
        """What contains a submission, for reports."""
        if self.unsafe:
            return ("UNSAFE (--unsafe-no-sandbox): a plain subprocess with resource limits, "
                    "its own session, an empty environment and a fresh working directory, "
                    "but the user's files and network")
        return ("bubblewrap: read-only system, Python and package, only its own file, a "
                "private /tmp; no network (the referee on a Unix socket); own PID, IPC and "
                "UTS namespaces (nothing outlives it, no signal leaves it); own uid; "
                f"{self.limits.memory_mb} MiB over all its processes (RLIMIT_AS each, their "
                f"sum watched), RLIMIT_CPU {self.limits.cpu_seconds} "
                f"s, RLIMIT_NPROC {self.limits.processes}, RLIMIT_NOFILE "
                f"{self.limits.open_files}, RLIMIT_FSIZE {self.limits.file_mb} MiB; output "
                f"capped at {self.limits.output_kb} KiB; credential on stdin")

    def inside(self, submission: Path) -> str:
        """The submission's path as the sandboxed agent sees it."""
        return str(submission) if self.unsafe else f"{SUBMISSION_DIR}/{submission.name}"

    def socket(self, socket: Path) -> str:
        """The referee's socket as the sandboxed agent sees it."""
        return str(socket) if self.unsafe else SOCKET

    def run(self, submission: Path, args: list[str], timeout: float, stdin: bytes = b"",
            socket: Path | None = None, game_over: Callable[[], bool] | None = None,
            census: Callable[[Callable[[], bool]], None] | None = None,
            alone: bool = False) -> Run:
        """Run ``python -m littlestone *args`` with ``submission`` (and the referee's
        ``socket``) inside; kill it after ``timeout`` seconds, or :data:`GRACE_SECONDS`
        after ``game_over()`` first says its game has ended. ``census`` is handed, once
        the run has started, a function that says whether the run has started other
        processes (a tournament asks at the end of the game, while the agent still waits
        for ``done``: its children are alive then). With ``alone`` (a game), the run is
        killed the moment it has started another process: more processes would take the
        CPU from the opponent, whose moves the referee times on the wall clock; its game
        then ends as its fault."""
        uid = _free_uid()
        with tempfile.TemporaryDirectory(prefix="littlestone-agent-") as workdir:
            if self.unsafe:
                argv = [sys.executable, "-m", "littlestone", *args]
                cwd: str | None = workdir
            else:
                argv = [*self._bwrap(submission, socket, uid), sys.executable, "-m",
                        "littlestone", *args]
                cwd = None
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8",
                   "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
                   "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                   "MKL_NUM_THREADS": "1"}
            processes = self.limits.processes
            if os.geteuid() != 0 or self.unsafe:  # the limit counts all of the uid's
                processes += _processes_of(os.getuid())
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True,
                                    preexec_fn=functools.partial(self._limit, processes))
            cap = self.limits.output_kb << 10
            out, err = _Capture(proc.stdout, cap), _Capture(proc.stderr, cap)
            if census is not None:
                census(functools.partial(self._others, proc, uid))
            assert proc.stdin is not None
            with contextlib.suppress(OSError):
                proc.stdin.write(stdin)
                proc.stdin.close()
            code, forked, over_memory = self._wait(proc, uid, timeout, game_over, alone)
            out.join()
            err.join()
        return Run(code, out.text(), err.text(), forked, out.truncated or err.truncated,
                   over_memory)

    def _bwrap(self, submission: Path, socket: Path | None, uid: int) -> list[str]:
        """bwrap's command line (``setpriv`` drops to ``uid`` when run as root)."""
        reads = {Path(sys.base_prefix).resolve(), Path(sys.prefix)}
        reads |= {Path(folder).resolve() for folder in (*littlestone.__path__,
                                                         *_package_folders())}
        reads = {p for p in reads if p != Path("/usr") and Path("/usr") not in p.parents}
        argv = ["bwrap", *_namespaces(), "--die-with-parent", "--new-session",
                "--ro-bind", "/usr", "/usr"]
        for name in ("bin", "lib", "lib32", "lib64", "sbin"):
            target = Path("/") / name
            if target.is_symlink():
                argv += ["--symlink", os.readlink(target), str(target)]
            elif target.is_dir():
                argv += ["--ro-bind", str(target), str(target)]
        # the private /tmp first: what is bound below it (a checkout in /tmp) stays visible
        argv += ["--proc", "/proc", "--dev", "/dev",
                 "--perms", "1777", "--size", str(self.limits.file_mb << 20), "--tmpfs", "/tmp"]
        folders: set[str] = {"/tmp"}
        places = [*(str(p) for p in reads), f"{SUBMISSION_DIR}/x", SOCKET]
        for place in places:  # the folders above each bind, readable by the sandbox's uid
            parts = Path(place).parts[1:-1]
            for depth in range(1, len(parts) + 1):
                folder = "/" + "/".join(parts[:depth])
                if folder not in folders and folder != "/usr" and not folder.startswith("/usr/"):
                    folders.add(folder)
                    argv += ["--perms", "0755", "--dir", folder]
        for path in sorted(reads, key=lambda p: len(p.parts)):
            argv += ["--ro-bind", str(path), str(path)]
        argv += ["--ro-bind", str(submission.resolve()), self.inside(submission)]
        if socket is not None:
            argv += ["--bind", str(socket), SOCKET]
        argv += ["--chdir", "/tmp", "--setenv", "HOME", "/tmp", "--"]
        if os.geteuid() == 0:
            argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        return argv

    def _limit(self, processes: int) -> None:  # in the child, before exec
        limits = self.limits
        memory = limits.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        size = limits.file_mb << 20
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def _wait(self, proc: subprocess.Popen[bytes], uid: int, timeout: float,
              game_over: Callable[[], bool] | None, alone: bool = False
              ) -> tuple[int | None, bool, bool]:
        """Wait for the agent, watching the memory of all its processes together
        (RLIMIT_AS bounds each one only) and, ``alone``, that it has one; kill the
        sandbox and everything in it at the end. Returns (exit status, forked, killed
        for memory)."""
        code: int | None = None
        forked = over_memory = False
        started, over_at = time.monotonic(), None
        memory = self.limits.memory_mb << 20
        while time.monotonic() - started < timeout:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=POLL_SECONDS)
                break
            pids = self._pids(proc, uid)
            forked = forked or len(pids) > 1
            if forked and alone:
                break
            if sum(_memory_of(pid) for pid in pids) > memory:
                over_memory = True
                break
            if over_at is None and game_over is not None and game_over():
                over_at = time.monotonic()
            if over_at is not None and time.monotonic() - over_at > GRACE_SECONDS:
                break
        strays = self._pids(proc, uid)  # (without root: a session of its own, too)
        forked = forked or len(strays) > 1
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in strays if self.unsafe or os.geteuid() != 0 else []:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not self.unsafe and os.geteuid() == 0:
            for pid in _pids_of(uid, other_namespace=True):  # the namespace is gone already
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        return code, forked, over_memory

    def _pids(self, proc: subprocess.Popen[bytes], uid: int) -> list[int]:
        """The agent's processes (not bubblewrap's own): as root, those of its own uid;
        else every process started under ``proc`` (a session of its own does not hide
        one), but for bubblewrap's own two (``proc``, and its init in the namespace)."""
        if not self.unsafe and os.geteuid() == 0:
            return _pids_of(uid, other_namespace=True)
        return _descendants(proc.pid, bubblewrap=not self.unsafe)

    def _others(self, proc: subprocess.Popen[bytes], uid: int) -> bool:
        """Whether the agent has started processes of its own."""
        return len(self._pids(proc, uid)) > 1


def _free_uid() -> int:
    """A host uid for one sandboxed run that no process and no user account has: its
    processes are then told apart from every other process by their uid alone."""
    for _ in range(1000):
        uid = UID_BASE + (os.getpid() % 10_000) * 100 + next(_uids) % 100
        try:
            pwd.getpwuid(uid)
        except KeyError:
            if not _pids_of(uid):
                return uid
    raise OSError("no free uid for a sandbox")


def _memory_of(pid: int) -> int:
    """A process's proportional share of memory, in bytes (its resident size when the
    kernel does not say)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) << 10
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) << 10
    return 0


def _package_folders() -> list[str]:
    """The folders of littlestone's sub-packages (an editable install maps them from the
    repository's top-level folders), found without importing them."""
    folders: list[str] = []
    for name in ("games", "learners", "adversaries", "protocol", "server"):
        spec = importlib.util.find_spec(f"littlestone.{name}")
        if spec is not None and spec.submodule_search_locations:
            folders += list(spec.submodule_search_locations)
    return folders


def _proc_status(pid: str) -> dict[str, str]:
    with contextlib.suppress(OSError):
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        return dict(line.split(":", 1) for line in lines if ":" in line)
    return {}


def _pids_of(uid: int, other_namespace: bool = False) -> list[int]:
    """The processes whose real uid is ``uid`` (only those in another PID namespace than
    ours: a sandbox's)."""
    found = []
    ours = os.readlink("/proc/self/ns/pid") if other_namespace else None
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _proc_status(entry).get("Uid", "").split()
            if fields and int(fields[0]) == uid:
                if ours is not None:
                    try:
                        if os.readlink(f"/proc/{entry}/ns/pid") == ours:
                            continue
                    except OSError:
                        continue
                found.append(int(entry))
    return found


def _processes_of(uid: int) -> int:
    """How many processes (and threads: RLIMIT_NPROC counts them) ``uid`` runs now."""
    total = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            status = _proc_status(entry)
            fields = status.get("Uid", "").split()
            if fields and int(fields[0]) == uid:
                total += int(status.get("Threads", "1").strip() or 1)
    return total


def _descendants(root: int, bubblewrap: bool) -> list[int]:
    """``root`` and the processes started under it, whatever their session (an orphan is
    adopted by the namespace's init, still under ``root``); with ``bubblewrap``, not
    ``root`` (bubblewrap) nor its children named ``bwrap`` (its init in the namespace:
    the agent's own processes are further down)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                head, _, tail = Path(f"/proc/{entry}/stat").read_text().rpartition(")")
                ppid = int(tail.split()[1])  # pid (comm) state ppid ...
                children.setdefault(ppid, []).append((int(entry), head.partition("(")[2]))
    found, todo = [], [(root, "", 0)]
    while todo:
        pid, name, depth = todo.pop()
        if not bubblewrap or depth > 1 or (depth == 1 and name != "bwrap"):
            found.append(pid)
        todo += [(child, comm, depth + 1) for child, comm in children.get(pid, [])]
    return found


class _Capture:
    """Drains a pipe in a thread, keeping its first ``cap`` bytes."""

    def __init__(self, pipe: object, cap: int) -> None:
        self.pipe, self.cap = pipe, cap
        self.kept = bytearray()
        self.truncated = False
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        read = self.pipe.read1  # type: ignore[attr-defined]  # a BufferedReader
        with contextlib.suppress(OSError, ValueError):
            while chunk := read(65536):
                room = self.cap - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
                if len(chunk) > room:
                    self.truncated = True

    def join(self) -> None:
        self.thread.join(10)

    def text(self) -> str:
        return self.kept.decode("utf-8", "replace")
