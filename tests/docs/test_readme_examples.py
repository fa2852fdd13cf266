"""The examples of README and the manual are what the commands print today: each fast
example block, run again by ``tools/readme_examples.py`` as a user runs it, equals every
document's copy of it (modulo game ids, keys and seconds). A stale block:
``python -m tools.readme_examples``."""

from __future__ import annotations

import shutil

import pytest

from tools.readme_examples import BLOCKS, README, SLOW, normalised, run_block, shown


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in BLOCKS if n not in SLOW])
def test_a_readme_example_is_current(name):
    if name == "check" and shutil.which("bwrap") is None:
        pytest.skip("check runs in bubblewrap, not installed here")
    where = shown(name)
    assert where, f"no document has the block <!-- example: {name} --> any more"
    fresh = normalised(run_block(name))
    for path, body in where:
        assert fresh == normalised(body), (
            f"{path.name}'s example {name} is stale: python -m tools.readme_examples "
            f"--only {name}")


def test_the_comparison_sees_a_stale_number():
    text = dict(shown("logs"))[README.parent / "docs" / "manual" / "replay.md"]
    assert normalised(text.replace('"rounds": 5000', '"rounds": 4999')) != normalised(text)
    assert normalised(text) == normalised(text.replace("seconds\": 2", "seconds\": 3"))
