"""``python -m littlestone``: the command line (:mod:`littlestone.cli`)."""

from __future__ import annotations

import sys

from littlestone.cli import main

if __name__ == "__main__":
    sys.exit(main())
