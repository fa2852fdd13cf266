"""The data folder's disk: what games may still write there, and a disk that is full.

A game holds its estimated disk (:func:`.policy.game_disk`) from its admission to its
end (:class:`DiskLedger`): a new game is refused ``over_budget`` (PROTOCOL.md 1.2) when
its token's games (the logs of its finished games, in the index, and the estimates of
those it plays now) would pass ``token_disk_mb``, when the data folder would pass
``data_disk_mb``, or when the disk would keep less than ``min_free_mb`` free after the
estimates of every game running. The reason says which.

A disk can still fill (another program, an estimate too low): a log that cannot be
written ends its game ``aborted:storage`` (:mod:`.hosting`), and the ledger is then
*full*: new games are refused with ``unavailable`` (PROTOCOL.md 6) until the disk has
room again (:meth:`DiskLedger.recovered`, checked every :data:`FULL_CHECK_S`). The
ledger keeps a small reserve file in the folder (:data:`RESERVE_BYTES`), given back to
the system when the disk fills, so that the index can still record how the games it
stopped ended.

>>> import tempfile, pathlib
>>> from littlestone.server.net.settings import Budgets
>>> ledger = DiskLedger(pathlib.Path(tempfile.mkdtemp()), Budgets(token_disk_mb=1))
>>> hold = ledger.hold("g1", ["ann"], 600_000)
>>> ledger.check(["ann"], 600_000)
Traceback (most recent call last):
...
littlestone.games.errors.OverBudget: over budget: this token's games would take ...
>>> ledger.release(hold, written=1000); ledger.by_account["ann"]
1000
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from littlestone.games.errors import OverBudget, Unavailable
from littlestone.server.net.settings import Budgets
from littlestone.server.records.folder import INDEX_FILES

__all__ = ["FULL_CHECK_S", "RESERVE_BYTES", "RESERVE_NAME", "DiskLedger", "Hold",
           "Unavailable", "folder_bytes"]

log = logging.getLogger(__name__)

#: The reserve file in the data folder, and its size: given back when the disk fills,
#: so that the index can record how the stopped games ended.
RESERVE_NAME = ".littlestone-reserve"
RESERVE_BYTES = 4 << 20
#: Seconds between two looks at a full disk.
FULL_CHECK_S = 2.0


@dataclass
class Hold:
    """What a game holds of the disk: its estimate, less what its log wrote so far."""

    game_id: str
    accounts: list[str]
    estimate: int
    #: The game's log writer, once it has one (its ``bytes_written``).
    writer: Any = None

    @property
    def written(self) -> int:
        return int(getattr(self.writer, "bytes_written", 0))

    @property
    def left(self) -> int:
        return max(0, self.estimate - self.written)


def folder_bytes(data: Path) -> int:
    """The bytes of a data folder's logs and index, as they lie on disk."""
    total = 0
    for name in INDEX_FILES:
        with contextlib.suppress(OSError):
            total += (data / name).stat().st_size
    with contextlib.suppress(OSError), os.scandir(data / "games") as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    return total


