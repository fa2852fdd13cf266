"""The server cases: small scripted clients, each checking one rule of PROTOCOL.md.

Each case is a :class:`~littlestone.conformance.script.Case` whose script plays a client
against the server under test, sans I/O (:mod:`littlestone.conformance.script`). The
cases assume only what the spec says: a server's built-in agents ``random-target`` and
``halving``, the classes ``thresholds:n=N``, free experts with ``cover-flip``, and the
default limits of section 1.1 where a case needs one (the lobby's 64 KiB, 16 lobby
faults); ``welcome.limits.max_frame`` gives the frame size.

A case marked with an issue-43 point checks what the spec says after that point was
settled; a server from before it may fail that case.

>>> [case.id for case in SERVER_CASES][:3]
['hello', 'version', 'token']
>>> len({case.id for case in SERVER_CASES}) == len(SERVER_CASES)
True
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import struct
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from littlestone.conformance.script import (
    Case,
    CaseFailed,
    CaseSkipped,
    Closed,
    Connect,
    Event,
    Message,
    PeerMap,
    Script,
    Send,
    Step,
    check,
    expect,
    expect_close,
    expect_error,
    frame,
    receive,
    shown,
)
from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.coin import Coin
from littlestone.games.commitment import digest

__all__ = ["SERVER_CASES", "ServerUnderTest"]

#: The lobby's largest message but a submit's (PROTOCOL.md 4.2).
LOBBY_FRAME = 1 << 16
#: Bad messages in the lobby, the last of them fatal (PROTOCOL.md 1.1).
LOBBY_FAULTS = 16
INT64 = 1 << 63
#: The largest frame the frame-size case sends (one past the server's max_frame).
MAX_FRAME_SENT = 64 << 20


@dataclass(frozen=True)
class ServerUnderTest:
    """What the kit knows of the server: a token (None: an ``--anonymous`` server)."""

    token: str | None = None
    agent: str = "conformance-kit"
    #: Seeds the games of the cases use (challenge.seed).
    seed: int = 7

    def hello(self, role: str = "learner", **changes: object) -> bytes:
        message: dict[str, object] = {"type": "hello", "version": 1, "role": role,
                                      "agent": self.agent, "token": self.token,
                                      "capabilities": []}
        message.update(changes)
        return frame(message)


Steps = Generator[Step, Event | None, Any]


def lobby(server: ServerUnderTest, role: str = "learner", conn: int = 0) -> Steps:
    """Connect, say hello, get ``welcome``; the welcome's map."""
    yield Connect(conn)
    yield Send(server.hello(role), conn)
    return (yield from expect("welcome", conn=conn))


def rules(game: str = "mistake-bound", hclass: str | None = "thresholds:n=8",
          experts: int | None = None, rounds: int = 6) -> dict[str, object]:
    return {"game": game, "class": hclass, "experts": experts, "rounds": rounds,
            "horizon": rounds}


def challenge(server: ServerUnderTest, asked: dict[str, object], opponent: str,
              conn: int = 0) -> Steps:
    """Send ``challenge`` and get ``start``, checked against section 4; its map."""
    yield Send(frame({"type": "challenge", "rules": asked, "opponent": opponent,
                      "seed": server.seed}), conn)
    start = yield from expect("start", conn=conn)
    check(isinstance(start.get("game_id"), str) and start["game_id"],
          "start.game_id is not a non-empty string")
    check(isinstance(start.get("seed"), int), "start.seed is not an integer")
    commitment = start.get("commitment")
    check(isinstance(commitment, bytes) and len(commitment) == 32,
          "start.commitment is not 32 bytes of bin")
    got = start.get("rules")
    check(isinstance(got, dict) and all(got.get(k) == v for k, v in asked.items()),
          f"start.rules {got!r} are not the rules asked for {asked!r}")
    return start


def ended(start: PeerMap, end: PeerMap) -> PeerMap:
    """Check ``end`` (section 5, 7): a status, a result map, the key that opens the
    start's commitment; the result."""
    check(isinstance(end.get("status"), str), "end.status is not a string")
    key = end.get("key")
    if not (isinstance(key, bytes) and len(key) == 32):
        raise CaseFailed("end.key is not 32 bytes of bin")
    check(hashlib.sha256(key).digest() == start["commitment"],
          "SHA-256(end.key) is not start.commitment")
    result = end.get("result")
    check(isinstance(result, dict), "end.result is not a map")
    return result  # type: ignore[return-value]  # checked to be a map just above


@dataclass
class LearnerGame:
    """A learner's game as the client saw it."""

    start: PeerMap
    end: PeerMap
    #: Each round: (t, x, p sent, y told).
    rounds: list[tuple[int, object, float, int]]
    errors: list[PeerMap]


