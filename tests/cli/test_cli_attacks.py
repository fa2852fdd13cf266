"""Red team of the command line and the Python API: a careless or hostile user's
arguments (a malformed URL, a seed count or a delta no machine holds, nested specs) are
one clear line, never a traceback or an overflow; and a
command puts numpy's libraries on one thread unless the caller chose their threads."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

import littlestone as ls
from littlestone.cli import ONE_THREAD, main
from littlestone.games.pac import occam_sample_size, survivor_sample_size

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


# -- the Python API and the command line ------------------------------------------------


def test_the_api_refuses_a_malformed_url_and_a_seed_count_it_cannot_hold():
    """Breaks (fixed): ``connect("ws://[::1", ...)`` and a port past 65535 raised urllib's
    ValueError from deep inside; ``compare(..., seeds=10**9)`` (a count) built a list of
    10^9 integers before playing anything: the machine ran out of memory (21 GB, the OOM
    killer); so did ``sweep`` and a tournament dict with such a count."""
    for url in ("ws://[::1", "ws://127.0.0.1:99999/"):
        with pytest.raises(ls.ArgumentError, match=r"connect: url: .* is not a URL"):
            ls.connect(url, "halving", "shattered-tree", "thresholds:n=7", rounds=3)
    with pytest.raises(ls.ArgumentError, match="compare: seeds: a count of at most"):
        ls.compare(["halving"], "random-target", "thresholds:n=7", rounds=3, seeds=10**9)
    with pytest.raises(ls.ArgumentError, match="sweep: seeds"):
        ls.sweep("halving", "random-target", "thresholds:n=7", 3, seeds=10**9)
    with pytest.raises(ls.ArgumentError, match="tournament: seeds"):
        ls.tournament({"name": "t", "rounds": 3, "seeds": 10**9, "classes": ["thresholds:n=7"],
                       "learners": ["halving"], "adversaries": ["random-target"]})
    assert len(ls.compare(["halving"], "random-target", "thresholds:n=7", rounds=3,
                          seeds=2).played) == 2


def test_nested_conservative_specs_are_one_clear_error():
    for spec in ("conservative:of=conservative:of=halving", "conservative:conservative",
                 "conservative:of= conservative", "conservative:of=randomized-halving"):
        with pytest.raises(ls.ArgumentError, match="play: learner: conservative"):
            ls.play(spec, "shattered-tree", "thresholds:n=7", rounds=3)


@pytest.mark.parametrize(("argv", "said"), [
    (["--class", "thresholds:n=7", "--learner", "halving", "--epsilon", "1e-300"],
     "examples, over the limit"),
    (["--class", "monotone-conjunctions:n=10", "--learner", "monotone-conjunction",
      "--examples", "100000000000"], "examples, over the limit"),
    (["--class", "halfspaces:d=2,margin=0.2", "--learner", "perceptron", "--examples", "0"],
     "--examples >= 1"),
    (["--class", "halfspaces:d=2,margin=0.2", "--learner", "perceptron", "--examples",
      "1000000000000"], "numbers (examples x d = 2), over the limit"),
])
def test_pac_refuses_a_run_it_cannot_make_in_one_line(argv, said, capsys):
    """Breaks (fixed): ``pac --epsilon 1e-300`` (or 1e-12) ran for ever; ``--examples 0``
    of the random iterate was ``internal error: ZeroDivisionError``; 10^12 examples of it
    ``internal error: MemoryError``."""
    assert main(["pac", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and said in err, err


def test_a_subnormal_delta_is_a_number_not_an_overflow():
    """Break (fixed): ``pac --delta 1e-320`` was ``internal error: OverflowError`` (1/delta
    is infinite)."""
    assert survivor_sample_size(0.5, 1e-320, 3) == math.ceil((math.log(4) + 736.83) / 0.5)
    assert occam_sample_size(0.5, 1e-320, 0.0) == math.ceil(-math.log(1e-320) / 0.5)
