"""docs/theory.md's online-to-batch rows (the PAC notes): the longest survivor of a
mistake-bound learner is epsilon-good with probability >= 1 - delta (the Perceptron's on
halfspaces, M = 1/gamma^2, too: issue 45, item 3), and the Perceptron's random iterate
errs at most 1/(n gamma^2) in expectation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from littlestone.cli import main
from littlestone.games.classes import FiniteClass, HalfspaceClass, make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.pac import (
    FALSE_FAILURE,
    distribution,
    failure_allowance,
    longest_survivor,
    perceptron_passes,
    random_iterate,
    survivor_sample_size,
)
from littlestone.learners import LEARNERS

REPEAT = 60


def runs(spec: str, learner: str, dist: str, epsilon: float, delta: float,
         bound: float | None = None) -> tuple[np.ndarray, list[int], float]:
    hclass = make_class(spec)
    assert isinstance(hclass, FiniteClass)
    if bound is None:
        probe = LEARNERS.make(learner)
        probe.start(GameSpec(MISTAKE_BOUND, 1, hclass), 0)
        printed = probe.bound(GameSpec(MISTAKE_BOUND, 1, hclass))
        assert printed is not None
        bound = printed.value
    rng = np.random.default_rng(len(spec) + len(learner))
    probs = distribution(hclass, dist)
    out = [longest_survivor(LEARNERS.make(f"conservative:of={learner}"), hclass,
                            int(rng.integers(hclass.size)), probs, epsilon, delta, bound, rng,
                            seed=i) for i in range(REPEAT)]
    return np.array([r.error for r in out]), [r.examples for r in out], bound


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "learner", "dist"), [
    ("thresholds:n=255", "halving", "uniform"), ("thresholds:n=255", "soa", "zipf"),
    ("monotone-disjunctions:n=8", "winnow", "uniform"),
    ("monotone-disjunctions:n=8", "elimination", "zipf"), ("singletons:n=60", "consistent", "zipf"),
])
def test_longest_survivor_is_epsilon_good_with_probability_one_minus_delta(spec, learner, dist):
    epsilon, delta = 0.1, 0.1
    errors, examples, bound = runs(spec, learner, dist, epsilon, delta)
    m = survivor_sample_size(epsilon, delta, bound)
    failures = int(np.sum(errors > epsilon))
    # P(error > epsilon) <= delta: a binomial count above delta R + 3 sd would refute it
    assert failures <= delta * REPEAT + 3 * math.sqrt(delta * (1 - delta) * REPEAT)
    assert max(examples) <= (math.floor(bound) + 1) * m
    assert errors.mean() <= epsilon


def test_a_survival_run_too_short_fails_the_guarantee():
    """The measurement can fail: with m = ceil(ln(2)/0.9) = 1 example in a row (the m of
    epsilon = 0.9 and M = 0), Consistent's output errs by more than 0.1 in most runs."""
    errors, _, _ = runs("singletons:n=60", "consistent", "zipf", 0.9, 0.5, bound=0)
    assert np.mean(errors > 0.1) > 0.5


