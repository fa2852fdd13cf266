"""The ``pac`` command: the PAC track played many times (games.pac): consistency implies
PAC, the longest survivor of a mistake-bound learner, the Perceptron's random iterate."""

from __future__ import annotations

import argparse
import math
import time
from typing import Any, cast

import numpy as np

from littlestone import learners
from littlestone.cli.common import emit
from littlestone.games.classes import FiniteClass, HalfspaceClass, HypothesisClass, make_class
from littlestone.games.concepts import CONCEPTS, make_concepts
from littlestone.games.errors import UsageError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.pac import (
    FALSE_FAILURE,
    HALFSPACE_TEST,
    consistency_run,
    distribution,
    failure_allowance,
    longest_survivor,
    occam_sample_size,
    random_iterate,
    survivor_sample_size,
)
from littlestone.learners.base import Learner

__all__ = ["pac"]

#: The examples of a random-iterate run when --examples is not given.
ITERATE_EXAMPLES = 200
#: Examples one run may draw at most (of a halfspace class: numbers, examples x d): a
#: tiny --epsilon or --delta asks for more than a run could ever take (epsilon = 1e-12:
#: 10^13 examples), and is refused up front rather than run for ever or out of memory.
EXAMPLES_MAX = 10_000_000
CONVERSIONS = ("consistency", "survivor")


def pac(args: argparse.Namespace) -> int:
    if not 0 < args.epsilon < 1 or not 0 < args.delta < 1:
        raise UsageError("pac: --epsilon and --delta must be in (0, 1)")
    if args.repeat < 1:
        raise UsageError("pac: --repeat must be >= 1")
    if not 0 <= args.q <= 1:
        raise UsageError("pac: --q must be in [0, 1]")
    name = args.hclass.partition(":")[0]
    hclass = make_concepts(args.hclass) if name in CONCEPTS else make_class(args.hclass)
    learner = learners.LEARNERS.make(args.learner)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    out: dict[str, object] = {"class": hclass.spec, "learner": learner.spec, "repeat": args.repeat}
    game = GameSpec(MISTAKE_BOUND, 1, hclass)
    if learner.unsupported(game):
        raise UsageError(f"pac: {learner.spec} cannot learn {hclass.spec}: "
                         f"{learner.unsupported(game)}")
    if isinstance(hclass, HalfspaceClass) and args.conversion == "consistency":
        raise UsageError(f"pac: {hclass.spec} is no counted class (consistency needs ln |H|; "
                         "try --conversion survivor)")
    if isinstance(hclass, HalfspaceClass) and args.conversion == "survivor":
        out.update(_survivor(args, hclass, learner, rng))
    elif isinstance(hclass, HalfspaceClass):
        out.update(_random_iterate(args, hclass, learner, rng))
    else:
        log_size = getattr(learner, "log_hypotheses", lambda _: None)(game)
        conversion = args.conversion or ("consistency" if log_size is not None else "survivor")
        if conversion == "consistency":
            if log_size is None:
                raise UsageError(f"pac: {learner.spec} does not output from a counted class "
                                 "(consistency needs ln |H|; try --conversion survivor)")
            out.update(_consistency(args, hclass, learner, log_size, rng))
        else:
            if not isinstance(hclass, FiniteClass):
                raise UsageError(f"pac: the longest survivor needs a class of games.classes, "
                                 f"not {hclass.spec}")
            out.update(_survivor(args, hclass, learner, rng))
    out["seconds"] = round(time.perf_counter() - started, 6)
    emit(out, args.json)
    return 0


def _within(examples: int, what: str = "examples") -> None:
    """Refuse a run of more than :data:`EXAMPLES_MAX` examples (``what``: of what)."""
    if examples > EXAMPLES_MAX:
        raise UsageError(f"pac: a run would take {examples:.3g} {what}, over the limit of "
                         f"{EXAMPLES_MAX:g}: raise --epsilon or --delta, or lower --examples")


def _draw_target(hclass: HypothesisClass, rng: np.random.Generator) -> Any:
    sample_target = getattr(hclass, "sample_target", None)
    if sample_target is not None:
        return sample_target(rng)
    assert isinstance(hclass, FiniteClass)
    return int(rng.integers(hclass.size))


def _distribution_fields(args: argparse.Namespace) -> dict[str, object]:
    return {"dist": args.dist, **({"q": args.q} if args.dist == "bernoulli" else {})}


