"""Verifying a logged game (``replay --verify``): its hash chain (checked as it is
read), its anchor (:mod:`.anchors`) and, for a game whose agents all ran in process, its
re-simulation (:mod:`.resimulation`) compared record by record, or for a compact log
result against footer.

>>> import tempfile, pathlib
>>> from littlestone.games.classes import make_class
>>> from littlestone.learners import LEARNERS
>>> from littlestone.adversaries import ADVERSARIES
>>> from littlestone.server.records.logged import play_logged
>>> from littlestone.server.records.logs import read_log
>>> data = pathlib.Path(tempfile.mkdtemp())
>>> game = GameSpec("mistake-bound", 40, make_class("thresholds:n=63"))
>>> done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 3, data)
>>> report = verify(read_log(done.log))
>>> report.ok, report.anchored
(True, True)
>>> print(report.message)
all 40 rounds and the result match; anchored: the index .../littlestone.db recorded this
log's final chain digest when game ... ended
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from littlestone.adversaries.base import Adversary
from littlestone.games.errors import LogError, RecordDiffers
from littlestone.games.game import ExpertsRecord, GameResult, GameSpec, RoundRecord
from littlestone.learners.base import Learner
from littlestone.local import play

# a logged game may have been played against a replay: re-simulating it builds one
from littlestone.server.records import playback  # noqa: F401 - registers ``replay``
from littlestone.server.records.anchors import anchoring
from littlestone.server.records.logged import package_version
from littlestone.server.records.logs import GameLogData, checked
from littlestone.server.records.logs.format import ExpertVector
from littlestone.server.records.resimulation import (
    game_agents,
    game_key,
    game_spec,
    is_compact,
    resimulated,
)
from littlestone.server.records.rows import LogFooter

__all__ = ["VerifyReport", "verify"]


@dataclass
class VerifyReport:
    """What ``replay --verify`` found. ``ok`` when everything held: the records (re-simulated
    and equal, or for a game with a remote player, which cannot be re-simulated, whole)
    and the anchor (the index row of the game holds this log's final digest)."""

    ok: bool
    message: str
    rounds_checked: int
    #: As :attr:`.anchors.Anchoring.anchored` (None: nothing anchors the log).
    anchored: bool | None = None
    #: The records alone hold, whatever the index says.
    records_ok: bool = False


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is not None and b is not None and np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, float) or isinstance(b, float):
        return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))
    return bool(a == b)


_COMPARED = {
    RoundRecord: ("t", "x", "p", "y", "prediction", "mistake", "loss", "mistakes",
                  "expected_mistakes"),
    ExpertsRecord: ("t", "x", "p", "y", "drawn", "loss", "expected_loss", "regret",
                    "expected_regret"),
}


def verify(log: GameLogData, data: str | Path | None = None, game_id: str | None = None
           ) -> VerifyReport:
    """Check a log three ways: its hash chain (checked when it was read), its anchor (the
    index row of its game, :func:`.anchors.anchoring`; ``data`` and ``game_id`` as there) and the
    re-simulation of the game from its seeds with the same agents, record by record (not
    for a game with a remote player, whose moves came over the wire). Not ok unless all
    hold: a log nothing anchors is not verified, however well it re-simulates."""
    anchor = anchoring(checked(log), data, game_id)
    records = _records(log, anchor.anchored is True)
    parts = [records.message]
    if anchor.anchored is True and records.ok:
        parts.append(anchor.message)
    elif anchor.anchored is not True:
        parts.insert(0, anchor.message)
    return VerifyReport(records.ok and anchor.anchored is True, "; ".join(parts),
                        records.rounds_checked, anchor.anchored, records.ok)


#: An experts round's vectors, compared where the log keeps them in full.
_VECTORS: tuple[ExpertVector, ...] = ("advice", "weights", "costs")


