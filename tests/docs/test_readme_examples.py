"""README's examples are what the commands print today: each fast example block, run
again by ``tools/readme_examples.py`` as a user runs it, equals README's (modulo game
ids, keys and seconds). A stale block: ``python -m tools.readme_examples``."""

from __future__ import annotations

import shutil

import pytest

from tools.readme_examples import BLOCKS, README, SLOW, blocks, normalised, run_block


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in BLOCKS if n not in SLOW])
def test_a_readme_example_is_current(name):
    if name == "check" and shutil.which("bwrap") is None:
        pytest.skip("check runs in bubblewrap, not installed here")
    present = blocks(README.read_text())
    assert name in present, f"README.md lost its block <!-- example: {name} -->"
    assert normalised(run_block(name)) == normalised(present[name]), (
        f"README.md's example {name} is stale: python -m tools.readme_examples --only {name}")


def test_the_comparison_sees_a_stale_number():
    text = blocks(README.read_text())["logs"]
    assert normalised(text.replace('"rounds": 5000', '"rounds": 4999')) != normalised(text)
    assert normalised(text) == normalised(text.replace("seconds\": 2", "seconds\": 3"))
