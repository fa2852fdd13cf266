"""Red team of the operator's log: what a peer sends is written there escaped, so that no
control character (a line break, a bidirectional control) changes what the operator
reads. A real ``serve`` process.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import msgpack
import pytest
from websockets.asyncio.client import connect

from littlestone.cli.common import TerminalSafe
from littlestone.server.records.store import Store
from tests.server.web.test_web_play import RULES, ask

# -- the operator's log ------------------------------------------------------------------

BIDI = "\u202e\u2066"


@pytest.mark.slow
def test_bidirectional_controls_from_a_peer_are_escaped_in_the_text_log(tmp_path):
    """Break (fixed): the text log escaped control characters and line breaks in what a
    peer sent, but not Unicode's bidirectional controls: ``watch`` of a game id
    ``x\\u202e...`` (quoted as it was, no repr) wrote U+202E into the log, and the rest of
    the operator's line showed reversed. The command line's output is escaped the same way."""
    data = tmp_path / "data"
    store = Store(data)
    token, spectator = store.add_token("alice"), store.add_token("sam", "spectator")
    proc = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--port", "0",
                             "--data", str(data), "--no-web", "--log-format", "text"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[3]

        async def attack() -> None:
            for who, role, message in (
                    (spectator, "spectator", {"type": "watch", "game_id": f"g{BIDI}1 ok"}),
                    (token, "learner", {"type": "join", "game_id": f"g{BIDI}2"}),
                    (token, "learner", {"type": "challenge", "rules": RULES, "seed": 1,
                                        "opponent": f"x{BIDI}"})):
                async with connect(url, compression=None, proxy=None) as ws:
                    await ws.send(msgpack.packb({"type": "hello", "version": 1, "role": role,
                                                 "agent": "a", "token": who,
                                                 "capabilities": []}))
                    await ws.recv()
                    reply = await ask(ws, message)
                    assert reply["type"] == "error"

        asyncio.run(attack())
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "refused: not_found" in err
    assert not set(BIDI) & set(err), [line for line in err.splitlines() if set(BIDI) & set(line)]
    assert "\\u202e" in err
    assert TerminalSafe.escape(f"a{BIDI}b") == "a\\u202e\\u2066b"
