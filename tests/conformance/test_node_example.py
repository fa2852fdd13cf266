"""examples/clients/node/learner.js, a client written from PROTOCOL.md in Node.js: it
plays the project's server, its counts agree with the server's, and it passes the
conformance kit's client cases. Skipped, saying why, where Node.js is not installed
(.ci/run installs Debian's nodejs)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from littlestone.conformance import run_client_cases
from littlestone.server.records.store import Store
from tests.support.servers import running_server

NODE = shutil.which("node") or shutil.which("nodejs")
LEARNER = Path(__file__).parents[2] / "examples" / "clients" / "node" / "learner.js"
pytestmark = pytest.mark.skipif(NODE is None, reason="no node on PATH: the Node.js example "
                                "needs Debian's nodejs (apt-get install nodejs)")


async def node(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    assert NODE is not None
    process = await asyncio.create_subprocess_exec(
        NODE, str(LEARNER), *args, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_node_learner_plays_the_server_and_agrees_with_its_counts(tmp_path):
    async with running_server(tmp_path, anonymous=False) as server:
        status, out, err = await node(server.url, "15", "40", "11",
                                      env=dict(os.environ, LITTLESTONE_TOKEN=server.token))
        assert status == 0, (out, err)
        played = json.loads(out.strip().splitlines()[-1])
        row = Store(server.settings.data).game(played["game_id"])
    assert played["status"] == row["status"] == "complete"
    assert played["key_opens_commitment"] is True
    assert played["rounds"] == row["rounds"] == 40
    assert played["mistakes"] == played["server_mistakes"] == row["mistakes"]
    assert played["mistakes"] <= 4  # Halving on 16 thresholds: log2 16


async def test_the_node_learner_refuses_a_wrong_token(tmp_path):
    async with running_server(tmp_path, anonymous=False) as server:
        status, out, err = await node(server.url, env=dict(os.environ,
                                                           LITTLESTONE_TOKEN="wrong"))
    assert status == 1 and out == ""
    assert "littlestone: unauthorized:" in err


async def test_the_node_learner_passes_the_client_cases():
    assert NODE is not None
    results = await run_client_cases([NODE, str(LEARNER), "{url}", "6", "12"])
    assert {r.id: r.detail for r in results if r.verdict != "pass"} == {}
