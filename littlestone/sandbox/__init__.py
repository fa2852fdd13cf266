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
  output_kb`` are kept (a flood is drained and dropped, never stored); its answer is
  the last line that reads as JSON nested no deeper than :data:`.host.PRINTED_DEPTH`
  (:func:`printed_json`: a deeper line is never parsed, and so cannot fill the host's
  stack);
- its credential on standard input, never on a command line;
- its worker's session (the kernel's scheduling group: a session a sandbox cost every
  round trip a switch between groups, issue 42) but no controlling terminal, and a
  seccomp filter that refuses ``ioctl`` TIOCSTI and TIOCLINUX (:mod:`.seccomp`): it
  cannot type into the terminal the tournament was started from.

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
plain subprocess with the same limits and terminal defence, an empty environment and a
fresh working directory, but with the user's view of files and network, and every
report says so.

The package has two rooms and what they share: :mod:`.host` (bubblewrap, the limits,
launching an agent, a loaded sandbox and the host's end of its fork server's pipes, the
pool), :mod:`.zygote` (the fork server that runs inside the sandbox, and its wipe of the
private /tmp), :mod:`.kernel` (a uid's processes and memory, keyrings) and :mod:`.seccomp`
(no terminal, and the filter). The fork server is started as ``python -m littlestone
zygote``; the four import the standard library only.
"""

from __future__ import annotations

from littlestone.games.errors import SandboxError
from littlestone.sandbox.host import (
    GRACE_SECONDS,
    POLL_SECONDS,
    SOCKET,
    Limits,
    LoadedSandbox,
    Run,
    Sandbox,
    SandboxPool,
    printed_json,
)
from littlestone.sandbox.zygote import serve_forks

__all__ = ["GRACE_SECONDS", "POLL_SECONDS", "SOCKET", "Limits", "LoadedSandbox", "Run",
           "Sandbox", "SandboxError", "SandboxPool", "printed_json", "serve_forks"]
