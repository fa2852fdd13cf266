"""The direct link between a tournament's referee and a submission's game process
(server/tournament/direct.py): its door takes each one-time token once, and its referee
keeps the move clock, the fault ladder and the records of the server's remote players."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec, game_seeds
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.protocol.frames import FrameSocket
from littlestone.server.tournament.direct import DirectAdversary, DirectLearner, Door, referee

GAME = GameSpec(MISTAKE_BOUND, 30, make_class("thresholds:n=31"))
KEY = bytes(32)


def _enter(door: Door, token: str) -> FrameSocket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(door.path))
    link = FrameSocket(sock)
    link.send({"type": "enter", "token": token})
    return link


def test_the_door_takes_each_token_once(tmp_path):
    door = Door(tmp_path)
    try:
        token, entered = door.expect()
        assert token.startswith("lsd_")
        stranger = _enter(door, "lsd_guessed")
        with pytest.raises(EOFError):
            stranger.recv(time.monotonic() + 10)  # closed: no such token
        first = _enter(door, token)
        link = entered.result(10)
        link.send({"type": "start"})
        assert first.recv(time.monotonic() + 10) == {"type": "start"}
        again = _enter(door, token)  # spent
        with pytest.raises(EOFError):
            again.recv(time.monotonic() + 10)
        late, waiting = door.expect()
        door.revoke(late)
        assert waiting.cancelled()
        with pytest.raises(EOFError):
            _enter(door, late).recv(time.monotonic() + 10)
    finally:
        door.close()


def _agent(sock: socket.socket, moves: dict[int, object], delay: dict[int, float]) -> None:
    """A learner's game process that answers round t with ``moves[t]`` (after
    ``delay[t]`` seconds), else 0.5."""
    link = FrameSocket(sock)
    try:
        while True:
            message = link.recv()
            if message["type"] == "instance":
                t = message["t"]
                time.sleep(delay.get(t, 0.0))
                link.send({"type": "predict", "t": t, "p": moves.get(t, 0.5)})
    except EOFError:
        pass


def test_a_learner_on_a_direct_link_is_held_to_the_clock_and_the_fault_ladder():
    """Late (its late move then dropped), not a number (a field of the wrong type:
    ``bad_message``, PROTOCOL.md 6.1), outside [0, 1]: three faults, each recorded with
    its round and code, and the third forfeits, as a remote learner's would."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    # round 1 answered 0.7 s late for a 0.5 s deadline: round 2's instance waits 0.2 s
    agent = threading.Thread(target=_agent, args=(theirs, {2: "half", 3: 2.0}, {1: 0.7}))
    agent.start()
    learner = DirectLearner(FrameSocket(ours), move_deadline=0.5, time_bank=0.0)
    result = referee(GAME, game_seeds(0, KEY), learner, ADVERSARIES.make("random-target"))
    ours.close()
    agent.join(10)
    assert result.status == "forfeit:learner:illegal_move"
    assert [(f["t"], f["code"]) for f in result.extra["faults"]] == [
        (1, "timeout"), (2, "bad_message"), (3, "illegal_move")]
    assert result.rounds == 2  # (rounds 1 and 2 scored as mistakes; round 3 forfeits)


def test_a_learner_that_leaves_is_disconnected():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    theirs.close()
    learner = DirectLearner(FrameSocket(ours), move_deadline=1.0, time_bank=0.0)
    result = referee(GAME, game_seeds(0, KEY), learner, ADVERSARIES.make("random-target"))
    assert result.status == "disconnected:learner"


def _serve_agent(sock: socket.socket, spec: str, role: str) -> None:
    from littlestone.client import play_direct

    agent = LEARNERS.make(spec) if role == "learner" else ADVERSARIES.make(spec)
    play_direct(FrameSocket(sock), agent)  # (says ready, then plays)


@pytest.mark.parametrize("learner,adversary", [("halving", "shattered-tree"),
                                               ("soa", "random-target")])
