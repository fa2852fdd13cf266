"""The paths on Python floats for a few experts (games/experts.py: SMALL_D, IN_ORDER_SUM)
give the numpy paths' floats, draws, errors and records, bit for bit."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games import experts as referee_module
from littlestone.games.errors import IllegalMove
from littlestone.games.experts import (
    IN_ORDER_SUM,
    SMALL_D,
    WEIGHT_TOLERANCE,
    check_vector,
    check_weights,
    draw_index,
    vector_sum,
)
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.learners import LEARNERS
from littlestone.learners import experts as learners_module
from littlestone.local import play

# the edge vectors (inf, nan) make numpy's reductions warn
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

NAN, INF = float("nan"), float("inf")
EDGES = [0.0, -0.0, 1.0, 0.5, 1.0000001, 1 - 2**-53, -1e-300, 5e-324, 1e308, NAN, INF, -INF]
LENGTHS = range(1, SMALL_D + 3)


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def vectors(seed: int, lengths: Any = LENGTHS, per_length: int = 300) -> list[np.ndarray]:
    """Random vectors of each length: uniform, of mixed magnitudes, or of edge values."""
    rng = np.random.default_rng(seed)
    out = []
    for n in lengths:
        for k in range(per_length):
            if k % 3 == 0:
                out.append(rng.random(n))
            elif k % 3 == 1:
                out.append(rng.random(n) * 10.0 ** rng.integers(-20, 20, n))
            else:
                out.append(rng.choice(np.array(EDGES), n))
    return out


def test_the_thresholds_are_where_numpy_stops_adding_in_order():
    assert IN_ORDER_SUM == 7 <= SMALL_D
    v = np.array([1.0, 1e-16, 1e-16, 1e-16, 1e-16, 1e-16, 1e-16, 1e-16])
    in_order = 0.0
    for x in v.tolist():
        in_order += x
    assert float(v.sum()) != in_order  # 8 numbers: numpy adds pairwise
    assert float(v[:7].sum()) == vector_sum(v[:7])


def test_vector_sum_is_numpys_sum():
    for v in vectors(0, range(1, 12)):
        assert bits(vector_sum(v)) == bits(float(v.sum())), v


def test_the_range_check_accepts_what_numpy_accepts():
    for v in vectors(1):
        in_range = bool(v.min() >= 0.0 and v.max() <= 1.0)  # the numpy path
        try:
            got = check_vector(v, len(v), "adversary", "costs")
        except IllegalMove as exc:
            assert not in_range and exc.rule == "costs_range", v
        else:
            assert in_range and got is v


def test_the_weights_check_accepts_what_numpy_accepts():
    for v in vectors(2):
        for w in (v, v / v.sum() if v.sum() else v):
            total = float(w.sum())
            legal = bool(w.min() >= 0.0 and abs(total - 1.0) <= WEIGHT_TOLERANCE)
            try:
                check_weights(w, len(w))
            except IllegalMove as exc:
                assert not legal and exc.rule == "weights_distribution", w
                assert exc.message.endswith(f"(sum {total:.9g})")
            else:
                assert legal, w


def test_the_draw_is_numpys_draw():
    rng = np.random.default_rng(3)
    for v in vectors(4, per_length=100):
        w = np.abs(np.nan_to_num(v, nan=0.5, posinf=1.0, neginf=1.0))
        w[rng.random(len(w)) < 0.2] = 0.0
        if not w.sum():
            w[-1] = 1.0
        w /= w.sum()
        cumulative = np.cumsum(w)
        # the coins: uniform, 0, just below 1, and the boundaries W_i / W_d themselves
        for u in [*rng.random(5).tolist(), 0.0, 1 - 2**-53,
                  *(cumulative / cumulative[-1]).tolist()]:
            u = min(u, 1 - 2**-53)
            expected = min(int(np.searchsorted(cumulative, u * cumulative[-1], side="right")),
                           len(w) - 1)
            assert draw_index(w, u) == expected, (w, u)


def test_the_dot_product_is_matmuls_on_every_layout():
    rng = np.random.default_rng(5)
    for d in (1, 2, 7, 16, 100):
        w = rng.random(d)
        w /= w.sum()
        base = rng.random(3 * d)
        readonly = base[:d].copy()
        readonly.flags.writeable = False
        for v in (base[:d], base[::3], base[::-1][:d], base[::-3][:d], readonly,
                  np.broadcast_to(base[0], (d,))):
            assert bits(referee_module._dot(w, v)) == bits(float(w @ v))


def test_hedge_weights_are_the_numpy_paths(monkeypatch: pytest.MonkeyPatch):
    for v in vectors(6, per_length=60):
        d = len(v)
        losses = np.nan_to_num(v, nan=0.0) * 100
        got = []
        for small_d in (SMALL_D, 0):
            monkeypatch.setattr(learners_module, "SMALL_D", small_d)
            hedge = LEARNERS.make("hedge:eta=0.7")
            hedge.start(GameSpec(EXPERTS, 10, experts=d), seed=0)
            hedge.update_costs(losses, None)
            got.append(np.asarray(hedge.weights(None)).tobytes())
        assert got[0] == got[1], losses


def records(game: GameSpec, learner: str, adversary: str, seed: int) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []

    def keep(r: Any) -> None:
        out.append((r.t, None if r.advice is None else r.advice.tobytes(),
                    None if r.weights is None else r.weights.tobytes(), r.p, r.y,
                    r.costs.tobytes(), r.drawn, *map(bits, (r.loss, r.expected_loss,
                                                            r.regret, r.expected_regret))))

    result = play(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), seed,
                  on_record=keep)
    out.append((result.status, bits(result.regret), bits(result.expected_regret)))
    return out


GAMES = [(learner, adversary, d)
         for learner in ("hedge", "hedge:schedule=doubling", "weighted-majority",
                         "follow-the-leader")
         for adversary in ("random-costs", "cover-flip", "wm-flip")
         for d in (1, 2, 7, 8, 16, 17)]


@pytest.mark.parametrize(("learner", "adversary", "d"), GAMES)
def test_games_are_the_numpy_paths_games(learner, adversary, d, monkeypatch):
    game = GameSpec(EXPERTS, 60, experts=d)
    fast = [records(game, learner, adversary, seed) for seed in (0, 1)]
    monkeypatch.setattr(referee_module, "SMALL_D", 0)
    monkeypatch.setattr(referee_module, "IN_ORDER_SUM", 0)
    monkeypatch.setattr(learners_module, "SMALL_D", 0)
    assert fast == [records(game, learner, adversary, seed) for seed in (0, 1)]
