"""Playing on the page (docs/manual/live-page.md, "Play it yourself"): what the play
page offers a person, what it draws of a class, and the class mode a teacher shows.

A person plays through the page's script, which speaks PROTOCOL.md to the agents'
endpoint like any client (``static/play.js``): this module only says which games the
page's form offers (:data:`MENU`), hands the script a class's truth table, Ldim and
shattered tree for the version space and the tree it draws (:func:`class_info`, menu
classes only: a viewer builds nothing else), and gathers the games of the last hour
for the class mode (:func:`class_mode`). Nothing here plays, times or checks a move:
the server does, as for any peer.

>>> info = class_info("thresholds:n=7")
>>> info["kind"], info["size"], info["domain_size"], info["ldim"], info["table"][0]
('thresholds', 8, 7, 3, '0000000')
>>> class_info("thresholds:n=9999") is None  # (not on the menu)
True
>>> [b["count"] for b in histogram([{"mistakes": 3, "ldim": 3}, {"mistakes": 1, "ldim": 4}])][:5]
[0, 1, 0, 0, 1]
"""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime, timedelta
from typing import NotRequired, TypedDict

import numpy as np

from littlestone.games.classes import FiniteClass, HalfspaceClass, make_class
from littlestone.games.errors import LittlestoneError
from littlestone.games.families import Singletons, Thresholds
from littlestone.games.game import EXPERTS, MISTAKE_BOUND
from littlestone.games.ldim import class_ldim, solver_for
from littlestone.server.records.store import Store
from littlestone.server.web import data

__all__ = ["CLASS_WINDOW", "MENU", "ROUNDS_MAX", "class_info", "class_mode", "histogram",
           "ldim_of"]

#: The classes the play page offers: finite ones small enough to draw their version
#: space (a table of |H| x |X| cells at most), and the plane's halfspaces.
CLASSES = ("thresholds:n=7", "thresholds:n=15", "singletons:n=8", "intervals:n=5",
           "monotone-disjunctions:n=3", "conjunctions:n=2", "halfspaces:d=2,margin=0.2")
#: Rounds a game of the page may last at most (the form's; the server's budgets hold too).
ROUNDS_MAX = 100
#: The page's form: for each side a person plays and each game, the opponents served to
#: it (server-side agents, PROTOCOL.md 4), the classes or numbers of experts, the rounds.
class Menu(TypedDict):
    """The play page's form (:data:`MENU`)."""

    classes: list[str]
    experts: list[int]
    rounds: dict[str, int]
    opponents: dict[str, dict[str, list[str]]]


class ClassInfo(TypedDict):
    """What the play page draws of a menu class (:func:`class_info`)."""

    spec: str
    kind: str
    d: NotRequired[int]
    margin: NotRequired[float]
    size: NotRequired[int]
    domain_size: NotRequired[int]
    ldim: NotRequired[int]
    log2_size: NotRequired[float]
    hypotheses: NotRequired[list[str]]
    instances: NotRequired[list[str]]
    table: NotRequired[list[str]]
    tree: NotRequired[data.Tree]


class Scored(TypedDict):
    """A finished mistake-bound game as the class mode's histograms count it."""

    mistakes: float
    ldim: int


class Bar(TypedDict):
    """A bin of a histogram: mistakes / Ldim(H) in ``[low, high)`` (``high`` None: the
    last, open bin) and the games in it."""

    low: float
    high: float | None
    count: int


class Histogram(TypedDict):
    """One of the class mode's histograms (:data:`GROUPS`)."""

    name: str
    title: str
    bars: list[Bar]
    scored: int
    top: int


class ClassBoard(TypedDict):
    """The class mode (:func:`class_mode`): its games (the newest, and how many ``more``),
    its histograms and its window."""

    games: list[data.PageGame]
    more: int
    histograms: list[Histogram]
    window_minutes: int


MENU: Menu = {
    "classes": list(CLASSES),
    "experts": [2, 3, 4],
    "rounds": {"default": 10, "max": ROUNDS_MAX},
    "opponents": {
        "learner": {MISTAKE_BOUND: ["shattered-tree", "randomized-value", "random-target"],
                    EXPERTS: ["random-costs", "cover-flip"]},
        "adversary": {MISTAKE_BOUND: ["soa", "halving", "consistent", "randomized-soa",
                                      "perceptron"],
                      EXPERTS: ["hedge", "follow-the-leader", "ogd"]},
    },
}
#: How far back the class mode looks.
CLASS_WINDOW = timedelta(hours=1)
#: The class mode's histogram: mistakes / Ldim(H) in bins this wide, the last open.
BIN_WIDTH, BINS = 0.25, 9
#: Games the class mode reads from the index at most (its histograms count them all),
#: and the newest of them its table lists (1000 rows made a 400 KB page, redrawn every
#: 1.5 s; 100 make about 45 KB).
CLASS_GAMES, CLASS_ROWS = 1000, 100
#: What the class mode spends at most to know Ldim(H) of a class without a closed form:
#: a truth table of |H| x |X| cells, and instance checks of exact Ldim (about 0.1-0.2
#: microseconds each: some 20 ms a class, once). The menu's classes are far within both.
CLASS_LDIM_TABLE, CLASS_LDIM_WORK = 1 << 20, 200_000


def _instance_name(hclass: FiniteClass, x: int) -> str:
    n = getattr(hclass, "n", None)
    if isinstance(n, int) and hclass.domain_size == 1 << n:  # a boolean class: its bits
        return "".join("1" if x >> i & 1 else "0" for i in range(n))
    return str(x)


