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

from littlestone.server.records.logs import read_log
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition import load_competition, rate_version
from tests.server.tournament.test_rating_lanes import (
    each_pairing_recorded_once,
    slowish_version,
    until_its_game_runs,
)


@pytest.mark.slow
def test_sigterm_mid_rating_ends_the_games_in_play_interrupted_with_their_footers(
        tmp_path: Path) -> None:
    version = slowish_version(tmp_path)
    data = version.data
    command = [sys.executable, "-m", "littlestone", "competition", "rate",
               str(version.config), "--data", str(data), "--version", str(version.ident)]
    rating = subprocess.Popen([*command, *(["--unsafe-no-sandbox"] if version.unsafe else [])],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        until_its_game_runs(data, rating)
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
    rate_version(load_competition(version.config), data, version.ident, unsafe=version.unsafe)
    store = each_pairing_recorded_once(data)
    assert len(store.games(limit=100)) == len(games) + len(stopped)
