"""The server's lanes: each kind of work a peer's message can start has worker threads
of its own, so that no kind waits behind another (PROTOCOL.md 1.2).

- ``admission``: building a class and checking a request against the budgets
  (:func:`.policy.admit`): a challenge is answered while agents think;
- ``records``: the index (starting and finishing games' rows, token look-ups before a
  lobby request and while a spectator watches, revocations), on a connection of its own;
- ``hosts``: starting the processes of the agents that think long (:mod:`.hosts`; their
  calls are awaited on the event loop, no thread waits for them);
- the agents that run in the server's process: their set-ups and slow moves, and the
  final checks of long games, in the event loop's default executor (what
  :func:`asyncio.to_thread` uses), which nothing above uses. Heavy agents (exact Ldim,
  the randomised value) run in processes of their own (:mod:`.hosts`), not there.

The web page has its own (:mod:`littlestone.server.web.app`): its index reads, and one
thread for the heavy work a viewer may start (a tree), under a budget.

>>> import asyncio
>>> lane = Lane("demo", 1)
>>> asyncio.run(lane.run(sum, [1, 2, 3]))
6
>>> lane.close()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from littlestone.server.records.store import Store

__all__ = ["ADMISSION_WORKERS", "HOST_WORKERS", "Lane", "Lanes", "RecordsLane"]

T = TypeVar("T")

#: Admissions at once (each builds one class within the budgets), and agents' processes
#: started at once (each a few milliseconds of a fork server).
ADMISSION_WORKERS = 2
HOST_WORKERS = 2


class Lane:
    """Worker threads for one kind of work."""

    def __init__(self, name: str, workers: int) -> None:
        self.name = name
        self.executor = concurrent.futures.ThreadPoolExecutor(
            workers, thread_name_prefix=f"littlestone-{name}")

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` in one of this lane's threads (with the caller's context, as
        :func:`asyncio.to_thread`)."""
        call = functools.partial(contextvars.copy_context().run, work, *args)
        return await asyncio.get_running_loop().run_in_executor(self.executor, call)

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


class RecordsLane(Lane):
    """The index's lane: one thread, with its own connection to the data folder's
    index (a connection is not shared between threads)."""

    def __init__(self, data: Path) -> None:
        super().__init__("records", 1)
        self.data = data
        self._local = threading.local()

    def _store(self) -> Store:
        store: Store | None = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store(self.data)
        return store

    async def index(self, work: Callable[..., T], *args: Any) -> T:
        """``work(store, *args)`` on the lane's own connection to the index."""
        return await self.run(lambda: work(self._store(), *args))


class Lanes:
    """A server's lanes (see the module's docstring)."""

    def __init__(self, data: Path) -> None:
        self.admission = Lane("admission", ADMISSION_WORKERS)
        self.records = RecordsLane(data)
        self.hosts = Lane("hosts", HOST_WORKERS)

    def close(self) -> None:
        for lane in (self.admission, self.records, self.hosts):
            lane.close()
