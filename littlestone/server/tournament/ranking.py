"""Scores and ranks: each game's figure for either side, the leaderboard and the payoff
matrix, in exact arithmetic.

A game's **figure** is the learner's mistakes (mistake-bound game) or regret (experts
game), in expectation over the referee's coin (``expected``: what the ranking uses, so
that the coin's luck does not decide it) and as the coin fell (``realised``: shown
beside it), divided by the class's :func:`normaliser`. Who ended the game decides how
each side's figure is counted, in one table, :data:`SCORING`: a player that ends a game
by its own fault loses every round it did not play. Figures are
:class:`fractions.Fraction` (the referee's floats convert exactly), so that equal
records give equal scores and ties are exact.

Imports the games (for Ldim, the normaliser of the mistake-bound game).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal, NotRequired, TypedDict, TypeVar

from littlestone.games.classes import FiniteClass, HalfspaceClass
from littlestone.games.errors import BudgetExceeded
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.games.ldim import class_ldim
from littlestone.server.records.rows import GameOutcome, ResultRow, Skipped, TournamentGame
from littlestone.server.records.scores import Cell, Landed, Side, cells_of, set_scorer

__all__ = [
    "ROLES",
    "RULES",
    "SCORING",
    "TIED_NAMED",
    "Figures",
    "Leaderboard",
    "Replayed",
    "Role",
    "Scorable",
    "Scoring",
    "Standing",
    "Tally",
    "TournamentReport",
    "Unloaded",
    "fault",
    "figures",
    "judge",
    "landed",
    "normaliser",
    "rank",
    "rank_cells",
    "score",
]

_T = TypeVar("_T")

#: The two sides of a game, as a row names them.
Role = Literal["learner", "adversary"]
LEARNER: Literal["learner"] = "learner"
ADVERSARY: Literal["adversary"] = "adversary"
ROLES: tuple[Role, Role] = (LEARNER, ADVERSARY)
#: Whose fault ended a game (:func:`fault`): no one's (it was played to the end), the
#: learner's, the adversary's, or nobody's (the server stopped; or an unknown status).
COMPLETE, NOBODY = "none", "nobody"
#: Status kinds (first field) that are nobody's fault, whatever follows.
NOBODYS_KINDS = frozenset({"aborted"})

# How a side's figure is counted (the cells of SCORING):
PLAYED = "as played"
REST_LOST = "as played + every remaining round lost"
FORCED_NOTHING = "forced nothing: min(0, as played)"
NOT_SCORED = "not scored"

#: Whose fault ended the game -> (the learner's figure, the adversary's figure).
#:
#: - ``learner``: the learner scores what it had plus a lost round for each of the
#:   T - rounds played it did not play (a mistake; in the experts game loss 1 while the
#:   best expert loses nothing more): no better than the worst legal play. The game is
#:   not scored for the adversary, which won it by forfeit (counted apart,
#:   ``won_by_forfeit``): a field's broken students do not lift the adversaries that
#:   happened to meet them, and an adversary is not penalised for the learner's fault.
#: - ``adversary``: the adversary forced nothing (0, or its figure so far if that is
#:   lower: regret can be negative), the worst legal play for an adversary, whatever it
#:   forced before the fault (an adversary whose commitment fails after round T may have
#:   labelled every round against the learner). The game is not scored for the learner:
#:   neither for it (a game cut short has fewer rounds to err in) nor against it.
#: - ``nobody`` (``aborted:*``, a status naming no role): not scored for either side;
#:   shown in the games and counted as not scored.
SCORING: dict[str, tuple[str, str]] = {
    COMPLETE: (PLAYED, PLAYED),
    LEARNER: (REST_LOST, NOT_SCORED),
    ADVERSARY: (NOT_SCORED, FORCED_NOTHING),
    NOBODY: (NOT_SCORED, NOT_SCORED),
}

#: The scoring and ranking rules in one paragraph, as the report and ``--json`` state them
#: (the terminal, in short).
RULES = (
    "Scores: mistakes / Ldim(H) (mistake-bound) or regret / sqrt(T ln d) (experts), in "
    "expectation over the referee's coin (realised figures shown beside), a pair's score "
    "the mean over its games; learners are ranked by their worst adversary's score, then "
    "by their median over adversaries (lower is better), adversaries by the median score "
    "they force over learners (higher is better): one friend who throws its games moves "
    "no median. A "
    "player that ends a game by its own fault (crash, illegal move, forfeit, timeout, "
    "disconnection, memory, absence, declining the game, failing to load) loses every "
    "round it did not play: a learner scores "
    "a mistake (loss 1) for each, an adversary forces nothing; the game is not scored "
    "for the other side, which won it by forfeit (counted apart). Games aborted by the "
    "server, or with an unknown status, are not scored. Scores are exact fractions: "
    "equal scores share a rank (1, 2, 2, 4: shown 2=), tied entrants listed by name "
    "whatever the order they were entered in; entrants with no scored game come last, by "
    "name."
)


def normaliser(game: GameSpec) -> tuple[float | None, str]:
    """What a game's figure is divided by: Ldim(H) (mistake-bound), sqrt(T ln d) (experts).

    >>> from littlestone.games.classes import make_class
    >>> normaliser(GameSpec("mistake-bound", 30, make_class("thresholds:n=15")))
    (4.0, 'Ldim(H)')
    """
    if game.game == EXPERTS:
        d = game.n_experts
        return math.sqrt(game.rounds * math.log(max(d, 2))), "sqrt(T ln d)"
    if isinstance(game.hclass, FiniteClass):
        try:
            value, _ = class_ldim(game.hclass)
            return (float(value) if value else None), "Ldim(H)"
        except BudgetExceeded:
            return math.log2(game.hclass.size), "log2|H| (Ldim beyond budget)"
    if isinstance(game.hclass, HalfspaceClass) and game.hclass.margin > 0:
        return math.floor(1 / game.hclass.margin**2), "1/margin^2"
    return None, "raw"


def fault(status: str) -> str:
    """Whose fault ended a game, read from its status: ``none`` (``complete``),
    ``learner`` or ``adversary`` (the status's second field names the role at fault),
    ``nobody`` (``aborted:*``, and a status naming no role).

    >>> [fault(s) for s in ("complete", "crash:learner:ZeroDivisionError",
    ...                     "rule_violation:adversary:commitment", "forfeit:learner:timeout",
    ...                     "load_failed:learner", "aborted:shutdown", "incomplete")]
    ['none', 'learner', 'adversary', 'learner', 'learner', 'nobody', 'nobody']
    """
    if status == "complete":
        return COMPLETE
    kind, _, rest = status.partition(":")
    role = rest.partition(":")[0]
    if kind in NOBODYS_KINDS or role not in (LEARNER, ADVERSARY):
        return NOBODY
    return role


@dataclass(frozen=True)
class Figures:
    """One side's figure in one game (or a mean of them), exact: ``expected`` (over the
    referee's coin: what ranks) and ``realised`` (as the coin fell).

    >>> Figures(Fraction(1, 2), Fraction(1)).to_float()
    (0.5, 1.0)
    """

    expected: Fraction
    realised: Fraction

    def to_float(self) -> tuple[float, float]:
        return float(self.expected), float(self.realised)

    @staticmethod
    def mean(values: list[Figures]) -> Figures:
        """The mean of non-empty ``values``, exact.

        >>> Figures.mean([Figures(Fraction(1), Fraction(0)), Figures(Fraction(0), Fraction(0))])
        Figures(expected=Fraction(1, 2), realised=Fraction(0, 1))
        """
        n = len(values)
        return Figures(sum((v.expected for v in values), Fraction(0)) / n,
                       sum((v.realised for v in values), Fraction(0)) / n)

    @staticmethod
    def median(values: list[Figures]) -> Figures:
        """The medians of non-empty ``values``' expected and realised figures, exact (the
        mean of the middle two of an even count).

        >>> m = Figures.median([Figures(Fraction(v), Fraction(v)) for v in (0, 1, 9, 100)])
        >>> m.expected, m.realised
        (Fraction(5, 1), Fraction(5, 1))
        """
        def middle(numbers: list[Fraction]) -> Fraction:
            ordered = [f for (f,) in _exact_sorted([(f,) for f in numbers], lambda t: t)]
            half = len(numbers) // 2
            return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2

        return Figures(middle([v.expected for v in values]), middle([v.realised for v in values]))


def _exact_sorted(items: list[_T], key: Callable[[_T], tuple[Fraction, ...]],
                  name: Callable[[_T], str] = lambda _: "",
                  floats: Callable[[_T], tuple[float, ...]] | None = None,
                  same: Callable[[_T], object] | None = None) -> list[_T]:
    """``items`` sorted by an exact key, then ``name``, fast: by the key's floats first
    (rounding to a float is monotone), then each run of equal floats by the exact key
    (comparing Fractions costs a gcd each: sorting 2,000 entrants took 0.2 s).

    >>> third, tiny = Fraction(1, 3), Fraction(1, 10**30)  # (the same float, 1/3)
    >>> _exact_sorted([(third + tiny,), (third,), (Fraction(0),)], lambda k: k)[1:] == [
    ...     (third,), (third + tiny,)]
    True
    """
    keyed = sorted(((floats(item) if floats is not None else
                     tuple(float(v) for v in key(item))), name(item), i)
                   for i, item in enumerate(items))
    out: list[_T] = []
    start = 0
    while start < len(keyed):
        end = start + 1
        while end < len(keyed) and keyed[end][0] == keyed[start][0]:
            end += 1
        run = [items[i] for _, _, i in keyed[start:end]]
        uniform = len(run) == 1 or (same is not None and all(same(t) == same(run[0])
                                                               for t in run))
        out.extend(run if uniform else sorted(run, key=lambda t: (key(t), name(t))))
        start = end
    return out


def judge(game: str, status: str, result: ResultRow, horizon: int
          ) -> tuple[Figures | None, Figures | None]:
    """The learner's and the adversary's raw (not normalised) figures of one game, as
    :data:`SCORING` says for whoever ended it; ``None``: not scored for that side.

    ``result`` holds ``rounds`` played and ``mistakes`` / ``expected_mistakes``
    (mistake-bound) or ``regret`` / ``expected_regret`` (experts); missing figures count 0.
    A learner that crashes in round 3 of 30 after 2 mistakes scores 2 + 28; its
    adversary won by forfeit, and the game is not scored for it:

    >>> mine, theirs = judge("mistake-bound", "crash:learner:ZeroDivisionError",
    ...                      {"rounds": 2, "mistakes": 2, "expected_mistakes": 1.5}, 30)
    >>> mine.to_float(), theirs
    ((29.5, 30.0), None)

    An adversary that breaks a rule forces nothing, and the learner is not scored:

    >>> judge("mistake-bound", "rule_violation:adversary:commitment",
    ...       {"rounds": 30, "mistakes": 30, "expected_mistakes": 30.0}, 30)
    (None, Figures(expected=Fraction(0, 1), realised=Fraction(0, 1)))
    """
    realised_value, expected_value = (
        (result.get("regret"), result.get("expected_regret")) if game == EXPERTS
        else (result.get("mistakes"), result.get("expected_mistakes")))
    realised = Fraction(realised_value or 0)
    expected = realised if expected_value is None else Fraction(expected_value)
    remaining = max(horizon - int(result.get("rounds") or 0), 0)
    played = Figures(expected, realised)

    def count(how: str) -> Figures | None:
        if how == PLAYED:
            return played
        if how == REST_LOST:
            return Figures(expected + remaining, realised + remaining)
        if how == FORCED_NOTHING:
            return Figures(min(expected, Fraction(0)), min(realised, Fraction(0)))
        return None

    learner, adversary = SCORING[fault(status)]
    return count(learner), count(adversary)


class Scorable(TypedDict):
    """What :func:`figures` reads of a row (a :data:`.rows.TournamentGame` is one)."""

    game: str
    status: str
    horizon: NotRequired[int]
    normaliser_value: NotRequired[float | None]
    result: ResultRow


class Scoring(TypedDict):
    """The scoring fields of a game's tournament row (:func:`score`)."""

    fault: str
    horizon: int
    normaliser: str
    normaliser_value: float | None
    raw: float | None
    score: float | None
    score_realised: float | None
    forcing: float | None
    forcing_realised: float | None


