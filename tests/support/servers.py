"""A game server for tests: real sockets on loopback, stopped on leaving; and a wait for
a state the server reaches (:func:`until`), never a fixed sleep."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from littlestone.server.net import GameServer, ServerSettings


@contextlib.asynccontextmanager
async def running_server(tmp_path: Path, **settings: Any) -> AsyncIterator[GameServer]:
    """A server with these settings (and a token in ``.token``), stopped on leaving."""
    game_server = GameServer(ServerSettings(port=0, data=tmp_path, **settings))
    await game_server.start()
    game_server.token = game_server.store.add_token("bob")  # type: ignore[attr-defined]
    try:
        yield game_server
    finally:
        await game_server.stop()


async def until(condition: Callable[[], object], seconds: float = 60.0) -> None:
    """Wait until ``condition()`` is true: a state to reach, not a time measured (at once
    on an idle machine, within ``seconds`` however loaded); else the test fails."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never reached in {seconds} s: {condition}"
        await asyncio.sleep(0.02)
