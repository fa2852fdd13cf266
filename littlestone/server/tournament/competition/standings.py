"""The standings of a competition (:func:`standings`): each student's last (or best)
rated version ranked with the built-ins, every version with its verdict and scores; at
the close, frozen once (:func:`freeze`)."""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from littlestone.server.records.database import utc_now
from littlestone.server.records.rows import SubmissionReport, SubmissionRow
from littlestone.server.records.scores import Cell
from littlestone.server.records.store import Store
from littlestone.server.tournament.competition.config import CompetitionConfig, version_spec
from littlestone.server.tournament.completion import rank_sampled
from littlestone.server.tournament.ladder import Ladder
from littlestone.server.tournament.pairing import spaces
from littlestone.server.tournament.ranking import ADVERSARY, LEARNER, ROLES, TIED_NAMED, Standing
from littlestone.server.tournament.schedule import is_sampled

__all__ = ["Placing", "Standings", "VersionGame", "VersionRow", "final_path", "freeze", "stamp",
           "standings", "version_games"]

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
    """A version submitted: its verdict (the check's report), its rating and its games'
    counts (the games themselves: :func:`version_games`)."""

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
    report: SubmissionReport


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
    final["final"], final["frozen"] = True, utc_now()  # (a copy: the computed one stays)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(final, default=str))
    partial.replace(path)
    log.info("competition %s: closed; the final ranking is frozen", config.name)
    return True


@dataclass
class _Followed:
    """A competition's standings as this process follows them: the stored cells it has
    read (up to stamp ``seen`` of ``generation``), tallied over every entrant
    (``everyone``: each version's own scores) and over the field (``board``: the ranked
    versions and the built-ins), each version's spec (resolved once), the submissions as
    last read (``versions``; None: to be read again) and each version's listed row
    (``rows``; those of the entrants in ``touched`` to be made again), the games counted
    in the cells, and the standings computed at a stamp."""

    generation: int = -1
    seen: int = -1
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    everyone: Ladder = field(default_factory=lambda: Ladder("", TIED_NAMED))
    board: Ladder = field(default_factory=lambda: Ladder("", TIED_NAMED))
    entered: frozenset[str] = frozenset()
    specs: dict[int, str] = field(default_factory=dict)
    versions: list[SubmissionRow] | None = None
    rows: dict[int, VersionRow] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)
    games: int = 0
    computed: tuple[int, Standings] | None = None


#: The standings this process follows, by (data folder, competition). A request whose
#: stamp has not moved reads them as they are; the first after a change reads the cells
#: changed since (one a game that landed) into the ladders (:mod:`...ladder`: their two
#: entrants' lines move by bisection), and lists again only the versions those cells
#: touch (and the submissions only when a stamp moved that no cell holds): never the
#: games, every pair of entrants, nor every line.
_FOLLOWED: dict[tuple[str, str], _Followed] = {}
_FOLLOWED_LOCK = threading.Lock()


def stamp(store: Store, config: CompetitionConfig, data: Path) -> str:
    """What changes whenever the standings may: the index's stamp of the competition
    (every game recorded or forgotten, every submission's change), and ``final`` once
    they are frozen (the page's ETag)."""
    if final_path(config, data).exists():
        return "final"
    return str(store.score_stamp(config.name))


def standings(store: Store, config: CompetitionConfig, data: Path) -> Standings:
    """The competition as it stands: the frozen final ranking once there is one; else
    each student's last rated version (or best, as the file says) ranked with the
    built-ins on the games between them, and every version with its verdict and its
    own scores (against every entrant it played). Read from the index's stored cells
    (one a learner x adversary pair, updated as each game lands), once a stamp: the
    requests between two changes share the same answer."""
    data = Path(data).resolve()
    final = final_path(config, data)
    if final.exists():
        frozen: Standings = json.loads(final.read_text())
        return frozen
    key = (str(data), config.name)
    now = store.score_stamp(config.name)  # (read first: a change after it computes again)
    with _FOLLOWED_LOCK:  # (one request computes; the others wait for its answer)
        followed = _FOLLOWED.setdefault(key, _Followed())
        if followed.computed is None or followed.computed[0] != now:
            _follow(store, config.name, followed)
            followed.computed = (now, _compute(store, config, data, followed))
        return {**followed.computed[1]}


def _follow(store: Store, name: str, followed: _Followed) -> None:
    """Read the cells changed since the last look into the tallies (all of them again
    after a rebuild of the cells)."""
    stamp, generation, changed = store.score_changes(name, followed.seen)
    if stamp != followed.seen and (
            generation != followed.generation
            or store.score_marks(name, followed.seen, stamp) != set(
                range(followed.seen + 1, stamp + 1))):
        followed.versions = None  # (a stamp no cell holds: a submission changed)
        followed.rows = {}
    if generation != followed.generation:
        stamp, generation, changed = store.score_changes(name, -1)
        followed.cells, followed.entered, followed.games = {}, frozenset(), 0
        followed.everyone, followed.board = Ladder(name, TIED_NAMED), Ladder(name, TIED_NAMED)
    for cell in changed:
        pair = (cell.learner, cell.adversary)
        held = followed.cells.get(pair)
        followed.games += cell.games - (held.games if held is not None else 0)
        followed.cells[pair] = cell
        followed.touched |= set(pair)
        followed.everyone.put(cell)
        if cell.learner in followed.entered and cell.adversary in followed.entered:
            followed.board.put(cell)
    followed.seen, followed.generation = stamp, generation


