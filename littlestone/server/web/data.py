"""The JSON API's data: games (running and recent), a game's curve and its rounds, the
tournaments and their leaderboards, a class's shattered tree.

Each function reads the data folder's index (a :class:`Store` of the calling thread)
and the logs; running games' figures come as a snapshot of the server's broadcasts
(:func:`live_snapshot`, taken on the event loop). Nothing here writes.

What a viewer can make the page do is bounded (PROTOCOL.md 1.2, SECURITY.md): a tree
by its instance checks (:data:`TREE_WORK`), the CPU seconds of the thread that builds
it and the bytes of the solver's caches (:data:`TREE_BYTES`); a log read for a curve or
rounds by its size (:data:`PAGE_LOG_BYTES`); the version space followed along a replay
by CPU seconds. Past them the function raises :class:`PageBudget` (the page's 503).
The caches of this module are bounded in bytes.

>>> import tempfile, pathlib
>>> store = Store(pathlib.Path(tempfile.mkdtemp()))
>>> game_id = store.start_game({"game": "mistake-bound", "class": "thresholds:n=7",
...     "learner": "halving", "adversary": "shattered-tree", "horizon": 5}, log="x.lslog")
>>> [(g["learner"], g["status"], g["round"]) for g in games(store, {game_id: (3, {"mistakes": 2})})]
[('halving', 'running', 3)]
>>> tree("thresholds:n=7")["ldim"]
3
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

import numpy as np
from numpy.typing import NDArray

from littlestone.charts import heat_color
from littlestone.games.classes import FiniteClass, HypothesisClass, make_class
from littlestone.games.errors import BudgetExceeded, LittlestoneError, LogError, PageBudget
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.games.ldim import TREE_DEPTH_LIMIT, shattered_tree, solver_for
from littlestone.learners.base import LEARNERS
from littlestone.protocol.wire import Totals
from littlestone.server.net.settings import Budgets
from littlestone.server.net.spectators import Broadcast
from littlestone.server.records.folder import log_file
from littlestone.server.records.logs import GameLogData, read_log
from littlestone.server.records.rows import GameRow, TournamentGame, TournamentRow
from littlestone.server.records.store import Store
from littlestone.server.tournament.completion import rank_sampled
from littlestone.server.tournament.ranking import (
    ADVERSARY,
    LEARNER,
    RULES,
    TIED_NAMED,
    Leaderboard,
    Role,
    Standing,
    Tally,
    TournamentReport,
)
from littlestone.server.tournament.report import Curve, curve_of

__all__ = ["DRAW_DEPTH", "PAGE_LOG_BYTES", "Board", "Live", "PageBudget", "PageGame", "RoundShown",
           "Rounds", "Tree", "bound_of", "curve", "game", "games", "live_snapshot", "records",
           "tournament", "tournaments", "tree"]

#: A running game as the server's broadcast has it: rounds so far and running totals.
Live = dict[str, tuple[int, Totals]]
#: Deepest shattered tree the page draws (2^depth leaves).
DRAW_DEPTH = 7
#: Exact-Ldim instance checks the page may spend on a tree, and the bytes its solver's
#: caches may hold (the CPU seconds are the server's ``page_cpu_s``).
TREE_WORK = 5_000_000
TREE_BYTES = 64 << 20
#: The CPU seconds of a page's heavy work when no server says (``serve --page-cpu``).
PAGE_CPU_S = Budgets.page_cpu_s
#: Seconds a tree beyond the page's budget is answered 503 at once, not tried again.
TREE_RETRY_S = 60.0
#: Largest log the page reads (for a curve, a replay's rounds): a larger one is left to
#: ``littlestone replay``; and the bytes of logs it keeps read at most.
PAGE_LOG_BYTES = 64 << 20
LOG_CACHE_BYTES = 128 << 20
#: Largest class whose version space the replay view follows.
VERSION_SPACE_MAX = 1 << 22
#: Most rounds one page of the replay holds.
PAGE_MAX = 500


#: The lock of this module's caches (the page's worker threads share them).
_LOGS_LOCK = threading.Lock()


#: A game as the page and ``/api/games`` show it: the columns of its index row (not the
#: log's path, nor its anchor) and the ``round`` it is at, live figures while it runs; a
#: tournament's game with the names the tournament gave its players (``learner_spec``
#: and ``adversary_spec`` the index's); one game (:func:`game`) with whether the page
#: can draw its shattered ``tree`` and whether it is ``live``; in the class mode, with
#: Ldim(H) (:func:`.play.class_mode`).
PageGame = TypedDict("PageGame", {
    "game_id": str, "started": str, "finished": str | None, "source": str | None,
    "game": str, "class": str | None, "experts": int | None, "learner": str,
    "adversary": str, "seed": int | None, "horizon": int | None, "rounds": int | None,
    "status": str, "mistakes": float | None, "expected_mistakes": float | None,
    "regret": float | None, "expected_regret": float | None, "bound": float | None,
    "bound_name": str | None, "round": int | None, "tournament": NotRequired[str],
    "learner_spec": NotRequired[str], "adversary_spec": NotRequired[str],
    "tree": NotRequired[bool], "live": NotRequired[bool], "ldim": NotRequired[int | None],
})


class RoundShown(TypedDict, total=False):
    """A round as the replay shows it (:func:`records`): a mistake-bound round with the
    running mistakes and the version space's size after it, or an experts round as its
    record has it, but the advice and the costs; ``x`` cut to 16 coordinates."""

    t: int
    x: object
    p: float | None
    y: int | None
    prediction: int
    mistake: bool
    loss: float
    mistakes: int
    expected_mistakes: float
    version_space: int | None
    weights: list[float] | None
    drawn: int
    expected_loss: float
    regret: float
    expected_regret: float


class Rounds(TypedDict):
    """A page of a logged game's rounds (:func:`records`)."""

    game_id: str
    rounds: int
    start: int
    status: str
    records: list[RoundShown]


