"""The short public API: ``from littlestone import Learner, Adversary, play, ...``, each
name imported on first use, so that ``import littlestone`` stays cheap (issue 24), and
typed for checkers by ``littlestone/__init__.pyi``. What the Python API's functions do
is tests/littlestone/test_python_api.py's (issue 29)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys

import pytest

import littlestone
from tests.support import ROOT

#: Every public name but ``__version__``, and the module it comes from.
HOMES = {
    "ADVERSARIES": "littlestone.adversaries.base",
    "Adversary": "littlestone.adversaries.base",
    "ArgumentError": "littlestone.api",
    "FiniteClass": "littlestone.games.hypotheses",
    "Game": "littlestone.results",
    "GameResult": "littlestone.games.game",
    "GameSpec": "littlestone.games.game",
    "LEARNERS": "littlestone.learners.base",
    "Learner": "littlestone.learners.base",
    "LittlestoneError": "littlestone.games.errors",
    "compare": "littlestone.api",
    "connect": "littlestone.api",
    "ldim": "littlestone.api",
    "make_class": "littlestone.games.classes",
    "play": "littlestone.api",
    "replay": "littlestone.api",
    "sweep": "littlestone.sweeps",
    "tournament": "littlestone.api",
}
PUBLIC = sorted(name for name in littlestone.__all__ if not name.startswith("__"))


def _python(code: str, *options: str) -> str:
    return subprocess.run([sys.executable, *options, "-c", code], capture_output=True,
                          text=True, check=True, cwd=ROOT).stdout


def test_import_littlestone_imports_no_other_module():
    """A sandboxed submission starts with ``python -m littlestone``: the package itself
    loads nothing (not typing, not numpy, not the agents) until a name is asked for.

    What the interpreter may have loaded before is loaded first, as an editable install
    does at start-up (its finder) and a plain ``pip install .`` does not: the test failed
    on ``__future__`` after ``pip install '.[notebook]'`` replaced the editable install
    (issue 44). ``-S`` starts without site-packages, as neither install."""
    added = _python("import sys; import __future__, importlib, warnings; "
                    "before = set(sys.modules); import littlestone; "
                    "print(sorted(set(sys.modules) - before))", "-S")
    assert added.strip() == "['littlestone']"


def test_a_name_is_imported_when_first_asked_for():
    out = _python("import sys, littlestone; print('littlestone.learners' in sys.modules); "
                  "littlestone.Learner; print('littlestone.learners' in sys.modules, "
                  "'littlestone.server' in sys.modules, 'pandas' in sys.modules); "
                  "littlestone.play; print('littlestone.api' in sys.modules, "
                  "'littlestone.server' in sys.modules, 'pandas' in sys.modules)")
    assert out.split() == ["False", "True", "False", "False", "True", "False", "False"]


def test_all_lists_the_public_names():
    assert set(littlestone.__all__) == {*HOMES, "__version__"}
    assert set(littlestone.__all__) <= set(dir(littlestone))
    names: dict[str, object] = {}
    exec("from littlestone import *", names)
    assert set(littlestone.__all__) - {"__version__"} <= set(names)


@pytest.mark.parametrize("name", sorted(HOMES))
def test_a_public_name_is_the_object_of_its_home(name):
    assert getattr(littlestone, name) is getattr(importlib.import_module(HOMES[name]), name)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_has_a_docstring_with_an_example(name):
    """(tests/docs/test_docstrings.py runs the examples, in the modules that define them.)"""
    doc = inspect.getdoc(getattr(littlestone, name))
    assert doc is not None and ">>> " in doc, name


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'littlestone' has no attribute 'Lerner'"):
        littlestone.Lerner  # noqa: B018 - the access is the test
    assert not hasattr(littlestone, "local_play")


def test_the_stub_types_every_public_name_from_its_home():
    """``__init__.pyi`` (what type checkers read) names the public names, each from the
    module ``__init__.py`` imports it from on first use."""
    stub = ast.parse((ROOT / "littlestone" / "__init__.pyi").read_text())
    typed = {alias.asname: node.module for node in stub.body
             if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert typed == littlestone._HOMES
    assert set(typed) == set(littlestone.__all__) - {"__version__"}


def test_play_with_a_game_spec_first_is_the_synchronous_runner():
    """littlestone 0.3's form, play(rules, learner, adversary, seed), is kept: the same
    result as the runner's (now in ``.result``, beside the rounds)."""
    from littlestone.local import play

    game = littlestone.GameSpec("experts", 50, littlestone.make_class("thresholds:n=15"))
    learner, adversary = littlestone.LEARNERS.make("hedge"), littlestone.ADVERSARIES.make(
        "noisy:rate=0.2")
    seen: list[object] = []
    ours = littlestone.play(game, learner, adversary, seed=4, on_record=seen.append)
    theirs = play(game, learner.clone(), adversary.clone(), 4)
    assert ours.result == theirs and len(seen) == ours.played == 50
    positional = littlestone.play(game, learner.clone(), adversary.clone(), 4)
    assert positional.result == theirs and positional.seed == 4


def test_the_examples_import_from_littlestone_itself():
    for path in sorted((ROOT / "examples").glob("*.py")):
        modules = {node.module for node in ast.walk(ast.parse(path.read_text()))
                   if isinstance(node, ast.ImportFrom) and node.module
                   and node.module.startswith("littlestone")}
        assert modules == {"littlestone"}, (path.name, modules)


@pytest.mark.slow
def test_the_readme_python_examples_run():
    """The Python snippets of README and the manual (a learner of one's own, the From
    Python section) print what their comments say: ``print(...)  # 6`` prints 6."""
    text = "".join((ROOT / path).read_text() for path in (
        "README.md", "docs/manual/command-line.md", "docs/manual/tournaments.md"))
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        printed = _python(block).split("\n")
        said = re.findall(r"print\(.*\)\s+# ([^:\n]+)", block)
        assert [line.strip() for line in printed if line.strip()] == said and said, block
