"""The sandbox a submitted agent runs in: bubblewrap, resource limits, captured output.

A submission runs as ``python -m littlestone ...`` inside bubblewrap (``bwrap``), with:

- a mount namespace of its own holding only the system's ``/usr``, Python's installation,
  the virtual environment and the littlestone package (all read-only), the submission
  file alone at ``/submission/NAME.py`` (read-only: not its folder, not the others'), a
  private ``/tmp`` (a tmpfs of ``[limits] file_mb``, whose files a loaded sandbox counts
  in its game's memory), a read-only ``/dev`` and its own ``/proc``;
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

A tournament loads each submission once (:class:`LoadedSandbox`): the sandbox starts a
*fork server* (``python -m littlestone zygote``, :func:`serve_forks`) that imports Python,
numpy and the package, and never the submission; each game (and the probe) is a fresh
child forked from it, which imports the submission and plays, so that every game starts
from the same state and nothing of one game reaches the next (module globals, class
attributes, random state and descriptors are the fork server's; the private ``/tmp`` is
emptied after each game, one game at a time per sandbox, and a sandbox whose game left
anything it cannot remove, such as System V IPC objects, is closed and loaded again).
The fork server watches its game's processes (a second one ends the game, as does their
memory over ``memory_mb``) and kills them all when the game is over; the game's process
gets ``cpu_seconds`` of its own and its own output pipes, capped at ``output_kb``. A game
that stops or kills its fork server only ends its own game: the sandbox is killed when
it stops answering, and loaded again for the next game. :class:`SandboxPool` keeps at
most a number of loaded sandboxes alive, the least recently used closed first.

Where bubblewrap cannot run (:meth:`Sandbox.unavailable` says why), submissions are
refused unless the operator passes ``--unsafe-no-sandbox``: then the agent runs as a
plain subprocess with the same limits, its own session, an empty environment and a
fresh working directory, but with the user's view of files and network, and every
report says so.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import errno
import functools
import gc
import itertools
import json
import os
import platform
import pwd
import queue
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import littlestone

__all__ = ["GRACE_SECONDS", "POLL_SECONDS", "SOCKET", "Limits", "LoadedSandbox", "Run",
           "Sandbox", "SandboxError", "SandboxPool", "serve_forks"]

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
#: How often a fork server looks at its game's processes (a second one, their memory).
WATCH_SECONDS = 0.05
#: How often a fork server says it is alive while its game runs, and how long the
#: tournament waits for a word from it before killing the sandbox (a game's process can
#: stop or kill its own fork server: that ends its own game only).
BEAT_SECONDS = 0.5
STALL_SECONDS = 5.0
#: What one file (or folder) in a sandbox's private /tmp costs the host's kernel (its
#: inode and name, some 0.6 KiB measured): counted in its game's memory with what the
#: files hold, as neither is any process's (a tmpfs holds millions of empty files).
SCRATCH_FILE_BYTES = 1024
#: How long a sandbox has to load (Python, numpy, the package) and say it is ready, and
#: to end when it is closed before it is killed.
LOAD_SECONDS = 60.0
CLOSE_SECONDS = 1.0
#: The fork server's own CPU seconds (each game's process has ``cpu_seconds`` of its own).
FORK_SERVER_CPU_SECONDS = 24 * 3600
#: Signals a fork server ignores (its games' processes get them back at their default).
_IGNORED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
            signal.SIGPIPE, signal.SIGALRM, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)


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
    #: How long it may take to load and say which games it plays (its import and the
    #: tournament's probe), in seconds: past it, it fails to load.
    load_seconds: float = 60.0


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
    #: Whether its sandbox stopped answering, or died, while it ran (its fork server
    #: stopped or killed by the game's own process): the sandbox was killed.
    stalled: bool = False
    #: Whether it was ended because its game was over (a loaded sandbox's game process
    #: is not waited for once its game has ended well, :meth:`LoadedSandbox.end`).
    ended: bool = False


class SandboxError(OSError):
    """A sandbox that could not be loaded (bubblewrap or Python failed to start)."""


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
            proc = self._start(submission, ["-m", "littlestone", *args], socket, uid, workdir)
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

    def load(self, submission: Path, socket: Path | None = None) -> LoadedSandbox:
        """``submission``'s sandbox with its fork server loaded, ready to run games (each
        in a fresh child, :meth:`LoadedSandbox.run`); raises SandboxError."""
        return LoadedSandbox(self, submission, socket)

    def _start(self, submission: Path, python: list[str], socket: Path | None, uid: int,
               workdir: str, cpu_seconds: int | None = None) -> subprocess.Popen[bytes]:
        """Start ``python *python`` in the sandbox (in ``workdir`` without one), with
        pipes for its standard streams."""
        if self.unsafe:
            argv = [sys.executable, *python]
            cwd: str | None = workdir
        else:
            argv = [*self._bwrap(submission, socket, uid), sys.executable, *python]
            cwd = None
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        processes = self.limits.processes
        if os.geteuid() != 0 or self.unsafe:  # the limit counts all of the uid's
            processes += _processes_of(os.getuid())
        keys = None if self.unsafe else uid
        try:
            return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True,
                                    preexec_fn=functools.partial(self._limit, processes,
                                                                 cpu_seconds, keys))
        except subprocess.SubprocessError:  # (raised in _limit, in the child)
            raise SandboxError("the sandbox could not start: its limits could not be set, "
                               f"or the keyrings of its uid {uid} could not be emptied"
                               ) from None

    def _bwrap(self, submission: Path, socket: Path | None, uid: int) -> list[str]:
        """bwrap's command line (``setpriv`` drops to ``uid`` when run as root)."""
        reads = {Path(sys.base_prefix).resolve(), Path(sys.prefix)}
        reads |= {Path(folder).resolve() for folder in littlestone.__path__}
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
        # bubblewrap's own folders (its root, /dev, the folders above each bind) are the
        # user's without root, and so the sandbox's: read-only, a game leaves nothing
        # there for the next (a wipe empties /tmp only), and fills no memory unbounded
        argv += ["--remount-ro", "/", "--remount-ro", "/dev"]
        argv += ["--chdir", "/tmp", "--setenv", "HOME", "/tmp", "--"]
        if os.geteuid() == 0:
            argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        return argv

    def _limit(self, processes: int, cpu_seconds: int | None = None,
               keys: int | None = None) -> None:  # in the child, before exec
        """The sandbox's limits. With ``keys``, the sandbox's uid, its keyrings first
        (the kernel's keyrings are not namespaced): a new, empty session keyring instead
        of the caller's; run as root, that uid's own keyrings emptied, as a sandbox
        before it with that uid may have left keys there."""
        if keys is not None:
            _join_new_session_keyring()
            if os.geteuid() == 0:
                os.setresuid(keys, keys, 0)  # (the saved uid stays root, to come back)
                emptied = _clear_keyrings()
                os.setresuid(0, 0, 0)
                if not emptied:
                    raise OSError(f"the keyrings of uid {keys} could not be emptied")
        limits = self.limits
        memory = limits.memory_mb << 20
        cpu = limits.cpu_seconds if cpu_seconds is None else cpu_seconds
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        size = limits.file_mb << 20
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # POSIX message queues live in the IPC namespace, beyond the reach of a wipe
        resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))

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
        self._kill(proc, uid, strays)
        return code, forked, over_memory

    def _kill(self, proc: subprocess.Popen[bytes], uid: int, strays: list[int]) -> None:
        """Kill the sandbox and everything in it (``strays``: its processes, as found)."""
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


