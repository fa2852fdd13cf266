import os
import time

from littlestone.learners.halving import Halving as MajorityVote


class Forks(MajorityVote):
    """Forks a child that would live forever."""

    def predict(self, x):
        if not getattr(self, "forked", False):
            self.forked = True
            if os.fork() == 0:
                time.sleep(10_000)
                os._exit(0)
        return super().predict(x)
