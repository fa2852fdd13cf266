"""The client cases: a scripted server plays a client program, and checks what it sends.

A *run* starts the program once against the scripted server of
:mod:`littlestone.conformance.runner`, which answers its ``hello``, plays the game its
``challenge`` or ``create`` asks for, and keeps everything the client sent in a
:class:`Transcript`. A *case* is a check on a run's transcript, with the PROTOCOL.md
section it holds the client to. The program is told the server's URL by
``$LITTLESTONE_URL`` or by ``{url}`` in its arguments; any token is accepted.

The scripted server plays either role of the mistake-bound game on a finite class and
of the experts game (free experts or a finite class's), for up to :data:`MAX_ROUNDS`
rounds; other requests are answered ``unsupported_game`` and the cases fail saying so.
Its coin is section 7's, so a client may check every draw once the key is revealed.

>>> [run.name for run in CLIENT_RUNS]
['plain', 'unknown-keys', 'error']
>>> sorted(case.id for case in CLIENT_CASES)[:3]
['client-binary', 'client-end', 'client-error-not-fatal']
"""

from __future__ import annotations

import hashlib
import random
import secrets
import struct
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from littlestone.conformance.script import (
    Case,
    CaseSkipped,
    Closed,
    Event,
    Garbled,
    Message,
    PeerMap,
    Receive,
    Script,
    Send,
    Silence,
    Step,
    check,
    frame,
    receive,
    shown,
)
from littlestone.games.classes import ClassBudget, FiniteClass, make_class
from littlestone.games.coin import Coin
from littlestone.games.commitment import MIN_SALT_BYTES, digest
from littlestone.games.errors import LittlestoneError, Unsupported
from littlestone.games.game import game_seeds

__all__ = ["CLIENT_CASES", "CLIENT_RUNS", "MAX_ROUNDS", "URL_VARIABLE", "ClientRun",
           "Transcript", "Unsupported"]

#: The environment variable that tells the client program the scripted server's URL.
URL_VARIABLE = "LITTLESTONE_URL"
#: The longest game the scripted server plays.
MAX_ROUNDS = 1000
#: Seconds the scripted server waits for a move (and for the client's close).
MOVE_WAIT = 20.0
#: Seconds the scripted server holds ``welcome`` back, to see that the client waits.
WELCOME_DELAY = 0.3
INT64 = 1 << 63
#: The classes the scripted server builds: up to 2^16 hypotheses, none read from a file.
SCRIPTED_CLASSES = ClassBudget(max_hypotheses=1 << 16, max_dimension=64, files=False)
#: Keys the ``unknown-keys`` run adds to every message (section 1: ignored).
UNKNOWN: dict[str, object] = {"x_conformance": [1, {"future": "key"}]}


@dataclass
class Transcript:
    """What a run saw: every frame the client sent, the moves' problems, its close."""

    frames: list[Event] = field(default_factory=list)
    hello: Event | None = None
    early: Event | None = None
    request: PeerMap | None = None
    #: Problems with the client's moves, one line each.
    problems: list[str] = field(default_factory=list)
    rounds_due: int = 0
    rounds_played: int = 0
    ended: bool = False
    close: Event | None = None
    unsupported: str = ""
    #: Why the run's case does not apply to this client (the case is skipped).
    skipped: str = ""
    failure: str = ""
    connections: int = 0
    extra_connections: int = 0
    exit_status: int | None = None
    timed_out: bool = False
    output: str = ""

    def program(self) -> str:
        """How the program ended, for a failure's line."""
        if self.timed_out:
            return "the program did not end"
        tail = self.output.strip().splitlines()[-1:] or [""]
        return f"the program exited {self.exit_status}" + (f" ({tail[0][:160]})"
                                                           if tail[0] else "")


Steps = Generator[Step, Event | None, Any]