class LoadedSandbox:
    """One submission's sandbox with its fork server loaded (:func:`serve_forks`): each
    :meth:`run` is a fresh child of the fork server, one at a time, with the limits and
    the answers of :meth:`Sandbox.run`. Raises SandboxError when it cannot load."""

    def __init__(self, sandbox: Sandbox, submission: Path, socket: Path | None = None) -> None:
        self.sandbox, self.submission = sandbox, submission
        self.uid = _free_uid()
        self._workdir = tempfile.TemporaryDirectory(prefix="littlestone-agent-")
        scratch = self._workdir.name if sandbox.unsafe else "/tmp"
        python = ["-m", "littlestone", "zygote", "--scratch", scratch]
        if not sandbox.unsafe:
            python.append("--namespace")
        self.proc = _spawn(functools.partial(sandbox._start, submission, python, socket,
                                             self.uid, self._workdir.name,
                                             FORK_SERVER_CPU_SECONDS))
        assert self.proc.stdin is not None
        self._control = self.proc.stdin
        self._err = _Capture(self.proc.stderr, sandbox.limits.output_kb << 10)
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._census: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        #: Whether it may run another game (it answers, and its last game left nothing).
        self.usable = True
        self.runs = 0
        #: The CPU seconds it had used when it was closed (:meth:`cpu_seconds`).
        self.spent = 0.0
        ready = self._reply(LOAD_SECONDS)
        if ready is None or not ready.get("ready"):
            self.close()
            self._err.join()
            last = [line for line in self._err.text().strip().splitlines() if line][-1:]
            raise SandboxError("its sandbox did not load: "
                               + (last[0][:300] if last else "no message"))

    def _read(self) -> None:  # the fork server's replies, one JSON object a line
        assert self.proc.stdout is not None
        with contextlib.suppress(OSError, ValueError):
            for line in self.proc.stdout:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(message, dict):
                    continue
                (self._census if "census" in message else self._replies).put(message)
        self._replies.put(None)
        self._census.put(None)

    def _reply(self, timeout: float) -> dict[str, Any] | None:
        with contextlib.suppress(queue.Empty):
            return self._replies.get(timeout=timeout)
        return {"silent": True}

    def _send(self, message: dict[str, Any]) -> bool:
        try:
            self._control.write(json.dumps(message).encode() + b"\n")
            self._control.flush()
        except (OSError, ValueError):
            return False
        return True

    @property
    def alive(self) -> bool:
        return self.usable and self.proc.poll() is None

    def run(self, args: list[str], timeout: float, stdin: bytes = b"",
            game_over: Callable[[], bool] | None = None,
            census: Callable[[Callable[[], bool]], None] | None = None,
            alone: bool = False) -> Run:
        """Run ``python -m littlestone *args`` (``connect`` or ``probe``) in a fresh child,
        as :meth:`Sandbox.run` does in a fresh sandbox."""
        limits = self.sandbox.limits
        if census is not None:
            census(self._forked_now)
        started = time.monotonic()
        self.runs += 1
        if not self._send({"op": "run", "argv": args, "stdin": stdin.decode(),
                           "alone": alone, "limits": {
                               "cpu_seconds": limits.cpu_seconds,
                               "memory_mb": limits.memory_mb,
                               "output_kb": limits.output_kb}}):
            return self._stalled()
        forked = over_memory = ended = False
        heard, over_at = time.monotonic(), None
        while time.monotonic() - started < timeout:
            message = self._reply(POLL_SECONDS)
            if message is None:  # the fork server is gone (killed by its game's process)
                return self._stalled()
            if "silent" not in message and "end" not in message:
                heard = time.monotonic()
            if "exited" in message:  # (its status comes with "finished")
                break
            if "killed" in message:
                forked, over_memory = message["killed"] == "forked", message["killed"] == "memory"
                break
            if "end" in message:  # its game ended well: what it does after is not needed
                if message["end"] != self.runs:
                    continue  # (said of a game before, once its process had exited)
                ended = True
                break
            if time.monotonic() - heard > STALL_SECONDS:
                return self._stalled()
            if over_at is None and game_over is not None and game_over():
                over_at = time.monotonic()
            if over_at is not None and time.monotonic() - over_at > GRACE_SECONDS:
                break
        if not self._send({"op": "finish"}):
            return self._stalled(forked, over_memory)
        deadline = time.monotonic() + STALL_SECONDS
        said: dict[str, Any] | None = None  # its game's output, said before the wipe
        wiped = False
        while time.monotonic() < deadline and not wiped:
            message = self._reply(POLL_SECONDS)
            if message is None:
                break
            if "output" in message:
                said = message["output"]
            if "finished" in message:
                said, wiped = message["finished"], True
                if not said.get("clean"):
                    self.usable = False  # its game left what a wipe cannot remove
        if said is None:
            # (what it was killed for still holds: a wipe of a million files outlasts
            # the wait)
            return self._stalled(forked, over_memory)
        if not wiped:
            # its game was over and its fork server said how; only the wipe of what it
            # left (a million files on a busy host) outlasted the wait: the sandbox goes,
            # and the run is what was said of it, not "stalled"
            self.close()
            self._err.join()
        return Run(said["code"], str(said["out"]), str(said["err"]),
                   forked or bool(said["forked"]),
                   bool(said["truncated"]), over_memory or bool(said["over_memory"]),
                   ended=ended and said["code"] is None)

    def end(self) -> None:
        """The running game has ended well: :meth:`run` ends its process at once rather
        than wait for it to exit (or :data:`GRACE_SECONDS` after the game). Said after
        its run has returned, it is not heard by the next."""
        self._replies.put({"end": self.runs})

    def _forked_now(self) -> bool:
        """Whether the running game has another process now, as the fork server says
        (one that does not answer says nothing here: its run ends ``stalled``)."""
        if not self._send({"op": "census"}):
            return False
        with contextlib.suppress(queue.Empty):
            answer = self._census.get(timeout=STALL_SECONDS)
            return answer is not None and bool(answer["census"])
        return False

    def _stalled(self, forked: bool = False, over_memory: bool = False) -> Run:
        """The fork server stopped answering or died: kill the sandbox (``forked``,
        ``over_memory``: what it had said its game was killed for)."""
        self.close()
        self._err.join()
        return Run(None, "", self._err.text(), forked, over_memory=over_memory, stalled=True)

    def cpu_seconds(self) -> float:
        """The CPU time its processes have used so far, their finished children (every
        game's) included."""
        total = 0
        for pid in self.sandbox._pids(self.proc, self.uid):
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
                total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
        return total / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        """Let the fork server end (it does at the end of its commands, its game's
        processes killed), then kill the sandbox and whatever is left in it."""
        if self.usable:
            self.spent = self.cpu_seconds()
        self.usable = False
        with contextlib.suppress(OSError, ValueError):
            self._control.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(CLOSE_SECONDS)
        self.sandbox._kill(self.proc, self.uid, self.sandbox._pids(self.proc, self.uid))
        self._workdir.cleanup()