def figures(row: Scorable) -> tuple[Figures | None, Figures | None]:
    """A tournament row's normalised figures for its learner and its adversary
    (:func:`judge` divided by ``normaliser_value``); ``(None, None)`` for a row without
    ``horizon`` (recorded before the scoring rules: not scored).

    >>> figures({"game": "mistake-bound", "status": "complete", "horizon": 30,
    ...          "normaliser_value": 4.0, "result": {"rounds": 30, "mistakes": 3,
    ...                                              "expected_mistakes": 2.5}})[0]
    Figures(expected=Fraction(5, 8), realised=Fraction(3, 4))
    """
    if row.get("horizon") is None:
        return None, None
    learner, adversary = judge(row["game"], row["status"], row.get("result") or {},
                               int(row["horizon"]))
    norm = row.get("normaliser_value")
    divisor = Fraction(norm) if norm else Fraction(1)

    def normalised(raw: Figures | None) -> Figures | None:
        return None if raw is None else Figures(raw.expected / divisor,
                                                raw.realised / divisor)

    return normalised(learner), normalised(adversary)


def score(rules: GameSpec, outcome: GameOutcome) -> Scoring:
    """The scoring fields of one game's tournament row: ``fault``, the ``horizon`` T,
    the ``normaliser`` (name) and its ``normaliser_value``, ``raw`` (the realised figure
    as played), and as floats for display ``score`` / ``score_realised`` (the learner's
    normalised figure; ``None``: not scored for it) and ``forcing`` /
    ``forcing_realised`` (the adversary's). :func:`rank` recomputes the figures exactly
    from the same fields.

    >>> from littlestone.games.classes import make_class
    >>> rules = GameSpec("mistake-bound", 30, make_class("thresholds:n=15"))  # Ldim 4
    >>> row = score(rules, {"status": "illegal_move:learner:p_range",
    ...                     "result": {"rounds": 0, "mistakes": 0, "expected_mistakes": 0}})
    >>> row["fault"], row["score"], row["forcing"]  # (the adversary won by forfeit)
    ('learner', 7.5, None)
    """
    norm, norm_name = normaliser(rules)
    result = outcome.get("result") or {}
    mine, theirs = figures({"game": rules.game, "status": outcome["status"],
                            "result": result, "horizon": rules.rounds,
                            "normaliser_value": norm})
    (score, score_realised), (forcing, forcing_realised) = (
        (None, None) if value is None else value.to_float() for value in (mine, theirs))
    return {"fault": fault(outcome["status"]), "horizon": rules.rounds,
            "normaliser": norm_name, "normaliser_value": norm,
            "raw": result.get("regret") if rules.game == EXPERTS else result.get("mistakes"),
            "score": score, "score_realised": score_realised, "forcing": forcing,
            "forcing_realised": forcing_realised}