def _records(log: GameLogData, anchored: bool) -> VerifyReport:
    """The records alone: re-simulated and compared (or, remote, whole)."""
    remote = [r for r in ("learner", "adversary")
              if str(log.header[r]["spec"]).startswith("remote:")]
    if remote:  # its moves came over the wire: only the hash chain can vouch for them
        return VerifyReport(log.footer is not None,
                            f"the hash chain of all {log.n_rounds} rounds is intact; the "
                            f"{' and '.join(remote)} played remotely, so the game cannot be "
                            "re-simulated" + ("" if log.footer else " (and the log is "
                                              "incomplete)"), log.n_rounds)
    try:
        spec = game_spec(log, anchored)
        learner, adversary = game_agents(log, anchored)
    except LogError as exc:
        return VerifyReport(False, str(exc), 0)
    if is_compact(log):
        return _compact_records(log, spec, learner, adversary)
    logged = log.records()
    checked = 0

    def compare(record: Any) -> None:
        nonlocal checked
        expected = next(logged, None)
        if expected is None:
            raise RecordDiffers(record.t, "the log ends before it")
        for name in _COMPARED[type(record)]:
            if not _same(getattr(record, name), getattr(expected, name)):
                raise RecordDiffers(record.t, f"{name} is {getattr(expected, name)!r} in the log, "
                               f"{getattr(record, name)!r} when replayed")
        if isinstance(record, ExpertsRecord):
            stored = log.expert_rounds[record.t - 1]
            for name in _VECTORS:
                value = getattr(record, name)
                if name in stored and not _same(value, stored[name]):
                    raise RecordDiffers(record.t, f"{name} differs")
        checked += 1

    try:
        key_of_game = game_key(log)
    except LogError as exc:
        return VerifyReport(False, str(exc), 0)
    try:
        result = play(spec, learner, adversary, int(log.header["seed"]), on_record=compare,
                      key=key_of_game)
    except RecordDiffers as exc:
        why, written_by = str(exc), log.header.get("package")
        if written_by is not None and written_by != package_version():
            why += (f" (the log was written by littlestone {written_by}, this is "
                    f"{package_version()}: re-simulate with the version that wrote it)")
        return VerifyReport(False, why, exc.t - 1)
    if log.footer is None:
        return VerifyReport(False, f"the log is incomplete (no footer): the {checked} rounds it "
                            "holds match the re-simulation", checked)
    if checked != log.n_rounds:
        return VerifyReport(False, f"the log holds {log.n_rounds} rounds, the replay "
                            f"{checked}", checked)
    differs = _result_differs(log.footer, result, "log", "replayed")
    if differs is not None:
        return VerifyReport(False, differs, checked)
    return VerifyReport(True, f"all {checked} rounds and the result match", checked)


#: What every footer's result holds (a footer without one of them hides it: no match).
_REQUIRED = ("status", "rounds", "mistakes", "expected_mistakes", "regret", "expected_regret")


# (footer: a log's, as its reader kept the map it read)
def _result_differs(footer: LogFooter, result: GameResult, where: str, how: str
                    ) -> str | None:
    """The first way the footer says otherwise than the re-simulated result, or None."""
    logged = dict(footer.get("result") or {})
    for key, value in result.to_dict().items():
        if key not in logged and key in _REQUIRED:
            return f"the result's {key} is missing from the {where}, {value!r} when {how}"
        if key in logged and not _same(logged[key], value):
            return f"the result's {key} is {logged[key]!r} in the {where}, {value!r} when {how}"
    status = footer.get("status")
    if status != result.status:
        return f"the status is {status!r} in the {where}, {result.status!r} when {how}"
    return None


def _compact_records(log: GameLogData, spec: GameSpec, learner: Learner, adversary: Adversary
                     ) -> VerifyReport:
    """A compact log holds no rounds: its re-simulation's result against its footer."""
    try:
        result, kept = resimulated(log, spec, learner, adversary)
    except LogError as exc:
        return VerifyReport(False, str(exc), 0)
    if log.footer is None:
        return VerifyReport(False, "the compact log is incomplete (no footer)", 0)
    differs = _result_differs(log.footer, result, "compact log", "re-simulated")
    if differs is not None:
        return VerifyReport(False, differs, 0)
    return VerifyReport(True, f"compact log: the game re-simulated from its seeds ({len(kept)} "
                        "rounds) gives the result its footer holds", len(kept))