_spawner: list[concurrent.futures.ThreadPoolExecutor] = []
_spawner_lock = threading.Lock()


def _spawn(start: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """Start a loaded sandbox from one thread that lives as long as this process:
    bubblewrap's ``--die-with-parent`` (PR_SET_PDEATHSIG) kills a sandbox when the
    *thread* that started it ends, and a loaded sandbox outlives the thread that asked
    for it (a tournament's game threads come and go)."""
    with _spawner_lock:
        if not _spawner:
            _spawner.append(concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="littlestone-sandboxes"))
    return _spawner[0].submit(start).result()


class SandboxPool:
    """Loaded sandboxes (:class:`LoadedSandbox`) by entrant, at most ``capacity`` alive:
    loading another closes the least recently used idle one. Each runs one game at a
    time (:meth:`lease` waits while it is busy); one that died or whose game left
    anything behind is loaded again at its next lease. ``loads`` counts the loads,
    :meth:`cpu_seconds` the CPU time of every sandbox it loaded."""

    def __init__(self, sandbox: Sandbox, socket: Path | None, capacity: int) -> None:
        self.sandbox, self.socket, self.capacity = sandbox, socket, max(1, capacity)
        self._alive: OrderedDict[str, LoadedSandbox] = OrderedDict()
        self._busy: set[str] = set()
        self._changed = threading.Condition()
        self.loads = 0
        self._closed_cpu = 0.0

    def cpu_seconds(self) -> float:
        """The CPU time of the sandboxes it loaded, their games included (those alive
        now, as far as they are)."""
        with self._changed:
            alive = list(self._alive.values())
            closed = self._closed_cpu
        return closed + sum(loaded.cpu_seconds() for loaded in alive)

    def _retire(self, loaded: LoadedSandbox) -> None:
        loaded.close()
        with self._changed:
            self._closed_cpu += loaded.spent

    @contextlib.contextmanager
    def lease(self, key: str, submission: Path) -> Iterator[LoadedSandbox]:
        """The loaded sandbox of entrant ``key`` (``submission``'s), for one run; raises
        SandboxError when it cannot be loaded."""
        with self._changed:
            while key in self._busy:
                self._changed.wait()
            self._busy.add(key)
            loaded = self._alive.pop(key, None)
            if loaded is not None and not loaded.alive:
                loaded.close()
                self._closed_cpu += loaded.spent
                loaded = None
            retired = []
            if loaded is None:  # one more to load: beyond the capacity, the oldest idle go
                # (those in use count too: each is one loaded sandbox)
                over = len(self._alive) + len(self._busy) - self.capacity
                retired = [self._alive.pop(k) for k in list(self._alive)[:max(0, over)]]
        try:
            for old in retired:
                self._retire(old)
            if loaded is None:
                self.loads += 1
                loaded = self.sandbox.load(submission, self.socket)
            yield loaded
        finally:
            with self._changed:
                self._busy.discard(key)
                if loaded is not None and loaded.alive:
                    self._alive[key] = loaded
                elif loaded is not None:
                    loaded.close()
                    self._closed_cpu += loaded.spent
                self._changed.notify_all()

    def close(self) -> None:
        """Close every loaded sandbox (told first, all of them, then waited for)."""
        with self._changed:
            closing, self._alive = list(self._alive.values()), OrderedDict()
        spent = [loaded.cpu_seconds() for loaded in closing]
        for loaded in closing:
            loaded.usable = False
            with contextlib.suppress(OSError, ValueError):
                loaded._control.close()
        for loaded in closing:
            loaded.close()
        with self._changed:
            self._closed_cpu += sum(spent)