class Standing(TypedDict, total=False):
    """An entrant's line of a leaderboard: its spec (under its role: ``learner`` or
    ``adversary``), its counts (:func:`_entry`), its scores (a learner's ``worst`` and
    ``median``, an adversary's ``forcing``: each a float, the exact fraction as a string
    and the realised figure beside), its ``rank`` (None: no scored game) and those
    ``tied_with`` it (``tied`` counts them; a :class:`Tally` for the page names only
    :data:`TIED_NAMED` of them)."""

    learner: str
    adversary: str
    games: int
    scored: int
    failed: int
    failures: list[str]
    unscored: int
    unscored_statuses: list[str]
    #: Of the games not scored for it, those the other side ended by its own fault.
    won_by_forfeit: int
    worst: float | None
    worst_exact: str | None
    worst_realised: float | None
    median: float | None
    median_exact: str | None
    median_realised: float | None
    forcing: float | None
    forcing_exact: str | None
    forcing_realised: float | None
    rank: int | None
    tied_with: list[str]
    #: A sampled tournament's model rating, its interval and the games it rests on
    #: (:mod:`.ratings`).
    rating: float
    rating_low: float | None
    rating_high: float | None
    rating_games: int
    tied: int


class Unloaded(TypedDict):
    """An entrant that could not be loaded: its spec, its role and why."""

    entrant: str
    role: str
    reason: str


