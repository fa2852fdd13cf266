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
           "is_index", "opened"]

#: Where games are kept unless ``--data`` (or :data:`DATA_VARIABLE`) says otherwise.
DEFAULT_DATA = "littlestone-data"
#: The environment variable that, when set, is the default data folder instead.
DATA_VARIABLE = "LITTLESTONE_DATA"


def default_data() -> str:
    """The data folder a command uses without ``--data``: ``$LITTLESTONE_DATA``, else
    ``./littlestone-data``."""
    return os.environ.get(DATA_VARIABLE) or DEFAULT_DATA


#: The index's file in a data folder; SQLite keeps ``-wal`` and ``-shm`` files beside it.
INDEX_NAME = "littlestone.db"
INDEX_FILES = (INDEX_NAME, f"{INDEX_NAME}-wal", f"{INDEX_NAME}-shm", f"{INDEX_NAME}-journal")


#: The indexes this process opened (their absolute paths), for :func:`is_index`.
_OPENED: set[Path] = set()


def is_index(path: str | Path) -> bool:
    """Whether ``path`` is an index or one of SQLite's files beside it, told without
    opening it: by its name or its target's (through symbolic links), or as the same file
    (another name, a hard link) as an index this process opened."""
    path = Path(path)
    if path.name in INDEX_FILES:
        return True
    with contextlib.suppress(OSError, RuntimeError):
        if path.resolve().name in INDEX_FILES:
            return True
    with contextlib.suppress(OSError):
        if os.stat(path).st_nlink <= 1:
            return False  # its one name is not an index's: no other name can be
    for index in list(_OPENED):  # (a hard link: as costly as the indexes this process opened)
        for name in INDEX_FILES:
            with contextlib.suppress(OSError):
                if os.path.samefile(path, index.with_name(name)):
                    return True
    return False


def opened(index: Path) -> None:
    """Remember an index this process opened, so that :func:`is_index` knows it by
    identity under any other name."""
    _OPENED.add(index.absolute())
