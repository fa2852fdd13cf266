"""The server's event loop: uvloop's when it is installed (``pip install
'littlestone[fast]'``), asyncio's own otherwise; the same code runs on either.

uvloop (libuv under the asyncio API) takes less CPU per read, write and timer than
asyncio's selector loop, so a loaded server keeps a shorter tail (benchmarks/README.md,
issue 32). :data:`EVENT_LOOP_VARIABLE` chooses by hand: ``asyncio`` forces asyncio's loop
(a benchmark's baseline, or a suspected uvloop bug), ``uvloop`` insists on uvloop.

>>> run(asyncio.sleep(0, "done"))
'done'
>>> loop_name() in ("uvloop", "asyncio")
True
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["EVENT_LOOP_VARIABLE", "loop_factory", "loop_name", "run"]

#: The environment variable that chooses the event loop: ``asyncio``, ``uvloop`` or unset
#: (uvloop when it is installed).
EVENT_LOOP_VARIABLE = "LITTLESTONE_EVENT_LOOP"

T = TypeVar("T")


def loop_name() -> str:
    """The event loop :func:`run` uses: ``uvloop`` or ``asyncio``. ValueError when the
    variable asks for uvloop and it is not installed, or names neither."""
    wanted = os.environ.get(EVENT_LOOP_VARIABLE, "").strip().lower()
    if wanted not in ("", "asyncio", "uvloop"):
        raise ValueError(f"{EVENT_LOOP_VARIABLE}={wanted!r}: use asyncio or uvloop")
    installed = importlib.util.find_spec("uvloop") is not None
    if wanted == "uvloop" and not installed:
        raise ValueError(f"{EVENT_LOOP_VARIABLE}=uvloop, but uvloop is not installed "
                         "(pip install 'littlestone[fast]')")
    return "uvloop" if installed and wanted != "asyncio" else "asyncio"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """A new event loop of :func:`loop_name`'s kind (None: asyncio's default)."""
    if loop_name() == "asyncio":
        return None
    import uvloop

    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the server's event loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
