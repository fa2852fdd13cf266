"""A field that ties and a broken student, as a teacher runs them (issue 44 items 8, 13
and the CI's exit): tied entrants share a rank in the same order whatever order they
are entered in; the broken student's forfeits are not credited to the adversaries; the
report says who won first; the exit status and the JUnit XML fail on the student's
file only."""

from __future__ import annotations

import contextlib
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from littlestone.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
BROKEN = '''"""A student's learner that divides by zero in predict."""

from littlestone import Learner


class Broken(Learner):
    """Crashes on its first prediction."""

    games = frozenset({"mistake-bound"})

    def predict(self, x):
        return 1 / 0
'''


def _config(folder: Path, learners: list[str]) -> Path:
    (folder / "mv.py").write_text((EXAMPLES / "minimal_learner.py").read_text())
    (folder / "broken.py").write_text(BROKEN)
    path = folder / "ties.toml"
    path.write_text(
        f"learners = {json.dumps(learners)}\n"
        'adversaries = ["shattered-tree"]\n\n'  # (deterministic: the ties are exact)
        '[tournament]\nname = "ties"\nrounds = 12\nseeds = 1\ngames = ["mistake-bound"]\n\n'
        '[[classes]]\nspec = "thresholds:n=15"\n\n'
        "[limits]\nmove_deadline = 2\ntime_bank = 2\ncpu_seconds = 30\n")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, str, Path]]:
    """The same field twice, its entrants in two orders, each in a fresh data folder:
    (exit status, the terminal's output, the folder)."""
    out = []
    for i, learners in enumerate((["soa", "halving", "mv.py:MajorityVote", "broken.py:Broken"],
                                  ["broken.py:Broken", "mv.py:MajorityVote", "halving",
                                   "soa"])):
        folder = tmp_path_factory.mktemp(f"order{i}")
        config = _config(folder, learners)
        junit = folder / "ci.xml"
        text = io.StringIO()  # (capsys is a test's, not a module fixture's)
        with contextlib.redirect_stdout(text):
            code = main(["tournament", str(config), "--data", str(folder / "data"),
                         "--workers", "1", "--junit-xml", str(junit)])
        out.append((code, text.getvalue(), folder))
    return out


def _learner_lines(output: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("rank  learner"))
    end = next(i for i, line in enumerate(lines) if line.lstrip().startswith("rank  adversary"))
    return lines[start + 1:end]


def test_tied_learners_share_a_rank_listed_by_name_whatever_their_order(runs):
    (_, first, _), (_, second, _) = runs
    assert _learner_lines(first) == _learner_lines(second)
    ranked = [line.split()[:2] for line in _learner_lines(first)]
    assert ranked[:3] == [["1=", "halving"], ["1=", "mv.py:MajorityVote"], ["1=", "soa"]]
    assert ranked[3] == ["4", "broken.py:Broken"]


def test_the_broken_students_forfeits_are_won_not_scored(runs):
    _, output, folder = runs[0]
    tree = next(line for line in output.splitlines() if " shattered-tree " in line)
    assert "1 won by forfeit" in tree, tree
    assert tree.split()[2] == "1.00"  # Ldim mistakes against each learner that played
    page = (folder / "data" / "reports" / "ties.html").read_text()
    assert "1 won by forfeit" in page


def test_the_report_opens_with_who_won_and_the_rules_follow_the_leaderboard(runs):
    _, output, folder = runs[0]
    assert output.splitlines()[0].startswith(
        "Winner among learners: halving, mv.py:MajorityVote and soa (tied), the lowest "
        "worst score (1")
    assert "among adversaries: shattered-tree, the highest median score forced (1)" in output
    page = (folder / "data" / "reports" / "ties.html").read_text()
    assert page.index("Winner among learners") < page.index("<h2>Learners") < page.index(
        "Scores: mistakes / Ldim(H)")
    # the failed games, one line a student's group of games, naming its file and line
    assert "broken.py:Broken crashed in 1 game: ZeroDivisionError" in output
    assert "broken.py:12" in output


def test_the_ci_fails_on_the_students_file_only(runs):
    code, _, folder = runs[0]
    assert code == 1
    suite = ET.parse(folder / "ci.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "5" and suite.get("failures") == "1"
    failed = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert [case.get("name") for case in failed] == ["learner broken.py:Broken"]
    failure = failed[0].find("failure")
    assert failure is not None and "crashed in 1 game" in str(failure.get("message"))


def test_a_field_without_faults_exits_0(tmp_path: Path, capsys):
    config = _config(tmp_path, ["soa", "mv.py:MajorityVote"])
    assert main(["tournament", str(config), "--data", str(tmp_path / "data"),
                 "--workers", "1", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert all(e["won_by_forfeit"] == 0 for e in board["adversaries"])
