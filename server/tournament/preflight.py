"""What ``littlestone check`` can say of a submission without trusting it: its check
games, played as a tournament plays them, and judged from outside its process.

The generic check suite (``littlestone/testing.py``) runs inside the submission's sandbox, in
the submission's own interpreter: its code can rewrite what that process reports (an
``atexit`` hook that prints "every check passed" and exits 0). So the one check a
tournament scores, *plays a game*, is decided here instead: the submission is loaded in
its sandbox (:func:`~.pairing.probe`: which games it declares it can play) and plays
each of them through a private Unix-socket server (:class:`~.matches.Arena`,
:func:`~.matches.play_file_agent`), the server refereeing: the same process, limits,
credential and rules as in a tournament. The verdict is the server's record of each
game, never a word the submission printed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from littlestone.sandbox import Sandbox
from littlestone.server.tournament.config import TournamentConfig
from littlestone.server.tournament.matches import Arena, play_file_agent
from littlestone.server.tournament.pairing import Pairing, probe

__all__ = ["CHECK_SEED", "Refereed", "play_check_games"]

#: The seed of every refereed check game (the suite's own ``plays a game`` uses it too).
CHECK_SEED = 1


@dataclass(frozen=True)
class Refereed:
    """One check game as the server recorded it: ``status`` is ``complete``, a fault
    (``crash:learner:no_game``, ``forfeit:learner:illegal_move``, ...), ``declined``
    (the submission says it cannot play it: not played) or ``load_failed``."""

    game: str
    hclass: str | None
    opponent: str
    status: str
    message: str = ""
    rounds: int = 0

    @property
    def where(self) -> str:
        """The game in words: ``mistake-bound on thresholds:n=32 against random-target``."""
        on = self.hclass if self.hclass is not None else "free experts"
        return f"{self.game} on {on} against {self.opponent}"


def play_check_games(agent: str, role: str, games: Sequence[tuple[str, str | None, str]],
                     rounds: int, experts: int | None, sandbox: Sandbox,
                     base: Path) -> list[Refereed]:
    """Play ``agent`` (a ``FILE.py:Class`` spec relative to ``base``) as ``role`` in each
    of ``games`` (game, class spec or None for ``experts`` free experts, built-in
    opponent) that it declares it can play, one game each, seed :data:`CHECK_SEED`. The
    games stop at the first one that does not complete (the rest are not listed): a
    hanging submission costs one game's deadlines, not every game's.

    The result lists one :class:`Refereed` per game played or declined, or a single
    ``load_failed`` one when the submission cannot be loaded at all.
    """
    learners = (agent,) if role == "learner" else tuple(dict.fromkeys(o for *_, o in games))
    adversaries = (agent,) if role == "adversary" else tuple(dict.fromkeys(o for *_, o in games))
    config = TournamentConfig(
        name="check", rounds=rounds, seeds=(CHECK_SEED,),
        games=tuple(dict.fromkeys(g for g, _, _ in games)),
        classes=tuple(dict.fromkeys(c for _, c, _ in games if c is not None)),
        experts=experts, learners=learners, adversaries=adversaries,
        limits=sandbox.limits, base=base)
    entrant = probe(config, agent, role, sandbox, [(g, c) for g, c, _ in games])
    if entrant.failed is not None:
        return [Refereed("", None, "", f"load_failed:{role}", entrant.failed)]
    out: list[Refereed] = []
    with tempfile.TemporaryDirectory(prefix="littlestone-check-") as data, \
            Arena(config, Path(data), unix=True, tcp=False) as arena:
        for (game, hclass, opponent), declined in zip(games, entrant.unsupported,
                                                       strict=True):
            if declined is not None:
                out.append(Refereed(game, hclass, opponent, "declined", declined))
                continue
            learner, adversary = (agent, opponent) if role == "learner" else (opponent, agent)
            outcome = play_file_agent(config, Pairing(game, hclass, learner, adversary,
                                                      CHECK_SEED), arena, sandbox)
            played = int(outcome["result"].get("rounds") or 0)
            out.append(Refereed(game, hclass, opponent, str(outcome["status"]),
                                str(outcome.get("message") or ""), played))
            if outcome["status"] != "complete":
                break
    return out
