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

import bisect
import enum
import itertools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import FiniteClass
from littlestone.games.coin import coin_for
from littlestone.games.commitment import MIN_SALT_BYTES, SequenceHash, digest
from littlestone.games.errors import IllegalMove, MoveError, OutOfTurn, RuleViolation
from littlestone.games.game import EXPERTS, ExpertsRecord, GameResult
from littlestone.games.mistake_bound import check_label, check_probability, faulted_prediction

__all__ = ["IN_ORDER_SUM", "SCORE_CELLS", "SMALL_D", "WEIGHT_TOLERANCE", "ExpertsBlock",
           "ExpertsReferee", "Phase", "check_vector", "check_weights", "draw_index", "draw_indices",
           "vector_sum"]

#: How far from 1 the sum of the learner's weights may be (they are renormalised after).
WEIGHT_TOLERANCE = 1e-6

#: Up to this many experts the referee checks a vector, draws and finds the best expert
#: on the vector's Python floats: numpy's cost per call (about 1 us a reduction)
#: outweighs the work there (they break even near 32).
SMALL_D = 16
#: numpy's sum adds fewer than 8 numbers left to right (pairwise from 8): up to this many
#: numbers, a sum of Python floats in order is the same float.
IN_ORDER_SUM = 7

# the ufuncs' reductions, called without ndarray.min's and sum's Python wrappers
_minimum, _maximum, _add = np.minimum.reduce, np.maximum.reduce, np.add.reduce

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
    if d <= SMALL_D:
        in_range = True
        for value in v.tolist():
            if not 0.0 <= value <= 1.0:  # also rejects nan
                in_range = False
                break
    else:
        in_range = _minimum(v) >= 0.0 and _maximum(v) <= 1.0  # also rejects nan
    if not in_range:
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
    return _distribution(weights, d, np.asarray)[0]