def serve_forks(run: Callable[[list[str]], int], scratch: Path, namespace: bool) -> int:
    """Inside a sandbox: the fork server of :class:`LoadedSandbox`. Commands come on
    standard input and replies go on standard output, one JSON object a line; each
    ``run`` is a child forked from this process, which has loaded what the children
    need but never the submission: the child calls ``run(argv)`` (standard streams of
    its own, every other descriptor closed, ``cpu_seconds`` of its own, random state
    seeded afresh) and exits with its value. ``scratch`` (the private /tmp) is emptied
    after each run; ``namespace``: the sandbox has a PID namespace of its own, where
    everything but this process and init belongs to the game."""
    return _ForkServer(run, scratch, namespace).serve()


_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 4, 36
#: keyctl(2)'s system call by machine, and what it is asked here: the kernel's keyrings
#: are no file, process or IPC object, and a uid's own keyrings outlive its processes.
_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "loongarch64": 219,
           "ppc64le": 271, "s390x": 280, "i686": 288, "armv7l": 311}
_KEYCTL_JOIN_SESSION_KEYRING, _KEYCTL_CLEAR, _KEYCTL_INVALIDATE = 1, 7, 21
_KEYCTL_GET_PERSISTENT = 22
_KEY_SPEC_SESSION_KEYRING, _KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING = -3, -4, -5
#: keyctl's errors that say no process here reaches a keyring: ENOSYS (a kernel without
#: keyrings) and EPERM (a seccomp filter that forbids the call, as Docker's does: it
#: binds the sandbox too).
_NO_KEYRINGS = frozenset({errno.ENOSYS, errno.EPERM})