@dataclass(frozen=True)
class ClientRun:
    """One start of the program against the scripted server, and the cases it feeds."""

    name: str
    cases: tuple[str, ...]
    #: Extra keys in each message the server sends.
    extra: dict[str, object] = field(default_factory=dict)
    #: The round whose move the server declares a fault, with a non-fatal error (0: none).
    fault_round: int = 0

    def script(self, transcript: Transcript) -> Script:
        return scripted_server(self, transcript)


def scripted_server(run: ClientRun, transcript: Transcript) -> Script:
    """The server's side of a run: handshake, the requested game, end, the close."""
    event = yield from receive(MOVE_WAIT)
    transcript.hello = event
    if not (isinstance(event, Message) and event.type == "hello"):
        return
    transcript.early = yield Receive(WELCOME_DELAY)
    yield Send(frame(dict({"type": "welcome", "version": 1, "session": secrets.token_hex(8),
                           "server": "littlestone-conformance",
                           "limits": dict({"max_frame": 1 << 20, "move_deadline_ms": 10000,
                                           "time_bank_ms": 60000, "lobby_idle_ms": 300000},
                                          **run.extra)}, **run.extra)))
    request = transcript.early
    if not isinstance(request, Message):
        request = yield from receive(MOVE_WAIT)
    if not isinstance(request, Message):
        transcript.problems.append(f"after welcome the client sent {shown(request)}")
        return
    transcript.request = request.body
    try:
        game = Game.of(request.body)
    except Unsupported as exc:
        transcript.unsupported = str(exc)
        yield Send(frame({"type": "error", "code": "unsupported_game", "message": str(exc),
                          "fatal": False}))
        transcript.close = yield Receive(MOVE_WAIT)
        return
    yield from game.play(run, transcript)
    transcript.close = yield Receive(MOVE_WAIT)


