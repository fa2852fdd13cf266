"""Red team of the agents a server serves: a peer asks for a built-in learner or adversary
on a class chosen to make it work far beyond the server's budgets. Each agent spends a
round on what it needs (costs counted: cells of a truth table, rows evaluated, Ldim
work asked for), or the server refuses the game before it starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.server.net.settings import Budgets
from tests.server.web.test_web import running_server
from tests.server.web.test_web_play import RULES, ask, hello

# -- the agents a server serves -----------------------------------------------------------


class _CountedTable:
    """A truth table that counts the cells each use of it touches (numpy defers ``p @
    table`` to it: ``__array_ufunc__ = None``)."""

    __array_ufunc__ = None

    def __init__(self, table: np.ndarray) -> None:
        self.table, self.cells = table, 0

    def _touched(self, out: Any) -> Any:
        self.cells += int(np.size(out))
        return out

    def __getitem__(self, key: Any) -> Any:
        return self._touched(self.table[key])

    def __rmatmul__(self, left: np.ndarray) -> Any:
        self.cells += int(np.size(self.table[: len(left)]))
        return left @ self.table

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        self.cells += self.table.size
        return self.table.sum(*args, **kwargs)


def _balanced_reference(table: np.ndarray, p: np.ndarray, alive: np.ndarray) -> int | None:
    """prior-target's instance as it was first written (the whole table every round):
    the instance whose split of V's prior mass is most even; None when none splits V."""
    live = np.where(alive, p, 0.0)
    ones, mass = live @ table, float(live.sum())
    splits = (ones > 0) & (ones < mass)
    if not splits.any():
        return None
    return int(np.argmin(np.where(splits, np.abs(ones / mass - 0.5), np.inf)))


@pytest.mark.parametrize("prior", ["zipf,s=1.0", "geometric,s=0.3", "uniform"])
def test_prior_target_spends_a_round_on_what_leaves_the_version_space(prior):
    """Break (fixed): prior-target (served) multiplied the whole truth table by V's prior
    every round: 10.5 ms a round on a table of 4 Mi cells (its limit), on the server's event
    loop (its moves are not ``slow_moves``), for each of up to 10^6 rounds; random-target
    takes 19 us. It now keeps V's vote and subtracts the rows that leave V: over a game
    each cell is touched a few times, whatever the rounds. Its instances are the same."""
    hclass = make_class("thresholds:n=511")
    assert isinstance(hclass, FiniteClass)
    rounds = 3000
    adversary = ADVERSARIES.make(f"prior-target:prior={prior}")
    adversary.start(GameSpec(MISTAKE_BOUND, rounds, hclass), seed=5)
    table = hclass.matrix()
    counted = _CountedTable(adversary._table)
    adversary._table = counted  # (counted from here on)
    p, alive = adversary._p.copy(), np.ones(hclass.size, dtype=np.bool_)
    settled = False
    for _ in range(rounds):
        expected = None if settled else _balanced_reference(table, p, alive)
        x = adversary.instance()
        if expected is not None:
            assert x == expected
        settled = settled or expected is None
        y = adversary.label(x, 0.5)
        alive &= table[:, x] == bool(y)
    assert settled
    whole = table.size
    assert counted.cells <= 4 * whole + rounds * hclass.size, counted.cells / whole


def test_weighted_halving_evaluates_the_version_space_not_the_class():
    """Break (fixed): weighted and randomised Halving (served) evaluated all of H and
    weighed it every round: 4 ms a round on intervals:n=200 against Halving's 0.01-0.08 ms
    (400x), on the event loop, for every round. They now evaluate V only, as Halving."""
    hclass = make_class("intervals:n=200")
    assert isinstance(hclass, FiniteClass)
    rounds, target = 500, 12345
    truth = hclass.matrix()[target]
    for learner_id in ("weighted-halving", "randomized-halving"):
        learner = LEARNERS.make(learner_id)
        learner.start(GameSpec(MISTAKE_BOUND, rounds, hclass), seed=0)
        evaluated: list[tuple[int, int]] = []
        real = hclass.evaluate

        def counting(x: int, hypotheses: Any = None, learner: Any = learner,
                     real: Any = real, evaluated: list[tuple[int, int]] = evaluated) -> Any:
            values = real(x, hypotheses)
            evaluated.append((len(values), int(learner.alive.sum())))
            return values

        hclass.evaluate = counting  # (counted)
        try:
            for x in np.random.default_rng(3).integers(hclass.domain_size, size=rounds):
                learner.predict(int(x))
                learner.update(int(x), int(truth[x]))
        finally:
            del hclass.evaluate
        assert target in np.flatnonzero(learner.alive)
        assert all(n == size for n, size in evaluated), evaluated[:5]  # V's, never H's
        assert sum(n for n, _ in evaluated) < rounds * hclass.size / 20  # (was 500 x |H|)


