"""Red team (2026-11-25, third session): ``littlestone check`` of a submission whose
probe and check games are children of one loaded sandbox. A file that attacks its fork
server (kills or stops it, at its load or in a game), forks, or holds too much memory in
the probe must end with an honest FAIL of *plays a game*, whose message says what
happened, never a traceback or a pass. Needs bubblewrap."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from littlestone.sandbox import Sandbox
from littlestone.server.tournament.preflight import PLAYS

pytestmark = pytest.mark.skipif(Sandbox.unavailable() is not None,
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


def test_the_attacks_learner_passes_when_it_does_not_attack(tmp_path):
    file = tmp_path / "honest.py"
    file.write_text(HEAD + "def in_a_game(): pass\n" + LEARNER)
    run, rows = _check(file)
    assert run.returncode == 0 and rows[PLAYS]["ok"], (run.stdout, run.stderr)
    assert "own checks" not in rows


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
