"""What a student's first ``check`` says (issue 44): a learner written from the student
guide that cannot play a class of the suite is told how to say so, in one line; wrong
answers are said as what ``predict`` must return, at the student's file and line, never
the library's, in one verdict; ``--class`` and ``--competition`` check the classes a
tournament plays."""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.cli.test_cli_paths import assert_usage_error, command
from tests.support.competitions import competition_file

#: A guide's first learner that compares its instance to a number: right on the finite
#: classes, a crash on halfspaces (an instance is a vector there); and wrong answers.
STUDENT = '''from littlestone.learners import Learner


class AboveThree(Learner):
    """Predicts 1 above 3."""

    def predict(self, x):
        return 1.0 if x > 3 else 0.0

    def update(self, x, y):
        pass


class Yes(AboveThree):
    def predict(self, x):
        return "yes"


class TooSure(AboveThree):
    def predict(self, x):
        return 1.5
'''

COMPETITION = competition_file(rounds=20, classes=("thresholds:n=16",))

SANDBOX = [] if shutil.which("bwrap") else ["--unsafe-no-sandbox"]


def _checks(tmp_path: Path, *runs: list[str]) -> list[dict]:
    (tmp_path / "mine.py").write_text(STUDENT)
    (tmp_path / "week-5.toml").write_text(COMPETITION)
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
        done = list(pool.map(lambda argv: command(["check", *argv, *SANDBOX, "--json"],
                                                  tmp_path, timeout=120), runs))
    out = []
    for run in done:
        assert run.returncode in (0, 1), (run.args, run.stderr)
        report = json.loads(run.stdout)
        report["rows"] = {row["check"]: row for row in report["checks"]}
        report["returncode"] = run.returncode
        out.append(report)
    return out


def test_check_tells_a_student_what_to_fix_in_one_line_at_their_own_line(tmp_path):
    """It failed with numpy's "truth value of an array is ambiguous" on halfspaces, a
    class the teacher may never use, and no hint; a ``"yes"`` pointed into client.py,
    with two verdicts; 1.5 gave no reason."""
    above, yes, sure = _checks(tmp_path, ["mine.py:AboveThree"], ["mine.py:Yes"],
                               ["mine.py:TooSure", "--class", "thresholds:n=16"])
    plays = above["rows"]["plays a game"]["message"]
    assert not above["ready"] and above["returncode"] == 1
    assert "halfspaces" in plays and "at mine.py:8 in predict" in plays
    assert "add a method unsupported(self, game)" in plays and "check --class SPEC" in plays
    assert "/submission" not in plays and "its own run" not in plays
    plays = yes["rows"]["plays a game"]["message"]
    assert "predict returned 'yes' (a str): it must return a number in [0, 1]" in plays
    assert "mine.py:15 in predict" in plays and "client.py" not in plays  # (its def)
    assert plays.count("yes'") == 1 and "its own run" not in plays  # one verdict
    plays = sure["rows"]["plays a game"]["message"]
    assert "prediction 1.5 is outside [0, 1]" in plays and "unsupported" not in plays


def test_check_plays_the_classes_it_is_given_or_a_competition_s(tmp_path):
    on_class, on_competition = _checks(
        tmp_path, ["mine.py:AboveThree", "--class", "thresholds:n=16", "--junit-xml", "ci.xml"],
        ["mine.py:AboveThree", "--competition", "week-5.toml"])
    for report in (on_class, on_competition):
        assert report["ready"] and report["returncode"] == 0, report["rows"]
        assert report["rows"]["plays a game"]["message"].startswith("1 game refereed")
    suite = ET.parse(tmp_path / "ci.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "mine.py:AboveThree"
    assert (suite.get("tests"), suite.get("failures")) == ("6", "0")
    (tmp_path / "mine.py").write_text(STUDENT)
    bad = command(["check", "mine.py:AboveThree", "--class", "thresholds:m=3", *SANDBOX],
                  tmp_path)
    assert_usage_error(bad, "check: --class thresholds:m=3: ")
    both = command(["check", "mine.py:AboveThree", "--class", "thresholds:n=3",
                    "--competition", "week-5.toml", *SANDBOX], tmp_path)
    assert_usage_error(both, "not both")


def test_play_exits_1_when_its_game_did_not_complete(tmp_path):
    """It exited 0 on a crash of the student's learner (``connect`` exits 2)."""
    (tmp_path / "mine.py").write_text(STUDENT)
    argv = ["play", "--adversary", "random-target", "--class", "thresholds:n=7",
            "--rounds", "20", "--data", "d", "--json"]
    crashed = command([*argv, "--learner", "mine.py:Yes"], tmp_path)
    played = command([*argv, "--learner", "mine.py:AboveThree"], tmp_path)
    assert json.loads(crashed.stdout)["status"].startswith("forfeit:learner:illegal_move")
    assert "prediction 'yes' is not a number" in json.loads(crashed.stdout)["message"]
    assert (crashed.returncode, played.returncode) == (1, 0), crashed.stderr


def test_help_lists_no_suppressed_command(tmp_path):
    """``littlestone --help`` listed ``probe ==SUPPRESS==`` and ``zygote ==SUPPRESS==``."""
    shown = command(["--help"], tmp_path)
    assert shown.returncode == 0 and "check" in shown.stdout
    assert "SUPPRESS" not in shown.stdout and "zygote" not in shown.stdout


def test_init_writes_an_agent_and_its_test_that_pass_and_overwrites_neither(tmp_path):
    """``littlestone init`` (what users of similar tools expect): a learner to edit, with
    a test that runs the check suite under pytest."""
    written = command(["init", "mine.py"], tmp_path)
    assert written.returncode == 0, written.stderr
    assert "pytest test_mine.py" in written.stdout
    assert "def unsupported(self, game)" in (tmp_path / "mine.py").read_text()
    again = command(["init", "mine.py", "--adversary"], tmp_path)
    assert_usage_error(again, "mine.py exists: not overwritten")
    tested = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "test_mine.py"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, check=False)
    assert tested.returncode == 0 and "6 passed" in tested.stdout, tested.stdout[-2000:]
    assert_usage_error(command(["init", "my-agent.py"], tmp_path), "not a Python module")
