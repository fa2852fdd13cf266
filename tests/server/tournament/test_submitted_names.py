"""A refused submission names the student's own file (issue 44 item 5): the refusal, the
check's messages and its tips say ``raises.py:Raiser (your v2)`` and ``raises.py:LINE``,
never the stored ``v2.py`` nor the server's path (main said ``v2.py:Raiser``)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from littlestone.server.tournament.competition import load_competition
from littlestone.server.tournament.competition.door import Competition
from tests.server.tournament.test_competition import COMPETITION, GOOD, OPENS, Clock, needs_sandbox

RAISES = '''"""Halving that raises in predict."""
from littlestone.learners.halving import Halving


class Raiser(Halving):
    """Halving, but its predict divides by zero."""

    def predict(self, x):
        return 1 / 0
'''


@pytest.mark.slow
@needs_sandbox
def test_a_refusal_names_the_file_the_student_uploaded(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(COMPETITION)
    data = tmp_path / "data"
    competition = Competition(load_competition(config), data,
                              now=Clock(OPENS + timedelta(hours=1)))
    try:
        first = competition.enter("ann", "work/good.py:Good", GOOD.encode())
        refused = competition.enter("ann", "work/raises.py:Raiser", RAISES.encode())
    finally:
        competition.close()
    assert first["verdict"] == "accepted" and first["version"] == 1
    assert refused["verdict"] == "refused" and refused["version"] == 2
    said = "\n".join([refused["message"], *(c["message"] for c in refused["checks"])])
    assert refused["message"].startswith("raises.py:Raiser (your v2) fails"), said
    assert "raises.py:9" in said, said  # the line of its 1 / 0
    assert "v2.py" not in said and str(data) not in said and "/submission" not in said, said