class Board(Leaderboard):
    """A tournament's leaderboards as the page shows them, each payoff cell's colour on
    the theoretical scale beside; one page of them (:func:`tournament`): ``page`` (from
    1) of ``limit`` rows of each list, and each list's length."""

    colors: dict[str, dict[str, str]]
    page: NotRequired[int]
    limit: NotRequired[int]
    learners_total: NotRequired[int]
    adversaries_total: NotRequired[int]
    failed_total: NotRequired[int]
    schedule: NotRequired[str]


#: A class's shattered tree laid out for drawing (:func:`tree`), or why there is none.
Tree = TypedDict("Tree", {
    "class": str, "ldim": int, "nodes": list[dict[str, object]],
    "edges": list[dict[str, object]], "error": str,
}, total=False)


def live_snapshot(running: Mapping[str, Broadcast]) -> Live:
    """The running games' rounds and totals (call it on the event loop)."""
    return {game_id: (int(b.t), b.totals.copy()) for game_id, b in list(running.items())}


def entrant_name(spec: str, data: Path) -> str:
    """An entrant as a peer sees it: a competition's version relative to the
    competition's folder (``alice/v1.py:FractionVote``), any other agent file by its
    file's name, never the server's path; a built-in as its spec.

    >>> entrant_name("/srv/data/competitions/week-5/alice/v1.py:FractionVote",
    ...              Path("/srv/data"))
    'alice/v1.py:FractionVote'
    >>> entrant_name("/home/teacher/mine.py:Mine:k=2", Path("/srv/data")), entrant_name(
    ...     "halving", Path("/srv/data"))
    ('mine.py:Mine:k=2', 'halving')
    """
    path, dot, rest = spec.partition(".py:")
    if not dot or not path.startswith("/"):
        return spec
    folder = Path(path + ".py")
    competitions = Path(data).resolve() / "competitions"
    try:
        inside = folder.relative_to(competitions).parts
    except ValueError:
        return f"{folder.name}:{rest}"
    return f"{'/'.join(inside[1:])}:{rest}" if len(inside) > 2 else f"{folder.name}:{rest}"


def rating_account(spec: str, data: Path) -> str | None:
    """The folder of the account whose competition version ``spec`` is (None: not a
    version; :func:`.submissions.folder_of` an account's).

    >>> rating_account("/srv/data/competitions/week-5/alice/v1.py:Vote", Path("/srv/data"))
    'alice'
    """
    path, dot, _ = spec.partition(".py:")
    if not dot:
        return None
    try:
        inside = Path(path + ".py").relative_to(Path(data).resolve() / "competitions").parts
    except ValueError:
        return None
    return inside[1] if len(inside) > 2 else None


