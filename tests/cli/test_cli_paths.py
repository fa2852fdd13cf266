"""Every path a user takes on the command line, run as a user runs it: the installed
command in a subprocess, from a folder other than the repository. Bad input is one line
on stderr (``littlestone: error: COMMAND: ...``, never a doubled prefix) and exit status
2; what used to hang answers at once."""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from littlestone.cli import main

PLAY = ["play", "--learner", "halving", "--adversary", "random-target", "--class",
        "thresholds:n=7", "--rounds", "5"]


def command(argv: list[str], cwd: Path, timeout: float = 60, **extra: str
            ) -> subprocess.CompletedProcess[str]:
    """``python -m littlestone ARGV`` in ``cwd`` (not the repository), with ``extra``
    environment variables."""
    env = {k: v for k, v in os.environ.items() if k != "LITTLESTONE_DEBUG"} | extra
    return subprocess.run([sys.executable, "-m", "littlestone", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)


def assert_usage_error(run: subprocess.CompletedProcess[str], fragment: str) -> None:
    """One line on stderr, exit 2, the fragment named, one prefix, nothing on stdout."""
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2, (run.args, run.returncode, run.stderr)
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("littlestone: error: "), lines[0]
    assert "error: littlestone" not in lines[0]  # no doubled prefix
    assert fragment in lines[0], (fragment, lines[0])
    assert run.stdout == ""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A working folder away from the repository, a data folder with one game, a corrupt
    index, a file where a folder should be."""
    cwd = tmp_path_factory.mktemp("elsewhere")
    assert not (cwd / "pyproject.toml").exists()
    data = cwd / "data"
    assert main([*PLAY, "--data", str(data), "--json"]) == 0
    corrupt = cwd / "corrupt"
    corrupt.mkdir()
    (corrupt / "littlestone.db").write_bytes(b"this is not a database, not at all" * 40)
    (cwd / "afile").write_text("x")
    toml = cwd / "t.toml"
    toml.write_text('learners = ["halving"]\nadversaries = ["random-target"]\n'
                    '[tournament]\nname = "t"\nrounds = 5\nseeds = 1\n'
                    '[[classes]]\nspec = "thresholds:n=7"\n')
    game_id = next(iter((data / "games").iterdir())).stem
    return {"cwd": cwd, "data": data, "corrupt": corrupt, "id": game_id, "toml": toml}


BAD = {  # name: (argv, the fragment its one line names)
    "rounds too large": ([*PLAY[:-1], "99999999999999999999"], "signed 64-bit"),
    "seed too large": ([*PLAY, "--seed", "99999999999999999999999999"], "signed 64-bit"),
    "data is a file": ([*PLAY, "--data", "{cwd}/afile"], "not a folder"),
    "data under /proc": ([*PLAY, "--data", "/proc/nope"], "as a data folder"),
    "plot not an image": (["replay", "{id}", "--data", "{data}", "--plot", "x.txt"],
                          "png, svg, pdf"),
    "plot folder missing": (["replay", "{id}", "--data", "{data}", "--plot",
                             "{cwd}/no/dir/p.png"], "no such folder"),
    "tree folder missing": (["ldim", "--class", "thresholds:n=4", "--tree",
                             "{cwd}/no/dir/t.graphml"], "no such folder"),
    "port too large": (["serve", "--port", "99999"], "not a port"),
    "port negative": (["serve", "--port", "-1"], "not a port"),
    "corrupt index: games": (["games", "--data", "{corrupt}"], "not a usable littlestone index"),
    "corrupt index: play": ([*PLAY, "--data", "{corrupt}"], "not a usable littlestone index"),
    "corrupt index: replay": (["replay", "nosuch", "--data", "{corrupt}"],
                              "not a usable littlestone index"),
    "corrupt index: token": (["token", "add", "amy", "--data", "{corrupt}"],
                             "not a usable littlestone index"),
    "corrupt index: tournament": (["tournament", "{cwd}/t.toml", "--data", "{corrupt}"],
                                  "not a usable littlestone index"),
    "page past the end": (["replay", "{id}", "--data", "{data}", "--page", "99999"],
                          "1 page(s)"),
    "verify and against": (["replay", "{id}", "--data", "{data}", "--verify", "--against",
                            "soa"], "not allowed with argument --verify"),
    "ray unreachable": (["tournament", "{cwd}/t.toml", "--data", "{cwd}/r", "--ray",
                         "127.0.0.1:1"], "no Ray cluster answers"),
    "misspelt parameter": (["ldim", "--class", "thresholds:m=3"], "(given: m=3)"),
}


@pytest.mark.slow
def test_bad_input_from_another_folder_is_one_line_and_exit_2(world):
    cases = {name: [a.format(**world) for a in argv] for name, (argv, _) in BAD.items()}
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        runs = dict(zip(cases, pool.map(lambda argv: command(argv, world["cwd"]),
                                        cases.values()), strict=True))
    for name, run in runs.items():
        assert_usage_error(run, BAD[name][1])
    assert not (world["cwd"] / "no").exists()  # --tree and --plot create no folder
    assert not (world["cwd"] / "littlestone-data").exists()


@pytest.mark.slow
def test_replay_by_id_from_another_folder_and_an_empty_filter(world, tmp_path):
    verified = command(["replay", world["id"], "--data", str(world["data"]), "--verify"],
                       tmp_path)
    assert verified.returncode == 0 and verified.stdout.startswith("verified"), verified.stderr
    empty = command(["games", "--data", str(world["data"]), "--status", "bogus"], tmp_path)
    assert empty.returncode == 0
    assert "no games in" in empty.stderr and "statuses there: complete" in empty.stderr


@pytest.mark.slow
def test_a_plain_server_refuses_a_tournament_entry_and_plain_tls_says_why(tmp_path):
    assert main(["token", "add", "dana", "--data", str(tmp_path / "srv")]) == 0
    server = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--port", "0",
                               "--anonymous", "--data", str(tmp_path / "srv")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=tmp_path)
    try:
        url = server.stdout.readline().split()[3]
        token = _last_token(tmp_path / "srv")
        entry = command(["connect", url, "--learner", "halving", "--tournament", "nosuch"],
                        tmp_path, timeout=30, LITTLESTONE_TOKEN=token)
        assert_usage_error(entry, "no tournament 'nosuch' runs on this server")
        tls = command(["connect", url.replace("ws://", "wss://"), "--learner", "halving",
                       "--vs", "random-target", "--class", "thresholds:n=7", "--rounds", "5"],
                      tmp_path, timeout=30)
        assert_usage_error(tls, "TLS handshake failed")
        negative = command(["connect", url, "--learner", "halving", "--vs", "random-target",
                            "--class", "thresholds:n=7", "--rounds", "5", "--seed", "-1",
                            "--json"], tmp_path, timeout=30)
        assert negative.returncode == 0, negative.stderr
        assert json.loads(negative.stdout)["seed"] == -1
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)


def _last_token(data: Path) -> str:
    from littlestone.server.records.store import Store

    return Store(data).add_token("erin")


@pytest.mark.slow
def test_a_data_folder_is_movable_and_copyable(world, tmp_path):
    """The index keeps log paths relative to the data folder: a copy verifies against its
    own logs (a log corrupted in the copy fails there, the original still verifies), and
    a moved folder verifies from any working directory."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(world["data"], copy)
    log = copy / "games" / f"{world['id']}.lslog"
    raw = bytearray(log.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    log.write_bytes(bytes(raw))
    damaged = command(["replay", world["id"], "--data", str(copy), "--verify"], tmp_path)
    assert damaged.returncode == 1 and "corrupted log" in damaged.stderr, damaged
    original = command(["replay", world["id"], "--data", str(world["data"]), "--verify"],
                       tmp_path)
    assert original.returncode == 0 and original.stdout.startswith("verified")
    moved = tmp_path / "moved"
    shutil.copytree(world["data"], tmp_path / "staging")
    (tmp_path / "staging").rename(moved)
    elsewhere = tmp_path / "deeper" / "still"
    elsewhere.mkdir(parents=True)
    again = command(["replay", world["id"], "--data", "../../moved", "--verify"], elsewhere)
    assert again.returncode == 0 and again.stdout.startswith("verified"), again.stderr


def test_an_older_index_is_migrated_to_relative_log_paths(tmp_path):
    """An index that kept the path given at play time (cwd-relative or absolute) is
    rewritten once, on open, to paths relative to its data folder."""
    import sqlite3

    from littlestone.server.records.store import Store

    data = tmp_path / "data"
    assert main([*PLAY, "--data", str(data)]) == 0
    assert main([*PLAY, "--data", str(data), "--seed", "2"]) == 0
    db = sqlite3.connect(data / "littlestone.db")
    ids = [row[0] for row in db.execute("SELECT game_id FROM games ORDER BY game_id")]
    assert [row[0] for row in db.execute("SELECT log FROM games")] == [
        f"games/{i}.lslog" for i in ids]
    old = [f"littlestone-data/games/{ids[0]}.lslog", f"{data.resolve()}/games/{ids[1]}.lslog"]
    for game_id, log in zip(ids, old, strict=True):
        db.execute("UPDATE games SET log = ? WHERE game_id = ?", (log, game_id))
    db.execute("DROP TABLE migrations")  # as an index written before it
    db.commit()
    db.close()
    store = Store(data)
    assert [Path(store.game(i)["log"]) for i in ids] == [data / "games" / f"{i}.lslog"
                                                         for i in ids]
    store.close()
    db = sqlite3.connect(data / "littlestone.db")
    assert sorted(row[0] for row in db.execute("SELECT log FROM games")) == sorted(
        f"games/{i}.lslog" for i in ids)
    assert sorted(db.execute("SELECT name FROM migrations").fetchall()) == [
        ("forfeits-not-credited",), ("recorded-pairings",),
        ("relative-log-paths",)]  # (each data migration, once)


STUDENT = '''from littlestone.learners import Learner
import random


class Crashy(Learner):
    games = frozenset({"mistake-bound"})

    def predict(self, x):
        return 1 / 0

    def update(self, x, y):
        pass


class Unseeded(Learner):
    games = frozenset({"mistake-bound"})

    def predict(self, x):
        return float(random.random() < 0.5)

    def update(self, x, y):
        pass


class NotAnAgent:
    pass
'''


@pytest.mark.slow
def test_check_speaks_to_a_student(tmp_path):
    """Their file, line and exception; a crash reported once (the checks that need a
    whole game say they were not made); which failures a tournament would score."""
    (tmp_path / "mine.py").write_text(STUDENT)
    sandbox = [] if shutil.which("bwrap") else ["--unsafe-no-sandbox"]
    crashy = command(["check", "mine.py:Crashy", *sandbox], tmp_path)
    assert crashy.returncode == 1, crashy.stderr
    out = crashy.stdout
    assert "ZeroDivisionError: division by zero at " in out and "mine.py:9 in predict" in out
    assert "FAIL  plays a game" in out and "[tournament: " in out
    assert "skip  inputs not mutated: not checked" in out and "FAIL  inputs" not in out
    assert "docstring example" in out and "[advice: a tournament does not score this]" in out
    assert "not ready: a tournament would score these against it: plays a game" in out
    unseeded = command(["check", "mine.py:Unseeded", *sandbox, "--json"], tmp_path)
    report = json.loads(unseeded.stdout)
    rows = {row["check"]: row for row in report["checks"]}
    assert report["ready"] and not report["passed"] and unseeded.returncode == 1
    assert not rows["seeding"]["ok"] and rows["seeding"]["in_tournament"] == ""
    assert "Unseeded" in rows["seeding"]["message"] and "from round" in rows["seeding"]["message"]
    assert "thresholds:n=32" in rows["seeding"]["message"]  # the game it was checked on
    not_one = command(["check", "mine.py:NotAnAgent", *sandbox], tmp_path)
    assert_usage_error(not_one, "is neither a learner nor an adversary")
    assert "check: check:" not in not_one.stderr


@pytest.mark.slow
def test_play_names_the_file_and_line_of_a_crash(tmp_path):
    (tmp_path / "mine.py").write_text(STUDENT)
    played = command(["play", "--learner", "mine.py:Crashy", "--adversary", "random-target",
                      "--class", "thresholds:n=7", "--rounds", "5", "--data", "d", "--json"],
                     tmp_path)
    out = json.loads(played.stdout)
    assert out["status"] == "crash:learner:ZeroDivisionError"
    assert out["message"].endswith("at mine.py:9 in predict")


LONG = "hedge:eta=0.12345678912345,schedule=fixed"  # 41 characters: was cut at 22 or 40


@pytest.mark.slow
def test_a_tournament_in_a_log_file_names_in_full_and_the_announcement_alone(tmp_path):
    """stderr not a terminal: no progress-bar redraws; the remote agents' address on a
    line of its own; names never cut in the leaderboard."""
    toml = tmp_path / "t.toml"
    toml.write_text(f'learners = ["{LONG}", "remote:zed"]\nadversaries = ["cover-flip"]\n'
                    '[tournament]\nname = "t"\nrounds = 20\nseeds = 2\ngames = ["experts"]\n'
                    'experts = 3\n[limits]\nremote_wait = 1\n')
    run = command(["tournament", str(toml), "--data", str(tmp_path / "d"), "--workers", "1"],
                  tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "\r" not in run.stderr
    assert any(line.startswith("littlestone: tournament t: remote agents (zed) connect to ")
               for line in run.stderr.splitlines()), run.stderr
    assert f"  {LONG} " in run.stdout
    games = command(["games", "--data", str(tmp_path / "d")], tmp_path)
    assert f" {LONG} " in games.stdout


@pytest.mark.slow
def test_matrix_csv_files_as_people_write_them(tmp_path):
    (tmp_path / "pandas.csv").write_text(",0,1,2\n0,1,0,0\n1,0,1,0\n2,0,0,1\n")
    (tmp_path / "semi.csv").write_text("1;0;0\n0;1;0\n0;0;1\n")
    (tmp_path / "tabs.csv").write_text("1\t0\t0\n0\t1\t0\n0\t0\t1\n")
    (tmp_path / "empty.csv").write_text("")
    for name in ("pandas", "semi", "tabs"):
        run = command(["ldim", "--class", f"matrix:path={name}.csv", "--json"], tmp_path)
        assert run.returncode == 0 and run.stderr == "", (name, run.stderr)
        assert json.loads(run.stdout)["size"] == 3
    empty = command(["ldim", "--class", "matrix:path=empty.csv"], tmp_path)
    assert_usage_error(empty, "the file is empty")  # one line: no numpy warning


@pytest.mark.slow
def test_a_tree_of_a_smaller_interval_class_is_a_tree_of_a_larger_one(tmp_path):
    assert command(["ldim", "--class", "intervals:n=12", "--tree", "t.graphml"],
                   tmp_path).returncode == 0
    run = command(["play", "--learner", "soa", "--adversary", "shattered-tree:tree=t.graphml",
                   "--class", "intervals:n=13", "--rounds", "10", "--data", "d", "--json"],
                  tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["status"] == "complete"
    wrong = command(["play", "--learner", "soa", "--adversary", "shattered-tree:tree=t.graphml",
                     "--class", "thresholds:n=5", "--rounds", "10", "--data", "d"], tmp_path)
    assert_usage_error(wrong, "is not a shattered tree of thresholds:n=5")


def test_the_suite_plays_in_a_folder_of_its_own():
    """make test writes nothing into the user's ./littlestone-data: commands without
    --data (in process and in subprocesses) use $LITTLESTONE_DATA, set by conftest."""
    from littlestone.server.records.folder import DATA_VARIABLE, DEFAULT_DATA, default_data

    assert os.environ[DATA_VARIABLE] == default_data()
    assert Path(default_data()).is_absolute() and Path(default_data()).name != DEFAULT_DATA
    assert main([*PLAY, "--json"]) == 0
    assert any((Path(default_data()) / "games").iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "zero", "huge", "binary", "directory"])
def test_a_token_file_or_a_tournament_file_that_is_no_such_file_is_one_line(tmp_path, kind):
    """A careless path: a FIFO would block the read forever, /dev/zero never end (the
    process grew until it was killed), a huge or binary file is no token."""
    for name in ("token", "week.toml"):
        path = tmp_path / name
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "zero":
            path.symlink_to("/dev/zero")
        elif kind == "huge":
            path.write_bytes(b"ls_" + b"a" * (2 << 20))
        elif kind == "binary":
            path.write_bytes(b"\xff\xfe\x00token\n")
        else:
            path.mkdir()
    run = command(["connect", "ws://127.0.0.1:9", "--learner", "halving", "--class",
                   "thresholds:n=7", "--vs", "random-target", "--token-file", "token"],
                  tmp_path, timeout=30)
    assert_usage_error(run, "--token-file token")
    run = command(["tournament", "week.toml"], tmp_path, timeout=30)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "week.toml" in run.stderr and "Traceback" not in run.stderr


def test_a_token_on_standard_input_that_never_ends_is_one_line(tmp_path):
    with open("/dev/zero", "rb") as zero:
        run = subprocess.run([sys.executable, "-m", "littlestone", "connect",
                              "ws://127.0.0.1:9", "--learner", "halving", "--class",
                              "thresholds:n=7", "--vs", "random-target", "--token-file", "-"],
                             cwd=tmp_path, stdin=zero, capture_output=True, text=True,
                             timeout=30, check=False)
    assert_usage_error(run, "more than 4096 bytes")


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["connect", "wss://127.0.0.1:9", "--learner", "halving", "--class", "thresholds:n=7",
     "--vs", "random-target", "--rounds", "5", "--tls-ca", "fifo"],
    ["serve", "--port", "0", "--data", "data", "--tls-cert", "fifo"],
    ["serve", "--port", "0", "--data", "data", "--tls-cert", "cert.pem", "--tls-key", "fifo"],
])
def test_a_tls_file_that_is_a_fifo_is_one_line(tmp_path, argv):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "cert.pem").write_text("not a certificate\n")
    assert_usage_error(command(argv, tmp_path, timeout=30), "fifo is not a regular file")
