from littlestone.learners.halving import Halving as MajorityVote


class AnswersSeven(MajorityVote):
    """Answers p = 7."""

    def predict(self, x):
        return 7.0
