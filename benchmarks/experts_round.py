"""The cost of a round of the experts game (``python -m benchmarks.experts_round``).

Local games, in process: Hedge against an oblivious adversary of random costs (64 rows
drawn once, so that the adversary costs next to nothing) on 2, 10, 1000 and 5000 free
experts, and Weighted-Majority on the 64 experts of ``thresholds:n=63`` against
random-target. Each figure is CPU time per round, the best of ``repeat`` games.

The baseline is measured in the same run. By default it is the same games on the
referee's numpy paths (``SMALL_D = IN_ORDER_SUM = 0``, the paths beyond 16 experts).
With ``--against PYTHON`` it is the same games under another interpreter, for example
the ``.venv/bin/python`` of a checkout of the code before; the two alternate.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from littlestone.adversaries import ADVERSARIES
from littlestone.adversaries.base import Adversary
from littlestone.games import experts as referee
from littlestone.games.classes import make_class
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.learners import LEARNERS
from littlestone.learners import experts as expert_learners
from littlestone.local import play


class RandomCostsAdversary(Adversary):
    """Oblivious free-experts adversary for the benchmark: 64 rows of uniform costs drawn
    once, played in turn (not registered)."""

    id = "benchmark-random-costs"
    games = frozenset({EXPERTS})

    def reset(self, game: GameSpec, seed: int) -> None:
        self._block = np.random.default_rng(seed).random((64, game.n_experts))
        self._next = 0

    def advice(self) -> None:
        return None

    def costs(self, answer: Any) -> np.ndarray:
        self._next += 1
        return self._block[self._next % 64]


#: label: (game, learner, adversary); the rounds are a tenth with ``--quick``.
GAMES: dict[str, tuple[GameSpec, str, str]] = {
    "hedge, d = 2": (GameSpec(EXPERTS, 50_000, experts=2), "hedge", "costs"),
    "hedge, d = 10": (GameSpec(EXPERTS, 30_000, experts=10), "hedge", "costs"),
    "hedge, d = 1000": (GameSpec(EXPERTS, 5_000, experts=1000), "hedge", "costs"),
    "hedge, d = 5000": (GameSpec(EXPERTS, 1_500, experts=5000), "hedge", "costs"),
    "weighted-majority, thresholds:n=63 (d = 64)": (
        GameSpec(EXPERTS, 10_000, make_class("thresholds:n=63")), "weighted-majority",
        "random-target"),
}




@contextlib.contextmanager
def numpy_paths() -> Iterator[None]:
    """The referee and Hedge on their numpy paths, whatever d (as beyond SMALL_D)."""
    modules = [(referee, "SMALL_D"), (referee, "IN_ORDER_SUM"), (expert_learners, "SMALL_D")]
    kept = [(module, name, getattr(module, name)) for module, name in modules
            if hasattr(module, name)]  # a checkout from before has none of them
    for module, name, _ in kept:
        setattr(module, name, 0)
    try:
        yield
    finally:
        for module, name, value in kept:
            setattr(module, name, value)


def us_per_round(quick: bool) -> dict[str, float]:
    """Each game played once: CPU microseconds a round."""
    out = {}
    for label, (game, learner, adversary) in GAMES.items():
        if quick:
            game = GameSpec(EXPERTS, game.rounds // 10, game.hclass, game.experts)
        opponent = RandomCostsAdversary() if adversary == "costs" else ADVERSARIES.make(adversary)
        started = time.process_time()
        result = play(game, LEARNERS.make(learner), opponent, seed=0)
        out[label] = (time.process_time() - started) / game.rounds * 1e6
        assert result.complete, result.message
    return out


def _against(python: str, quick: bool) -> dict[str, float]:
    """This file run as a script by ``python``: it imports that interpreter's
    littlestone (run as a module from this checkout, it would import this one's)."""
    command = [python, str(Path(__file__).resolve()), "--json"]
    done = subprocess.run(command + ["--quick"] * quick, cwd=tempfile.gettempdir(),
                          check=True, capture_output=True, text=True)
    measured: dict[str, float] = json.loads(done.stdout)  # its --json output
    return measured


def bench_experts_round(repeat: int, quick: bool = False, against: str | None = None
                        ) -> list[tuple[str, float, float, str]]:
    """Rows for benchmarks.run: rounds/s of each game, ours next to the baseline."""
    ours: dict[str, float] = {}
    base: dict[str, float] = {}
    for _ in range(repeat):
        for label, us in us_per_round(quick).items():
            ours[label] = min(ours.get(label, float("inf")), us)
        if against is None:
            with numpy_paths():
                measured = us_per_round(quick)
        else:
            measured = _against(against, quick)
        for label, us in measured.items():
            base[label] = min(base.get(label, float("inf")), us)
    what = "the numpy paths" if against is None else against
    return [(f"experts round, {label}: {ours[label]:.2f} us\n    vs {what}: {base[label]:.2f} us",
             1e6 / ours[label], 1e6 / base[label], "rounds/s") for label in GAMES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tenth of the rounds")
    parser.add_argument("--repeat", type=int, default=3, help="games of each (default 3)")
    parser.add_argument("--against", metavar="PYTHON",
                        help="the baseline: the same games under this interpreter")
    parser.add_argument("--json", action="store_true",
                        help="play each game once; print its us per round as JSON")
    args = parser.parse_args(argv)
    if args.json:
        print(json.dumps(us_per_round(args.quick)))
        return 0
    load = os.getloadavg()[0]
    rows = bench_experts_round(args.repeat, args.quick, args.against)
    print(f"load average at the start: {load:.2f}")
    for name, ours, base, _ in rows:
        print(f"{name}   {ours / base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
