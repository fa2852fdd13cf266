"""A learner that kills its parent (a loaded sandbox's fork server) in its first move."""

import os
import signal

from littlestone.learners.halving import Halving


class KillsItsSandbox(Halving):
    """Halving, after killing the process that started it."""

    def predict(self, x):
        if not getattr(self, "killed", False):
            self.killed = True
            os.kill(os.getppid(), signal.SIGKILL)
        return super().predict(x)
