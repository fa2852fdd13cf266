"""Two leaderboards kept ranked as the stored cells change (:class:`Ladder`): what
:class:`~littlestone.server.tournament.ranking.Tally` ranks, equal to it line for line,
at a cost per landed game that does not grow with the field's lines.

A cell that changes touches two lines, its learner's and its adversary's. Each line keeps
its counts as running sums and its cells' means in two sorted lists (expected, realised),
so that its worst (the last) and its median (the middle) are read, not computed again:
an adversary that met 2,000 learners changes one point of its 2,000, by a bisection.
Each role keeps its ranked lines in one sorted list of ``(floats, exact key, name)``: the
key's floats first (rounding to a float is monotone, and comparing floats is cheap), the
exact fractions only between equal floats, then the name, which is the order of
:func:`~littlestone.server.tournament.ranking.rank` (equal keys share a rank, listed by
name). A changed line leaves its place and takes its new one by bisection.

>>> from fractions import Fraction
>>> from littlestone.server.records.scores import Cell, Side
>>> ladder = Ladder("t")
>>> for learner, mistakes in (("soa", 4), ("halving", 4), ("perceptron", 9)):
...     ladder.put(Cell(learner, "tree", 1, Side(1, Fraction(mistakes), Fraction(mistakes)),
...                     Side(1, Fraction(mistakes), Fraction(mistakes)), {"complete": 1}))
>>> [(r["rank"], r["learner"], r["worst"], r["tied_with"]) for r in ladder.report().learners]
[(1, 'halving', 4.0, ['soa']), (1, 'soa', 4.0, ['halving']), (3, 'perceptron', 9.0, [])]
>>> ladder.rank_of("learner", "perceptron"), ladder.rank_of("adversary", "tree")
(3, 1)
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import islice

from littlestone.server.records.scores import Cell, Side
from littlestone.server.tournament.ranking import (
    LEARNER,
    ROLES,
    Role,
    Standing,
    TournamentReport,
    _shown,
    fault,
)

__all__ = ["Ladder"]

#: A cell's mean on one side: as a float, exactly, and the other entrant (which makes
#: each point of a line unique, so that it can be found again to be taken out).
_Point = tuple[float, Fraction, str]
#: A ranked line's place: its key's floats, the key exactly, its name.
_Place = tuple[tuple[float, ...], tuple[Fraction, ...], str]


@dataclass
class _Line:
    """An entrant's line in one role: its cells by the other entrant, its counts as
    running sums, and its cells' means on its side, sorted (expected and realised)."""

    role: Role
    name: str
    cells: dict[str, Cell] = field(default_factory=dict)
    points: dict[str, tuple[_Point, _Point]] = field(default_factory=dict)
    games: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    unscored: dict[str, int] = field(default_factory=dict)
    expected: list[_Point] = field(default_factory=list)
    realised: list[_Point] = field(default_factory=list)

    def put(self, other: str, cell: Cell | None) -> None:
        """The cell against ``other`` as it now is (None: gone)."""
        old = self.cells.pop(other, None)
        if old is not None:
            self._count(old, -1)
        if cell is not None:
            self.cells[other] = cell
            self._count(cell, 1)

    def _count(self, cell: Cell, sign: int) -> None:
        self.games += sign * cell.games
        for status, n in cell.statuses.items():
            if fault(status) == self.role:
                _add(self.failed, status, sign * n)
        mine = cell.learner_unscored if self.role == LEARNER else cell.adversary_unscored
        for status, n in mine.items():
            _add(self.unscored, status, sign * n)
        other = cell.adversary if self.role == LEARNER else cell.learner
        if sign < 0:
            held = self.points.pop(other, None)
            if held is not None:
                _remove(self.expected, held[0])
                _remove(self.realised, held[1])
            return
        side: Side = cell.learner_side if self.role == LEARNER else cell.adversary_side
        if side.n:
            expected, realised = side.expected / side.n, side.realised / side.n
            points = ((float(expected), expected, other), (float(realised), realised, other))
            self.points[other] = points
            insort(self.expected, points[0])
            insort(self.realised, points[1])

    def standing(self) -> tuple[Standing, tuple[Fraction, ...] | None]:
        """The line as :class:`.ranking.Tally` makes it, and its ranking key (None: no
        scored game)."""
        unscored = sum(self.unscored.values())
        entry: Standing = {"learner": self.name} if self.role == LEARNER else {
            "adversary": self.name}
        entry.update({"games": self.games, "scored": self.games - unscored,
                      "failed": sum(self.failed.values()), "failures": sorted(self.failed),
                      "unscored": unscored, "unscored_statuses": sorted(self.unscored),
                      "won_by_forfeit": sum(n for status, n in self.unscored.items()
                                            if fault(status) in ROLES
                                            and fault(status) != self.role)})
        key: tuple[Fraction, ...] | None = None
        have = bool(self.expected)
        median = (_middle(self.expected), _middle(self.realised)) if have else (None, None)
        if self.role == LEARNER:
            worst = (self.expected[-1][1], self.realised[-1][1]) if have else (None, None)
            entry["worst"], entry["worst_exact"], entry["worst_realised"] = _shown(*worst)
            entry["median"], entry["median_exact"], entry["median_realised"] = _shown(*median)
            if worst[0] is not None and median[0] is not None:
                key = (worst[0], median[0])
        else:
            entry["forcing"], entry["forcing_exact"], entry["forcing_realised"] = _shown(
                *median)
            if median[0] is not None:
                key = (-median[0],)
        return entry, key