@dataclass
class Game:
    """The game a client asked for, as the scripted server plays it."""

    kind: str
    rounds: int
    rules: dict[str, object]
    hclass: FiniteClass | None
    experts: int
    seed: int
    coin: Coin = field(init=False, repr=False)
    mistakes: float = field(default=0, init=False)
    expected: float = field(default=0.0, init=False)

    @classmethod
    def of(cls, request: PeerMap) -> Game:
        if request.get("type") not in ("challenge", "create"):
            raise Unsupported(f"the scripted server takes challenge or create, not "
                              f"{request.get('type')!r}")
        rules = request.get("rules")
        if not isinstance(rules, dict):
            raise Unsupported("the request has no rules map")
        rounds = rules.get("rounds")
        if not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS:
            raise Unsupported(f"the scripted server plays 1 .. {MAX_ROUNDS} rounds")
        spec = rules.get("class")
        hclass = None
        if spec is not None:
            if not isinstance(spec, str):
                raise Unsupported("the class is not a spec string")
            try:  # nothing a client names is opened or built beyond the budget
                built = make_class(spec, SCRIPTED_CLASSES)
            except (LittlestoneError, ValueError) as exc:
                raise Unsupported(f"class {spec!r}: {exc}") from None
            if not isinstance(built, FiniteClass) or built.size > 1 << 16:
                raise Unsupported("the scripted server plays finite classes of up to 2^16 "
                                  "hypotheses")
            hclass = built
        kind = rules.get("game")
        experts = rules.get("experts") if hclass is None else hclass.size
        if kind == "experts" and not (isinstance(experts, int) and 1 <= experts <= 1024):
            raise Unsupported("an experts game needs 1 .. 1024 experts or a class")
        if kind == "mistake-bound" and hclass is None:
            raise Unsupported("a mistake-bound game needs a class")
        if kind not in ("mistake-bound", "experts"):
            raise Unsupported(f"no game {kind!r}")
        seed = request.get("seed")
        return cls(kind, rounds, dict(rules), hclass,
                   experts if isinstance(experts, int) else 0,
                   seed if isinstance(seed, int) and -INT64 <= seed < INT64 else 1)

    def play(self, run: ClientRun, transcript: Transcript) -> Steps:
        hello = transcript.hello.body if isinstance(transcript.hello, Message) else {}
        role = "adversary" if hello.get("role") == "adversary" else "learner"
        key = secrets.token_bytes(32)
        seeds = game_seeds(self.seed, key)
        self.coin = Coin(seeds.referee)
        yield Send(frame(dict({"type": "start", "game_id": "conformance-" + key.hex()[:8],
                               "role": role, "rules": self.rules,
                               "seed": seeds.learner if role == "learner" else seeds.adversary,
                               "commitment": hashlib.sha256(key).digest()}, **run.extra)))
        transcript.rounds_due = self.rounds
        rng = random.Random(self.seed)
        if role == "adversary" and self.kind == "experts":
            last = yield from self.play_experts_adversary(run, transcript)
        elif role == "adversary":
            last = yield from self.play_adversary(run, transcript)
        elif self.kind == "experts":
            last = yield from self.play_experts(run, transcript, rng)
        else:
            last = yield from self.play_learner(run, transcript, rng)
        if last is None:
            return
        transcript.ended = True
        yield Send(frame(dict({"type": "end", **last, "status": "complete",
                               "result": {"rounds": self.rounds, "mistakes": self.mistakes,
                                          "expected_mistakes": self.expected}, "key": key},
                              **run.extra)))

    def _move(self, transcript: Transcript, kinds: tuple[str, ...], t: int) -> Steps:
        """The client's move of round ``t``; None (and a problem noted) when it is not."""
        event = yield from receive(MOVE_WAIT)
        if not (isinstance(event, Message) and event.type in kinds):
            transcript.problems.append(f"round {t}: expected {' or '.join(kinds)}, got "
                                       f"{shown(event)}")
            return None
        if event.type != "commit" and event.body.get("t") != t:
            transcript.problems.append(f"round {t}: {event.type} has t={event.body.get('t')!r}")
        return event.body

    def _fault(self, run: ClientRun, t: int) -> Steps:
        """In the ``error`` run, round ``t``'s move is declared a fault (section 6);
        whether it was."""
        if run.fault_round != t:
            return False
        yield Send(frame({"type": "error", "code": "illegal_move", "fatal": False,
                          "message": f"conformance: round {t}'s move is taken as a fault"}))
        return True

    def _score(self, p: float, y: int) -> None:
        """A prediction's realised and expected mistake, the coin drawn (section 7)."""
        self.mistakes += int(int(self.coin.random() < p) != y)
        self.expected += abs(p - y)

    def play_learner(self, run: ClientRun, transcript: Transcript,
                     rng: random.Random) -> Steps:
        assert self.hclass is not None
        target = rng.randrange(self.hclass.size)
        label: dict[str, object] | None = None
        for t in range(1, self.rounds + 1):
            x = rng.randrange(self.hclass.domain_size)
            y = int(self.hclass.evaluate(x)[target])
            message: dict[str, object] = {"type": "instance", "t": t, "x": x, **run.extra}
            if label is not None:
                message["label"] = label
            yield Send(frame(message))
            move = yield from self._move(transcript, ("predict",), t)
            if move is None:
                return None
            p = move.get("p")
            if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
                transcript.problems.append(f"round {t}: p {p!r} is not a number in [0, 1]")
                p = 1 - y
            if (yield from self._fault(run, t)):
                p = 1 - y  # a learner's fault is a mistake
            self._score(float(p), y)
            transcript.rounds_played += 1
            label = {"t": t, "y": y}
        return {"label": label}

    def play_experts(self, run: ClientRun, transcript: Transcript,
                     rng: random.Random) -> Steps:
        d = self.experts
        outcome: dict[str, object] | None = None
        target = rng.randrange(d)
        for t in range(1, self.rounds + 1):
            x = rng.randrange(self.hclass.domain_size) if self.hclass is not None else None
            advice = None if x is not None else struct.pack(
                f"<{d}d", *(rng.random() for _ in range(d)))
            if self.hclass is not None:
                values = self.hclass.evaluate(x)  # type: ignore[arg-type]  # an int here
                y: int | None = int(values[target])
                costs = [float(int(v) != y) for v in values]
            else:
                y, costs = None, [rng.random() for _ in range(d)]
            message: dict[str, object] = {"type": "advice", "t": t, "advice": advice, "x": x,
                                          **run.extra}
            if outcome is not None:
                message["outcome"] = outcome
            yield Send(frame(message))
            move = yield from self._move(transcript, ("weights", "predict"), t)
            if move is None:
                return None
            weights = _distribution(move.get("w"), d) if move["type"] == "weights" else None
            p = move.get("p")
            bad = ""
            if move["type"] == "predict" and (y is None or not isinstance(p, int | float)
                                              or not 0 <= p <= 1):
                bad = f"predict {p!r} (section 5.2: a number in [0, 1], only with a label)"
            elif isinstance(weights, str):
                bad = f"w {weights}"
            if bad:
                transcript.problems.append(f"round {t}: {bad}")
            if (yield from self._fault(run, t)) or bad:  # all weight on the costliest
                weights = [float(i == costs.index(max(costs))) for i in range(d)]
            if isinstance(weights, list):
                self.expected += sum(w * c for w, c in zip(weights, costs, strict=True))
                u, total = self.coin.random(), 0.0
                drawn = next((i for i, w in enumerate(weights) if (total := total + w) > u),
                             d - 1)
                self.mistakes += costs[drawn]
            else:
                assert y is not None
                self._score(float(p), y)
            transcript.rounds_played += 1
            outcome = {"t": t, "costs": struct.pack(f"<{d}d", *costs), "y": y}
        return {"outcome": outcome}

    def play_adversary(self, run: ClientRun, transcript: Transcript) -> Steps:
        assert self.hclass is not None
        if run.fault_round:  # how a move is asked again is issue 43's point 9, unsettled
            transcript.skipped = "an adversary's fault is not scripted: the learner's only"
        committed: bytes | None = None
        for t in range(1, self.rounds + 1):
            move = yield from self._move(transcript, ("instance", "commit") if t == 1
                                         else ("instance",), t)
            if move is not None and move["type"] == "commit":
                committed = move.get("digest")
                if not (isinstance(committed, bytes) and len(committed) == 32):
                    transcript.problems.append("commit.digest is not 32 bytes of bin")
                move = yield from self._move(transcript, ("instance",), t)
            if move is None:
                return None
            x = move.get("x")
            if not (isinstance(x, int) and 0 <= x < self.hclass.domain_size):
                transcript.problems.append(f"round {t}: x {x!r} is outside the domain")
            yield Send(frame({"type": "prediction", "t": t, "p": 0.5, **run.extra}))
            label = yield from self._move(transcript, ("label",), t)
            if label is None:
                return None
            y = label.get("y")
            if y not in (0, 1):
                transcript.problems.append(f"round {t}: y {y!r} is not 0 or 1")
            self._score(0.5, 1 if y == 1 else 0)
            transcript.rounds_played += 1
        if committed is not None:
            yield Send(frame({"type": "reveal?", **run.extra}))
            reveal = yield from receive(MOVE_WAIT)
            body = reveal.body if isinstance(reveal, Message) else {}
            salt, target = body.get("salt"), body.get("target")
            if body.get("type") != "reveal":
                transcript.problems.append(f"after reveal?: {shown(reveal)}")
            elif not (isinstance(salt, bytes) and len(salt) >= MIN_SALT_BYTES
                      and isinstance(target, int)
                      and digest(self.hclass, target, salt) == committed):
                transcript.problems.append("the reveal does not open the commitment "
                                           "(section 5.3)")
        return {}


    def play_experts_adversary(self, run: ClientRun, transcript: Transcript) -> Steps:
        """The server's learner answers uniform weights (section 5.3's experts game)."""
        d = self.experts
        committed = False
        if run.fault_round:
            transcript.skipped = "an adversary's fault is not scripted: the learner's only"
        for t in range(1, self.rounds + 1):
            kind = "instance" if self.hclass is not None else "advice"
            move = yield from self._move(transcript, (kind, "commit") if t == 1 else (kind,),
                                         t)
            if move is not None and move["type"] == "commit":
                committed = True
                move = yield from self._move(transcript, (kind,), t)
            if move is None:
                return None
            if kind == "advice" and move.get("advice") is not None:
                advice = _vector(move.get("advice"), d)
                if advice is None or not all(0 <= a <= 1 for a in advice):
                    transcript.problems.append(f"round {t}: advice is not {d} numbers in "
                                               "[0, 1]")
            yield Send(frame({"type": "answer", "t": t, "w": [1 / d] * d, "p": None,
                              **run.extra}))
            outcome = yield from self._move(transcript, ("costs", "label"), t)
            if outcome is None:
                return None
            if outcome["type"] == "costs":
                costs = _vector(outcome.get("v"), d)
                if costs is None or not all(0 <= c <= 1 for c in costs):
                    transcript.problems.append(f"round {t}: costs are not {d} numbers in "
                                               "[0, 1]")
                else:
                    self.expected += sum(costs) / d
            elif outcome.get("y") not in (0, 1):
                transcript.problems.append(f"round {t}: y {outcome.get('y')!r} is not 0 "
                                           "or 1")
            transcript.rounds_played += 1
        if committed:  # the reveal is asked for, not opened: a sequence's hash is not kept
            yield Send(frame({"type": "reveal?", **run.extra}))
            reveal = yield from receive(MOVE_WAIT)
            if not (isinstance(reveal, Message) and reveal.type == "reveal"):
                transcript.problems.append(f"after reveal?: {shown(reveal)}")
        self.mistakes = self.expected
        return {}