def _join_new_session_keyring() -> None:
    """Leave the caller's session keyring for a new, empty one (in a sandbox's launcher,
    before exec). A session keyring is handed down to every process started, and whoever
    holds it reads its keys whatever their uid: a teacher's login session keeps its
    Kerberos tickets there, say. Raises OSError if it cannot."""
    number = _KEYCTL.get(platform.machine())
    if number is None:
        raise OSError(f"no keyctl system call known on {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, _KEYCTL_JOIN_SESSION_KEYRING, None) < 0 and (
            ctypes.get_errno() not in _NO_KEYRINGS):
        raise OSError(ctypes.get_errno(), "a new session keyring could not be joined")


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _clear_keyrings(sandboxed: bool = False) -> bool:
    """Empty the keyrings of this process's uid (the user's, and the user's session
    keyring) and its session keyring (a sandbox's own: :func:`_join_new_session_keyring`),
    and remove the uid's persistent keyring (``KEYCTL_GET_PERSISTENT``: any process may
    ask for its own uid's, and it outlives them all, three days by default): what a
    game's process added there would reach the next game, and the next sandbox given
    that uid. Only in a uid of a sandbox's own (a root tournament's, above
    :data:`UID_BASE`), or, ``sandboxed`` (a fork server in its sandbox), in a user
    namespace of its own, whose keyrings are its own (:func:`_own_user_keyrings`: a
    sandbox started without root), never a user's own keys; whether they are empty (no
    keyrings in this kernel: they are).

    >>> os.getuid() >= UID_BASE or _clear_keyrings()
    True
    """
    if os.getuid() < UID_BASE and not (sandboxed and _own_user_keyrings()):
        return True
    number = _KEYCTL.get(platform.machine())
    if number is None:
        return False  # (not known to be empty: the sandbox is loaded again)
    libc = ctypes.CDLL(None, use_errno=True)
    # (linked into the session keyring, which is ours, to be reached; emptied, then
    # invalidated: the next one asked for is new, and none lingers for three days)
    persistent = libc.syscall(number, _KEYCTL_GET_PERSISTENT, -1, _KEY_SPEC_SESSION_KEYRING)
    if persistent < 0 and ctypes.get_errno() not in _NO_KEYRINGS | {errno.EOPNOTSUPP}:
        return False
    if persistent >= 0 and (libc.syscall(number, _KEYCTL_CLEAR, persistent) != 0
                            or libc.syscall(number, _KEYCTL_INVALIDATE, persistent) != 0):
        return False
    for ring in (_KEY_SPEC_SESSION_KEYRING, _KEY_SPEC_USER_KEYRING,
                 _KEY_SPEC_USER_SESSION_KEYRING):
        if libc.syscall(number, _KEYCTL_CLEAR, ring) != 0 and (
                ctypes.get_errno() not in _NO_KEYRINGS):
            return False
    return True


def _own_user_keyrings() -> bool:
    """Whether this process is in a user namespace other than the first (a sandbox
    started without root: ``bwrap --unshare-user``) whose user keyrings are its own: its
    uid's keyring, user session keyring and persistent keyring, which every child of a
    fork server shares, belong to the namespace since Linux 5.3 (before, the first two
    were the user's own, outside: not to be emptied).

    """
    with contextlib.suppress(OSError):
        return _namespaced_keyrings(Path("/proc/self/uid_map").read_text(),
                                    platform.release())
    return False


def _namespaced_keyrings(uid_map: str, release: str) -> bool:
    """Whether a process of this ``uid_map`` (``/proc/self/uid_map``), under a kernel of
    this ``release``, has user keyrings of its own namespace (:func:`_own_user_keyrings`).

    >>> _namespaced_keyrings("         0          0 4294967295", "6.1.0")  # the first
    False
    >>> _namespaced_keyrings("      1000       1000          1", "6.1.0-13-amd64")
    True
    >>> _namespaced_keyrings("      1000       1000          1", "4.18.0-553.el8_10.x86_64")
    False
    """
    if uid_map.split() == ["0", "0", "4294967295"]:
        return False
    found = re.match(r"(\d+)\.(\d+)", release)
    return found is not None and (int(found[1]), int(found[2])) >= (5, 3)


def _continued(signum: int, frame: Any) -> None:
    """A fork server's SIGCONT: it was stopped, by its game's process (nothing else here
    can): it ends at once, as if killed (the tournament kills its sandbox)."""
    os._exit(3)


