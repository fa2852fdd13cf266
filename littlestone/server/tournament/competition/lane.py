"""A warm rating lane: one process a lane of :class:`.rater.Rater`, started once
(``littlestone competition rate --lane``) with what a rating imports already imported
(:data:`LANE_PRELOAD`), which forks one child a version (:func:`serve_lane`), so that a
version's rating no longer pays a Python's start and its imports (issue 41).

The lane and the server talk in lines: the server writes ``IDENT OVERRUN`` (a version's
id, and 1 when its time is up and its games left are recorded ``over_time``); the lane
answers ``started PID`` once the version's child runs, and ``ended PID STATUS`` (its exit
status, negative: the signal that killed it) once it has ended. In between, the child
itself says ``loading PID`` and ``loaded PID`` around the loads of its version's
opponents (the versions of the other role it meets, which it loads before its own
version): the server stops the version's clock (``rating_seconds``) for them, as their
loads are their own time, with a budget of their own (:meth:`.rater.WarmLane.rate`).
The lane says ``ready``
when its imports are done, rates one version at a time, and ends at the end of its
input. Each child is the leader of a session of its own (the server kills its whole
group when the version's ``rating_seconds`` are up) and dies with the lane, as the lane
dies with the server (:func:`~littlestone.sandbox.kernel.die_with_parent`), whatever
kills it: ``kill -9`` of the server leaves no rating behind.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any, NoReturn

from littlestone.games.errors import Terminated
from littlestone.sandbox.kernel import die_with_parent
from littlestone.server.net.hosts import HOST_PRELOAD, fork_server

__all__ = ["LANE_PRELOAD", "fork_server_here", "serve_lane"]

#: What a lane imports once, before its first version: the fork server's modules and
#: the rating's own.
LANE_PRELOAD = [*HOST_PRELOAD, "littlestone.server.tournament.run",
                "littlestone.server.tournament.competition.rater"]


def serve_lane(rate: Callable[[int, bool, Callable[[], AbstractContextManager[object]]],
                              object], log: Path,
               commands: IO[str] | None = None, replies: IO[str] | None = None) -> int:
    """(``littlestone competition rate --lane``.) Serve a rating lane on ``commands``
    and ``replies`` (standard input and output, a pipe): each version is rated in a
    child forked from here, which calls ``rate(ident, overrun, aside)`` with its
    standard output and error appended to ``log``, ``aside()`` the context of its
    opponents' loads (it says ``loading`` and ``loaded`` on ``replies``); the module's
    docstring says the lines. Returns 0 at the end of the commands."""
    commands = sys.stdin if commands is None else commands
    replies = sys.stdout if replies is None else replies
    for module in LANE_PRELOAD:
        importlib.import_module(module)
    _warm_report()
    lane = os.getpid()

    def say(line: str) -> None:
        replies.write(line + "\n")
        replies.flush()

    say("ready")
    for line in commands:
        ident, _, overrun = line.strip().partition(" ")
        if not ident.isdigit():
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        go, said = os.pipe()  # (the child speaks once the lane has said it started)
        pid = os.fork()
        if pid == 0:
            os.close(said)
            speak = os.dup(replies.fileno())  # (before its standard output is the log)
            aside = functools.partial(_aside, speak, go)
            _child(lane, log, functools.partial(rate, int(ident), overrun == "1", aside),
                   (speak, go))
        os.close(go)
        say(f"started {pid}")
        os.close(said)
        _, status = os.waitpid(pid, 0)
        say(f"ended {pid} {os.waitstatus_to_exitcode(status)}")
    return 0


@contextlib.contextmanager
def _aside(replies: int, go: int) -> Iterator[None]:
    """(In a version's child.) Its opponents' loads: ``loading PID`` said on the lane's
    ``replies`` (once the lane said ``started PID``: ``go`` closed), then ``loaded
    PID``, each line in one write (a pipe's writes that short are not interleaved)."""
    with contextlib.suppress(OSError):
        os.read(go, 1)  # (its end: the lane said it started)
    os.write(replies, f"loading {os.getpid()}\n".encode())
    try:
        yield
    finally:
        os.write(replies, f"loaded {os.getpid()}\n".encode())


def _warm_report() -> None:
    """Compile the tournament report's template once (each rating writes the report:
    compiling it was a third of a second of every rating)."""
    from littlestone.server.tournament import report

    with contextlib.suppress(Exception):
        report._templates().get_template("report.html")


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


def _child(lane: int, log: Path, rate: Callable[[], object],
           own: tuple[int, ...] = ()) -> NoReturn:
    """(A version's child, just forked.) Lead a session of its own, die with the lane,
    write to ``log`` and rate; exit 0 when the rating ended, 1 when it failed, 143 when
    a SIGTERM stopped it (the server stops: its games in flight end ``interrupted``,
    with their footers, and the version is rated again at the next start). ``own``: its
    file descriptors that what it starts must not hold (the lane's pipe: the server
    reads the lane's end from it)."""
    code = 1
    try:
        signal.signal(signal.SIGTERM, _terminate)
        os.setsid()
        die_with_parent(lane)
        out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        nothing = os.open(os.devnull, os.O_RDONLY)
        os.dup2(nothing, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        os.close(nothing)
        fork_server_here(own)
        rate()
        code = 0
    except Terminated:
        code = 143
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()  # (multiprocessing's: its fork server's socket folder)
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def fork_server_here(closed: tuple[int, ...] = ()) -> int:
    """multiprocessing's fork server (:func:`~littlestone.server.net.hosts.fork_server`,
    which a rating's hosts and field workers come from), forked from this process,
    whose modules are imported already, rather than started as a new Python that
    imports them again (a second or more of each rating); call it while this process
    has one thread. The fork server stays in this process's group (killed with it) and
    dies with it, without the file descriptors ``closed``. Returns its pid."""
    from multiprocessing import connection, forkserver

    server: Any = forkserver._forkserver  # (multiprocessing's one fork server; private)
    if server._forkserver_pid is not None:
        return int(server._forkserver_pid)
    parent = os.getpid()
    with socket.socket(socket.AF_UNIX) as listener:
        address = connection.arbitrary_address("AF_UNIX")  # type: ignore[attr-defined]
        listener.bind(address)
        os.chmod(address, 0o600)
        listener.listen()
        alive_r, alive_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # (the fork server: it ends when every holder of alive_w has)
            try:
                for fd in (alive_w, *closed):
                    os.close(fd)
                die_with_parent(parent)
                forkserver.main(listener.fileno(), alive_r, HOST_PRELOAD)
            finally:
                os._exit(0)
        os.close(alive_r)
    server._forkserver_address = address
    server._forkserver_alive_fd = alive_w
    server._forkserver_pid = pid
    fork_server()  # (multiprocessing's context, set to it)
    return pid
