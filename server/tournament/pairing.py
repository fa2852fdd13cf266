"""The games of a tournament: every learner x adversary x class x seed that can be
played, the pairs that cannot (with the reason), and the entrants that failed to load.

Built-in agents are built here, in the tournament's process (they are the package's
own). A submitted file is never imported here: :func:`probe` loads it inside its
sandbox (``littlestone probe``), which answers which of the tournament's games it can
play, or why it cannot be loaded at all.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.errors import LittlestoneError, SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.protocol.messages import rules_to_wire
from littlestone.sandbox import Sandbox
from littlestone.server.tournament.config import (
    TournamentConfig,
    file_of,
    is_file_agent,
    remote_account,
)

__all__ = ["PROBE_SECONDS", "Entrant", "Pairing", "load_entrants", "pairings", "probe", "rules",
           "spaces"]

#: How long a submission has to load and answer which games it can play.
PROBE_SECONDS = 60.0


@dataclass(frozen=True)
class Pairing:
    """One game of the tournament. ``declined`` names the side that cannot play it (the
    game is then not played, and counts as that side's fault: declining the hard
    classes must not pay), with its ``reason``."""

    game: str
    hclass: str | None
    learner: str
    adversary: str
    seed: int
    declined: str | None = None
    reason: str = ""

    @property
    def key(self) -> str:
        return f"{self.game}|{self.hclass}|{self.learner}|{self.adversary}|{self.seed}"


@dataclass(frozen=True)
class Entrant:
    """What loading an entrant told: the reason it cannot play each game space (None
    where it can), or the reason it cannot be loaded at all (``failed``)."""

    spec: str
    role: str
    unsupported: tuple[str | None, ...] = ()
    failed: str | None = None


def spaces(config: TournamentConfig) -> list[tuple[str, str | None]]:
    """The (game, class) pairs the tournament plays (class None: free experts)."""
    out: list[tuple[str, str | None]] = []
    for game in config.games:
        if game == MISTAKE_BOUND:
            out += [(game, c) for c in config.classes]
        else:
            out += [(game, c) for c in config.classes
                    if isinstance(make_class(c), FiniteClass)]
            if config.experts is not None:
                out.append((game, None))
    return out


def rules(config: TournamentConfig, pairing: Pairing | tuple[str, str | None]) -> GameSpec:
    """The rules of one pairing's game (or of a game space)."""
    game, spec = ((pairing.game, pairing.hclass) if isinstance(pairing, Pairing)
                  else pairing)
    hclass = make_class(spec) if spec else None
    return GameSpec(game, config.rounds, hclass, None if hclass else config.experts)


def probe(config: TournamentConfig, spec: str, role: str, sandbox: Sandbox,
          asked: list[tuple[str, str | None]] | None = None) -> Entrant:
    """Load a submitted file in its sandbox and ask which games it can play: the
    tournament's game spaces, or those ``asked`` (``Entrant.unsupported`` in their order)."""
    file, rest = file_of(spec, config.base)
    given = Path(spec.partition(".py:")[0] + ".py")
    if (given if given.is_absolute() else config.base / given).is_symlink():
        return Entrant(spec, role, failed=f"it is a symbolic link (to {str(file)!r}): a "
                       "submission is its own file, not another's")
    if not file.is_file():
        return Entrant(spec, role, failed=f"no such file {str(file)!r} (paths are relative "
                       "to the tournament file's folder)")
    games = [rules_to_wire(rules(config, space)) for space in (
        spaces(config) if asked is None else asked)]
    request = json.dumps({"role": role, "spec": f"{sandbox.inside(file)}:{rest}",
                          "games": games}).encode()
    run = sandbox.run(file, ["probe"], timeout=PROBE_SECONDS, stdin=request)
    answer = None
    for line in reversed(run.out.strip().splitlines()):
        try:
            answer = json.loads(line)
            break
        except (ValueError, RecursionError):  # its own prints, or a hostile line
            continue
    if not isinstance(answer, dict) or run.code is None:
        why = ("it did not load within the time allowed" if run.code is None else
               _last_line(run.err) or "it printed no answer")
        return Entrant(spec, role, failed=why)
    if not answer.get("ok"):
        reason = str(answer.get("reason", "it printed something else than its answer"))
        return Entrant(spec, role, failed=reason.replace(sandbox.inside(file),
                                                         spec.partition(".py:")[0] + ".py"))
    reasons = answer.get("unsupported", [])
    if not isinstance(reasons, list) or len(reasons) != len(games):
        return Entrant(spec, role, failed="its probe answered something else than asked")
    return Entrant(spec, role, tuple(None if r is None else str(r) for r in reasons))


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].removeprefix("littlestone: error: ")[:300] if lines else ""


