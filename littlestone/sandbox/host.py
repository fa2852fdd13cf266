"""The host's side of a sandbox: bubblewrap and its arguments, the limits, launching
an agent (:class:`Sandbox`), a loaded sandbox and the host's end of its fork server's
pipes (:class:`LoadedSandbox`), and the pool of loaded sandboxes (:class:`SandboxPool`).

Nothing here runs inside a sandbox; :mod:`.zygote` is what does."""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import itertools
import json
import os
import pwd
import queue
import re
import resource
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

import littlestone
from littlestone.games.errors import SandboxError
from littlestone.sandbox.kernel import (
    UID_BASE,
    ControlMessage,
    clear_keyrings,
    descendants,
    die_with_parent,
    join_new_session_keyring,
    memory_of,
    pids_of,
    processes_of,
)
from littlestone.sandbox.seccomp import install, leave_terminal, program

__all__ = ["GRACE_SECONDS", "POLL_SECONDS", "PRINTED_DEPTH", "SOCKET", "Limits", "LoadedSandbox",
           "Run", "Sandbox", "SandboxError", "SandboxPool", "nesting", "printed_json"]

#: How often a running agent's game is checked, and how long it may outlive its game.
POLL_SECONDS = 0.1
GRACE_SECONDS = 2.0
#: Where the referee's Unix socket is, inside the sandbox.
SOCKET = "/run/littlestone.sock"
#: Where the submission file is, inside the sandbox.
SUBMISSION_DIR = "/submission"
#: This process's sandboxes, counted for their uids (:func:`_free_uid`, from
#: :data:`.kernel.UID_BASE`).
_uids = itertools.count()
#: How long the host waits for a word from a fork server whose game runs before it kills
#: the sandbox (the fork server speaks every :data:`.zygote.BEAT_SECONDS`; a game's
#: process can stop or kill its own fork server: that ends its own game only).
STALL_SECONDS = 5.0
#: How long a sandbox has to load (Python, numpy, the package) and say it is ready, and
#: to end when it is closed before it is killed.
LOAD_SECONDS = 60.0
CLOSE_SECONDS = 1.0
#: The seccomp filter every sandbox runs under (:mod:`.seccomp`: no TIOCSTI, no TIOCLINUX,
#: no keyrings); empty on a machine it does not know.
FILTER = program()
#: The fork server's own CPU seconds (each game's process has ``cpu_seconds`` of its own).
FORK_SERVER_CPU_SECONDS = 24 * 3600


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


#: How deep the arrays and objects of a line a sandboxed run printed may nest for the
#: host to read it as JSON (its answers nest three deep): ``json`` recurses a level a
#: bracket, and a line nested to Python's recursion limit, read, would leave this
#: process's stack full at the moment the garbage collector runs some finalizer there
#: (which then fails, and any handler with it), so deeper lines are skipped unread.
PRINTED_DEPTH = 32

