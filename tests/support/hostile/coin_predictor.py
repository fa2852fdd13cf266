"""A submission that predicts the referee's coin from the public seed derivation (as
tests/support/cheaters.py's CoinPredictor, self-contained: a submission sees only its own file)."""

import numpy as np

from littlestone.games.coin import Coin
from littlestone.games.game import game_seeds
from littlestone.learners.halving import Halving


class CoinPredictor(Halving):
    """Answers p next to the coin it predicts where the version space is split; 1/2 when
    it cannot predict it."""

    deterministic = False

    def reset(self, game, seed):
        super().reset(game, seed)
        found = [s for s in range(64) if game_seeds(s).learner == seed]
        self.coin = Coin(game_seeds(found[0]).referee) if found else None

    def predict(self, x):
        u = self.coin.random() if self.coin is not None else None
        p = super().predict(x)
        if p in (0.0, 1.0) and self._version_space.votes(x) in (0, self._version_space.size):
            return p
        if u is None:
            return 0.5
        return float(np.nextafter(u, 1.0)) if u < 0.5 else (u if u > 0.5 else 0.5)