def _vector(value: object, d: int) -> list[float] | None:
    """d numbers, from a bin of float64 little-endian or an array (section 2)."""
    if isinstance(value, bytes) and len(value) == 8 * d:
        return list(struct.unpack(f"<{d}d", value))
    if isinstance(value, list) and len(value) == d and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return [float(v) for v in value]
    return None


def _distribution(w: object, d: int) -> list[float] | str:
    """``w`` as d weights, or why it is not a distribution over d experts."""
    values = _vector(w, d)
    if values is None:
        return f"is not {d} numbers"
    if any(not v >= 0 for v in values) or abs(sum(values) - 1) > 1e-6:
        return "is not a distribution (non-negative, summing to 1)"
    total = sum(values)
    return [v / total for v in values]


# ---------------------------------------------------------------- the cases

def _ran(transcript: Transcript) -> None:
    """Fail when the run never got to a game."""
    check(not transcript.failure, transcript.failure)
    check(transcript.connections, f"the program never connected; {transcript.program()}")
    check(not transcript.unsupported, f"the scripted server does not play the game asked "
          f"for: {transcript.unsupported}")


def hello_check(transcript: Transcript) -> None:
    _ran(transcript)
    event = transcript.hello
    check(isinstance(event, Message) and event.type == "hello",
          f"the first frame is {shown(event)}, not hello")
    assert isinstance(event, Message)
    hello = event.body
    check(hello.get("version") == 1, f"hello.version is {hello.get('version')!r}")
    check(hello.get("role") in ("learner", "adversary", "spectator"),
          f"hello.role is {hello.get('role')!r}")
    agent = hello.get("agent")
    check(isinstance(agent, str) and 0 < len(agent) <= 64 and agent.isprintable(),
          f"hello.agent {agent!r} is not 1 .. 64 printable characters")
    check(hello.get("token") is None or isinstance(hello.get("token"), str),
          "hello.token is neither a string nor nil")
    capabilities = hello.get("capabilities")
    check(isinstance(capabilities, list) and all(isinstance(c, str) for c in capabilities),
          "hello.capabilities is not a list of strings")


