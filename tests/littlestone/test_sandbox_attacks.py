"""Red team of the sandbox: state a game's process can leave for the next
child of its loaded sandbox (the probe for the check games, one game for the next), or
for the next sandbox given the same uid. Needs bubblewrap."""

from __future__ import annotations

import json
import os
import platform
import re
from pathlib import Path

import pytest

import littlestone.sandbox.host as sandbox_module
from littlestone.sandbox import Limits, Sandbox

pytestmark = [
    pytest.mark.skipif(Sandbox.unavailable() is not None,
                       reason=f"no sandbox here: {Sandbox.unavailable()}"),
    pytest.mark.skipif(platform.machine() != "x86_64",
                       reason="the attack's system call numbers are x86-64's")]

#: The learner each hostile file below ends with (its attack is in its import).
COUNTER = '''from littlestone import Learner

class Counter(Learner):
    games = frozenset({"mistake-bound"})
    def predict(self, x):
        return 0.0
'''

#: A learner whose import counts, in the kernel's keyrings of its uid (the user's and the
#: user's session keyring: neither is a file, a process or an IPC object), the
#: processes that imported it before, and says the count on its standard error.
KEY_COUNTER = '''
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ADD_KEY, KEYCTL, KEYCTL_SEARCH, KEYCTL_READ = 248, 250, 10, 11
RINGS = (-4, -5)  # the uid's keyring (@u) and its session keyring (@us, also @s here)
counts = []
for ring in RINGS:
    found = libc.syscall(KEYCTL, KEYCTL_SEARCH, ctypes.c_long(ring), b"user", b"count", 0)
    n = 0
    if found > 0:
        buf = ctypes.create_string_buffer(32)
        libc.syscall(KEYCTL, KEYCTL_READ, ctypes.c_long(found), buf, 32)
        n = int(buf.value or b"0")
    counts.append(n)
value = str(max(counts) + 1).encode()
for ring in RINGS:
    libc.syscall(ADD_KEY, b"user", b"count", value, len(value), ctypes.c_long(ring))
print("IMPORTED-BEFORE", max(counts), file=sys.stderr)

''' + COUNTER


def _before(err: str) -> int:
    found = re.search(r"IMPORTED-BEFORE (\d+)", err)
    assert found is not None, err
    return int(found[1])


def _request(file: Path, sandbox: Sandbox) -> bytes:
    return json.dumps({"role": "learner", "spec": f"{sandbox.inside(file)}:Counter",
                       "games": []}).encode()


def _nothing_left_between_two_children(file: Path) -> None:
    """Two probes, children of one loaded sandbox of ``file``: each counted 0 before it."""
    sandbox = Sandbox(Limits())
    loaded = sandbox.load(file)
    try:
        runs = [loaded.run(["probe"], 20, _request(file, sandbox)) for _ in range(2)]
    finally:
        loaded.close()
    assert [run.code for run in runs] == [0, 0], [run.err for run in runs]
    assert [_before(run.err) for run in runs] == [0, 0]