class Replayed(TypedDict):
    """What a tournament's run played (by reason, with the entrants each names), what it
    forgot, in one line (``summary``); then the sandboxes it loaded and its field's CPU."""

    played: int
    why: dict[str, dict[str, int | list[str]]]
    forgotten: dict[str, dict[str, int | list[str]]]
    summary: str
    sandboxes_loaded: NotRequired[int]
    field_cpu_seconds: NotRequired[float]


class Leaderboard(TypedDict):
    """A ranked tournament as ``--json`` prints it (:meth:`TournamentReport.leaderboard`)."""

    tournament: str
    rules: str
    learners: list[Standing]
    adversaries: list[Standing]
    payoff: dict[str, dict[str, float | None]]
    payoff_realised: dict[str, dict[str, float | None]]
    games: int
    failed: list[TournamentGame]
    failed_to_load: list[Unloaded]
    stopped: bool
    skipped: list[Skipped]
    sandbox: str
    replayed: Replayed | dict[str, object]
    report: str


@dataclass
class TournamentReport:
    """A ranked tournament: its games, the pairs not played, the two leaderboards and
    the learner x adversary payoff matrix (the learner's mean score; realised beside)."""

    name: str
    games: list[TournamentGame] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    learners: list[Standing] = field(default_factory=list)
    adversaries: list[Standing] = field(default_factory=list)
    payoff: dict[str, dict[str, float | None]] = field(default_factory=dict)
    payoff_realised: dict[str, dict[str, float | None]] = field(default_factory=dict)
    sandbox: str = ""
    report: str = ""
    #: Entrants that could not be loaded: spec, role, reason.
    unloaded: list[Unloaded] = field(default_factory=list)
    #: Whether the tournament stopped before playing (entrants failed to load).
    stopped: bool = False
    #: What this run played and why, what it forgot, and the sandboxes it loaded.
    replayed: Replayed | dict[str, object] = field(default_factory=dict)

    def leaderboard(self) -> Leaderboard:
        """What ``--json`` prints."""
        return {"tournament": self.name, "rules": RULES, "learners": self.learners,
                "adversaries": self.adversaries, "payoff": self.payoff,
                "payoff_realised": self.payoff_realised, "games": len(self.games),
                "failed": [g for g in self.games if g["status"] != "complete"],
                "failed_to_load": self.unloaded, "stopped": self.stopped,
                "skipped": self.skipped, "sandbox": self.sandbox, "replayed": self.replayed,
                "report": self.report}