class _ForkServer:
    """The loop of :func:`serve_forks`."""

    def __init__(self, run: Callable[[list[str]], int], scratch: Path, namespace: bool) -> None:
        self.run_child, self.scratch = run, scratch
        # kill(-1) reaches every process but init and this one: only in its own namespace
        self.namespace = namespace and os.getpid() == 2
        #: What the sandbox mounted below the scratch before any game ran (its own binds,
        #: when the checkout is below /tmp): kept by each wipe, and nothing mounted later.
        self.mounts = _mount_points(scratch)
        #: What a game must leave as it is of the folders a wipe keeps (and the scratch).
        self.kept = _kept_state(scratch, self.mounts)
        #: What the private /tmp held before any game (:meth:`_scratch_held`).
        self.held = 0
        self.held = self._scratch_held()
        self.control_in, self.control_out = os.dup(0), os.dup(1)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(2, 1)  # stray prints of what it loads go to its standard error
        os.close(devnull)
        # its games' processes may neither read nor write its memory (ptrace, /proc/PID/mem)
        _prctl(_PR_SET_DUMPABLE, 0)
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphans of a game stay below it
        for sig in _IGNORED:
            signal.signal(sig, signal.SIG_IGN)
        # a game's process that stops it (SIGSTOP) and lets it go on had its processes and
        # memory unwatched meanwhile: continued, it ends, and the game with it
        signal.signal(signal.SIGCONT, _continued)
        self.pending = b""
        self.commands: list[dict[str, Any]] = []
        self.eof = False

    def serve(self) -> int:
        clean = self._wipe()
        gc.collect()
        gc.freeze()  # (fewer pages copied into each child)
        self._say({"ready": True, "clean": clean})
        while True:
            command = self._next_command()
            if command is None:
                break
            if command.get("op") == "run":
                self._run(command)
            elif command.get("op") == "census":
                self._say({"census": False})
        self._kill_all()
        return 0

    def _say(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\n"
        while data:
            data = data[os.write(self.control_out, data):]

    def _read_control(self) -> None:
        chunk = os.read(self.control_in, 1 << 16)
        if not chunk:
            self.eof = True
            return
        self.pending += chunk
        while b"\n" in self.pending:
            line, _, self.pending = self.pending.partition(b"\n")
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict):
                    self.commands.append(message)

    def _next_command(self) -> dict[str, Any] | None:
        while not self.commands and not self.eof:
            self._read_control()
        return self.commands.pop(0) if self.commands else None

    def _run(self, command: dict[str, Any]) -> None:
        limits = command["limits"]
        cap, memory = int(limits["output_kb"]) << 10, int(limits["memory_mb"]) << 20
        stdin = str(command.get("stdin", "")).encode()[:1 << 15]
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        os.write(in_w, stdin)  # (within a pipe's buffer)
        os.close(in_w)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self._child(list(command["argv"]), in_r, out_w, err_w, int(limits["cpu_seconds"]))
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        kept = {out_r: _Kept(cap), err_r: _Kept(cap)}
        reading = set(kept)
        code: int | None = None
        exited = forked = over_memory = finish = False
        beat = time.monotonic() + BEAT_SECONDS
        seen: int | None = -1
        game = [pid]
        while not finish and not self.eof:
            readable, _, _ = select.select([self.control_in, *reading], [], [], WATCH_SECONDS)
            for fd in readable:
                if fd == self.control_in:
                    self._read_control()
                elif not kept[fd].read(fd):
                    reading.discard(fd)
            while self.commands:
                op = self.commands.pop(0).get("op")
                if op == "census":
                    self._say({"census": forked or len(self._game_pids()) > 1})
                elif op == "finish":
                    finish = True
            reaped, status = self._reap(pid)
            if reaped and not exited:
                exited, code = True, status
                self._say({"exited": code})
            allocated = self._last_pid()  # (a process or a thread started since: look)
            if allocated is None or allocated != seen:
                seen, game = allocated, self._game_pids()
            elif exited:
                game = []
            if len(game) > 1 and not forked:
                forked = True
                if command.get("alone"):
                    self._kill_all()
                    self._say({"killed": "forked"})
            held = self._scratch_held()
            if not over_memory and _resident(game) + held > memory and held + sum(
                    _memory_of(p) for p in game) > memory:  # (resident: a cheap upper bound)
                over_memory = True
                self._kill_all()
                self._say({"killed": "memory"})
            if time.monotonic() > beat:
                beat = time.monotonic() + BEAT_SECONDS
                self._say({"beat": len(game)})
        forked = forked or len(self._game_pids()) > 1
        self._kill_all()
        reaped, status = self._reap(pid)
        if reaped and not exited:
            code = status
        deadline = time.monotonic() + 2.0  # the rest of what the game's processes wrote
        while reading and time.monotonic() < deadline:
            readable, _, _ = select.select(list(reading), [], [], 0.1)
            for fd in readable:
                if not kept[fd].read(fd):
                    reading.discard(fd)
        for fd in kept:
            os.close(fd)
        output = {"code": code, "out": kept[out_r].text(), "err": kept[err_r].text(),
                  "truncated": kept[out_r].truncated or kept[err_r].truncated,
                  "forked": forked, "over_memory": over_memory}
        self._say({"output": output})  # (before the wipe, which may outlast the wait)
        self._say({"finished": {**output, "clean": self._wipe()}})

    def _child(self, argv: list[str], stdin: int, out: int, err: int, cpu: int) -> None:
        """In the forked child: its own streams and session, nothing else of the fork
        server's; then the game. Never returns."""
        code = 70
        try:
            os.setsid()
            for sig in (*_IGNORED, signal.SIGCONT):
                signal.signal(sig, signal.SIG_DFL)
            os.dup2(stdin, 0)
            os.dup2(out, 1)
            os.dup2(err, 2)
            os.closerange(3, max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 256))
            _prctl(_PR_SET_DUMPABLE, 1)  # its fork server measures its memory
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            numpy = sys.modules.get("numpy")
            if numpy is not None:  # (random reseeds itself in a forked child)
                numpy.random.seed()
            code = self.run_child(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # the child must exit, whatever happened
            with contextlib.suppress(Exception):
                import traceback

                traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def _reap(self, pid: int) -> tuple[bool, int | None]:
        """Reap every finished child (orphans of a game come here); whether ``pid`` was
        among them, and its exit status (None: killed by a signal)."""
        reaped, found = False, None
        while True:
            try:
                child, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return reaped, found
            if child == 0:
                return reaped, found
            if child == pid:
                code = os.waitstatus_to_exitcode(status)
                reaped, found = True, (code if code >= 0 else None)

    def _last_pid(self) -> int | None:
        """The last process or thread id its PID namespace gave out (None outside one):
        while it stays the same, no process has started, and the game's processes need
        no looking for."""
        if not self.namespace:
            return None
        with contextlib.suppress(OSError, ValueError):
            return int(Path("/proc/sys/kernel/ns_last_pid").read_text())
        return None

    def _game_pids(self) -> list[int]:
        """The processes of the game: every living process under this one."""
        return [p for p in _descendants(os.getpid(), bubblewrap=False, living=True)
                if p != os.getpid()]

    def _scratch_held(self) -> int:
        """What the game holds in the private /tmp (its own tmpfs: in a namespace), in
        bytes, beyond what it held at the load: its files' blocks, and
        :data:`SCRATCH_FILE_BYTES` a file."""
        if not self.namespace:
            return 0
        try:
            info = os.statvfs(self.scratch)
        except OSError:
            return 0
        held = ((info.f_blocks - info.f_bfree) * info.f_frsize
                + (info.f_files - info.f_ffree) * SCRATCH_FILE_BYTES)
        return max(0, held - self.held)

    def _kill_all(self) -> None:
        """Kill every process of the game (orphans included) and reap them."""
        if self.namespace:
            with contextlib.suppress(OSError):
                os.kill(-1, signal.SIGKILL)
        for _ in range(100):
            pids = self._game_pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            self._reap(0)
            time.sleep(0.001)
        self._reap(0)

    def _wipe(self) -> bool:
        """Empty the scratch folder; whether the sandbox is as it was loaded (nothing left
        in it, and, in its own IPC namespace, no System V IPC object). What the sandbox
        itself mounted below the scratch (a checkout in /tmp: its environment's read-only
        binds, and the folders above them) is the sandbox's own: it stays, and only what a
        game wrote beside it is removed; a kept folder that is no longer the one it was
        (another file, mode, owner or extended attribute) is not clean, and their times are
        put back (:func:`_as_kept`)."""
        emptied, keys = _empty(self.scratch, self.mounts), _clear_keyrings(self.namespace)
        return _as_kept(self.kept) and emptied and keys and self._no_ipc_left()

    def _no_ipc_left(self) -> bool:
        if self.namespace:
            for kind in ("shm", "sem", "msg"):
                with contextlib.suppress(OSError):
                    if len(Path(f"/proc/sysvipc/{kind}").read_text().splitlines()) > 1:
                        return False
        return True


def _mount_points(folder: Path) -> set[Path]:
    """The mount points below ``folder`` (``/proc/self/mountinfo``; none when unreadable).

    >>> _mount_points(Path("/no/such/folder"))
    set()
    """
    found = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split()
            if len(fields) > 4:
                point = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4]))
                if folder in point.parents:
                    found.add(point)
    return found


