"""Every docstring example runs: the package's (its modules found by their installed
names, ``littlestone.*``, so each is imported once, as users import it), the test
agents' and the tests' competition file's."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import littlestone

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _modules() -> list[str]:
    names = ["littlestone"]
    names += [m.name for m in pkgutil.walk_packages(littlestone.__path__, "littlestone.")
              if not m.name.endswith("__main__")]
    return [*sorted(names), "tests.support.agents_for_tests", "tests.support.competitions"]


def _examples() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder()
    tests = []
    for name in _modules():
        module = importlib.import_module(name)
        tests += [t for t in finder.find(module, name) if t.examples]
    return sorted(tests, key=lambda t: t.name)


EXAMPLES = _examples()


def test_every_module_is_found() -> None:
    """The walk sees the sub-packages the wheel installs (a test that could fail if the
    files moved out of littlestone/ or a package lost its __init__)."""
    names = _modules()
    for package in ("games", "learners", "adversaries", "protocol", "server",
                    "server.net", "server.records", "server.tournament", "cli"):
        assert f"littlestone.{package}" in names
    assert len(EXAMPLES) > 20


@pytest.mark.parametrize("example", EXAMPLES, ids=[t.name for t in EXAMPLES])
def test_docstring_example(example: doctest.DocTest) -> None:
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    output: list[str] = []
    runner.run(example, out=output.append)
    assert runner.failures == 0, "".join(output)