def landed(row: TournamentGame) -> Landed:
    """A tournament row's part in its pair's stored cell (:mod:`.records.scores`): its
    sides' exact figures (:func:`figures`).

    >>> part = landed({"game": "mistake-bound", "status": "crash:learner:E", "horizon": 4,
    ...                "normaliser_value": 2.0, "learner": "a", "adversary": "b", "seed": 0,
    ...                "game_id": None, "class": None, "result": {"rounds": 2, "mistakes": 1}})
    >>> part.learner_figures, part.adversary_figures
    ((Fraction(3, 2), Fraction(3, 2)), None)
    """
    mine, theirs = figures(row)
    return Landed(row["learner"], row["adversary"], row["status"],
                  None if mine is None else (mine.expected, mine.realised),
                  None if theirs is None else (theirs.expected, theirs.realised))


set_scorer(landed)


def rank(name: str, rows: list[TournamentGame], skipped: list[Skipped]) -> TournamentReport:
    """Learners by their worst adversary's score, then by their median over adversaries
    (lower is better); adversaries by the median score they force over learners (higher
    is better); and the payoff matrix. A pair's score is the mean of the expected figures
    of :func:`figures` over its classes and seeds, exact. Medians, not means: an entrant
    that throws its games to a friend (a learner erring on purpose, an adversary labelling
    as its friend predicts) changes one pair, which moves no median while fewer than half
    the field collude (the worst, a maximum, moves only if the friend was that learner's
    strongest adversary: SECURITY.md). Equal scores
    share a rank (competition ranking: 1, 2, 2, 4) and are listed by name; entrants with
    no scored game follow every scored one, by name, with rank ``None``. The rows are
    summed into one cell a pair first (:func:`rank_cells` ranks the cells, as the index
    stores them game by game).

    >>> def game(learner, adversary, status, mistakes):
    ...     return {"game": "mistake-bound", "status": status, "learner": learner,
    ...             "adversary": adversary, "horizon": 30, "normaliser_value": 4.0,
    ...             "result": {"rounds": 1 if status != "complete" else 30,
    ...                        "mistakes": mistakes, "expected_mistakes": mistakes}}
    >>> board = rank("t", [game("soa", "tree", "complete", 4),
    ...                    game("halving", "tree", "complete", 4),
    ...                    game("crashes", "tree", "crash:learner:ValueError", 0)], [])
    >>> [(r["rank"], r["learner"], r["worst"], r["tied_with"]) for r in board.learners]
    [(1, 'halving', 1.0, ['soa']), (1, 'soa', 1.0, ['halving']), (3, 'crashes', 7.25, [])]
    """
    report = rank_cells(name, cells_of(rows, landed), skipped)
    report.games = rows
    return report