def rating_games(store: Store) -> dict[str, set[str]]:
    """The running games of competition versions (a rating's, in the rater's process: the
    server does not broadcast them), each with the folders of the accounts whose versions
    play in it."""
    out: dict[str, set[str]] = {}
    for row in store.games(limit=1000, status="running"):
        accounts = {a for spec in (row["learner"], row["adversary"])
                    if (a := rating_account(spec, store.data)) is not None}
        if accounts:
            out[row["game_id"]] = accounts
    return out


def _row(row: GameRow, live: Live, names: dict[str, TournamentGame],
         data: Path | None = None) -> PageGame:
    """A game's row for the page: live figures while it runs, and the names the
    tournament gave its players (a submission's file, not ``remote:learner-<hash>``),
    each file relative to its competition (:func:`entrant_name`, given ``data``)."""
    out: PageGame = {
        "game_id": row["game_id"], "started": row["started"], "finished": row["finished"],
        "source": row["source"], "game": row["game"], "class": row["class"],
        "experts": row["experts"], "learner": row["learner"], "adversary": row["adversary"],
        "seed": row["seed"], "horizon": row["horizon"], "rounds": row["rounds"],
        "status": row["status"], "mistakes": row["mistakes"],
        "expected_mistakes": row["expected_mistakes"], "regret": row["regret"],
        "expected_regret": row["expected_regret"], "bound": row["bound"],
        "bound_name": row["bound_name"], "round": row["rounds"]}
    if row["game_id"] in live:
        t, totals = live[row["game_id"]]
        out["status"], out["round"] = "running", t
        out["mistakes"] = totals.get("mistakes", totals.get("loss"))
        out["expected_mistakes"] = totals.get("expected_mistakes", totals.get("expected_loss"))
        out["regret"] = totals.get("regret")
        out["expected_regret"] = totals.get("expected_regret")
    entry = names.get(row["game_id"])
    if entry is not None:
        out["tournament"] = entry["tournament"]
        out["learner_spec"], out["adversary_spec"] = row["learner"], row["adversary"]
        out["learner"], out["adversary"] = entry["learner"], entry["adversary"]
    if data is not None:
        out["learner"] = entrant_name(out["learner"], data)
        out["adversary"] = entrant_name(out["adversary"], data)
        if "learner_spec" in out:
            out["learner_spec"] = entrant_name(out["learner_spec"], data)
        if "adversary_spec" in out:
            out["adversary_spec"] = entrant_name(out["adversary_spec"], data)
    return out


def games(store: Store, live: Live, limit: int = 50, hidden: frozenset[str] = frozenset(),
          **filters: str | None) -> list[PageGame]:
    """Running and recent games, newest first (filters as :meth:`Store.games`), but
    the ``hidden`` ones (another account's running games, for a player's token)."""
    rows = [r for r in store.games(limit=max(1, min(limit, 1000)), **filters)
            if r["game_id"] not in hidden]
    names = store.tournament_rows([r["game_id"] for r in rows])
    return [_row(r, live, names, store.data) for r in rows]


#: Classes the page keeps built, by spec (the least recently used go first), and the
#: largest it keeps: a larger one is built for the request that needs it (64 of 2^22
#: hypotheses would have been 4 GiB).
_CLASSES: OrderedDict[str, HypothesisClass] = OrderedDict()
CLASSES_KEPT, CLASS_KEPT_HYPOTHESES = 64, 1 << 16


def _class(spec: str) -> HypothesisClass:
    with _LOGS_LOCK:
        found = _CLASSES.get(spec)
        if found is not None:
            _CLASSES.move_to_end(spec)
            return found
    hclass = make_class(spec)
    if not (isinstance(hclass, FiniteClass) and hclass.size > CLASS_KEPT_HYPOTHESES):
        with _LOGS_LOCK:
            _CLASSES[spec] = hclass
            while len(_CLASSES) > CLASSES_KEPT:
                _CLASSES.popitem(last=False)
    return hclass


