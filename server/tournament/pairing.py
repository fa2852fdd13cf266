"""The games of a tournament: every learner x adversary x class x seed that can be
played, and the pairs that cannot, with the reason.

Imports the games and the agent registries.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.server.tournament.config import (
    TournamentConfig,
    is_file_agent,
    remote_account,
)

__all__ = ["Pairing", "pairings", "rules"]


@dataclass(frozen=True)
class Pairing:
    """One game of the tournament."""

    game: str
    hclass: str | None
    learner: str
    adversary: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.game}|{self.hclass}|{self.learner}|{self.adversary}|{self.seed}"


def pairings(config: TournamentConfig) -> tuple[list[Pairing], list[dict[str, Any]]]:
    """Every pairing to play, and the ones that cannot be played, with the reason."""
    todo, skipped = [], []
    spaces: list[tuple[str, str | None]] = []
    for game in config.games:
        if game == MISTAKE_BOUND:
            spaces += [(game, c) for c in config.classes]
        else:
            spaces += [(game, c) for c in config.classes
                       if isinstance(make_class(c), FiniteClass)]
            if config.experts is not None:
                spaces.append((game, None))
    for (game, spec), learner, adversary in itertools.product(spaces, config.learners,
                                                               config.adversaries):
        rules = GameSpec(game, config.rounds, make_class(spec) if spec else None,
                         None if spec else config.experts)
        reasons = []
        remote = [s for s in (learner, adversary) if remote_account(s)]
        if remote and (len(remote) == 2 or any(is_file_agent(s) for s in (learner, adversary))):
            skipped.append({"game": game, "class": spec, "learner": learner,
                            "adversary": adversary,
                            "reason": "a remote agent plays built-in opponents only"})
            continue
        for registry, agent_spec in ((LEARNERS, learner), (ADVERSARIES, adversary)):
            if remote_account(agent_spec):
                continue
            try:
                agent = registry.make(agent_spec)
            except SpecError as exc:
                reasons.append(str(exc))
                continue
            reason = agent.unsupported(rules)
            if reason:
                reasons.append(f"{agent_spec}: {reason}")
        if reasons:
            skipped.append({"game": game, "class": spec, "learner": learner,
                            "adversary": adversary, "reason": "; ".join(reasons)})
            continue
        todo += [Pairing(game, spec, learner, adversary, seed) for seed in config.seeds]
    return todo, skipped


def rules(config: TournamentConfig, pairing: Pairing) -> GameSpec:
    """The rules of one pairing's game."""
    hclass = make_class(pairing.hclass) if pairing.hclass else None
    return GameSpec(pairing.game, config.rounds, hclass, None if hclass else config.experts)