def _nothing_left_between_two_sandboxes(file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two one-command sandboxes of ``file`` given the same uid (as after 100 loads):
    each counted 0 before it."""
    uid = sandbox_module._free_uid()
    monkeypatch.setattr(sandbox_module, "_free_uid", lambda: uid)
    sandbox = Sandbox(Limits())
    runs = [sandbox.run(file, ["probe"], 20, _request(file, sandbox)) for _ in range(2)]
    assert [run.code for run in runs] == [0, 0], [run.err for run in runs]
    assert [_before(run.err) for run in runs] == [0, 0]


def test_a_child_of_a_loaded_sandbox_finds_nothing_the_one_before_left_in_a_keyring(
        tmp_path):
    file = tmp_path / "counter.py"
    file.write_text(KEY_COUNTER)
    _nothing_left_between_two_children(file)


def test_a_sandbox_finds_nothing_a_sandbox_of_the_same_uid_left_in_a_keyring(
        tmp_path, monkeypatch):
    """A uid's keyrings outlive its sandbox: a one-command sandbox (the own checks, a
    probe without a pool) given that uid again (after 100 sandboxes in one process) read
    them, until the launcher emptied them before each sandbox starts."""
    file = tmp_path / "counter.py"
    file.write_text(KEY_COUNTER)
    _nothing_left_between_two_sandboxes(file, monkeypatch)


#: KEY_COUNTER in the uid's *persistent* keyring (keyctl(KEYCTL_GET_PERSISTENT), which
#: any process may ask for its own uid's: it outlives every process of the uid, three days
#: by default), linked into the caller's session keyring to be reached.
PERSISTENT_COUNTER = KEY_COUNTER.replace(
    "RINGS = (-4, -5)  # the uid's keyring (@u) and its session keyring (@us, also @s here)",
    "RINGS = (libc.syscall(KEYCTL, 22, ctypes.c_long(-1), ctypes.c_long(-3)),)")


def test_a_child_of_a_loaded_sandbox_finds_nothing_the_one_before_left_in_its_persistent_keyring(
        tmp_path):
    """Red team (fifth session): the wipe after each child emptied the uid's keyring, its
    session keyring and the sandbox's, not the uid's persistent keyring: a game's process
    counted there the games before it (and a check's own checks, its games)."""
    file = tmp_path / "counter.py"
    file.write_text(PERSISTENT_COUNTER)
    _nothing_left_between_two_children(file)


def test_a_sandbox_finds_nothing_a_sandbox_of_the_same_uid_left_in_its_persistent_keyring(
        tmp_path, monkeypatch):
    """The persistent keyring outlives the sandbox (three days): the next sandbox given
    its uid, another student's, read it."""
    file = tmp_path / "counter.py"
    file.write_text(PERSISTENT_COUNTER)
    _nothing_left_between_two_sandboxes(file, monkeypatch)


#: Two children of a loaded sandbox started without root (in a user namespace of the
#: test's own, as a user would run it): what each said.
AS_A_USER = """
import json, sys
from pathlib import Path
from littlestone.sandbox import Limits, Sandbox
file = Path(sys.argv[1])
sandbox = Sandbox(Limits())
request = json.dumps({"role": "learner", "spec": f"{sandbox.inside(file)}:Counter",
                      "games": []}).encode()
loaded = sandbox.load(file)
try:
    runs = [loaded.run(["probe"], 20, request) for _ in range(2)]
finally:
    loaded.close()
print(json.dumps([[run.code, run.err] for run in runs]))
"""


def _two_runs_as_a_user(file: Path, source: str) -> list[list[object]]:
    """``source`` written to ``file``, then two probes of it as children of one loaded
    sandbox started without root (:data:`AS_A_USER`): each one's [exit status, stderr].
    Skips where no sandbox without root can start here."""
    import shutil
    import subprocess
    import sys

    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) here")
    file.write_text(source)
    user = [unshare, "--user", "--map-user=1000", "--map-group=1000"] if (
        os.geteuid() == 0) else []
    done = subprocess.run([*user, sys.executable, "-c", AS_A_USER, str(file)],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and not done.stdout:
        pytest.skip(f"no sandbox without root here: {done.stderr.strip()[-300:]}")
    runs: list[list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return runs


def test_a_child_of_a_sandbox_without_root_finds_nothing_the_one_before_left_in_a_keyring(
        tmp_path):
    """Without root, a sandbox is a user namespace of its own, whose uid keyrings (the
    uid's, its session keyring, its persistent one) are the namespace's own and shared by
    every child of its fork server: the wipe left them, as the uid is the user's (below
    UID_BASE). It now empties them in a namespace of its own."""
    runs = _two_runs_as_a_user(tmp_path / "counter.py", PERSISTENT_COUNTER)
    assert [code for code, _ in runs] == [0, 0], runs
    assert [_before(err) for _, err in runs] == [0, 0]


#: A learner whose import tries the keyrings' three system calls, each a way in (a key
#: added to the uid's keyring, the persistent keyring asked for, a key requested), and
#: says what the kernel answered (errno numbers; 0: it worked).
KEY_CALLS = '''
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
answers = []
for call in ((248, b"user", b"left", b"1", 1, ctypes.c_long(-4)),  # add_key to @u
             (250, 22, ctypes.c_long(-1), ctypes.c_long(-3)),  # KEYCTL_GET_PERSISTENT
             (249, b"user", b"left", None, ctypes.c_long(0))):  # request_key
    answers.append(0 if libc.syscall(*call) >= 0 else ctypes.get_errno())
print("KEYS", *answers, file=sys.stderr)

''' + COUNTER


def _key_users() -> set[int]:
    """The uids the kernel keeps keys for (``/proc/key-users``)."""
    return {int(line.split(":")[0]) for line in
            Path("/proc/key-users").read_text().splitlines() if ":" in line}


@pytest.mark.skipif(not sandbox_module.FILTER, reason="no seccomp filter for this machine")
def test_no_process_of_a_sandbox_reaches_a_keyring_and_none_is_made_for_its_uid(
        tmp_path, monkeypatch):
    """Issue 42: the sandbox's seccomp filter refuses add_key, request_key and keyctl
    (EPERM), in a one-command sandbox and in each child of a loaded one; and no keyring
    is made for a sandbox's uid any more: emptying them after each game made the uid's
    keyrings (kept by the kernel for good) and woke the kernel's key collector, which
    walks every key of the machine, at each game."""
    file = tmp_path / "keys.py"
    file.write_text(KEY_CALLS)
    # (a uid the kernel keeps no key for yet: earlier runs on this machine left some)
    uid = next((u for u in (sandbox_module._free_uid() for _ in range(200))
                if u not in _key_users()), None)
    if uid is None:
        pytest.skip("every free uid of this process has keys from an earlier run")
    monkeypatch.setattr(sandbox_module, "_free_uid", lambda: uid)
    sandbox = Sandbox(Limits())
    alone = sandbox.run(file, ["probe"], 20, _request(file, sandbox))
    loaded = sandbox.load(file)
    try:
        children = [loaded.run(["probe"], 20, _request(file, sandbox)) for _ in range(2)]
    finally:
        loaded.close()
    import errno

    for run in (alone, *children):
        assert run.code == 0, run.err
        assert f"KEYS {errno.EPERM} {errno.EPERM} {errno.EPERM}" in run.err, run.err
    if os.geteuid() == 0:  # (a sandbox of the test's own uid: the user's keys)
        assert uid not in _key_users()


#: A learner that reads, at its import, the key the test put in its own session keyring
#: (a login's session keeps Kerberos tickets there, say), and says what it read.
KEY_READER = '''
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
buf = ctypes.create_string_buffer(64)
n = libc.syscall(250, 11, ctypes.c_long(KEY_ID), buf, 64)  # KEYCTL_READ
print("READ", buf.raw[:max(n, 0)].decode() or "nothing", file=sys.stderr)

''' + COUNTER


def test_a_sandbox_cannot_read_the_keys_of_the_session_that_started_it(tmp_path):
    """The session keyring is handed down to every process started, and whoever holds
    it reads its keys, whatever their uid: a sandbox read its launcher's (found by the
    review). Each sandbox now starts in a new, empty one."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    secret = b"TEACHERS-TICKET"
    key = libc.syscall(248, b"user", b"littlestone-test", secret, len(secret),
                       ctypes.c_long(-3))  # add_key to this process's session keyring
    if key < 0:
        pytest.skip(f"no session keyring here (errno {ctypes.get_errno()})")
    try:
        file = tmp_path / "reader.py"
        file.write_text(KEY_READER.replace("KEY_ID", str(key)))
        sandbox = Sandbox(Limits())
        alone = sandbox.run(file, ["probe"], 20, _request(file, sandbox))
        loaded = sandbox.load(file)
        try:
            child = loaded.run(["probe"], 20, _request(file, sandbox))
        finally:
            loaded.close()
        for run in (alone, child):
            assert run.code == 0, run.err
            assert "READ nothing" in run.err and secret.decode() not in run.err, run.err
    finally:
        libc.syscall(250, 21, ctypes.c_long(key))  # KEYCTL_INVALIDATE


#: A learner whose import fills its private /tmp with empty files (no process's memory:
#: the kernel's, some 0.6 KiB each, up to a few million files in a tmpfs), then waits.
FILES = """
import os, sys, time
for i in range(150_000):
    os.close(os.open(f"/tmp/{i}", os.O_CREAT | os.O_WRONLY, 0o600))
    if i == 20_000:
        print("20,000 FILES", file=sys.stderr, flush=True)
print("CREATED", file=sys.stderr)
time.sleep(5)
""" + COUNTER


def test_a_game_that_fills_its_tmp_with_empty_files_is_over_its_memory(tmp_path):
    """Red team (fifth session): a game's process made 3 million empty files in its
    private /tmp in 20 s (its size, file_mb, bounds their bytes, not their number):
    some 2 GiB of the host's kernel memory, beyond memory_mb and seen by no watch. The
    fork server now counts the files of the private /tmp in the game's memory."""
    file = tmp_path / "files.py"
    file.write_text(FILES)
    sandbox = Sandbox(Limits(memory_mb=700))
    loaded = sandbox.load(file)
    try:  # (150,000 files: some 150 MiB counted; the memory_mb its game is given)
        loaded.sandbox = Sandbox(Limits(memory_mb=80))
        run = loaded.run(["probe"], 30, _request(file, sandbox))
    finally:
        loaded.close()
    assert run.over_memory and run.code is None, (run.code, run.err)
    assert "20,000 FILES" in run.err  # (killed for its files, not for what it loaded)


def test_a_game_killed_for_its_files_is_said_over_its_memory_when_their_wipe_is_slow(
        tmp_path, monkeypatch):
    """A million files take the fork server longer to remove than the tournament waits
    for its answer (STALL_SECONDS), as 100,000 do on a busy host: the sandbox is killed
    then. Its run was said only "stalled", with none of its game's output (a check's
    row: "it stopped or killed its own sandbox"; under load, the test above failed so).
    The fork server now says its game's output before the wipe: the run is what its game
    was killed for, with what it printed. (The wait is made short here, for fewer files:
    whether the wipe outlasts it or not, the run reads the same.)"""
    file = tmp_path / "files.py"
    file.write_text(FILES.replace("150_000", "400_000"))
    sandbox = Sandbox(Limits(memory_mb=700))
    loaded = sandbox.load(file)
    monkeypatch.setattr(sandbox_module, "STALL_SECONDS", 2.5)
    try:  # (killed near 280,000 files: their wipe takes some 4 s)
        loaded.sandbox = Sandbox(Limits(memory_mb=300))
        run = loaded.run(["probe"], 30, _request(file, sandbox))
    finally:
        loaded.close()
    assert run.over_memory and run.code is None, (run.code, run.stalled, run.err)
    assert not run.stalled and "20,000 FILES" in run.err, (run.stalled, run.err)
    assert not loaded.usable


#: A learner that counts, at its import, the files the processes before it left outside
#: its private /tmp (where a wipe does not look), and leaves one more in each place it can.
OUTSIDE_TMP = """
import os, sys
found = 0
for folder in ("/", "/dev", "/dev/shm", "/run", "/submission", "/usr"):
    mark = os.path.join(folder, "left-by-a-game")
    found += os.path.exists(mark)
    try:
        with open(mark, "w") as out:
            out.write("1")
    except OSError:
        pass
print("IMPORTED-BEFORE", found, file=sys.stderr)
""" + COUNTER


def test_a_child_of_a_sandbox_without_root_finds_nothing_the_one_before_left_outside_tmp(
        tmp_path):
    """Red team (fifth session): without root, bubblewrap's own folders (its root, /dev
    and /dev/shm, /run, the folders above each bind) are the user's, and so the
    sandbox's: a game's process wrote there, for the next child of its fork server (a
    wipe empties the private /tmp only), and without bound (file_mb is /tmp's size). They
    are now read-only, as they are to a root tournament's sandbox."""
    runs = _two_runs_as_a_user(tmp_path / "outside.py", OUTSIDE_TMP)
    assert [code for code, _ in runs] == [0, 0], runs
    assert [_before(err) for _, err in runs] == [0, 0]


#: A learner that looks, at its import, for the mark the process before it wrote in the
#: memory of bubblewrap's init (PID 1 of the sandbox, which no wipe empties and no game's
#: end kills), and writes one there.
INIT_MEMORY = """
import os, sys
found = 0
try:
    maps = [line.split() for line in open("/proc/1/maps")]
    stack = next(m for m in maps if len(m) >= 6 and m[5] == "[stack]")
    low = int(stack[0].split("-")[0], 16)
    fd = os.open("/proc/1/mem", os.O_RDWR)
    found = int(os.pread(fd, 8, low) == b"LEFTMARK")
    os.pwrite(fd, b"LEFTMARK", low)
except (OSError, StopIteration):
    pass
print("IMPORTED-BEFORE", found, file=sys.stderr)
""" + COUNTER


@pytest.mark.xfail(strict=True, reason=(
    "not fixed (red team, fifth session): without root, bubblewrap's init (PID 1) runs as "
    "the sandbox's uid and is dumpable; fixes: bwrap --as-pid-1 for a loaded sandbox (the "
    "fork server, non-dumpable, as PID 1: it ignores its games' SIGKILL and SIGSTOP too), "
    "or a seccomp filter without ptrace and process_vm_writev"))
def test_a_child_of_a_sandbox_without_root_finds_nothing_the_one_before_left_in_its_init(
        tmp_path):
    """Without root, a game's process reads and writes the memory of bubblewrap's init
    (/proc/1/mem, or ptrace): what it leaves there reaches every later child of its fork
    server (the next game, a check's games after its own checks)."""
    runs = _two_runs_as_a_user(tmp_path / "init.py", INIT_MEMORY)
    assert [code for code, _ in runs] == [0, 0], runs
    assert [_before(err) for _, err in runs] == [0, 0]
