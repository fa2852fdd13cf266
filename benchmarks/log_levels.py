"""Bytes per round of a game's log at each log level (``python -m benchmarks.log_levels``).

The games of issue 15, shortened (bytes per round do not depend on the length beyond
the header and footer): a Perceptron on ``halfspaces:d=100``, Hedge on 1000 free experts,
Hedge on 256 experts from ``thresholds:n=255``; and what ``auto`` chooses for the full
length. Also the time of ``replay --export`` of the compact log (a re-simulation) against
the full one (a read), and the rounds a second of play at each level next to the same
game unlogged (the local driver with no log and no index row), in the same run.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.server.records.logged import play_logged
from littlestone.server.records.logs import estimated_bytes, log_level, read_log
from littlestone.server.records.replay import export as export_rounds
from littlestone.server.records.resimulation import filled

GAMES = [  # label, game, learner, adversary, full length
    ("perceptron, halfspaces:d=100", GameSpec(MISTAKE_BOUND, 20_000,
                                              make_class("halfspaces:d=100")),
     "perceptron", "random-target", 200_000),
    ("hedge, 1000 free experts", GameSpec(EXPERTS, 2_000, experts=1000), "hedge",
     "cover-flip", 100_000),
    ("hedge, thresholds:n=255 (256 experts)", GameSpec(EXPERTS, 5_000,
                                                       make_class("thresholds:n=255")),
     "hedge", "noisy:rate=0.1", 5_000),
]


def main() -> None:
    quick = "--quick" in sys.argv
    print("| game | rounds | full: bytes/round | compact: bytes (whole log) | auto at the "
          "issue's length | export: compact (re-simulated) vs full (read) |")
    print("|---|---|---|---|---|---|")
    speeds: list[str] = []
    for label, game, learner, adversary, length in GAMES:
        if quick:
            game = GameSpec(game.game, game.rounds // 10, game.hclass, game.experts)
        sizes, export = {}, {}
        started = time.perf_counter()
        play(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), 1)
        speed = {"unlogged": game.rounds / (time.perf_counter() - started)}
        for level in ("none", "compact", "full"):
            data = Path(tempfile.mkdtemp())
            started = time.perf_counter()
            done = play_logged(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), 1,
                               data, level=level)
            speed[level] = game.rounds / (time.perf_counter() - started)
            if done.log is None:
                continue
            sizes[level] = done.log.stat().st_size
            started = time.perf_counter()
            export_rounds(filled(read_log(done.log)), "csv", io.StringIO())
            export[level] = time.perf_counter() - started
        full_game = GameSpec(game.game, length, game.hclass, game.experts)
        print(f"| {label} | {game.rounds:,} | {sizes['full'] / game.rounds:,.1f} | "
              f"{sizes['compact']:,} | {log_level('auto', full_game)} (estimated "
              f"{estimated_bytes(full_game) / 2**20:,.0f} MiB full) | "
              f"{export['compact']:.2f} s vs {export['full']:.2f} s |")
        base = speed["unlogged"]
        speeds.append(f"| {label} | {base:,.0f} | " + " | ".join(
            f"{speed[k]:,.0f} ({speed[k] / base:.2f}x)" for k in ("none", "compact", "full"))
            + " |")
    print("\n| game: rounds/s | unlogged (baseline) | none | compact | full |")
    print("|---|---|---|---|---|")
    print("\n".join(speeds))


if __name__ == "__main__":
    main()