def play_learner(server: ServerUnderTest, asked: dict[str, object], opponent: str,
                 predict: Callable[[int, object], object],
                 update: Callable[[object, int], None] | None = None) -> Steps:
    """A mistake-bound game as learner; ``predict(t, x)`` gives the p to send,
    ``update(x, y)`` is told each label. Checks section 5.1's order: instance t, the label
    of round t-1 with instance t, the last label with ``end``."""
    yield from lobby(server)
    start = yield from challenge(server, asked, opponent)
    check(start.get("role") == "learner", f"start.role is {start.get('role')!r}")
    seen: list[tuple[int, object, float, int]] = []
    errors: list[PeerMap] = []
    pending: tuple[int, object, float] | None = None
    while True:
        message = yield from _next_of(("instance", "end", "error"))
        if message["type"] == "error":
            check(message.get("fatal") is False, f"a fatal error in a game: {message}")
            errors.append(message)
            continue
        label = message.get("label")
        if pending is not None:
            check(isinstance(label, dict) and label.get("t") == pending[0]
                  and label.get("y") in (0, 1),
                  f"{message['type']} does not carry round {pending[0]}'s label: {label!r}")
            seen.append((*pending, label["y"]))
            if update is not None:
                update(pending[1], label["y"])
            pending = None
        if message["type"] == "end":
            return LearnerGame(start, message, seen, errors)
        t = message.get("t")
        check(t == len(seen) + 1, f"instance t={t!r} where round {len(seen) + 1} was due")
        p = predict(t, message.get("x"))
        yield Send(frame({"type": "predict", "t": t, "p": p}))
        pending = (t, message.get("x"), p)  # type: ignore[assignment]  # p a number here


def _next_of(kinds: tuple[str, ...], conn: int = 0) -> Steps:
    event = yield from receive(conn=conn)
    if isinstance(event, Message) and event.type in kinds:
        return event.body
    raise CaseFailed(f"expected {' or '.join(kinds)}, got {shown(event)}")


def halving(hclass: FiniteClass) -> tuple[Callable[[int, object], float],
                                           Callable[[object, int], None]]:
    """Halving over the class, as the spec defines it: predict and update."""
    alive = list(range(hclass.size))

    def predict(t: int, x: object) -> float:
        check(isinstance(x, int) and 0 <= x < hclass.domain_size,
              f"instance {x!r} is not an int of the domain 0..{hclass.domain_size - 1}")
        values = hclass.evaluate(x)  # type: ignore[arg-type]  # checked an int
        return 1.0 if 2 * sum(bool(values[h]) for h in alive) >= len(alive) else 0.0

    def update(x: object, y: int) -> None:
        values = hclass.evaluate(x)  # type: ignore[arg-type]  # checked above
        alive[:] = [h for h in alive if int(values[h]) == y] or alive

    return predict, update


# ---------------------------------------------------------------- handshake (section 3)

def hello_case(server: ServerUnderTest) -> Script:
    welcome = yield from lobby(server)
    check(welcome.get("version") == 1, f"welcome.version is {welcome.get('version')!r}")
    check(isinstance(welcome.get("session"), str), "welcome.session is not a string")
    check(isinstance(welcome.get("server"), str), "welcome.server is not a string")
    limits = welcome.get("limits")
    check(isinstance(limits, dict), "welcome.limits is not a map")
    for key in ("max_frame", "move_deadline_ms", "time_bank_ms", "lobby_idle_ms"):
        check(isinstance(limits.get(key), int) and limits[key] > 0,
              f"welcome.limits.{key} is not a positive int")


def version_case(server: ServerUnderTest) -> Script:
    yield Connect()
    yield Send(server.hello(version=2))
    yield from expect_error("unsupported_version", fatal=True)
    yield from expect_close(1002)


def token_case(server: ServerUnderTest) -> Script:
    if server.token is None:
        raise CaseSkipped("no token given: an --anonymous server may admit any token")
    yield Connect()
    yield Send(server.hello(token="not-a-token-of-this-server"))
    yield from expect_error("unauthorized", fatal=True)
    yield from expect_close(1008)


def text_hello_case(server: ServerUnderTest) -> Script:
    yield Connect()
    yield Send('{"type": "hello", "version": 1}')
    yield from expect_error("bad_message", fatal=True)
    yield from expect_close(1003)


def garbage_hello_case(server: ServerUnderTest) -> Script:
    yield Connect()
    yield Send(b"\xc1\xc1")
    yield from expect_error("bad_message", fatal=True)
    yield from expect_close(1003)


