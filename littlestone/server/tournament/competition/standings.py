"""The standings of a competition (:func:`standings`): each student's last (or best)
rated version ranked with the built-ins, every version with its verdict and scores; at
the close, frozen once (:func:`freeze`)."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from littlestone.server.records.database import utc_now
from littlestone.server.records.rows import TournamentGame
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition.config import CompetitionConfig, version_spec
from littlestone.server.tournament.pairing import spaces
from littlestone.server.tournament.ranking import ROLES, Standing, rank
from littlestone.server.tournament.ratings import rank_sampled
from littlestone.server.tournament.schedule import is_sampled

__all__ = ["Placing", "Standings", "VersionGame", "VersionRow", "final_path", "freeze", "standings"]

log = logging.getLogger(__name__)


class Placing(TypedDict):
    """A row of the ranking: an entrant (a student, named by its account, or a built-in,
    by its spec), its rank in its role and its scores."""

    role: str
    rank: int | None
    entrant: str
    version: int | None
    score: float | None
    median: float | None
    rating: float | None
    rating_low: float | None
    rating_high: float | None
    games: int
    failed: int
    sha256: str | None
    builtin: bool


#: A game a version played, as its row of the standings lists it.
VersionGame = TypedDict("VersionGame", {
    "game_id": str | None, "status": str, "message": str, "class": str | None,
    "learner": str, "adversary": str, "mistakes": float | None})


class VersionRow(TypedDict):
    """A version submitted: its verdict (the check's report), its rating and its games."""

    id: int
    account: str
    version: int
    agent: str
    sha256: str
    bytes: int
    submitted: str
    verdict: str
    reason: str | None
    role: str | None
    rating: str | None
    score: float | None
    games: int
    failed: int
    report: dict[str, Any]
    game_list: list[VersionGame]


class Standings(TypedDict):
    """The competition as it stands (``final``: frozen at the close, ``frozen`` when)."""

    competition: str
    final: bool
    frozen: str | None
    mode: str
    submitted: list[str]
    opens: str | None
    closes: str | None
    games: int
    ranking: list[Placing]
    versions: list[VersionRow]


def final_path(config: CompetitionConfig, data: Path) -> Path:
    """Where the final ranking is frozen (``competitions/NAME/final.json``)."""
    return Path(data).resolve() / "competitions" / config.name / "final.json"


def freeze(store: Store, config: CompetitionConfig, data: Path, now: datetime) -> bool:
    """At the close (``now`` on or after ``closes``), once nothing waits for its check or
    rating: the standings frozen, once (True when they are)."""
    path = final_path(config, data)
    if path.exists():
        return True
    if config.state(now) != "closed":
        return False
    if any(v["verdict"] == "checking" or v["rating"] in ("queued", "rating")
           for v in store.submissions(config.name)):
        return False
    final = standings(store, config, data)
    final["final"], final["frozen"] = True, utc_now()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(final, default=str))
    partial.replace(path)
    log.info("competition %s: closed; the final ranking is frozen", config.name)
    return True


