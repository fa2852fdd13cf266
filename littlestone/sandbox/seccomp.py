"""A sandbox's defence against the terminal it was started from (it has none) and
against the kernel's keyrings (it may not touch them).

A process that can push bytes into a terminal's input queue types on the teacher's
keyboard: ``ioctl(fd, TIOCSTI, &byte)`` queues a byte as if typed, and ``TIOCLINUX``
pastes a virtual console's selection. Linux allows TIOCSTI to a process whose
*controlling* terminal the descriptor is (``dev.tty.legacy_tiocsti = 1``, still the
default of many kernels), and to any process with CAP_SYS_ADMIN.

A sandbox used to be kept from its terminal by a session of its own (bubblewrap's
``--new-session``); but the kernel schedules by session (autogroup), and a session a
sandbox cost each game's round trips a scheduling group's switch (benchmarks/README.md,
issue 42). A sandbox now shares its worker's session, and two defences stand instead:

- **no controlling terminal** (:func:`leave_terminal`): its launcher, between fork and
  exec, lets go of the terminal its session has (``TIOCNOTTY``: for a process that
  does not lead its session, this clears its own controlling terminal and nothing
  else). Everything it starts has none either: ``/dev/tty`` answers ENXIO, TIOCSTI on
  any terminal EPERM. Only a session's leader can take a terminal again, and only one
  that no session holds: a sandbox that calls ``setsid`` leads a session of its own,
  but the teacher's terminal is held by the teacher's shell, and no descriptor of it
  reaches a sandbox (its standard streams are pipes, every other descriptor closed,
  ``/dev/pts`` its own);
- **a seccomp filter** (:func:`install`), inherited by every process it
  starts: ``ioctl`` with TIOCSTI or TIOCLINUX fails with EPERM whatever the descriptor,
  on the native system call and on the 32-bit one (``int 0x80``); on x86-64 the x32
  system calls fail altogether (no Python uses them). It is built here, a few classic
  BPF instructions packed with :mod:`struct`, for the machines whose layout it knows
  (x86-64 and AArch64); elsewhere there is none, and the first defence stands alone.

The same filter refuses the keyrings' three system calls (``add_key``, ``request_key``,
``keyctl``) with EPERM, as container runtimes' default filters do: the kernel's
keyrings are not namespaced, a uid's keys outlive its processes, and a game's process
that keeps a key there reaches its submission's next game. Where the filter stands, no
process of a sandbox reaches a keyring, and nothing needs emptying after each game:
:func:`.kernel.clear_keyrings` sees EPERM and is done. Emptying them cost more than its
system calls: removing the uid's persistent keyring after each game woke the kernel's
key collector, which walks every key of the machine (one per uid that ever had a
sandbox: tens of thousands on a machine that ran the suite), some 8 ms of CPU a game on
a kernel worker that no process's time counted (benchmarks/README.md, issue 42).

>>> len(program()) % 8 == 0 and len(program()) > 0
True
>>> verdict(program(), ARCHES["x86_64"].audit, 16, (0, TIOCSTI, 0))
'errno'
>>> verdict(program(), ARCHES["x86_64"].audit, 16, (0, 0x5401, 0))  # TCGETS
'allow'
>>> verdict(program(), ARCHES["x86_64"].audit, ARCHES["x86_64"].keys[2])  # keyctl
'errno'
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import struct
import sys
import termios
from dataclasses import dataclass

__all__ = ["ARCHES", "TIOCLINUX", "TIOCSTI", "install", "leave_terminal", "program",
           "verdict"]

#: The two ioctls that write into a terminal's input (linux/ioctls.h).
TIOCSTI = 0x5412
TIOCLINUX = 0x541C

# classic BPF (linux/filter.h, linux/bpf_common.h) and seccomp (linux/seccomp.h)
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_INSTRUCTION = struct.Struct("=HBBI")
#: struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
_NR, _ARCH, _ARGS = 0, 4, 16
_X32_SYSCALL_BIT = 0x40000000
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


@dataclass(frozen=True)
class Arch:
    """A machine's system calls as seccomp sees them: its audit architecture, ioctl's
    number and the keyrings' (``add_key``, ``request_key``, ``keyctl``), and those of
    the 32-bit system calls it also runs."""

    audit: int
    ioctl: int
    keys: tuple[int, int, int]
    compat_audit: int
    compat_ioctl: int
    compat_keys: tuple[int, int, int]
    #: Whether its system call numbers may carry the x32 bit (x86-64).
    x32: bool = False


#: The machines the filter knows, by :func:`platform.machine` (little-endian both: the
#: low half of a 64-bit argument is its first 4 bytes).
ARCHES = {
    "x86_64": Arch(audit=0xC000003E, ioctl=16, keys=(248, 249, 250),
                   compat_audit=0x40000003, compat_ioctl=54, compat_keys=(286, 287, 288),
                   x32=True),
    "aarch64": Arch(audit=0xC00000B7, ioctl=29, keys=(217, 218, 219),
                    compat_audit=0x40000028, compat_ioctl=54, compat_keys=(309, 310, 311)),
}


def program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one), as the kernel takes it: classic
    BPF instructions of 8 bytes; empty where the machine is not one of :data:`ARCHES`.

    The command is compared in its low 32 bits: the kernel reads ioctl's command as an
    ``unsigned int``, so a caller that sets the high ones still asks for TIOCSTI."""
    arch = ARCHES.get(machine or platform.machine())
    if arch is None or sys.byteorder != "little":
        return b""
    # (code, k, where to go when true, when false): a label, or None for the next one
    lines: list[tuple[str, int, int, str | None, str | None]] = [
        ("", _LD_W_ABS, _ARCH, None, None),
        ("", _JEQ_K, arch.audit, "native", None),
        ("", _JEQ_K, arch.compat_audit, "compat", "allow"),
        ("native", _LD_W_ABS, _NR, None, None),
        *([("", _JGE_K, _X32_SYSCALL_BIT, "deny", None)] if arch.x32 else []),
        *[("", _JEQ_K, nr, "deny", None) for nr in arch.keys],
        ("", _JEQ_K, arch.ioctl, "command", "allow"),
        ("compat", _LD_W_ABS, _NR, None, None),
        *[("", _JEQ_K, nr, "deny", None) for nr in arch.compat_keys],
        ("", _JEQ_K, arch.compat_ioctl, "command", "allow"),
        ("command", _LD_W_ABS, _ARGS + 8, None, None),  # args[1], its low half
        ("", _JEQ_K, TIOCSTI, "deny", None),
        ("", _JEQ_K, TIOCLINUX, "deny", "allow"),
        ("allow", _RET_K, _RET_ALLOW, None, None),
        ("deny", _RET_K, _RET_ERRNO | errno.EPERM, None, None),
    ]
    at = {label: pc for pc, (label, *_) in enumerate(lines) if label}

    def jump(pc: int, label: str | None) -> int:
        return 0 if label is None else at[label] - pc - 1

    return b"".join(_INSTRUCTION.pack(code, jump(pc, yes), jump(pc, no), k)
                    for pc, (_, code, k, yes, no) in enumerate(lines))


