"""The referee of the mistake-bound game, as a sans-I/O state machine (docs/design.md 1.1).

The referee never calls a player: a driver feeds it moves and it returns records.
Each round::

    referee.instance(x)     # the adversary's instance, checked to lie in X
    referee.prediction(p)   # the learner's p in [0, 1] (probability of predicting 1)
    referee.label(y)        # the adversary's label: realizability checked, the learner's
                            # coin flipped by the referee, the RoundRecord returned

Before round 1 the adversary may :meth:`~MistakeBoundReferee.commit` to a target; after
round T it then :meth:`~MistakeBoundReferee.reveal`\\ s it and the referee checks every
label against it. On an infinite class (halfspaces), whose version space the referee
cannot hold, the adversary always reveals a target after round T: the committed one, or
(an adaptive adversary) a witness; the referee checks every label and margin against it.
On ``halfspaces:...,agnostic=true`` the labels are free and the revealed target is only
measured: its total hinge deficiency and mistakes go into the result (the non-separable
game of the Perceptron notes).

A move that breaks the rules raises a :class:`~littlestone.games.errors.MoveError` and ends the
game with that status, recorded against the player who made it.

>>> from littlestone.games.classes import make_class
>>> ref = MistakeBoundReferee(make_class("thresholds:n=4"), rounds=2, seed=0)
>>> ref.instance(1)
1
>>> ref.prediction(1.0)
>>> ref.label(0).mistake
True
>>> _ = ref.instance(3); ref.prediction(0.0)
>>> ref.label(1)
Traceback (most recent call last):
...
littlestone.games.errors.RuleViolation: label 1 on instance 3 empties the version space
>>> ref.result().status
'rule_violation:adversary:empty_version_space'
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.games.classes import (
    UNIT_TOLERANCE,
    FiniteClass,
    HalfspaceClass,
    HypothesisClass,
    VersionSpace,
)
from littlestone.games.coin import coin_for
from littlestone.games.commitment import MIN_SALT_BYTES, digest
from littlestone.games.errors import IllegalMove, MoveError, OutOfTurn, RuleViolation
from littlestone.games.game import MISTAKE_BOUND, GameResult, RoundRecord

__all__ = ["COIN_BLOCK", "MARGIN_TOLERANCE", "MistakeBoundReferee", "Phase", "check_label",
           "check_probability", "faulted_prediction"]

#: How many coin flips the referee draws from its generator at a time.
COIN_BLOCK = 4096
#: Rounds of history checked at a time against a revealed target.
CHECK_CHUNK = 1 << 13
#: Slack on the margin check of a revealed halfspace target (float rounding).
MARGIN_TOLERANCE = 1e-9

LEARNER = "learner"
ADVERSARY = "adversary"
_new_record = tuple.__new__  # builds a NamedTuple record without the keyword machinery


class Phase(enum.Enum):
    """Whose move the referee waits for."""

    INSTANCE = "instance"
    PREDICTION = "prediction"
    LABEL = "label"
    REVEAL = "reveal"
    OVER = "over"


def check_probability(p: object) -> float:
    """p as a float in [0, 1], or IllegalMove by the learner."""
    if isinstance(p, bool) or not isinstance(p, int | float | np.integer | np.floating):
        raise IllegalMove(LEARNER, "p_type", f"prediction {p!r} is not a number")
    value = float(p)
    if not 0.0 <= value <= 1.0:  # also rejects nan
        raise IllegalMove(LEARNER, "p_range", f"prediction {value} is outside [0, 1]")
    return value


def faulted_prediction(y: int) -> float:
    """The p a round the learner faulted is scored with (late or illegal, PROTOCOL.md 6):
    a mistake whatever its coin, p = 1 - y.

    >>> faulted_prediction(1), faulted_prediction(0)
    (0.0, 1.0)
    """
    return 1.0 - y


def check_label(y: object) -> int:
    """y as an int in {0, 1}, or IllegalMove by the adversary."""
    if isinstance(y, bool) or not isinstance(y, int | np.integer) or y not in (0, 1):
        raise IllegalMove(ADVERSARY, "label_range", f"label {y!r} is not 0 or 1")
    return int(y)


class MistakeBoundReferee:
    """Referee of one mistake-bound game of ``rounds`` rounds on class ``hclass``.

    ``seed`` is the key of the referee's own coin (:class:`~littlestone.games.coin.Coin`;
    an int stands for a key derived from it), which flips the learner's coin:
    yhat_t = [u_t < p_t] with u_t uniform in [0, 1), so p in {0, 1} is deterministic.
    ``history`` is where an infinite class's instances are kept for the final check: an
    object that takes rows in order by ``history[t] = x`` or ``history[t:u] = xs`` and gives
    them back by ``history[t:u]`` (by default an in-memory ``rounds`` x d array).
    """

    def __init__(self, hclass: HypothesisClass, rounds: int, seed: int | bytes,
                 history: Any = None) -> None:
        self.hclass = hclass
        self.rounds = rounds
        self.t = 0
        self.phase = Phase.INSTANCE if rounds > 0 else Phase.OVER
        self.status = "complete"
        self.message = ""
        self.mistakes = 0
        self.expected_mistakes = 0.0
        self._draws = coin_for(seed)
        self._coins: list[float] = []
        self._coin = COIN_BLOCK
        #: V_t, for a finite class (infinite classes are checked by commit and reveal).
        self.version_space: VersionSpace | None = (
            hclass.version_space() if isinstance(hclass, FiniteClass) else None
        )
        self._queued_x: Sequence[Any] | NDArray[np.float64] = ()
        self.last_block: tuple[int, Any, Any, Any, Any] | None = None
        #: The target revealed after the last round (checked), if one was.
        self.revealed: Any = None
        #: On an agnostic class, the revealed target's total hinge deficiency TD_margin
        #: and its number of mistakes, measured at the reveal.
        self.hinge_deficiency: float | None = None
        self.target_mistakes = 0
        self._queued_y: list[int] = []
        self._queue_next = 0
        self._committed: bytes | None = None
        self._x: Any = None
        self._p = 0.0
        self._faulted = False
        # An infinite class has no version space to hold: the adversary reveals a target
        # after the last round (committed before round 1 if it is oblivious, a witness if
        # it is adaptive), checked against every instance and label kept here.
        self._needs_target = isinstance(hclass, HalfspaceClass)
        self._history_x: NDArray[np.float64] | None = None
        self._history_y: NDArray[np.int8] | None = None
        if self._needs_target:
            # the driver may hand in the storage (a file-backed memmap keeps memory flat)
            self._history_x = (history if history is not None
                               else np.empty((rounds, hclass.n_features)))
            self._history_y = np.empty(rounds, dtype=np.int8)

    # -- the moves -------------------------------------------------------------------

    def commit(self, commitment: bytes) -> None:
        """The adversary's commitment to its target, before round 1."""
        if self.t != 0 or self.phase is not Phase.INSTANCE or self._committed is not None:
            self._fail(OutOfTurn(ADVERSARY, "commit", "commit only before round 1"))
        if not isinstance(commitment, bytes) or len(commitment) != 32:
            self._fail(IllegalMove(ADVERSARY, "commitment", "a commitment is 32 bytes (SHA-256)"))
        self._committed = commitment

    def instance(self, x: object) -> Any:
        """The adversary's instance for round t+1; returns it in canonical form."""
        if self.phase is not Phase.INSTANCE:
            self._out_of_turn(ADVERSARY, "instance")
        try:
            self._x = self.hclass.check_instance(x)
        except ValueError as exc:
            self._fail(RuleViolation(ADVERSARY, "instance_domain", str(exc)))
        self.phase = Phase.PREDICTION
        return self._x

    def prediction(self, p: object) -> None:
        """The learner's probability of predicting 1."""
        if self.phase is not Phase.PREDICTION:
            self._out_of_turn(LEARNER, "prediction")
        try:
            self._p = check_probability(p)
        except MoveError as exc:
            self._fail(exc)
        self.phase = Phase.LABEL

    def prediction_fault(self) -> None:
        """The learner faulted this round (late or illegal, PROTOCOL.md 6): the round is
        scored as a mistake, p = 1 - y, whatever the label. The adversary is shown 1/2."""
        if self.phase is not Phase.PREDICTION:
            self._out_of_turn(LEARNER, "prediction")
        self._faulted = True
        self._p = 0.5
        self.phase = Phase.LABEL

    def label(self, y: object) -> RoundRecord:
        """The adversary's label; scores the round and returns its record."""
        if self.phase is not Phase.LABEL:
            self._out_of_turn(ADVERSARY, "label")
        try:
            label = check_label(y)
        except MoveError as exc:
            self._fail(exc)
        if self._faulted:
            self._faulted, self._p = False, faulted_prediction(label)
        x = self._x
        if self.version_space is not None:
            self._restrict(x, label)
        elif self._history_x is not None and self._history_y is not None:
            self._history_x[self.t] = x
            self._history_y[self.t] = label
        return self._score(x, self._p, label)

    def queue(self, instances: Sequence[Any], labels: Sequence[int]) -> None:
        """An oblivious adversary's next rounds, given in advance and validated now.

        The adversary of an oblivious game does not look at p_t, so it may hand over its
        instances and labels in blocks; each round is then played by
        :meth:`queued_round` with the learner's p and produces the same record as the
        three moves would. Only at the start of a round, with nothing left queued.
        """
        if self.phase is not Phase.INSTANCE or self._queue_next < len(self._queued_y):
            self._out_of_turn(ADVERSARY, "queue")
        if len(instances) != len(labels) or self.t + len(labels) > self.rounds:
            self._fail(IllegalMove(ADVERSARY, "queue", "queue as many instances as labels, "
                                   "within the rounds left"))
        ys = list(labels)
        try:
            array = np.asarray(ys)
        except (TypeError, ValueError):  # ragged: checked one by one below
            array = np.empty(0, dtype=object)
        if not (array.dtype.kind in "iu" and bool(np.all((array == 0) | (array == 1)))):
            try:
                ys = [check_label(y) for y in ys]
            except MoveError as exc:
                self._fail(exc)
        if isinstance(self.hclass, HalfspaceClass):
            try:
                xs = np.asarray(instances, dtype=np.float64)
            except (TypeError, ValueError):
                self._fail(RuleViolation(ADVERSARY, "instance_domain", "instances are not vectors"))
            if xs.shape != (len(ys), self.hclass.d) or not np.all(
                np.abs(np.einsum("ij,ij->i", xs, xs) - 1.0) <= 2 * UNIT_TOLERANCE
            ):
                self._fail(RuleViolation(ADVERSARY, "instance_domain",
                                         "a queued instance is not a unit vector of R^d"))
            assert self._history_x is not None and self._history_y is not None
            self._history_x[self.t : self.t + len(ys)] = xs
            self._history_y[self.t : self.t + len(ys)] = ys
            self._queued_x = xs
        else:
            try:
                self._queued_x = [self.hclass.check_instance(x) for x in instances]
            except ValueError as exc:
                self._fail(RuleViolation(ADVERSARY, "instance_domain", str(exc)))
        self._queued_y = ys
        self._queue_next = 0

    def queued_round(self, p: object) -> RoundRecord:
        """Play the next queued round with the learner's p; returns its record.

        The same rules as :meth:`instance`, :meth:`prediction` and :meth:`label` (the
        queued moves were validated by :meth:`queue`), written out for the local
        driver's hot loop.
        """
        i = self._queue_next
        if self.phase is not Phase.INSTANCE or i >= len(self._queued_y):
            self._out_of_turn(LEARNER, "prediction")
        self._queue_next = i + 1
        if type(p) is not float or not 0.0 <= p <= 1.0:  # the common case needs no call
            self.phase = Phase.PREDICTION
            p = self._check_prediction(p)
        x = self._x = self._queued_x[i]
        y = self._queued_y[i]
        if self.version_space is not None:
            self._restrict(x, y)
        return self._score(x, p, y)

    def score_queued(
        self, predictions: Sequence[object], records: bool = True
    ) -> list[RoundRecord]:
        """Play the next ``len(predictions)`` queued rounds at once, vectorised.

        The learner's predictions for queued rounds (it was shown each x_t, answered p_t,
        then was told the queued y_t): the same checks, coins and records as that many
        :meth:`queued_round` calls, in one pass. A bad p or a label that empties the version
        space ends the game at its round, after the rounds before it are scored.
        With ``records=False`` no records are built (the scores are kept all the same).
        """
        start, n = self._queue_next, len(predictions)
        if self.phase is not Phase.INSTANCE or start + n > len(self._queued_y):
            self._out_of_turn(LEARNER, "prediction")
        ps = list(predictions)
        bad_p = n  # the first round whose p is not a number in [0, 1]
        if not set(map(type, ps)) <= {float}:
            for i, p in enumerate(ps):
                if isinstance(p, bool) or not isinstance(p, int | float | np.integer | np.floating):
                    bad_p = i
                    break
            ps = [float(p) for p in ps[:bad_p]]  # type: ignore[arg-type]  # numbers, checked
        pa = np.array(ps, dtype=np.float64)
        in_range = (pa >= 0.0) & (pa <= 1.0)  # also rejects nan
        if not in_range.all():
            bad_p = min(bad_p, int(np.argmin(in_range)))
        bad_label = None  # the first round whose label empties the version space
        if self.version_space is not None:
            xs, ys = self._queued_x, self._queued_y
            for i in range(start, start + bad_p):
                if self.version_space.restrict(xs[i], ys[i]) == 0:
                    bad_label = i - start
                    break
        scored = self._score_many(start, pa[: bad_p if bad_label is None else bad_label], records)
        if bad_label is not None:
            self._fail(RuleViolation(
                ADVERSARY, "empty_version_space",
                f"label {self._queued_y[start + bad_label]} on instance "
                f"{self._queued_x[start + bad_label]} empties the version space",
            ))
        if bad_p < n:
            self._queue_next = start + bad_p + 1
            self._check_prediction(predictions[bad_p])
        return scored

    def _score_many(self, start: int, ps: NDArray[np.float64], records: bool) -> list[RoundRecord]:
        """Vectorised :meth:`_score` of queued rounds start, start + 1, ... with these p."""
        n = len(ps)
        if n == 0:
            return []
        coins = np.empty(n)
        filled = 0
        while filled < n:
            if self._coin == COIN_BLOCK:
                self._coins = self._draws.random(COIN_BLOCK).tolist()
                self._coin = 0
            take = min(n - filled, COIN_BLOCK - self._coin)
            coins[filled : filled + take] = self._coins[self._coin : self._coin + take]
            self._coin += take
            filled += take
        ys = np.array(self._queued_y[start : start + n], dtype=np.int64)
        drawn = (coins < ps).astype(np.int64)
        mistakes = drawn != ys
        losses = np.where(ys == 1, 1.0 - ps, ps)
        # running totals summed in round order, as one round at a time would
        running_m = np.cumsum(mistakes) + self.mistakes
        running_e = np.cumsum(np.concatenate(([self.expected_mistakes], losses)))[1:]
        t0 = self.t
        self.t += n
        self.mistakes = int(running_m[-1])
        self.expected_mistakes = float(running_e[-1])
        self._queue_next = start + n
        self._x = self._queued_x[start + n - 1]
        if self.t == self.rounds:
            self.phase = Phase.REVEAL if self.reveal_due else Phase.OVER
        xs = self._queued_x[start : start + n]
        #: The rounds just scored, as columns (first t, x, p, y, prediction): for logs.
        self.last_block = (t0 + 1, xs, ps, ys, drawn)
        if not records:
            return []
        return [
            _new_record(RoundRecord, row)
            for row in zip(range(t0 + 1, t0 + n + 1), xs, ps.tolist(), ys.tolist(),
                           drawn.tolist(), mistakes.tolist(), losses.tolist(),
                           running_m.tolist(), running_e.tolist(), strict=True)
        ]

    def _check_prediction(self, p: object) -> float:
        try:
            return check_probability(p)
        except MoveError as exc:
            self._fail(exc)
            raise  # pragma: no cover - _fail raises

    def _score(self, x: Any, p: float, y: int) -> RoundRecord:
        """Flip the learner's coin, score the round, advance to the next."""
        c = self._coin
        if c == COIN_BLOCK:
            self._coins = self._draws.random(COIN_BLOCK).tolist()
            c = 0
        drawn = 1 if self._coins[c] < p else 0
        self._coin = c + 1
        mistake = drawn != y
        loss = 1.0 - p if y else p
        t = self.t = self.t + 1
        m = self.mistakes = self.mistakes + mistake
        e = self.expected_mistakes = self.expected_mistakes + loss
        if t == self.rounds:
            self.phase = Phase.REVEAL if self.reveal_due else Phase.OVER
        else:
            self.phase = Phase.INSTANCE
        return _new_record(RoundRecord, (t, x, p, y, drawn, mistake, loss, m, e))

    @property
    def reveal_due(self) -> bool:
        """Whether the adversary must reveal a target after the last round: it committed
        to one, or the class is infinite (an adaptive adversary then reveals a witness)."""
        return self._committed is not None or self._needs_target

    def reveal(self, target: object, salt: bytes = b"") -> None:
        """The adversary's target after the last round (and the salt of its commitment).

        A committed target must match the commitment; either way every label must agree
        with it (and, on halfspaces, every instance keep the margin)."""
        if self.phase is not Phase.REVEAL:
            self._out_of_turn(ADVERSARY, "reveal")
        committed = self._committed is not None
        if committed and (not isinstance(salt, bytes) or len(salt) < MIN_SALT_BYTES):
            self._fail(IllegalMove(ADVERSARY, "salt", f"salt must be >= {MIN_SALT_BYTES} bytes"))
        try:
            canonical = self._check_target(target)
            matches = not committed or digest(self.hclass, canonical, salt) == self._committed
        except ValueError as exc:
            self._fail(RuleViolation(ADVERSARY, "reveal", f"revealed target: {exc}"))
        if not matches:
            self._fail(RuleViolation(ADVERSARY, "commitment", "revealed target does not match "
                                     "the commitment"))
        self._check_labels(canonical)
        self.revealed = canonical
        self.phase = Phase.OVER

    def abort(self, status: str, message: str = "") -> None:
        """End the game from outside (a crash, a disconnect) with the given status."""
        if self.phase is not Phase.OVER:
            self.status, self.message, self.phase = status, message, Phase.OVER

    # -- results ---------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self.phase is Phase.OVER

    @property
    def version_space_size(self) -> int | None:
        """|V_t| for a finite class, else ``None``."""
        return None if self.version_space is None else self.version_space.size

    def result(self) -> GameResult:
        """The scores so far; ``status`` is ``incomplete`` while the game is not over.

        After the reveal of a halfspace game, ``extra`` holds the revealed unit ``target``;
        of an agnostic one, also its ``hinge_deficiency`` and ``target_mistakes``, and the
        regret is against it."""
        status = self.status if self.over else "incomplete"
        result = GameResult(
            game=MISTAKE_BOUND,
            status=status,
            rounds=self.t,
            mistakes=self.mistakes,
            expected_mistakes=self.expected_mistakes,
            regret=self.mistakes,
            expected_regret=self.expected_mistakes,
            message=self.message,
        )
        if isinstance(self.hclass, HalfspaceClass) and self.revealed is not None:
            # the revealed unit w*, for a bound that depends on it (the modified
            # Perceptron's, through cos(w*, w_1))
            result.extra["target"] = [float(v) for v in self.revealed]
        if self.hinge_deficiency is not None:  # regret against the revealed comparator
            result.regret -= self.target_mistakes
            result.expected_regret -= self.target_mistakes
            result.extra.update(hinge_deficiency=self.hinge_deficiency,
                                target_mistakes=self.target_mistakes)
        return result

    # -- rules -------------------------------------------------------------------------

    def _restrict(self, x: int, label: int) -> None:
        """V_{t+1} = {h in V_t : h(x) = y}, which must stay non-empty (realizability)."""
        assert self.version_space is not None
        if self.version_space.restrict(x, label) == 0:
            self._fail(RuleViolation(
                ADVERSARY, "empty_version_space",
                f"label {label} on instance {x} empties the version space",
            ))

    def _check_target(self, target: object) -> Any:
        if isinstance(self.hclass, HalfspaceClass):
            return self.hclass.check_target(target)
        assert isinstance(self.hclass, FiniteClass)
        if isinstance(target, bool) or not isinstance(target, int | np.integer):
            raise ValueError(f"{target!r} is not a hypothesis index")
        if not 0 <= int(target) < self.hclass.size:
            raise ValueError(f"hypothesis {target} is not in 0..{self.hclass.size - 1}")
        return int(target)

    def _check_labels(self, target: Any) -> None:
        if isinstance(self.hclass, HalfspaceClass) and self.hclass.agnostic:
            self._measure_target(target)
        elif isinstance(self.hclass, HalfspaceClass):
            assert self._history_x is not None and self._history_y is not None
            for start in range(0, self.t, CHECK_CHUNK):  # in chunks: the history may be a file
                stop = min(start + CHECK_CHUNK, self.t)
                margins = self._history_x[start:stop] @ target
                labels = self._history_y[start:stop] == 1
                wrong = np.flatnonzero((margins > 0) != labels)
                if wrong.size:
                    self._fail(RuleViolation(ADVERSARY, "target_label", f"round "
                                             f"{start + wrong[0] + 1}: the label disagrees with "
                                             "the revealed target"))
                thin = np.flatnonzero(np.abs(margins) < self.hclass.margin - MARGIN_TOLERANCE)
                if thin.size:
                    self._fail(RuleViolation(
                        ADVERSARY, "margin",
                        f"round {start + thin[0] + 1}: |<w, x>| = {abs(margins[thin[0]]):.6g} "
                        f"is below the margin {self.hclass.margin}",
                    ))
        elif self.version_space is not None and target not in self.version_space:
            self._fail(RuleViolation(ADVERSARY, "target_label", f"revealed hypothesis {target} "
                                     "disagrees with a label given"))

    def _measure_target(self, target: NDArray[np.float64]) -> None:
        """The non-separable game: labels are free, and the revealed unit w is measured:
        TD_G(w) = sum_t max(0, G - y_t <w, x_t>) (y_t in {-1, +1}, G the margin) and its
        mistakes, the rounds where [<w, x_t> > 0] is not the label."""
        assert isinstance(self.hclass, HalfspaceClass)
        assert self._history_x is not None and self._history_y is not None
        deficiency, mistakes = 0.0, 0
        for start in range(0, self.t, CHECK_CHUNK):  # in chunks: the history may be a file
            stop = min(start + CHECK_CHUNK, self.t)
            scores = self._history_x[start:stop] @ target
            labels = self._history_y[start:stop] == 1
            margins = np.where(labels, scores, -scores)
            deficiency += float(np.maximum(0.0, self.hclass.margin - margins).sum())
            mistakes += int(np.count_nonzero((scores > 0) != labels))
        self.hinge_deficiency, self.target_mistakes = deficiency, mistakes

    def _out_of_turn(self, role: str, move: str) -> None:
        expected = self.phase.value
        self._fail(OutOfTurn(role, move, f"{move} out of turn: the referee expects {expected}"))

    def _fail(self, error: MoveError) -> Any:
        if self.phase is not Phase.OVER:
            self.status, self.message, self.phase = error.status, error.message, Phase.OVER
        raise error