def rank_cells(name: str, cells: list[Cell], skipped: list[Skipped]) -> TournamentReport:
    """:func:`rank` from the pairs' cells (each pair's games summed), without the games:
    what the page reads from the index's stored cells, at a cost in pairs, not games
    (:class:`Tally` keeps it as cells change)."""
    tally = Tally(name)
    for cell in cells:
        tally.put(cell)
    report = tally.report(payoff=True)
    report.skipped = skipped
    return report


#: Entrants a tied line names in a :class:`Tally` the page reads (the rest are counted).
TIED_NAMED = 5
#: An entrant of a tally: its role and its spec.
Entrant = tuple[Role, str]


class Tally:
    """:func:`rank_cells` kept up to date as cells change (:meth:`put`): each entrant's
    line is computed again only when one of its cells changed, and the ranks by sorting
    the keys' floats (exact within a run of equal floats), so that a game landing costs
    its two entrants' lines and one sort, not the field's games nor every pair of
    entrants."""

    def __init__(self, name: str, named_ties: int | None = None) -> None:
        self.name, self.named_ties = name, named_ties
        self.cells: dict[tuple[str, str], Cell] = {}
        self.means: dict[tuple[str, str], tuple[Figures | None, Figures | None]] = {}
        self.of_learner: dict[str, set[str]] = {}
        self.of_adversary: dict[str, set[str]] = {}
        self.lines: dict[Entrant, tuple[Standing, tuple[Fraction, ...] | None]] = {}
        #: Each line's key as floats (what the sort compares first), made once a line.
        self.floats: dict[Entrant, tuple[float, ...]] = {}
        self.exact: dict[Entrant, tuple[tuple[int, int], ...]] = {}
        self.dirty: set[Entrant] = set()
        self._report: TournamentReport | None = None

    def put(self, cell: Cell) -> None:
        """A cell as it now is (no game: the pair is gone)."""
        pair = (cell.learner, cell.adversary)
        if cell.games <= 0:
            self.cells.pop(pair, None)
            self.means.pop(pair, None)
            self.of_learner.get(cell.learner, set()).discard(cell.adversary)
            self.of_adversary.get(cell.adversary, set()).discard(cell.learner)
        else:
            self.cells[pair] = cell
            self.means[pair] = (_mean(cell.learner_side), _mean(cell.adversary_side))
            self.of_learner.setdefault(cell.learner, set()).add(cell.adversary)
            self.of_adversary.setdefault(cell.adversary, set()).add(cell.learner)
        self.dirty |= {(LEARNER, cell.learner), (ADVERSARY, cell.adversary)}
        self._report = None

    def _line(self, role: Role, name: str) -> tuple[Standing, tuple[Fraction, ...] | None]:
        if role == LEARNER:
            pairs = [(name, a) for a in self.of_learner.get(name, ())]
            values = [m for p in pairs if (m := self.means[p][0]) is not None]
        else:
            pairs = [(lrn, name) for lrn in self.of_adversary.get(name, ())]
            values = [m for p in pairs if (m := self.means[p][1]) is not None]
        entry = _entry(role, name, [self.cells[p] for p in pairs])
        key: tuple[Fraction, ...] | None = None
        if role == LEARNER:
            if values:
                worst = max(c.expected for c in values)
                median = Figures.median(values)
                entry["worst"], entry["worst_exact"], entry["worst_realised"] = _shown(
                    worst, max(c.realised for c in values))
                entry["median"], entry["median_exact"], entry["median_realised"] = _shown(
                    median.expected, median.realised)
                key = (worst, median.expected)
            else:
                entry["worst"], entry["worst_exact"], entry["worst_realised"] = _shown(None,
                                                                                       None)
                entry["median"], entry["median_exact"], entry["median_realised"] = _shown(
                    None, None)
        elif values:
            forcing = Figures.median(values)
            entry["forcing"], entry["forcing_exact"], entry["forcing_realised"] = _shown(
                forcing.expected, forcing.realised)
            key = (-forcing.expected,)
        else:
            entry["forcing"], entry["forcing_exact"], entry["forcing_realised"] = _shown(None,
                                                                                         None)
        return entry, key

    def report(self, payoff: bool = False) -> TournamentReport:
        """The tally as :func:`rank_cells` ranks it (``payoff``: with the payoff matrix;
        a learner x adversary table, built only when asked)."""
        if self._report is not None and (not payoff or self._report.payoff
                                         or not self.of_learner):
            return self._report
        for role, name in self.dirty:
            owned = self.of_learner if role == LEARNER else self.of_adversary
            if owned.get(name):
                line = self.lines[(role, name)] = self._line(role, name)
                self.floats[(role, name)] = tuple(float(v) for v in line[1] or ())
                self.exact[(role, name)] = _pairs(line[1])
            else:
                owned.pop(name, None)
                self.lines.pop((role, name), None)
                self.floats.pop((role, name), None)
                self.exact.pop((role, name), None)
        self.dirty.clear()
        report = TournamentReport(self.name)
        for role in ROLES:
            lines = [(entry, key, self.floats[(r, n)])
                     for (r, n), (entry, key) in self.lines.items() if r == role]
            ranked = _standings([{**entry} for entry, _, _ in lines], role,
                                {entry[role]: key for entry, key, _ in lines}, self.named_ties,
                                {entry[role]: f for entry, _, f in lines},
                                {n: self.exact[(r, n)] for r, n in self.lines if r == role})
            if role == LEARNER:
                report.learners = ranked
            else:
                report.adversaries = ranked
        if payoff:
            adversaries = sorted(self.of_adversary)
            for learner in sorted(self.of_learner):
                row = {a: self.means.get((learner, a), (None, None))[0] for a in adversaries}
                report.payoff[learner] = {a: None if c is None else float(c.expected)
                                          for a, c in row.items()}
                report.payoff_realised[learner] = {a: None if c is None else float(c.realised)
                                                   for a, c in row.items()}
        self._report = report
        return report