def _kept_folders(folder: Path, mounts: set[Path]) -> set[Path]:
    """The mount points ``mounts`` and the folders above them, below ``folder``: what a
    wipe of ``folder`` keeps.

    >>> sorted(map(str, _kept_folders(Path("/tmp"), {Path("/tmp/c/.venv")})))
    ['/tmp/c', '/tmp/c/.venv']
    """
    return mounts | {parent for point in mounts for parent in point.parents
                     if folder in parent.parents}


def _empty(folder: Path, mounts: set[Path]) -> bool:
    """Remove what is in ``folder`` but the mount points ``mounts`` and the folders above
    them (whose other contents go); whether nothing else is left."""
    kept = _kept_folders(folder, mounts)
    # (folders nested deeper than Python's recursion: left, and so not clean)
    with contextlib.suppress(OSError, RecursionError):
        for entry in os.scandir(folder):
            path = Path(entry.path)
            if path in mounts:
                continue
            if path in kept and entry.is_dir(follow_symlinks=False):
                _empty(path, mounts)
            else:
                _remove(path)
    try:
        return all(Path(entry.path) in kept for entry in os.scandir(folder))
    except OSError:
        return False


#: Of each folder a wipe keeps: which file it is, its mode, owner and extended attributes;
#: its access and modification times (:func:`_kept_state`).
_KeptState = dict[Path, tuple[tuple[Any, ...], tuple[int, int]]]


