"""The remote driver: the local driver's loop written with awaits.

:func:`run_game` drives the same referees as :func:`littlestone.local.play`,
with either player local (an :class:`~littlestone.learners.Learner` or
:class:`~littlestone.adversaries.Adversary`) or behind a connection
(:mod:`.players`): the same rules, coins and records. Faults, forfeits, disconnects and
a local player's crash end the game with a status; nothing here ends the server.

Imports the games, the agents, the protocol's encoders, the players and the local
driver's history; nothing of the server's sessions or storage.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

from littlestone.adversaries.base import Adversary
from littlestone.games.classes import FiniteClass
from littlestone.games.errors import MoveError
from littlestone.games.experts import ExpertsReferee
from littlestone.games.experts import Phase as ExpertsPhase
from littlestone.games.game import EXPERTS, GameResult, GameSeeds, GameSpec
from littlestone.games.mistake_bound import MistakeBoundReferee, Phase
from littlestone.learners.base import Learner
from littlestone.local import history_for
from littlestone.protocol.messages import instances_to_wire
from littlestone.server.net.players import (
    FAULT,
    Disconnected,
    Forfeit,
    RemoteAdversary,
    RemoteLearner,
    RemotePlayer,
)
from littlestone.server.net.settings import REMOTE_BLOCK
from littlestone.server.records.logs import LogWriter

__all__ = ["run_game"]

T = TypeVar("T")


async def run_game(
    game: GameSpec, seeds: GameSeeds, learner: Learner | RemoteLearner,
    adversary: Adversary | RemoteAdversary, writer: LogWriter | None = None,
) -> GameResult:
    """One game through the referee, either player local or remote (the same rules,
    coins and records as :func:`littlestone.local.play` under the same seeds)."""
    referee: MistakeBoundReferee | ExpertsReferee
    if game.game == EXPERTS:
        hclass = game.hclass if isinstance(game.hclass, FiniteClass) else None
        referee = ExpertsReferee(game.n_experts, game.rounds, seeds.referee, hclass=hclass)
    else:
        assert game.hclass is not None
        referee = MistakeBoundReferee(game.hclass, game.rounds, seeds.referee,
                                      history=history_for(game))
    try:
        for player, own in ((learner, seeds.learner), (adversary, seeds.adversary)):
            if isinstance(player, Learner | Adversary):  # set-up may be slow: off the loop
                await _local(player, player.start, game, own, slow=True)
            else:
                player.hclass, player.n_experts = game.hclass, game.experts
        if isinstance(adversary, Adversary):
            digest = await _local(adversary, adversary.commitment)
            if digest is not None:
                referee.commit(digest)
        if isinstance(referee, MistakeBoundReferee):
            await _mistake_bound_rounds(game, referee, learner, adversary, writer)
        else:
            await _experts_rounds(game, referee, learner, adversary, writer)
        due = (referee.phase is Phase.REVEAL if isinstance(referee, MistakeBoundReferee)
               else referee.phase is ExpertsPhase.REVEAL)
        if due:
            revealed = (await adversary.reveal() if isinstance(adversary, RemoteAdversary)
                        else await _local(adversary, adversary.reveal))
            # checking every label and margin of a long halfspace game takes seconds
            await asyncio.to_thread(referee.reveal,
                                    *(revealed if revealed is not None else (None, b"")))
    except MoveError:
        pass  # recorded by the referee against its author
    except Forfeit as exc:
        referee.abort(f"forfeit:{exc.role}:{exc.code.value}", str(exc))
    except Disconnected as exc:
        referee.abort(f"disconnected:{exc.role}", str(exc))
    except _Commit as exc:
        referee.abort("illegal_move:adversary:commit", str(exc))
    except _Crash as crash:  # a local player's bug ends its game, never the server
        name = type(crash.error).__name__
        referee.abort(f"crash:{crash.role}:{name}", f"{crash.role} raised {name}")
    result = referee.result()
    result.revealed = getattr(referee, "revealed", None)
    if isinstance(learner, Learner):
        with contextlib.suppress(Exception):  # a built-in's report is not worth a crash
            # (off the event loop: a bound may take a while, e.g. a kernel Perceptron's)
            result.bound = await asyncio.to_thread(learner.final_bound, game,
                                                   result.to_dict())
            result.extra.update(learner.report())
    if isinstance(game.hclass, FiniteClass):
        result.extra["size"] = game.hclass.size
    faults = [dict(f, role=p.role) for p in (learner, adversary) if isinstance(p, RemotePlayer)
              for f in p.faults]
    if faults:
        result.extra["faults"] = faults
    return result


class _Crash(Exception):
    """A local player raised: its game ends against it."""

    def __init__(self, role: str, error: BaseException) -> None:
        super().__init__(f"the {role} raised {type(error).__name__}")
        self.role, self.error = role, error


async def _local(agent: Learner | Adversary, move: Callable[..., T], *args: Any,
                 slow: bool = False) -> T:
    """A local agent's move (or set-up): in a worker thread when it may be slow (its
    set-up, or every move of an agent whose moves ask exact Ldim: SOA, shattered-tree),
    so that no other game waits on it; an exception ends the game against the agent."""
    try:
        if slow or agent.slow_moves:
            return await asyncio.to_thread(move, *args)
        return move(*args)
    except MoveError:
        raise  # the referee's own check of a move
    except Exception as error:
        raise _Crash("learner" if isinstance(agent, Learner) else "adversary", error) from None


class _Commit(Exception):
    """A commitment sent after round 1."""


async def _adversary_instance(referee: Any, adversary: Any, t: int) -> Any:
    if isinstance(adversary, Adversary):
        return await _local(adversary, adversary.instance)
    while True:
        move = await adversary.instance(t)
        if isinstance(move, tuple) and move and move[0] == "commit":
            if t != 1:
                raise _Commit("a commitment after round 1")
            referee.commit(move[1])
            continue
        return move


async def _mistake_bound_rounds(game: GameSpec, referee: MistakeBoundReferee, learner: Any,
                                adversary: Any, writer: LogWriter | None) -> None:
    first = 1
    if isinstance(learner, RemoteLearner) and isinstance(adversary, Adversary):
        first += await _queued_rounds(game, referee, learner, adversary, writer)
    for t in range(first, game.rounds + 1):
        x = referee.instance(await _adversary_instance(referee, adversary, t))
        p = (await _local(learner, learner.predict, x)
             if isinstance(learner, Learner) else await learner.predict(t, x))
        if p is FAULT:
            referee.prediction_fault()
            p = 0.5
        else:
            referee.prediction(p)
        y = (await _local(adversary, adversary.label, x, p)
             if isinstance(adversary, Adversary) else await adversary.label(t, x, p))
        record = referee.label(y)
        if writer is not None:
            writer.round(record)
        if isinstance(learner, Learner):
            await _local(learner, learner.update, x, record.y)
        else:
            await learner.update(t, x, record.y)


async def _queued_rounds(game: GameSpec, referee: MistakeBoundReferee, learner: RemoteLearner,
                         adversary: Adversary, writer: LogWriter | None) -> int:
    """A remote learner against an oblivious built-in adversary: the adversary's moves
    come in blocks (as in the local driver), each instance goes out already encoded and
    the block is scored in one pass when it is played (the same records as round by
    round: a fault is scored p = 1 - y, as :meth:`MistakeBoundReferee.prediction_fault`
    does). Returns the rounds played (0: the adversary is not oblivious)."""
    played = 0
    while played < game.rounds:
        block = await _local(adversary, adversary.moves, min(game.rounds - played, REMOTE_BLOCK))
        if block is None:
            if played:
                raise RuntimeError("an oblivious adversary stopped offering moves")
            return 0
        xs, ys = block
        referee.queue(xs, ys)
        wires = instances_to_wire(referee.hclass, xs)
        predictions: list[float] = []
        try:
            await learner.play_queued(referee.t + 1, wires, ys, predictions)
        finally:  # the rounds answered are scored, even when the game ends mid-block
            referee.score_queued(predictions, records=False)
            if writer is not None and referee.last_block is not None:
                writer.rounds(*referee.last_block)
                referee.last_block = None
        played += len(ys)
    return played


async def _queued_experts_rounds(game: GameSpec, referee: ExpertsReferee,
                                 learner: RemoteLearner, adversary: Adversary,
                                 writer: LogWriter | None) -> int:
    """A remote learner against an oblivious built-in adversary of class-derived
    experts: the adversary's instances and labels come in blocks and each round is
    answered from the connection's callback (the same records as round by round; an
    oblivious adversary's label does not depend on the learner's answer). Returns the
    rounds played (0: the adversary is not oblivious)."""
    assert referee.hclass is not None
    played = 0
    while played < game.rounds:
        block = await _local(adversary, adversary.moves, min(game.rounds - played, REMOTE_BLOCK))
        if block is None:
            if played:
                raise RuntimeError("an oblivious adversary stopped offering moves")
            return 0
        xs, ys = block
        await learner.play_queued_experts(referee, xs, instances_to_wire(referee.hclass, xs),
                                          ys, writer)
        played += len(ys)
    return played


async def _experts_rounds(game: GameSpec, referee: ExpertsReferee, learner: Any,
                          adversary: Any, writer: LogWriter | None) -> None:
    class_derived = referee.hclass is not None
    first = 1
    if (class_derived and isinstance(learner, RemoteLearner)
            and isinstance(adversary, Adversary) and adversary.oblivious):
        first += await _queued_experts_rounds(game, referee, learner, adversary, writer)
    for t in range(first, game.rounds + 1):
        x = None
        if isinstance(adversary, Adversary):
            if class_derived:
                x = referee.instance(await _local(adversary, adversary.instance))
            else:
                advice = await _local(adversary, adversary.advice)
                if advice is not None:
                    referee.advice(advice)
        else:
            while True:
                kind, value = await adversary.advice(t)
                if kind == "commit":
                    if t != 1:
                        raise _Commit("a commitment after round 1")
                    referee.commit(value)
                    continue
                break
            if kind == "instance":
                x = referee.instance(value)
            elif value is not None:
                referee.advice(value)
        advice_now = referee.current_advice
        answer = (await _local(learner, learner.weights, advice_now)
                  if isinstance(learner, Learner)
                  else await learner.weights(t, x, advice_now))
        if answer is FAULT:
            referee.answer_fault()
            shown: Any = 0.5
        elif isinstance(answer, float | int) and not isinstance(answer, bool):
            referee.prediction(answer)
            shown = float(answer)
        else:
            referee.weights(answer)
            shown = answer
        if isinstance(adversary, Adversary):
            outcome = (await _local(adversary, adversary.label, x, referee.induced_prediction)
                       if class_derived else await _local(adversary, adversary.costs, shown))
        else:
            outcome = await adversary.outcome(t, shown, faulted=answer is FAULT)
        if isinstance(outcome, int) and not isinstance(outcome, bool):
            record = referee.label(outcome)
        else:
            record = referee.costs(outcome)
        if writer is not None:
            writer.expert(record)
        if isinstance(learner, Learner):
            await _local(learner, learner.update_costs, record.costs, record.y)
        else:
            await learner.update_costs(t, record.costs, record.y)
