"""Anchors: a log and the index row of its game. A game id names its log
(:func:`locate`); the row vouches for the log (:func:`anchoring`).

When a game ends, its index row keeps the final chain digest of its log and an HMAC of
it under the data folder's secret (:meth:`.store.Store.finish_game`). A log rewritten
after the fact, even with its whole chain recomputed, then no longer has the digest the
index recorded; a log of another game put in its place has another game's; an index row
edited without the secret fails its HMAC; a row edited to say otherwise than its log
(another learner, fewer mistakes) no longer agrees with the log it anchors. What this
cannot catch: whoever can write the whole data folder (the logs *and* the index, which
holds the secret) can forge both.

>>> import tempfile, pathlib
>>> from littlestone.games.classes import make_class
>>> from littlestone.games.game import GameSpec
>>> from littlestone.learners import LEARNERS
>>> from littlestone.adversaries import ADVERSARIES
>>> from littlestone.server.records.logged import play_logged
>>> from littlestone.server.records.logs import read_log
>>> data = pathlib.Path(tempfile.mkdtemp())
>>> game = GameSpec("mistake-bound", 20, make_class("thresholds:n=15"))
>>> done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 1, data)
>>> anchoring(read_log(done.log)).anchored
True
>>> copy = data / "elsewhere.lslog"
>>> _ = copy.write_bytes(done.log.read_bytes())
>>> anchoring(read_log(copy)).message
'not anchored: no index row for game ... (no index found)'
>>> print(anchoring(read_log(copy), data).message)
anchored: the index .../littlestone.db recorded this log's final chain digest when game ... ended
"""

from __future__ import annotations

import hmac
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from littlestone.server.records.folder import DEFAULT_DATA, INDEX_NAME, is_index, log_file
from littlestone.server.records.logs import ForeignLog, GameLogData, LogError
from littlestone.server.records.rows import GameRow
from littlestone.server.records.store import INTERRUPTED, RESULT_COLUMNS, STORAGE_STATUS, Store

__all__ = ["Anchoring", "anchoring", "data_folder_of", "locate", "resolve"]


def locate(log_or_id: str, data: str | Path = DEFAULT_DATA) -> tuple[Path, str | None]:
    """The log file named by a path, or by a game id in the data folder's index (then
    with that id, which :func:`anchoring` checks it against). The index and SQLite's
    files beside it are refused (:class:`~.logs.ForeignLog`) before anything opens them.

    >>> locate("no-such-game", "/nowhere")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.LogError: no log file or game id 'no-such-game' ...
    """
    path = Path(log_or_id)
    if is_index(path):
        raise ForeignLog(f"{path} is the SQLite index, not a game log")
    if path.is_file():
        return path, None
    if (Path(data) / INDEX_NAME).is_file():
        store = Store(Path(data))
        try:
            row = store.game(log_or_id)
        finally:
            store.close()
        if row is not None:
            logged = log_file(data, row["log"])
            if logged is not None and is_index(logged):
                raise ForeignLog(f"game {log_or_id}: its log {logged} is the SQLite index, "
                                 "not a game log")
            if logged is not None and logged.is_file():
                return logged, log_or_id
            if logged is None:
                raise LogError(f"game {log_or_id} was played with log level none: it has no "
                               "log (littlestone games --json shows its index row)")
            raise LogError(f"game {log_or_id}: its log {row.get('log')!r} is missing")
    raise LogError(f"no log file or game id {log_or_id!r} (data folder {data})")


def resolve(log_or_id: str, data: str | Path = DEFAULT_DATA) -> Path:
    """The log file named by a path or by a game id in the data folder's index
    (:func:`locate`)."""
    return locate(log_or_id, data)[0]


def data_folder_of(path: Path) -> Path | None:
    """The data folder a log lies in (``DIR/games/GAME_ID.lslog``), when it has an index.

    >>> data_folder_of(Path("/nowhere/games/g.lslog")) is None
    True
    """
    folder = path.resolve().parent
    if folder.name == "games" and (folder.parent / INDEX_NAME).is_file():
        return folder.parent
    return None


@dataclass
class Anchoring:
    """What the index says of a log. ``anchored`` is True when the index row of its game
    holds the log's final chain digest, under a valid HMAC, and agrees with the log's
    header and footer; False when it does not (the log was rewritten, replaced or
    swapped, or the row edited); None when nothing anchors it (no index row, or a row
    without a digest: a game still running, or indexed before digests were kept)."""

    anchored: bool | None
    message: str


