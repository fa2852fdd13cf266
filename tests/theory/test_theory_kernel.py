"""docs/theory.md's kernel Perceptron and non-separable Perceptron rows: on
``quadratic:n=N`` the targets are not linearly separable in the input features (z, 1),
so the linear Perceptron errs on every cycle through the points forever, while the
degree-2 kernel Perceptron stops within (R ||v|| / gamma)^2; and the non-separable bound
R^2/gamma^2 + (2/gamma) TD_gamma(u) holds with TD measured on the played sequence. And
the notes' legality (issue 45): a kernel is legal iff every Gram matrix is positive
semidefinite; the learner refuses one that is not, with the reason."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.cli import main
from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.polynomial import QuadraticThresholds
from littlestone.learners import LEARNERS
from littlestone.learners.kernel import nonseparable_bound
from littlestone.local import play
from tests.support.agents_for_tests import FixedSequence, Spoiler


def certificate_bound(hclass: QuadraticThresholds, h: int) -> float:
    """(R ||v|| / gamma)^2 in the features (2, 2z, z^2) of K = (1 + <(z, 1), (z', 1)>)^2."""
    w, margin = hclass.certificate(h)  # over (z^2, z, 1)
    v = np.array([w[2] / 2, w[1] / 2, w[0]])
    radius = float(np.max(2 + hclass.points**2))  # ||(2, 2z, z^2)|| = 2 + z^2
    return (radius * float(np.linalg.norm(v)) / margin) ** 2


def cycling(hclass: QuadraticThresholds, h: int, cycles: int) -> FixedSequence:
    xs = list(range(hclass.domain_size)) * cycles
    labels = hclass.matrix()[h].astype(int).tolist() * cycles
    return FixedSequence(xs, labels)


@pytest.mark.slow
@pytest.mark.parametrize("n", [6, 10, 16])
def test_kernel_perceptron_within_the_target_s_bound(n):
    hclass = make_class(f"quadratic:n={n}")
    assert isinstance(hclass, QuadraticThresholds)
    game = GameSpec(MISTAKE_BOUND, 600, hclass)
    for seed in range(4):
        result = play(game, LEARNERS.make("kernel-perceptron"), ADVERSARIES.make("random-target"),
                      seed)
        assert result.complete and result.revealed is not None
        assert result.mistakes <= certificate_bound(hclass, int(result.revealed))
        if result.bound is not None:
            assert result.mistakes <= result.bound.value
        spoiled = play(game, LEARNERS.make("kernel-perceptron"), Spoiler(), seed)
        assert spoiled.bound is not None and spoiled.mistakes <= spoiled.bound.value


@pytest.mark.slow
@pytest.mark.parametrize("n", [5, 9])
def test_the_linear_perceptron_errs_every_cycle_and_the_kernel_one_stops(n):
    """An inside run away from both ends: no line through (z, 1) separates it, so every
    cycle through the points costs a linear classifier a mistake."""
    hclass = make_class(f"quadratic:n={n}")
    assert isinstance(hclass, QuadraticThresholds)
    h = next(i for i in range(hclass.size) if hclass.hypothesis(i) == f"1 <= i < {n - 1}")
    cycles = 300
    game = GameSpec(MISTAKE_BOUND, cycles * n, hclass)
    for linear in ("perceptron", "kernel-perceptron:kernel=linear"):
        result = play(game, LEARNERS.make(linear), cycling(hclass, h, cycles), 0)
        assert result.complete and result.mistakes >= cycles
    kernel = play(game, LEARNERS.make("kernel-perceptron"), cycling(hclass, h, cycles), 0)
    assert kernel.mistakes <= certificate_bound(hclass, h) < cycles


@pytest.mark.parametrize("spec", ["quadratic:n=12", "halfspaces:d=4,margin=0.3",
                                  "monotone-disjunctions:n=5"])
def test_the_dual_linear_perceptron_is_the_perceptron(spec):
    game = GameSpec(MISTAKE_BOUND, 300, make_class(spec))
    for seed in (0, 1):
        primal = play(game, LEARNERS.make("perceptron"), ADVERSARIES.make("random-target"), seed)
        dual = play(game, LEARNERS.make("kernel-perceptron:kernel=linear"),
                    ADVERSARIES.make("random-target"), seed)
        assert primal.mistakes == dual.mistakes


def test_non_separable_bound_holds_for_every_direction():
    """Freund & Schapire: for every unit u of R^2 and gamma > 0, the linear Perceptron's
    mistakes on quadratic targets are <= R^2/gamma^2 + (2/gamma) TD_gamma(u), TD over the
    whole played sequence; checked for 90 directions u, on several targets and seeds."""
    hclass = make_class("quadratic:n=14")
    game = GameSpec(MISTAKE_BOUND, 800, hclass)
    angles = np.linspace(0, 2 * math.pi, 90, endpoint=False)
    directions = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    tightest = math.inf
    for seed in range(4):
        rows: list[Any] = []
        result = play(game, LEARNERS.make("perceptron"), ADVERSARIES.make("random-target"), seed,
                      on_record=rows.append)
        features = np.array([hclass.encode(r.x) for r in rows])
        signs = np.array([2 * r.y - 1 for r in rows])
        radius = float(np.max(np.linalg.norm(features, axis=1)))
        for u in directions:
            value, _ = nonseparable_bound(signs * (features @ u), radius)
            assert result.mistakes <= value
            tightest = min(tightest, value / max(result.mistakes, 1))
    assert tightest < 20  # the best direction's bound is within a factor of the mistakes


def test_rbf_and_refusals():
    game = GameSpec(MISTAKE_BOUND, 300, make_class("quadratic:n=20"))
    result = play(game, LEARNERS.make("kernel-perceptron:kernel=rbf,scale=4"),
                  ADVERSARIES.make("random-target"), 0)
    assert result.complete and result.bound is not None and result.mistakes <= result.bound.value
    for bad in ("kernel-perceptron:kernel=cubic", "kernel-perceptron:degree=0",
                "kernel-perceptron:scale=0"):
        with pytest.raises(Exception, match="must"):
            LEARNERS.make(bad)


#: Kernel specs legal by theorem (sums and products of legal kernels; the Gaussian).
LEGAL = [("linear", 1, 1.0, 1.0), ("poly", 1, 0.0, 1.0), ("poly", 2, 1.0, 1.0),
         ("poly", 3, 0.5, 1.0), ("poly", 4, 0.0, 1.0), ("poly", 5, 2.0, 1.0),
         ("rbf", 2, 1.0, 0.5), ("rbf", 2, 1.0, 5.0)]
#: (offset + <u, v>)^degree with offset < 0: not positive semidefinite.
ILLEGAL = [(1, -0.5), (2, -1.0), (3, -0.1), (4, -2.0)]


def gram(kernel: str, points: np.ndarray, degree: int, offset: float, scale: float
         ) -> np.ndarray:
    """The Gram matrix, written out here from the definitions (not the module's)."""
    if kernel == "rbf":
        diff = points[:, None, :] - points[None, :, :]
        return np.exp(-scale * (diff**2).sum(axis=2))
    inner = points @ points.T
    return inner if kernel == "linear" else (offset + inner) ** degree


@pytest.mark.parametrize(("kernel", "degree", "offset", "scale"), LEGAL)
def test_a_legal_kernel_has_positive_semidefinite_gram_matrices(kernel, degree, offset, scale):
    """The halfspace notes, Def. 3.1: K is legal iff every Gram matrix is positive
    semidefinite. For each kernel spec the learner accepts, Gram matrices of random
    points (3 seeds; 5, 30 and 80 points in 1, 3 and 10 dimensions, in the cube and on
    the sphere) have no eigenvalue below -1e-9 of their largest entry."""
    LEARNERS.make(f"kernel-perceptron:kernel={kernel},degree={degree},offset={offset},"
                  f"scale={scale}")
    for seed, size, dim in [(0, 5, 1), (1, 30, 3), (2, 80, 10)]:
        rng = np.random.default_rng(seed)
        cube = rng.uniform(-1.5, 1.5, size=(size, dim))
        for points in (cube, cube / np.linalg.norm(cube, axis=1, keepdims=True)):
            matrix = gram(kernel, points, degree, offset, scale)
            assert np.linalg.eigvalsh(matrix)[0] >= -1e-9 * np.abs(matrix).max()


@pytest.mark.parametrize(("degree", "offset"), ILLEGAL)
def test_an_illegal_kernel_is_refused_with_the_reason(capsys, degree, offset):
    """(offset + <u, v>)^degree with offset < 0 is refused by ``play`` (one line, exit 2)
    with a Gram matrix that is not positive semidefinite; and such a matrix exists among
    the Gram matrices of random 1-D points in [-2 sqrt|offset|, 2 sqrt|offset|] (the
    check can fail: the same test passes the legal kernels above)."""
    spec = f"kernel-perceptron:kernel=poly,degree={degree},offset={offset}"
    assert main(["play", "--learner", spec, "--adversary", "random-target", "--class",
                 "quadratic:n=8", "--rounds", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a legal kernel" in err and "eigenvalue" in err and len(err.splitlines()) == 1
    rng = np.random.default_rng(degree)
    lowest = min(float(np.linalg.eigvalsh(gram(
        "poly", rng.uniform(-2, 2, size=(12, 1)) * math.sqrt(-offset), degree, offset, 1.0))[0])
        for _ in range(5))
    assert lowest < 0
