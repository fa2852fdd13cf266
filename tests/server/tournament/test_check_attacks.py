"""Red team of ``littlestone check``: a file that is no Python file, or one that lies,
forges its report or patches the suite in its own process, cannot make check say it
passed. A submission whose probe and check games are children of one loaded sandbox and
that attacks its fork server (kills or stops it, at its load or in a game), forks, or
holds too much memory in the probe must end with an honest FAIL of *plays a game*, whose
message says what happened, never a traceback or a pass (those need bubblewrap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from littlestone.sandbox import Sandbox
from littlestone.server.tournament.preflight import PLAYS
from tests.support.commands import cli, one_line

#: The attacks on the loaded sandbox need bubblewrap; the rest of the file does not.
SANDBOXED = pytest.mark.skipif(Sandbox.unavailable() is not None,
                               reason=f"no sandbox here: {Sandbox.unavailable()}")

LEARNER = '''
class L(Learner):
    """Always 0. >>> L().predict(0)
    0.0
    """
    games = frozenset({"mistake-bound"})
    n = 0
    def reset(self, game, seed):
        pass
    def predict(self, x):
        L.n += 1
        if L.n == 5:
            in_a_game()
        return 0.0
    def update(self, x, y):
        pass
'''

#: What a file does at its load and in a game; only as a child of its fork server (its
#: parent is not the sandbox's init). Its own checks, its probe and its games are all
#: such children: an attack at its load hits its own checks first (OWN says how that
#: reads), and then the refereed games, whose row must say what it did.
HEAD = "import os, signal, time\nfrom littlestone import Learner\nFORKED = os.getppid() != 1\n"
ATTACKS = {
    "kills its fork server at its load": (
        "if FORKED:\n    os.kill(os.getppid(), signal.SIGKILL)\ndef in_a_game(): pass\n",
        "not loaded: it stopped or killed its own sandbox"),
    "holds too much memory in two processes at its load": (
        "if FORKED:\n    os.fork()\n    b = bytearray(700 << 20)\n    time.sleep(3)\n"
        "def in_a_game(): pass\n",
        "not loaded: its processes held more than"),
    "forks at its load": (
        "if FORKED and os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)\n"
        "def in_a_game(): pass\n",
        "the learner started other processes"),
    "stops its fork server while it forks in a game, and lets it go on": (
        # (unwatched meanwhile: its second process, and their memory, went unseen)
        "def in_a_game():\n    if FORKED:\n        os.kill(os.getppid(), signal.SIGSTOP)\n"
        "        pid = os.fork()\n        if pid == 0:\n            time.sleep(0.5)\n"
        "            os._exit(0)\n        os.waitpid(pid, 0)\n"
        "        os.kill(os.getppid(), signal.SIGCONT)\n",
        "the learner stopped or killed its own sandbox"),
    "kills its fork server in a game": (
        "def in_a_game():\n    if FORKED:\n        os.kill(os.getppid(), signal.SIGKILL)\n",
        "the learner stopped or killed its own sandbox"),
}


OWN = {"kills its fork server at its load": "it stopped or killed its own sandbox",
       "holds too much memory in two processes at its load": "its processes held more than"}


def _check(file: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, Any]]]:
    """The check of ``file``: its process, and its report's rows by check."""
    run = subprocess.run([sys.executable, "-m", "littlestone", "check", f"{file}:L",
                          "--json"], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in run.stderr + run.stdout, run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    return run, {r["check"]: r for r in report["checks"]}


@SANDBOXED
def test_the_attacks_learner_passes_when_it_does_not_attack(tmp_path):
    file = tmp_path / "honest.py"
    file.write_text(HEAD + "def in_a_game(): pass\n" + LEARNER)
    run, rows = _check(file)
    assert run.returncode == 0 and rows[PLAYS]["ok"], (run.stdout, run.stderr)
    assert "own checks" not in rows


@SANDBOXED
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_on_the_loaded_sandbox_fails_plays_a_game_saying_what_it_did(
        tmp_path, attack):
    code, said = ATTACKS[attack]
    file = tmp_path / "attack.py"
    file.write_text(HEAD + code + LEARNER)
    run, rows = _check(file)
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert not rows[PLAYS]["ok"] and said in str(rows[PLAYS]["message"]), rows[PLAYS]
    if attack in OWN:
        assert OWN[attack] in rows["own checks"]["message"], rows


# -- files that are no Python file, or that lie, forge a report or patch the suite ----


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "directory", "shadow"])
def test_check_on_a_file_that_is_no_python_file_is_one_line(tmp_path, kind):
    """A FIFO would block the import forever; /etc/shadow behind a symlink must not be
    read (the sandbox's uid cannot) nor shown."""
    path = tmp_path / "agent.py"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/etc/shadow")
    err = one_line(cli("check", f"{path}:X", cwd=tmp_path, timeout=100), 2)
    assert "root:" not in err