def _add(counts: dict[str, int], key: str, n: int) -> None:
    counts[key] = counts.get(key, 0) + n
    if counts[key] <= 0:
        del counts[key]


def _remove(points: list[_Point], point: _Point) -> None:
    at = bisect_left(points, point)
    if at < len(points) and points[at] == point:
        del points[at]


def _middle(points: list[_Point]) -> Fraction:
    """The exact median of sorted points (the mean of the middle two of an even count)."""
    half = len(points) // 2
    if len(points) % 2:
        return points[half][1]
    return (points[half - 1][1] + points[half][1]) / 2


class Ladder:
    """Cells in (:meth:`put`), two leaderboards out (:meth:`report`, as
    :meth:`.ranking.Tally.report` makes them without the payoff matrix), and one line's
    rank at any time (:meth:`rank_of`). ``named_ties``: how many others a tied line
    names at most (None: all)."""

    def __init__(self, name: str, named_ties: int | None = None) -> None:
        self.name, self.named_ties = name, named_ties
        self.cells: dict[tuple[str, str], Cell] = {}
        self._lines: dict[tuple[Role, str], _Line] = {}
        self._entries: dict[tuple[Role, str], Standing] = {}
        self._places: dict[tuple[Role, str], _Place | None] = {}
        self._ranked: dict[Role, list[_Place]] = {role: [] for role in ROLES}
        self._unranked: dict[Role, list[str]] = {role: [] for role in ROLES}
        self._dirty: set[tuple[Role, str]] = set()
        self._report: TournamentReport | None = None

    def put(self, cell: Cell) -> None:
        """A cell as it now is (no game: the pair is gone)."""
        pair = (cell.learner, cell.adversary)
        held: Cell | None = cell if cell.games > 0 else None
        if held is None:
            self.cells.pop(pair, None)
        else:
            self.cells[pair] = held
        for role, name, other in ((ROLES[0], cell.learner, cell.adversary),
                                  (ROLES[1], cell.adversary, cell.learner)):
            line = self._lines.get((role, name))
            if line is None:
                if held is None:
                    continue
                line = self._lines[(role, name)] = _Line(role, name)
            line.put(other, held)
            self._dirty.add((role, name))
        self._report = None

    def of(self, name: str) -> list[Cell]:
        """An entrant's cells, as a learner then as an adversary."""
        return [cell for role in ROLES
                if (line := self._lines.get((role, name))) is not None
                for cell in line.cells.values()]

    def _settle(self) -> None:
        """Put each changed line in its new place (and out of its old one)."""
        for role, name in self._dirty:
            if (role, name) in self._places:  # (out of its old place)
                place = self._places.pop((role, name))
                if place is None:
                    self._unranked[role].pop(bisect_left(self._unranked[role], name))
                else:
                    self._ranked[role].pop(bisect_left(self._ranked[role], place))
            line = self._lines.get((role, name))
            if line is None or not line.cells:
                self._lines.pop((role, name), None)
                self._entries.pop((role, name), None)
                continue
            entry, key = line.standing()
            self._entries[(role, name)] = entry
            if key is None:
                self._places[(role, name)] = None
                insort(self._unranked[role], name)
            else:
                new: _Place = (tuple(float(v) for v in key), key, name)
                self._places[(role, name)] = new
                insort(self._ranked[role], new)
        self._dirty.clear()

    def rank_of(self, role: Role, name: str) -> int | None:
        """A line's rank (one plus the lines strictly better; None: unranked or absent),
        by bisection."""
        self._settle()
        place = self._places.get((role, name))
        if place is None:
            return None
        return bisect_left(self._ranked[role], (place[0], place[1], "")) + 1

    def line(self, role: Role, name: str) -> Standing | None:
        """One line with its rank (not its ties), by bisection (None: no such line)."""
        self._settle()
        entry = self._entries.get((role, name))
        return None if entry is None else {**entry, "rank": self.rank_of(role, name)}

    def report(self) -> TournamentReport:
        """Both leaderboards, ranked (the same report until a cell changes)."""
        if self._report is not None:
            return self._report
        self._settle()
        report = TournamentReport(self.name)
        for role in ROLES:
            ranked = self._ranked[role]
            out: list[Standing] = []
            start = 0
            while start < len(ranked):
                floats, key = ranked[start][0], ranked[start][1]
                end = start + 1
                while end < len(ranked) and ranked[end][0] == floats and ranked[end][1] == key:
                    end += 1
                names = [place[2] for place in ranked[start:end]]
                for name in names:
                    others = [] if end - start == 1 else list(islice(
                        (n for n in names if n != name), self.named_ties))
                    out.append({**self._entries[(role, name)], "rank": start + 1,
                                "tied": end - start - 1, "tied_with": others})
                start = end
            out.extend({**self._entries[(role, name)], "rank": None, "tied_with": [],
                        "tied": 0} for name in self._unranked[role])
            if role == LEARNER:
                report.learners = out
            else:
                report.adversaries = out
        self._report = report
        return report