def _mean(side: Side) -> Figures | None:
    """A side's mean figures in a cell (None: no game scored for it)."""
    return None if side.n == 0 else Figures(side.expected / side.n, side.realised / side.n)


def _entry(role: Role, name: str, cells: list[Cell]) -> Standing:
    """An entrant's counts from its cells: its games, those scored for it, those it
    ended by its own fault (``failed``, with their statuses), those not scored for it
    (``unscored``) and of them those its opponent ended by its own fault
    (``won_by_forfeit``)."""
    games = sum(c.games for c in cells)
    failed = [(status, n) for c in cells for status, n in c.statuses.items()
              if fault(status) == role]
    unscored = [(status, n) for c in cells for status, n in
                (c.learner_unscored if role == LEARNER else c.adversary_unscored).items()]
    count = sum(n for _, n in unscored)
    entry: Standing = {"learner": name} if role == LEARNER else {"adversary": name}
    entry.update({"games": games, "scored": games - count,
                  "failed": sum(n for _, n in failed),
                  "failures": sorted({s for s, _ in failed}), "unscored": count,
                  "unscored_statuses": sorted({s for s, _ in unscored}),
                  "won_by_forfeit": sum(n for s, n in unscored
                                        if fault(s) in ROLES and fault(s) != role)})
    return entry