def bad_agent_case(server: ServerUnderTest) -> Script:
    yield Connect()
    yield Send(server.hello(agent="\x1b[2Jme"))
    yield from expect_error("bad_message", fatal=True)
    yield from expect_close(1003)


def challenge_first_case(server: ServerUnderTest) -> Script:
    yield Connect()
    yield Send(frame({"type": "challenge", "rules": rules(), "opponent": "random-target",
                      "seed": 1}))
    yield from expect_error("out_of_turn", fatal=True)
    yield from expect_close(1008)


# ---------------------------------------------------------------- limits (section 1.1)

def frame_size_case(server: ServerUnderTest) -> Script:
    welcome = yield from lobby(server)
    max_frame = welcome.get("limits", {}).get("max_frame")
    check(isinstance(max_frame, int), "welcome.limits.max_frame is not an int")
    if max_frame > MAX_FRAME_SENT:
        raise CaseSkipped(f"welcome.limits.max_frame is {max_frame}: the kit sends at most "
                          f"{MAX_FRAME_SENT} bytes")
    yield Send(frame({"type": "join", "game_id": "g", "pad": bytes(max_frame)}))
    event = yield from receive()
    if not isinstance(event, Closed):  # an error frame first is allowed, not required
        event = yield from receive()
    check(isinstance(event, Closed) and event.code == 1009,
          f"expected a close with code 1009, got {shown(event)}")


def lobby_size_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(frame({"type": "join", "game_id": "g", "pad": bytes(LOBBY_FRAME + 4096)}))
    yield from expect_error("bad_message", fatal=True)
    yield from expect_close(1003)


def lobby_faults_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    for n in range(1, LOBBY_FAULTS + 1):
        yield Send(frame({"type": "frobnicate", "n": n}))
        yield from expect_error("bad_message", fatal=n == LOBBY_FAULTS)
    yield from expect_close(1003)


# ---------------------------------------------------------------- the lobby (sections 1, 4, 6)

def unknown_type_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(frame({"type": "frobnicate"}))
    yield from expect_error("bad_message", fatal=False)
    yield from _still_open(server)


def _still_open(server: ServerUnderTest) -> Steps:
    """The session answers in the lobby still: a join of no game is ``not_found``."""
    yield Send(frame({"type": "join", "game_id": "no-such-game"}))
    yield from expect_error("not_found", fatal=False)


def garbage_lobby_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(b"\xc1")
    yield from expect_error("bad_message", fatal=False)
    yield Send("a text frame")
    yield from expect_error("bad_message", fatal=False)
    yield from _still_open(server)


def lobby_move_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(frame({"type": "predict", "t": 1, "p": 0.5}))
    yield from expect_error("out_of_turn", fatal=False)
    yield from _still_open(server)


def missing_key_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    asked = rules()
    del asked["rounds"]
    yield Send(frame({"type": "challenge", "rules": asked, "opponent": "random-target",
                      "seed": 1}))
    yield from expect_error("bad_message", fatal=False)
    yield Send(frame({"type": "challenge", "opponent": "random-target", "seed": 1}))
    yield from expect_error("bad_message", fatal=False)


def wrong_type_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(frame({"type": "challenge", "rules": dict(rules(), rounds="six"),
                      "opponent": "random-target", "seed": 1}))
    yield from expect_error("bad_message", fatal=False)


def seed_range_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(frame({"type": "challenge", "rules": rules(), "opponent": "random-target",
                      "seed": INT64}))
    yield from expect_error("bad_message", fatal=False)
    yield Send(frame({"type": "challenge", "rules": rules(rounds=2),
                      "opponent": "random-target", "seed": -INT64}))
    yield from expect("start")


def unsupported_game_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(frame({"type": "challenge", "rules": rules(), "opponent": "no-such-agent",
                      "seed": 1}))
    yield from expect_error("unsupported_game", fatal=False)
    yield Send(frame({"type": "challenge", "rules": rules(), "opponent": "/etc/passwd.py:X",
                      "seed": 1}))
    yield from expect_error("unsupported_game", fatal=False)


def over_budget_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(frame({"type": "challenge", "rules": rules(rounds=1 << 62),
                      "opponent": "random-target", "seed": 1}))
    yield from expect_error("over_budget", fatal=False)


def not_found_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield from _still_open(server)


# ---------------------------------------------------------------- games (sections 5, 7)