def _consistency(args: argparse.Namespace, hclass: HypothesisClass, learner: Learner,
                 log_size: float, rng: np.random.Generator) -> dict[str, object]:
    bound = occam_sample_size(args.epsilon, args.delta, log_size)
    examples = bound if args.examples is None else args.examples
    _within(examples)
    probs = distribution(hclass, args.dist, q=args.q)
    runs = [consistency_run(cast(Learner, learner.clone()), hclass, _draw_target(hclass, rng),
                            probs, examples, rng, seed=i) for i in range(args.repeat)]
    errors = np.array([r.error for r in runs])
    allowed = failure_allowance(args.repeat, args.delta)
    return {
        "mode": "consistency", **_distribution_fields(args), "epsilon": args.epsilon,
        "delta": args.delta, "log_hypotheses": log_size, "sample_bound": bound,
        "bound_name": "m >= (1/epsilon)(ln|H| + ln(1/delta)) (consistency implies PAC, the "
                      "PAC notes Thm 1)",
        "examples": examples,
        "training_errors": max(r.training_errors for r in runs),
        "mean_error": float(errors.mean()),
        "error_quantile": float(np.quantile(errors, 1 - args.delta)),
        "failures": float(np.mean(errors > args.epsilon)),
        "failures_allowed": allowed / args.repeat,
        "failures_allowed_name": f"P(Binomial(repeat, delta) > allowed) <= {FALSE_FAILURE:g}: "
                                 "more refutes P(error > epsilon) <= delta",
    }


def _survivor(args: argparse.Namespace, hclass: FiniteClass | HalfspaceClass,
              learner: Learner, rng: np.random.Generator) -> dict[str, object]:
    """The longest survivor; on halfspaces the examples have the class's margin and each
    output's error is estimated on fresh ones (the Perceptron's M = 1/gamma^2)."""
    game = GameSpec(MISTAKE_BOUND, 1, hclass)
    if not learner.deterministic:
        raise UsageError(f"pac: {learner.spec} is not a deterministic learner of {hclass.spec}")
    wrapped = learners.LEARNERS.make(f"conservative:of={learner.spec.replace(',', ';')}")
    wrapped.start(game, 0)
    bound = wrapped.bound(game)
    if bound is None:
        raise UsageError(f"pac: {learner.spec} has no mistake bound on {hclass.spec}")
    _within((math.floor(bound.value) + 1)
            * survivor_sample_size(args.epsilon, args.delta, bound.value))
    halfspaces = isinstance(hclass, HalfspaceClass)
    probs = None if halfspaces else distribution(hclass, args.dist, q=args.q)
    runs = [longest_survivor(wrapped.clone(), hclass,  # type: ignore[arg-type]
                             _draw_target(hclass, rng), probs, args.epsilon,
                             args.delta, bound.value, rng, seed=i)
            for i in range(args.repeat)]
    m = survivor_sample_size(args.epsilon, args.delta, bound.value)
    errors = np.array([r.error for r in runs])
    used = math.floor(bound.value)
    where = ({"dist": "margin", "test_examples": HALFSPACE_TEST} if halfspaces
             else _distribution_fields(args))
    return {
        "mode": "longest-survivor", "learner": wrapped.spec, **where,
        "epsilon": args.epsilon, "delta": args.delta, "mistake_bound": bound.value,
        "mistake_bound_used": used,
        "survival": m,
        "survival_name": "m = ceil((1/epsilon) ln((floor(M) + 1)/delta)): mistakes are whole, "
                         "so the floor of the printed M bounds them",
        "max_examples_bound": (used + 1) * m,
        "mean_examples": float(np.mean([r.examples for r in runs])),
        "max_examples": max(r.examples for r in runs),
        "mean_error": float(errors.mean()),
        "failures": float(np.mean(errors > args.epsilon)),
    }


def _random_iterate(args: argparse.Namespace, hclass: HalfspaceClass, learner: Learner,
                    rng: np.random.Generator) -> dict[str, object]:
    if learner.id != "perceptron":
        raise UsageError("pac: on halfspaces it runs the Perceptron's random iterate "
                         "(--learner perceptron)")
    examples = ITERATE_EXAMPLES if args.examples is None else args.examples
    if examples < 1:
        raise UsageError("pac: the random iterate needs --examples >= 1")
    _within(examples * hclass.d, f"numbers (examples x d = {hclass.d})")
    iterates = [random_iterate(learner.clone(), hclass, examples, rng)
                for _ in range(args.repeat)]
    return {
        "mode": "random-iterate", "examples": examples,
        "mean_error": float(np.mean([r[0] for r in iterates])),
        "bound": 1 / (examples * hclass.margin**2) if hclass.margin > 0 else None,
        "bound_name": "E[err(w_tau)] <= 1/(n gamma^2)",
        "mean_mistakes": float(np.mean([r[1] for r in iterates])),
    }