@pytest.mark.parametrize(("d", "margin", "epsilon", "delta"), [
    (5, 0.3, 0.1, 0.1), (20, 0.2, 0.1, 0.05), (50, 0.4, 0.05, 0.1),
])
def test_perceptron_longest_survivor_on_halfspaces(capsys, d, margin, epsilon, delta):
    """``pac --conversion survivor`` on halfspaces: the Perceptron made conservative, M =
    floor(1/gamma^2), examples of margin >= gamma; no more failures (error > epsilon,
    estimated on 4000 fresh examples) in 25 runs than P <= delta allows (a 1e-9 tail),
    and no run past (M + 1) m examples. With m cut to 1 (M = 0, epsilon = 0.9: one
    survival), most outputs err by more than epsilon."""
    argv = ["pac", "--class", f"halfspaces:d={d},margin={margin}", "--learner", "perceptron",
            "--conversion", "survivor", "--epsilon", str(epsilon), "--delta", str(delta),
            "--repeat", "25", "--seed", str(d), "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert data["mode"] == "longest-survivor" and data["dist"] == "margin"
    assert data["mistake_bound"] == math.floor(1 / margin**2 + 1e-9)
    assert data["survival"] == survivor_sample_size(epsilon, delta, data["mistake_bound"])
    assert data["max_examples"] <= data["max_examples_bound"]
    assert data["failures"] * 25 <= failure_allowance(25, delta, FALSE_FAILURE)
    hclass = make_class(f"halfspaces:d={d},margin={margin}")
    assert isinstance(hclass, HalfspaceClass)
    rng = np.random.default_rng(d)
    short = [longest_survivor(LEARNERS.make("conservative:of=perceptron"), hclass,
                              hclass.sample_target(rng), None, 0.9, 0.5, 0, rng, seed=i)
             for i in range(20)]
    assert np.mean([r.error > epsilon for r in short]) > 0.5


@pytest.mark.parametrize(("d", "margin", "n"), [(5, 0.3, 50), (20, 0.2, 200), (50, 0.4, 100)])
def test_the_perceptron_cycled_through_a_sample_reaches_zero_training_error(d, margin, n):
    """The PAC notes: fed the sample S over and over, the Perceptron makes at most
    1/gamma_S^2 mistakes (gamma_S the margin of S against the target), so a pass without a
    mistake comes within floor(1/gamma_S^2) + 1 passes, and its hypothesis is then
    consistent with S: a consistency algorithm for halfspaces of margin gamma (3 seeds)."""
    hclass = make_class(f"halfspaces:d={d},margin={margin}")
    assert isinstance(hclass, HalfspaceClass)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        w_star = hclass.sample_target(rng)
        xs = hclass.sample_instances(rng, w_star, n)
        ys = xs @ w_star > 0
        gamma = float(np.min(np.abs(xs @ w_star)))
        assert gamma >= margin - 1e-12
        learner = LEARNERS.make("perceptron")
        learner.start(GameSpec(MISTAKE_BOUND, n, hclass), seed)
        passes, mistakes = perceptron_passes(learner, xs, ys, max_passes=10_000)
        assert mistakes <= 1 / gamma**2
        assert passes <= math.floor(1 / gamma**2) + 1
        assert all((learner.predict(x) == 1.0) == y for x, y in zip(xs, ys, strict=True))


@pytest.mark.parametrize("m", [1, 4, 25])
def test_the_pass_bound_is_met(m):
    """S = e_1 .. e_m, all labelled 1 (w* = (1, .., 1)/sqrt(m), gamma_S = 1/sqrt(m)): the
    first pass errs on every point (m = 1/gamma^2 mistakes: one fewer would be false) and
    the second is clean; at m = 1 that is 2 = 1/gamma^2 + 1 passes, so the notes' "+ 1"
    is needed."""
    hclass = make_class(f"halfspaces:d={m},margin={1 / math.sqrt(m) - 1e-9}")
    learner = LEARNERS.make("perceptron")
    learner.start(GameSpec(MISTAKE_BOUND, m, hclass), 0)
    passes, mistakes = perceptron_passes(learner, np.eye(m), np.ones(m, dtype=bool), 100)
    assert mistakes == m and passes == 2
    if m == 1:
        assert passes == 1 / (1 / math.sqrt(m)) ** 2 + 1


def test_pac_command_on_halfspaces_refuses_consistency(capsys):
    """A halfspace class is not counted: consistency is refused, not ignored."""
    assert main(["pac", "--class", "halfspaces:d=5,margin=0.3", "--learner", "perceptron",
                 "--conversion", "consistency"]) == 2
    err = capsys.readouterr().err
    assert "no counted class" in err and len(err.strip().splitlines()) == 1
    assert main(["pac", "--class", "halfspaces:d=5,margin=0", "--learner", "perceptron",
                 "--conversion", "survivor"]) == 2
    assert "no mistake bound" in capsys.readouterr().err


@pytest.mark.parametrize(("margin", "n"), [(0.3, 60), (0.3, 240), (0.5, 100)])
def test_perceptron_random_iterate_within_one_over_n_gamma_squared(margin, n):
    hclass = make_class(f"halfspaces:d=5,margin={margin}")
    assert isinstance(hclass, HalfspaceClass)
    rng = np.random.default_rng(n)
    results = [random_iterate(LEARNERS.make("perceptron"), hclass, n, rng, test=1500)
               for _ in range(12)]
    mean_error = float(np.mean([r[0] for r in results]))
    assert all(r[1] <= 1 / margin**2 for r in results)  # Novikoff, on every run
    assert mean_error <= 1 / (n * margin**2)
    # E[err(w_tau)] = E[M]/n: the errors of the iterates account for the mistakes
    assert mean_error == pytest.approx(np.mean([r[1] for r in results]) / n, abs=0.05)


def test_pac_command(capsys):
    assert main(["pac", "--class", "thresholds:n=63", "--learner", "halving", "--repeat", "20",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert data["mode"] == "longest-survivor" and data["mistake_bound"] == 6
    assert data["max_examples"] <= data["max_examples_bound"]
    assert main(["pac", "--class", "thresholds:n=63", "--learner", "hedge"]) == 2
    assert "not a deterministic learner" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--epsilon", "1.5"], "must be in (0, 1)"),
    (["--repeat", "0"], "--repeat must be >= 1"),
    (["--learner", "perceptron"], "no mistake bound"),
])
def test_pac_command_refuses_bad_input(capsys, argv, message):
    base = {"--class": "thresholds:n=15", "--learner": "halving"}
    for key, value in zip(argv[::2], argv[1::2], strict=True):
        base[key] = value
    args = ["pac"] + [item for pair in base.items() for item in pair]
    assert main(args) == 2
    assert message in capsys.readouterr().err
