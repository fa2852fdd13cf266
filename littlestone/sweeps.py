"""Sweeps: a grid of games (learners x adversaries x classes x experts x horizons x
seeds) played in parallel worker processes, or on Ray, into one pandas DataFrame: the
way a researcher sets a theorem's curve beside the games (Hedge's regret against
sqrt(T ln d) over T, say).

Every cell is one game through the local runner, without its rounds kept (the fast
path of oblivious adversaries). A pair that cannot play a cell's game is a row with the
status ``declined:learner`` (or ``adversary``) and the reason, as a tournament lists
it. Agents given as specs, built-ins and classes of importable modules play in the
workers; an agent class defined in a notebook or a script (``__main__``) plays in this
process, since a worker process cannot import it (on Ray, cloudpickle carries it).

>>> from littlestone.sweeps import sweep
>>> frame = sweep(["halving", "soa"], ["shattered-tree"], ["thresholds:n=15",
...               "thresholds:n=63"], rounds=[20], workers=1, progress=False)
>>> frame[["learner", "class", "mistakes", "bound"]]
   learner            class  mistakes  bound
0  halving  thresholds:n=15         4    4.0
1  halving  thresholds:n=63         6    6.0
2      soa  thresholds:n=15         4    4.0
3      soa  thresholds:n=63         6    6.0
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import itertools
import os
import pickle
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict, cast

from littlestone.api import DEFAULT_ROUNDS, as_adversary, as_class, as_learner, as_rules, as_seeds
from littlestone.games.classes import HypothesisClass, make_class
from littlestone.games.errors import ArgumentError
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.results import pandas

__all__ = ["COLUMNS", "Cell", "SweepRow", "play_cell", "sweep"]

#: The columns of a sweep's DataFrame, in order (a column no row has is left out):
#: the cell, then the result as ``littlestone play --json`` names it.
COLUMNS = ("learner", "adversary", "class", "experts", "horizon", "seed", "game", "status",
           "rounds", "mistakes", "expected_mistakes", "regret", "expected_regret",
           "learner_loss", "expected_learner_loss", "best_expert_loss", "bound",
           "bound_name", "size", "message")

#: A cell's row of a sweep (:data:`COLUMNS`): the cell's keys, then the game's scores
#: (those of ``littlestone play --json`` among the columns), or why it was declined.
SweepRow = TypedDict("SweepRow", {
    "learner": str, "adversary": str, "class": str | None, "experts": int | None,
    "horizon": int, "seed": int, "game": str, "status": NotRequired[str],
    "rounds": NotRequired[int], "mistakes": NotRequired[float],
    "expected_mistakes": NotRequired[float], "regret": NotRequired[float],
    "expected_regret": NotRequired[float], "learner_loss": NotRequired[float],
    "expected_learner_loss": NotRequired[float], "best_expert_loss": NotRequired[float],
    "bound": NotRequired[float | None], "bound_name": NotRequired[str | None],
    "size": NotRequired[int], "message": NotRequired[str],
})


@dataclass(frozen=True)
class Cell:
    """One game of the grid: its players (specs, or objects played as fresh copies),
    its rules and its seed; ``index`` is its place in the grid."""

    index: int
    learner: Any
    adversary: Any
    hclass: Any
    experts: int | None
    rounds: int
    seed: int
    game: str
    horizon_known: bool = True


@functools.lru_cache(maxsize=64)
def _class_of(spec: str) -> HypothesisClass:
    return make_class(spec)


def play_cell(cell: Cell) -> SweepRow:
    """Play one cell of the grid; its row (the cell's keys and the game's scores)."""
    from littlestone.api import _fresh, _played

    learner = as_learner(cell.learner, "sweep", "learners")
    adversary = as_adversary(cell.adversary, "sweep", "adversaries")
    if not isinstance(cell.learner, str):
        learner = _fresh(learner)
    if not isinstance(cell.adversary, str):
        adversary = _fresh(adversary)
    hclass = _class_of(cell.hclass) if isinstance(cell.hclass, str) else cell.hclass
    rules = GameSpec(cell.game, cell.rounds, hclass, cell.experts, cell.horizon_known)
    row: SweepRow = {
        "learner": cell.learner if isinstance(cell.learner, str) else learner.spec,
        "adversary": cell.adversary if isinstance(cell.adversary, str) else adversary.spec,
        "class": None if hclass is None else hclass.spec,
        "experts": rules.experts if cell.game == EXPERTS else None,
        "horizon": cell.rounds, "seed": cell.seed, "game": cell.game,
    }
    for role, agent in (("learner", learner), ("adversary", adversary)):
        reason = agent.unsupported(rules)
        if reason:
            return {**row, "status": f"declined:{role}", "message": reason}
    try:
        game = _played(rules, learner, adversary, cell.seed, keep_rounds=False,
                       function="sweep")
    except ArgumentError as exc:  # refused when it started (a budget, say)
        return {**row, "status": f"declined:{exc.argument}", "message": str(exc)}
    scores = game.to_dict()
    row.update(cast("SweepRow", {k: v for k, v in scores.items()  # (its scores' keys)
                                 if k not in row and k in COLUMNS}))
    if game.bound is not None:  # (a float in every row: to_dict writes whole ones as int)
        row["bound"] = float(game.bound.value)
    return row


def _portable(agent: Any) -> bool:
    """Whether a worker process can have this agent: a spec, or an object whose class
    it can import (not one defined in ``__main__``, a notebook's or a script's)."""
    if isinstance(agent, str):
        return True
    cls = agent if isinstance(agent, type) else type(agent)
    if cls.__module__ == "__main__":
        return False
    try:
        pickle.dumps(agent)
    except Exception:  # anything pickle refuses: a lambda, a lock, an open file
        return False
    return True


def _listed(function: str, argument: str, value: Any) -> list[Any]:
    """A grid's axis: a list, or one value alone."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        return [value]
    values = list(value)
    if not values:
        raise ArgumentError(function, argument, "at least one value")
    return values


