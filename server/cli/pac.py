"""The ``pac`` command: online-to-batch conversions played many times (games.pac)."""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from littlestone import learners
from littlestone.games.classes import FiniteClass, HalfspaceClass, make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.pac import (
    distribution,
    longest_survivor,
    random_iterate,
    survivor_sample_size,
)
from littlestone.server.cli.common import UsageError, emit

__all__ = ["pac"]


def pac(args: argparse.Namespace) -> int:
    if not 0 < args.epsilon < 1 or not 0 < args.delta < 1:
        raise UsageError("pac: --epsilon and --delta must be in (0, 1)")
    if args.repeat < 1:
        raise UsageError("pac: --repeat must be >= 1")
    hclass = make_class(args.hclass)
    learner = learners.LEARNERS.make(args.learner)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    out: dict[str, Any] = {"class": hclass.spec, "learner": learner.spec, "repeat": args.repeat}
    if isinstance(hclass, HalfspaceClass):
        if learner.id != "perceptron":
            raise UsageError("pac: on halfspaces it runs the Perceptron's random iterate "
                             "(--learner perceptron)")
        if args.examples < 1:
            raise UsageError("pac: --examples must be >= 1")
        iterates = [random_iterate(learner.clone(), hclass, args.examples, rng)
                    for _ in range(args.repeat)]
        out.update({
            "mode": "random-iterate", "examples": args.examples,
            "mean_error": float(np.mean([r[0] for r in iterates])),
            "bound": 1 / (args.examples * hclass.margin**2) if hclass.margin > 0 else None,
            "bound_name": "E[err(w_tau)] <= 1/(n gamma^2)",
            "mean_mistakes": float(np.mean([r[1] for r in iterates])),
        })
    else:
        assert isinstance(hclass, FiniteClass)
        if not learner.deterministic or learner.unsupported(GameSpec(MISTAKE_BOUND, 1, hclass)):
            raise UsageError(f"pac: {learner.spec} is not a deterministic learner of "
                             f"{hclass.spec}")
        learner.start(GameSpec(MISTAKE_BOUND, 1, hclass), 0)
        bound = learner.bound(GameSpec(MISTAKE_BOUND, 1, hclass))
        if bound is None:
            raise UsageError(f"pac: {learner.spec} has no mistake bound on {hclass.spec}")
        probs = distribution(hclass, args.dist)
        runs = [longest_survivor(learner.clone(), hclass,  # type: ignore[arg-type]
                                 int(rng.integers(hclass.size)), probs, args.epsilon,
                                 args.delta, bound.value, rng, seed=i)
                for i in range(args.repeat)]
        m = survivor_sample_size(args.epsilon, args.delta, bound.value)
        errors = np.array([r.error for r in runs])
        out.update({
            "mode": "longest-survivor", "dist": args.dist, "epsilon": args.epsilon,
            "delta": args.delta, "mistake_bound": bound.value, "survival": m,
            "max_examples_bound": (int(bound.value) + 1) * m,
            "mean_examples": float(np.mean([r.examples for r in runs])),
            "max_examples": max(r.examples for r in runs),
            "mean_error": float(errors.mean()),
            "failures": float(np.mean(errors > args.epsilon)),
        })
    out["seconds"] = round(time.perf_counter() - started, 6)
    emit(out, args.json)
    return 0
