"""Red team (2026-11-25, third session): a command puts numpy's libraries on one thread
unless the caller chose their threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from littlestone.cli import ONE_THREAD

SHOW = ("import json, os, littlestone.cli; "
        "print(json.dumps({n: os.environ.get(n) for n in littlestone.cli.ONE_THREAD}))")


def _environment_seen(**given: str) -> dict[str, str | None]:
    env = {k: v for k, v in os.environ.items() if k not in ONE_THREAD} | given
    out = subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True,
                         text=True, check=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def test_a_command_puts_numpys_libraries_on_one_thread_by_default():
    assert _environment_seen() == dict.fromkeys(ONE_THREAD, "1")


@pytest.mark.parametrize("name", ONE_THREAD)
def test_a_caller_who_set_one_thread_count_keeps_it_for_every_library(name):
    # OpenBLAS and MKL read their own variable before OMP_NUM_THREADS: setting them to 1
    # would silently put a caller's OMP_NUM_THREADS=4 back on one thread
    assert _environment_seen(**{name: "4"}) == {n: "4" if n == name else None
                                                for n in ONE_THREAD}
