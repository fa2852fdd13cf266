"""What the Python API returns: results that print, tabulate and plot.

- :class:`Game`: one game, its rules, its players, its result and every round
  (:meth:`Game.rounds` as a pandas DataFrame, :meth:`Game.plot` with matplotlib, a
  summary table and the curve in Jupyter);
- :class:`Comparison`: several learners against one adversary, on the same seeds
  (:func:`littlestone.compare`), against their bounds;
- :class:`TournamentResult`: a ranked tournament, its leaderboards and its payoff
  matrix as DataFrames, and the heatmap;
- :class:`Dimensions`: Ldim(H) as an ``int``, with VCdim(H), the randomised value and
  a shattered tree beside it (:func:`littlestone.ldim`).

pandas and matplotlib are optional (the ``notebook`` extra): a table or a plot asked for
without them is a :class:`MissingDependency` that says what to install. The HTML that
Jupyter shows is drawn from templates in the charts' Jinja2 environment
(:func:`littlestone.charts.environment`), which escapes every value.

>>> from littlestone.games.game import GameResult
>>> game = Game(GameResult("mistake-bound", "complete", 3, 1, 1.0, 1.0, 1.0),
...             learner="halving", adversary="random-target", seed=0)
>>> game
<Game halving vs random-target: complete, 1 mistake in 3 rounds>
>>> "<table" in game._repr_html_()
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import numpy as np

from littlestone.charts import curve_svg, environment, heat_color, heat_legend
from littlestone.games.classes import FiniteClass
from littlestone.games.errors import BudgetExceeded, LittlestoneError, MissingDependency
from littlestone.games.experts import ExpertsBlock
from littlestone.games.game import (
    EXPERTS,
    Bound,
    ExpertsRecord,
    GameResult,
    GameSpec,
    PlayedFields,
    RoundRecord,
)

if TYPE_CHECKING:
    import networkx as nx

    from littlestone.server.tournament.ranking import Standing

__all__ = ["Comparison", "ComparisonRow", "Dimensions", "DimensionsRow", "Game",
           "MissingDependency", "PlayedRounds", "TournamentResult"]


class ComparisonRow(TypedDict):
    """A learner's line of a :class:`Comparison`: its games, the mean realised and
    expected figure (mistakes, or regret in the experts game) and the worst, its bound
    and the share of the bound the mean expected figure reaches."""

    learner: str
    games: int
    complete: int
    mistakes: NotRequired[float]
    expected_mistakes: NotRequired[float]
    worst_mistakes: NotRequired[float]
    regret: NotRequired[float]
    expected_regret: NotRequired[float]
    worst_regret: NotRequired[float]
    bound: float | None
    bound_name: str | None
    share_of_bound: float | None


#: A class's dimensions as ``littlestone ldim`` prints them (:meth:`Dimensions.to_dict`).
DimensionsRow = TypedDict("DimensionsRow", {
    "class": str, "size": int, "domain_size": int, "ldim": int, "method": str,
    "vcdim": int | None, "randomized_value": Fraction | None,
})


def pandas() -> Any:
    """The pandas module, or :class:`MissingDependency` naming the extra to install."""
    try:
        import pandas
    except ImportError:
        raise MissingDependency("tables need pandas: pip install 'littlestone[notebook]'"
                                ) from None
    return pandas


def pyplot() -> Any:
    """matplotlib's pyplot, or :class:`MissingDependency` naming the extra to install."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency("plots need matplotlib: pip install 'littlestone[notebook]'"
                                ) from None
    return plt


@functools.cache
def _templates() -> Any:
    return environment("littlestone")