def learner_game_case(server: ServerUnderTest) -> Script:
    hclass = make_class("thresholds:n=8")
    assert isinstance(hclass, FiniteClass)
    predict, update = halving(hclass)
    played = yield from play_learner(server, rules(rounds=12), "random-target", predict,
                                     update)
    result = ended(played.start, played.end)
    check(played.end["status"] == "complete", f"end.status is {played.end['status']!r}")
    check(len(played.rounds) == 12, f"{len(played.rounds)} rounds played of 12")
    mistakes = sum(int(p) != y for _, _, p, y in played.rounds)
    check(result.get("rounds") == 12, f"result.rounds is {result.get('rounds')!r}, not 12")
    check(result.get("mistakes") == mistakes,
          f"result.mistakes is {result.get('mistakes')!r}; the rounds give {mistakes}")
    check(mistakes <= 3, f"halving made {mistakes} mistakes on 9 thresholds (bound log2 9)")


#: Games the coin case plays: a wrong coin matches a game's count by chance (about one
#: time in seven at 16 rounds), in all of them about once in 10^7.
COIN_GAMES = 8


def coin_case(server: ServerUnderTest) -> Script:
    """p in {1/4, 1/2, 3/4}: the realised mistakes are the referee's coin's, predicting
    1 iff u_t < p_t (section 7), in each of :data:`COIN_GAMES` games."""
    for game in range(COIN_GAMES):
        seeded = dataclasses.replace(server, seed=server.seed + game)
        played = yield from play_learner(seeded, rules(rounds=16), "random-target",
                                         lambda t, x: (t % 3 + 1) / 4)
        result = ended(played.start, played.end)
        referee = hmac.new(played.end["key"], f"referee:{seeded.seed}".encode(),
                           hashlib.sha256).digest()
        draws = Coin(referee).random(len(played.rounds))
        mistakes = sum(int(u < p) != y for u, (_, _, p, y) in zip(draws, played.rounds,
                                                                  strict=True))
        expected = sum(abs(p - y) for _, _, p, y in played.rounds)
        check(result.get("mistakes") == mistakes,
              f"game {game + 1}: result.mistakes is {result.get('mistakes')!r}; the coin of "
              f"section 7 gives {mistakes}")
        check(abs(float(result.get("expected_mistakes", -1)) - expected) < 1e-9,
              f"game {game + 1}: result.expected_mistakes is "
              f"{result.get('expected_mistakes')!r}, not the sum of |p - y|, {expected}")


def player_seed_case(server: ServerUnderTest) -> Script:
    """start.seed is the first 8 bytes of HMAC-SHA256(K, "learner:S") (section 7)."""
    played = yield from play_learner(server, rules(rounds=2), "random-target",
                                     lambda t, x: 0.0)
    ended(played.start, played.end)
    derived = hmac.new(played.end["key"], f"learner:{server.seed}".encode(),
                       hashlib.sha256).digest()[:8]
    check(played.start["seed"] in (int.from_bytes(derived, "little"),
                                   int.from_bytes(derived, "little", signed=True)),
          f"start.seed {played.start['seed']} is not HMAC-SHA256(K, \"learner:"
          f"{server.seed}\")'s first 8 bytes, little-endian")


def experts_game_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    asked = rules("experts", None, 3, 10)
    start = yield from challenge(server, asked, "cover-flip")
    expected = 0.0
    t = 0
    while True:
        message = yield from _next_of(("advice", "end"))
        outcome = message.get("outcome")
        if t:
            check(isinstance(outcome, dict) and outcome.get("t") == t,
                  f"{message['type']} does not carry round {t}'s outcome")
            costs = _vector(outcome.get("costs"))
            check(costs is not None and len(costs) == 3, f"outcome.costs {costs!r}")
            expected += sum(costs) / 3  # type: ignore[arg-type]  # checked a list
        if message["type"] == "end":
            break
        t += 1
        check(message.get("t") == t, f"advice t={message.get('t')!r} where {t} was due")
        yield Send(frame({"type": "weights", "t": t, "w": [1 / 3, 1 / 3, 1 / 3]}))
    result = ended(start, message)
    check(message["status"] == "complete", f"end.status is {message['status']!r}")
    check(t == 10 and result.get("rounds") == 10, f"{t} rounds, result.rounds "
          f"{result.get('rounds')!r}, of 10")
    got = result.get("expected_mistakes")
    check(isinstance(got, float | int) and abs(got - expected) < 1e-6,
          f"result.expected_mistakes is {got!r}; the uniform weights and the costs give "
          f"{expected}")


def _vector(value: object) -> list[float] | None:
    if isinstance(value, bytes) and len(value) % 8 == 0:
        return list(struct.unpack(f"<{len(value) // 8}d", value))
    if isinstance(value, list) and all(isinstance(v, int | float) for v in value):
        return [float(v) for v in value]
    return None


THRESHOLDS = "thresholds:n=8"


