"""A competition's file: its tournament and its ``[competition]`` table
(:func:`load_competition`), and the entrant a stored version is in that tournament
(:func:`version_spec`)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from littlestone.games.errors import ConfigError
from littlestone.server.records.rows import SubmissionRow
from littlestone.server.tournament.config import COMPETITION_TABLE, TournamentConfig, load_config
from littlestone.server.tournament.preflight import ROLES

__all__ = ["RATING_SECONDS", "CompetitionConfig", "default_raters", "load_competition",
           "version_spec"]

_KNOWN = {"submitted", "opens", "closes", "versions_per_day", "max_kb", "final",
          "version_disk_mb", "check_seconds", "raters", "rating_seconds"}

#: A version's whole rating's most wall time (seconds), by default: past it, its games
#: not played yet are recorded as its fault (``over_time``), so that a version that
#: answers each move just under the deadline holds one rating lane this long at most.
RATING_SECONDS = 600.0


def default_raters() -> int:
    """The rating lanes by default: two more than the cores. A lane whose version is
    slow mostly waits on its sandbox's moves and holds no core, so two lanes held by
    slow versions leave one lane a core to the others; honest versions, which compute,
    share the cores among the lanes and are rated no slower in all than with one lane a
    core (issue 41)."""
    return (os.cpu_count() or 1) + 2


@dataclass(frozen=True)
class CompetitionConfig:
    """A competition's file: its tournament (the field's built-ins, the games, the
    limits) and the ``[competition]`` table (the module's docstring)."""

    tournament: TournamentConfig
    path: Path
    submitted: tuple[str, ...] = ("learner",)
    opens: datetime | None = None
    closes: datetime | None = None
    versions_per_day: int = 10
    max_bytes: int = 64 << 10
    final: str = "last"
    version_disk_mb: int = 64
    check_seconds: float = 30.0
    #: Rating lanes (versions rated at once); 0: :func:`default_raters`.
    raters: int = 0
    rating_seconds: float = RATING_SECONDS

    @property
    def name(self) -> str:
        return self.tournament.name

    def state(self, now: datetime) -> str:
        """``open``, ``not_open`` (before ``opens``) or ``closed`` (from ``closes``)."""
        if self.opens is not None and now < self.opens:
            return "not_open"
        if self.closes is not None and now >= self.closes:
            return "closed"
        return "open"


def load_competition(path: str | Path) -> CompetitionConfig:
    """Read and check a competition's file (ConfigError naming the file and key)."""
    tournament = load_config(path, competition=True)
    raw = tomllib.loads(tournament.source).get(COMPETITION_TABLE)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a competition's file needs a [{COMPETITION_TABLE}] table")

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{path}: {COMPETITION_TABLE}.{key}: {message}")

    for key in raw:
        if key not in _KNOWN:
            raise fail(key, "unknown key")
    submitted = raw.get("submitted", ["learner"])
    if not isinstance(submitted, list) or not submitted or any(r not in ROLES
                                                               for r in submitted):
        raise fail("submitted", "a list of learner, adversary")
    times: dict[str, datetime | None] = {}
    for key in ("opens", "closes"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            raise fail(key, "a TOML date-time with its offset, e.g. 2026-12-02T08:00:00Z")
        times[key] = value
    if times["opens"] and times["closes"] and times["closes"] <= times["opens"]:
        raise fail("closes", "must come after opens")
    counts = {}
    for key, default in (("versions_per_day", 10), ("max_kb", 64), ("version_disk_mb", 64)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 1 << 20:
            raise fail(key, "a whole number from 1 to 2^20 - 1")
        counts[key] = value
    seconds = raw.get("check_seconds", 30)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not \
            0 < seconds <= 600:
        raise fail("check_seconds", "a number of seconds, above 0 and at most 600")
    raters = raw.get("raters", 0)
    if isinstance(raters, bool) or not isinstance(raters, int) or not 0 <= raters <= 64:
        raise fail("raters", "a whole number from 1 to 64 (0: two more than the cores)")
    rating = raw.get("rating_seconds", RATING_SECONDS)
    if isinstance(rating, bool) or not isinstance(rating, int | float) or not \
            0 < rating <= 86400:
        raise fail("rating_seconds", "a number of seconds, above 0 and at most 86400")
    final = raw.get("final", "last")
    if final not in ("last", "best"):
        raise fail("final", "last or best")
    return CompetitionConfig(tournament, Path(path).resolve(), tuple(submitted),
                             times["opens"], times["closes"], counts["versions_per_day"],
                             counts["max_kb"] << 10, final, counts["version_disk_mb"],
                             float(seconds), raters, float(rating))


def version_spec(data: Path, row: SubmissionRow) -> str:
    """The entrant a version is in the competition's tournament: its stored file and
    its class (``/DATA/competitions/NAME/ann/v2.py:Learner``)."""
    return f"{(data / row['path']).resolve()}:{row['agent'].partition('.py:')[2]}"
