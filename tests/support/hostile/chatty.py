from littlestone.learners.halving import Halving as MajorityVote


class Chatty(MajorityVote):
    """Prints to stdout every round (and plays well)."""

    def predict(self, x):
        print("thinking about", x, flush=True)
        return super().predict(x)
