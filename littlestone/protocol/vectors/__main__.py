"""``python -m littlestone.protocol.vectors [--check]``: write the test vectors (or say
which checked-in file differs from what the code makes, exit status 1)."""

from __future__ import annotations

import sys

from littlestone.protocol.vectors import FOLDER, check, write


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = check()
        for name in stale:
            print(f"{FOLDER / name}.json differs from what the code makes", file=sys.stderr)
        return 1 if stale else 0
    if argv:
        print("usage: python -m littlestone.protocol.vectors [--check]", file=sys.stderr)
        return 2
    for path in write():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
