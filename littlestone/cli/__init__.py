"""The ``littlestone`` command line.

Every sub-command has ``--help``; ``--json`` prints one JSON object on the last line of
stdout for machines to read. Bad input (an unknown class or agent, a bad parameter, a
missing or malformed file, an agent that cannot play the game) prints one line naming
the problem on stderr and exits with status 2, never a traceback. Set
``LITTLESTONE_DEBUG=1`` to see the traceback of an internal error.

This module only dispatches: the parser is :mod:`.parser`, the commands live with what
they drive (:mod:`.local`, :mod:`.records`, :mod:`.network`, :mod:`.remote`,
:mod:`.tournaments`, and :mod:`.sandboxed` for what runs in a submission's sandbox). A
command's module is imported when it runs, so a start pays only for what it uses (the
test suite and every sandbox start many of them).
"""

from __future__ import annotations

import os

#: Set before numpy loads, unless the caller set one of them: numpy's libraries on one
#: thread. A game's vectors are small, so more threads would not help. Their start alone
#: cost each command 0.1 s of CPU, and the test suite and the sandboxes start hundreds.
#: (A caller who set one chose: OpenBLAS and MKL read their own before OMP_NUM_THREADS,
#: so setting the others would undo an ``OMP_NUM_THREADS=8``.)
ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
if not any(_name in os.environ for _name in ONE_THREAD):
    os.environ.update(dict.fromkeys(ONE_THREAD, "1"))

import importlib  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from typing import Any  # noqa: E402

from littlestone.cli.common import EXIT_INTERNAL, EXIT_USAGE, TerminalSafe  # noqa: E402
from littlestone.cli.parser import build_parser  # noqa: E402
from littlestone.games.errors import LittlestoneError, Terminated, UsageError  # noqa: E402

__all__ = ["main"]

#: Each sub-command's function, as ``module:function`` under this package.
COMMANDS: dict[str, str] = {
    "ldim": "local:ldim", "play": "local:play", "learners": "local:list_agents",
    "adversaries": "local:list_agents", "games": "records:games", "replay": "records:replay",
    "serve": "network:serve", "connect": "remote:connect", "watch": "remote:watch",
    "token": "network:token", "check": "sandboxed:check", "init": "scaffold:init",
    "tournament": "tournaments:tournament", "probe": "sandboxed:probe",
    "zygote": "sandboxed:zygote", "pac": "pac:pac", "submit": "remote:submit",
    "competition": "tournaments:competition", "conformance": "conformance:conformance",
}


def command(name: str) -> Callable[[Any], int]:
    """The function that runs sub-command ``name``, its module imported now.

    >>> command("ldim").__name__
    'ldim'
    """
    module, function = COMMANDS[name].split(":")
    runner: Callable[[Any], int] = getattr(
        importlib.import_module(f"{__name__}.{module}"), function)
    return runner


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    stdout = sys.stdout
    sys.stdout = TerminalSafe(stdout)  # names from peers and logs, shown safely
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        args = build_parser().parse_args(argv)
        return command(args.command)(args)
    except UsageError as exc:
        print(f"littlestone: error: {TerminalSafe.escape(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except (LittlestoneError, RecursionError) as exc:
        print(f"littlestone: error: {TerminalSafe.escape(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except Terminated:
        print("littlestone: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("littlestone: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:
        if os.environ.get("LITTLESTONE_DEBUG"):
            raise
        print(f"littlestone: internal error: {type(exc).__name__}: "
              f"{TerminalSafe.escape(str(exc))}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        sys.stdout = stdout
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