def sweep(learners: Any, adversaries: Any, classes: Any = None, rounds: Any = DEFAULT_ROUNDS,
          seeds: Any = 1, *, game: str = MISTAKE_BOUND, experts: Any = None,
          horizon_known: bool = True, workers: int | None = None, ray: str | None = None,
          progress: bool = True) -> Any:
    """Play every cell of the grid learners x adversaries x classes x experts x rounds x
    seeds and return one pandas DataFrame, a row per game in the grid's order (the
    columns of :data:`COLUMNS`: the cell, then its result).

    Each axis is a list or one value: ``learners`` and ``adversaries`` specs or objects
    (as :func:`littlestone.play` takes them), ``classes`` class specs or objects
    (``None`` for free experts), ``experts`` numbers of experts d (experts game),
    ``rounds`` horizons T; ``seeds`` a list or a count n (seeds 0 .. n-1). ``workers``
    processes play the cells (default: the cores; 1: in this process), or ``ray``
    (``"local"``, or a cluster's ``HOST:PORT``); ``progress`` shows a tqdm bar. The
    worker processes come from multiprocessing's fork server, which runs a script's
    main module again: a script calls ``sweep`` under ``if __name__ == "__main__":``.

    >>> import math
    >>> import littlestone as ls
    >>> regret = ls.sweep("hedge", "random-costs", rounds=[100, 400], experts=[2, 8],
    ...                   seeds=2, game="experts", workers=1, progress=False)
    >>> regret["sqrt(T ln d)"] = (regret["horizon"] * regret["experts"].map(math.log)) ** 0.5
    >>> bool((regret["expected_regret"] <= regret["bound"]).all()), len(regret)
    (True, 8)
    """
    pd = pandas()
    learner_axis = _listed("sweep", "learners", learners)
    adversary_axis = _listed("sweep", "adversaries", adversaries)
    class_axis = [c if c is None or isinstance(c, str) else as_class(c, "sweep", "classes")
                  for c in _listed("sweep", "classes", classes)]
    expert_axis = _listed("sweep", "experts", experts)
    round_axis = _listed("sweep", "rounds", rounds)
    seed_list = as_seeds(seeds, "sweep")
    for value in learner_axis:  # checked here, once: a bad spec is one error, not a grid
        as_learner(value, "sweep", "learners")
    for value in adversary_axis:
        as_adversary(value, "sweep", "adversaries")
    for value in class_axis:
        as_class(value, "sweep", "classes")  # (a spec's errors, here)
    for hclass, d, horizon in itertools.product(class_axis, expert_axis, round_axis):
        as_rules("sweep", game, hclass, horizon, d, horizon_known)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ArgumentError("sweep", "workers", f"an integer >= 1, not {workers!r}")
    cells = [Cell(i, lrn, adv, hc, d, horizon, seed, game, horizon_known)
             for i, (lrn, adv, hc, d, horizon, seed) in enumerate(itertools.product(
                 learner_axis, adversary_axis, class_axis, expert_axis, round_axis,
                 seed_list))]
    rows: dict[int, SweepRow] = {}
    with _bar(len(cells), progress) as advance:
        def record(cell: Cell, row: SweepRow) -> None:
            rows[cell.index] = row
            advance(row.get("status") != "complete")

        if ray is not None:
            _on_ray(cells, ray, workers or os.cpu_count() or 1, record)
        else:
            _in_processes(cells, workers or os.cpu_count() or 1, record)
    frame = pd.DataFrame([rows[i] for i in range(len(cells))])
    return frame[[c for c in COLUMNS if c in frame.columns]]