@functools.lru_cache(maxsize=256)
def _bound(game_kind: str, spec: str | None, experts: int | None, horizon: int,
           learner: str) -> tuple[float | None, str]:
    try:
        hclass = _class(spec) if spec else None
        rules = GameSpec(game_kind, horizon, hclass, experts)
    except (LittlestoneError, ValueError):
        return None, ""
    if not learner.startswith("remote:") and ".py:" not in learner:  # (no file loaded here)
        try:
            bound = LEARNERS.make(learner).bound(rules)
        except Exception:  # an agent file or an unknown spec: no bound from it
            bound = None
        if bound is not None:
            return float(bound.value), str(bound.name)
    if game_kind != EXPERTS and isinstance(hclass, FiniteClass):
        known = hclass.known_ldim()
        if known is not None:
            return float(known), "Ldim(H), the minimax value (UML Thm 21.7)"
    if game_kind == EXPERTS and experts:
        return math.sqrt(horizon * math.log(max(experts, 2)) / 2), \
            "sqrt((T/2) ln d), the minimax regret (asymptotically)"
    return None, ""


def bound_of(row: PageGame) -> tuple[float | None, str]:
    """The bound a game's curve is drawn against: the one its result recorded, else
    its learner's own (a built-in), else the class's minimax value where it is known."""
    bound = row.get("bound")
    if bound is not None:
        return float(bound), str(row.get("bound_name") or "")
    return _bound(str(row["game"]), row.get("class"), row.get("experts"),
                  int(row.get("horizon") or 0), str(row.get("learner_spec", row["learner"])))


def game(store: Store, live: Live, game_id: str) -> PageGame | None:
    """One game's row, its bound and whether the page can draw its shattered tree."""
    row = store.game(game_id)
    if row is None:
        return None
    out = _row(row, live, store.tournament_rows([game_id]), store.data)
    out["bound"], out["bound_name"] = bound_of(out)
    adversary = str(out.get("adversary_spec", out["adversary"]))
    out["tree"] = bool(out["game"] != EXPERTS and adversary.startswith("shattered-tree")
                       and "tree=" not in adversary and out.get("class"))
    out["live"] = game_id in live
    return out


#: Logs read, by (path, size, mtime), least recently used first, up to LOG_CACHE_BYTES.
_LOGS: OrderedDict[tuple[str, int, int], GameLogData] = OrderedDict()


def _read(path: str, size: int, mtime: int) -> GameLogData:
    """A log, read whole (once while it is unchanged, within the cache's bytes)."""
    if size > PAGE_LOG_BYTES:
        raise PageBudget(f"this game's log is {size >> 20} MiB, more than the page reads "
                         f"({PAGE_LOG_BYTES >> 20} MiB): littlestone replay shows it")
    key = (path, size, mtime)
    with _LOGS_LOCK:
        found = _LOGS.get(key)
        if found is not None:
            _LOGS.move_to_end(key)
            return found
    log = read_log(path)
    with _LOGS_LOCK:
        _LOGS[key] = log
        total = sum(k[1] for k in _LOGS)
        while len(_LOGS) > 1 and total > LOG_CACHE_BYTES:
            (_, dropped, _), _ = _LOGS.popitem(last=False)
            total -= dropped
    return log


def _log(store: Store, game_id: str) -> tuple[GameRow, GameLogData] | None:
    row = store.game(game_id)
    if row is None:
        return None
    path = log_file(store.data, row.get("log"))
    if path is None or not path.is_file():
        return None
    stat = path.stat()
    try:
        return row, _read(str(path), stat.st_size, stat.st_mtime_ns)
    except (LogError, OSError):
        return None


