"""The stored scores of the tournaments: one cell a learner x adversary pair (its games'
counts and exact sums of each side's figures), updated once per game in the transaction
that records it, and a stamp a tournament that changes with every game and every
submission of its competition (the page's ETag).

A game's part in its cell (:class:`Landed`) is what the tournament room's scoring rules
make of its row (:func:`littlestone.server.tournament.ranking.landed`); this room does not
know the rules, so the tournament room registers them (:func:`set_scorer`) when it is
imported, as the network room's hook to the page is set from above. A game recorded
without them (or a pairing forgotten without them, or an index written before the
cells) leaves its tournament's cells stale; they are rebuilt from the games once, by the
next reader (:meth:`ScoreTable.score_cells`), in one write transaction.

>>> import tempfile, pathlib
>>> import littlestone.server.tournament.ranking  # (registers the rules)
>>> from littlestone.server.records.store import Store
>>> store = Store(pathlib.Path(tempfile.mkdtemp()))
>>> store.add_tournament_game("t", "k1", {"game_id": None, "status": "complete",
...     "game": "mistake-bound", "class": None, "learner": "a", "adversary": "b", "seed": 0,
...     "horizon": 4, "normaliser_value": 2.0, "result": {"rounds": 4, "mistakes": 1}})
True
>>> [(c.learner, c.adversary, c.games, c.learner_side.expected) for c in store.score_cells("t")]
[('a', 'b', 1, Fraction(1, 2))]
>>> store.score_stamp("t")
1
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TypedDict, TypeVar, cast

from littlestone.games.errors import StoreError
from littlestone.server.records.database import Database, retry_locked, utc_now
from littlestone.server.records.rows import TournamentGame

__all__ = ["Cell", "Landed", "ScoreTable", "Side", "cells_of", "set_scorer"]

T = TypeVar("T")


@dataclass(frozen=True)
class Landed:
    """A game's part in its pair's cell: its learner and adversary, its status, and each
    side's figures (expected, realised; None: not scored for that side)."""

    learner: str
    adversary: str
    status: str
    learner_figures: tuple[Fraction, Fraction] | None
    adversary_figures: tuple[Fraction, Fraction] | None


@dataclass
class Side:
    """One side's scored games in a cell: how many, and the exact sums of their
    expected and realised figures."""

    n: int = 0
    expected: Fraction = Fraction(0)
    realised: Fraction = Fraction(0)

    def add(self, figures: tuple[Fraction, Fraction], sign: int) -> None:
        self.n += sign
        self.expected += sign * figures[0]
        self.realised += sign * figures[1]


class _Stored(TypedDict):
    """A cell as its row keeps it (JSON; fractions as ``n/d`` strings)."""

    games: int
    learner: list[int | str]
    adversary: list[int | str]
    statuses: dict[str, int]
    learner_unscored: dict[str, int]
    adversary_unscored: dict[str, int]


@dataclass
class Cell:
    """A learner x adversary pair's games: their count, each side's scored figures, the
    count of each status, and those not scored for each side, by status."""

    learner: str
    adversary: str
    games: int = 0
    learner_side: Side = field(default_factory=Side)
    adversary_side: Side = field(default_factory=Side)
    statuses: dict[str, int] = field(default_factory=dict)
    learner_unscored: dict[str, int] = field(default_factory=dict)
    adversary_unscored: dict[str, int] = field(default_factory=dict)

    def add(self, game: Landed, sign: int = 1) -> None:
        """Count ``game`` in (``sign`` 1) or out (-1)."""
        self.games += sign
        _count(self.statuses, game.status, sign)
        for figures, side, unscored in (
                (game.learner_figures, self.learner_side, self.learner_unscored),
                (game.adversary_figures, self.adversary_side, self.adversary_unscored)):
            if figures is None:
                _count(unscored, game.status, sign)
            else:
                side.add(figures, sign)

    def stored(self) -> str:
        def side(s: Side) -> list[int | str]:
            return [s.n, str(s.expected), str(s.realised)]

        row: _Stored = {"games": self.games, "learner": side(self.learner_side),
                        "adversary": side(self.adversary_side), "statuses": self.statuses,
                        "learner_unscored": self.learner_unscored,
                        "adversary_unscored": self.adversary_unscored}
        return json.dumps(row, sort_keys=True)

    @staticmethod
    def read(learner: str, adversary: str, text: str) -> Cell:
        row: _Stored = json.loads(text)

        def side(s: list[int | str]) -> Side:
            return Side(int(s[0]), Fraction(str(s[1])), Fraction(str(s[2])))

        return Cell(learner, adversary, row["games"], side(row["learner"]),
                    side(row["adversary"]), row["statuses"], row["learner_unscored"],
                    row["adversary_unscored"])


def _count(counts: dict[str, int], key: str, sign: int) -> None:
    counts[key] = counts.get(key, 0) + sign
    if counts[key] <= 0:
        del counts[key]


#: What a tournament's row counts for in its cell: the tournament room's rules
#: (:func:`set_scorer`), or None while no room above registered them.
_SCORER: list[Callable[[TournamentGame], Landed]] = []