def test_two_agents_on_direct_links_play_the_game_they_play_in_process(learner, adversary):
    """Both sides' game processes (here threads, with the client's own loop) on direct
    links: the game they play in process under the same key (shattered-tree's
    commitment and reveal included)."""
    links = {}
    threads = []
    for role, spec in (("learner", learner), ("adversary", adversary)):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        links[role] = FrameSocket(ours)
        threads.append(threading.Thread(target=_serve_agent, args=(theirs, spec, role)))
        threads[-1].start()
    for link in links.values():
        assert link.recv(time.monotonic() + 30)["type"] == "ready"
    result = referee(GAME, game_seeds(3, KEY), DirectLearner(links["learner"], 30, 0),
                     DirectAdversary(links["adversary"], 30, 0))
    for link in links.values():
        link.close()
    for thread in threads:
        thread.join(30)
    local = play(GAME, LEARNERS.make(learner), ADVERSARIES.make(adversary), 3, key=KEY)
    assert result.status == local.status == "complete"
    assert (result.mistakes, result.expected_mistakes) == (local.mistakes,
                                                           local.expected_mistakes)


class _CountedSocket:
    """A socket whose writes are counted (each ``sendall`` is one wake-up of its peer)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.writes = sock, 0

    def sendall(self, data: bytes) -> None:
        self.writes += 1
        self.sock.sendall(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self.sock, name)


def test_an_adversary_sends_its_label_and_its_next_instance_in_one_write():
    """A round needs four wake-ups (issue 42): the adversary's label and the next
    instance, which follows it unasked, go in one write, not two."""
    from littlestone.client import play_direct

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    counted = _CountedSocket(theirs)
    agent = ADVERSARIES.make("random-target")
    link = FrameSocket(counted)  # (a socket, its writes counted)
    thread = threading.Thread(target=play_direct, args=(link, agent))
    thread.start()
    referees = FrameSocket(ours)
    assert referees.recv(time.monotonic() + 30)["type"] == "ready"
    result = referee(GAME, game_seeds(3, KEY), LEARNERS.make("halving"),
                     DirectAdversary(referees, 30, 0))
    referees.close()
    thread.join(30)
    assert result.status == "complete" and result.rounds == GAME.rounds
    # ready; its commitment with round 1's instance; a label (and the next instance) a
    # round; its reveal (before: 63, a write a message)
    assert counted.writes == 1 + 1 + GAME.rounds + 1


def _scripted(sock: socket.socket, frames: dict[int, list[dict[str, object]]]) -> None:
    """A learner's game process that answers round t's instance with ``frames[t]`` (by
    default a good move, p = 1/2), whatever the referee says between them."""
    link = FrameSocket(sock)
    try:
        while True:
            message = link.recv()
            if message["type"] == "instance":
                t = message["t"]
                for frame in frames.get(t, [{"type": "predict", "t": t, "p": 0.5}]):
                    link.send(frame)
    except (EOFError, OSError):
        pass


def _scripted_game(frames: dict[int, list[dict[str, object]]], rounds: int = 6):
    game = GameSpec(MISTAKE_BOUND, rounds, make_class("thresholds:n=31"))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    agent = threading.Thread(target=_scripted, args=(theirs, frames))
    agent.start()
    learner = DirectLearner(FrameSocket(ours), move_deadline=30.0, time_bank=0.0)
    try:
        return referee(game, game_seeds(0, KEY), learner, ADVERSARIES.make("random-target"))
    finally:
        ours.close()
        agent.join(10)


def test_a_round_number_that_is_not_an_int_is_a_bad_message_on_the_direct_link():
    """PROTOCOL.md 6.1: ``t`` not an int 1 .. 2^63-1 is ``bad_message``, a fault, as on
    the WebSocket (the session's ``from_client``); the link took ``t: true`` and
    ``t: 2.0`` as rounds 1 and 2, and ``t: [3]`` as a move out of turn."""
    result = _scripted_game({1: [{"type": "predict", "t": True, "p": 0.5}],
                             2: [{"type": "predict", "t": 2.0, "p": 0.5}],
                             3: [{"type": "predict", "t": [3], "p": 0.5}]})
    assert [(f["t"], f["code"]) for f in result.extra.get("faults", [])] == [
        (1, "bad_message"), (2, "bad_message"), (3, "bad_message")]
    assert result.status == "forfeit:learner:bad_message"


def test_a_move_for_an_earlier_round_is_a_fault_unless_that_round_was_faulted():
    """PROTOCOL.md 6.1: a move for another round than the current one is
    ``out_of_turn``, a fault, unless it is a late move for a round the player faulted
    (dropped). The link dropped every move for an earlier round without a fault: a
    learner could send them without end, each read and decoded by the referee, and
    never be charged."""
    result = _scripted_game({2: [{"type": "predict", "t": 1, "p": 0.5},   # scored: a fault
                                 {"type": "predict", "t": 2, "p": 0.5}],  # then late: dropped
                             3: [{"type": "predict", "t": 1, "p": 0.5},
                                 {"type": "predict", "t": 3, "p": 0.5}],
                             4: [{"type": "predict", "t": 2, "p": 0.5},   # faulted: dropped
                                 {"type": "predict", "t": 4, "p": 0.5}]})
    assert [(f["t"], f["code"]) for f in result.extra.get("faults", [])] == [
        (2, "out_of_turn"), (3, "out_of_turn")]
    assert result.status == "complete"


def test_a_learner_that_does_not_read_cannot_hold_the_referee_past_the_send_limit():
    """A game process that sends its moves blindly and never reads its link: the
    referee's instances fill the socket's buffer and its send blocked until the sandbox
    was killed (rounds x the move deadline: over an hour for a 1,000-round game at 5 s),
    with no move clock running. A message that waits longer than the send limit drops
    the link, as the server drops a WebSocket that does not read (transport's
    SEND_TIMEOUT_S, PROTOCOL.md 1.1): ``disconnected:learner``."""
    rounds = 2000
    game = GameSpec(MISTAKE_BOUND, rounds, make_class("thresholds:n=31"))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for sock in (ours, theirs):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    blind = FrameSocket(theirs)

    def send_blindly() -> None:
        with contextlib.suppress(OSError):
            for t in range(1, rounds + 1):
                blind.send({"type": "predict", "t": t, "p": 0.5})

    sender = threading.Thread(target=send_blindly)
    sender.start()
    learner = DirectLearner(FrameSocket(ours), move_deadline=30.0, time_bank=0.0)
    learner.send_seconds = 0.2
    results = []
    game_thread = threading.Thread(target=lambda: results.append(referee(
        game, game_seeds(0, KEY), learner, ADVERSARIES.make("random-target"))), daemon=True)
    game_thread.start()
    game_thread.join(20)  # (a guard: the referee, blocked for good, would never return)
    stuck = game_thread.is_alive()
    for sock in (theirs, ours):  # (wakes whatever is blocked on them)
        sock.shutdown(socket.SHUT_RDWR)
    game_thread.join(10)
    sender.join(10)
    ours.close()
    theirs.close()
    assert not stuck, "the referee is still blocked sending to a peer that does not read"
    assert results[0].status == "disconnected:learner"
    assert 0 < results[0].rounds < rounds


def test_late_moves_are_dropped_two_a_move_not_without_end():
    """One fault bought a learner an endless supply of free frames: after it faulted
    round 1, every ``predict`` for round 1 was a late move, dropped without a fault, each
    read and decoded by the referee (up to 1 MiB each, for the move deadline and the
    bank of every round). Now two late moves are dropped while one move is awaited
    (MoveWait, LATE_MOVES), and the next is ``out_of_turn``: here round 2's, then round
    3's, which forfeits."""
    result = _scripted_game({1: [{"type": "predict", "t": 1, "p": 2.0}],  # a fault
                             2: [{"type": "predict", "t": 1, "p": 0.5}] * 50
                             + [{"type": "predict", "t": 2, "p": 0.5}]})
    assert result.status == "forfeit:learner:out_of_turn"


def test_a_direct_game_keeps_its_thread_on_one_cpu_and_gives_the_rest_back():
    """The referee's thread of a game on direct links stays on the CPU it was on (its
    game processes are sent there, :meth:`.LoadedSandbox.run`) and has its CPUs back
    after the game."""
    import os

    from littlestone.server.tournament.matches import _one_cpu

    allowed = os.sched_getaffinity(0)
    seen: list[object] = []

    def game() -> None:
        with _one_cpu() as cpus:
            seen.append((cpus, os.sched_getaffinity(0)))
        seen.append(os.sched_getaffinity(0))

    thread = threading.Thread(target=game)
    thread.start()
    thread.join()
    (cpus, during), after = seen
    if len(allowed) < 2:
        assert cpus is None and during == allowed
    else:
        assert cpus is not None and len(cpus) == 1 and cpus <= allowed and during == cpus
    assert after == allowed