def curve(store: Store, game_id: str) -> Curve | None:
    """A game's cumulative curve so far (from its log) and its bound."""
    row = store.game(game_id)
    if row is None:
        return None
    found = _log(store, game_id)
    out = (curve_of(found[1]) if found is not None else None) or {
        "kind": "regret" if row["game"] == EXPERTS else "mistakes", "t": [], "value": [],
        "expected": [], "rounds": 0, "status": row["status"]}
    names = store.tournament_rows([game_id])
    out["bound"], out["bound_name"] = bound_of(_row(row, {}, names))
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def records(store: Store, game_id: str, start: int = 1, count: int = 20
            ) -> Rounds | None:
    """Rounds ``start`` .. ``start + count - 1`` of a logged game: the instance, the
    prediction and the label, and the version space's size after the round (a finite
    class) or the learner's weights (experts game)."""
    found = _log(store, game_id)
    if found is None:
        return None
    row, log = found
    start, count = max(1, start), max(1, min(count, PAGE_MAX))
    end = min(log.n_rounds, start + count - 1)
    out: Rounds = {"game_id": game_id, "rounds": log.n_rounds, "start": start,
                   "status": log.status, "records": []}
    if log.expert_rounds:
        for record in log.records():
            if record.t > end:
                break
            if record.t >= start:
                item = {k: _plain(v) for k, v in zip(record._fields, record, strict=True)
                        if k not in ("costs", "advice")}
                out["records"].append(_short(cast("RoundShown", item)))  # (its fields)
        return out
    columns = log.columns
    if not columns:
        return out
    x, p, y, drawn = columns["x"], columns["p"], columns["y"], columns["prediction"]
    # the running totals as the referee keeps them (left to right), vectorised
    mistakes = np.cumsum(drawn != y)
    loss = np.where(y == 1, 1.0 - p, p)
    expected = np.cumsum(loss)
    sizes = _version_space_sizes(row.get("class"), log)
    for i in range(start - 1, end):
        out["records"].append(_short({
            "t": i + 1, "x": _plain(x[i]), "p": float(p[i]), "y": int(y[i]),
            "prediction": int(drawn[i]), "mistake": bool(drawn[i] != y[i]),
            "loss": float(loss[i]), "mistakes": int(mistakes[i]),
            "expected_mistakes": float(expected[i]),
            "version_space": int(sizes[i]) if sizes is not None else None}))
    return out


def _short(item: RoundShown) -> RoundShown:
    """A vector instance cut to its first 16 coordinates."""
    x = item.get("x")
    if isinstance(x, list) and len(x) > 16:
        item["x"] = [*x[:16], "..."]
    return item


def _version_space_sizes(spec: str | None, log: GameLogData) -> NDArray[np.int32] | None:
    """|V| after each round (a finite class within bounds), once per log."""
    path = Path(log.path)
    return _sizes(spec, str(path), log.size, log.n_rounds) if spec else None


#: Rounds between two looks at the CPU clock while following a version space.
_SIZES_CHECK = 256


@functools.lru_cache(maxsize=16)  # (4 bytes a round: 4 MiB for a game of 10^6 rounds)
def _sizes(spec: str, path: str, size: int, n_rounds: int) -> NDArray[np.int32] | None:
    """|V| after each round, or None: not a finite class within bounds, or more CPU
    than :data:`PAGE_CPU_S` to follow (an adversary repeating an instance that splits
    nothing keeps a class of 4 million hypotheses whole for a million rounds)."""
    try:
        hclass = _class(spec)
    except LittlestoneError:
        return None
    if not isinstance(hclass, FiniteClass) or hclass.size > VERSION_SPACE_MAX:
        return None
    stat = Path(path).stat()
    log = _read(path, stat.st_size, stat.st_mtime_ns)
    alive = np.arange(hclass.size)
    xs, ys = (log.columns["x"], list(log.columns["y"])) if log.columns else ([], [])
    count = min(n_rounds, len(ys))
    sizes = np.ones(count, dtype=np.int32)
    deadline = time.thread_time() + PAGE_CPU_S
    for t in range(count):
        if alive.size == 1:  # realizable: V never empties, so one stays one
            break
        if t % _SIZES_CHECK == 0 and time.thread_time() > deadline:
            return None
        alive = alive[hclass.evaluate(int(xs[t]), alive) == bool(ys[t])]
        sizes[t] = alive.size
    return sizes


def tournaments(store: Store) -> list[TournamentRow]:
    return store.tournaments()


#: Rows of each list one page of a tournament's board holds unless the query says
#: (``?limit=``), and the most it may say.
BOARD_LIMIT, BOARD_LIMIT_MAX = 100, 500
#: Tournaments followed from the stored cells, by (data folder, tournament): the stamp
#: and generation read up to, the tally (:class:`.ranking.Tally`), its games and those
#: not ``complete``, by pair.
_BOARDS: dict[tuple[str, str], tuple[int, int, Tally, dict[tuple[str, str], tuple[int, int]]]] = {}
_BOARDS_LOCK = threading.Lock()