def binary_check(transcript: Transcript) -> None:
    _ran(transcript)
    for event in transcript.frames:
        check(not isinstance(event, Garbled), f"the client sent {shown(event)}")


def waits_check(transcript: Transcript) -> None:
    _ran(transcript)
    check(isinstance(transcript.early, Silence | None),
          f"the client sent {shown(transcript.early)} before welcome")


def request_check(transcript: Transcript) -> None:
    _ran(transcript)
    request = transcript.request
    check(request is not None, "the client sent no challenge or create")
    assert request is not None
    check(request.get("type") in ("challenge", "create", "join", "enter"),
          f"the client's first lobby message is {request.get('type')!r}")
    rules = request.get("rules")
    check(isinstance(rules, dict), "the request's rules are not a map")
    assert isinstance(rules, dict)
    for key in ("game", "class", "experts", "rounds", "horizon"):
        check(key in rules, f"rules has no {key!r} (section 2: nil when it does not apply)")
    check(rules["game"] in ("mistake-bound", "experts"), f"rules.game is {rules['game']!r}")
    check(rules["horizon"] is None or rules["horizon"] == rules["rounds"],
          f"rules.horizon {rules['horizon']!r} is neither nil nor the rounds")
    seed = request.get("seed")
    check(seed is None or (isinstance(seed, int) and not isinstance(seed, bool)
                           and -INT64 <= seed < INT64),
          f"seed {seed!r} is neither nil nor a signed 64-bit int")
    if request["type"] == "challenge":
        check(isinstance(request.get("opponent"), str), "challenge.opponent is not a string")


