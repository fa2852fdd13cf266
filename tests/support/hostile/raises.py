"""Hostile submissions for the tournament tests (each one misbehaves on purpose)."""

from littlestone.learners.halving import Halving as MajorityVote


class RaisesAtRound3(MajorityVote):
    """Fails in round 3."""

    def predict(self, x):
        self.t = getattr(self, "t", 0) + 1
        if self.t == 3:
            raise RuntimeError("boom at round 3")
        return super().predict(x)