def _kept_state(scratch: Path, mounts: set[Path]) -> _KeptState:
    """What each folder a wipe keeps is (``scratch``, the mount points ``mounts`` and the
    folders above them, below ``scratch``): which file, its mode, owner and extended
    attributes (ACLs are some), and its times; a game that may write in them (a sandbox
    without root, whose folders are its own) could leave something there for the next.

    >>> _kept_state(Path("/no/such/scratch"), set())
    {}
    """
    found = {}
    for path in {scratch, *_kept_folders(scratch, mounts)}:
        with contextlib.suppress(OSError):
            info = os.lstat(path)
            found[path] = (_identity(path), (info.st_atime_ns, info.st_mtime_ns))
    return found


def _identity(path: Path) -> tuple[Any, ...]:
    """Which file ``path`` is, its mode, owner and extended attributes."""
    info = os.lstat(path)
    attributes: list[tuple[str, bytes]] = []
    with contextlib.suppress(OSError):
        for name in sorted(os.listxattr(path, follow_symlinks=False)):
            with contextlib.suppress(OSError):
                attributes.append((name, os.getxattr(path, name, follow_symlinks=False)))
    return (info.st_dev, info.st_ino, info.st_mode, info.st_uid, info.st_gid,
            tuple(attributes))


def _as_kept(kept: _KeptState) -> bool:
    """Put back the times of the folders a wipe keeps (:func:`_kept_state`); whether
    each is still the file it was, of the same mode, owner and extended attributes."""
    same = True
    for path, (identity, times) in kept.items():
        with contextlib.suppress(OSError):  # (not its owner: nor is the game)
            os.utime(path, ns=times, follow_symlinks=False)
        try:
            same = same and _identity(path) == identity
        except OSError:
            same = False
    return same


def _remove(path: Path) -> None:
    """Remove a file or a folder, whatever its permissions (the owner may change them)."""
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(OSError):
            path.unlink()
        return
    with contextlib.suppress(OSError):
        path.chmod(0o700)
    with contextlib.suppress(OSError):
        for entry in os.scandir(path):
            _remove(Path(entry.path))
    with contextlib.suppress(OSError):
        path.rmdir()


class _Kept:
    """The first ``cap`` bytes read from a pipe (the rest is read and dropped)."""

    def __init__(self, cap: int) -> None:
        self.cap, self.kept, self.truncated = cap, bytearray(), False

    def read(self, fd: int) -> bool:
        """Read what is there; False at the end of the pipe."""
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            return False
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        if len(chunk) > room:
            self.truncated = True
        return bool(chunk)

    def text(self) -> str:
        return self.kept.decode("utf-8", "replace")


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


def _resident(pids: list[int]) -> int:
    """The resident memory of processes, summed, in bytes: at least their proportional
    share (:func:`_memory_of`, which costs a walk of their page tables), from
    ``/proc/PID/statm`` at little cost."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
    return total


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


def _descendants(root: int, bubblewrap: bool, living: bool = False) -> list[int]:
    """``root`` and the processes started under it, whatever their session (an orphan is
    adopted by the namespace's init, still under ``root``); with ``bubblewrap``, not
    ``root`` (bubblewrap) nor its children named ``bwrap`` (its init in the namespace:
    the agent's own processes are further down); ``living``: not the zombies."""
    children: dict[int, list[tuple[int, str]]] = {}
    dead: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                head, _, tail = Path(f"/proc/{entry}/stat").read_text().rpartition(")")
                fields = tail.split()  # pid (comm) state ppid ...
                children.setdefault(int(fields[1]), []).append((int(entry),
                                                                 head.partition("(")[2]))
                if fields[0] == "Z":
                    dead.add(int(entry))
    found, todo = [], [(root, "", 0)]
    while todo:
        pid, name, depth = todo.pop()
        if (not bubblewrap or depth > 1 or (depth == 1 and name != "bwrap")) and not (
                living and pid in dead):
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