@functools.lru_cache(maxsize=len(CLASSES))
def class_info(spec: str) -> ClassInfo | None:
    """What the play page draws of a menu class: its truth table (a string of 0/1 per
    hypothesis, one character per instance), the names of its hypotheses and
    instances, Ldim(H) and its shattered tree; for halfspaces the dimension and margin.
    None: not a class of the menu."""
    if spec not in CLASSES:
        return None
    hclass = make_class(spec)
    if isinstance(hclass, HalfspaceClass):
        return {"spec": spec, "kind": "halfspaces", "d": hclass.d, "margin": hclass.margin}
    assert isinstance(hclass, FiniteClass)
    table = hclass.matrix()
    kind = ("thresholds" if isinstance(hclass, Thresholds)
            else "singletons" if isinstance(hclass, Singletons) else "table")
    ldim, _ = class_ldim(hclass)
    return {"spec": spec, "kind": kind, "size": hclass.size, "domain_size": hclass.domain_size,
            "ldim": ldim, "log2_size": math.log2(hclass.size),
            "hypotheses": [hclass.hypothesis(h) for h in range(hclass.size)],
            "instances": [_instance_name(hclass, x) for x in range(hclass.domain_size)],
            "table": ["".join("1" if v else "0" for v in row) for row in table.astype(np.bool_)],
            "tree": data.tree(spec)}


@functools.lru_cache(maxsize=2 * CLASS_GAMES)
def ldim_of(spec: str) -> int | None:
    """Ldim(H) of a finite class played here, when it is cheap to know: its closed form,
    or exact on a truth table of at most :data:`CLASS_LDIM_TABLE` cells within
    :data:`CLASS_LDIM_WORK` instance checks; None otherwise. (Any peer can play games
    on many classes that are costly to solve, and anyone who may look at the class mode
    makes it count its hour's games again: the page's tree budget for each of them made
    one view take minutes of CPU and gigabytes.) The cache holds more classes than the
    class mode reads games, so each is worked out once."""
    try:
        hclass = make_class(spec)
    except LittlestoneError:
        return None
    if not isinstance(hclass, FiniteClass):
        return None
    known = hclass.known_ldim()
    if known is not None:
        return known
    if hclass.size * hclass.domain_size > CLASS_LDIM_TABLE:
        return None
    try:  # (within the page's CPU and the solver's caches too)
        with solver_for(hclass).limits(cpu_s=data.PAGE_CPU_S, max_bytes=data.TREE_BYTES):
            return class_ldim(hclass, CLASS_LDIM_WORK)[0]
    except LittlestoneError:
        return None


def histogram(games: list[Scored]) -> list[Bar]:
    """How many games ended with mistakes / Ldim(H) in each bin: ``[0, 0.25)``, ...,
    the last bin ``>= 2`` (1 is Ldim: what the shattered tree forces, and what SOA
    never exceeds). Each game has ``mistakes`` and ``ldim`` > 0."""
    counts = [0] * BINS
    for game in games:
        ratio = game["mistakes"] / game["ldim"]
        counts[min(int(ratio / BIN_WIDTH + 1e-9), BINS - 1)] += 1
    return [{"low": i * BIN_WIDTH, "high": None if i == BINS - 1 else (i + 1) * BIN_WIDTH,
             "count": c} for i, c in enumerate(counts)]


#: The class mode's histograms: who played the game's remote side (a person on the
#: page is a remote player, ``remote:NAME``; so is any client), and what it shows.
GROUPS = (("learner", "remote learners (a person on the page is one): the mistakes they made"),
          ("adversary", "remote adversaries: the mistakes they forced"),
          ("agents", "the server's agents on both sides, or remote on both"))


def _group(game: data.PageGame) -> str:
    learner = str(game["learner"]).startswith("remote:")
    adversary = str(game["adversary"]).startswith("remote:")
    return "learner" if learner and not adversary else (
        "adversary" if adversary and not learner else "agents")


def class_mode(store: Store, live: data.Live, hidden: frozenset[str],
               now: datetime | None = None) -> ClassBoard:
    """Everyone's games of the last :data:`CLASS_WINDOW` (but the ``hidden`` ones), and
    histograms of the finished mistake-bound games' mistakes against Ldim(H): of remote
    learners, of remote adversaries, and of the rest (:data:`GROUPS`)."""
    since = ((now or datetime.now(UTC)) - CLASS_WINDOW).strftime("%Y%m%dT%H%M%S%fZ")
    games = [g for g in data.games(store, live, CLASS_GAMES, hidden) if g["game_id"] >= since]
    scored: dict[str, list[Scored]] = {name: [] for name, _ in GROUPS}
    for game in games:
        if game["game"] == MISTAKE_BOUND and game.get("class"):
            game["ldim"] = ldim = ldim_of(str(game["class"]))
            mistakes = game.get("mistakes")
            if ldim and game["status"] == "complete" and mistakes is not None:
                scored[_group(game)].append({"mistakes": float(mistakes), "ldim": ldim})
    histograms: list[Histogram] = []
    for name, title in GROUPS:
        bars = histogram(scored[name])
        histograms.append({"name": name, "title": title, "bars": bars, "scored": len(scored[name]),
                           "top": max([1, *(b["count"] for b in bars)])})
    return {"games": games[:CLASS_ROWS], "more": max(0, len(games) - CLASS_ROWS),
            "histograms": histograms, "window_minutes": int(CLASS_WINDOW.total_seconds() // 60)}