def _enter(followed: _Followed, entered: frozenset[str]) -> None:
    """Change the field's tally to the entrants ``entered``: the cells of those who left
    taken out, of those who came put in (only theirs)."""
    moved = entered ^ followed.entered
    if not moved:
        return
    for (learner, adversary), cell in followed.cells.items():
        if learner in moved or adversary in moved:
            if learner in entered and adversary in entered:
                followed.board.put(cell)
            else:
                followed.board.put(Cell(learner, adversary))
    followed.entered = entered


def _compute(store: Store, config: CompetitionConfig, data: Path,
             followed: _Followed) -> Standings:
    if followed.versions is None:
        followed.versions = store.submissions(config.name)
    versions = followed.versions
    specs = followed.specs
    for v in versions:
        if v["id"] not in specs:
            specs[v["id"]] = version_spec(data, v)
    everyone = followed.everyone
    of_spec = {specs[v["id"]]: v for v in versions if v["verdict"] == "accepted"}
    scores = _Scores(everyone, {spec: v["role"] for spec, v in of_spec.items()})
    chosen: dict[tuple[str, str | None], SubmissionRow] = {}
    for spec, version in of_spec.items():
        if version["rating"] != "rated":
            continue
        who = (version["account"], version["role"])
        held = chosen.get(who)
        if held is None or _better(config.final, spec, specs[held["id"]], version, held,
                                   scores):
            chosen[who] = version
    by_spec = {specs[v["id"]]: v for v in chosen.values()}
    _enter(followed, frozenset(by_spec) | set(config.tournament.learners)
           | set(config.tournament.adversaries))
    board = followed.board.report()
    if is_sampled(config.tournament):  # (ratings with intervals, :mod:`...ratings`: from
        field = (frozenset(by_spec) | set(config.tournament.learners)  # the games, once
                 | set(config.tournament.adversaries))                  # a stamp)
        played = [r for r in store.tournament_games(config.name)
                  if r["learner"] in field and r["adversary"] in field]
        board = rank_sampled(config.name, played, [], sorted({r["learner"] for r in played}),
                             sorted({r["adversary"] for r in played}),
                             len(spaces(config.tournament)), len(config.tournament.seeds))
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
    rows, touched = followed.rows, followed.touched
    for version in versions:
        spec = specs[version["id"]]
        held_row = rows.get(version["id"])
        if held_row is not None and spec not in touched:
            listed.append(held_row)
            continue
        entry = scores.get(spec, {})
        mine = everyone.of(spec)
        games = sum(c.games for c in mine)
        listed.append({
            "id": version["id"], "account": version["account"], "version": version["version"],
            "agent": version["agent"], "sha256": version["sha256"], "bytes": version["bytes"],
            "submitted": version["submitted"], "verdict": version["verdict"],
            "reason": version["reason"], "role": version["role"], "rating": version["rating"],
            "score": _number(entry.get("worst" if version["role"] == "learner"
                                       else "forcing")),
            "games": games,
            "failed": games - sum(c.statuses.get("complete", 0) for c in mine),
            "report": version["report"]})
        rows[version["id"]] = listed[-1]
    touched.clear()
    return {"competition": config.name, "final": False, "frozen": None,
            "mode": config.final, "submitted": list(config.submitted),
            "opens": _when(config.opens), "closes": _when(config.closes),
            "games": followed.games, "ranking": ranking,
            "versions": listed}


def version_games(store: Store, config: CompetitionConfig, data: Path,
                  version: VersionRow) -> list[VersionGame]:
    """The games a version played, as its page lists them (its student's and an
    admin's): their statuses and messages, each other entrant named as the page names
    it (``ann v2``, or a built-in's spec)."""
    data = Path(data).resolve()
    row = store.submission(version["id"])
    if row is None:
        return []
    of_spec = {version_spec(data, v): v for v in store.submissions(config.name)
               if v["verdict"] == "accepted"}
    return [{"game_id": g.get("game_id"), "status": g["status"],
             "message": g.get("message", ""), "class": g.get("class"),
             "learner": _named(g["learner"], of_spec),
             "adversary": _named(g["adversary"], of_spec),
             "mistakes": (g.get("result") or {}).get("mistakes")}
            for g in store.entrant_games(config.name, version_spec(data, row))]


class _Scores:
    """Each accepted version's own line (its scores against every entrant it played, and
    its rank among all versions), read from the ladder when asked: one version's at a
    time, not the whole field's every time a game lands."""

    def __init__(self, ladder: Ladder, roles: dict[str, str | None]) -> None:
        self._ladder, self._roles = ladder, roles

    def get(self, spec: str, default: Standing) -> Standing:
        role = self._roles.get(spec)
        line = None if role not in ROLES else self._ladder.line(
            LEARNER if role == LEARNER else ADVERSARY, spec)
        return default if line is None else line


def _better(final: str, spec: str, held_spec: str, version: SubmissionRow,
            held: SubmissionRow, scores: _Scores) -> bool:
    """Whether ``version`` replaces ``held`` as its student's entry: the later one
    (``last``), or the better ranked one (``best``; the later on a tie)."""
    if final == "last":
        return version["id"] > held["id"]
    mine, theirs = scores.get(spec, {}).get("rank"), scores.get(held_spec, {}).get("rank")
    if mine is None:
        return False
    return theirs is None or mine < theirs or (mine == theirs and version["id"] > held["id"])


def _named(spec: str, of_spec: dict[str, SubmissionRow]) -> str:
    """An entrant as the page names it: ``ann v2`` for a version, else its spec."""
    version = of_spec.get(spec)
    return spec if version is None else f"{version['account']} v{version['version']}"


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()
