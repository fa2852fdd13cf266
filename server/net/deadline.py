"""One timer for a stream of move deadlines (a connection's :meth:`recv` deadlines)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["Deadline"]

CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution


class Deadline:
    """One timer for a stream of deadlines: ``set(when)`` costs no timer of its own when
    the move comes in time (the timer, armed once, re-arms itself for the current
    deadline when it fires early); ``expired`` is called once a deadline set has passed.

    >>> import asyncio
    >>> async def demo() -> list[str]:
    ...     seen: list[str] = []
    ...     loop = asyncio.get_running_loop()
    ...     deadline = Deadline(loop, lambda: seen.append("expired"))
    ...     deadline.set(loop.time() + 0.05)
    ...     deadline.set(loop.time() + 0.01)   # moved earlier
    ...     await asyncio.sleep(0.1)
    ...     deadline.set(loop.time() + 0.01)
    ...     deadline.set(None)                 # met in time
    ...     await asyncio.sleep(0.05)
    ...     return seen
    >>> asyncio.run(demo())
    ['expired']
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, expired: Callable[[], None]) -> None:
        self.loop, self.expired = loop, expired
        self.when: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def set(self, when: float | None) -> None:
        """Expire at loop time ``when`` (None: no deadline)."""
        self.when = when
        timer = self._timer
        if when is None:
            return
        if timer is None or timer.when() > when:
            if timer is not None:
                timer.cancel()
            self._timer = self.loop.call_at(when, self._fire)

    def cancel(self) -> None:
        """No deadline, and no timer left behind."""
        self.when = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        when = self.when
        if when is None:
            return
        if self.loop.time() + CLOCK_RESOLUTION < when:  # the loop fires timers this early
            self._timer = self.loop.call_at(when, self._fire)
        else:
            self.when = None
            self.expired()
