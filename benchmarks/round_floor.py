"""A direct-link round beside its floor (issue 42): where the CPU of a round between two
submitted agents goes, next to the same round's messages ping-ponged raw
(``python -m benchmarks.round_floor [--rounds N] [--profile] [--spread]``).

A mistake-bound round on direct links (:mod:`littlestone.server.tournament.direct`) needs
four wake-ups: the learner's (x_t, with y_{t-1}), the referee's (p_t), the adversary's
(p_t shown) and the referee's (y_t, with x_{t+1} right after). Three processes, as in a
tournament (the referee; each game process with its agent), without the sandboxes:

- :func:`raw_round`: the four messages, of the direct link's sizes, as raw bytes on
  Unix sockets (one ``send`` and one ``recv`` each, no codec): the floor of the
  transport;
- :func:`framed_round`: the same messages, built, encoded and decoded with the direct
  link's :class:`~littlestone.protocol.frames.FrameSocket` and msgpack codec, echoed by
  two processes that do nothing else: the floor of the protocol;
- :func:`in_process_round`: the same game with both agents in one process (the rules'
  and the agents' own work);
- :func:`direct_round`: a real game, the referee's game loop and
  :class:`~littlestone.server.tournament.direct.DirectLearner` /
  :class:`~.DirectAdversary` against :func:`littlestone.client.play_direct` with the
  README's example learner and adversary (``examples/``), unlogged and logged.

Each figure is the wall time and the CPU time of a round, over all three processes (the
kernel's count: this process's and its children's ``rusage``), the best of
``--repeat``. ``--profile`` prints where the referee's and each game process's CPU goes
(cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CLASS = "thresholds:n=63"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _fork(child: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            child()
        except BaseException:  # (the child must exit)
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    return pid


def _reap(pids: list[int]) -> float:
    """Wait for ``pids``; their CPU seconds (and their children's)."""
    total = 0.0
    for pid in pids:
        _, _, usage = os.wait4(pid, 0)
        total += usage.ru_utime + usage.ru_stime
    return total


def _messages() -> tuple[list[bytes], list[dict[str, Any]]]:
    """A round's four messages (the learner's request with the last label, its
    prediction, the prediction shown, the label with the next instance), as the direct
    link frames them, and as messages."""
    import struct

    from littlestone.protocol import build
    from littlestone.protocol.codec import encode

    messages: list[dict[str, Any]] = [
        dict(build.instance_request(100, 17, {"t": 99, "y": 1})),
        dict(build.predict(100, 1.0)),
        dict(build.prediction(100, 1.0)),
        dict(build.label(100, 0)),
        dict(build.instance(101, 23)),
    ]
    frames = [struct.pack(">I", len(body)) + body for body in map(encode, messages)]
    return [frames[0], frames[1], frames[2], frames[3] + frames[4]], messages


def _echo_raw(sock: socket.socket, size_in: int, reply: bytes, rounds: int) -> None:
    for _ in range(rounds):
        got = 0
        while got < size_in:
            got += len(sock.recv(65536))
        sock.sendall(reply)


def raw_round(rounds: int) -> tuple[float, float]:
    """(wall, CPU) seconds a round of raw bytes of the direct link's sizes."""
    frames, _ = _messages()
    ref_l, learner = socket.socketpair()
    ref_a, adversary = socket.socketpair()
    pids = [_fork(lambda: _echo_raw(learner, len(frames[0]), frames[1], rounds)),
            _fork(lambda: _echo_raw(adversary, len(frames[2]), frames[3], rounds))]
    learner.close()
    adversary.close()
    wall, cpu = time.perf_counter(), _cpu()
    for _ in range(rounds):
        for sock, out, back in ((ref_l, frames[0], frames[1]), (ref_a, frames[2], frames[3])):
            sock.sendall(out)
            got = 0
            while got < len(back):
                got += len(sock.recv(65536))
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    cpu += _reap(pids)
    return wall / rounds, cpu / rounds


def _echo_framed(sock: socket.socket, replies: list[dict[str, Any]], rounds: int) -> None:
    from littlestone.protocol.frames import FrameSocket

    link = FrameSocket(sock)
    for _ in range(rounds):
        link.recv()
        for reply in replies:
            link.send(reply)


def framed_round(rounds: int) -> tuple[float, float]:
    """(wall, CPU) seconds a round of the direct link's messages, built, framed,
    encoded and decoded (each receive by a deadline, as the referee's), echoed."""
    from littlestone.protocol import build
    from littlestone.protocol.frames import FrameSocket

    _, messages = _messages()
    ref_l, learner = socket.socketpair()
    ref_a, adversary = socket.socketpair()
    pids = [_fork(lambda: _echo_framed(learner, [messages[1]], rounds)),
            _fork(lambda: _echo_framed(adversary, messages[3:], rounds))]
    learner.close()
    adversary.close()
    to_learner, to_adversary = FrameSocket(ref_l), FrameSocket(ref_a)
    wall, cpu = time.perf_counter(), _cpu()
    for t in range(1, rounds + 1):
        to_learner.send(build.instance_request(t, 17, {"t": t - 1, "y": 1}))
        to_learner.recv(time.monotonic() + 5)
        to_adversary.send(build.prediction(t, 1.0))
        to_adversary.recv(time.monotonic() + 5)
        to_adversary.recv(time.monotonic() + 5)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    cpu += _reap(pids)
    return wall / rounds, cpu / rounds


def _agents() -> tuple[Any, Any]:
    """The README's example learner and adversary, made (in this process: a game
    process forked from it has them, as a loaded sandbox's child has the package)."""
    from littlestone.adversaries import ADVERSARIES
    from littlestone.learners import LEARNERS

    return (LEARNERS.make(f"{EXAMPLES}/minimal_learner.py:MajorityVote"),
            ADVERSARIES.make(f"{EXAMPLES}/minimal_adversary.py:Contrarian"))


def _player(sock: socket.socket, agent: Any, profile: bool) -> None:
    from littlestone.client import CLIENT_LIMITS, play_direct
    from littlestone.protocol.frames import FrameSocket

    role = type(agent).__name__
    link = FrameSocket(sock, CLIENT_LIMITS)
    if not profile:
        play_direct(link, agent)
        return
    profiler = cProfile.Profile(time.process_time)  # (CPU, not the waits)
    profiler.runcall(play_direct, link, agent)
    _print_profile(f"the game process of {role}", profiler)


def _print_profile(who: str, profiler: cProfile.Profile, lines: int = 18) -> None:
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(lines)
    print(f"--- {who} (CPU, sorted by own time) ---", file=sys.stderr)
    print("\n".join(out.getvalue().splitlines()[4:]), file=sys.stderr, flush=True)


#: The last :func:`direct_round`'s CPU a round, by process.
SPLIT: dict[str, float] = {}


def direct_round(rounds: int, logged: bool = False, profile: bool = False
                 ) -> tuple[float, float]:
    """(wall, CPU) seconds a round of a real game on direct links: the referee here,
    the example learner and adversary each in a game process of its own."""
    import tempfile

    import littlestone.client  # noqa: F401 - imported before the fork, as in a sandbox
    from littlestone.games.classes import make_class
    from littlestone.games.game import MISTAKE_BOUND, GameSpec, game_seeds, secret_key
    from littlestone.server.records.logged import GameRecording, recorded
    from littlestone.server.records.rows import AgentIdentity
    from littlestone.server.tournament.direct import (
        DirectAdversary,
        DirectLearner,
        referee,
        thread_store,
    )

    agents = _agents()
    ref_l, learner = socket.socketpair()
    ref_a, adversary = socket.socketpair()

    def player(mine: socket.socket, agent: Any) -> None:
        # (a game process keeps the link until the referee closes it: it must hold no
        # copy of the referee's ends, nor of the other player's)
        for other in (ref_l, ref_a, learner, adversary):
            if other is not mine:
                other.close()
        return _player(mine, agent, profile)

    pids = [_fork(lambda: player(learner, agents[0])),
            _fork(lambda: player(adversary, agents[1]))]
    learner.close()
    adversary.close()
    from littlestone.protocol.frames import FrameSocket

    links = FrameSocket(ref_l), FrameSocket(ref_a)
    for link in links:
        link.recv()  # ready (the agents are made)
    game = GameSpec(MISTAKE_BOUND, rounds, make_class(CLASS))
    seeds = game_seeds(1, secret_key())
    sides = DirectLearner(links[0], 5.0, 30.0), DirectAdversary(links[1], 5.0, 30.0)
    profiler = cProfile.Profile(time.process_time) if profile else None
    with tempfile.TemporaryDirectory() as folder:
        wall, cpu = time.perf_counter(), _cpu()
        if profiler is not None:
            profiler.enable()
        if logged:
            identity: AgentIdentity = {"spec": "remote:x", "account": "x", "sha256": "remote"}
            recording = GameRecording(Path(folder), game, seeds, 1, identity, identity,
                                      "server")
            with recorded(recording, thread_store(Path(folder))) as writer:
                result = referee(game, seeds, *sides, writer, recording.game_id)
                recording.end(result)
        else:
            result = referee(game, seeds, *sides)
        if profiler is not None:
            profiler.disable()
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        for link in links:
            link.close()
        SPLIT["referee"] = cpu / rounds
        players = _reap(pids)
        SPLIT["game processes"] = players / rounds
        cpu += players
    assert result.status == "complete", result.status
    if profiler is not None:
        _print_profile("the referee", profiler)
    return wall / rounds, cpu / rounds


def in_process_round(rounds: int) -> tuple[float, float]:
    """(wall, CPU) seconds a round of the same game with both agents in this process
    (the synchronous runner, round by round): the rules' and the agents' own work,
    which no transport removes."""
    from littlestone.games.classes import make_class
    from littlestone.games.game import MISTAKE_BOUND, GameSpec
    from littlestone.local import play

    game = GameSpec(MISTAKE_BOUND, rounds, make_class(CLASS))
    learner, adversary = _agents()
    wall, cpu = time.perf_counter(), _cpu()
    result = play(game, learner, adversary, seed=1, blocks=False)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    assert result.status == "complete", result.status
    return wall / rounds, cpu / rounds


def rows(rounds: int = 2000, repeat: int = 3) -> list[tuple[str, float, float, str]]:
    """The figures, each beside its floor (best of ``repeat``; CPU: the three
    processes' together, the game's start included in the game's)."""

    def best(measure: Callable[[], tuple[float, float]]) -> tuple[float, float]:
        runs = [measure() for _ in range(repeat)]
        return min(r[0] for r in runs), min(r[1] for r in runs)

    raw = best(lambda: raw_round(rounds))
    framed = best(lambda: framed_round(rounds))
    direct = best(lambda: direct_round(rounds))
    split = dict(SPLIT)
    logged = best(lambda: direct_round(rounds, logged=True))
    alone = best(lambda: in_process_round(rounds))
    us = 1e6
    glue = direct[1] - framed[1] - alone[1]
    return [
        (f"a direct-link round's CPU, example learner vs example adversary, {rounds} rounds: "
         f"{direct[1] * us:.0f} us (wall {direct[0] * us:.0f} us; the referee "
         f"{split['referee'] * us:.0f}, the two game processes "
         f"{split['game processes'] * us:.0f})\n    vs the same four "
         f"messages raw on Unix sockets: {raw[1] * us:.0f} us CPU (wall {raw[0] * us:.0f} us)",
         direct[1], raw[1], "s"),
        (f"the same vs the messages framed and msgpack-coded, echoed: {framed[1] * us:.0f} us "
         f"CPU (wall {framed[0] * us:.0f} us)", direct[1], framed[1], "s"),
        (f"the same vs the rules and the agents in one process: {alone[1] * us:.0f} us CPU; "
         f"what is left beyond them and the framed messages: {glue * us:.0f} us",
         direct[1], alone[1] + framed[1], "s"),
        (f"the same, logged (log and index row): {logged[1] * us:.0f} us CPU (wall "
         f"{logged[0] * us:.0f} us)\n    vs unlogged", logged[1], direct[1], "s"),
        (f"a direct-link round's wall time: {direct[0] * us:.0f} us\n    vs the raw round "
         f"trips' ({raw[0] * us:.0f} us)", direct[0], raw[0], "s"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true",
                        help="print where a direct-link game's CPU goes, by process")
    parser.add_argument("--spread", action="store_true",
                        help="each process where the kernel puts it (by default all on one "
                        "CPU, as a tournament plays a game on direct links: "
                        "littlestone.server.tournament.matches._one_cpu)")
    args = parser.parse_args(argv)
    if not args.spread and len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # (the forks inherit it)
    if args.profile:
        direct_round(args.rounds, profile=True)
        return 0
    print(f"load average {os.getloadavg()[0]:.1f}; on CPUs {sorted(os.sched_getaffinity(0))}")
    for name, ours, base, unit in rows(args.rounds, args.repeat):
        label, *more = name.split("\n")
        print(f"{label:<100} {ours:>10.4g} {base:>10.4g} {ours / base:>7.3g}x  {unit}")
        for line in more:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