def adversary_game_case(server: ServerUnderTest) -> Script:
    """Commit to h_3, play x = t mod 8 with its labels, reveal (sections 5.3, 5)."""
    hclass = make_class(THRESHOLDS)
    assert isinstance(hclass, FiniteClass)
    target, salt = 3, bytes(range(16))
    yield from lobby(server, "adversary")
    start = yield from challenge(server, rules(rounds=8), "halving")
    check(start.get("role") == "adversary", f"start.role is {start.get('role')!r}")
    yield Send(frame({"type": "commit", "digest": digest(hclass, target, salt)}))
    mistakes = 0
    for t in range(1, 9):
        x = t % 8
        yield Send(frame({"type": "instance", "t": t, "x": x}))
        prediction = yield from expect("prediction")
        p = prediction.get("p")
        check(prediction.get("t") == t and isinstance(p, float | int) and 0 <= p <= 1,
              f"prediction {prediction!r} for round {t}")
        y = int(hclass.evaluate(x)[target])
        mistakes += int(p != y) if p in (0, 1) else 0
        yield Send(frame({"type": "label", "t": t, "y": y}))
    yield from expect("reveal?")
    yield Send(frame({"type": "reveal", "target": target, "salt": salt}))
    end = yield from expect("end")
    result = ended(start, end)
    check(end["status"] == "complete", f"end.status is {end['status']!r}")
    check(result.get("rounds") == 8, f"result.rounds is {result.get('rounds')!r}, not 8")
    check(result.get("mistakes") == mistakes,
          f"result.mistakes is {result.get('mistakes')!r}; the predictions give {mistakes}")


def experts_adversary_case(server: ServerUnderTest) -> Script:
    """Free experts against the server's ``hedge``: no advice, the answer's weights, the
    costs; the expected loss is the sum of <w_t, v_t> (sections 5.3, 1.2 of the design)."""
    yield from lobby(server, "adversary")
    start = yield from challenge(server, rules("experts", None, 2, 6), "hedge")
    check(start.get("role") == "adversary", f"start.role is {start.get('role')!r}")
    expected = 0.0
    for t in range(1, 7):
        yield Send(frame({"type": "advice", "t": t, "advice": None}))
        answer = yield from expect("answer")
        w = _vector(answer.get("w"))
        check(answer.get("t") == t and w is not None and len(w) == 2
              and abs(sum(w) - 1) < 1e-6 and min(w) >= 0,
              f"answer {shown_map(answer)} is not round {t}'s distribution over 2 experts")
        assert w is not None
        costs = [float(t % 2), 0.5]
        expected += w[0] * costs[0] + w[1] * costs[1]
        yield Send(frame({"type": "costs", "t": t, "v": struct.pack("<2d", *costs)}))
    end = yield from expect("end")
    result = ended(start, end)
    check(end["status"] == "complete", f"end.status is {end['status']!r}")
    got = result.get("expected_mistakes")
    check(isinstance(got, float | int) and abs(got - expected) < 1e-6,
          f"result.expected_mistakes is {got!r}; the weights and the costs give {expected}")


# ---------------------------------------------------------------- faults (section 6)

def learner_fault_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    start = yield from challenge(server, rules(rounds=3), "random-target")
    instance = yield from expect("instance")
    yield Send(frame({"type": "predict", "t": instance["t"], "p": 1.5}))
    yield from expect_error("illegal_move", fatal=False)
    following = yield from expect("instance")
    label = following.get("label")
    check(following.get("t") == 2 and isinstance(label, dict) and label.get("t") == 1,
          f"after the fault, {shown_map(following)} where instance 2 with label 1 was due")
    for t in (2, 3):
        yield Send(frame({"type": "predict", "t": t, "p": 0.0}))
        if t == 2:
            yield from expect("instance")
    end = yield from expect("end")
    result = ended(start, end)
    check(end["status"] == "complete", f"end.status is {end['status']!r}")
    check(result.get("rounds") == 3, f"result.rounds is {result.get('rounds')!r}, not 3")


def shown_map(body: PeerMap) -> str:
    return shown(Message(body))


def forfeit_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    start = yield from challenge(server, rules(rounds=6), "random-target")
    for t in (1, 2, 3):
        message = yield from expect("instance")
        check(message.get("t") == t, f"instance t={message.get('t')!r} where {t} was due")
        yield Send(frame({"type": "predict", "t": t, "p": -1.0}))
        yield from expect_error("illegal_move", fatal=False)
    end = yield from expect("end")
    result = ended(start, end)
    check(end["status"] == "forfeit:learner:illegal_move",
          f"end.status is {end['status']!r}, not forfeit:learner:illegal_move")
    check(result.get("rounds") == 2,
          f"result.rounds is {result.get('rounds')!r}: the third fault's round is not scored "
          "(6), so 2")
    check(result.get("mistakes") == 2, f"result.mistakes is {result.get('mistakes')!r}, "
          "not 2 (a learner's fault is a mistake; the third's round is not scored)")
    faults = result.get("faults")
    check(isinstance(faults, list) and len(faults) == 3,
          f"result.faults is {faults!r}, not the three faults listed (5.5)")