def _ranked(store: Store, name: str) -> tuple[TournamentReport, int, int]:
    """A tournament ranked from its stored cells (never its games): the cells changed
    since the last look tallied, their entrants' lines computed again; its games and
    those not ``complete``."""
    key = (str(store.data), name)
    with _BOARDS_LOCK:  # (one request follows; the others wait for its tally)
        seen, generation, tally, counts = _BOARDS.get(key, (-1, -1, Tally(name, TIED_NAMED),
                                                             {}))
        stamp, now, changed = store.score_changes(name, seen)
        if now != generation:
            stamp, now, changed = store.score_changes(name, -1)
            tally, counts = Tally(name, TIED_NAMED), {}
        for cell in changed:
            tally.put(cell)
            counts[(cell.learner, cell.adversary)] = (
                cell.games, cell.games - cell.statuses.get("complete", 0))
        _BOARDS[key] = (stamp, now, tally, counts)
        report = tally.report(payoff=True)
        return (report, sum(g for g, _ in counts.values()),
                sum(f for _, f in counts.values()))


#: Sampled tournaments ranked (:func:`_sampled`), by (data folder, tournament): the stamp
#: ranked at, the moment it may be ranked again, and its board.
_SAMPLED: dict[tuple[str, str], tuple[int, float, TournamentReport]] = {}
#: A sampled board is ranked again at most every this many seconds, however fast its
#: games land: a big sampled field lands games faster than its model can be fitted,
#: and a page open on it must not keep a core fitting.
SAMPLED_EVERY_S = 5.0
#: ... and its ranking takes at most this share of a core (a fit of ``c`` seconds is
#: done again ``c / SAMPLED_SHARE`` seconds after it began, at the soonest).
SAMPLED_SHARE = 0.2
_SAMPLED_LOCK = threading.Lock()


def _sampled(store: Store, name: str) -> TournamentReport | None:
    """A sampled tournament's board (:func:`.completion.rank_sampled`: the round robin's
    ranking estimated, with intervals) from its games, once a stamp of its stored scores
    and at most once every :data:`SAMPLED_EVERY_S` (or more, for a dear fit: the model's
    fit is not cheap, never once a request nor once a game); None for a round robin."""
    field = store.tournament_schedule(name)
    if field is None or field["schedule"] != "sampled":
        return None
    key = (str(store.data), name)
    with _SAMPLED_LOCK:  # (one request ranks; the others wait for its board)
        stamp = store.score_stamp(name)
        if key in _SAMPLED:
            seen, due, board = _SAMPLED[key]
            if seen == stamp or time.monotonic() < due:
                return board
        began = time.monotonic()
        entrants = (set(field["learners"]), set(field["adversaries"]))
        rows = [r for r in store.tournament_games(name)
                if r["learner"] in entrants[0] and r["adversary"] in entrants[1]]
        report = rank_sampled(name, rows, [], field["learners"], field["adversaries"],
                              field["spaces"], field["seeds"])
        cost = time.monotonic() - began
        _SAMPLED[key] = (stamp, began + max(SAMPLED_EVERY_S, cost / SAMPLED_SHARE), report)
        return report


def tournament(store: Store, name: str, page: int = 1, limit: int | None = None
               ) -> Board | None:
    """A tournament's leaderboards as they stand (filling in while it runs), its payoff
    matrix with each cell's colour on the theoretical scale, and its failed games: one
    page of each list (``page`` from 1, ``limit`` rows, at most :data:`BOARD_LIMIT_MAX`;
    None: every learner and adversary, and :data:`BOARD_LIMIT` failed games), the
    payoff rows of the page's learners. Ranked from the stored cells, not the games;
    every file entrant named as a peer may see it (:func:`entrant_name`). A sampled
    tournament is ranked as its run ranks it (:func:`_sampled`, ``schedule``
    "sampled": each line's rating and interval)."""
    if not store.has_tournament(name):
        return None
    report, games, failed_total = _ranked(store, name)
    sampled = _sampled(store, name)
    report = report if sampled is None else sampled
    page = max(1, page)
    rows = BOARD_LIMIT if limit is None else max(1, min(limit, BOARD_LIMIT_MAX))
    start = (page - 1) * rows
    learners = report.learners if limit is None else report.learners[start:start + rows]
    adversaries = (report.adversaries if limit is None
                   else report.adversaries[start:start + rows])
    failed = store.failed_games(name, start, rows)

    def named(spec: str) -> str:
        return entrant_name(spec, store.data)

    def renamed(entries: list[Standing], role: Role) -> list[Standing]:
        out: list[Standing] = []
        for entry in entries:
            shown: Standing = {**entry}
            shown[role] = named(entry[role])
            shown["tied_with"] = [named(t) for t in entry.get("tied_with", [])]
            out.append(shown)
        return out

    payoff = {named(lrn[LEARNER]): {named(a): v for a, v in
                                    report.payoff.get(lrn[LEARNER], {}).items()}
              for lrn in learners}  # (a large sampled field's board has no payoff)
    realised = {named(lrn[LEARNER]): {named(a): v for a, v in
                                      report.payoff_realised.get(lrn[LEARNER], {}).items()}
                for lrn in learners}
    for row in failed:
        row.pop("log", None)
        row["learner"], row["adversary"] = named(row["learner"]), named(row["adversary"])
    board: Board = {
        "tournament": name, "rules": RULES, "learners": renamed(learners, LEARNER),
        "adversaries": renamed(adversaries, ADVERSARY), "payoff": payoff,
        "payoff_realised": realised, "games": games, "failed": failed,
        "failed_to_load": [], "stopped": False, "skipped": [], "sandbox": "",
        "replayed": {}, "report": "",
        "colors": {learner: {a: heat_color(v) for a, v in cells.items()}
                   for learner, cells in payoff.items()},
        "page": page, "limit": rows, "learners_total": len(report.learners),
        "adversaries_total": len(report.adversaries), "failed_total": failed_total}
    if sampled is not None:
        board["schedule"] = "sampled"
    return board