def set_scorer(scorer: Callable[[TournamentGame], Landed] | None) -> None:
    """Register the scoring rules (the tournament room, when it is imported); None
    forgets them (tests)."""
    _SCORER.clear()
    if scorer is not None:
        _SCORER.append(scorer)


def cells_of(rows: Iterable[TournamentGame], scorer: Callable[[TournamentGame], Landed]
             ) -> list[Cell]:
    """The cells of these rows, by (learner, adversary)."""
    cells: dict[tuple[str, str], Cell] = {}
    for row in rows:
        game = scorer(row)
        cell = cells.get((game.learner, game.adversary))
        if cell is None:
            cell = cells[(game.learner, game.adversary)] = Cell(game.learner, game.adversary)
        cell.add(game)
    return list(cells.values())


class ScoreTable(Database):
    """The index's stored scores: ``score_cells`` and ``score_stamps`` (made in
    :mod:`.database`, where triggers bump a tournament's stamp whenever one of its
    games or its competition's submissions changes)."""

    def _transaction(self, work: Callable[[], T]) -> T:
        def once() -> T:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                done = work()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return done

        return cast("T", retry_locked(once))  # (retry_locked returns what once does)

    def _built(self, name: str) -> bool | None:
        """Whether a tournament's cells hold all its games (None: it has no stamp)."""
        row = self._db.execute("SELECT built FROM score_stamps WHERE tournament = ?",
                               (name,)).fetchone()
        return None if row is None else bool(row["built"])

    def _cell(self, name: str, learner: str, adversary: str) -> Cell:
        row = self._db.execute("SELECT cell FROM score_cells WHERE tournament = ? AND "
                               "learner = ? AND adversary = ?",
                               (name, learner, adversary)).fetchone()
        return Cell(learner, adversary) if row is None else Cell.read(learner, adversary,
                                                                       row["cell"])

    def _put(self, name: str, cell: Cell) -> None:
        """Store a cell, marked with the tournament's stamp (bumped already in this
        transaction: a reader that saw the stamp before reads it as changed). A cell
        left with no game stays, empty, so that readers see it go."""
        stamp = self._db.execute("SELECT stamp FROM score_stamps WHERE tournament = ?",
                                 (name,)).fetchone()
        self._db.execute("INSERT OR REPLACE INTO score_cells VALUES (?, ?, ?, ?, ?)",
                         (name, cell.learner, cell.adversary, cell.stored(),
                          int(stamp["stamp"]) if stamp else 0))

    def _stale(self, name: str) -> None:
        self._db.execute("UPDATE score_stamps SET built = 0 WHERE tournament = ?", (name,))

    def add_tournament_game(self, name: str, key: str, row: TournamentGame) -> bool:
        """A finished pairing, recorded once (a second write of the same pairing is
        ignored: False), with its part in its cell and its game named the pairing's
        (``games.pairing``, unique: a dropped pairing's old game gives it up), in one
        transaction."""
        def work() -> bool:
            built = self._built(name)
            new = not built
            if new:  # a tournament's first game: its (empty) cells are whole
                built = self._db.execute("SELECT 1 FROM tournament_games WHERE "
                                         "tournament = ? LIMIT 1", (name,)).fetchone() is None
            added = self._db.execute(
                "INSERT OR IGNORE INTO tournament_games VALUES (?, ?, ?, ?, ?, ?)",
                (name, key, row.get("game_id"), row["status"], json.dumps(row, default=str),
                 utc_now())).rowcount
            if new and built:  # (the insert's trigger made its stamp, if nothing had)
                self._db.execute("UPDATE score_stamps SET built = 1 WHERE tournament = ?",
                                 (name,))
            if not added:
                return False
            if row.get("game_id"):
                pairing = f"{name}|{key}"
                self._db.execute("UPDATE games SET pairing = NULL WHERE pairing = ?",
                                 (pairing,))
                self._db.execute("UPDATE games SET pairing = ? WHERE game_id = ?",
                                 (pairing, row["game_id"]))
            if not built or not _SCORER:
                self._stale(name)
                return True
            game = _SCORER[0](row)
            cell = self._cell(name, game.learner, game.adversary)
            cell.add(game)
            self._put(name, cell)
            return True

        return self._transaction(work)

    def drop_tournament_games(self, name: str, keys: list[str]) -> None:
        """Forget these pairings of a tournament (an entrant left, or its file changed),
        and their parts in their cells; their games stay in the index and their logs in
        the folder."""
        def work() -> None:
            built = bool(self._built(name)) and bool(_SCORER)
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ", ".join("?" * len(chunk))
                dropped = [json.loads(r["row"]) for r in self._db.execute(
                    f"SELECT row FROM tournament_games WHERE tournament = ? AND key IN "
                    f"({marks})", (name, *chunk)).fetchall()] if built else []
                self._db.execute(f"DELETE FROM tournament_games WHERE tournament = ? AND key "
                                 f"IN ({marks})", (name, *chunk))
                for row in dropped:  # (after the delete: its trigger bumped the stamp)
                    game = _SCORER[0](row)
                    cell = self._cell(name, game.learner, game.adversary)
                    cell.add(game, -1)
                    self._put(name, cell)
            if not built:
                self._stale(name)

        if keys:
            self._transaction(work)

    def entrant_games(self, name: str, entrant: str) -> list[TournamentGame]:
        """The games of a tournament an entrant played, on either side (one version's
        page: a scan of the tournament's rows in SQLite, not in Python)."""
        return [json.loads(r["row"]) for r in self._run(
            "SELECT row FROM tournament_games WHERE tournament = ? AND "
            "(json_extract(row, '$.learner') = ? OR json_extract(row, '$.adversary') = ?) "
            "ORDER BY key", (name, entrant, entrant))]

    def has_tournament(self, name: str) -> bool:
        return bool(self._run("SELECT 1 FROM tournaments WHERE name = ?", (name,)))

    def failed_games(self, name: str, start: int, count: int) -> list[TournamentGame]:
        """``count`` of a tournament's games that did not end ``complete``, from the
        ``start``-th (by key)."""
        return [json.loads(r["row"]) for r in self._run(
            "SELECT row FROM tournament_games WHERE tournament = ? AND status != 'complete' "
            "ORDER BY key LIMIT ? OFFSET ?", (name, count, start))]

    def score_stamp(self, name: str) -> int:
        """A number that changes whenever a game of the tournament is recorded or
        forgotten, or a submission of its competition changes (0: none yet)."""
        row = self._run("SELECT stamp FROM score_stamps WHERE tournament = ?", (name,))
        return int(row[0]["stamp"]) if row else 0

    def score_marks(self, name: str, since: int, until: int) -> set[int]:
        """The stamps after ``since`` and up to ``until`` that a tournament's cells were
        last changed at (by the index on ``changed``: as many as changed). A stamp of
        that range missing here moved for something else (a submission of its
        competition; or a cell changed again since, which a reader may treat alike)."""
        return {int(r["changed"]) for r in self._run(
            "SELECT DISTINCT changed FROM score_cells WHERE tournament = ? AND changed > ? "
            "AND changed <= ?", (name, since, until))}

    def _fresh_cells(self, name: str) -> None:
        """Rebuild a tournament's cells when they are stale (or were never made)."""
        if self._run("SELECT 1 FROM score_stamps WHERE tournament = ? AND built = 0",
                     (name,)) or (not self._run("SELECT 1 FROM score_stamps WHERE "
                                                "tournament = ?", (name,))
                                  and self._run("SELECT 1 FROM tournament_games WHERE "
                                                "tournament = ? LIMIT 1", (name,))):
            self.rebuild_scores(name)

    def score_cells(self, name: str) -> list[Cell]:
        """A tournament's cells (those with games), rebuilt from its games first when
        they are stale."""
        return [c for c in self.score_changes(name, -1)[2] if c.games > 0]

    def score_changes(self, name: str, since: int) -> tuple[int, int, list[Cell]]:
        """The tournament's stamp and generation (a rebuild moves it: every cell is then
        new), and its cells changed after stamp ``since`` (an emptied one too, with no
        game), read in one snapshot; rebuilt first when stale."""
        self._fresh_cells(name)

        def read() -> tuple[int, int, list[Cell]]:
            self._db.execute("BEGIN")
            try:
                head = self._db.execute("SELECT stamp, generation FROM score_stamps WHERE "
                                        "tournament = ?", (name,)).fetchone()
                cells = [Cell.read(r["learner"], r["adversary"], r["cell"])
                         for r in self._db.execute(
                             "SELECT learner, adversary, cell FROM score_cells WHERE "
                             "tournament = ? AND changed > ?", (name, since))]
            finally:
                self._db.execute("COMMIT")
            return (0, 0, cells) if head is None else (int(head["stamp"]),
                                                       int(head["generation"]), cells)

        found: tuple[int, int, list[Cell]] = retry_locked(read)
        return found

    def rebuild_scores(self, name: str) -> None:
        """A tournament's cells made again from its games (an index written before the
        cells, or left stale), in one write transaction."""
        if not _SCORER:
            raise StoreError("the scores cannot be rebuilt here: no scoring rules are "
                             "loaded (import littlestone.server.tournament.ranking)")
        scorer = _SCORER[0]

        def work() -> None:
            rows = [json.loads(r["row"]) for r in self._db.execute(
                "SELECT row FROM tournament_games WHERE tournament = ?", (name,))]
            self._db.execute("INSERT INTO score_stamps (tournament, stamp, built, generation) "
                             "VALUES (?, 1, 1, 1) ON CONFLICT (tournament) DO UPDATE SET "
                             "built = 1, stamp = stamp + 1, generation = generation + 1",
                             (name,))
            self._db.execute("DELETE FROM score_cells WHERE tournament = ?", (name,))
            for cell in cells_of(rows, scorer):
                self._put(name, cell)

        self._transaction(work)
