"""The documentation site and what its guides promise: the generated reference pages
follow the code, the prose ruler measures what it says, and a student's first try
works (a first learner passes ``check``; a client whose server stops says so in one
line)."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS, Learner
from tests.support import ROOT
from tools import prose

#: A student's first learner: the student guide's first code block (predict, update, a
#: one-line docstring, no example, no ``games``), so that the guide cannot drift from it.
FIRST_LEARNER = re.findall(r"```python\n(.*?)```",
                           (ROOT / "docs" / "guides" / "student.md").read_text(), re.S)[0]


def littlestone(*args: str, cwd: Path, timeout: float = 200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "littlestone", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


# -- a student's first try ------------------------------------------------------------


@pytest.mark.slow
def test_a_first_learner_passes_check_with_advice_to_add_an_example(tmp_path):
    """No docstring example is advice, not a failure: exit status 0, and the advice is
    shown; a tournament would play the file."""
    (tmp_path / "first.py").write_text(FIRST_LEARNER)
    sandbox = [] if shutil.which("bwrap") else ["--unsafe-no-sandbox"]
    run = littlestone("check", "first.py:AlwaysOne", *sandbox, cwd=tmp_path)
    assert run.returncode == 0, (run.stdout, run.stderr)
    lines = run.stdout.strip().splitlines()
    tip = next(line for line in lines if "docstring example" in line)
    assert tip.startswith("  tip   docstring example: AlwaysOne: add a runnable example")
    assert "[advice: a tournament does not score this]" in tip
    assert "FAIL" not in run.stdout
    assert lines[-1] == ("every check passed: ready for a tournament "
                         "(advice: docstring example)")
    shown = dict((" ".join(argv), out) for argv, out in
                 _console_commands((ROOT / "docs" / "guides" / "student.md").read_text()))
    assert shown["check first.py:AlwaysOne"] == lines  # the guide shows what it prints
    report = json.loads(littlestone("check", "first.py:AlwaysOne", *sandbox, "--json",
                                    cwd=tmp_path).stdout)
    rows = {row["check"]: row for row in report["checks"]}
    assert report["passed"] and report["ready"]
    assert rows["docstring example"]["ok"] and rows["docstring example"]["advice"]
    assert not rows["plays a game"]["advice"] and rows["plays a game"]["refereed"]


@pytest.mark.slow
def test_a_failing_docstring_example_still_fails(tmp_path):
    """Advice is for a missing example; an example that fails is a bug (exit status 1)."""
    (tmp_path / "wrong.py").write_text(FIRST_LEARNER.replace(
        '"""Predicts 1 every round."""',
        '"""Predicts 1 every round.\n\n    >>> AlwaysOne().predict(0)\n    0.0\n    """'))
    sandbox = [] if shutil.which("bwrap") else ["--unsafe-no-sandbox"]
    run = littlestone("check", "wrong.py:AlwaysOne", *sandbox, cwd=tmp_path)
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert "  FAIL  docstring example: AlwaysOne: the docstring example fails" in run.stdout
    assert run.stdout.strip().splitlines()[-1] == (
        "ready for a tournament (what it scores passed); advice to fix: docstring example")


def test_an_agent_that_names_no_games_plays_the_games_it_overrides():
    class Weighs(Learner):
        def weights(self, advice):
            return 0.5

        def update_costs(self, costs, y):
            pass

    class Both(Weighs):
        def predict(self, x):
            return 0.0

    class Halving(type(LEARNERS.make("halving"))):
        """Inherits its parent's games."""

    assert Weighs.games == {"experts"} and Both.games == {"experts"}  # set by its parent
    assert Halving.games == {"experts", MISTAKE_BOUND}
    namespace: dict[str, object] = {}
    exec(FIRST_LEARNER, namespace)
    first = namespace["AlwaysOne"]
    assert first.games == {MISTAKE_BOUND}
    game = GameSpec(MISTAKE_BOUND, 5, make_class("thresholds:n=3"))
    assert first().unsupported(game) is None