def moves_check(transcript: Transcript) -> None:
    _ran(transcript)
    check(not transcript.problems, "; ".join(transcript.problems[:3]))
    check(transcript.rounds_played == transcript.rounds_due,
          f"{transcript.rounds_played} rounds played of {transcript.rounds_due}")


def end_check(transcript: Transcript) -> None:
    _ran(transcript)
    check(transcript.ended, "the game did not reach end")
    check(isinstance(transcript.close, Closed),
          f"after end the client sent {shown(transcript.close)} instead of closing")
    check(transcript.extra_connections == 0, "the client opened a second connection")
    check(transcript.exit_status == 0 and not transcript.timed_out,
          f"after a complete game {transcript.program()}")


def completes_check(transcript: Transcript) -> None:
    if transcript.skipped:
        raise CaseSkipped(transcript.skipped)
    moves_check(transcript)
    end_check(transcript)


CLIENT_RUNS: tuple[ClientRun, ...] = (
    ClientRun("plain", ("client-hello", "client-binary", "client-waits", "client-request",
                        "client-moves", "client-end")),
    ClientRun("unknown-keys", ("client-unknown-keys",), extra=UNKNOWN),
    ClientRun("error", ("client-error-not-fatal",), fault_round=1),
)

_checks: dict[str, tuple[str, str, Callable[[Transcript], None]]] = {
    "client-hello": ("3", "the first frame is a hello: version 1, a role, an agent name, "
                     "capabilities", hello_check),
    "client-binary": ("1", "every frame is a msgpack map in a binary frame", binary_check),
    "client-waits": ("3", "nothing is sent before welcome", waits_check),
    "client-request": ("2, 4", "challenge or create: rules with every key, a signed 64-bit "
                       "seed or nil", request_check),
    "client-moves": ("5", "every move is the one due, with its round's t and a value in "
                     "range, to the last round", moves_check),
    "client-end": ("5, 7", "after end the client closes and the program exits 0", end_check),
    "client-unknown-keys": ("1, 8", "unknown keys in every message are ignored: the game "
                            "completes", completes_check),
    "client-error-not-fatal": ("6", "round 1's move declared a fault (a non-fatal error): "
                               "the client plays on", completes_check),
}

CLIENT_CASES: tuple[Case, ...] = tuple(
    Case(name, section, title, check_of) for name, (section, title, check_of)
    in _checks.items())
