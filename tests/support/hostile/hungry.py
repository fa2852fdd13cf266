from littlestone.learners.halving import Halving as MajorityVote


class Hungry(MajorityVote):
    """Allocates far beyond any memory limit."""

    def predict(self, x):
        self.hoard = bytearray(64 * 1024**3)
        return 0.0
