"""Lower bounds of the experts game and of agnostic learning: i.i.d. random costs
(Cesa-Bianchi & Lugosi Thm 3.7) and random labels down a shattered tree (UML Thm 21.10's
lower bound)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from littlestone.adversaries.base import Adversary, register
from littlestone.games import commitment
from littlestone.games.classes import FiniteClass
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.games.ldim import LDIM_BUDGET, LdimSolver, solver_within_budget, too_large

FloatArray = NDArray[np.float64]

__all__ = ["NoisyTree", "RandomCosts", "expected_block_regret", "expected_min_binomial",
           "random_costs_regret"]

#: Cost vectors drawn at a time.
BLOCK = 1024


def _binomial_pmf(n: int, q: float) -> FloatArray:
    """P(Bin(n, q) = j) for j = 0..n, from log-gamma (no scipy)."""
    j = np.arange(n + 1)
    log_comb = np.array([math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                         for k in range(n + 1)])
    if q in (0.0, 1.0):
        out = np.zeros(n + 1)
        out[0 if q == 0.0 else n] = 1.0
        return out
    return np.exp(log_comb + j * math.log(q) + (n - j) * math.log1p(-q))  # type: ignore[no-any-return]  # numpy's exp


def expected_min_binomial(n: int, d: int, q: float = 0.5) -> float:
    """E[min of d independent Bin(n, q)] = sum_{k=1}^{n} P(Bin(n, q) >= k)^d.

    >>> expected_min_binomial(1, 2)  # min of two fair bits: 1 with probability 1/4
    0.25
    """
    pmf = _binomial_pmf(n, q)
    tail = np.cumsum(pmf[::-1])[::-1]  # tail[k] = P(L >= k)
    return float(np.sum(np.clip(tail[1:], 0.0, 1.0) ** d))


def random_costs_regret(rounds: int, d: int, q: float = 0.5) -> float:
    """Every learner's expected regret against i.i.d. Bernoulli(q) costs: its expected
    loss is q T whatever it plays, the best expert's E[min_i L_i]; ~ sqrt((T/2) ln d)
    for q = 1/2 as T, then d, grow (Cesa-Bianchi & Lugosi Thm 3.7).

    >>> round(random_costs_regret(1000, 2), 3)  # E|L_1 - L_2| / 2 ~ sqrt(T / pi) / 2
    8.92
    """
    return q * rounds - expected_min_binomial(rounds, d, q)


@register
class RandomCosts(Adversary):
    """Independent Bernoulli(q) costs for d free experts: every learner's expected regret is
    q T - E[min_i L_i] ~ sqrt((T/2) ln d), the lower bound of Cesa-Bianchi & Lugosi
    Thm 3.7 (``forcing``; ``constant`` = forcing / sqrt(T ln d), -> 1/sqrt(2)).

    Oblivious: the costs are drawn from its seed, and it commits to the whole sequence
    before round 1 (games.commitment.SequenceHash), as ``noisy`` does. Whatever the
    learner's weights, its expected loss each round is q, while the best of d random
    walks stays about sqrt((T/2) ln d) below qT; Hedge's sqrt(2 T ln d) is within a
    factor 2 of it (d, T large).

    >>> adversary = RandomCosts()
    >>> adversary.start(GameSpec("experts", 1000, experts=2), seed=0)
    >>> round(adversary.forcing, 3), round(adversary.constant, 3)
    (8.92, 0.339)
    >>> sorted(set(adversary.costs(np.array([0.5, 0.5])).tolist())) in ([0.0], [1.0], [0.0, 1.0])
    True
    """

    id = "random-costs"
    games = frozenset({EXPERTS})
    oblivious = True

    def __init__(self, q: float = 0.5) -> None:
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"q={q} must be in [0, 1]")
        self.q = q
        self.forcing = 0.0
        self.constant = 0.0
        self._rng = np.random.default_rng(0)
        self._d = 0
        self._rounds = 0
        self._block = np.zeros((0, 0))
        self._next = 0
        self._salt = b""
        self._digest = b""

    def unsupported(self, game: GameSpec) -> str | None:
        if game.hclass is not None:
            return "it plays d free experts (--experts D), not a class's hypotheses"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._d, self._rounds = game.n_experts, game.rounds
        self._rng = np.random.default_rng(seed)
        self._salt = self._rng.bytes(commitment.MIN_SALT_BYTES)
        self.forcing = random_costs_regret(game.rounds, self._d, self.q)
        scale = math.sqrt(game.rounds * math.log(self._d)) if self._d > 1 else 0.0
        self.constant = self.forcing / scale if scale else 0.0
        state = self._rng.bit_generator.state  # commit: play the sequence once, then rewind
        sequence = commitment.SequenceHash(f"experts:d={self._d}")
        self._block, self._next = np.zeros((0, self._d)), 0
        for _ in range(game.rounds):
            sequence.add(self._draw())
        self._digest = sequence.digest(self._salt)
        self._rng.bit_generator.state = state
        self._block, self._next = np.zeros((0, self._d)), 0

    def _draw(self) -> FloatArray:
        if self._next == len(self._block):
            self._block = (self._rng.random((BLOCK, self._d)) < self.q).astype(np.float64)
            self._next = 0
        row: FloatArray = self._block[self._next]
        self._next += 1
        return row

    def commitment(self) -> bytes:
        return self._digest

    def reveal(self) -> tuple[Any, bytes]:
        return None, self._salt

    def advice(self) -> None:
        return None

    def costs(self, answer: FloatArray | float) -> FloatArray:
        return self._draw().copy()


def expected_block_regret(n: int) -> float:
    """E[n/2 - min(B, n - B)] = E|B - n/2|, B ~ Bin(n, 1/2): the regret one block of n fair
    labels on one instance forces.

    >>> expected_block_regret(1), expected_block_regret(2)
    (0.5, 0.5)
    """
    pmf = _binomial_pmf(n, 0.5)
    return float(np.sum(pmf * np.abs(np.arange(n + 1) - n / 2)))


@register
class NoisyTree(Adversary):
    """Fair random labels down a shattered tree: every learner's expected regret against
    the class is sum_k E|B_k - n_k/2| ~ sqrt(Ldim(H) T / (2 pi)) = Omega(sqrt(Ldim(H) T))
    (``forcing``; the lower bound of agnostic online learning, UML Thm 21.10).

    The T rounds are cut into L = Ldim(H) blocks (``depth`` fewer) of n_k ~ T/L rounds.
    Block k shows one instance, the one that splits the version space V optimally (the
    shattered tree of the Ldim cache), with i.i.d. fair labels; then V moves to the side
    of the block's majority label (1 on a tie). The learner loses T/2 in expectation
    whatever it does, while the hypothesis at the end of the path loses only each
    block's minority. The experts game over a class (labels need not be realizable).
    Oblivious: the sequence follows from its seed, and it commits to it.

    >>> from littlestone.games.classes import make_class
    >>> adversary = NoisyTree()
    >>> adversary.start(GameSpec("experts", 100, make_class("thresholds:n=7")), seed=0)
    >>> adversary.blocks, round(adversary.forcing, 3)
    ([34, 33, 33], 6.928)
    """

    id = "noisy-tree"
    games = frozenset({EXPERTS})
    oblivious = True
    slow_moves = True

    def __init__(self, depth: int | None = None, budget: int = LDIM_BUDGET) -> None:
        if depth is not None and depth < 1:
            raise ValueError(f"depth={depth} must be >= 1")
        self.depth, self.budget = depth, budget
        self.forcing = 0.0
        self.blocks: list[int] = []
        self._solver: LdimSolver | None = None
        self._rng = np.random.default_rng(0)
        self._plan: list[tuple[int, int]] = []
        self._t = 0
        self._salt = b""
        self._digest = b""

    def unsupported(self, game: GameSpec) -> str | None:
        if not isinstance(game.hclass, FiniteClass):
            return "it plays the experts game over a finite class (--class)"
        return too_large(game.hclass) or super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        assert isinstance(game.hclass, FiniteClass)
        self._solver, ldim = solver_within_budget(game.hclass, self.budget, self.id)
        depth = max(1, min(ldim, self.depth or ldim, game.rounds or 1))
        base, extra = divmod(game.rounds, depth)
        self.blocks = [base + (k < extra) for k in range(depth)] if ldim else [game.rounds]
        self._rng = np.random.default_rng(seed)
        self._salt = self._rng.bytes(commitment.MIN_SALT_BYTES)
        plan: list[tuple[int, int]] = []  # (instance, label) of every round
        v = self._solver.full
        for n in self.blocks:
            if ldim == 0 or self._solver.ldim(v, self.budget) == 0:
                x = 0  # nothing splits V: every hypothesis errs alike
            else:
                x, _, _ = self._solver.best_split(v, self.budget)
            labels = self._rng.integers(0, 2, n)
            plan.extend((x, int(y)) for y in labels)
            majority = 1 if 2 * int(labels.sum()) >= n else 0
            side = self._solver.split(v, x)[majority]
            v = side or v
        self._plan = plan
        self.forcing = sum(expected_block_regret(n) for n in self.blocks) if ldim else 0.0
        sequence = commitment.SequenceHash(game.hclass.spec)
        for x, y in plan:
            sequence.add(x)
            sequence.add(y)
        self._digest = sequence.digest(self._salt)
        self._t = 0

    def commitment(self) -> bytes:
        return self._digest

    def reveal(self) -> tuple[Any, bytes]:
        return None, self._salt

    def instance(self) -> int:
        x = self._plan[self._t][0]
        return x

    def label(self, x: Any, p: float) -> int:
        y = self._plan[self._t][1]
        self._t += 1
        return y