def anchoring(log: GameLogData, data: str | Path | None = None, game_id: str | None = None
              ) -> Anchoring:
    """Check a log against the index row of its game. ``data`` is a data folder the
    caller named (``replay --data``): its index alone is asked, whatever lies beside
    the log (a forger's own index there must not vouch for a log the named one never
    saw). Without ``data``, the index of the data folder the log lies in is asked.
    ``game_id``: the log was named by its game id in ``data`` (then its row). The
    message names the index that answered."""
    named = str(log.header.get("game_id"))
    wanted = game_id or named
    folders = [data] if data is not None else [data_folder_of(log.path)]
    looked = []
    for folder in folders:
        if folder is None or not (Path(folder) / INDEX_NAME).is_file():
            continue
        index = Path(folder) / INDEX_NAME
        looked.append(str(index))
        store = Store(Path(folder))
        try:
            row = store.game(wanted)
            if row is not None:
                return _against_row(log, row, store, wanted, index)
        finally:
            store.close()
    where = f" in {' or '.join(looked)}" if looked else " (no index found)"
    return Anchoring(None, f"not anchored: no index row for game {wanted}{where}")


def _against_row(log: GameLogData, row: GameRow, store: Store, game_id: str,
                 index: Path) -> Anchoring:
    """The log against its game's index row (in ``index``): the row's HMAC, its digest,
    its columns."""
    recorded = row.get("chain_sha256")
    if not recorded:
        return Anchoring(None, f"not anchored: the index row of game {game_id} holds no "
                         f"chain digest ({_unfinished(row)}; the index {index})")
    mac = store.chain_hmac(game_id, str(recorded))
    if mac is None or not hmac.compare_digest(str(row.get("chain_hmac") or ""), mac):
        return Anchoring(False, f"the index row of game {game_id} fails its HMAC: its digest "
                         "was edited, or the row comes from another data folder")
    named = log.header.get("game_id")
    digest = log.chain.hex()
    if digest != recorded or named != game_id:
        other = f" (its header names game {named})" if named != game_id else ""
        return Anchoring(False, f"the log's final chain digest {digest[:16]}... is not the one "
                         f"the index recorded for game {game_id} when it ended "
                         f"({str(recorded)[:16]}...): the log was rewritten or replaced{other}")
    differs = _row_differs(log, row)
    if differs is not None:
        return Anchoring(False, f"the index row of game {game_id} differs from its log: "
                         f"{differs}: the row was edited")
    return Anchoring(True, f"anchored: the index {index} recorded this log's final chain "
                     f"digest when game {game_id} ended")


def _unfinished(row: GameRow) -> str:
    """Why a game's row holds no digest: it runs, it was interrupted (its process
    ended first: ``interrupted``; the disk filled: ``aborted:storage``), or it was
    indexed by a littlestone that kept none."""
    status = str(row.get("status") or "")
    if status == "running":
        return "the game has not ended"
    if status == INTERRUPTED:
        return ("interrupted: the process that ran the game ended before it did; its log "
                "holds the game up to its last whole round")
    if status == STORAGE_STATUS:
        return ("interrupted: the disk was full (aborted:storage); its log holds the game "
                "up to its last whole frame")
    return "it was indexed by a littlestone that kept no digests"


def _same_cell(cell: Any, value: Any) -> bool:
    """An index cell against the log's value (SQLite stores NaN as NULL)."""
    if cell is None or value is None:
        return cell is None and (value is None or (isinstance(value, float)
                                                   and math.isnan(value)))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return isinstance(cell, int | float) and float(cell) == float(value)
    return bool(cell == value)


def _row_differs(log: GameLogData, row: GameRow) -> str | None:
    """The first column of an index row that says otherwise than the log, or None."""
    rules = log.header.get("rules", {})
    pairs: list[tuple[str, Any]] = [
        ("learner", log.header["learner"]["spec"]), ("adversary", log.header["adversary"]["spec"]),
        ("seed", log.header.get("seed")), ("game", rules.get("game")),
        ("class", rules.get("class")),
    ]
    if log.footer is not None:  # (a game cut short has a status and no result)
        result = log.footer.get("result") or {}
        pairs.append(("status", log.footer.get("status")))
        pairs += [(column, result.get(column)) for column in RESULT_COLUMNS
                  if column != "status" and result]
    for column, value in pairs:
        if not _same_cell(row.get(column), value):
            return f"its {column} is {row.get(column)!r}, the log's {value!r}"
    return None
