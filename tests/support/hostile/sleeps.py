"""Hostile submissions for the tournament tests (each one misbehaves on purpose)."""

import time

from littlestone.learners.halving import Halving as MajorityVote


class SleepsForever(MajorityVote):
    """Never answers."""

    def predict(self, x):
        time.sleep(10_000)
        return 0.0