async def test_conservative_cannot_carry_an_agent_past_the_servers_budgets(tmp_path):
    """Break (fixed): the ldim budget and the truth-table check applied to the outer
    agent's own 'budget' parameter; conservative:of=SPEC built SPEC with its own
    defaults (soa: 5 * 10^7 checks) or the peer's (of=soa:budget=10^12): intervals:n=400,
    refused to soa, cost 12 s of CPU as conservative:of=soa. Now the wrapped agent is
    held to the budgets as if the peer had named it."""
    budgets = Budgets(max_truth_table=100, ldim_work=1000)
    rules = {**RULES, "class": "thresholds:n=15"}  # 16 x 15 = 240 cells > 100
    async with running_server(tmp_path, budgets=budgets) as server, hello(
            server, server.token, role="adversary") as (ws, _):
        refused = await ask(ws, {"type": "challenge", "rules": rules, "opponent": "soa",
                                 "seed": 1})
        assert refused["code"] == "over_budget"
        for nested in ("conservative:of=soa", "conservative:of=soa:budget=999999999999"):
            reply = await ask(ws, {"type": "challenge", "rules": rules, "opponent": nested,
                                   "seed": 1})
            assert reply["type"] == "error" and reply["code"] == "over_budget", reply


async def test_an_exact_ldim_agent_on_a_class_of_2_to_the_65536_instances_is_over_budget(
        tmp_path):
    """Break (fixed; found by benchmarks/worst_message.py): ``soa`` on
    ``k-disjunctions:n=65536,k=1`` (65,537 hypotheses, 2^65536 instances) was refused
    with a message holding |H| x |X| in digits, past what Python converts to a string:
    ValueError, the session closed ``internal``. Now the count is a power of two."""
    rules = {**RULES, "class": "k-disjunctions:n=65536,k=1"}
    async with running_server(tmp_path) as server, hello(
            server, server.token, role="adversary") as (ws, _):
        for opponent in ("soa", "conservative:of=soa"):
            reply = await ask(ws, {"type": "challenge", "rules": rules, "opponent": opponent,
                                   "seed": 1})
            assert reply["type"] == "error" and reply["code"] == "over_budget", reply
            assert "more than 2^65552 cells" in reply["message"], reply


async def test_a_long_soa_experts_game_is_held_to_the_games_cpu_budget(tmp_path):
    """Break (fixed): soa-experts and agnostic keep one weight per (version space, flips)
    state, and every round asks exact Ldim of each: 4.5-7.8 ms a round on
    intervals:n=60 against SOA's 0.02-0.5 ms (250x), over 60 ms on intervals:n=200; served
    for 10^6 rounds, each move within --move-cpu but the game with no CPU budget (hours
    of the machine's CPU for one challenge). Now the moves of a hosted agent share the
    game's ``--game-cpu`` seconds: once spent, each move is its over_budget fault,
    unasked, and the third forfeits long before the 10^6 rounds."""
    from littlestone.client import play_remote
    from littlestone.server.records.logs import read_log

    game = GameSpec(MISTAKE_BOUND, 1_000_000, make_class("intervals:n=200"))
    async with running_server(tmp_path, budgets=Budgets(game_cpu_s=0.01)) as server:
        result = await play_remote(server.url, ADVERSARIES.make("random-target"),
                                   "soa-experts", game, 1, server.token)
        footer = read_log(server.store.game(result["game_id"])["log"]).footer
    assert result["status"] == "forfeit:learner:over_budget", result["status"]
    assert result["rounds"] < 1000, result["rounds"]
    assert footer is not None
    faults = footer["result"]["faults"][-3:]
    assert all(f["code"] == "over_budget" for f in faults), faults
    assert "CPU for this game's moves" in faults[-1]["message"], faults
