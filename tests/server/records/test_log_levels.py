"""Log levels: ``full`` keeps every round, ``compact`` the seeds and the result (replay
re-simulates the rounds, and they are the full log's), ``none`` no log; ``auto`` keeps
large games compact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.server.records.logged import play_logged
from littlestone.server.records.logs import (
    AUTO_FULL_BYTES,
    LogWriter,
    estimated_bytes,
    log_level,
    read_log,
)
from littlestone.server.records.replay import against, export
from littlestone.server.records.resimulation import filled, is_compact
from littlestone.server.records.store import Store
from littlestone.server.records.verify import verify
from tests.support.servers import running_server

GAMES = [
    (GameSpec(MISTAKE_BOUND, 300, make_class("thresholds:n=63")), "halving", "random-target"),
    (GameSpec(MISTAKE_BOUND, 12, make_class("thresholds:n=63")), "halving", "shattered-tree"),
    (GameSpec(MISTAKE_BOUND, 200, make_class("halfspaces:d=5,margin=0.2")), "perceptron",
     "random-target"),
    (GameSpec(EXPERTS, 200, make_class("thresholds:n=31")), "hedge", "noisy:rate=0.2"),
    (GameSpec(EXPERTS, 100, experts=5), "hedge", "cover-flip"),
]


def exported(log) -> str:
    import io

    out = io.StringIO()
    export(filled(log), "jsonl", out)
    return out.getvalue()


@pytest.mark.parametrize(("game", "learner", "adversary"), GAMES)
def test_a_compact_log_replays_as_the_full_one(tmp_path, game, learner, adversary):
    logs = {}
    for level in ("full", "compact"):
        done = play_logged(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), 5,
                           tmp_path / level, level=level)
        assert done.log is not None
        logs[level] = read_log(done.log)
        report = verify(logs[level], tmp_path / level, done.game_id)
        assert report.ok and report.anchored, report.message
    full, compact = logs["full"], logs["compact"]
    assert compact.n_rounds == 0 and compact.size < min(4096, full.size)
    assert is_compact(compact) and not is_compact(full)
    assert exported(compact) == exported(full)
    assert compact.footer["result"] == full.footer["result"]
    mine, theirs = against(compact, learner)
    assert (mine.mistakes, theirs.mistakes) == tuple(
        r.mistakes for r in against(full, learner))


def test_a_compact_log_whose_result_was_rewritten_fails_verify(tmp_path):
    from littlestone.server.records import logs as logs_module

    game, learner, adversary = GAMES[0]
    done = play_logged(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), 5,
                       tmp_path, level="compact")
    log = read_log(done.log)
    forged = tmp_path / "forged.lslog"
    writer = LogWriter(forged, {k: v for k, v in log.header.items()
                                if k not in ("kind", "format", "buffers", "log_level")},
                       level="compact")
    footer = {k: v for k, v in log.footer.items() if k not in ("kind", "buffers")}
    footer["result"] = dict(footer["result"], mistakes=0)
    writer.close(footer)
    assert logs_module.read_log(forged).footer["result"]["mistakes"] == 0
    report = verify(read_log(forged), tmp_path, done.game_id)
    assert not report.ok and not report.records_ok and "mistakes" in report.message


@pytest.mark.slow
def test_none_keeps_the_index_row_only(tmp_path):
    game, learner, adversary = GAMES[0]
    done = play_logged(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), 5,
                       tmp_path, level="none")
    assert done.log is None and not (tmp_path / "games").exists()
    row = Store(tmp_path).game(done.game_id)
    assert row["status"] == "complete" and row["log"] is None and row["chain_sha256"] is None
    run = subprocess.run([sys.executable, "-m", "littlestone", "replay", done.game_id,
                          "--data", str(tmp_path)], capture_output=True, text=True,
                         check=False)
    assert run.returncode == 2 and "log level none" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_auto_keeps_large_games_compact():
    small = GameSpec(MISTAKE_BOUND, 1000, make_class("thresholds:n=7"))
    large = GameSpec(MISTAKE_BOUND, 200_000, make_class("halfspaces:d=100"))
    experts = GameSpec(EXPERTS, 100_000, experts=1000)
    assert log_level("auto", small) == "full"
    assert estimated_bytes(large) > AUTO_FULL_BYTES and log_level("auto", large) == "compact"
    assert log_level("auto", experts) == "compact"
    assert log_level("none", large) == "none"
    # the estimate is about the real size
    half = GameSpec(MISTAKE_BOUND, 2000, make_class("halfspaces:d=100"))
    done = play_logged(half, LEARNERS.make("perceptron"), ADVERSARIES.make("random-target"), 1,
                       Path(__import__("tempfile").mkdtemp()), level="full")
    assert 0.8 < done.log.stat().st_size / estimated_bytes(half) < 1.25


def test_the_play_command_takes_a_log_level(tmp_path, capsys):
    from littlestone.cli import main

    common = ["play", "--learner", "halving", "--adversary", "random-target", "--class",
              "thresholds:n=15", "--rounds", "50", "--json", "--data", str(tmp_path)]
    assert main([*common, "--log", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["log"] is None
    assert main([*common, "--log", "compact"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert main(["replay", out["game_id"], "--data", str(tmp_path), "--page", "3",
                 "--page-size", "10"]) == 0
    shown = capsys.readouterr().out
    assert "log level          compact" in shown and "(rounds 21-30 of 50" in shown


async def test_a_server_with_log_level_none_writes_no_log(tmp_path):
    game = GameSpec(MISTAKE_BOUND, 20, make_class("thresholds:n=15"))
    async with running_server(tmp_path, log_level="none") as server:
        out = await play_remote(server.url, LEARNERS.make("halving"), "random-target", game,
                                seed=1, token=server.token)
        row = Store(tmp_path).game(out["game_id"])
    assert out["status"] == "complete" and row["log"] is None
    assert not (tmp_path / "games").exists()
