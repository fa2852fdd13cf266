"""The command-line contract: JSON keys, one-line errors with exit status 2."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest

from littlestone.cli import main
from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.ldim import verify_shattered


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_ldim_json(capsys):
    code, out, _ = run(capsys, "ldim", "--class", "thresholds:n=1023", "--json")
    assert code == 0
    data = last_json(out)
    assert {"class", "size", "domain_size", "ldim", "seconds"} <= set(data)
    assert (data["class"], data["size"], data["domain_size"], data["ldim"]) == (
        "thresholds:n=1023", 1024, 1023, 10)
    assert data["seconds"] >= 0


def test_ldim_table_and_tree(capsys, tmp_path):
    path = tmp_path / "tree.graphml"
    code, out, _ = run(capsys, "ldim", "--class", "monotone-disjunctions:n=4", "--tree", str(path))
    assert code == 0
    assert "ldim" in out and " 4" in out
    tree = nx.read_graphml(path)
    assert tree.graph["ldim"] == 4
    hclass = make_class("monotone-disjunctions:n=4")
    assert isinstance(hclass, FiniteClass)
    assert verify_shattered(tree, hclass)


@pytest.mark.parametrize("seed", [0, 5])
def test_play_json_mistake_bound(capsys, seed):
    code, out, _ = run(capsys, "play", "--game", "mistake-bound", "--learner", "halving",
                       "--adversary", "random-target", "--class", "thresholds:n=255",
                       "--rounds", "300", "--seed", str(seed), "--json")
    assert code == 0
    data = last_json(out)
    for key in ("game", "learner", "adversary", "class", "rounds", "seed", "status", "mistakes",
                "expected_mistakes", "size", "ldim", "bound", "bound_name"):
        assert key in data, key
    assert data["status"] == "complete" and data["rounds"] == 300 and data["seed"] == seed
    assert data["size"] == 256 and data["ldim"] == 8 and data["bound"] == 8
    assert 0 <= data["mistakes"] <= 8


def test_play_is_reproducible(capsys):
    argv = ["play", "--learner", "perceptron", "--adversary", "random-target", "--class",
            "halfspaces:d=20,margin=0.1", "--rounds", "2000", "--seed", "3", "--json"]
    first = last_json(run(capsys, *argv)[1])
    second = last_json(run(capsys, *argv)[1])
    first.pop("seconds"), second.pop("seconds")
    for key in ("game_id", "log"):  # two games, two logs
        assert first.pop(key) != second.pop(key)
    assert first == second
    assert first["bound"] == 100 and first["mistakes"] <= 100
    assert "size" not in first  # an infinite class


def test_play_json_experts(capsys):
    code, out, _ = run(capsys, "play", "--game", "experts", "--learner", "halving",
                       "--adversary", "random-target", "--class", "singletons:n=16",
                       "--rounds", "100", "--json")
    assert code == 0
    data = last_json(out)
    for key in ("learner_loss", "expected_learner_loss", "best_expert_loss", "regret",
                "expected_regret", "experts"):
        assert key in data, key
    assert data["experts"] == 16 and data["best_expert_loss"] == 0
    assert data["regret"] <= math.log2(16)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["ldim", "--class", "circles:r=2"], "unknown class 'circles'"),
        (["ldim", "--class", "thresholds:n=abc"], "not an integer"),
        (["ldim", "--class", "halfspaces:d=3"], "infinite class"),
        (["ldim", "--class", "matrix:path=/no/such.npy"], "no such file"),
        (["ldim", "--class", "conjunctions:n=14"], "budget"),
        (["ldim"], "required: --class"),
        (["play", "--learner", "halving", "--adversary", "random-target", "--rounds", "5"],
         "needs --class"),
        (["play", "--learner", "nosuch", "--adversary", "random-target", "--class",
          "thresholds:n=4", "--rounds", "5"], "unknown learner 'nosuch'"),
        (["play", "--learner", "halving", "--adversary", "nosuch", "--class",
          "thresholds:n=4", "--rounds", "5"], "unknown adversary 'nosuch'"),
        (["play", "--learner", "halving", "--adversary", "random-target", "--class",
          "halfspaces:d=4", "--rounds", "5"], "cannot play this game"),
        (["play", "--learner", "perceptron:normalize=perhaps", "--adversary", "random-target",
          "--class", "thresholds:n=4", "--rounds", "5"], "true or false"),
        (["play", "--learner", "halving", "--adversary", "random-target", "--class",
          "thresholds:n=4", "--rounds", "-1"], "--rounds"),
        (["play", "--learner", "halving", "--adversary", "random-target", "--class",
          "thresholds:n=4", "--rounds", "ten"], "is not an integer"),
        (["play", "--game", "chess", "--learner", "halving", "--adversary", "random-target",
          "--rounds", "1"], "invalid choice"),
        (["play", "--game", "experts", "--learner", "halving", "--adversary", "random-target",
          "--class", "singletons:n=4", "--experts", "5", "--rounds", "3"], "does not match"),
        (["play", "--learner", "missing.py:Learner", "--adversary", "random-target", "--class",
          "thresholds:n=4", "--rounds", "3"], "does not exist"),
        (["play", "--learner", "halving", "--adversary", "random-target", "--class",
          "thresholds:n=4", "--rounds", "3", "--seed", str(1 << 64)], "signed 64-bit"),
        (["play", "--learner", "halving", "--adversary", "random-target", "--class",
          "thresholds:n=4", "--rounds", "99999999999999999999"], "signed 64-bit"),
        (["serve", "--port", "99999"], "not a port"),
        (["serve", "--port", "-1"], "not a port"),
        (["serve", "--max-games", "0"], "must be >= 1"),
        (["token", "add", ""], "a name is letters"),
        (["ldim", "--class", "k-disjunctions:n=65536,k=65536"], "over the limit"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert fragment in lines[0]
    assert "Traceback" not in err


def test_malformed_matrix_file(capsys, tmp_path):
    bad = tmp_path / "m.csv"
    bad.write_text("0,1,x\n")
    code, _, err = run(capsys, "ldim", "--class", f"matrix:path={bad}")
    assert code == 2 and "cannot read" in err and len(err.strip().splitlines()) == 1
    good = tmp_path / "g.npy"
    np.save(good, np.eye(5, dtype=int))
    code, out, _ = run(capsys, "ldim", "--class", f"matrix:path={good}", "--json")
    assert code == 0 and last_json(out)["ldim"] == 1


def test_listings(capsys):
    code, out, _ = run(capsys, "learners", "--json")
    assert code == 0
    ids = {row["id"] for row in last_json(out)["learners"]}
    assert {"halving", "perceptron"} <= ids
    code, out, _ = run(capsys, "adversaries")
    assert code == 0 and "random-target" in out


def test_help_for_every_command(capsys):
    for command in ("ldim", "play", "learners", "adversaries"):
        with pytest.raises(SystemExit) as info:
            main([command, "--help"])
        assert info.value.code == 0
        assert "usage: littlestone" in capsys.readouterr().out


@pytest.mark.slow
def test_console_script_end_to_end():
    exe = shutil.which("littlestone") or str(__import__("pathlib").Path(sys.executable).parent
                                             / "littlestone")
    ok = subprocess.run([exe, "ldim", "--class", "singletons:n=4", "--json"],
                        capture_output=True, text=True, check=False)
    assert ok.returncode == 0 and json.loads(ok.stdout)["ldim"] == 1
    bad = subprocess.run([exe, "play", "--learner", "halving"], capture_output=True, text=True,
                         check=False)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "Traceback" not in bad.stderr


def test_a_command_imports_only_what_it_uses(tmp_path):
    """The command line imports a sub-command's module when it runs (the suite and every
    sandbox start hundreds of them): ``--version`` and ``learners`` load neither the
    game server nor networkx, which only a shattered tree needs; what a sandbox runs
    (``probe``, ``connect``) loads neither the server nor the tournament."""
    probe = ("import sys\nfrom littlestone.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('networkx', 'littlestone.server.net.server', "
             "'littlestone.server.tournament', 'littlestone.client') if m in sys.modules))")
    request = json.dumps({"role": "learner", "spec": "halving", "games": []})
    for argv, loaded in ((["--version"], []), (["learners", "--json"], []),
                         (["ldim", "--class", "thresholds:n=7", "--tree", "t.xml"],
                          ["networkx"]), (["probe"], []),
                         (["connect", "ws://127.0.0.1:9", "--learner", "halving", "--vs",
                           "x", "--class", "thresholds:n=7", "--rounds", "5"],
                          ["littlestone.client"])):
        run = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True,
                             text=True, timeout=60, cwd=tmp_path, input=request)
        assert run.stdout.strip().splitlines()[-1] == str(loaded), (argv, run.stdout[-300:],
                                                                    run.stderr[-300:])
