"""Agents that try to outguess the referee, as a student would (not registered).

Each searches the small game seeds S = 0, 1, ... for the one whose public derivation
(:func:`littlestone.games.game.game_seeds` with no key) gives its own seed. When it
finds it (in-process ``play --seed S``, where nothing is secret) it rebuilds what it
must not know and cheats; when the game key is secret (a server, a tournament) the
search finds nothing and it plays an honest fallback. The tests show both: the cheat
is real, and it stops paying once the key is secret.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from littlestone.adversaries import ADVERSARIES
from littlestone.adversaries.base import Adversary
from littlestone.games.classes import FiniteClass
from littlestone.games.coin import Coin
from littlestone.games.experts import draw_index
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSeeds, GameSpec, game_seeds
from littlestone.learners.base import Learner

#: How far the cheaters search for the game seed.
SEARCH = 64


def find_seeds(role: str, own: int) -> GameSeeds | None:
    """The public seeds whose ``role`` seed is ``own``, if S < SEARCH."""
    for s in range(SEARCH):
        seeds = game_seeds(s)
        if getattr(seeds, role) == own:
            return seeds
    return None


class CoinPredictor(Learner):
    """Predicts the referee's coin. Where the version space is unanimous it answers the
    forced label; elsewhere the p that makes its draw agree with the label an adversary
    labelling against the likelier prediction will give: p just above u_t (< 1/2: the
    label is 1, the draw 1), or just below (> 1/2: label 0, draw 0). Without the coin it
    answers 1/2 where the version space is split.

    >>> CoinPredictor().id
    'coin-predictor'
    """

    id = "coin-predictor"
    games = frozenset({MISTAKE_BOUND})
    deterministic = False

    def reset(self, game: GameSpec, seed: int) -> None:
        seeds = find_seeds("learner", seed)
        self.coin = Coin(seeds.referee) if seeds is not None else None
        self.cheated = seeds is not None
        assert isinstance(game.hclass, FiniteClass)
        self.space = game.hclass.version_space()

    def predict(self, x: Any) -> float:
        u = self.coin.random() if self.coin is not None else None  # one draw a round
        votes = self.space.votes(x)
        if votes in (0, self.space.size):
            return float(votes > 0)
        if u is None:
            return 0.5
        if u < 0.5:
            return float(np.nextafter(u, 1.0))  # [u < p]: draws 1; p < 1/2: labelled 1
        return float(u) if u > 0.5 else 0.5  # [u < p] false: draws 0; p > 1/2: labelled 0

    def update(self, x: Any, y: int) -> None:
        self.space.restrict(x, y)


class TargetRecomputer(Learner):
    """Rebuilds random-target from the adversary's seed (recomputed from the game seed it
    was given, as a submission reading ``--seed`` from its command line would) and reads
    its hidden target; without it, predicts 0.

    >>> TargetRecomputer(seed=3).seed
    3
    """

    id = "target-recomputer"
    games = frozenset({MISTAKE_BOUND})

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def reset(self, game: GameSpec, seed: int) -> None:
        self.target = None
        if game_seeds(self.seed).learner == seed:  # the seed it was told is the game's
            spy = ADVERSARIES.make("random-target")
            spy.start(game, game_seeds(self.seed).adversary)
            revealed = spy.reveal()
            assert revealed is not None
            self.target = revealed[0]
        assert isinstance(game.hclass, FiniteClass)
        self.hclass = game.hclass

    def predict(self, x: Any) -> float:
        if self.target is None:
            return 0.0
        return float(self.hclass.evaluate(x, np.array([self.target]))[0])

    def update(self, x: Any, y: int) -> None:
        pass


class DrawCharger(Adversary):
    """Free experts: predicts the referee's draw I_t ~ w_t and charges exactly that
    expert (cost 1, the others 0); without the coin it charges the heaviest expert.

    >>> DrawCharger().id
    'draw-charger'
    """

    id = "draw-charger"
    games = frozenset({EXPERTS})

    def reset(self, game: GameSpec, seed: int) -> None:
        seeds = find_seeds("adversary", seed)
        self.coin = Coin(seeds.referee) if seeds is not None else None
        self.d = game.n_experts

    def advice(self) -> None:
        return None

    def costs(self, answer: Any) -> np.ndarray:
        w = np.asarray(answer, dtype=np.float64)
        charged = draw_index(w, self.coin.random()) if self.coin is not None else int(
            np.argmax(w))
        costs = np.zeros(self.d)
        costs[charged] = 1.0
        return costs
