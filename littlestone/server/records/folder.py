"""The data folder: where it is, and which of its files are the index's.

Told apart without opening them, so that a log's reader can refuse the index by name
and by identity before anything opens it (a process that closes any descriptor of the
SQLite file loses its POSIX locks: docs/design.md section 5). Imports nothing of ours.

>>> is_index("somewhere/littlestone.db-wal"), is_index("somewhere/game.log")
(True, False)
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["DATA_VARIABLE", "DEFAULT_DATA", "INDEX_FILES", "INDEX_NAME", "default_data",
           "is_index", "log_file", "opened"]

#: Where games are kept unless ``--data`` (or :data:`DATA_VARIABLE`) says otherwise.
DEFAULT_DATA = "littlestone-data"
#: The environment variable that, when set, is the default data folder instead.
DATA_VARIABLE = "LITTLESTONE_DATA"


def default_data() -> str:
    """The data folder a command uses without ``--data``: ``$LITTLESTONE_DATA``, else
    ``./littlestone-data``."""
    return os.environ.get(DATA_VARIABLE) or DEFAULT_DATA


def log_file(data: str | Path, log: str | Path | None) -> Path | None:
    """Where a game's log lies, as its index row names it (``log``): the index keeps it
    relative to the data folder (or absolute, for a log kept outside it), and a row the
    index gave back names it absolute already; None for a game played with log level
    ``none``. Whether the file is there is the caller's to ask.

    >>> log_file("/srv/data", "games/g.lslog")
    PosixPath('/srv/data/games/g.lslog')
    >>> log_file("/srv/data", "/srv/data/games/g.lslog"), log_file("/srv/data", None)
    (PosixPath('/srv/data/games/g.lslog'), None)
    """
    return None if not log else Path(os.path.abspath(Path(data) / log))


#: The index's file in a data folder; SQLite keeps ``-wal`` and ``-shm`` files beside it.
INDEX_NAME = "littlestone.db"
INDEX_FILES = (INDEX_NAME, f"{INDEX_NAME}-wal", f"{INDEX_NAME}-shm", f"{INDEX_NAME}-journal")


#: The files of the indexes this process opened, by identity (device, inode) as they were
#: when opened: another path to one of them (a hard link, a bind mount, a case-insensitive
#: or a short name) is the same file, whatever its name, found in one stat.
_OPENED: dict[tuple[int, int], Path] = {}
#: The indexes this process opened: SQLite may make their -wal and -shm files again
#: since, under new identities (a hard link to one is compared with them as they are now).
_INDEXES: set[Path] = set()


def is_index(path: str | Path) -> bool:
    """Whether ``path`` is an index or one of SQLite's files beside it, told without
    opening it: by its name or its target's (through symbolic links), or as the same file
    (another name: a hard link, a bind mount, a name a case-insensitive file system folds)
    as one of an index this process opened."""
    path = Path(path)
    if path.name in INDEX_FILES:
        return True
    with contextlib.suppress(OSError, RuntimeError):
        if path.resolve().name in INDEX_FILES:
            return True
    with contextlib.suppress(OSError):
        info = os.stat(path)
        known = _OPENED.get((info.st_dev, info.st_ino))
        # (the file is still there: a file made since may have the inode of one deleted,
        # whose name may be gone too)
        if known is not None and _same(path, known):
            return True
        if info.st_nlink > 1:  # another name of a file SQLite made since it was opened
            return any(_same(path, index.with_name(name))
                       for index in list(_INDEXES) for name in INDEX_FILES)
    return False


def _same(path: Path, other: Path) -> bool:
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


def opened(index: Path) -> None:
    """Remember an index this process opened (and SQLite's files beside it, which its
    connection made), so that :func:`is_index` knows them by identity under any name."""
    _INDEXES.add(index.absolute())
    for name in INDEX_FILES:
        with contextlib.suppress(OSError):
            file = index.with_name(name).absolute()
            info = os.stat(file)
            _OPENED[(info.st_dev, info.st_ino)] = file