#: The longest deadline plus bank the timeout case waits out (else it is skipped).
TIMEOUT_WAIT_MS = 5000


def timeout_case(server: ServerUnderTest) -> Script:
    """No answer: the server says ``timeout`` itself once the deadline and the bank are
    spent, scores the round, and goes on."""
    welcome = yield from lobby(server)
    limits = welcome.get("limits", {})
    wait = limits.get("move_deadline_ms", 0) + limits.get("time_bank_ms", 0)
    if not isinstance(wait, int) or wait > TIMEOUT_WAIT_MS:
        raise CaseSkipped(f"the server's move deadline plus time bank is {wait} ms: run "
                          "this case against a server with --move-deadline 1 --time-bank 1")
    start = yield from challenge(server, rules(rounds=2), "random-target")
    yield from expect("instance")
    yield from expect_error("timeout", fatal=False, wait=wait / 1000 + 10)
    following = yield from expect("instance")
    label = following.get("label")
    check(following.get("t") == 2 and isinstance(label, dict) and label.get("t") == 1,
          f"after the timeout, {shown_map(following)} where instance 2 with label 1 was due")
    yield Send(frame({"type": "predict", "t": 2, "p": 0.0}))
    end = yield from expect("end")
    result = ended(start, end)
    check(end["status"] == "complete", f"end.status is {end['status']!r}")
    check(isinstance(result.get("mistakes"), int | float) and result["mistakes"] >= 1,
          f"result.mistakes is {result.get('mistakes')!r}: the timed-out round is a mistake")


def out_of_turn_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield from challenge(server, rules(rounds=3), "random-target")
    yield from expect("instance")
    yield Send(frame({"type": "predict", "t": 5, "p": 0.0}))
    yield from expect_error("out_of_turn", fatal=False)
    following = yield from expect("instance")
    check(following.get("t") == 2, f"after an out_of_turn move, {shown_map(following)} "
          "where instance 2 was due (the fault cost the round)")


def adversary_fault_case(server: ServerUnderTest) -> Script:
    """A malformed label is an ``illegal_move`` fault (the round waits for a good one); an
    instance outside the domain is no fault but a broken rule: the game ends
    ``rule_violation:adversary:instance_domain`` at once, with no error first (2, 6.3)."""
    yield from lobby(server, "adversary")
    start = yield from challenge(server, rules(rounds=3), "halving")
    yield Send(frame({"type": "instance", "t": 1, "x": 2}))
    yield from expect("prediction")
    yield Send(frame({"type": "label", "t": 1, "y": 2}))
    yield from expect_error("illegal_move", fatal=False)
    yield Send(frame({"type": "label", "t": 1, "y": 1}))
    yield Send(frame({"type": "instance", "t": 2, "x": 5}))
    prediction = yield from expect("prediction")
    check(prediction.get("t") == 2, f"prediction {prediction!r} where round 2's was due")
    yield Send(frame({"type": "label", "t": 2, "y": 1}))
    yield Send(frame({"type": "instance", "t": 3, "x": 99}))
    end = yield from expect("end")
    ended(start, end)
    check(end["status"] == "rule_violation:adversary:instance_domain",
          f"end.status is {end['status']!r}, not rule_violation:adversary:instance_domain")


def rule_violation_case(server: ServerUnderTest) -> Script:
    yield from lobby(server, "adversary")
    start = yield from challenge(server, rules(rounds=4), "halving")
    for t, x, y in ((1, 0, 0), (2, 7, 1)):  # h_a(x) = [x < a]: only a = 0, then none
        yield Send(frame({"type": "instance", "t": t, "x": x}))
        yield from expect("prediction")
        yield Send(frame({"type": "label", "t": t, "y": y}))
    end = yield from expect("end", skip=("error",))
    ended(start, end)
    check(end["status"] == "rule_violation:adversary:empty_version_space",
          f"end.status is {end['status']!r}, not "
          "rule_violation:adversary:empty_version_space")