def standings(store: Store, config: CompetitionConfig, data: Path) -> Standings:
    """The competition as it stands: the frozen final ranking once there is one; else
    each student's last rated version (or best, as the file says) ranked with the
    built-ins on the games between them, and every version with its verdict and its
    own scores (against every entrant it played)."""
    data = Path(data).resolve()
    final = final_path(config, data)
    if final.exists():
        frozen: Standings = json.loads(final.read_text())
        return frozen
    versions = store.submissions(config.name)
    rows = store.tournament_games(config.name)
    for row in rows:
        row.pop("log", None)
    everyone = rank(config.name, rows, [])
    of_spec = {version_spec(data, v): v for v in versions if v["verdict"] == "accepted"}
    scores: dict[str, Standing] = {}
    for role, entries in zip(ROLES, (everyone.learners, everyone.adversaries), strict=True):
        for entry in entries:
            scores[entry[role]] = entry
    games_of: dict[str, list[TournamentGame]] = {}
    for row in rows:
        for role in ROLES:
            if row[role] in of_spec:
                games_of.setdefault(row[role], []).append(row)
    chosen: dict[tuple[str, str], dict[str, Any]] = {}
    for spec, version in of_spec.items():
        if version["rating"] != "rated":
            continue
        key = (version["account"], version["role"])
        held = chosen.get(key)
        if held is None or _better(config.final, spec, version_spec(data, held), version,
                                   held, scores):
            chosen[key] = version
    entered = {version_spec(data, v) for v in chosen.values()}
    field = entered | set(config.tournament.learners) | set(config.tournament.adversaries)
    played = [r for r in rows if r["learner"] in field and r["adversary"] in field]
    if is_sampled(config.tournament):  # (ratings with intervals: :mod:`..ratings`)
        board = rank_sampled(config.name, played, [], sorted({r["learner"] for r in played}),
                             sorted({r["adversary"] for r in played}),
                             len(spaces(config.tournament)), len(config.tournament.seeds))
    else:
        board = rank(config.name, played, [])
    by_spec = {version_spec(data, v): v for v in chosen.values()}
    ranking: list[Placing] = []
    for role, entries in zip(ROLES, (board.learners, board.adversaries), strict=True):
        for entry in entries:
            held = by_spec.get(entry[role])
            ranking.append({
                "role": role, "rank": entry["rank"],
                "entrant": held["account"] if held else entry[role],
                "version": held["version"] if held else None,
                "score": _number(entry.get("worst" if role == "learner" else "forcing")),
                "median": _number(entry.get("median")),
                "rating": entry.get("rating"), "rating_low": entry.get("rating_low"),
                "rating_high": entry.get("rating_high"),
                "games": entry["games"], "failed": entry["failed"],
                "sha256": held["sha256"] if held else None,
                "builtin": held is None})
    listed: list[VersionRow] = []
    for version in versions:
        spec = version_spec(data, version)
        mine = games_of.get(spec, [])
        entry = scores.get(spec, {})
        listed.append({
            "id": version["id"], "account": version["account"], "version": version["version"],
            "agent": version["agent"], "sha256": version["sha256"], "bytes": version["bytes"],
            "submitted": version["submitted"], "verdict": version["verdict"],
            "reason": version["reason"], "role": version["role"], "rating": version["rating"],
            "score": _number(entry.get("worst" if version["role"] == "learner"
                                       else "forcing")),
            "games": len(mine), "failed": sum(g["status"] != "complete" for g in mine),
            "report": version["report"],
            "game_list": [{"game_id": g.get("game_id"), "status": g["status"],
                           "message": g.get("message", ""), "class": g.get("class"),
                           "learner": _named(g["learner"], of_spec),
                           "adversary": _named(g["adversary"], of_spec),
                           "mistakes": (g.get("result") or {}).get("mistakes")}
                          for g in mine]})
    return {"competition": config.name, "final": False, "frozen": None,
            "mode": config.final, "submitted": list(config.submitted),
            "opens": _when(config.opens), "closes": _when(config.closes),
            "games": len(rows), "ranking": ranking, "versions": listed}


def _better(final: str, spec: str, held_spec: str, version: dict[str, Any],
            held: dict[str, Any], scores: dict[str, Standing]) -> bool:
    """Whether ``version`` replaces ``held`` as its student's entry: the later one
    (``last``), or the better ranked one (``best``; the later on a tie)."""
    if final == "last":
        return bool(version["id"] > held["id"])
    mine, theirs = scores.get(spec, {}).get("rank"), scores.get(held_spec, {}).get("rank")
    if mine is None:
        return False
    return theirs is None or mine < theirs or (mine == theirs and version["id"] > held["id"])


def _named(spec: str, of_spec: dict[str, dict[str, Any]]) -> str:
    """An entrant as the page names it: ``ann v2`` for a version, else its spec."""
    version = of_spec.get(spec)
    return spec if version is None else f"{version['account']} v{version['version']}"


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()
