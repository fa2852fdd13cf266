"""What the tests share besides fixtures (those are in tests/conftest.py): the agents,
the cheaters and the servers they play with, the fuzzing properties, the hostile
submissions, a competition's file, and where the repository is."""

from __future__ import annotations

from pathlib import Path

#: The repository's root (this folder is tests/support/).
ROOT = Path(__file__).resolve().parents[2]
#: Hostile submissions, a student's file each (the sandbox's and the tournament's tests).
HOSTILE = Path(__file__).resolve().parent / "hostile"
