"""What ``littlestone replay`` does with a logged game besides verifying it
(:mod:`.verify`): play its sequence against another learner (``--against``), show its
summary and its rounds, export them (``--export``), plot them (``--plot``).

>>> import tempfile, pathlib
>>> from littlestone.games.classes import make_class
>>> from littlestone.learners import LEARNERS
>>> from littlestone.adversaries import ADVERSARIES
>>> from littlestone.server.records.logged import play_logged
>>> from littlestone.server.records.logs import read_log
>>> data = pathlib.Path(tempfile.mkdtemp())
>>> game = GameSpec("mistake-bound", 40, make_class("thresholds:n=63"))
>>> done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 3, data)
>>> original, other = against(read_log(done.log), "halving")
>>> original.mistakes == other.mistakes
True
>>> next(rows(read_log(done.log)))["t"]
1
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from littlestone.games.errors import LogError, SpecError
from littlestone.games.game import EXPERTS, ExpertsRecord, GameResult, GameSpec, RoundRecord
from littlestone.learners.base import LEARNERS
from littlestone.local import play
from littlestone.server.records.anchors import anchoring
from littlestone.server.records.logs import GameLogData
from littlestone.server.records.playback import Replay
from littlestone.server.records.resimulation import filled, game_key, game_spec

__all__ = ["against", "export", "plot", "rows", "summary_table"]


def against(log: GameLogData, learner_spec: str, data: str | Path | None = None,
            game_id: str | None = None) -> tuple[GameResult, GameResult]:
    """The logged game's result, and another learner's on the same logged sequence."""
    spec = game_spec(log, anchoring(log, data, game_id).anchored is True)
    log = filled(log, data, game_id)
    if log.footer is None:
        raise LogError("the log is incomplete: nothing to compare with")
    # (the footer's figures that are GameResult's own fields, by name)
    figures: dict[str, Any] = {k: v for k, v in log.footer["result"].items()
                               if k in GameResult.__dataclass_fields__ and k != "bound"}
    original = GameResult(**figures)
    rounds = log.n_rounds
    spec = GameSpec(spec.game, rounds, spec.hclass, spec.experts, spec.horizon_known)
    result = play(spec, LEARNERS.make(learner_spec), Replay.from_log(log),
                  int(log.header["seed"]), key=game_key(log))
    return original, result


def rows(log: GameLogData) -> Iterator[dict[str, object]]:
    """Every round as a flat dict of JSON-ready values (vectors as lists)."""
    for record in log.records():
        row: dict[str, object] = {}
        for name, value in zip(record._fields, record, strict=True):
            if isinstance(value, np.ndarray):
                value = value.tolist()
            elif isinstance(value, np.generic):
                value = value.item()
            row[name] = value
        yield row


def export(log: GameLogData, fmt: str, out: TextIO) -> int:
    """Write every round as CSV or JSON lines; returns the number of rounds."""
    count = 0
    writer: csv.DictWriter[str] | None = None
    for row in rows(log):
        if fmt == "jsonl":
            out.write(json.dumps(row) + "\n")
        else:
            flat = {k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()}
            if writer is None:
                writer = csv.DictWriter(out, fieldnames=list(flat), lineterminator="\n")
                writer.writeheader()
            writer.writerow(flat)
        count += 1
    return count


def plot(log: GameLogData, path: str) -> None:
    """Cumulative mistakes (mistake-bound) or regret (experts) per round, with the
    learner's bound, and sqrt(2 t ln d) in the experts game."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SpecError("--plot needs matplotlib: pip install 'littlestone[plot]'") from None
    records = list(log.records())
    t = np.arange(1, len(records) + 1)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    result = log.result
    title = f"{log.header['learner']['spec']} vs {log.header['adversary']['spec']}"
    experts = [r for r in records if isinstance(r, ExpertsRecord)]
    rounds = [r for r in records if isinstance(r, RoundRecord)]
    if log.header["rules"]["game"] == EXPERTS:
        ax.plot(t, [r.regret for r in experts], label="regret", lw=1)
        ax.plot(t, [r.expected_regret for r in experts], label="expected regret", lw=1.5)
        d = log.header["rules"].get("experts") or 2
        ax.plot(t, np.sqrt(2 * t * math.log(max(d, 2))), "--", label="sqrt(2 t ln d)")
        ax.set_ylabel("regret")
    else:
        ax.step(t, [r.mistakes for r in rounds], where="post", label="mistakes")
        ax.plot(t, [r.expected_mistakes for r in rounds], lw=1, label="expected mistakes")
        ax.set_ylabel("cumulative mistakes")
    bound = result.get("bound")
    if bound is not None:
        ax.axhline(float(bound), color="crimson", ls=":",
                   label=f"bound: {result.get('bound_name', '')}"[:60])
    ax.set_xlabel("round t")
    ax.set_title(f"{title}\n{log.header['rules'].get('class') or ''}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def summary_table(log: GameLogData) -> str:
    """The header and the result as aligned lines."""
    head = log.header
    lines: dict[str, object] = {
        "game_id": head.get("game_id"), "game": head["rules"]["game"],
        "class": head["rules"].get("class"), "learner": head["learner"]["spec"],
        "adversary": head["adversary"]["spec"], "seed": head.get("seed"),
        "horizon": head["rules"]["rounds"], "rounds logged": log.n_rounds,
        "log level": head.get("log_level", "full"),
        "status": log.status, "log": str(log.path), "bytes": log.size,
    }
    lines.update(log.result)
    width = max(len(k) for k in lines)
    out = io.StringIO()
    for key, value in lines.items():
        out.write(f"{key:<{width}}  {value:.6g}\n" if isinstance(value, float)
                  else f"{key:<{width}}  {value}\n")
    return out.getvalue()