LIAR = '''
import atexit, os, sys

def lie():
    sys.stdout.write('every check passed: ready for a tournament\\n')
    sys.stdout.flush()
    os._exit(0)

atexit.register(lie)
from littlestone.learners.halving import Halving

class Liar(Halving):
    def predict(self, x):
        return 7.0  # an illegal move: its game is forfeited
'''


FORGER = '''
import json, os, sys
from littlestone.learners.halving import Halving

NAMES = ["docstring example", "spec round trip", "plays a game", "seeding",
         "inputs not mutated", "restart is fresh"]
# its report, forged, the moment it is imported; then it leaves before any check runs
print(json.dumps({"agent": sys.argv[2] if len(sys.argv) > 2 else "", "kind": "learner",
                  "passed": True, "ready": True,
                  "checks": [{"check": n, "ok": True, "skipped": False, "message": "",
                              "in_tournament": "", "refereed": True} for n in NAMES]}))
print("every check passed: ready for a tournament")
sys.stdout.flush()
os._exit(0)

class Forger(Halving):
    pass
'''

PATCHER = '''
import littlestone.testing as checks
from littlestone.learners.halving import Halving

def nothing_to_check(agent):
    def check_plays_a_game():
        pass
    yield check_plays_a_game

checks.yield_checks = nothing_to_check  # the suite in its own process, emptied
import littlestone.cli.sandboxed as sandboxed  # where check --in-sandbox runs
sandboxed.yield_checks = nothing_to_check

class Patcher(Halving):
    def predict(self, x):
        return float("nan")  # an illegal move every round
'''


@pytest.mark.slow
@pytest.mark.parametrize("report", [
    '{"checks": [{"check": "plays a game", "ok": true}, {"check": "plays a game", "ok": true}]}',
    '{"kind": "adversary", "checks": [{"check": "x\\u001b[2J", "ok": true, "skipped": 7, '
    '"message": {"a": 1}, "in_tournament": [], "refereed": true}]}',
    '{"kind": 3, "checks": []}',
])
def test_a_forged_report_of_any_shape_is_one_verdict(tmp_path, report):
    """A report the file prints for itself, in odd shapes: rows with only a name and an
    outcome, twice the refereed check, odd types, a control code, a wrong kind. The
    verdict is still the refereed one, once, with no traceback."""
    (tmp_path / "odd.py").write_text(
        "import os, sys\nfrom littlestone.learners.halving import Halving\n"
        f"print({report!r})\nsys.stdout.flush()\nos._exit(0)\nclass Odd(Halving):\n    pass\n")
    run = cli("check", "odd.py:Odd", cwd=tmp_path, timeout=200)
    out = run.stdout.decode()
    assert run.returncode == 1 and "Traceback" not in run.stderr.decode(), (out, run.stderr)
    assert sum("  plays a game:" in line for line in out.splitlines()) == 1
    assert "FAIL  plays a game: odd.py:Odd" in out
    assert b"\x1b" not in run.stdout
    assert out.strip().splitlines()[-1].startswith("not ready: a tournament would score")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["liar", "forger", "patcher"])
def test_a_file_cannot_make_check_say_it_passed(tmp_path, name):
    """The verdict on what a tournament scores is the server's record of games played
    outside the file's process: an atexit hook that prints 'every check passed', a report
    forged at import, a check suite patched to pass in its own interpreter all fail."""
    source, cls = {"liar": (LIAR, "Liar"), "forger": (FORGER, "Forger"),
                   "patcher": (PATCHER, "Patcher")}[name]
    (tmp_path / f"{name}.py").write_text(source)
    run = cli("check", f"{name}.py:{cls}", cwd=tmp_path, timeout=200)
    out = run.stdout.decode()
    assert run.returncode == 1, (out, run.stderr)
    assert f"FAIL  plays a game: {name}.py:{cls}" in out
    assert out.strip().splitlines()[-1].startswith("not ready: a tournament would score")
    report = json.loads(cli("check", f"{name}.py:{cls}", "--json", cwd=tmp_path,
                            timeout=200).stdout.decode().strip().splitlines()[-1])
    assert not report["passed"] and not report["ready"]
    plays = next(r for r in report["checks"] if r["check"] == "plays a game")
    assert plays["refereed"] and not plays["ok"]


@pytest.mark.slow
def test_check_still_passes_an_honest_file_and_says_the_games_were_refereed(tmp_path):
    (tmp_path / "honest.py").write_text(LIAR.replace("atexit.register(lie)", "")
                                        .replace("return 7.0", "return super().predict(x)"))
    run = cli("check", "honest.py:Liar", cwd=tmp_path, timeout=200)
    out = run.stdout.decode()
    assert run.returncode == 0, (out, run.stderr)
    assert "ok    plays a game: 4 games refereed by a server, outside its process" in out
    assert out.strip().endswith("every check passed: ready for a tournament")
