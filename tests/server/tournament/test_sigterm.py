"""SIGTERM mid-rating (issue 41): the rating process and its field worker end the games
in play with their footers and rows ``interrupted`` (what a restart marks a game its
process left ``running``), then exit; the restart plays those pairings again, and each
pairing is recorded once. (Before: the in-flight game stayed ``running`` without a
footer.)"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from littlestone.sandbox import Sandbox
from littlestone.server.records.logs import read_log
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition import load_competition, rate_version
from littlestone.server.tournament.run import _key_of as _key
from tests.server.tournament.test_rating_lanes import COMPETITION, SLOWISH, _accepted


@pytest.mark.slow
def test_sigterm_mid_rating_ends_the_games_in_play_interrupted_with_their_footers(
        tmp_path: Path) -> None:
    config_path = tmp_path / "c.toml"
    config_path.write_text(COMPETITION)
    data = tmp_path / "data"
    ident = _accepted(data, "ann", SLOWISH)
    unsafe = Sandbox.unavailable() is not None
    command = [sys.executable, "-m", "littlestone", "competition", "rate", str(config_path),
               "--data", str(data), "--version", str(ident)]
    rating = subprocess.Popen([*command, *(["--unsafe-no-sandbox"] if unsafe else [])],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        store = Store(data)
        deadline = time.monotonic() + 120
        while not any(g["status"] == "running" for g in store.games(limit=10)):
            assert time.monotonic() < deadline, "no game started"
            assert rating.poll() is None
            time.sleep(0.1)
        time.sleep(0.5)  # (a few rounds into it)
        rating.terminate()
        _, said = rating.communicate(timeout=60)
    finally:
        if rating.poll() is None:
            rating.kill()
            rating.wait()
    assert rating.returncode == 143, said
    games = Store(data).games(limit=100)
    assert games and not [g for g in games if g["status"] == "running"]
    stopped = [g for g in games if g["status"] == "interrupted"]
    assert stopped, games
    for game in stopped:  # each ended with its footer, its row anchored
        log = read_log(data / "games" / f"{game['game_id']}.lslog")
        assert log.status == "interrupted"
        assert game["chain_sha256"] == log.chain.hex()
    assert Store(data).tournament_games("week-5") == [] or all(
        r["status"] == "complete" for r in Store(data).tournament_games("week-5"))
    # the restart plays the interrupted pairings again, each recorded once
    rate_version(load_competition(config_path), data, ident, unsafe=unsafe)
    store = Store(data)
    rows = store.tournament_games("week-5")
    assert len(rows) == 2 and {r["status"] for r in rows} == {"complete"}
    recorded = [g["pairing"] for g in store.games(limit=100) if g["pairing"]]
    assert sorted(recorded) == sorted(f"week-5|{_key(r)}" for r in rows)
    assert len(store.games(limit=100)) == len(games) + len(stopped)