def _serve(data: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--port", "0",
                               "--data", str(data), "--anonymous", "--no-web"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stdout is not None
    return server, server.stdout.readline().split()[3]  # "littlestone serving on URL ..."


@pytest.mark.slow
def test_a_client_whose_server_shuts_down_says_so_in_one_line(tmp_path):
    """SIGTERM on the server mid-game: the client prints one line and exits 2."""
    from littlestone.server.records.store import Store

    server, url = _serve(tmp_path / "data")
    client = subprocess.Popen([sys.executable, "-m", "littlestone", "connect", url,
                               "--learner", "halving", "--vs", "random-target", "--class",
                               "thresholds:n=255", "--rounds", "1000000"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):  # until the game runs (a bounded wait, not a timing)
            if Store(tmp_path / "data").games(status="running"):
                break
            time.sleep(0.05)
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
        out, err = client.communicate(timeout=30)
    finally:
        for process in (server, client):
            if process.poll() is None:
                process.kill()
    assert client.returncode == 2, (out, err)
    assert err == "littlestone: error: connect: the server shut down: game aborted\n"
    assert out == ""


async def test_play_remote_raises_server_closed_when_the_server_stops(tmp_path):
    """From Python: :class:`littlestone.client.ServerClosed`, code 1001, not websockets'
    ConnectionClosedOK."""
    from littlestone.client import ServerClosed, play_remote
    from littlestone.server.net import GameServer, ServerSettings

    server = GameServer(ServerSettings(port=0, data=tmp_path, anonymous=True))
    await server.start()
    game = GameSpec(MISTAKE_BOUND, 1_000_000, make_class("thresholds:n=255"))
    playing = asyncio.create_task(play_remote(f"ws://127.0.0.1:{server.port}",
                                              LEARNERS.make("halving"), "random-target",
                                              game, seed=1))
    for _ in range(600):
        if server.running:
            break
        await asyncio.sleep(0.05)
    assert server.running, "the game did not start"
    await server.stop()
    with pytest.raises(ServerClosed) as info:
        await playing
    assert info.value.code == 1001
    assert str(info.value) == "the server shut down: game aborted"


# -- the prose ruler ------------------------------------------------------------------


def test_the_ruler_skips_code_tables_and_headings_and_counts_parentheses():
    text = ("# Heading with many words that are not a sentence at all\n\n"
            "A sentence of five words. Then (an aside) here.\n\n"
            "| a | table (row) |\n|---|---|\n\n```\nprint('code (no)')\n```\n"
            "    indented code (no)\n")
    figures = prose.measure(text)
    assert (figures.sentences, figures.words, figures.parentheses) == (2, 9, 1)
    assert figures.parentheses_per_100 == pytest.approx(100 / 9)


def test_the_ruler_counts_long_sentences():
    long = " ".join(["word"] * 31) + ". Short one."
    figures = prose.measure(long)
    assert (figures.sentences, figures.over_30) == (2, 1)
    assert figures.share_over_30 == 0.5
    assert prose.measure(" ".join(["word"] * 30) + ".").over_30 == 0


def test_the_ruler_prints_the_targets(capsys, tmp_path):
    page = tmp_path / "page.md"
    page.write_text("One sentence here. And a second.\n")
    assert prose.main([str(page)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[1:] == ["6", "3.0", "0%", "0.0"]
    assert out[-1].split()[-3:] == ["15.9", "7%", "0.3"]
    assert prose.main([str(tmp_path / "missing.md")]) == 2


# -- the generated reference ----------------------------------------------------------

from tools import docs_site  # noqa: E402 - after the helpers above, with the site's tests


def _parser_commands():
    """Every visible sub-command of the real parser and its visible option strings,
    walked here independently of the generator."""
    import argparse

    from littlestone.cli.parser import build_parser

    def walk(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                hidden = {c.dest for c in action._choices_actions if c.help == argparse.SUPPRESS}
                for name, sub in action.choices.items():
                    if name in hidden or name not in {c.dest for c in action._choices_actions}:
                        continue
                    options = [o for a in sub._actions if a.help != argparse.SUPPRESS
                               and not isinstance(a, argparse._HelpAction)
                               for o in a.option_strings]
                    yield f"{prefix}{name}", options
                    yield from walk(sub, f"{prefix}{name} ")

    return list(walk(build_parser(), ""))


def test_the_cli_page_has_every_command_and_option():
    page = docs_site.cli_reference()
    sections = page.split("\n## littlestone ")[1:]
    by_name = {s.split("\n", 1)[0]: s for s in sections}
    commands = _parser_commands()
    assert len(commands) >= 15
    assert set(by_name) == {name for name, _ in commands}
    for name, options in commands:
        for option in options:
            assert f"`{option}`" in by_name[name], f"{name}: {option}"
    assert "probe" not in by_name and "--in-sandbox" not in page  # hidden: a tournament's own


@pytest.mark.slow
def test_the_spec_tables_list_every_registered_class_and_agent():
    import littlestone.server.records.replay  # noqa: F401 - registers replay
    from littlestone.adversaries import ADVERSARIES
    from littlestone.games.classes import CLASSES

    def ids(table):
        return {row.split("|")[1].strip().strip("`") for row in table.splitlines()[2:]}

    assert ids(docs_site.class_table()) == set(CLASSES)
    learners = docs_site.learner_table()
    assert ids(learners) == set(LEARNERS.ids())
    assert ids(docs_site.adversary_table()) == set(ADVERSARIES.ids())
    halving = next(row for row in learners.splitlines() if row.startswith("| `halving`"))
    assert "log2\\|H\\| (UML Thm 21.3) (mistake-bound, thresholds:n=15)" in halving
    assert "`k` (int, 0..n)" in docs_site.class_table()  # a limit that is a parameter


def test_a_class_without_a_sample_fails_the_build(monkeypatch):
    from littlestone.games import classes

    monkeypatch.setitem(classes.CLASSES, "circles", classes.CLASSES["singletons"])
    with pytest.raises(ValueError, match="SAMPLE_CLASSES has no sample of circles"):
        docs_site.class_table()


def test_included_documents_and_their_links():
    protocol = docs_site.include("PROTOCOL.md", "reference/protocol.md")
    assert protocol.startswith("# The littlestone wire protocol")
    assert "](../design.md)" in protocol and "](docs/design.md)" not in protocol
    assert docs_site.rewrite_links("[s](../SECURITY.md#who-is-trusted)", "docs/design.md",
                                   "design.md") == "[s](reference/security.md#who-is-trusted)"
    code = "```\n[not a link](../PROTOCOL.md)\n```\n"
    assert docs_site.rewrite_links(code, "docs/x.md", "x.md") == code
    with pytest.raises(ValueError, match="not a document the site includes"):
        docs_site.include("Makefile", "x.md")
    with pytest.raises(ValueError, match="no generated text named 'nothing'"):
        docs_site.expand("<!-- generated: nothing -->\n", "x.md")


@pytest.mark.parametrize("module", ["tools.prose", "tools.docs_site", "tools.docs_griffe"])
def test_the_tools_docstring_examples(module):
    import doctest
    import importlib

    failures, tried = doctest.testmod(importlib.import_module(module))
    assert tried > 0 and failures == 0


# -- the guides' commands -------------------------------------------------------------

GUIDES = [ROOT / "docs" / "index.md", *sorted((ROOT / "docs" / "guides").glob("*.md")),
          *sorted((ROOT / "docs" / "reference").glob("*.md"))]
#: Output keys that change from run to run.
VOLATILE = ("game_id", "log", "seconds", "tree")


def _console_commands(text: str) -> list[tuple[list[str], list[str]]]:
    """(argv, the lines shown after it) of each ``$ littlestone`` line of the console
    blocks, its continuation lines joined, shell redirections and ``&`` cut off."""
    import re
    import shlex

    out: list[tuple[list[str], list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        lines = block.replace("\\\n", " ").splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("$ littlestone "):
                continue
            argv = shlex.split(line[2:], comments=True)
            for stop in (">", "&", "|"):
                if stop in argv:
                    argv = argv[:argv.index(stop)]
            shown = []
            for after in lines[i + 1:]:
                if after.startswith("$"):
                    break
                shown.append(after)
            out.append((argv[1:], shown))
    return out


def test_every_command_the_guides_show_parses():
    """Each ``$ littlestone ...`` line of the guides and the reference is a valid command
    line (placeholders such as URL and GAME_ID included)."""
    from littlestone.cli.parser import build_parser

    parser = build_parser()
    seen = 0
    for page in GUIDES:
        for argv, _ in _console_commands(page.read_text()):
            if argv in (["--help"], ["--version"]):
                continue  # (they print and exit)
            parser.parse_args(argv)
            seen += 1
    assert seen >= 20


@pytest.mark.slow
def test_the_guides_outputs_are_what_the_commands_print(tmp_path, monkeypatch, capsys):
    """The fast commands of the guides (ldim, play, pac) run, and every line they show
    (but run-dependent keys and ``...``) is a line of what they print."""
    import shutil as sh

    from littlestone.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "first.py").write_text(FIRST_LEARNER)
    (tmp_path / "my_learner.py").write_text(FIRST_LEARNER.replace("AlwaysOne", "MyLearner"))
    sh.copytree(ROOT / "examples", tmp_path / "examples")
    ran = 0
    for page in GUIDES:
        for argv, shown in _console_commands(page.read_text()):
            if argv[0] not in ("ldim", "play", "pac"):
                continue
            assert main(argv) == 0, argv  # (the data folder: conftest's, in tmp)
            printed = capsys.readouterr().out
            lines = printed.splitlines()
            for line in shown:
                key = line.split(" ", 1)[0].strip('{"')
                if line in ("...", "") or key in VOLATILE:
                    continue
                if line.startswith("{"):  # one JSON object, shown with "..." for the rest
                    shown_keys = [part for part in line.rstrip("}").split(", ")
                                  if part != "..." and part.split(":")[0].strip('{"')
                                  not in VOLATILE]
                    assert all(part.lstrip("{") in printed for part in shown_keys), (argv, line)
                    continue
                assert line in lines, (argv, line, printed)
            ran += 1
    assert ran >= 6