_ESCAPE = re.compile(r"\\.", re.DOTALL)
_STRING = re.compile(r'"[^"]*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting(text: str) -> int:
    """How deep the arrays and objects of the JSON ``text`` nest: its brackets outside its
    strings, counted in linear time and without recursion (``text`` need not be JSON).

    >>> nesting('{"ok": true, "unsupported": [null, "] is not {"]}'), nesting("[" * 10**5)
    (2, 100000)
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", _ESCAPE.sub("", text)))
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def printed_json(out: str) -> Iterator[object]:
    """The JSON values among the lines of ``out`` (what a sandboxed run printed), last
    line first: a run's answer is its last line that reads as one, whatever the
    submission printed before or after. Lines that are not JSON, or nest deeper than
    :data:`PRINTED_DEPTH`, are skipped (the deep ones before they are parsed).

    >>> list(printed_json('{"ok": true}\\nhello\\n' + "[" * 60000 + "]" * 60000))
    [{'ok': True}]
    """
    for line in reversed(out.strip().splitlines()):
        if nesting(line) > PRINTED_DEPTH:
            continue
        try:
            yield json.loads(line)
        except ValueError:  # its own prints
            continue


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
                    "no terminal, an empty environment and a fresh working directory, "
                    "but the user's files and network")
        return ("bubblewrap: read-only system, Python and package, only its own file, a "
                "private /tmp; no network (the referee on a Unix socket); own PID, IPC and "
                "UTS namespaces (nothing outlives it, no signal leaves it); own uid; no "
                "terminal, no TIOCSTI or TIOCLINUX (seccomp); "
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
            processes += processes_of(os.getuid())
        keys = None if self.unsafe else uid
        try:
            return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    process_group=0,  # (its session is ours: issue 42)
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
        argv = ["bwrap", *_namespaces(), "--die-with-parent",
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
        of the caller's; run as root on a machine without the filter, that uid's own
        keyrings emptied, as a sandbox before it with that uid may have left keys there
        (under the filter none could, and emptying them would make them: the kernel keeps
        a uid's keyrings once made)."""
        die_with_parent()  # (bubblewrap's --die-with-parent reaches only its own child)
        if keys is not None:
            join_new_session_keyring()
            if os.geteuid() == 0 and not FILTER:
                os.setresuid(keys, keys, 0)  # (the saved uid stays root, to come back)
                emptied = clear_keyrings()
                os.setresuid(0, 0, 0)
                if not emptied:
                    raise OSError(f"the keyrings of uid {keys} could not be emptied")
        # no session of its own (the kernel schedules by session): no terminal instead,
        # and no ioctl that types into one, nor any keyring (:mod:`.seccomp`)
        leave_terminal()
        install(FILTER)
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
            if sum(memory_of(pid) for pid in pids) > memory:
                over_memory = True
                break
            if over_at is None and game_over is not None and game_over():
                over_at = time.monotonic()
            if over_at is not None and time.monotonic() - over_at > GRACE_SECONDS:
                break
        strays = self._pids(proc, uid)  # (without root: those of another session too)
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
            for pid in pids_of(uid, other_namespace=True):  # the namespace is gone already
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)

    def _pids(self, proc: subprocess.Popen[bytes], uid: int) -> list[int]:
        """The agent's processes (not bubblewrap's own): as root, those of its own uid;
        else every process started under ``proc`` (a session of its own does not hide
        one), but for bubblewrap's own two (``proc``, and its init in the namespace)."""
        if not self.unsafe and os.geteuid() == 0:
            return pids_of(uid, other_namespace=True)
        return descendants(proc.pid, bubblewrap=not self.unsafe)

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
        self._replies: queue.Queue[ControlMessage | None] = queue.Queue()
        self._census: queue.Queue[ControlMessage | None] = queue.Queue()
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

    def _reply(self, timeout: float) -> ControlMessage | None:
        with contextlib.suppress(queue.Empty):
            return self._replies.get(timeout=timeout)
        return {"silent": True}

    def _send(self, message: ControlMessage) -> bool:
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
            alone: bool = False, cpus: set[int] | None = None) -> Run:
        """Run ``python -m littlestone *args`` (``connect`` or ``probe``) in a fresh child,
        as :meth:`Sandbox.run` does in a fresh sandbox; ``cpus``: the CPUs the child runs
        on (its referee's, so that a round's wake-ups stay on one CPU: issue 42), where
        the fork server's are not."""
        limits = self.sandbox.limits
        if census is not None:
            census(self._forked_now)
        started = time.monotonic()
        self.runs += 1
        if not self._send({"op": "run", "argv": args, "stdin": stdin.decode(),
                           "alone": alone, "cpus": sorted(cpus) if cpus else None,
                           "limits": {
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
        said: ControlMessage | None = None  # its game's output, said before the wipe
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


def _free_uid() -> int:
    """A host uid for one sandboxed run that no process and no user account has: its
    processes are then told apart from every other process by their uid alone."""
    for _ in range(1000):
        uid = UID_BASE + (os.getpid() % 10_000) * 100 + next(_uids) % 100
        try:
            pwd.getpwuid(uid)
        except KeyError:
            if not pids_of(uid):
                return uid
    raise OSError("no free uid for a sandbox")


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