def bad_reveal_case(server: ServerUnderTest) -> Script:
    hclass = make_class(THRESHOLDS)
    target, salt = 5, bytes(range(16, 48))
    yield from lobby(server, "adversary")
    start = yield from challenge(server, rules(rounds=2), "halving")
    yield Send(frame({"type": "commit", "digest": digest(hclass, target, salt)}))
    for t in (1, 2):
        yield Send(frame({"type": "instance", "t": t, "x": t}))
        yield from expect("prediction")
        yield Send(frame({"type": "label", "t": t, "y": 1}))
    yield from expect("reveal?")
    yield Send(frame({"type": "reveal", "target": target, "salt": b"short"}))
    yield from expect_error("illegal_move", fatal=False)
    # asked again: a new reveal? may come or not; the reveal sent again is taken
    yield Send(frame({"type": "reveal", "target": target, "salt": salt}))
    end = yield from expect("end", skip=("reveal?",))
    ended(start, end)
    check(end["status"] == "complete", f"end.status is {end['status']!r}")


# ---------------------------------------------------------------- spectators (section 5.4)

def spectator_case(server: ServerUnderTest) -> Script:
    yield from lobby(server, "spectator")
    yield Send(frame({"type": "watch", "game_id": "no-such-game"}))
    yield from expect_error("not_found", fatal=False)
    yield Send(frame({"type": "challenge", "rules": rules(), "opponent": "random-target",
                      "seed": 1}))
    yield from expect_error("out_of_turn", fatal=False)


def player_watch_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(frame({"type": "watch", "game_id": "no-such-game"}))
    yield from expect_error("out_of_turn", fatal=False)


def watching_case(server: ServerUnderTest) -> Script:
    """A player's own running game, watched before its first round is scored."""
    yield from lobby(server, "learner", conn=0)
    start = yield from challenge(server, rules(rounds=3), "random-target", conn=0)
    yield from expect("instance", conn=0)  # and leave it unanswered: the game stays at t=0
    yield from lobby(server, "spectator", conn=1)
    yield Send(frame({"type": "watch", "game_id": start["game_id"]}), 1)
    watching = yield from expect("watching", conn=1)
    check(watching.get("game_id") == start["game_id"],
          f"watching.game_id is {watching.get('game_id')!r}")
    check(isinstance(watching.get("rules"), dict), "watching.rules is not a map")
    check(watching.get("t") == 0, f"watching.t is {watching.get('t')!r} before any round")
    for key in ("mistakes", "expected_mistakes"):
        check(watching.get(key) == 0, f"watching.{key} is {watching.get(key)!r}, not 0")


def enter_case(server: ServerUnderTest) -> Script:
    yield from lobby(server)
    yield Send(frame({"type": "enter", "tournament": "no-such-tournament"}))
    if server.token is None:  # the token's name is the entrant (section 6.1)
        yield from expect_error("unauthorized", fatal=True)
        yield from expect_close(1008)
    else:
        yield from expect_error("not_found", fatal=False)


# ---------------------------------------------------------------- two players (section 4)

def create_join_case(server: ServerUnderTest) -> Script:
    yield from lobby(server, "learner", conn=0)
    yield Send(frame({"type": "create", "rules": rules(rounds=2), "seed": 5}), 0)
    created = yield from expect("created", conn=0)
    game_id = created.get("game_id")
    check(isinstance(game_id, str), "created.game_id is not a string")
    yield from lobby(server, "adversary", conn=1)
    yield Send(frame({"type": "join", "game_id": game_id}), 1)
    starts = []
    for conn in (0, 1):
        start = yield from expect("start", conn=conn)
        check(start.get("game_id") == game_id, f"start.game_id {start.get('game_id')!r} "
              f"is not the created {game_id!r}")
        starts.append(start.get("role"))
    check(starts == ["learner", "adversary"], f"the roles are {starts}")
    yield Send(frame({"type": "instance", "t": 1, "x": 3}), 1)
    instance = yield from expect("instance", conn=0)
    check(instance.get("x") == 3, f"the learner got {shown_map(instance)}, not x = 3")
    yield Send(frame({"type": "predict", "t": 1, "p": 1.0}), 0)
    prediction = yield from expect("prediction", conn=1)
    check(prediction.get("p") == 1.0, f"the adversary got {shown_map(prediction)}, not p = 1")
    yield Connect(1)  # the adversary goes away with its label due (a fresh connection)
    end = yield from expect("end", conn=0, wait=15)
    check(end.get("status") == "disconnected:adversary",
          f"end.status is {end.get('status')!r}, not disconnected:adversary")


