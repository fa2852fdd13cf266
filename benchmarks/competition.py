"""A competition's answers, timed beside their baselines in the same run
(``python -m benchmarks.competition``): the verdict of ``submit`` next to
``littlestone check`` of the same file (what the server's check does, run by hand), and
one version's rating, from its acceptance to its last game stored, next to the same
games played by ``littlestone tournament`` in this process.

Tests never time anything; tests/server/tournament/test_competition.py plays a
competition end to end.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from littlestone.client import submit_file
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.tournament import load_config, run_tournament
from littlestone.server.tournament.competition import Competition, load_competition

FIELD = """learners = ["halving"]
adversaries = ["random-target", "shattered-tree"]

[tournament]
name = "{name}"
rounds = 200
seeds = 3
games = ["mistake-bound"]

[[classes]]
spec = "thresholds:n=63"

[[classes]]
spec = "thresholds:n=15"
"""
COMPETITION = FIELD + """
[competition]
submitted = ["learner"]
"""
LEARNER = '''"""Halving, submitted."""
from littlestone.learners.halving import Halving


class Good(Halving):
    """Halving under another name."""
'''


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="littlestone-bench-competition-"))
    try:
        (folder / "good.py").write_text(LEARNER)
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "littlestone", "check", "good.py:Good"],
                       cwd=folder, check=False, capture_output=True)
        check_s = time.monotonic() - started

        (folder / "t.toml").write_text(FIELD.format(name="baseline") .replace(
            '["halving"]', '["halving", "good.py:Good"]'))
        started = time.monotonic()
        run_tournament(load_config(folder / "t.toml"), folder / "baseline", 1, progress=False)
        tournament_s = time.monotonic() - started

        (folder / "c.toml").write_text(COMPETITION.format(name="bench"))
        data = folder / "data"
        competition = Competition(load_competition(folder / "c.toml"), data)
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()

        async def start() -> GameServer:
            server = GameServer(ServerSettings(port=0, data=data))
            competition.attach(server)
            await server.start()
            return server

        server = asyncio.run_coroutine_threadsafe(start(), loop).result(60)
        token = server.store.add_token("ann")
        started = time.monotonic()
        answer = asyncio.run(submit_file(server.url, "good.py:Good", LEARNER.encode(), token))
        verdict_s = time.monotonic() - started
        accepted = time.monotonic()
        while server.store.submissions("bench")[0]["rating"] != "rated":
            time.sleep(0.05)
        rating_s = time.monotonic() - accepted
        competition.close()
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(60)
        load = os.getloadavg()[0]
        print(f"load average {load:.1f}; verdict {answer['verdict']}")
        print(f"| the verdict of submit | {verdict_s:.1f} s | littlestone check of the "
              f"same file: {check_s:.1f} s | {verdict_s / check_s:.2f}x |")
        print(f"| the first version rated (24 games: its 12 and the built-ins' 12), from "
              f"its acceptance | {rating_s:.1f} s | "
              f"littlestone tournament of the same field in process: {tournament_s:.1f} s "
              f"| {rating_s / tournament_s:.2f}x |")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
