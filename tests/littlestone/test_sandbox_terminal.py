"""A submission against the terminal the tournament was started from (issue 42): a
sandbox shares its worker's session, and so its scheduling group, but has no controlling
terminal and runs under a seccomp filter (:mod:`littlestone.sandbox.seccomp`); whatever
it tries, no byte reaches the teacher's terminal's input."""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import termios
import threading
import tty
from pathlib import Path

import pytest

from littlestone.sandbox import Sandbox
from littlestone.sandbox.seccomp import ARCHES, TIOCLINUX, TIOCSTI, program, verdict

TCGETS = 0x5401


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_the_filter_refuses_terminal_input_on_every_abi_and_nothing_else(machine):
    """TIOCSTI and TIOCLINUX are refused on the native system call and on the 32-bit
    one, whatever the command's high half (the kernel reads it as 32 bits); x32 calls
    are refused on x86-64; other ioctls and other system calls pass."""
    arch = ARCHES[machine]
    filt = program(machine)
    for request in (TIOCSTI, TIOCLINUX, (7 << 32) | TIOCSTI):
        assert verdict(filt, arch.audit, arch.ioctl, (0, request, 0)) == "errno"
        assert verdict(filt, arch.compat_audit, arch.compat_ioctl, (0, request, 0)) == "errno"
    assert verdict(filt, arch.audit, arch.ioctl, (0, TCGETS, 0)) == "allow"
    assert verdict(filt, arch.compat_audit, arch.compat_ioctl, (0, TCGETS)) == "allow"
    # the same number as another system call (the compat ioctl's is a native call's)
    assert verdict(filt, arch.audit, arch.compat_ioctl, (0, TIOCSTI)) == "allow"
    assert verdict(filt, arch.audit, 0, (0, TIOCSTI)) == "allow"
    if arch.x32:
        assert verdict(filt, arch.audit, 0x40000000 | 514, (0, TIOCSTI)) == "errno"
        assert verdict(filt, arch.audit, 0x40000000 | 16, (0, TCGETS)) == "errno"
    assert program("mips") == b""  # a machine it does not know: no filter


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_the_filter_refuses_the_keyrings_on_every_abi_and_their_neighbours_pass(machine):
    """add_key, request_key and keyctl are refused on the native system call and on the
    32-bit one; the system calls numbered around them pass."""
    arch = ARCHES[machine]
    filt = program(machine)
    for audit, numbers in ((arch.audit, arch.keys), (arch.compat_audit, arch.compat_keys)):
        for nr in numbers:
            assert verdict(filt, audit, nr) == "errno"
        assert verdict(filt, audit, min(numbers) - 1) == "allow"
        assert verdict(filt, audit, max(numbers) + 1) == "allow"


def _pending(fd: int) -> bytes:
    """What a terminal's input queue holds (read from its slave, raw, not waiting)."""
    got = b""
    while select.select([fd], [], [], 0.2)[0]:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        got += chunk
    return got


def _as_controlling_terminal(slave: int) -> None:  # (in the child, before exec)
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)


INSTALLED = r'''
import errno, fcntl, json, sys
from littlestone.sandbox.seccomp import TIOCLINUX, TIOCSTI, program, install
out = {}
def attempt(name, request, arg):
    try:
        fcntl.ioctl(0, request, arg)
        out[name] = "WORKED"
    except OSError as exc:
        out[name] = errno.errorcode[exc.errno]
attempt("before", TIOCSTI, b"A")
install(program())
attempt("after", TIOCSTI, b"B")
attempt("after, high bits", (1 << 32) | TIOCSTI, b"C")
attempt("paste", TIOCLINUX, bytes([3]))
print(json.dumps(out))
'''


@pytest.mark.skipif(not program(), reason="no seccomp filter for this machine")
def test_the_filter_installed_refuses_tiocsti_on_a_terminal_it_controls():
    """A process whose controlling terminal a pty is pushes a byte into it; once the
    filter is installed, it cannot (EPERM), however it spells the request."""
    master, slave = os.openpty()
    try:
        tty.setraw(slave)
        done = subprocess.run([sys.executable, "-c", INSTALLED], stdin=slave,
                              capture_output=True, timeout=60,
                              preexec_fn=lambda: _as_controlling_terminal(0))
        assert done.returncode == 0, done.stderr.decode()
        out = json.loads(done.stdout)
        legacy = Path("/proc/sys/dev/tty/legacy_tiocsti")
        allowed = os.geteuid() == 0 or not legacy.exists() or legacy.read_text().strip() == "1"
        pending = _pending(slave)
        if allowed:  # the harness sees an injection ...
            assert out["before"] == "WORKED" and pending == b"A"
        assert out["after"] == out["after, high bits"] == out["paste"] == "EPERM"
        assert b"B" not in pending and b"C" not in pending  # ... and the filter stops it
    finally:
        os.close(master)
        os.close(slave)