SERVER_CASES: tuple[Case, ...] = (
    Case("hello", "3", "hello is answered with welcome: version 1, a session, the limits",
         hello_case),
    Case("version", "3, 8", "another version: unsupported_version, fatal, close 1002",
         version_case),
    Case("token", "3, 3.1", "an unknown token: unauthorized, fatal, close 1008", token_case),
    Case("text-hello", "1, 3", "a text frame first: bad_message, fatal, close 1003",
         text_hello_case, point=19),
    Case("garbage-hello", "1, 3", "an undecodable frame first: bad_message, fatal, close 1003",
         garbage_hello_case, point=19),
    Case("agent-name", "3", "an agent name with escape codes: bad_message, fatal, close 1003",
         bad_agent_case, point=19),
    Case("challenge-first", "3", "challenge before hello: out_of_turn, fatal, close 1008",
         challenge_first_case, point=1),
    Case("frame-size", "1.1", "a frame over welcome.limits.max_frame: close 1009",
         frame_size_case, point=2),
    Case("lobby-size", "1.1, 4.2", "a lobby message over 64 KiB: bad_message, fatal, "
         "close 1003", lobby_size_case, point=3),
    Case("lobby-faults", "1.1, 4.1", "16 bad messages in the lobby: the 16th fatal, close "
         "1003", lobby_faults_case, point=19),
    Case("unknown-type", "1, 6", "an unknown message type: bad_message, not fatal",
         unknown_type_case, point=15),
    Case("garbage-lobby", "1, 4.1", "undecodable and text frames after welcome: "
         "bad_message, not fatal", garbage_lobby_case),
    Case("lobby-move", "4.1", "a move in the lobby: out_of_turn, not fatal", lobby_move_case),
    Case("missing-key", "1, 2", "a challenge without rules, rules without rounds: "
         "bad_message", missing_key_case),
    Case("wrong-type", "1", "rules.rounds a string: bad_message", wrong_type_case),
    Case("seed-range", "4, 6.1", "seed 2^63: bad_message; seed -2^63: a game",
         seed_range_case),
    Case("unsupported-game", "4", "an opponent not served or naming a file: "
         "unsupported_game", unsupported_game_case),
    Case("over-budget", "1.2", "2^62 rounds: over_budget, not fatal", over_budget_case),
    Case("not-found", "4", "join of no open game: not_found, not fatal", not_found_case),
    Case("learner-game", "5.1, 7", "a mistake-bound game as learner: the rounds, end.key "
         "opening start.commitment, the counts", learner_game_case),
    Case("coin", "7", "p in {1/4, 1/2, 3/4}: the realised mistakes are the referee's coin's",
         coin_case, point=11),
    Case("player-seed", "7", "start.seed is derived from the key and the seed", player_seed_case,
         point=12),
    Case("experts-game", "5.2", "an experts game as learner: advice, weights, outcomes, "
         "the expected loss", experts_game_case),
    Case("experts-adversary", "5.3", "an experts game as adversary: advice nil, the "
         "answer's weights, costs, the expected loss", experts_adversary_case),
    Case("adversary-game", "5.3, 5", "a committed adversary: instances, labels, reveal?, "
         "reveal, the counts", adversary_game_case, point=10),
    Case("learner-fault", "6", "p = 1.5: illegal_move, not fatal; the round is lost, the "
         "game goes on", learner_fault_case),
    Case("timeout", "1.1, 6", "no move: timeout sent by the server once the deadline and "
         "bank run out; the round lost", timeout_case, point=20),
    Case("out-of-turn", "6, 6.1", "a move for another round: out_of_turn, the round lost",
         out_of_turn_case),
    Case("forfeit", "6", "three faults: forfeit:learner:illegal_move, three rounds, "
         "result.faults", forfeit_case, point=6),
    Case("adversary-fault", "6, 6.1", "an instance outside the domain, a label 2: "
         "illegal_move, asked again", adversary_fault_case, point=8),
    Case("rule-violation", "1.3, 6", "a label emptying the version space: "
         "rule_violation:adversary:empty_version_space", rule_violation_case, point=7),
    Case("bad-reveal", "5.3, 6.1", "a reveal with a short salt: illegal_move; the reveal "
         "sent again ends the game", bad_reveal_case, point=9),
    Case("spectator", "5.4", "a spectator: watch of no game not_found, challenge "
         "out_of_turn", spectator_case),
    Case("player-watch", "5.4", "a player's watch: out_of_turn", player_watch_case),
    Case("watching", "5.4", "a running game watched at t = 0: watching with t and zero "
         "totals", watching_case, point=18),
    Case("enter", "4, 6.1", "enter of no running tournament: not_found; without a token: "
         "unauthorized, close 1008", enter_case, point=17),
    Case("create-join", "4", "create and join on two connections; a player leaving ends "
         "the game disconnected", create_join_case),
)