def verdict(filter_program: bytes, arch: int, nr: int, args: tuple[int, ...] = ()) -> str:
    """What ``filter_program`` answers a system call: ``allow``, ``errno`` or ``kill``
    (a classic BPF interpreter of the few instructions :func:`program` uses, for its
    tests: the kernel runs the same program)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(list(args) + [0] * 6)[:6])
    ops = [_INSTRUCTION.unpack_from(filter_program, i)
           for i in range(0, len(filter_program), _INSTRUCTION.size)]
    pc, acc = 0, 0
    while pc < len(ops):
        code, jt, jf, k = ops[pc]
        if code == _LD_W_ABS:
            (acc,) = struct.unpack_from("=I", data, k)
            pc += 1
        elif code in (_JEQ_K, _JGE_K):
            taken = acc == k if code == _JEQ_K else acc >= k
            pc += 1 + (jt if taken else jf)
        elif code == _RET_K:
            action = k & 0xFFFF0000
            return "allow" if action == _RET_ALLOW else "errno" if action == _RET_ERRNO \
                else "kill"
        else:
            raise ValueError(f"instruction {code:#x} at {pc} is not one this program uses")
    raise ValueError("the program ran past its end")


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(filter_program: bytes) -> None:
    """Install ``filter_program`` (:func:`program`) on this process and all it starts
    (with ``no_new_privs``, as an unprivileged filter needs); nothing for an empty one.
    Raises OSError when the kernel refuses it. Call it between fork and exec."""
    if not filter_program:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(filter_program, len(filter_program))
    fprog = _Fprog(len(filter_program) // _INSTRUCTION.size,
                   ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(
            _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"the seccomp filter could not be installed: {os.strerror(error)}")


def leave_terminal() -> None:
    """Let go of this process's controlling terminal, if it has one (``TIOCNOTTY`` on
    ``/dev/tty``; a process that leads its session must not call it: its session would
    lose the terminal). Call it between fork and exec, after leaving the caller's
    process group."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return  # (ENXIO: none)
    try:
        fcntl.ioctl(fd, termios.TIOCNOTTY)
    finally:
        os.close(fd)
