"""The remote driver: the game loop's asyncio runner.

:func:`run_game` answers the moves of the same game loop as :func:`littlestone.local.play`
(:class:`littlestone.games.loop.GameLoop`), with either player local (an
:class:`~littlestone.learners.Learner` or :class:`~littlestone.adversaries.Adversary`)
or behind a connection (:mod:`.players`): the same rules, coins and records. Faults,
forfeits, disconnects and a local player's crash end the game with a status; nothing
here ends the server. A server-side agent played in a process of its own
(:mod:`.hosts`) is awaited on the event loop; its move past its budget is its
``over_budget`` fault on the fault ladder (PROTOCOL.md 6): a learner's loses the round,
an adversary's is asked again, the third forfeits.

Imports the games, the agents, the players and the local runner's history; nothing of
the server's sessions or storage.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

from littlestone.adversaries.base import Adversary
from littlestone.games.errors import (
    Crash,
    Disconnected,
    GameEnded,
    HostGone,
    MoveError,
    MoveOverBudget,
)
from littlestone.games.game import EXPERTS, GameResult, GameSeeds, GameSpec
from littlestone.games.loop import (
    FAULT,
    LEARNER,
    FaultLadder,
    GameLoop,
    Move,
    RoundLog,
    drive_async,
)
from littlestone.learners.base import Learner
from littlestone.local import history_for
from littlestone.server.net.hosts import HostedAdversary, HostedLearner
from littlestone.server.net.players import RemoteAdversary, RemoteLearner, RemotePlayer
from littlestone.server.net.settings import REMOTE_BLOCK

__all__ = ["run_game"]

T = TypeVar("T")


async def run_game(
    game: GameSpec, seeds: GameSeeds, learner: Learner | RemoteLearner,
    adversary: Adversary | RemoteAdversary, writer: RoundLog | None = None,
) -> GameResult:
    """One game through the game loop, either player local or remote (the same rules,
    coins and records as :func:`littlestone.local.play` under the same seeds)."""
    queued = isinstance(learner, RemoteLearner) and isinstance(adversary, Adversary) and (
        game.game != EXPERTS or adversary.oblivious)
    loop = GameLoop(game, seeds.referee, block=REMOTE_BLOCK if queued else 0,
                    history=history_for(game), log=writer, in_process=False)
    try:
        for player, own in ((learner, seeds.learner), (adversary, seeds.adversary)):
            if isinstance(player, HostedLearner | HostedAdversary):
                continue  # set up already, in its process
            if isinstance(player, Learner | Adversary):  # set-up may be slow: off the loop
                await _local(player, player.start, game, own, slow=True)
            else:
                player.hclass, player.n_experts = game.hclass, game.experts
                player.ladder = loop.ladders[player.role]
    except GameEnded as ended:
        loop.end(ended)
        result = loop.result()
    else:
        result = await _run(loop, learner, adversary)
    if isinstance(learner, Learner):
        with contextlib.suppress(Exception):  # a built-in's report is not worth a crash
            # (off the event loop: a bound may take a while, e.g. a kernel Perceptron's)
            result.bound = await asyncio.to_thread(learner.final_bound, game,
                                                   result.to_dict())
            result.extra.update(learner.report())
    return result


async def _run(loop: GameLoop, learner: Learner | RemoteLearner,
               adversary: Adversary | RemoteAdversary) -> GameResult:
    """Answer the loop's moves (:func:`~littlestone.games.loop.drive_async`): a remote
    player's from its connection (the round first), a hosted agent's from its process, a
    local agent's by calling it. The reveal is checked off the event loop (checking every
    label and margin of a long halfspace game takes seconds)."""

    async def answer(move: Move) -> Any:
        role, name, t, args, extra = move
        player = learner if role == LEARNER else adversary
        if isinstance(player, RemotePlayer):
            return await getattr(player, name)(t, *args, *extra)
        if isinstance(player, HostedLearner | HostedAdversary):
            other = adversary if role == LEARNER else learner
            return await _hosted(player, loop.ladders[role], name, t, args, other)
        return await _local(player, getattr(player, name), *args)

    return await drive_async(loop, answer, send=asyncio.to_thread, send_apart=("reveal",))


async def _hosted(agent: HostedLearner | HostedAdversary, ladder: FaultLadder, name: str,
                  t: int, args: tuple[Any, ...], opponent: Any) -> Any:
    """A hosted agent's move, awaited from its process. Past its budget it is the
    agent's ``over_budget`` fault: a learner's move ends there (its prediction is scored
    as a mistake), an adversary's is asked again; the third fault forfeits (raised by
    the ladder). A process gone ends the game: the remote ``opponent`` left (its process
    was killed for it), or against the agent (killed far past its budget, or dead)."""
    role = ladder.role
    while True:
        try:
            return await agent.host.move_async(name, *args)
        except MoveOverBudget as exc:
            ladder.fault(t or None, "over_budget", str(exc))
            if ladder.ends_move:
                return FAULT if name in ("predict", "weights") else None
        except HostGone as exc:
            if isinstance(opponent, RemotePlayer) and opponent.ws.closed.done():
                raise Disconnected(opponent.role) from None
            raise GameEnded(f"forfeit:{role}:over_budget" if exc.over_budget
                            else f"crash:{role}:HostGone", str(exc)) from None


async def _local(agent: Learner | Adversary, move: Callable[..., T], *args: Any,
                 slow: bool = False) -> T:
    """A local agent's move (or set-up): in a worker thread when it may be slow (its
    set-up, or every move of an agent whose moves ask exact Ldim: SOA, shattered-tree),
    so that no other game waits on it; an exception ends the game against the agent
    (:class:`~littlestone.games.loop.Crash`, its message without details: they stay on
    the server)."""
    try:
        if slow or agent.slow_moves:
            return await asyncio.to_thread(move, *args)
        return move(*args)
    except MoveError:
        raise  # the referee's own check of a move
    except Exception as error:
        raise Crash("learner" if isinstance(agent, Learner) else "adversary", error,
                    detailed=False) from None