SUBMISSION = r'''
import errno, fcntl, json, os, termios
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
results = {{}}

def attempt(name, target, request=TIOCSTI, arg=b"Z"):
    try:
        fd = os.open(target, os.O_RDWR) if isinstance(target, str) else target
        fcntl.ioctl(fd, request, arg)
        results[name] = "WORKED"
    except OSError as exc:
        results[name] = errno.errorcode.get(exc.errno, str(exc.errno))

for fd in range(10):
    attempt(f"TIOCSTI on fd {{fd}}", fd)
attempt("TIOCSTI on /dev/tty", "/dev/tty")
attempt("TIOCLINUX on /dev/tty", "/dev/tty", TIOCLINUX, bytes([3]))
attempt("TIOCSTI on the teacher's pty by name", {pty!r})
read, write = os.pipe()
child = os.fork()
if child == 0:  # a session of its own, to take a terminal again
    os.close(read)
    found = {{}}
    try:
        os.setsid()
        for name, target in (("/dev/tty", "/dev/tty"), ("by name", {pty!r})):
            try:
                fd = os.open(target, os.O_RDWR)
                fcntl.ioctl(fd, termios.TIOCSCTTY, 1)
                fcntl.ioctl(fd, TIOCSTI, b"Z")
                found[f"setsid, TIOCSCTTY and TIOCSTI on {{name}}"] = "WORKED"
            except OSError as exc:
                found[f"setsid, TIOCSCTTY and TIOCSTI on {{name}}"] = errno.errorcode.get(
                    exc.errno, str(exc.errno))
    finally:
        os.write(write, json.dumps(found).encode())
        os._exit(0)
os.close(write)
results.update(json.loads(os.read(read, 65536) or b"{{}}"))
os.waitpid(child, 0)
try:
    group = open("/proc/self/autogroup").read().split()[0]
except OSError:
    group = None
print("TERMINAL " + json.dumps({{"results": results, "autogroup": group}}), flush=True)
'''

HELPER = r'''
import fcntl, json, sys
from pathlib import Path
from littlestone.sandbox import Limits, Sandbox
submission, unsafe = Path(sys.argv[1]), sys.argv[2] == "unsafe"
fcntl.ioctl(0, 0x5412, b"X")  # the teacher's own keystroke (the harness sees it)
sandbox = Sandbox(Limits(processes=32), unsafe=unsafe)
request = json.dumps({"role": "learner", "spec": f"{sandbox.inside(submission)}:X",
                      "games": []}).encode()
fresh = sandbox.run(submission, ["probe"], timeout=120, stdin=request)
loaded = sandbox.load(submission)
try:
    forked = loaded.run(["probe"], 120, request)
finally:
    loaded.close()
try:
    group = open("/proc/self/autogroup").read().split()[0]
except OSError:
    group = None
print(json.dumps({"fresh": fresh.out, "loaded": forked.out, "autogroup": group,
                  "errors": fresh.err[-2000:] + forked.err[-2000:]}))
'''


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["bubblewrap", "unsafe"])
def test_a_submission_cannot_type_into_the_teachers_terminal(tmp_path, mode):
    """The tournament runs with a pty as its controlling terminal and standard input
    (the teacher's terminal). A submission, in a sandbox of its own and in a loaded
    sandbox's game process, tries TIOCSTI on each of its descriptors, on /dev/tty, on
    the pty by its name, after taking a session of its own, and TIOCLINUX's paste:
    every attempt fails, and only the teacher's own keystroke is in the terminal's
    input. The submission runs in the tournament's session, and so in its scheduling
    group: no session of its own (unsafe, as root: the filter is what stops it)."""
    if mode == "bubblewrap" and Sandbox.unavailable() is not None:
        pytest.skip(f"no sandbox here: {Sandbox.unavailable()}")
    master, slave = os.openpty()
    drained: list[bytes] = []
    stop = threading.Event()

    def drain() -> None:  # what the tournament writes on its terminal
        while not stop.is_set():
            if select.select([master], [], [], 0.1)[0]:
                try:
                    drained.append(os.read(master, 4096))
                except OSError:
                    return

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        tty.setraw(slave)
        attacker = tmp_path / "attacker.py"
        attacker.write_text(SUBMISSION.format(pty=os.ttyname(slave)))
        done = subprocess.run([sys.executable, "-c", HELPER, str(attacker), mode],
                              stdin=slave, stderr=slave, stdout=subprocess.PIPE,
                              timeout=600, preexec_fn=lambda: _as_controlling_terminal(0))
        assert done.returncode == 0
        out = json.loads(done.stdout)
        assert _pending(slave) == b"X"  # the teacher's keystroke, and nothing else
        for run in ("fresh", "loaded"):
            line = next((x for x in out[run].splitlines() if x.startswith("TERMINAL ")), None)
            assert line is not None, out["errors"]
            seen = json.loads(line.removeprefix("TERMINAL "))
            results = seen["results"]
            assert len(results) == 15
            assert not [name for name, got in results.items() if got == "WORKED"], results
            assert results["TIOCSTI on /dev/tty"] == "ENXIO"  # no controlling terminal
            if out["autogroup"] is not None:  # the tournament's scheduling group
                assert seen["autogroup"] == out["autogroup"]
    finally:
        stop.set()
        reader.join(5)
        os.close(master)
        os.close(slave)