def _distribution(weights: object, d: int, convert: Callable[..., Any]
                  ) -> tuple[FloatArray, float]:
    """``weights`` as a float vector of length d (``convert``: np.asarray, or np.array
    for a copy) and its sum as numpy makes it, or IllegalMove unless they are >= 0 and
    sum to 1 within WEIGHT_TOLERANCE (nan or inf never do)."""
    try:
        w: FloatArray = convert(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise IllegalMove(LEARNER, "weights_type", "weights are not a vector of numbers") from None
    if w.shape != (d,):
        raise IllegalMove(LEARNER, "weights_shape", f"weights have shape {w.shape}, expected "
                          f"({d},)")
    if d <= SMALL_D:
        values = w.tolist()
        least = min(values)  # blind to a nan, but a nan makes the total nan
        if d <= IN_ORDER_SUM:
            total = 0.0
            for value in values:  # vector_sum's order
                total += value
        else:
            total = float(_add(w))
    else:
        total, least = float(_add(w)), _minimum(w)
    if not least >= 0.0 or not abs(total - 1.0) <= WEIGHT_TOLERANCE:
        raise IllegalMove(LEARNER, "weights_distribution", f"weights must be >= 0 and sum to "
                          f"1 within {WEIGHT_TOLERANCE} (sum {total:.9g})")
    return w, total


def vector_sum(v: FloatArray) -> float:
    """``float(v.sum())``, the same float: up to IN_ORDER_SUM numbers it adds v's Python
    floats in order, as numpy does there.

    >>> vector_sum(np.array([0.5, 0.25])), vector_sum(np.array([-0.0]))
    (0.75, 0.0)
    """
    if len(v) <= IN_ORDER_SUM:
        total = 0.0
        for value in v.tolist():
            total += value
        return total
    return float(_add(v))


def _dot(w: FloatArray, v: FloatArray) -> float:
    """``float(w @ v)``, the same float, for the referee's own copy w of the weights (a
    fresh array, contiguous): when v is contiguous, aligned and writeable too
    (``flags.carray``), ndarray.dot calls the BLAS dot product that ``@`` calls, without
    the ufunc machinery (0.4 us less). On other strides (negative, 0) the two part ways:
    ``@`` then adds in its own loop.

    >>> _dot(np.array([0.25, 0.75]), np.array([1.0, 0.0]))
    0.25
    """
    if v.flags.carray:
        return float(w.dot(v))
    return float(w @ v)


#: Experts per block when the referee draws I_t ~ w_t in two stages.
DRAW_BLOCK = 1024


def draw_index(w: FloatArray, u: float) -> int:
    """The i with W_{i-1} <= u W_d < W_i (W the cumulative sums of w >= 0): I ~ w for u
    uniform in [0, 1). Up to SMALL_D experts the sums are Python floats, added in numpy's
    order. Beyond 4 blocks it finds the block of 1024 first (a vectorised sum per block),
    then the expert inside it, so that no cumulative sum over all d is needed.

    >>> draw_index(np.array([0.25, 0.5, 0.25]), 0.3)
    1
    """
    d = len(w)
    if d <= SMALL_D:  # the same sums, left to right, on Python floats
        running = list(itertools.accumulate(w.tolist()))
        return min(bisect.bisect_right(running, u * running[-1]), d - 1)
    if d <= 4 * DRAW_BLOCK:
        cumulative = np.add.accumulate(w)
        return min(int(cumulative.searchsorted(u * cumulative[-1], side="right")), d - 1)
    sums = np.add.accumulate(np.add.reduceat(w, np.arange(0, d, DRAW_BLOCK)))
    target = u * float(sums[-1])
    block = min(int(sums.searchsorted(target, side="right")), len(sums) - 1)
    before = float(sums[block - 1]) if block else 0.0
    start = block * DRAW_BLOCK
    inner = np.add.accumulate(w[start : start + DRAW_BLOCK])
    return start + min(int(inner.searchsorted(target - before, side="right")), len(inner) - 1)


def draw_indices(ws: FloatArray, us: FloatArray) -> NDArray[np.int64]:
    """:func:`draw_index` of each row of ``ws`` with its u, at once (the same draws: a
    row's cumulative sums are the same sequential sums, and the count of those <= u W_d
    is where ``searchsorted`` puts it).

    >>> draw_indices(np.array([[0.25, 0.5, 0.25], [1.0, 0.0, 0.0]]), np.array([0.3, 0.9]))
    array([1, 0])
    """
    d = ws.shape[1]
    if d > 4 * DRAW_BLOCK:
        return np.array([draw_index(w, float(u)) for w, u in zip(ws, us, strict=True)],
                        dtype=np.int64)
    cumulative = np.cumsum(ws, axis=1)
    targets = us * cumulative[:, -1]
    counts = np.count_nonzero(cumulative <= targets[:, None], axis=1)
    drawn: NDArray[np.int64] = np.minimum(counts, d - 1).astype(np.int64)
    return drawn


#: The learner's weights a block of queued rounds keeps at most before it is scored
#: (rows times experts: 2 MiB of float64), so that a block of 10^5 experts stays small.
SCORE_CELLS = 1 << 18


class ExpertsBlock(NamedTuple):
    """Scored rounds t0, t0 + 1, ... of the experts game as columns (a block of queued
    rounds, or rounds gathered for one log frame): what their records hold, row by row.
    A row without advice, weights or an instance has ``has_advice``, ``has_weights`` or
    ``has_x`` False (and zeros); ``p`` is NaN where the record's is None, ``y`` -1.
    ``advice`` and ``weights`` may be None when no row has them."""

    t0: int
    x: NDArray[np.int64]
    has_x: NDArray[np.bool_]
    advice: FloatArray | None
    has_advice: NDArray[np.bool_]
    weights: FloatArray | None
    has_weights: NDArray[np.bool_]
    p: FloatArray
    y: NDArray[np.int64]
    costs: FloatArray
    drawn: NDArray[np.int64]
    loss: FloatArray
    expected_loss: FloatArray
    regret: FloatArray
    expected_regret: FloatArray

    @classmethod
    def from_records(cls, records: list[ExpertsRecord], d: int) -> ExpertsBlock:
        """The columns of ``records`` (consecutive rounds of a game of d experts; each
        instance an int of 64 bits)."""
        n = len(records)

        def matrix(name: str) -> tuple[FloatArray | None, NDArray[np.bool_]]:
            rows = [getattr(r, name) for r in records]
            has = np.array([v is not None for v in rows], dtype=np.bool_)
            if not has.any():
                return None, has
            out = np.zeros((n, d))
            for i, v in enumerate(rows):
                if v is not None:
                    out[i] = v
            return out, has

        advice, has_advice = matrix("advice")
        weights, has_weights = matrix("weights")
        costs, _ = matrix("costs")
        assert costs is not None
        return cls(
            records[0].t if records else 1,
            np.array([0 if r.x is None else int(r.x) for r in records], dtype=np.int64),
            np.array([r.x is not None for r in records], dtype=np.bool_),
            advice, has_advice, weights, has_weights,
            np.array([np.nan if r.p is None else r.p for r in records], dtype=np.float64),
            np.array([-1 if r.y is None else r.y for r in records], dtype=np.int64),
            costs, np.array([r.drawn for r in records], dtype=np.int64),
            *(np.array([getattr(r, k) for r in records], dtype=np.float64)
              for k in ("loss", "expected_loss", "regret", "expected_regret")))

    @property
    def n(self) -> int:
        """The rounds it holds."""
        return len(self.drawn)

    def records(self) -> list[ExpertsRecord]:
        """Each row as the record the referee made of its round (Python numbers, fresh
        arrays), equal to it field by field."""
        xs, ps, ys, drawn = (self.x.tolist(), self.p.tolist(), self.y.tolist(),
                             self.drawn.tolist())
        columns = [c.tolist() for c in (self.loss, self.expected_loss, self.regret,
                                        self.expected_regret)]
        has_x, has_a, has_w = (self.has_x.tolist(), self.has_advice.tolist(),
                               self.has_weights.tolist())
        out = []
        for i in range(len(drawn)):
            advice = self.advice[i].copy() if has_a[i] and self.advice is not None else None
            weights = (self.weights[i].copy() if has_w[i] and self.weights is not None
                       else None)
            out.append(ExpertsRecord(
                self.t0 + i, xs[i] if has_x[i] else None, advice, weights,
                None if ps[i] != ps[i] else ps[i], None if ys[i] < 0 else ys[i],
                self.costs[i].copy(), drawn[i], columns[0][i], columns[1][i], columns[2][i],
                columns[3][i]))
        return out


class _Queue:
    """A block of queued rounds: the instances and labels, and the answers (with each
    round's advice and costs) not yet scored."""

    def __init__(self, xs: list[Any], ys: list[int]) -> None:
        self.xs, self.ys = xs, ys
        #: The next round to answer, and the rounds scored so far.
        self.next = self.scored = 0
        self.answers: list[FloatArray | float | None] = []
        self.advice: list[FloatArray] = []
        self.costs: list[FloatArray] = []
        #: An answer the referee rejected: the game ends at its round once the rounds
        #: before it are scored.
        self.error: MoveError | None = None


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
        self._queue: _Queue | None = None
        #: The columns of the last block scored by :meth:`score_queued` (for the log).
        self.last_block: ExpertsBlock | None = None

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
            w = self._checked_weights(weights)
        except MoveError as exc:
            self._fail(exc)
        self._weights, self._p = w, None
        self.phase = Phase.OUTCOME

    def _checked_weights(self, weights: object) -> FloatArray:
        """The learner's weights as a distribution (a copy, normalised), or IllegalMove."""
        # a copy: the learner may reuse its array
        w, total = _distribution(weights, self.d, np.array)
        if total != 1.0:  # a learner that normalised its weights saves a pass
            w /= total
        return w

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
        if self.phase is not Phase.OUTCOME:
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

    # -- queued rounds: class-derived experts against an oblivious adversary ------------

    def queue(self, instances: Sequence[Any], labels: Sequence[object]
              ) -> tuple[list[Any], list[int]]:
        """An oblivious adversary's next rounds (class-derived experts), given in advance
        and validated now; returns the instances and labels in canonical form.

        Each round is then answered by :meth:`queued_answer` (which returns the costs the
        learner is told) and the rounds answered are scored together by
        :meth:`score_queued`: the same checks, coins, sequence hash and records as
        :meth:`instance`, :meth:`weights` (or :meth:`prediction`, :meth:`answer_fault`)
        and :meth:`label` one round at a time. Only at the start of a round, with nothing
        queued.
        """
        if self.phase is not Phase.ADVICE or self._queue is not None:
            self._fail(OutOfTurn(ADVERSARY, "queue", "queue only at the start of a round, "
                                 "with nothing queued"))
        if self.hclass is None:
            self._fail(IllegalMove(ADVERSARY, "instance", "this game has no class: send advice"))
        assert self.hclass is not None
        if len(instances) != len(labels) or self.t + len(labels) > self.rounds:
            self._fail(IllegalMove(ADVERSARY, "queue", "queue as many instances as labels, "
                                   "within the rounds left"))
        try:
            ys = [check_label(y) for y in labels]
        except MoveError as exc:
            self._fail(exc)
        try:
            xs = [self.hclass.check_instance(x) for x in instances]
        except ValueError as exc:
            self._fail(RuleViolation(ADVERSARY, "instance_domain", str(exc)))
        self._queue = _Queue(xs, ys)
        return xs, ys

    @property
    def queued_answered(self) -> int:
        """Queued rounds answered and not yet scored."""
        return len(self._queue.answers) if self._queue is not None else 0

    def queued_answer(self, answer: object) -> FloatArray:
        """The learner's answer to the next queued round: its weights, a prediction p (a
        float, checked by the caller) or ``None`` for a fault; returns the round's costs
        (the learner is told them with the label). Weights the referee rejects raise
        IllegalMove and end the game at this round, once the rounds answered before it
        are scored (:meth:`score_queued`)."""
        queue = self._queue
        if queue is None or queue.error is not None or self.phase is not Phase.ADVICE or (
                queue.next == len(queue.ys)):
            self._fail(OutOfTurn(LEARNER, "weights", "no queued round awaits an answer"))
        assert queue is not None and self.hclass is not None
        if isinstance(answer, float) or answer is None:
            kept: FloatArray | float | None = answer
        else:
            try:
                kept = self._checked_weights(answer)
            except MoveError as exc:
                queue.error = exc
                raise
        i = queue.next
        advice = self.hclass.evaluate(queue.xs[i]).astype(np.float64)
        costs = advice if queue.ys[i] == 0 else 1.0 - advice
        queue.answers.append(kept)
        queue.advice.append(advice)
        queue.costs.append(costs)
        queue.next = i + 1
        return costs

    def score_queued(self, records: bool = True, final: bool = False) -> list[ExpertsRecord]:
        """Score the queued rounds answered since the last call, in order; their columns
        are :attr:`last_block` (None when there were none). ``final``: the block is over
        (its unanswered rounds are dropped); a rejected answer then ends the game, at its
        round. Records (the same as round by round) only with ``records``."""
        queue = self._queue
        self.last_block = None
        if queue is None:
            return []
        start, k = queue.scored, len(queue.answers)
        if k:
            self.last_block = self._score_block(queue, start, k)
            queue.scored = start + k
            queue.answers, queue.advice, queue.costs = [], [], []
        if final or queue.scored == len(queue.ys):
            self._queue = None
            if queue.error is not None and self.phase is not Phase.OVER:
                error = queue.error
                self.status, self.message, self.phase = error.status, error.message, Phase.OVER
        return self.last_block.records() if records and self.last_block is not None else []

    def _score_block(self, queue: _Queue, start: int, k: int) -> ExpertsBlock:
        """:meth:`_score` of k answered rounds, in order: one draw of k coins, the
        learners' draws of the rows with weights at once, the rest row by row (the same
        operations on the same numbers as round by round, so the same results)."""
        answers, advice, costs = queue.answers, queue.advice, queue.costs
        xs, ys = queue.xs[start : start + k], queue.ys[start : start + k]
        us = self._draws.random(k)
        rows = [i for i, a in enumerate(answers) if isinstance(a, np.ndarray)]
        weights = np.zeros((k, self.d)) if rows else None
        has_weights = np.zeros(k, dtype=np.bool_)
        drawn_w: list[int] = []
        if rows:
            assert weights is not None
            weights[rows] = [answers[i] for i in rows]
            has_weights[rows] = True
            drawn_w = draw_indices(weights[rows], us[rows]).tolist()
        p_col, drawn, loss_col, expected_col = np.full(k, np.nan), [0] * k, [0.0] * k, [0.0] * k
        regret, expected_regret = [0.0] * k, [0.0] * k
        losses, sequence = self.expert_losses, self._sequence
        learner_loss, expected_loss = self.learner_loss, self.expected_learner_loss
        j = 0
        for i in range(k):
            a, v, y, answer = advice[i], costs[i], ys[i], answers[i]
            if isinstance(answer, np.ndarray):
                expected = float(answer @ v)
                drawn[i] = drawn_w[j]
                j += 1
                loss = float(v[drawn[i]])
                p = float(answer @ a)
            else:
                p = faulted_prediction(y) if answer is None else answer
                drawn[i] = 1 if float(us[i]) < p else 0
                expected = p if y == 0 else 1.0 - p
                loss = float(drawn[i] != y)
            p_col[i] = p
            losses += v
            learner_loss += loss
            expected_loss += expected
            best = self._best_loss()
            loss_col[i], expected_col[i] = loss, expected
            regret[i], expected_regret[i] = learner_loss - best, expected_loss - best
        if sequence is not None:  # the moves in the order they were played
            sequence.add_all(move for pair in zip(xs, ys, strict=True) for move in pair)
        self.learner_loss, self.expected_learner_loss = learner_loss, expected_loss
        self.t += k
        if self.t == self.rounds:
            self.phase = Phase.REVEAL if self._committed is not None else Phase.OVER
        return ExpertsBlock(
            self.t - k + 1, np.array(xs, dtype=np.int64), np.ones(k, dtype=np.bool_),
            np.array(advice), np.ones(k, dtype=np.bool_), weights, has_weights, p_col,
            np.array(ys, dtype=np.int64), np.array(costs), np.array(drawn, dtype=np.int64),
            np.array(loss_col), np.array(expected_col), np.array(regret),
            np.array(expected_regret))

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
        return self._best_loss() if self.t else 0.0

    def _best_loss(self) -> float:
        """min_i L_i (the losses are never nan, and never -0.0: they start at +0.0)."""
        if self.d <= SMALL_D:
            return min(self.expert_losses.tolist())
        return float(_minimum(self.expert_losses))

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
        u = self._draws.random()
        w, advice = self._weights, self._advice
        if w is not None:
            expected = _dot(w, costs)
            drawn = draw_index(w, u)
            loss = float(costs[drawn])
            p = _dot(w, advice) if advice is not None else None
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
        best = self._best_loss()
        record = ExpertsRecord(
            self.t, self._x, advice, w, p, label, costs, drawn, loss,
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
        elif self.phase is not Phase.ANSWER:
            self._expect(Phase.ANSWER, LEARNER, move)

    def _fail(self, error: MoveError) -> Any:
        if self.phase is not Phase.OVER:
            self.status, self.message, self.phase = error.status, error.message, Phase.OVER
        raise error
