"""A game server for tests: real sockets on loopback, stopped on leaving."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
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
