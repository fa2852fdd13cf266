"""What both sides of a sandbox ask the kernel: a uid's processes and their memory
(read from /proc), a process's descendants, and the kernel's keyrings (no file, process
or IPC object, and a uid's own keyrings outlive its processes)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import re
from pathlib import Path
from typing import Any

__all__ = ["UID_BASE", "ControlMessage", "clear_keyrings", "descendants", "die_with_parent",
           "join_new_session_keyring", "memory_of", "pids_of", "processes_of", "resident"]

#: A message on a loaded sandbox's control pipes, either way (JSON lines): a command's
#: ``op`` and its own keys, or a reply's one key (``ready``, ``exited``, ``output``,
#: ``finished``, ``killed``, ``census``, ``beat`` ...) and its value; each side reads the
#: keys of the messages it expects and drops the rest.
ControlMessage = dict[str, Any]

#: Host user ids the sandboxes of a root tournament run as (one per run).
UID_BASE = 200_000
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


#: prctl(2)'s option: the signal a process gets when the thread that started it ends.
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None, requester: int | None = None) -> None:
    """(In a process as it starts.) Killed (SIGKILL) when its parent ends, however it
    ends (``kill -9`` too): Linux's ``PR_SET_PDEATHSIG``, set at every level of what a
    rating or a check starts (the rating process, the fork server's workers and hosts, a
    sandbox without bubblewrap and its games' children), since the signal reaches only
    a process's own children. A parent that ended before the signal was set is seen
    right after: the process ends at once, when its parent is no longer ``parent`` (by
    default the one it had on entry) or when ``requester`` (the process that asked a
    fork server for it) is gone. Elsewhere than Linux, nothing."""
    before = os.getppid() if parent is None else parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)  # (SIGKILL)
    except (OSError, AttributeError):
        return
    gone = os.getppid() != before
    if requester is not None and not gone:
        try:
            os.kill(requester, 0)
        except ProcessLookupError:
            gone = True
        except PermissionError:
            pass
    if gone:
        os._exit(70)


def join_new_session_keyring() -> None:
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


def clear_keyrings(sandboxed: bool = False) -> bool:
    """Empty the keyrings of this process's uid (the user's, and the user's session
    keyring) and its session keyring (a sandbox's own: :func:`join_new_session_keyring`),
    and remove the uid's persistent keyring (``KEYCTL_GET_PERSISTENT``: any process may
    ask for its own uid's, and it outlives them all, three days by default): what a
    game's process added there would reach the next game, and the next sandbox given
    that uid. Only in a uid of a sandbox's own (a root tournament's, above
    :data:`UID_BASE`), or, ``sandboxed`` (a fork server in its sandbox), in a user
    namespace of its own, whose keyrings are its own (:func:`_own_user_keyrings`: a
    sandbox started without root), never a user's own keys; whether they are empty (no
    keyrings in this kernel: they are).

    >>> os.getuid() >= UID_BASE or clear_keyrings()
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


def memory_of(pid: int) -> int:
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


def resident(pids: list[int]) -> int:
    """The resident memory of processes, summed, in bytes: at least their proportional
    share (:func:`memory_of`, which costs a walk of their page tables), from
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


def pids_of(uid: int, other_namespace: bool = False) -> list[int]:
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


def processes_of(uid: int) -> int:
    """How many processes (and threads: RLIMIT_NPROC counts them) ``uid`` runs now."""
    total = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            status = _proc_status(entry)
            fields = status.get("Uid", "").split()
            if fields and int(fields[0]) == uid:
                total += int(status.get("Threads", "1").strip() or 1)
    return total


def descendants(root: int, bubblewrap: bool, living: bool = False) -> list[int]:
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