def _shown(expected: Fraction | None, realised: Fraction | None
           ) -> tuple[float | None, str | None, float | None]:
    """A score as the leaderboard shows it: a float, the exact fraction as a string, and
    the realised figure beside it."""
    return (None if expected is None else float(expected),
            None if expected is None else str(expected),
            None if realised is None else float(realised))


def _standings(entries: list[Standing], role: Role,
               keys: Mapping[str, tuple[Fraction, ...] | None],
               named_ties: int | None = None,
               floats: Mapping[str, tuple[float, ...]] | None = None,
               exact: Mapping[str, object] | None = None) -> list[Standing]:
    """Entries in order of their key (smaller is better; ``None``: not scored, last),
    then name; ``rank`` is one plus the number of entries strictly better (equal keys
    share it), ``tied`` counts the others with an equal key and ``tied_with`` names them
    by name (``named_ties`` of them at most: a field of a thousand equal versions would
    otherwise name a million), found by grouping the sorted keys, not by comparing every
    pair."""
    with_key = [e for e in entries if keys[e[role]] is not None]
    if floats is None:
        floats = {e[role]: tuple(float(v) for v in keys[e[role]] or ()) for e in with_key}
    shown = floats
    # (each key as integer pairs: equal exactly when equal as tuples, compared in C)
    if exact is None:
        exact = {e[role]: _pairs(keys[e[role]]) for e in with_key}
    same = exact
    scored = _exact_sorted(with_key, lambda e: keys[e[role]] or (), lambda e: e[role],
                           lambda e: shown[e[role]], lambda e: same[e[role]])
    rounded = [shown[e[role]] for e in scored]
    start = 0
    while start < len(scored):
        mine = same[scored[start][role]]
        end = start + 1
        while end < len(scored) and rounded[end] == rounded[start] and \
                same[scored[end][role]] == mine:
            end += 1
        names = [e[role] for e in scored[start:end]]
        for entry in scored[start:end]:
            entry["rank"], entry["tied"] = start + 1, end - start - 1
            if end - start == 1:
                entry["tied_with"] = []
            else:
                others = (n for n in names if n != entry[role])
                entry["tied_with"] = list(others) if named_ties is None else [
                    n for _, n in zip(range(named_ties), others, strict=False)]
        start = end
    unscored = sorted((e for e in entries if keys[e[role]] is None), key=lambda e: e[role])
    for entry in unscored:
        entry["rank"], entry["tied_with"], entry["tied"] = None, [], 0
    return scored + unscored


def _pairs(key: tuple[Fraction, ...] | None) -> tuple[tuple[int, int], ...]:
    """A key as integer pairs: equal exactly when the key is, compared in C."""
    return tuple((v.numerator, v.denominator) for v in key or ())
