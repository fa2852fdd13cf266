"""What runs inside a sandbox: the fork server (:func:`serve_forks`), which forks each
game's process from a loaded Python, watches its processes and memory, and wipes the
private /tmp after each game.

It is started as ``python -m littlestone zygote`` and imports only the standard library
and :mod:`.kernel`: its start is paid by every loaded sandbox."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import re
import resource
import select
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from littlestone.sandbox.kernel import (
    ControlMessage,
    clear_keyrings,
    descendants,
    die_with_parent,
    memory_of,
    resident,
)

__all__ = ["serve_forks"]

#: How often a fork server looks at its game's processes (a second one, their memory).
WATCH_SECONDS = 0.05
#: How often a fork server says it is alive while its game runs (the host kills a
#: sandbox it has not heard from for :data:`.host.STALL_SECONDS`).
BEAT_SECONDS = 0.5
#: What one file (or folder) in a sandbox's private /tmp costs the host's kernel (its
#: inode and name, some 0.6 KiB measured): counted in its game's memory with what the
#: files hold, as neither is any process's (a tmpfs holds millions of empty files).
SCRATCH_FILE_BYTES = 1024
#: Signals a fork server ignores (its games' processes get them back at their default).
_IGNORED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
            signal.SIGPIPE, signal.SIGALRM, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)


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


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


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
        self.commands: list[ControlMessage] = []
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

    def _say(self, message: ControlMessage) -> None:
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

    def _next_command(self) -> ControlMessage | None:
        while not self.commands and not self.eof:
            self._read_control()
        return self.commands.pop(0) if self.commands else None

    def _run(self, command: ControlMessage) -> None:
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
            self._child(list(command["argv"]), in_r, out_w, err_w, int(limits["cpu_seconds"]),
                        command.get("cpus"))
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
            if not over_memory and resident(game) + held > memory and held + sum(
                    memory_of(p) for p in game) > memory:  # (resident: a cheap upper bound)
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

    def _child(self, argv: list[str], stdin: int, out: int, err: int, cpu: int,
               cpus: object = None) -> None:
        """In the forked child: its own streams and process group (not a session: the
        kernel schedules by session, and a game shares its worker's), nothing else of
        the fork server's, on the CPUs ``cpus`` when the host names them (its referee's:
        see :meth:`.host.LoadedSandbox.run`); then the game. Never returns."""
        code = 70
        try:
            die_with_parent()  # (a sandbox without bubblewrap: the game ends with it)
            os.setpgid(0, 0)
            for sig in (*_IGNORED, signal.SIGCONT):
                signal.signal(sig, signal.SIG_DFL)
            os.dup2(stdin, 0)
            os.dup2(out, 1)
            os.dup2(err, 2)
            os.closerange(3, max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 256))
            _prctl(_PR_SET_DUMPABLE, 1)  # its fork server measures its memory
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            if isinstance(cpus, list) and cpus and all(isinstance(c, int) for c in cpus):
                with contextlib.suppress(OSError, ValueError, OverflowError):
                    os.sched_setaffinity(0, cpus)  # (a CPU it may not use: it stays as it was)
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
        return [p for p in descendants(os.getpid(), bubblewrap=False, living=True)
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
        emptied, keys = _empty(self.scratch, self.mounts), clear_keyrings(self.namespace)
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