def load_entrants(config: TournamentConfig, sandbox: Sandbox | None) -> dict[str, Entrant]:
    """Every learner and adversary of the tournament, loaded: built-ins here, files by
    :func:`probe` in their sandbox (``sandbox`` None: files cannot be run, and fail)."""
    entrants: dict[str, Entrant] = {}
    games = [rules(config, space) for space in spaces(config)]
    for role, registry, specs in (("learner", LEARNERS, config.learners),
                                  ("adversary", ADVERSARIES, config.adversaries)):
        for spec in specs:
            key = f"{role}:{spec}"
            if key in entrants or remote_account(spec):
                continue
            if is_file_agent(spec):
                entrants[key] = (probe(config, spec, role, sandbox) if sandbox is not None
                                 else Entrant(spec, role, failed="submissions need a sandbox"))
                continue
            try:
                agent: Any = registry.make(spec)
            except SpecError as exc:
                entrants[key] = Entrant(spec, role, failed=str(exc))
                continue
            entrants[key] = Entrant(spec, role, tuple(_unsupported(agent, g) for g in games))
    return entrants


def _unsupported(agent: Any, game: GameSpec) -> str | None:
    try:
        return agent.unsupported(game)  # type: ignore[no-any-return]
    except LittlestoneError as exc:
        return str(exc)


def pairings(config: TournamentConfig, entrants: dict[str, Entrant]
             ) -> tuple[list[Pairing], list[dict[str, Any]]]:
    """Every pairing of the tournament, and the ones that are not, with the reason (a
    remote agent against a submission or another remote agent; both sides declining).
    A pairing one side declines (``unsupported``) is in the list, marked ``declined``:
    it counts as that side's fault. A pairing with an entrant that failed to load is in
    the list too (and is recorded as its fault): it is not the opponent's to lose."""
    todo, skipped = [], []
    for (index, (game, spec)), learner, adversary in itertools.product(
            enumerate(spaces(config)), config.learners, config.adversaries):
        remote = [s for s in (learner, adversary) if remote_account(s)]
        if remote and (len(remote) == 2 or any(is_file_agent(s) for s in (learner, adversary))):
            skipped.append({"game": game, "class": spec, "learner": learner,
                            "adversary": adversary,
                            "reason": "a remote agent plays built-in opponents only"})
            continue
        reasons = {}
        for role, agent_spec in (("learner", learner), ("adversary", adversary)):
            entrant = entrants.get(f"{role}:{agent_spec}")
            if entrant is not None and entrant.failed is None:
                reason = entrant.unsupported[index]
                if reason:
                    reasons[role] = f"{agent_spec}: {reason}"
        if reasons:
            skipped.append({"game": game, "class": spec, "learner": learner,
                            "adversary": adversary, "reason": "; ".join(reasons.values()),
                            "declined": " and ".join(reasons)})
            if len(reasons) == 2:  # neither can play it: nobody's loss
                continue
        declined = next(iter(reasons), None)  # the one side that cannot play it
        todo += [Pairing(game, spec, learner, adversary, seed, declined,
                         reasons.get(declined or "", "")) for seed in config.seeds]
    return todo, skipped