#: Trees beyond the page's budget: spec -> (when, why), answered 503 at once for
#: :data:`TREE_RETRY_S`.
_TREES_REFUSED: dict[str, tuple[float, str]] = {}


def tree(spec: str, cpu_s: float = PAGE_CPU_S) -> Tree:
    """A shattered tree of depth Ldim(H) of a finite class (the one the shattered-tree
    adversary walks down: it splits the version space as the tree does), laid out for
    drawing: leaves left to right by their path, each parent above the middle of its
    children. ``error`` says why there is none; :class:`PageBudget` when it would
    cost more than the page's budget: :data:`TREE_WORK` instance checks, ``cpu_s``
    seconds of the calling thread's CPU, :data:`TREE_BYTES` of the solver's caches."""
    refused = _TREES_REFUSED.get(spec)
    if refused is not None and time.monotonic() - refused[0] < TREE_RETRY_S:
        raise PageBudget(refused[1])
    try:
        return _tree(spec, cpu_s)
    except BudgetExceeded as exc:
        why = f"the tree of {spec} is beyond the page's budget: {exc}"
        if len(_TREES_REFUSED) > 1024:
            _TREES_REFUSED.clear()
        _TREES_REFUSED[spec] = (time.monotonic(), why)
        raise PageBudget(why) from None


@functools.lru_cache(maxsize=16)
def _tree(spec: str, cpu_s: float) -> Tree:
    try:
        hclass = _class(spec)
    except LittlestoneError as exc:
        return {"error": str(exc)}
    if not isinstance(hclass, FiniteClass):
        return {"error": f"{spec} is not a finite class: no shattered tree"}
    try:
        solver = solver_for(hclass)
    except BudgetExceeded as exc:
        return {"error": str(exc)}
    with solver.limits(cpu_s=cpu_s, max_bytes=TREE_BYTES):
        depth = solver.ldim(budget=TREE_WORK)
        if depth > min(DRAW_DEPTH, TREE_DEPTH_LIMIT):
            return {"error": f"Ldim = {depth}: a tree of {2 ** depth} leaves is too large to "
                    f"draw (at most depth {DRAW_DEPTH})", "ldim": depth}
        graph = shattered_tree(solver, hclass, TREE_WORK)
    leaves = sorted(n for n in graph.nodes if graph.out_degree(n) == 0)  # left to right
    x: dict[str, float] = {leaf: i for i, leaf in enumerate(leaves)}
    for node in sorted(graph.nodes, key=len, reverse=True):
        children = list(graph.successors(node))
        if children:
            x[node] = sum(x[c] for c in children) / len(children)
    width = max(len(leaves) - 1, 1)
    nodes = [{"id": n, "depth": len(n) - 1, "x": x[n] / width,
              **{k: _plain(v) for k, v in data.items() if k in ("instance", "hypothesis",
                                                                 "name")}}
             for n, data in graph.nodes(data=True)]
    edges = [{"source": a, "target": b, "label": int(d["label"])}
             for a, b, d in graph.edges(data=True)]
    return {"class": spec, "ldim": depth, "nodes": nodes, "edges": edges}
