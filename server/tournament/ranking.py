"""Scores and ranks: normalised scores, the leaderboard and the payoff matrix.

Imports the games (for Ldim, the normaliser of the mistake-bound game).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from littlestone.games.classes import FiniteClass, HalfspaceClass
from littlestone.games.errors import BudgetExceeded
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.games.ldim import class_ldim
from littlestone.server.tournament.sandbox import Sandbox

__all__ = ["TournamentReport", "normaliser", "rank"]


def normaliser(game: GameSpec) -> tuple[float | None, str]:
    """What a game's score is divided by: Ldim(H) (mistake-bound), sqrt(T ln d) (experts)."""
    if game.game == EXPERTS:
        d = game.n_experts
        return math.sqrt(game.rounds * math.log(max(d, 2))), "sqrt(T ln d)"
    if isinstance(game.hclass, FiniteClass):
        try:
            value, _ = class_ldim(game.hclass)
            return (float(value) if value else None), "Ldim(H)"
        except BudgetExceeded:
            return math.log2(game.hclass.size), "log2|H| (Ldim beyond budget)"
    if isinstance(game.hclass, HalfspaceClass) and game.hclass.margin > 0:
        return math.floor(1 / game.hclass.margin**2), "1/margin^2"
    return None, "raw"


@dataclass
class TournamentReport:
    name: str
    games: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    learners: list[dict[str, Any]] = field(default_factory=list)
    adversaries: list[dict[str, Any]] = field(default_factory=list)
    payoff: dict[str, dict[str, float | None]] = field(default_factory=dict)
    sandbox: str = ""
    report: str = ""

    def leaderboard(self) -> dict[str, Any]:
        return {"tournament": self.name, "learners": self.learners,
                "adversaries": self.adversaries, "payoff": self.payoff,
                "games": len(self.games), "failed": [g for g in self.games
                                                     if g["status"] != "complete"],
                "skipped": self.skipped, "sandbox": self.sandbox, "report": self.report}


def rank(name: str, rows: list[dict[str, Any]], skipped: list[dict[str, Any]]
         ) -> TournamentReport:
    """Learners by worst-case normalised score over adversaries (lower is better),
    adversaries by mean forcing power (higher is better), and the payoff matrix."""
    report = TournamentReport(name, rows, skipped, sandbox=Sandbox.describe())
    cells: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        if row.get("score") is not None:
            cells.setdefault((row["learner"], row["adversary"]), []).append(row["score"])
    learners = sorted({r["learner"] for r in rows})
    adversaries = sorted({r["adversary"] for r in rows})
    for learner in learners:
        report.payoff[learner] = {}
        for adversary in adversaries:
            scores = cells.get((learner, adversary))
            report.payoff[learner][adversary] = (sum(scores) / len(scores)) if scores else None
    for learner in learners:
        values = [v for v in report.payoff[learner].values() if v is not None]
        failed = [r for r in rows if r["learner"] == learner and r["status"] != "complete"]
        report.learners.append({
            "learner": learner, "worst": max(values) if values else None,
            "mean": sum(values) / len(values) if values else None,
            "games": sum(1 for r in rows if r["learner"] == learner), "failed": len(failed),
            "failures": sorted({r["status"] for r in failed}),
        })
    report.learners.sort(key=lambda r: (r["worst"] is None, r["worst"] or 0.0,
                                        r["mean"] or 0.0, r["learner"]))
    for position, row in enumerate(report.learners, 1):
        row["rank"] = position
        tied = [other["learner"] for other in report.learners if other is not row
                and (other["worst"], other["mean"]) == (row["worst"], row["mean"])]
        row["tied_with"] = tied  # equal scores: ordered by name, and said so
    for adversary in adversaries:
        values = [v for lrn in learners
                  if (v := report.payoff[lrn][adversary]) is not None]
        failed = [r for r in rows if r["adversary"] == adversary and r["status"] != "complete"]
        report.adversaries.append({
            "adversary": adversary,
            "forcing": (sum(values) / len(values)) if values else None,
            "games": sum(1 for r in rows if r["adversary"] == adversary),
            "failed": len(failed), "failures": sorted({r["status"] for r in failed}),
        })
    report.adversaries.sort(key=lambda r: (r["forcing"] is None, -(r["forcing"] or 0.0),
                                           r["adversary"]))
    for position, row in enumerate(report.adversaries, 1):
        row["rank"] = position
    return report
