"""Why a tournament's run plays a game again, as its terminal says it (issue 44)."""

from __future__ import annotations

from littlestone.sandbox import Limits
from littlestone.server.tournament.config import TournamentConfig
from littlestone.server.tournament.pairing import Pairing
from littlestone.server.tournament.run import _replays


def test_a_retried_game_names_only_the_entrant_that_failed_to_load():
    """The re-play line listed an adversary file as "failed to load before" when only
    the learner of its game had."""
    learner, adversary = "alice.py:Broken", "bob.py:Fine"
    game = Pairing("mistake-bound", "thresholds:n=8", learner, adversary, 1)
    stored = [{"game": game.game, "class": game.hclass, "learner": learner,
               "adversary": adversary, "seed": 1, "version": None,
               "status": "load_failed:learner"}]
    config = TournamentConfig(name="t", rounds=5, seeds=(1,), games=("mistake-bound",),
                              classes=("thresholds:n=8",), experts=None,
                              learners=(learner,), adversaries=(adversary,),
                              limits=Limits())
    said = _replays([game], stored, [], {game.key}, {}, config)
    assert "failed to load before" in str(said), said
    assert learner in str(said) and adversary not in str(said), said
