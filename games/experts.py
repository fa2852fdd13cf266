"""The referee of the expert-advice game, as a sans-I/O state machine (docs/design.md 1.2).

An oblivious adversary may commit before round 1, to its target or to its whole
sequence of moves, and reveal after round T (:meth:`ExpertsReferee.commit`,
:meth:`ExpertsReferee.reveal`). Each round::

    referee.advice(a)          # the adversary's advice a_t in [0, 1]^d (optional), or
    referee.instance(x)        # with class-derived experts: a_t,i = h_i(x)
    referee.weights(w)         # the learner's distribution over the d experts, or
    referee.prediction(p)      # a prediction p in [0, 1] (only after advice)
    referee.costs(v)           # the adversary's costs v_t in [0, 1]^d, or
    referee.label(y)           # a label y (only after advice): v_t,i = |a_t,i - y|

and the last move returns the :class:`~littlestone.games.game.ExpertsRecord`. The referee draws the
learner's expert I_t ~ w_t (or its label yhat_t ~ Bernoulli(p_t)) from its own
generator; the adversary never sees the draw.

regret_T = sum_t loss_t - min_i L_i, and expected_regret_T the same with <w_t, v_t>.

>>> ref = ExpertsReferee(2, rounds=1, seed=0)
>>> ref.advice([0.0, 1.0]); ref.weights([0.5, 0.5])
>>> rec = ref.label(1)
>>> rec.costs.tolist(), rec.expected_loss, rec.regret == rec.loss
([1.0, 0.0], 0.5, True)
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import FiniteClass
from littlestone.games.coin import coin_for
from littlestone.games.commitment import MIN_SALT_BYTES, SequenceHash, digest
from littlestone.games.errors import IllegalMove, MoveError, OutOfTurn, RuleViolation
from littlestone.games.game import EXPERTS, ExpertsRecord, GameResult
from littlestone.games.mistake_bound import check_label, check_probability, faulted_prediction

__all__ = ["WEIGHT_TOLERANCE", "ExpertsReferee", "Phase", "check_vector", "check_weights",
           "draw_index"]

#: How far from 1 the sum of the learner's weights may be (they are renormalised after).
WEIGHT_TOLERANCE = 1e-6

LEARNER = "learner"
ADVERSARY = "adversary"
FloatArray = NDArray[np.float64]


class Phase(enum.Enum):
    """Whose move the referee waits for."""

    ADVICE = "advice"
    ANSWER = "answer"
    OUTCOME = "outcome"
    REVEAL = "reveal"
    OVER = "over"


def _unit_vector(values: object, d: int, role: str, what: str) -> FloatArray:
    """``values`` as a float vector of length d in [0, 1]^d, or IllegalMove."""
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise IllegalMove(role, f"{what}_type", f"{what} is not a vector of numbers") from None
    if v.shape != (d,):
        raise IllegalMove(role, f"{what}_shape", f"{what} has shape {v.shape}, expected ({d},)")
    if not (v.min() >= 0.0 and v.max() <= 1.0):  # also rejects nan
        raise IllegalMove(role, f"{what}_range", f"{what} must lie in [0, 1]")
    return v


def check_vector(values: object, d: int, role: str, what: str) -> FloatArray:
    """Advice or costs as the referee takes them (a vector of length d in [0, 1]^d), or
    IllegalMove; it changes no game: a driver checks a remote move before it is played
    (PROTOCOL.md 6: an illegal move is a fault, not the end of the game).

    >>> check_vector([0.0, 2.0], 2, "adversary", "costs")
    Traceback (most recent call last):
    ...
    littlestone.games.errors.IllegalMove: costs must lie in [0, 1]
    """
    return _unit_vector(values, d, role, what)


def check_weights(weights: object, d: int) -> FloatArray:
    """The learner's weights as :meth:`ExpertsReferee.weights` takes them (d numbers,
    finite, >= 0, summing to 1 within WEIGHT_TOLERANCE), or IllegalMove; it changes no
    game.

    >>> check_weights([0.5, float("nan")], 2)
    Traceback (most recent call last):
    ...
    littlestone.games.errors.IllegalMove: weights must be >= 0 and sum to 1 within 1e-06 (sum nan)
    """
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise IllegalMove(LEARNER, "weights_type", "weights are not a vector of numbers") from None
    if w.shape != (d,):
        raise IllegalMove(LEARNER, "weights_shape", f"weights have shape {w.shape}, expected "
                          f"({d},)")
    total = float(w.sum())
    if not w.min() >= 0.0 or not abs(total - 1.0) <= WEIGHT_TOLERANCE:  # rejects nan, inf
        raise IllegalMove(LEARNER, "weights_distribution", f"weights must be >= 0 and sum to "
                          f"1 within {WEIGHT_TOLERANCE} (sum {total:.9g})")
    return w


#: Experts per block when the referee draws I_t ~ w_t in two stages.
DRAW_BLOCK = 1024


def draw_index(w: FloatArray, u: float) -> int:
    """The i with W_{i-1} <= u W_d < W_i (W the cumulative sums of w): I ~ w for u uniform
    in [0, 1). Beyond 4 blocks it finds the block of 1024 first (a vectorised sum per
    block), then the expert inside it, so that no cumulative sum over all d is needed.

    >>> draw_index(np.array([0.25, 0.5, 0.25]), 0.3)
    1
    """
    d = len(w)
    if d <= 4 * DRAW_BLOCK:
        cumulative = np.cumsum(w)
        return min(int(np.searchsorted(cumulative, u * cumulative[-1], side="right")), d - 1)
    sums = np.cumsum(np.add.reduceat(w, np.arange(0, d, DRAW_BLOCK)))
    target = u * float(sums[-1])
    block = min(int(np.searchsorted(sums, target, side="right")), len(sums) - 1)
    before = float(sums[block - 1]) if block else 0.0
    start = block * DRAW_BLOCK
    inner = np.cumsum(w[start : start + DRAW_BLOCK])
    return start + min(int(np.searchsorted(inner, target - before, side="right")),
                        len(inner) - 1)


class ExpertsReferee:
    """Referee of one experts game: ``n_experts`` experts, ``rounds`` rounds.

    With ``hclass`` the experts are its hypotheses and the adversary plays instances.
    ``seed`` is the key of the referee's coin (an int stands for a key derived from it).
    """

    def __init__(
        self, n_experts: int, rounds: int, seed: int | bytes, hclass: FiniteClass | None = None
    ) -> None:
        if hclass is not None and hclass.size != n_experts:
            raise ValueError("with class-derived experts, n_experts must be |H|")
        self.d = n_experts
        self.rounds = rounds
        self.hclass = hclass
        self.t = 0
        self.phase = Phase.ADVICE if rounds > 0 else Phase.OVER
        self.status = "complete"
        self.message = ""
        #: Cumulative loss L_i of every expert.
        self.expert_losses = np.zeros(n_experts)
        self.learner_loss = 0.0
        self.expected_learner_loss = 0.0
        self._draws = coin_for(seed)
        self._x: Any = None
        self._advice: FloatArray | None = None
        self._weights: FloatArray | None = None
        self._p: float | None = None
        self._committed: bytes | None = None
        self._sequence: SequenceHash | None = None
        self._faulted = False

    # -- the moves -------------------------------------------------------------------

    def commit(self, commitment: bytes) -> None:
        """An oblivious adversary's commitment, before round 1: to its target (a hypothesis
        of the class, games.commitment.digest) or to its whole sequence of moves
        (games.commitment.SequenceHash)."""
        if self.t != 0 or self.phase is not Phase.ADVICE or self._committed is not None:
            self._fail(OutOfTurn(ADVERSARY, "commit", "commit only before round 1"))
        if not isinstance(commitment, bytes) or len(commitment) != 32:
            self._fail(IllegalMove(ADVERSARY, "commitment", "a commitment is 32 bytes (SHA-256)"))
        self._committed = commitment
        spec = self.hclass.spec if self.hclass is not None else f"experts:d={self.d}"
        self._sequence = SequenceHash(spec)

    def reveal(self, target: object, salt: bytes) -> None:
        """After the last round: the committed target (a hypothesis index, which must have
        erred on no label) or ``None`` for a committed sequence, and the salt."""
        if self.phase is not Phase.REVEAL or self._committed is None:
            self._fail(OutOfTurn(ADVERSARY, "reveal", "nothing to reveal now"))
        assert self._committed is not None and self._sequence is not None
        if not isinstance(salt, bytes) or len(salt) < MIN_SALT_BYTES:
            self._fail(IllegalMove(ADVERSARY, "salt", f"salt must be >= {MIN_SALT_BYTES} bytes"))
        if target is None:
            if self._sequence.digest(salt) != self._committed:
                self._fail(RuleViolation(ADVERSARY, "commitment", "the moves played do not "
                                         "match the committed sequence"))
        else:
            index = int(target) if isinstance(target, int | np.integer) else -1
            if self.hclass is None or isinstance(target, bool) or not 0 <= index < self.d:
                self._fail(RuleViolation(ADVERSARY, "reveal", f"revealed target {target!r} is "
                                         "not an expert of the class"))
            assert self.hclass is not None
            if digest(self.hclass, index, salt) != self._committed:
                self._fail(RuleViolation(ADVERSARY, "commitment", "revealed target does not "
                                         "match the commitment"))
            if self.expert_losses[index] != 0:
                self._fail(RuleViolation(ADVERSARY, "target_label", f"revealed hypothesis "
                                         f"{target} disagrees with a label given"))
        self.phase = Phase.OVER

    def instance(self, x: object) -> Any:
        """Class-derived advice: the adversary's instance x, a_t,i = h_i(x)."""
        self._expect(Phase.ADVICE, ADVERSARY, "instance")
        if self.hclass is None:
            self._fail(IllegalMove(ADVERSARY, "instance", "this game has no class: send advice"))
        assert self.hclass is not None
        try:
            self._x = self.hclass.check_instance(x)
        except ValueError as exc:
            self._fail(RuleViolation(ADVERSARY, "instance_domain", str(exc)))
        self._advice = self.hclass.evaluate(self._x).astype(np.float64)
        if self._sequence is not None:
            self._sequence.add(self._x)
        self.phase = Phase.ANSWER
        return self._x

    def advice(self, advice: object) -> None:
        """The experts' advice a_t in [0, 1]^d."""
        self._expect(Phase.ADVICE, ADVERSARY, "advice")
        if self.hclass is not None:
            self._fail(IllegalMove(ADVERSARY, "advice", "class-derived experts: send an instance"))
        try:
            self._advice = _unit_vector(advice, self.d, ADVERSARY, "advice")
        except MoveError as exc:
            self._fail(exc)
        if self._sequence is not None:
            self._sequence.add_advice(self._advice)
        self.phase = Phase.ANSWER

    def weights(self, weights: object) -> None:
        """The learner's distribution w_t over experts (sum within WEIGHT_TOLERANCE of 1)."""
        self._expect_answer("weights")
        try:
            w = np.array(weights, dtype=np.float64)  # a copy: the learner may reuse its array
        except (TypeError, ValueError):
            self._fail(IllegalMove(LEARNER, "weights_type", "weights are not a vector of numbers"))
        if w.shape != (self.d,):
            self._fail(IllegalMove(LEARNER, "weights_shape",
                                   f"weights have shape {w.shape}, expected ({self.d},)"))
        total = float(w.sum())
        if not w.min() >= 0.0 or not abs(total - 1.0) <= WEIGHT_TOLERANCE:  # rejects nan too
            self._fail(IllegalMove(
                LEARNER, "weights_distribution",
                f"weights must be >= 0 and sum to 1 within {WEIGHT_TOLERANCE} (sum {total:.9g})",
            ))
        if total != 1.0:  # a learner that normalised its weights saves a pass
            w /= total
        self._weights, self._p = w, None
        self.phase = Phase.OUTCOME

    def prediction(self, p: object) -> None:
        """A prediction p in [0, 1] instead of weights (needs advice this round)."""
        self._expect_answer("prediction")
        if self._advice is None:
            self._fail(IllegalMove(LEARNER, "prediction", "no advice this round: send weights"))
        try:
            self._p = check_probability(p)
        except MoveError as exc:
            self._fail(exc)
        self._weights = None
        self.phase = Phase.OUTCOME

    def answer_fault(self) -> None:
        """The learner faulted this round (PROTOCOL.md 6): it is charged the maximal loss,
        all its weight on the costliest expert (or p = 1 - y under a label)."""
        self._expect_answer("weights")
        self._weights, self._p, self._faulted = None, 0.5, True
        self.phase = Phase.OUTCOME

    def label(self, y: object) -> ExpertsRecord:
        """The outcome as a label y; the costs are v_t,i = |a_t,i - y|."""
        self._expect(Phase.OUTCOME, ADVERSARY, "label")
        if self._advice is None:
            self._fail(IllegalMove(ADVERSARY, "label", "no advice this round: send costs"))
        assert self._advice is not None
        try:
            label = check_label(y)
        except MoveError as exc:
            self._fail(exc)
        if self._sequence is not None:
            self._sequence.add(label)
        costs = self._advice if label == 0 else 1.0 - self._advice
        if self._faulted:
            self._faulted, self._p = False, faulted_prediction(label)
        return self._score(costs, label)

    def costs(self, costs: object) -> ExpertsRecord:
        """The outcome as costs v_t in [0, 1]^d."""
        self._expect(Phase.OUTCOME, ADVERSARY, "costs")
        try:
            v = _unit_vector(costs, self.d, ADVERSARY, "costs")
        except MoveError as exc:
            self._fail(exc)
        if self._faulted:
            self._faulted, self._p = False, None
            self._weights = np.zeros(self.d)
            self._weights[int(np.argmax(v))] = 1.0
        if self._p is not None:
            self._fail(IllegalMove(ADVERSARY, "costs", "the learner predicted p: send a label"))
        if self._sequence is not None:
            self._sequence.add(v)
        return self._score(v, None)

    def abort(self, status: str, message: str = "") -> None:
        """End the game from outside (a crash, a disconnect) with the given status."""
        if self.phase is not Phase.OVER:
            self.status, self.message, self.phase = status, message, Phase.OVER

    # -- results ---------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self.phase is Phase.OVER

    @property
    def current_advice(self) -> FloatArray | None:
        """The advice of the round being played (``None`` before advice or without it)."""
        return self._advice

    @property
    def induced_prediction(self) -> float:
        """The prediction <w, a> the learner's weights induce (0.5 without advice)."""
        if self._weights is None:
            return float(self._p) if self._p is not None else 0.5
        if self._advice is None:
            return 0.5
        return float(self._weights @ self._advice)

    @property
    def best_expert_loss(self) -> float:
        return float(self.expert_losses.min()) if self.t else 0.0

    def result(self) -> GameResult:
        """The scores so far; ``status`` is ``incomplete`` while the game is not over."""
        best = self.best_expert_loss
        return GameResult(
            game=EXPERTS,
            status=self.status if self.over else "incomplete",
            rounds=self.t,
            mistakes=self.learner_loss,
            expected_mistakes=self.expected_learner_loss,
            regret=self.learner_loss - best,
            expected_regret=self.expected_learner_loss - best,
            learner_loss=self.learner_loss,
            expected_learner_loss=self.expected_learner_loss,
            best_expert_loss=best,
            message=self.message,
        )

    # -- rules -------------------------------------------------------------------------

    def _score(self, costs: FloatArray, label: int | None) -> ExpertsRecord:
        u = float(self._draws.random())
        if self._weights is not None:
            w = self._weights
            expected = float(w @ costs)
            drawn = draw_index(w, u)
            loss = float(costs[drawn])
            p = float(w @ self._advice) if self._advice is not None else None
        else:
            assert self._p is not None and label is not None
            p = self._p
            drawn = 1 if u < p else 0
            expected = p if label == 0 else 1.0 - p
            loss = float(drawn != label)
        self.expert_losses += costs
        self.learner_loss += loss
        self.expected_learner_loss += expected
        self.t += 1
        best = float(self.expert_losses.min())
        record = ExpertsRecord(
            self.t, self._x, self._advice, self._weights, p, label, costs, drawn, loss,
            expected, self.learner_loss - best, self.expected_learner_loss - best,
        )
        self._x = self._advice = self._weights = self._p = None
        if self.t == self.rounds:
            self.phase = Phase.REVEAL if self._committed is not None else Phase.OVER
        else:
            self.phase = Phase.ADVICE
        return record

    def _expect(self, phase: Phase, role: str, move: str) -> None:
        if self.phase is not phase:
            self._fail(OutOfTurn(role, move,
                                 f"{move} out of turn: the referee expects {self.phase.value}"))

    def _expect_answer(self, move: str) -> None:
        if self.phase is Phase.ADVICE:  # no advice this round: the learner answers at once
            if self.hclass is not None:
                self._fail(OutOfTurn(LEARNER, move, "the referee expects the instance first"))
            self._advice = None
            self.phase = Phase.ANSWER
        self._expect(Phase.ANSWER, LEARNER, move)

    def _fail(self, error: MoveError) -> Any:
        if self.phase is not Phase.OVER:
            self.status, self.message, self.phase = error.status, error.message, Phase.OVER
        raise error