class _bar:
    """A tqdm bar of games played, with the failures counted (none when not wanted)."""

    def __init__(self, total: int, wanted: bool) -> None:
        self.total, self.wanted, self.failed, self.bar = total, wanted, 0, None

    def __enter__(self) -> Callable[[bool], None]:
        if self.wanted:
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, unit="game", desc="sweep", dynamic_ncols=True)
        return self.advance

    def advance(self, failed: bool) -> None:
        self.failed += failed
        if self.bar is not None:
            if failed:
                self.bar.set_postfix(failed=self.failed)
            self.bar.update(1)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


@contextlib.contextmanager
def _main_not_imported() -> Iterator[None]:
    """Worker processes started meanwhile do not import the caller's ``__main__``: the
    cells sent away are built from registered agents and spec strings, which need none of
    it. multiprocessing imports the main script again in each worker otherwise: a script
    without ``if __name__ == "__main__":`` ran its sweep again there (BrokenProcessPool
    and the standard library's freeze_support text), and ``python -`` failed on
    ``'<stdin>'`` (issue 44)."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved: dict[str, Any] = {key: main.__dict__[key] for key in ("__file__", "__spec__")
                             if key in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def _in_processes(cells: list[Cell], workers: int,
                  record: Callable[[Cell, SweepRow], None]) -> None:
    away = [c for c in cells if workers > 1 and _portable(c.learner)
            and _portable(c.adversary) and _portable(c.hclass)]
    here = [c for c in cells if c not in away]
    if away:
        from littlestone.server.net.hosts import fork_server  # (not for a sweep of one)

        # from the hosts' fork server, never forked from a caller that runs threads (a
        # notebook's): a child forked while a thread held a lock would wait forever
        with _main_not_imported():  # (the fork server, started once, imports it too)
            context = fork_server()
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers,
                                                    mp_context=context) as pool:
            with _main_not_imported():  # (its workers start as each cell is submitted)
                futures = {pool.submit(play_cell, cell): cell for cell in away}
            for cell in here:  # meanwhile, what only this process can play
                record(cell, play_cell(cell))
            for future in concurrent.futures.as_completed(futures):
                record(futures[future], future.result())
    else:
        for cell in here:
            record(cell, play_cell(cell))


def _on_ray(cells: list[Cell], address: str, workers: int,
            record: Callable[[Cell, SweepRow], None]) -> None:
    from littlestone.games.errors import SpecError
    from littlestone.server.tournament.run import check_ray_address

    try:
        import ray
    except ImportError:
        raise ArgumentError("sweep", "ray", "Ray is not installed: pip install "
                            "'littlestone[ray]'") from None
    if not isinstance(address, str):
        raise ArgumentError("sweep", "ray", f"'local' or HOST:PORT, not {address!r}")
    try:
        check_ray_address(address)
    except SpecError as exc:
        raise ArgumentError("sweep", "ray", str(exc).removeprefix(f"--ray {address}: ")
                            ) from None
    started_here = not ray.is_initialized()
    if started_here:
        if address == "local":
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        _play_on_ray(ray, cells, record)
    finally:
        if started_here:
            ray.shutdown()


def _play_on_ray(ray: Any, cells: list[Cell],
                 record: Callable[[Cell, SweepRow], None]) -> None:
    """The cells as Ray tasks. (A function of its own: its references to Ray's objects
    are gone when it returns, before any ``ray.shutdown()``.)"""
    remote = ray.remote(play_cell)
    refs = {remote.remote(cell): cell for cell in cells}
    waiting = list(refs)
    while waiting:
        done, waiting = ray.wait(waiting, num_returns=1)
        for ref in done:
            record(refs[ref], ray.get(ref))
