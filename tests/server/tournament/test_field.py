"""A field of submissions: each loaded once, its games fresh children of it, nothing
carried from one game to the next; a game's crash, fork or attack on its own sandbox
ends that game only; incremental runs; the same ranking as a sandbox per game (on
Ray: tests/test_ray.py).
Needs bubblewrap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from littlestone.cli import main
from littlestone.sandbox import Limits, Sandbox, SandboxPool
from littlestone.server.records.store import Store
from littlestone.server.tournament import load_config, rank, run_tournament
from littlestone.server.tournament.run import rate_entrant
from tests.support import HOSTILE, ROOT

pytestmark = [pytest.mark.skipif(Sandbox.unavailable() is not None,
                                 reason=f"no sandbox here: {Sandbox.unavailable()}"),
              pytest.mark.slow]  # (whole fields of sandboxed submissions, and Ray)

EXAMPLES = ROOT / "examples"


def write_config(folder: Path, name: str, learners: list[str], adversaries: list[str],
                 rounds: int = 20, seeds: int = 2, classes: tuple[str, ...] = (
                     "thresholds:n=31",)) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(
        f"learners = {json.dumps(learners)}\nadversaries = {json.dumps(adversaries)}\n\n"
        f'[tournament]\nname = "{name}"\nrounds = {rounds}\nseeds = {seeds}\n'
        'games = ["mistake-bound"]\n\n'
        + "".join(f'[[classes]]\nspec = "{c}"\n\n' for c in classes)
        + "[limits]\nmove_deadline = 2\ntime_bank = 2\ncpu_seconds = 30\n")
    return path


# the detector's two games in one interpreter of their own: the marks (a class attribute,
# a module global, the environment, a descriptor dup'ed onto fd 60) are that process's
LEAK_TWICE = """
import json
from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.local import play
from tests.support.hostile.leaky import Leaky, found