def _shown(value: Any) -> str:
    """A value as a summary table shows it: floats to 6 significant digits."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, Fraction):
        return str(value) if value.denominator == 1 else f"{value} = {float(value):.6g}"
    return "-" if value is None else str(value)


def _aligned(rows: Mapping[str, object]) -> str:
    width = max((len(k) for k in rows), default=0)
    return "\n".join(f"{key:<{width}}  {_shown(value)}" for key, value in rows.items())


# -- one game's rounds ---------------------------------------------------------------


class PlayedRounds:
    """Every round of a game as it is scored, kept as columns: a
    :class:`~littlestone.local.RoundLog`, so that the runner hands over an oblivious
    adversary's rounds a block at a time (its fast path) and the others one by one.

    >>> rounds = PlayedRounds()
    >>> rounds.rounds(1, [3, 5], np.array([1.0, 0.25]), [0, 1], np.array([1, 0]))
    >>> rounds.columns()["mistakes"].tolist(), rounds.columns()["expected_mistakes"].tolist()
    ([1, 2], [1.0, 1.75])
    """

    def __init__(self) -> None:
        self._x: list[Any] = []
        self._blocks: list[tuple[Any, Any, Any]] = []  # p, y, prediction
        self._pending: list[tuple[float, int, int]] = []
        self.experts: list[ExpertsRecord] = []

    def round(self, record: RoundRecord) -> None:
        """One mistake-bound round, played on its own."""
        self._x.append(record.x)
        self._pending.append((record.p, record.y, record.prediction))

    def rounds(self, t0: int, xs: Any, ps: Any, ys: Any, predictions: Any) -> None:
        """Mistake-bound rounds ``t0``, ``t0 + 1`` ... as columns (one queued block)."""
        self._flush()
        self._x.extend(xs.tolist() if isinstance(xs, np.ndarray) and xs.ndim == 1
                       else list(xs))
        self._blocks.append((np.asarray(ps, dtype=np.float64), np.asarray(ys, dtype=np.int64),
                             np.asarray(predictions, dtype=np.int64)))

    def expert(self, record: ExpertsRecord) -> None:
        """One round of the experts game."""
        self.experts.append(record)

    def expert_block(self, block: ExpertsBlock) -> None:
        """Rounds of the experts game scored as a block."""
        self.experts.extend(block.records())

    def _flush(self) -> None:
        if self._pending:
            p, y, prediction = zip(*self._pending, strict=True)
            self._blocks.append((np.array(p, dtype=np.float64), np.array(y, dtype=np.int64),
                                 np.array(prediction, dtype=np.int64)))
            self._pending = []

    def __len__(self) -> int:
        return len(self.experts) or len(self._x)

    # (a column a field: arrays, or lists of any x; an experts or a mistake-bound game's)
    def columns(self) -> dict[str, Any]:
        """The rounds as named columns (numpy arrays, ``x`` a list), running totals
        recomputed in round order as the referee keeps them."""
        if self.experts:
            names = ExpertsRecord._fields
            return {name: [getattr(r, name) for r in self.experts] for name in names}
        self._flush()
        parts = list(zip(*self._blocks, strict=True)) or [(), (), ()]
        p, y, prediction = (np.concatenate(part) if part else np.zeros(0) for part in parts)
        mistake = prediction != y
        loss = np.abs(p - y)
        return {"t": np.arange(1, len(y) + 1), "x": self._x, "p": p, "y": y.astype(np.int64),
                "prediction": prediction.astype(np.int64), "mistake": mistake, "loss": loss,
                "mistakes": np.cumsum(mistake), "expected_mistakes": np.cumsum(loss)}

    def curve(self) -> tuple[Sequence[float], Sequence[float], Sequence[float]]:
        """Rounds, the realised curve and the expected one: mistakes in the mistake-bound
        game, regret in the experts game."""
        if self.experts:
            return ([r.t for r in self.experts], [r.regret for r in self.experts],
                    [r.expected_regret for r in self.experts])
        columns = self.columns()
        return (columns["t"].tolist(), columns["mistakes"].tolist(),
                columns["expected_mistakes"].tolist())


# -- one game ------------------------------------------------------------------------


class Game:
    """One played game: its rules, its players, its result and its rounds.

    The scores read as the result's (``status``, ``mistakes``, ``expected_mistakes``,
    ``regret``, ``expected_regret``, ``bound``, ``message``); ``result`` is the
    :class:`~littlestone.games.game.GameResult` itself and ``played`` the number of
    rounds scored. :meth:`rounds` is every round as a DataFrame, :meth:`plot` the curve
    against the bound; ``print(game)`` shows the summary, Jupyter the summary and the
    curve.

    >>> import littlestone
    >>> game = littlestone.play("soa", "shattered-tree", "thresholds:n=15", rounds=10)
    >>> game.mistakes, game.bound.value, game.played
    (4, 4, 10)
    >>> print(game)  # doctest: +ELLIPSIS
    game               mistake-bound
    learner            soa
    adversary          shattered-tree
    class              thresholds:n=15
    horizon            10
    seed               0
    status             complete
    rounds             10
    mistakes           4
    expected_mistakes  4
    ...
    >>> game.rounds()[["x", "p", "y", "mistakes"]].head(3)  # doctest: +NORMALIZE_WHITESPACE
       x    p  y  mistakes
    t
    1  7  1.0  0         1
    2  3  1.0  0         2
    3  1  1.0  0         3
    """

    def __init__(self, result: GameResult, *, learner: str, adversary: str,
                 seed: int | None, rules: GameSpec | None = None,
                 rounds: PlayedRounds | None = None, game_id: str | None = None,
                 log: Path | None = None, why_no_rounds: str = "") -> None:
        self.result = result
        self.rules = rules
        self.learner, self.adversary, self.seed = learner, adversary, seed
        self.game_id, self.log = game_id, log
        self._rounds = rounds
        self._why_no_rounds = why_no_rounds or "the game was played without keeping its rounds"
        #: What :func:`littlestone.replay` found when asked to verify the log.
        self.verification: Any = None

    # the result's scores
    @property
    def status(self) -> str:
        """``complete``, or the rule broken and by whom."""
        return self.result.status

    @property
    def complete(self) -> bool:
        """Whether the game was played to its horizon."""
        return self.result.complete

    @property
    def mistakes(self) -> float:
        """Realised mistakes (in the experts game: the realised cumulative loss)."""
        return self.result.mistakes

    @property
    def expected_mistakes(self) -> float:
        """Expected mistakes over the referee's coin (experts game: expected loss)."""
        return self.result.expected_mistakes

    @property
    def regret(self) -> float:
        """Realised regret against the best hypothesis or expert."""
        return self.result.regret

    @property
    def expected_regret(self) -> float:
        """Expected regret over the referee's coin."""
        return self.result.expected_regret

    @property
    def bound(self) -> Bound | None:
        """The learner's theoretical bound on this game, if it has one."""
        return self.result.bound

    @property
    def message(self) -> str:
        """What ended the game, when it did not complete."""
        return self.result.message

    @property
    def played(self) -> int:
        """The rounds scored (the horizon unless the game ended early)."""
        return self.result.rounds

    @property
    def game(self) -> str:
        """The game's name: ``mistake-bound`` or ``experts``."""
        return self.result.game

    @property
    def hclass(self) -> str | None:
        """The class's spec (``None`` for free experts)."""
        if self.rules is not None and self.rules.hclass is not None:
            return self.rules.hclass.spec
        return None

    def to_dict(self) -> PlayedFields:
        """The summary as a dict: what ``littlestone play --json`` prints (without the
        class's Ldim, which :func:`littlestone.ldim` gives, and the seconds)."""
        out: PlayedFields = {"game": self.result.game, "learner": self.learner,
                             "adversary": self.adversary, "class": self.hclass}
        if self.rules is not None:
            out["horizon"] = self.rules.rounds
            if self.rules.game == EXPERTS:
                out["experts"] = self.rules.experts
        out["seed"] = self.seed
        scores = self.result.to_dict()
        scores.pop("game")
        if not scores.get("message"):
            scores.pop("message", None)
        out = {**out, **scores}
        if self.game_id is not None:
            out["game_id"], out["log"] = self.game_id, None if self.log is None else str(
                self.log)
        return out

    def __str__(self) -> str:
        return _aligned({k: v for k, v in self.to_dict().items()
                         if not isinstance(v, list | dict)})

    def __repr__(self) -> str:
        what = "regret" if self.result.game == EXPERTS else "mistake"
        value = self.regret if what == "regret" else self.mistakes
        shown = (f"{value:.4g} regret" if what == "regret"
                 else f"{_shown(value)} mistake{'s' if value != 1 else ''}")
        bound = "" if self.bound is None else f" (bound {self.bound.value:.4g})"
        return (f"<Game {self.learner} vs {self.adversary}: {self.status}, {shown}{bound} "
                f"in {self.played} rounds>")

    def _kept(self) -> PlayedRounds:
        if self._rounds is None:
            raise LittlestoneError(f"no rounds to show: {self._why_no_rounds}")
        return self._rounds

    def rounds(self) -> Any:
        """Every round as a pandas DataFrame indexed by ``t``.

        Mistake-bound game: the instance ``x``, the learner's ``p`` (the probability it
        predicts 1), the label ``y``, the referee's draw ``prediction``, ``mistake``,
        the expected ``loss`` |p - y|, and the running ``mistakes`` and
        ``expected_mistakes``. Experts game: the fields of
        :class:`~littlestone.games.game.ExpertsRecord` (``advice``, ``weights`` and
        ``costs`` are arrays). pandas is needed (the ``notebook`` extra)."""
        pd = pandas()
        return pd.DataFrame(self._kept().columns()).set_index("t")

    def curve(self) -> tuple[Sequence[float], Sequence[float], Sequence[float]]:
        """(rounds, realised, expected): mistakes in the mistake-bound game, regret in
        the experts game, round by round."""
        return self._kept().curve()

    @property
    def _ylabel(self) -> str:
        return "regret" if self.result.game == EXPERTS else "mistakes"

    def plot(self, ax: Any = None) -> Any:
        """Cumulative mistakes (mistake-bound game) or regret (experts game) round by
        round, the expected curve over the referee's coin beside it, and the learner's
        bound; on ``ax`` (a new figure by default). Returns the matplotlib Axes."""
        plt = pyplot()
        ts, realised, expected = self.curve()
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        if self.result.game == EXPERTS:
            ax.plot(ts, realised, lw=1, label="regret")
        else:
            ax.step(ts, realised, where="post", label="mistakes")
        if self.result.game == EXPERTS:
            ax.plot(ts, expected, lw=1.5, ls="--", label=f"expected {self._ylabel}")
        else:  # (a sum of |p - y| grows at each round, by steps as the realised count)
            ax.step(ts, expected, where="post", lw=1.5, ls="--",
                    label=f"expected {self._ylabel}")
        if self.bound is not None and math.isfinite(self.bound.value):
            ax.axhline(self.bound.value, color="crimson", ls=":",
                       label=f"bound {self.bound.value:.4g}: {self.bound.name}"[:60])
        if self.result.game != EXPERTS:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("round t")
        _whole_rounds(ax)
        ax.set_ylabel(f"cumulative {self._ylabel}")
        ax.set_title(f"{self.learner} vs {self.adversary}"
                     + (f" on {self.hclass}" if self.hclass else ""), fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
        ax.figure.tight_layout()
        return ax

    def _svg(self) -> Any:
        if self._rounds is None:
            return None
        ts, realised, expected = self._rounds.curve()
        bound = self.bound
        return curve_svg(ts, realised, expected, None if bound is None else bound.value,
                         "" if bound is None else bound.name, ylabel=self._ylabel,
                         width=420, height=200)

    def _repr_html_(self) -> str:
        rows = {k: _shown(v) for k, v in self.to_dict().items()
                if not isinstance(v, list | dict)}
        return str(_templates().get_template("game.html").render(
            rows=rows, curve=self._svg(), note="" if self._rounds is not None
            else f"(no curve: {self._why_no_rounds})"))


# -- several learners against one adversary --------------------------------------------


class Comparison:
    """Several learners against one adversary, each on the same seeds
    (:func:`littlestone.compare`): :meth:`table` per learner, :meth:`games` per game,
    :meth:`plot` their mean curves against their bounds.

    >>> import littlestone
    >>> comparison = littlestone.compare(["halving", "soa"], "shattered-tree",
    ...                                  "thresholds:n=15", rounds=10, seeds=[0, 1])
    >>> comparison.table()[["games", "mistakes", "bound"]]  # doctest: +NORMALIZE_WHITESPACE
             games  mistakes  bound
    learner
    halving      2       4.0    4.0
    soa          2       4.0    4.0
    """

    def __init__(self, games: Sequence[Game]) -> None:
        self.played = list(games)

    def learners(self) -> list[str]:
        """The learners, in the order they were given."""
        return list(dict.fromkeys(g.learner for g in self.played))

    def _figure(self) -> str:
        return "regret" if any(g.result.game == EXPERTS for g in self.played) else "mistakes"

    def rows(self) -> list[ComparisonRow]:
        """One row per learner: its games, its mean realised and expected figure
        (mistakes, or regret in the experts game), the worst, its bound and the share of
        the bound the mean expected figure reaches."""
        figure = self._figure()
        out: list[ComparisonRow] = []
        for learner in self.learners():
            mine = [g for g in self.played if g.learner == learner]
            realised = [g.regret if figure == "regret" else g.mistakes for g in mine]
            expected = [g.expected_regret if figure == "regret" else g.expected_mistakes
                        for g in mine]
            bounds = [g.bound.value for g in mine if g.bound is not None]
            bound = max(bounds) if bounds else None
            mean_expected = float(np.mean(expected))
            games, complete = len(mine), sum(g.complete for g in mine)
            mean, worst = float(np.mean(realised)), float(max(realised))
            bound_name = next((g.bound.name for g in mine if g.bound is not None), None)
            share = mean_expected / bound if bound else None
            out.append({"learner": learner, "games": games, "complete": complete,
                        "regret": mean, "expected_regret": mean_expected,
                        "worst_regret": worst, "bound": bound, "bound_name": bound_name,
                        "share_of_bound": share} if figure == "regret" else
                       {"learner": learner, "games": games, "complete": complete,
                        "mistakes": mean, "expected_mistakes": mean_expected,
                        "worst_mistakes": worst, "bound": bound, "bound_name": bound_name,
                        "share_of_bound": share})
        return out

    def table(self) -> Any:
        """:meth:`rows` as a pandas DataFrame indexed by learner."""
        return pandas().DataFrame(self.rows()).set_index("learner")

    def games(self) -> Any:
        """Every game's summary as a pandas DataFrame."""
        return pandas().DataFrame([g.to_dict() for g in self.played])

    def mean_curves(self) -> dict[str, tuple[list[int], list[float]]]:
        """Each learner's realised curve, averaged over its games round by round (a game
        that ended early holds its last value)."""
        out = {}
        for learner in self.learners():
            curves = [list(g.curve()[1]) for g in self.played if g.learner == learner]
            length = max((len(c) for c in curves), default=0)
            padded = [c + [c[-1] if c else 0.0] * (length - len(c)) for c in curves]
            mean = np.mean(np.array(padded, dtype=np.float64), axis=0) if padded else []
            out[learner] = (list(range(1, length + 1)), [float(v) for v in mean])
        return out

    def plot(self, ax: Any = None) -> Any:
        """Each learner's mean curve over the seeds (steps, in the mistake-bound game),
        its bound dotted in its colour; on ``ax`` (a new figure by default). A curve equal
        to an earlier learner's is drawn dashed with markers and labelled ``(= that
        learner)``, so that none hides another; a bound far above every curve
        (:data:`BOUND_OFF_AXIS` times the highest) is said in the legend rather than
        drawn, which would squash the curves to the axis's foot. Returns the matplotlib Axes."""
        plt = pyplot()
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        figure = self._figure()
        bounds = {row["learner"]: row["bound"] for row in self.rows()}
        curves = self.mean_curves()
        highest = max((max(mean) for _, mean in curves.values() if mean), default=0.0)
        drawn: list[tuple[str, list[int], list[float]]] = []
        for learner, (ts, mean) in curves.items():
            same = next((other for other, t, m in drawn if t == ts and m == mean), None)
            style: dict[str, Any] = {"lw": 1.5, "label": learner} if same is None else {
                "lw": 1, "ls": "--", "marker": "o", "markersize": 3,
                "label": f"{learner} (= {same})"}
            if figure == "mistakes":
                (line,) = ax.step(ts, mean, where="post", **style)
            else:
                (line,) = ax.plot(ts, mean, **style)
            drawn.append((learner, ts, mean))
            bound = bounds[learner]
            if bound is None or not math.isfinite(bound):
                continue
            if highest > 0 and bound > BOUND_OFF_AXIS * highest:  # (said in the legend)
                ax.plot([], [], ls="none", label=f"{learner}'s bound {bound:.4g}: above "
                        "the axis")
            else:
                ax.axhline(bound, color=line.get_color(), ls=":", lw=1,
                           label=f"{learner}'s bound {bound:.4g}")
        first = self.played[0] if self.played else None
        if first is not None:
            ax.set_title(f"against {first.adversary}"
                         + (f" on {first.hclass}" if first.hclass else "")
                         + f", mean over {_count(len({g.seed for g in self.played}), 'seed')}",
                         fontsize=9)
        if figure == "mistakes":
            ax.set_ylim(bottom=0)
        ax.set_xlabel("round t")
        _whole_rounds(ax)
        ax.set_ylabel(f"cumulative {figure}")
        ax.legend(fontsize=7, loc="lower right")
        ax.figure.tight_layout()
        return ax

    def __repr__(self) -> str:
        return f"<Comparison of {', '.join(self.learners())}: {len(self.played)} games>"

    def __str__(self) -> str:
        rows = self.rows()
        if not rows:
            return "(no games)"
        keys = [k for k in rows[0] if k != "bound_name"]
        cells = [[_shown(row.get(k)) for k in keys] for row in rows]
        widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
        lines = ["  ".join(f"{k:>{w}}" for k, w in zip(keys, widths, strict=True))]
        lines += ["  ".join(f"{c:>{w}}" for c, w in zip(line, widths, strict=True))
                  for line in cells]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = self.rows()
        curves = {}
        figure = self._figure()
        for learner, (ts, mean) in self.mean_curves().items():
            row = next(r for r in rows if r["learner"] == learner)
            curves[learner] = curve_svg(ts, mean, bound=row["bound"],
                                        bound_name=row["bound_name"] or "",
                                        ylabel=f"mean {figure}", width=300, height=150)
        return str(_templates().get_template("comparison.html").render(
            keys=list(rows[0]) if rows else [], rows=[
                {k: _shown(v) for k, v in row.items()} for row in rows], curves=curves))


# -- a tournament ----------------------------------------------------------------------


class TournamentResult:
    """A ranked tournament (:func:`littlestone.tournament`): the learners' and the
    adversaries' leaderboards, the payoff matrix and every game, as DataFrames, and the
    payoff heatmap on the theoretical scale (1.0 is the minimax value).

    ``report`` is the :class:`~littlestone.server.tournament.ranking.TournamentReport`
    itself, with the path of the static HTML report in ``report.report``.

    >>> import littlestone, tempfile
    >>> result = littlestone.tournament(
    ...     {"name": "doc", "rounds": 20, "seeds": 1, "classes": ["thresholds:n=15"],
    ...      "learners": ["halving", "soa"], "adversaries": ["shattered-tree"]},
    ...     data=tempfile.mkdtemp(), workers=1, progress=False)
    >>> result.table()[["rank", "worst"]]  # doctest: +NORMALIZE_WHITESPACE
             rank  worst
    learner
    halving     1    1.0
    soa         1    1.0
    >>> result.payoff()  # doctest: +NORMALIZE_WHITESPACE
    adversary  shattered-tree
    learner
    halving               1.0
    soa                   1.0
    """

    def __init__(self, report: Any) -> None:
        self.report = report

    @property
    def name(self) -> str:
        """The tournament's name."""
        return str(self.report.name)

    def table(self) -> Any:
        """The learners' leaderboard (rank, worst and median scores, exact and realised,
        games, failures) as a DataFrame indexed by learner."""
        return self._board(self.report.learners, "learner")

    def adversaries(self) -> Any:
        """The adversaries' leaderboard as a DataFrame indexed by adversary."""
        return self._board(self.report.adversaries, "adversary")

    @staticmethod
    def _board(entries: list[Standing], role: str) -> Any:
        pd = pandas()
        frame = pd.DataFrame(entries)
        if frame.empty:
            return frame
        first = ["rank", role]
        return frame[first + [c for c in frame.columns if c not in first]].set_index(role)

    def payoff(self, realised: bool = False) -> Any:
        """The payoff matrix, learners x adversaries: each pair's mean normalised score
        (expected; ``realised`` for the realised one), NaN where nothing was scored."""
        pd = pandas()
        matrix = self.report.payoff_realised if realised else self.report.payoff
        order = [e["learner"] for e in self.report.learners if e["learner"] in matrix]
        frame = pd.DataFrame(matrix).T.astype(float).reindex(order)
        frame.index.name, frame.columns.name = "learner", "adversary"
        return frame

    def games(self) -> Any:
        """Every game of the tournament, one row each, as a DataFrame."""
        return pandas().DataFrame(
            [{k: v for k, v in g.items() if k != "result"} for g in self.report.games])

    def heatmap(self, ax: Any = None, realised: bool = False) -> Any:
        """The payoff matrix coloured on the theoretical scale of the report and the page
        (:func:`littlestone.charts.heat_color`: green up to 1.0, the minimax value,
        then yellow to red), each cell labelled with its score. Returns the Axes."""
        import colorsys

        plt = pyplot()
        frame = self.payoff(realised)
        if ax is None:
            _, ax = plt.subplots(figsize=(1.6 + 1.3 * max(1, frame.shape[1]),
                                          0.8 + 0.45 * max(1, frame.shape[0])))
        colours = np.zeros((*frame.shape, 3))
        for i, row in enumerate(frame.itertuples(index=False)):
            for j, value in enumerate(row):
                colours[i, j] = _rgb(heat_color(None if math.isnan(value) else value),
                                     colorsys)
                ax.text(j, i, "-" if math.isnan(value) else f"{value:.3g}", ha="center",
                        va="center", fontsize=8)
        ax.imshow(colours, aspect="auto")
        ax.set_xticks(range(frame.shape[1]), list(frame.columns), rotation=30, ha="right",
                      fontsize=8)
        ax.set_yticks(range(frame.shape[0]), list(frame.index), fontsize=8)
        ax.set_title(f"{self.name}: learners' mean scores (1.0 = the minimax value)",
                     fontsize=9)
        return ax

    def __repr__(self) -> str:
        return (f"<TournamentResult {self.name}: {len(self.report.games)} games, "
                f"{len(self.report.learners)} learners, "
                f"{len(self.report.adversaries)} adversaries>")

    def __str__(self) -> str:
        lines = [f"tournament {self.name}: {len(self.report.games)} games"]
        for entry in self.report.learners:
            lines.append(f"  {_shown(entry.get('rank')):>3}  {entry['learner']}  worst "
                         f"{_shown(entry.get('worst'))}  median {_shown(entry.get('median'))}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        learners = [e["learner"] for e in self.report.learners
                    if e["learner"] in self.report.payoff]  # in the leaderboard's order
        adversaries = sorted({a for row in self.report.payoff.values() for a in row})
        return str(_templates().get_template("tournament.html").render(
            name=self.name, games=len(self.report.games),
            learners=[{k: _shown(e.get(k)) for k in ("rank", "learner", "worst", "median",
                                                       "failed")}
                      for e in self.report.learners],
            adversaries=[{k: _shown(e.get(k)) for k in ("rank", "adversary", "forcing")}
                         for e in self.report.adversaries],
            columns=adversaries, payoff=[
                (learner, [(heat_color(self.report.payoff[learner].get(a)),
                            _shown(self.report.payoff[learner].get(a))) for a in adversaries])
                for learner in learners],
            legend=heat_legend(), report=self.report.report))


def _rgb(css: str, colorsys: Any) -> tuple[float, float, float]:
    """An ``hsl(h, s%, l%)`` or ``#rrggbb`` colour of charts as an RGB triple in [0, 1]."""
    if css.startswith("#"):
        return tuple(int(css[i:i + 2], 16) / 255 for i in (1, 3, 5))  # type: ignore[return-value]
    h, s, lightness = (float(v.strip(" %")) for v in css[4:-1].split(","))
    r, g, b = colorsys.hls_to_rgb(h / 360, lightness / 100, s / 100)
    return (r, g, b)


# -- the dimensions of a class ---------------------------------------------------------


class Dimensions(int):
    """Ldim(H), an ``int``, with what goes with it: ``vcdim`` (VCdim(H) <= Ldim(H), UML
    Thm 21.9), ``randomized_value`` (v(H), the minimax expected mistakes of a learner
    whose coin the adversary cannot see: Ldim(H)/2 <= v(H) <= Ldim(H)) and
    :meth:`tree`, a shattered tree of depth Ldim(H) (a networkx DiGraph). ``method``
    says how Ldim was had: ``exact`` (the recursion) or ``theorem`` (a closed form, for
    classes beyond the matrix budget). VCdim and v(H) are computed when first asked for,
    within a budget; beyond it they are ``None``.

    >>> import littlestone
    >>> d = littlestone.ldim("thresholds:n=15")
    >>> d, d.vcdim, d.randomized_value, d.method
    (4, 1, Fraction(2, 1), 'exact')
    >>> d.tree().number_of_nodes()  # 15 internal nodes and 16 leaves
    31
    """

    hclass: FiniteClass
    method: str

    def __new__(cls, value: int, hclass: FiniteClass, method: str) -> Dimensions:
        self = super().__new__(cls, value)
        self.hclass, self.method = hclass, method
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Dimensions, (int(self), self.hclass, self.method))

    @property
    def ldim(self) -> int:
        """Ldim(H) as a plain ``int``."""
        return int(self)

    @functools.cached_property
    def vcdim(self) -> int | None:
        """VCdim(H), exact within its budget (or by theorem); ``None`` beyond."""
        from littlestone.games.vcdim import class_vcdim

        try:
            return class_vcdim(self.hclass)[0]
        except BudgetExceeded:
            return None

    @functools.cached_property
    def randomized_value(self) -> Fraction | None:
        """v(H), exact, within the budget ``littlestone ldim`` gives it; ``None`` beyond."""
        from littlestone.games.ldim import too_large
        from littlestone.games.randomized import LDIM_EXTRAS_BUDGET, class_randomized_value

        if too_large(self.hclass) is not None:
            return None
        try:
            return class_randomized_value(self.hclass, budget=LDIM_EXTRAS_BUDGET)
        except BudgetExceeded:
            return None

    def tree(self) -> nx.DiGraph:
        """A shattered tree of depth Ldim(H) (UML Definition 21.4): node ``"t"`` is the
        root, ``"t01"`` the node reached by labels 0 then 1; an internal node carries its
        ``instance``, an edge its ``label``, a leaf the ``hypothesis`` that realises its
        path (:func:`littlestone.games.ldim.shattered_tree`)."""
        from littlestone.games.ldim import shattered_tree, solver_for

        if self.method != "exact":
            raise BudgetExceeded(f"{self.hclass.spec} is too large to build its shattered "
                                 "tree (its Ldim is known by theorem, not by the recursion)")
        return shattered_tree(solver_for(self.hclass), self.hclass)

    def to_dict(self) -> DimensionsRow:
        """What ``littlestone ldim`` prints, without the seconds."""
        value = self.randomized_value
        return {"class": self.hclass.spec, "size": self.hclass.size,
                "domain_size": self.hclass.domain_size, "ldim": int(self), "method": self.method,
                "vcdim": self.vcdim, "randomized_value": value}

    def _repr_html_(self) -> str:
        return str(_templates().get_template("game.html").render(
            rows={k: _shown(v) for k, v in self.to_dict().items()}, curve=None, note=""))


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one (issue 44: "3 seed(s)").

    >>> _count(3, "seed"), _count(1, "seed")
    ('3 seeds', '1 seed')
    """
    return f"{n} {noun}{'' if n == 1 else 's'}"


#: A bound more than this many times a comparison's highest curve is written as text,
#: not drawn (consistent's 63 beside curves of 6 left them a sliver at the foot).
BOUND_OFF_AXIS = 3.0


def _whole_rounds(ax: Any) -> None:
    """Ticks on whole rounds only (a game of 20 rounds had ticks at 2.5, 7.5: issue 44)."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))

