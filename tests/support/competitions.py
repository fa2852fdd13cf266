"""A competition's TOML file as the competition's tests and the deadline bench write it
(tests/server/tournament/test_competition.py, test_rating_lanes.py,
tests/server/web/test_standings_web.py, tests/cli/test_check_newcomer.py,
benchmarks/deadline.py): the built-in Halving against built-in adversaries on
thresholds, the students submitting learners; a caller names what its file changes.

>>> from datetime import UTC, datetime
>>> print(competition_file(rounds=30, closes=datetime(2026, 12, 2, 8, tzinfo=UTC)))
learners = ["halving"]
adversaries = ["random-target"]
<BLANKLINE>
[tournament]
name = "week-5"
rounds = 30
seeds = 1
games = ["mistake-bound"]
<BLANKLINE>
[[classes]]
spec = "thresholds:n=15"
<BLANKLINE>
[competition]
submitted = ["learner"]
closes = 2026-12-02T08:00:00Z
<BLANKLINE>
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TypeAlias

__all__ = ["competition_file"]

#: A value of a key of the competition's file.
Value: TypeAlias = bool | int | float | str | datetime | Sequence[str]


def toml_value(value: Value) -> str:
    """``value`` as TOML writes it (a datetime in UTC, as the competition's file asks).

    >>> toml_value(["learner"]), toml_value(0.5), toml_value("last")
    ('["learner"]', '0.5', '"last"')
    """
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    return "[" + ", ".join(map(toml_value, value)) + "]"


def competition_file(name: str = "week-5", rounds: int = 40, *,
                     adversaries: Sequence[str] = ("random-target",),
                     classes: Sequence[str] = ("thresholds:n=15",), seeds: int = 1,
                     limits: Mapping[str, float] | None = None,
                     **competition: Value) -> str:
    """The file of a competition ``name`` whose games are ``rounds`` long: Halving
    against ``adversaries`` on each of ``classes``, ``seeds`` seeds; ``limits``: its
    ``[limits]`` table; ``competition``: the keys of its ``[competition]`` table after
    ``submitted = ["learner"]``, in their order (its dates, quotas, final rule)."""
    lines = ['learners = ["halving"]', f"adversaries = {toml_value(adversaries)}", "",
             "[tournament]", f"name = {toml_value(name)}", f"rounds = {rounds}",
             f"seeds = {seeds}", 'games = ["mistake-bound"]', ""]
    for spec in classes:
        lines += ["[[classes]]", f"spec = {toml_value(spec)}", ""]
    if limits:
        lines += ["[limits]", *(f"{key} = {toml_value(value)}"
                                for key, value in limits.items()), ""]
    table: dict[str, Value] = {"submitted": ["learner"], **competition}
    lines += ["[competition]", *(f"{key} = {toml_value(value)}" for key, value in table.items())]
    return "\n".join(lines) + "\n"