game = GameSpec(MISTAKE_BOUND, 5, make_class("thresholds:n=7"))
first = play(game, Leaky(), ADVERSARIES.make("random-target"), 0)
second = play(game, Leaky(), ADVERSARIES.make("random-target"), 1)
print(json.dumps([first.status, second.status, found()]))
"""


def test_the_leak_detector_sees_what_one_process_carries_from_game_to_game(tmp_path):
    """The detector is real: two games in one interpreter (as a sandbox per entrant
    without forks would play them) and the second finds the first's marks. (They are
    played in a process of their own, its working folder ``tmp_path``: played in the
    test's worker, the marks went into a process whose other threads (a server's, a
    pool's, left by the tests before) own descriptors too, and the first game once
    ended ``crash:learner:OSError``.)"""
    out = subprocess.run([sys.executable, "-c", LEAK_TWICE], cwd=tmp_path, check=True,
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    first, second, seen = json.loads(out.strip().splitlines()[-1])
    assert first == "complete"
    assert second == "crash:learner:RuntimeError"
    assert {"class attribute", "module global", "file in /tmp", "environment",
            "open descriptor"} <= set(seen), seen
    assert not os.environ.get("LEAKY_MARK")  # (nothing of it in the test's own process)


def test_a_loaded_submission_carries_nothing_from_one_game_to_the_next(tmp_path, capsys):
    """Six games of a learner that marks its process, its package, its /tmp, its
    environment and its descriptors after its first move and raises when it finds a
    mark: loaded once, every game complete."""
    config = write_config(tmp_path, "leaks", [f"{HOSTILE}/leaky.py:Leaky"],
                          ["random-target", "shattered-tree"], seeds=3)
    assert main(["tournament", str(config), "--data", str(tmp_path / "d"), "--workers", "1",
                 "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    rows = Store(tmp_path / "d").tournament_games("leaks")
    assert len(rows) == 6 and all(r["status"] == "complete" for r in rows), rows
    assert board["replayed"]["sandboxes_loaded"] == 1  # the one learner, loaded once


def test_random_state_and_descriptors_are_fresh_in_each_run(tmp_path):
    """Each run is a fresh child of the fork server: its own random draws (reseeded),
    no descriptor of the fork server's, /tmp empty; a run that leaves a System V
    segment (which no wipe can take out of the sandbox's IPC namespace) gets its
    sandbox loaded again."""
    spy = tmp_path / "spy.py"
    spy.write_text(
        "import json, os, random, sys, ctypes\nimport numpy\n"
        "print('SPY ' + json.dumps({'random': random.random(), "
        "'numpy': float(numpy.random.random()), 'fds': sorted(os.listdir('/proc/self/fd')), "
        "'tmp': sorted(os.listdir('/tmp')), 'pid': os.getpid()}), flush=True)\n"
        "open('/tmp/left', 'w').write('x')\nos.mkdir('/tmp/dir')\n"
        "if os.environ.get('X') is None and len(sys.argv) > 0 and "
        "os.path.exists('/submission/spy.py') and random.random() < 2:\n"
        "    pass\n"
        "from littlestone.learners.halving import Halving as X\n")
    sandbox = Sandbox(Limits())
    request = json.dumps({"role": "learner", "spec": f"{sandbox.inside(spy)}:X",
                          "games": []}).encode()
    pool = SandboxPool(sandbox, None, 2)
    seen = []
    try:
        for _ in range(3):
            with pool.lease("learner:spy", spy) as loaded:
                run = loaded.run(["probe"], 60, request)
            line = next(x for x in run.out.splitlines() if x.startswith("SPY "))
            seen.append(json.loads(line.removeprefix("SPY ")))
        assert pool.loads == 1
        assert len({s["random"] for s in seen}) == 3 and len({s["numpy"] for s in seen}) == 3
        # the last run's file and folder: gone (what is left is the sandbox's own: the
        # folders above its binds, when the checkout is below /tmp)
        assert all(s["tmp"] == seen[0]["tmp"] for s in seen)
        assert not {"left", "dir"} & set(seen[0]["tmp"]), seen[0]["tmp"]
        assert all(s["fds"] == seen[0]["fds"] for s in seen)
        # (0, 1, 2 and the one listing /proc/self/fd; no pipe of the fork server's)
        assert len(seen[0]["fds"]) <= 4, seen[0]["fds"]
        ipc = tmp_path / "ipc.py"
        ipc.write_text((HOSTILE / "leaky.py").read_text() + "\nmark(True)\nX = Leaky\n")
        request = json.dumps({"role": "learner", "spec": f"{sandbox.inside(ipc)}:X",
                              "games": []}).encode()
        for _ in range(2):
            with pool.lease("learner:ipc", ipc) as loaded:
                assert loaded.run(["probe"], 60, request).code == 0
        assert pool.loads == 3  # the segment's sandbox was loaded again for the 2nd run
    finally:
        pool.close()


def test_a_crash_a_fork_or_a_killed_sandbox_ends_that_game_only(tmp_path, capsys):
    """Each hostile learner loses every game of its own, and the field goes on; a
    learner that forks is killed in each game but its sandbox stays loaded; one that
    kills its own fork server costs a load a game, not a stall."""
    hostile = {"raises": f"{HOSTILE}/raises.py:RaisesAtRound3",
               "forks": f"{HOSTILE}/forks.py:Forks",
               "kills": f"{HOSTILE}/kills_its_sandbox.py:KillsItsSandbox",
               "chatty": f"{HOSTILE}/chatty.py:Chatty"}
    config = write_config(tmp_path, "crashes", list(hostile.values()),
                          [f"{EXAMPLES}/minimal_adversary.py:Contrarian", "random-target"],
                          seeds=2)
    assert main(["tournament", str(config), "--data", str(tmp_path / "d"), "--workers", "1",
                 "--json"]) == 1  # (files of the field ended games by their own fault)
    board = json.loads(capsys.readouterr().out)
    rows = Store(tmp_path / "d").tournament_games("crashes")
    assert len(rows) == 4 * 2 * 2
    by: dict[str, list[dict]] = {}
    for row in rows:
        by.setdefault(row["learner"], []).append(row)
    assert all(r["status"] == "complete" for r in by[hostile["chatty"]])
    assert all(r["status"] == "disconnected:learner" for r in by[hostile["raises"]])
    assert all("boom at round 3" in r["message"] for r in by[hostile["raises"]])
    assert all(r["status"] in ("forked:learner", "disconnected:learner")
               and "started other processes" in r["message"] for r in by[hostile["forks"]])
    for row in by[hostile["kills"]]:
        assert row["status"] in ("disconnected:learner", "stalled:learner"), row
        assert "killed its own sandbox" in row["message"], row
    # 3 learners loaded once each, the adversary once, the killer again after each game
    assert board["replayed"]["sandboxes_loaded"] == 4 + 4


def test_an_incremental_run_replays_only_what_changed(tmp_path, capsys):
    """A changed file re-plays its own games only (the others keep their games), an
    unchanged run plays nothing, a removed entrant's games are forgotten and an added
    one's played; each run says what it plays and why; the ranking is what is stored."""
    source = (EXAMPLES / "minimal_learner.py").read_text()
    (tmp_path / "alice.py").write_text(source)
    (tmp_path / "carol.py").write_text((EXAMPLES / "minimal_adversary.py").read_text())
    config = write_config(tmp_path, "inc", ["alice.py:MajorityVote", "halving"],
                          ["random-target", "carol.py:Contrarian"], rounds=10, seeds=2)
    data = tmp_path / "data"
    args = ["tournament", str(config), "--data", str(data), "--workers", "1", "--json"]

    def run() -> tuple[dict, str, dict[str, str | None]]:
        assert main(args) == 0
        out, err = capsys.readouterr()
        ids = {f"{r['learner']}|{r['adversary']}|{r['seed']}": r["game_id"]
               for r in Store(data).tournament_games("inc")}
        return json.loads(out), err, ids

    board, err, first = run()
    assert len(first) == 8 and "plays 8 games" in err
    (tmp_path / "alice.py").write_text(source + "\n# a better version\n")
    board, err, second = run()
    assert "plays 4 games (4 file changed: alice.py:MajorityVote)" in err, err
    assert "keeps 4 stored, forgets 4 (4 superseded)" in err, err
    changed = {k for k in second if k.startswith("alice.py")}
    assert len(changed) == 4
    assert all(second[k] == first[k] for k in second if k not in changed)
    assert all(second[k] != first[k] for k in changed)
    assert board["replayed"]["played"] == 4
    _, err, third = run()
    assert "plays 0 games" in err and third == second
    config.write_text(config.read_text().replace('"halving"', '"soa"'))
    board, err, fourth = run()
    assert "plays 4 games (4 new: soa)" in err, err
    assert "forgets 4 (4 no longer entered: halving)" in err, err
    assert {r["learner"] for r in board["learners"]} == {"alice.py:MajorityVote", "soa"}
    assert len(fourth) == 8
    rows = Store(data).tournament_games("inc")
    assert rank("inc", rows, []).learners == board["learners"]
    # one more entrant, rated against the stored field (the config does not name it)
    rated = rate_entrant(load_config(config), data, "consistent", "learner", 1,
                         progress=False)
    assert rated.replayed["played"] == 4 and len(rated.games) == 12
    assert "consistent" in {r["learner"] for r in rated.learners}


def test_the_same_ranking_as_a_sandbox_per_game(tmp_path):
    """Deterministic submissions against deterministic opponents play the same games
    whatever the secret key: loaded once or a sandbox per game, every result and the
    ranking are the same."""
    (tmp_path / "halver.py").write_text(
        "from littlestone.learners.halving import Halving\n\n\n"
        "class Halver(Halving):\n    \"\"\"Halving, submitted.\"\"\"\n")
    (tmp_path / "tree.py").write_text(
        "from littlestone.adversaries.shattered_tree import ShatteredTree\n\n\n"
        "class Tree(ShatteredTree):\n    \"\"\"The shattered tree, submitted.\"\"\"\n")
    config = load_config(write_config(
        tmp_path, "same", ["halver.py:Halver", f"{EXAMPLES}/minimal_learner.py:MajorityVote",
                           "soa"],
        ["tree.py:Tree", "shattered-tree"], seeds=1, classes=("thresholds:n=31",)))
    reports = {fresh: run_tournament(config, tmp_path / str(fresh), 2, progress=False,
                                     fresh_processes=fresh) for fresh in (False, True)}
    results = {fresh: sorted((g["learner"], g["adversary"], g["class"], g["seed"], g["status"],
                              g["result"]["mistakes"]) for g in report.games)
               for fresh, report in reports.items()}
    assert len(results[False]) == 3 * 2 and results[False] == results[True]
    assert reports[False].learners == reports[True].learners
    assert reports[False].adversaries == reports[True].adversaries
    assert reports[False].replayed["sandboxes_loaded"] < reports[True].replayed[
        "sandboxes_loaded"]


def test_a_small_class_field_is_refereed_logged_and_verifiable(tmp_path):
    """The field benchmark's class, small (benchmarks/field.py; the whole field is too
    long for the tests): students whose learners fork, crash and think slowly and whose
    adversaries fork, each game refereed by the server and logged, every log verified
    against the data folder's anchors."""
    from benchmarks.field import make_field

    config = make_field(tmp_path, 4, first=4, seeds=1, rounds=60, builtins=False,
                        classes=("thresholds:n=31",))
    report = run_tournament(load_config(config), tmp_path / "data", 2, progress=False)
    assert len(report.games) == 4 * 4
    assert report.replayed["sandboxes_loaded"] >= 8
    assert all(g["game_id"] for g in report.games), report.games
    for game in report.games:
        assert game["status"].split(":")[0] in ("complete", "disconnected", "forked"), game
        assert main(["replay", game["game_id"], "--data", str(tmp_path / "data"),
                     "--verify"]) == 0
    assert {r["learner"] for r in report.learners} == {g["learner"] for g in report.games}


def test_a_local_worker_answers_and_may_start_processes(tmp_path):
    """A local worker is a child of the hosts' fork server, and not a daemon: a game of
    its arena may host a slow built-in agent in a process of its own, which a daemon
    may not start ("daemonic processes are not allowed to have children")."""
    from littlestone.server.tournament.field import LocalWorker

    config = load_config(write_config(tmp_path, "w", ["halving"], ["random-target"]))
    worker = LocalWorker(config, tmp_path / "data", unsafe=False, capacity=4)
    try:
        assert worker.process.daemon is False
        assert worker.probe([]) == {}  # (it answers, and says it is done)
    finally:
        worker.close()
    assert worker.conn.closed
