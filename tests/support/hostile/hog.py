"""An adversary that starts busy processes, each in a session of its own, to take the
CPU from the learner whose moves the referee times on the wall clock; then plays slowly,
so that its game would last long enough for the starved learner to miss its deadlines."""

import os
import time

from littlestone.adversaries.random_target import RandomTarget


class Hog(RandomTarget):
    """Burns every core it can get from round 1."""

    oblivious = False

    def moves(self, n):
        return None  # round by round

    def instance(self):
        if not getattr(self, "hogging", False):
            self.hogging = True
            for _ in range(3):
                if os.fork() == 0:
                    os.setsid()
                    while True:
                        pass
        time.sleep(0.05)
        return super().instance()