@dataclass
class DiskLedger:
    """The disk a server's games hold and may still take (see the module's docstring)."""

    data: Path
    budgets: Budgets
    #: The data folder's logs and index: measured at start, plus what games wrote since.
    folder: int = 0
    #: The bytes charged to each account (its finished games' logs, from the index).
    by_account: Counter[str] = field(default_factory=Counter)
    holds: dict[str, Hold] = field(default_factory=dict)
    #: Why new games are refused (the disk is full), or None.
    full: str | None = None

    def measure(self, charged: dict[str, int]) -> None:
        """Count the folder (at start, in a worker thread) and the accounts' charges
        (:meth:`~littlestone.server.records.store.Store.disk_by_account`); lay the
        reserve."""
        self.folder = folder_bytes(self.data)
        self.by_account = Counter(charged)
        self.reserve()

    def free(self) -> int:
        """Bytes free on the data folder's disk (for an unprivileged writer)."""
        return shutil.disk_usage(self.data).free

    def check(self, accounts: Iterable[str], estimate: int, what: str = "game") -> None:
        """Refuse a game of these accounts that would write ``estimate`` bytes:
        ``unavailable`` while the disk is full, ``over_budget`` beyond a budget.
        ``what`` the refusal names (a competition's door: ``version``)."""
        if self.full is not None:
            raise Unavailable(f"unavailable: {self.full}; try again later")
        budgets, mib = self.budgets, 1 << 20
        held = sum(h.left for h in self.holds.values())
        if self.folder + held + estimate > budgets.data_disk_mb * mib:
            raise OverBudget("data_disk_mb", f"over budget: the data folder would take "
                             f"{(self.folder + held + estimate) // mib} MiB, over its "
                             f"budget of {budgets.data_disk_mb} MiB")
        for account in set(accounts):
            mine = self.by_account[account] + sum(
                h.left for h in self.holds.values() if account in h.accounts)
            if mine + estimate > budgets.token_disk_mb * mib:
                raise OverBudget("token_disk_mb", f"over budget: this token's {what}s would "
                                 f"take {(mine + estimate) // mib} MiB of disk, over its "
                                 f"budget of {budgets.token_disk_mb} MiB")
        free = self.free()
        if free - held - estimate < budgets.min_free_mb * mib:
            raise OverBudget("min_free_mb", f"over budget: the data folder's disk has "
                             f"{free // mib} MiB free, {held // mib} MiB of them held by "
                             f"the games running; this {what} may write {estimate // mib} "
                             f"MiB and {budgets.min_free_mb} MiB must stay free")

    def hold(self, game_id: str, accounts: Iterable[str], estimate: int) -> Hold:
        """:meth:`check`, then hold ``estimate`` bytes for the game until
        :meth:`release`."""
        accounts = sorted(set(accounts))
        self.check(accounts, estimate)
        hold = self.holds[game_id] = Hold(game_id, accounts, estimate)
        return hold

    def release(self, hold: Hold, written: int | None = None) -> None:
        """The game is over: what its log wrote is the folder's and its accounts'."""
        if self.holds.get(hold.game_id) is hold:
            del self.holds[hold.game_id]
        size = hold.written if written is None else written
        self.folder += size
        for account in hold.accounts:
            self.by_account[account] += size

    # -- a full disk -------------------------------------------------------------------

    def failed(self, error: BaseException) -> None:
        """A write failed (the disk is full, or refuses): new games are refused
        ``unavailable`` until :meth:`recovered`; the reserve goes back to the system,
        for the index's last rows."""
        if self.full is None:
            log.warning("the data folder's disk cannot be written (%s): its games end "
                        "aborted:storage, new games are refused (unavailable) until it "
                        "has room", error, extra={"code": "unavailable"})
        self.full = "the data folder's disk is full"
        with contextlib.suppress(OSError):
            (self.data / RESERVE_NAME).unlink()

    def recovered(self) -> bool:
        """Whether a full disk has room again (then the reserve is laid again, and new
        games are admitted): :data:`RESERVE_BYTES` and ``min_free_mb`` free."""
        if self.full is None:
            return True
        needed = RESERVE_BYTES + self.budgets.min_free_mb * (1 << 20)
        try:
            if self.free() < needed or not self.reserve():
                return False
        except OSError:
            return False
        self.full = None
        log.info("the data folder's disk has room again: new games are admitted")
        return True

    def reserve(self) -> bool:
        """Lay the reserve file (False: the disk has no room for it)."""
        path = self.data / RESERVE_NAME
        try:
            if path.is_file() and path.stat().st_size >= RESERVE_BYTES:
                return True
            with open(path, "wb") as reserve:
                os.posix_fallocate(reserve.fileno(), 0, RESERVE_BYTES)
            return True
        except OSError:
            with contextlib.suppress(OSError):
                path.unlink()
            return False
