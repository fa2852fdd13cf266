"""A hostile peer with a player token, on real loopback sockets: attacks on the wire
protocol and on the referee's fair play (PROTOCOL.md 1.1, 1.2, 3.1, 6, 7; docs/design.md
1.4). Each test tries one attack and asserts that it fails with its typed code (never
``internal``, never a budget bypass), and that an honest game on the same server still
completes."""

from __future__ import annotations

import asyncio
import contextlib
import math
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.commitment import SequenceHash, digest, target_bytes
from littlestone.games.errors import MoveError, OutOfTurn, RuleViolation
from littlestone.games.experts import ExpertsReferee
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.games.mistake_bound import MistakeBoundReferee
from littlestone.learners import LEARNERS
from littlestone.server.net import GameServer
from littlestone.server.records.logs import read_log
from littlestone.server.records.store import Store
from littlestone.server.tournament.ranking import fault
from tests.support.servers import running_server

MB = {"game": "mistake-bound", "class": "thresholds:n=8", "rounds": 4}
SALT = bytes(range(16))


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[GameServer]:
    async with running_server(tmp_path, move_deadline=3.0, time_bank=0.0) as game_server:
        yield game_server


async def open_peer(server: GameServer, role: str = "learner", token: Any = "server"
                    ) -> ClientConnection:
    ws = await connect(server.url, compression=None, proxy=None, max_size=None)
    await send(ws, {"type": "hello", "version": 1, "role": role, "agent": "mallory",
                    "token": server.token if token == "server" else token,  # type: ignore[attr-defined]
                    "capabilities": []})
    assert (await receive(ws))["type"] == "welcome"
    return ws


@contextlib.asynccontextmanager
async def peer(server: GameServer, role: str = "learner", token: Any = "server"
               ) -> AsyncIterator[ClientConnection]:
    ws = await open_peer(server, role, token)
    try:
        yield ws
    finally:
        await ws.close()


async def send(ws: ClientConnection, message: dict[str, Any] | bytes) -> None:
    await ws.send(message if isinstance(message, bytes)
                  else msgpack.packb(message, use_bin_type=True))


async def receive(ws: ClientConnection) -> dict[str, Any]:
    return dict(msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10)))


async def honest_game(server: GameServer) -> None:
    """The server and its other games go on: a whole game on it completes."""
    game = GameSpec(MISTAKE_BOUND, 20, make_class("thresholds:n=15"))
    out = await play_remote(server.url, LEARNERS.make("halving"), "random-target", game, 1,
                            server.token)  # type: ignore[attr-defined]
    assert out["status"] == "complete"


def row(server: GameServer, game_id: str) -> Any:
    found = Store(server.settings.data).game(game_id)
    assert found is not None
    return found


def log_of(server: GameServer, game_id: str) -> Any:
    return read_log(Path(row(server, game_id)["log"]))


def challenge(rules: dict[str, Any] | None = None, opponent: str = "random-target",
              **changes: Any) -> dict[str, Any]:
    return {"type": "challenge", "rules": {**MB, **(rules or {}), **changes},
            "opponent": opponent, "seed": 1}


def with_class(spec: Any, opponent: str = "random-target", **changes: Any) -> dict[str, Any]:
    """A challenge of class ``spec`` (any value: the attack may be its type)."""
    return challenge({"class": spec, **changes}, opponent)


async def pair(server: GameServer, rules: dict[str, Any] = MB, seed: int = 5
               ) -> tuple[ClientConnection, ClientConnection, str]:
    """A created game between two raw peers of the same account: (adversary, learner,
    game id), both past ``start``."""
    adversary = await open_peer(server, "adversary")
    learner = await open_peer(server, "learner")
    await send(adversary, {"type": "create", "rules": rules, "seed": seed})
    created = await receive(adversary)
    assert created["type"] == "created", created
    await send(learner, {"type": "join", "game_id": created["game_id"]})
    assert (await receive(learner))["type"] == "start"
    assert (await receive(adversary))["type"] == "start"
    return adversary, learner, created["game_id"]


# -- spec strings on create and challenge: typed errors, never internal, never a bypass ------

SPECS = [
    # (what is asked, the answer's type or error code)
    (with_class("thresholds:n=1e308"), "unsupported_game"),
    (with_class("thresholds:n=nan"), "unsupported_game"),
    (with_class("thresholds:n=inf"), "unsupported_game"),
    (with_class("thresholds:n=-0"), "unsupported_game"),
    (with_class("thresholds:n=" + "9" * 5000), "unsupported_game"),
    (with_class("thresholds:n=" + "9" * 60000), "unsupported_game"),
    (with_class("thresholds:n=1_000_000_000"), "unsupported_game"),
    (with_class("halfspaces:d=١٠٠٠٠٠٠"), "over_budget"),  # Arabic-Indic digits
    (with_class("halfspaces:d=1_000_000"), "over_budget"),
    (with_class("halfspaces:d=3,margin=nan"), "unsupported_game"),
    (with_class("halfspaces:d=3,margin=inf"), "unsupported_game"),
    (with_class("halfspaces:d=3,margin=-1e-300"), "unsupported_game"),
    (with_class("thresholds:n=4,n=5"), "unsupported_game"),  # a key twice
    (with_class("thresholds:n=8\x00"), "unsupported_game"),
    (with_class("\u202ethresholds:n=8"), "unsupported_game"),
    (with_class("k-disjunctions:n=65536,k=65536"), "unsupported_game"),
    (with_class("x" * 65000), "unsupported_game"),
    (with_class(["thresholds:n=8"]), "bad_message"),  # nesting
    (with_class({"thresholds": {"n": 8}}), "bad_message"),
    (with_class(b"thresholds:n=8"), "bad_message"),  # bin for str
    (challenge(rounds=10**18), "over_budget"),
    (challenge(rounds=1e308), "bad_message"),
    (challenge(rounds=math.nan), "bad_message"),
    (challenge(rounds=-0.0), "bad_message"),
    (challenge(rounds="1_000"), "bad_message"),
    (challenge(horizon=math.inf), "bad_message"),
    (with_class(None, game="experts", experts=10**18), "over_budget"),
    (with_class(None, game="experts ", experts=3), "bad_message"),
    (challenge(opponent="random-target:target=1e308"), "unsupported_game"),
    (challenge(opponent="random-target:target=99999999999999999999999"), "unsupported_game"),
    (challenge(opponent="random-target:target=nan"), "unsupported_game"),
    (challenge(opponent="random-target:" + ",".join(f"k{i}=1" for i in range(5000))),
     "unsupported_game"),
    (with_class("thresholds:n=8", "noisy-tree:depth=" + "9" * 5000, game="experts"),
     "unsupported_game"),
    (challenge(opponent="y" * 60000), "unsupported_game"),
    ({"type": "create", "rules": {**MB, "rounds": 10**18}, "seed": None}, "over_budget"),
    ({"type": "create", "rules": {**MB, "class": "halfspaces:d=4097"}, "seed": None},
     "over_budget"),
    ({"type": "create", "rules": {**MB, "class": "thresholds:n=" + "9" * 60000},
      "seed": None}, "unsupported_game"),
    ({"type": "create", "rules": {**MB, "class": "conjunctions:n=1e3"}, "seed": None},
     "unsupported_game"),
    ({"type": "create", "rules": {**MB, "rounds": 4.0}, "seed": None}, "bad_message"),
    ({"type": "create", "rules": {**MB, "seed": math.nan}, "seed": math.nan}, "bad_message"),
]

#: Exact-Ldim budgets of a server-side learner, as an adversary asks for them.
LDIM_SPECS = [
    ("soa:budget=1e308", "over_budget"),
    ("soa:budget=١٢", "over_budget"),
    ("soa:budget=1_000", "over_budget"),
    ("soa:budget=-0", "over_budget"),
    ("soa:budget=+5", "over_budget"),
    ("soa:budget=" + "9" * 60000, "over_budget"),
    # int() of a string of over 4300 digits raises: this one was an internal error
    ("soa:budget=" + "0" * 60000 + "5", "unsupported_game"),
    ("randomized-soa:budget=99999999999999", "over_budget"),
    ("kernel-perceptron:degree=" + "9" * 5000, "unsupported_game"),
    ("kernel-perceptron:scale=nan", "unsupported_game"),
    ("winnow:alpha=nan", "unsupported_game"),
    ("hedge:eta=nan", "unsupported_game"),
    ("hedge:eta=-0", "unsupported_game"),
]


async def test_spec_strings_are_typed_errors_never_internal_never_a_bypass(server):
    for first in range(0, len(SPECS), 10):  # (within the lobby's rate and fault limits)
        async with peer(server) as ws:
            for message, code in SPECS[first : first + 10]:
                await send(ws, message)
                answer = await receive(ws)
                assert (answer["type"], answer.get("code")) == ("error", code), (message,
                                                                                 answer)
                assert answer["fatal"] is False
    async with peer(server, role="adversary") as ws:
        for opponent, code in LDIM_SPECS:
            rules = MB if "hedge" not in opponent else {"game": "experts", "class": None,
                                                        "experts": 3, "rounds": 4}
            await send(ws, challenge(rules, opponent=opponent))
            answer = await receive(ws)
            assert (answer["type"], answer.get("code")) == ("error", code), (opponent, answer)
    await honest_game(server)


async def test_odd_digits_and_blanks_name_the_canonical_class(server):
    """Unicode digits, underscores and blanks parse as Python's int() does, but the game
    is played, logged and committed under the canonical spec: two spellings of one class
    are one class."""
    async with peer(server) as ws:
        for spelling in ("thresholds:n=١٢", "thresholds:n=1_2", " thresholds:n= 12 "):
            await send(ws, with_class(spelling))
            start = await receive(ws)
            assert start["type"] == "start" and start["rules"]["class"] == "thresholds:n=12"
            while (message := await receive(ws))["type"] != "end":
                await send(ws, {"type": "predict", "t": message["t"], "p": 0.5})
            assert message["status"] == "complete"
            assert log_of(server, start["game_id"]).header["rules"]["class"] == "thresholds:n=12"
    await honest_game(server)


async def test_a_kernel_perceptrons_quadratic_memory_is_budgeted(server):
    """The kernel Perceptron keeps every instance and its final bound builds kernel
    matrices of rounds x mistakes entries, and an adversary may make every round a
    mistake (it loses the reveal, after the bound is built). 50,000 rounds of
    ``halfspaces:d=1`` were admitted (about 1 MiB by the old estimate) and asked the
    server for tens of GiB; the estimate now counts them: over_budget. A short game is
    still served."""
    async with peer(server, role="adversary") as ws:
        await send(ws, with_class("halfspaces:d=1,margin=0", "kernel-perceptron",
                                  rounds=50_000))
        answer = await receive(ws)
        assert (answer["type"], answer["code"]) == ("error", "over_budget"), answer
        await send(ws, with_class("halfspaces:d=1,margin=0", "kernel-perceptron",
                                  rounds=4))
        assert (await receive(ws))["type"] == "start"
        for t in range(1, 5):  # labels against every prediction: a mistake a round
            await send(ws, {"type": "instance", "t": t, "x": struct.pack("<d", 1.0)})
            p = (await receive(ws))["p"]
            await send(ws, {"type": "label", "t": t, "y": int(p < 0.5)})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": struct.pack("<d", 1.0), "salt": b""})
        end = await receive(ws)
        assert end["status"] == "rule_violation:adversary:target_label"
        assert end["result"]["mistakes"] == 4
    await honest_game(server)


# -- cheating the commitment, as an adversary ------------------------------------------------

H8 = make_class("thresholds:n=8")
#: Instances on which thresholds 3 and 4 agree: a reveal of 4 passes the label check,
#: so only the commitment can catch it.
AGREED = (0, 1, 6, 7)


async def committed_game(ws: ClientConnection, commitment: bytes, rounds: int = 4) -> str:
    """Challenge halving, commit, play ``AGREED`` labelled by threshold 3; returns the
    game id, with ``reveal?`` received."""
    await send(ws, challenge(opponent="halving", rounds=rounds))
    game_id = (await receive(ws))["game_id"]
    await send(ws, {"type": "commit", "digest": commitment})
    for t in range(1, rounds + 1):
        x = AGREED[(t - 1) % len(AGREED)]
        await send(ws, {"type": "instance", "t": t, "x": x})
        assert (await receive(ws))["type"] == "prediction"
        await send(ws, {"type": "label", "t": t, "y": int(x < 3)})
    assert (await receive(ws))["type"] == "reveal?"
    return game_id


def faults(server: GameServer, game_id: str) -> list[str]:
    footer = log_of(server, game_id).footer
    assert footer is not None
    return [f["code"] for f in footer["result"].get("faults", [])]


#: (target, salt) revealed after committing to (3, SALT), and the game's end.
BAD_REVEALS = [
    (4, SALT, "rule_violation:adversary:commitment"),          # another consistent target
    (3, SALT + b"\x00", "rule_violation:adversary:commitment"),  # another salt
    (3, SALT[:15] + b"\x01", "rule_violation:adversary:commitment"),
    (3 + (1 << 63), SALT, "rule_violation:adversary:reveal"),  # 3 modulo 2**63
    ((1 << 64) - 1, SALT, "rule_violation:adversary:reveal"),   # -1 as 8 unsigned bytes
    (-(1 << 63), SALT, "rule_violation:adversary:reveal"),
    (9, SALT, "rule_violation:adversary:reveal"),               # outside the class
    (-1, SALT, "rule_violation:adversary:reveal"),
    ([3.0], SALT, "rule_violation:adversary:reveal"),           # a vector on a finite class
    (target_bytes(H8, 3), SALT, "rule_violation:adversary:reveal"),  # its bytes, as bin
    (None, SALT, "rule_violation:adversary:reveal"),
]


@pytest.mark.parametrize(("target", "salt", "status"), BAD_REVEALS)
async def test_a_reveal_that_is_not_the_commitment_loses_the_game(server, target, salt, status):
    async with peer(server, role="adversary") as ws:
        game_id = await committed_game(ws, digest(H8, 3, SALT))
        await send(ws, {"type": "reveal", "target": target, "salt": salt})
        end = await receive(ws)
        assert (end["type"], end["status"]) == ("end", status), end
    assert row(server, game_id)["status"] == status
    await honest_game(server)


def test_the_digest_binds_class_salt_and_target_whatever_their_lengths():
    """Hash-length tricks: moving bytes between the salt and the target, or between the
    class spec and the salt, changes the digest (each part is length-prefixed or fixed
    length), so no second opening exists short of a SHA-256 collision."""
    h9 = make_class("thresholds:n=9")
    committed = digest(H8, 3, SALT)
    tail = target_bytes(H8, 3)
    openings = [(H8, int.from_bytes(SALT[8:], "little", signed=True), SALT[:8] + tail),
                (H8, 3, SALT + tail[:0]), (h9, 3, SALT), (H8, 3, SALT[1:] + SALT[:1]),
                (H8, 3, b"\x00" + SALT), (H8, 3 - (1 << 64) + (1 << 64), SALT[:-1])]
    others = [digest(h, t, s) for h, t, s in openings if (t, s) != (3, SALT) or h is h9]
    assert committed not in others and len(others) == 5
    with pytest.raises(ValueError):
        target_bytes(H8, True)  # a bool is no hypothesis index
    with pytest.raises(ValueError):
        target_bytes(H8, 3.0)


#: A salt or target of a type the schema refuses: bad_message, a fault, asked again.
ODD_REVEALS = [
    {"target": 3, "salt": SALT.decode("latin-1")},  # str for bin
    {"target": 3, "salt": list(SALT)},
    {"target": 3, "salt": None},
    {"target": 3, "salt": 7},
    {"target": 3},                                   # no salt
    {"target": True, "salt": SALT},                  # bool for int
    {"target": 3.0, "salt": SALT},                   # float for int
    {"target": "3", "salt": SALT},
    {"target": 3, "salt": SALT[:15]},                # short: illegal_move
]


@pytest.mark.parametrize("fields", ODD_REVEALS)
async def test_a_salt_or_target_of_an_odd_type_is_a_fault_and_asked_again(server, fields):
    async with peer(server, role="adversary") as ws:
        game_id = await committed_game(ws, digest(H8, 3, SALT))
        await send(ws, {"type": "reveal", **fields})
        error = await receive(ws)
        code = "illegal_move" if fields.get("salt") == SALT[:15] else "bad_message"
        assert (error["type"], error["code"], error["fatal"]) == ("error", code, False), error
        await send(ws, {"type": "reveal", "target": 3, "salt": SALT})
        end = await receive(ws)
        assert end["status"] == "complete", end
    assert faults(server, game_id) == [code]
    await honest_game(server)


async def test_a_reveal_before_the_end_or_without_a_commitment_is_out_of_turn(server):
    async with peer(server, role="adversary") as ws:
        # committed: a reveal in round 1 (to end the game early) is a fault, not an end
        await send(ws, challenge(opponent="halving", rounds=2))
        game_id = (await receive(ws))["game_id"]
        await send(ws, {"type": "commit", "digest": digest(H8, 3, SALT)})
        await send(ws, {"type": "reveal", "target": 3, "salt": SALT})
        error = await receive(ws)
        assert (error["code"], error["fatal"]) == ("out_of_turn", False)
        for t, x in ((1, 0), (2, 7)):
            await send(ws, {"type": "instance", "t": t, "x": x})
            assert (await receive(ws))["type"] == "prediction"
            if t == 1:  # and between the prediction and the label
                await send(ws, {"type": "reveal", "target": 3, "salt": SALT})
                assert (await receive(ws))["code"] == "out_of_turn"
            await send(ws, {"type": "label", "t": t, "y": int(x < 3)})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": 3, "salt": SALT})
        assert (await receive(ws))["status"] == "complete"
        assert faults(server, game_id) == ["out_of_turn", "out_of_turn"]
        # not committed: no reveal is due, one sent mid-game is a fault
        await send(ws, challenge(opponent="halving", rounds=1))
        game_id = (await receive(ws))["game_id"]
        await send(ws, {"type": "reveal", "target": 3, "salt": SALT})
        assert (await receive(ws))["code"] == "out_of_turn"
        await send(ws, {"type": "instance", "t": 1, "x": 0})
        assert (await receive(ws))["type"] == "prediction"
        await send(ws, {"type": "label", "t": 1, "y": 1})
        end = await receive(ws)
        assert (end["type"], end["status"]) == ("end", "complete")
        # after the end, a reveal in the lobby changes nothing
        await send(ws, {"type": "reveal", "target": 3, "salt": SALT})
        error = await receive(ws)
        assert error["type"] == "error" and error["code"] in ("out_of_turn", "bad_message")
        assert error["fatal"] is False
    assert row(server, game_id)["status"] == "complete"
    await honest_game(server)


async def test_a_commit_twice_or_after_round_1_cannot_swap_the_target(server):
    """A second commitment (to another target) before round 1 or after it is a fault
    and is not taken: only the first binds."""
    async with peer(server, role="adversary") as ws:
        await send(ws, challenge(opponent="halving", rounds=2))
        game_id = (await receive(ws))["game_id"]
        await send(ws, {"type": "commit", "digest": digest(H8, 3, SALT)})
        await send(ws, {"type": "commit", "digest": digest(H8, 4, SALT)})
        assert (await receive(ws))["code"] == "out_of_turn"
        await send(ws, {"type": "instance", "t": 1, "x": 0})
        assert (await receive(ws))["type"] == "prediction"
        await send(ws, {"type": "commit", "digest": digest(H8, 4, SALT)})
        assert (await receive(ws))["code"] == "out_of_turn"
        await send(ws, {"type": "label", "t": 1, "y": 1})
        await send(ws, {"type": "instance", "t": 2, "x": 7})
        assert (await receive(ws))["type"] == "prediction"
        await send(ws, {"type": "label", "t": 2, "y": 0})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": 4, "salt": SALT})
        end = await receive(ws)
        assert end["status"] == "rule_violation:adversary:commitment", end
    assert faults(server, game_id) == ["out_of_turn", "out_of_turn"]
    await honest_game(server)


EXPERTS3 = {"game": "experts", "class": None, "experts": 3, "rounds": 3}
COSTS = ([0.0, 1.0, 0.5], [1.0, 0.0, 0.5], [0.5, 0.5, 0.0])


@pytest.mark.parametrize(("target", "salt", "status"), [
    (1, SALT, "rule_violation:adversary:reveal"),         # no class: no target to reveal
    (None, SALT[::-1], "rule_violation:adversary:commitment"),
    ([0.0, 1.0, 0.5], SALT, "rule_violation:adversary:reveal"),
    (None, SALT, "complete"),
])
async def test_an_experts_reveal_binds_the_whole_sequence(server, target, salt, status):
    """In the experts game the commitment is to the whole sequence of moves: a target
    index (there is no class) or another salt does not open it."""
    sequence = SequenceHash("experts:d=3")
    for costs in COSTS:
        sequence.add(np.array(costs))
    async with peer(server, role="adversary") as ws:
        await send(ws, challenge(EXPERTS3, opponent="hedge"))
        game_id = (await receive(ws))["game_id"]
        await send(ws, {"type": "commit", "digest": sequence.digest(SALT)})
        for t, costs in enumerate(COSTS, 1):
            await send(ws, {"type": "advice", "t": t, "advice": None})
            assert (await receive(ws))["type"] == "answer"
            await send(ws, {"type": "costs", "t": t, "v": costs})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": target, "salt": salt})
        end = await receive(ws)
        assert end["status"] == status, end
    assert row(server, game_id)["status"] == status
    await honest_game(server)


def test_the_sans_io_referees_refuse_a_reveal_out_of_turn_and_a_second_commit():
    """The same rules one level down, where the tournament's in-process games and the
    local driver meet them."""
    ref = MistakeBoundReferee(H8, rounds=1, seed=0)
    ref.commit(digest(H8, 3, SALT))
    with pytest.raises(OutOfTurn):
        ref.reveal(3, SALT)
    ref2 = MistakeBoundReferee(H8, rounds=1, seed=0)
    ref2.commit(digest(H8, 3, SALT))
    with pytest.raises(OutOfTurn):
        ref2.commit(digest(H8, 4, SALT))
    experts = ExpertsReferee(3, 1, 0)
    with pytest.raises(MoveError):
        experts.reveal(None, SALT)  # nothing committed, not over
    ref3 = MistakeBoundReferee(H8, rounds=1, seed=0)
    ref3.commit(digest(H8, 3, SALT))
    ref3.instance(0)
    ref3.prediction(0.5)
    ref3.label(1)
    with pytest.raises(RuleViolation):
        ref3.reveal(4, SALT)
    assert ref3.result().status == "rule_violation:adversary:commitment"


# -- the coin and the labels: nothing the opponent sees depends on what it must not know ----

ROUNDS = 64
FAIR = {"game": "mistake-bound", "class": "thresholds:n=64", "rounds": ROUNDS}


async def scripted_game(server: GameServer) -> tuple[list[bytes], list[bytes], list[int], str]:
    """A created game between two scripted raw peers (the learner always answers 1/2,
    the adversary plays x_t = t - 1 labelled by threshold 32): the frames each received
    (``start`` and ``end`` left out: they carry the game's id, seeds and key), the draws
    the referee made, and the game id. A spectator of the adversary's own account
    checks at round 3 that it has been shown no round not yet labelled."""
    adversary, learner, game_id = await pair(server, FAIR)
    seen_a: list[bytes] = []
    seen_l: list[bytes] = []
    try:
        for t in range(1, ROUNDS + 1):
            await send(adversary, {"type": "instance", "t": t, "x": t - 1})
            frame = await asyncio.wait_for(learner.recv(), 10)
            assert isinstance(frame, bytes)
            seen_l.append(frame)
            shown = msgpack.unpackb(frame)
            # the learner sees round t's instance and round t-1's label, nothing later
            assert shown.get("t") == t, shown
            assert "label" not in shown or shown["label"]["t"] == t - 1
            await send(learner, {"type": "predict", "t": t, "p": 0.5})
            frame = await asyncio.wait_for(adversary.recv(), 10)
            assert isinstance(frame, bytes)
            seen_a.append(frame)
            assert msgpack.unpackb(frame) == {"type": "prediction", "t": t, "p": 0.5}
            if t == 3:  # the adversary's own account watches: no draw of round 3 yet
                async with peer(server, role="spectator") as spy:
                    await send(spy, {"type": "watch", "game_id": game_id})
                    watching = await receive(spy)
                    assert watching["type"] == "watching" and watching["t"] < 3, watching
            await send(adversary, {"type": "label", "t": t, "y": int(t - 1 < 32)})
        end_l, end_a = await receive(learner), await receive(adversary)
        assert end_l["status"] == end_a["status"] == "complete"
    finally:
        await adversary.close()
        await learner.close()
    draws = [int(r.prediction) for r in log_of(server, game_id).records()]
    return seen_a, seen_l, draws, game_id


async def test_no_message_to_either_player_depends_on_the_coin(tmp_path):
    """The same scripted game twice (same seed, same moves): the referee's draws differ
    (a fresh secret key each game), yet every frame each player receives between
    ``start`` and ``end`` is the same byte for byte: its size, order and the p shown do
    not depend on the coin, and no label reaches the learner before it predicts."""
    async with running_server(tmp_path, move_deadline=3.0, time_bank=0.0) as server:
        first = await scripted_game(server)
        second = await scripted_game(server)
        assert first[0] == second[0] and first[1] == second[1]
        assert first[2] != second[2]  # 64 fair draws: equal with probability 2**-64
        assert first[3] != second[3]
        await honest_game(server)


# -- ending a game at a chosen moment -------------------------------------------------------

async def finished(server: GameServer, game_id: str) -> Any:
    """The game's index row once the game is over (the server writes it as it ends)."""
    for _ in range(500):
        found = row(server, game_id)
        if found["status"] != "running":
            return found
        await asyncio.sleep(0.01)
    raise AssertionError(f"game {game_id} still running")


async def test_leaving_before_a_losing_round_is_the_leavers_fault(server):
    """A learner that sees the last instance and leaves instead of predicting (to dodge
    a mistake) ends the game ``disconnected:learner``: a tournament scores that as its
    own fault (every round left a mistake). Reconnecting with the same token finds the
    game neither to join nor to watch."""
    adversary, learner, game_id = await pair(server)
    for t in range(1, 5):
        await send(adversary, {"type": "instance", "t": t, "x": t})
        assert (await receive(learner))["t"] == t
        if t == 4:
            await learner.close()
            break
        await send(learner, {"type": "predict", "t": t, "p": 1.0})
        assert (await receive(adversary))["type"] == "prediction"
        await send(adversary, {"type": "label", "t": t, "y": int(t < 3)})
    end = await receive(adversary)
    assert (end["type"], end["status"]) == ("end", "disconnected:learner")
    assert end["result"]["rounds"] == 3
    assert fault(end["status"]) == "learner"
    async with peer(server) as again:
        await send(again, {"type": "join", "game_id": game_id})
        assert (await receive(again))["code"] == "not_found"
    async with peer(server, role="spectator") as again:
        await send(again, {"type": "watch", "game_id": game_id})
        assert (await receive(again))["code"] == "not_found"
    await adversary.close()
    assert (await finished(server, game_id))["status"] == "disconnected:learner"
    await honest_game(server)


async def test_leaving_during_the_reveal_is_the_adversarys_fault(server):
    """An adversary whose committed target would not match leaves when asked to reveal:
    the game ends ``disconnected:adversary``, its fault, never complete."""
    adversary, learner, game_id = await pair(server)
    await send(adversary, {"type": "commit", "digest": digest(H8, 3, SALT)})
    for t in range(1, 5):
        await send(adversary, {"type": "instance", "t": t, "x": t})
        assert (await receive(learner))["t"] == t
        await send(learner, {"type": "predict", "t": t, "p": 1.0})
        assert (await receive(adversary))["type"] == "prediction"
        await send(adversary, {"type": "label", "t": t, "y": int(t < 4)})  # threshold 4
    assert (await receive(adversary))["type"] == "reveal?"
    await adversary.close()
    end = await receive(learner)
    assert (end["status"], fault(end["status"])) == ("disconnected:adversary", "adversary")
    await learner.close()
    assert (await finished(server, game_id))["status"] == "disconnected:adversary"
    await honest_game(server)


async def test_leaving_right_after_the_last_move_cannot_unmake_the_game(server):
    """Each player sends its last move and closes at once, before ``end`` can reach it:
    the moves are taken and the game is complete, not ``disconnected``."""
    adversary, learner, game_id = await pair(server)
    for t in range(1, 5):
        await send(adversary, {"type": "instance", "t": t, "x": t})
        assert (await receive(learner))["t"] == t
        await send(learner, {"type": "predict", "t": t, "p": 0.0})
        if t == 4:
            await learner.close()
        assert (await receive(adversary))["type"] == "prediction"
        await send(adversary, {"type": "label", "t": t, "y": 1})
    await adversary.close()
    done = await finished(server, game_id)
    assert (done["status"], done["rounds"], done["mistakes"]) == ("complete", 4, 4)
    await honest_game(server)


async def test_a_fault_in_the_last_round_still_costs_the_round(server):
    """A learner that faults in the last round (a NaN, then a late good answer) is
    charged the round as a mistake, p = 1 - y; the late answer is not taken."""
    adversary, learner, game_id = await pair(server)
    try:
        for t in range(1, 5):
            y = int(t < 3)
            await send(adversary, {"type": "instance", "t": t, "x": t})
            assert (await receive(learner))["t"] == t
            await send(learner, {"type": "predict", "t": t, "p": math.nan if t == 4 else y})
            if t == 4:
                assert (await receive(learner))["code"] == "illegal_move"
                await send(learner, {"type": "predict", "t": t, "p": float(y)})  # late
            shown = await receive(adversary)
            assert shown["p"] == (0.5 if t == 4 else y)  # the fault shows 1/2
            await send(adversary, {"type": "label", "t": t, "y": y})
        end = await receive(learner)
        assert end["status"] == "complete"
        assert (end["result"]["mistakes"], end["result"]["expected_mistakes"]) == (1, 1.0)
    finally:
        await adversary.close()
        await learner.close()
    assert faults(server, game_id) == ["illegal_move"]
    await honest_game(server)


# -- making the opponent look at fault; joining twice; self-play ----------------------------

async def test_an_adversarys_flood_is_charged_to_the_adversary_not_the_learner(server):
    """While the learner thinks, the adversary floods its own connection (learner moves,
    labels for later rounds, a frame near the limit, garbage): each is a fault of the
    adversary's, read when its own move is due; the learner's moves are on time and it
    is never charged; the adversary forfeits."""
    adversary, learner, game_id = await pair(server)
    try:
        await send(adversary, {"type": "instance", "t": 1, "x": 1})
        assert (await receive(learner))["t"] == 1
        junk: list[dict[str, Any] | bytes] = [
            {"type": "instance", "t": 1, "x": b"\x00" * 900_000}, b"\xc1",
            {"type": "predict", "t": 1, "p": 0.0}, {"type": "label", "t": 2, "y": 0}]
        for frame in junk + junk[1:] * 5:  # (one large frame: within the socket's buffers)
            await send(adversary, frame)
        await send(learner, {"type": "predict", "t": 1, "p": 1.0})
        error = await receive(learner)  # the learner is told the game ended, nothing else
        assert error["type"] == "end", error
        assert error["status"].startswith("forfeit:adversary:"), error
        assert error["result"]["rounds"] == 0
    finally:
        adversary.transport.abort()  # (its 16 lobby errors unread: no close handshake)
        await learner.close()
    assert [f["role"] for f in log_of(server, game_id).footer["result"]["faults"]] == [
        "adversary"] * 3
    await honest_game(server)


async def test_joining_twice_or_ones_own_role_is_refused(server):
    """A created game is joined once, by the other role: the same role is
    ``unsupported_game``, a second joiner and a join of a game already played
    ``not_found``; a made-up id too."""
    async with peer(server, role="adversary") as creator, \
            peer(server, role="adversary") as same_role, \
            peer(server) as first, peer(server) as second:
        await send(creator, {"type": "create", "rules": {**MB, "rounds": 1}, "seed": 1})
        game_id = (await receive(creator))["game_id"]
        await send(same_role, {"type": "join", "game_id": game_id})
        assert (await receive(same_role))["code"] == "unsupported_game"
        await send(first, {"type": "join", "game_id": game_id})
        assert (await receive(first))["type"] == "start"
        await send(second, {"type": "join", "game_id": game_id})
        assert (await receive(second))["code"] == "not_found"
        await send(second, {"type": "join", "game_id": game_id + "\x00"})
        assert (await receive(second))["code"] == "not_found"
        assert (await receive(creator))["type"] == "start"
        await send(creator, {"type": "instance", "t": 1, "x": 0})
        await receive(first)
        await send(first, {"type": "predict", "t": 1, "p": 1.0})
        await receive(creator)
        await send(creator, {"type": "label", "t": 1, "y": 1})
        assert (await receive(first))["status"] == "complete"
        await send(second, {"type": "join", "game_id": game_id})  # played: gone
        assert (await receive(second))["code"] == "not_found"
    await honest_game(server)


async def test_self_play_is_recorded_as_such_and_ranks_nothing(server):
    """One token may create a game and join it from a second connection (a student
    testing its learner against its own adversary): allowed, and the records name the
    same account on both sides. It farms nothing: free games are never ranked (only a
    tournament's games are, and the tournament picks every pairing)."""
    adversary, learner, game_id = await pair(server, {**MB, "rounds": 1})
    try:
        await send(adversary, {"type": "instance", "t": 1, "x": 0})
        await receive(learner)
        await send(learner, {"type": "predict", "t": 1, "p": 1.0})
        await receive(adversary)
        await send(adversary, {"type": "label", "t": 1, "y": 1})
        assert (await receive(learner))["status"] == "complete"
    finally:
        await adversary.close()
        await learner.close()
    header = log_of(server, game_id).header
    assert header["learner"]["account"] == header["adversary"]["account"] == "bob"
    await honest_game(server)


# -- msgpack tricks: each a typed error (a fault in a game), never internal -----------------

def P(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def mapraw(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """A msgpack map of these (key, value) encodings, duplicates allowed."""
    n = len(pairs)
    head = bytes([0x80 | n]) if n < 16 else b"\xde" + n.to_bytes(2, "big")
    return head + b"".join(k + v for k, v in pairs)

PREDICT = P("type") + P("predict")
FRAMES = {
    "ext": P({"type": "predict", "t": 1, "p": msgpack.ExtType(5, b"\x00" * 8)}),
    "timestamp": P({"type": "predict", "t": 1, "p": msgpack.Timestamp(0, 0)}),
    "timestamp_type": P({"type": msgpack.Timestamp(1, 0)}),
    "int_keys": P({1: "predict"}),
    "bin_type": P({"type": b"predict", "t": 1, "p": 0.5}),
    "dup_keys": mapraw([(P("type"), P("predict")), (P("t"), P(1)), (P("p"), P(0.5)),
                        (P("p"), P(7.0))]),
    "dup_type": mapraw([(P("type"), P("predict")), (P("type"), P("hello")), (P("t"), P(1)),
                        (P("p"), P(0.5))]),
    "float32_p": mapraw([(P("type"), P("predict")), (P("t"), P(1)),
                         (P("p"), b"\xca" + struct.pack(">f", 0.5))]),
    "t_uint64": mapraw([(P("type"), P("predict")), (P("t"), b"\xcf" + b"\xff" * 8),
                        (P("p"), P(0.5))]),
    "deep": P({"type": "predict", "t": 1, "p": 0.5, "x": [[[[[[[[[[1]]]]]]]]]]}),
    "huge_map": P({"type": "predict", "t": 1, "p": 0.5, "x": {str(i): i for i in range(70000)}}),
    "huge_array_header": b"\x83" + PREDICT + P("t") + P(1) + P("p") + b"\xdd\xff\xff\xff\xff",
    "map32_lie": b"\xdf\xff\xff\xff\xff" + PREDICT,
    "str32_lie": b"\x81" + P("type") + b"\xdb\xff\xff\xff\xff",
    "bad_utf8": b"\x81" + P("type") + b"\xa2\xff\xfe",
    "nil_key": b"\x81\xc0" + P("predict"),
    "not_a_map": P(["predict", 1, 0.5]),
    "trailing": P({"type": "predict", "t": 1, "p": 0.5}) + b"\x00",
    "empty": b"",
    "reserved_c1": b"\xc1",
}

#: What each frame gets in round 1 (anything but bad_message is named).
ANSWERS = {"dup_keys": "illegal_move", "float32_p": "instance"}


@pytest.mark.parametrize("name", sorted(FRAMES))
async def test_msgpack_tricks_are_typed_faults_and_the_game_goes_on(server, name):
    """Ext types (a timestamp among them), keys that are not strings, bin for str,
    duplicate keys (the last wins: a move of 7.0), uint64 and float32 encodings, deep
    nesting, maps and arrays over the limits or lying about their length, bad UTF-8,
    trailing bytes: in round 1 of a game each is a typed fault (a float32 p is a p),
    and the game goes on to its end."""
    async with peer(server) as ws:
        await send(ws, challenge())
        game_id = (await receive(ws))["game_id"]
        assert (await receive(ws))["t"] == 1
        await send(ws, FRAMES[name])
        answer = await receive(ws)
        expected = ANSWERS.get(name, "bad_message")
        if expected != "instance":
            assert (answer["type"], answer["code"], answer["fatal"]) == ("error", expected,
                                                                         False), answer
            answer = await receive(ws)  # the round is charged, the game goes on
        assert (answer["type"], answer["t"]) == ("instance", 2)
        while answer["type"] != "end":
            await send(ws, {"type": "predict", "t": answer["t"], "p": 0.5})
            answer = await receive(ws)
        assert answer["status"] == "complete"
    assert faults(server, game_id) == ([] if expected == "instance" else [expected])
    await honest_game(server)


async def test_msgpack_tricks_in_the_lobby_are_bad_messages(server):
    async with peer(server) as ws:
        for name in sorted(set(FRAMES) - {"huge_map"})[:12]:  # (under 16 lobby faults)
            await send(ws, FRAMES[name])
            answer = await receive(ws)
            assert (answer["type"], answer["fatal"]) == ("error", False), (name, answer)
            assert answer["code"] in ("bad_message", "out_of_turn"), (name, answer)
        await send(ws, challenge())
        assert (await receive(ws))["type"] == "start"
    await honest_game(server)


HELLOS = [
    ({"token": b"bob"}, "bad_message"),
    ({"token": 7}, "bad_message"),
    ({"agent": "a" * 65}, "bad_message"),
    ({"agent": "a\x1b[2J"}, "bad_message"),
    ({"role": "admin"}, "bad_message"),
    ({"version": (1 << 64) - 1}, "unsupported_version"),
    ({"version": 1.0}, "bad_message"),
    ({"capabilities": "all"}, "bad_message"),
]


@pytest.mark.parametrize(("change", "code"), HELLOS)
async def test_odd_hellos_are_refused_and_closed(server, change, code):
    ws = await connect(server.url, compression=None, proxy=None)
    try:
        hello = {"type": "hello", "version": 1, "role": "learner", "agent": "mallory",
                 "token": server.token, "capabilities": []}
        await send(ws, {**hello, **change})
        answer = await receive(ws)
        assert (answer["type"], answer["code"], answer["fatal"]) == ("error", code, True)
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 10)
    finally:
        await ws.close()
    await honest_game(server)


def unit_bytes(*values: float) -> bytes:
    return np.array(values, dtype="<f8").tobytes()


@pytest.mark.parametrize("cls", ["halfspaces:d=2,margin=0.5",
                                 "halfspaces:d=2,margin=0.5,agnostic=true"])
@pytest.mark.parametrize("target", [
    unit_bytes(math.nan, 0.0), unit_bytes(math.inf, 0.0), unit_bytes(0.0, 0.0),
    unit_bytes(2.0, 0.0), unit_bytes(1.0, 0.0, 0.0), unit_bytes(1e308, 1e308),
    unit_bytes(5e-324, 0.0), 5, None, [1e308, -1e308]])
async def test_a_halfspace_witness_that_is_no_unit_vector_loses_the_game(server, cls, target):
    """An adaptive adversary of a halfspace game reveals its witness after the last
    round (on an agnostic class, the comparator its regret is measured against): NaN,
    infinite, zero, long, short or non-unit vectors and non-vectors end the game
    against it (no NaN reaches the result, the index or the ranking)."""
    async with peer(server, role="adversary") as ws:
        await send(ws, with_class(cls, "perceptron", rounds=2))
        game_id = (await receive(ws))["game_id"]
        for t in (1, 2):
            await send(ws, {"type": "instance", "t": t, "x": unit_bytes(0.0, 1.0)})
            assert (await receive(ws))["type"] == "prediction"
            await send(ws, {"type": "label", "t": t, "y": 1})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": target, "salt": b""})
        end = await receive(ws)
        assert end["status"] == "rule_violation:adversary:reveal", end
        assert "hinge_deficiency" not in end["result"]
    assert row(server, game_id)["status"] == "rule_violation:adversary:reveal"
    await honest_game(server)


# -- a peer that writes and is not read ------------------------------------------------------

@pytest.mark.slow
async def test_frames_queued_while_nobody_reads_are_capped_in_bytes(server):
    """A creator waiting for its joiner is not read: its frames queue on the server.
    The queue was capped at 16 messages of up to 1 MiB each (16 MiB a connection, 1 GiB
    from the 64 sockets one address may open); it is capped in bytes too: reading
    pauses once about 1 MiB waits, and the flood stays in the peer's own socket."""
    ws = await open_peer(server, role="adversary")
    try:
        await send(ws, {"type": "create", "rules": MB, "seed": 1})
        assert (await receive(ws))["type"] == "created"
        frame = P({"type": "instance", "t": 1, "x": b"\x00" * 900_000})
        with contextlib.suppress(TimeoutError):  # the server stops reading: sends block
            for _ in range(24):
                await asyncio.wait_for(ws.send(frame), 0.5)
        connections = server._server.connections
        most = 0
        for _ in range(25):  # whatever the server took in by now, and a little later
            most = max(most, *(sum(map(len, c.messages)) for c in connections))
            await asyncio.sleep(0.02)
    finally:
        ws.transport.abort()  # (a close frame would wait behind the flood)
    assert most <= 2 * 1024 * 1024 + 1_000_000, most
    await honest_game(server)
    # (its reading paused, the server does not see the flooder leave: dropped here, its
    # socket would hold the server's stop for the whole shutdown grace)
    for connection in connections:
        if connection.messages and connection.transport is not None:
            connection.transport.abort()


# -- a sequence commitment opens to one play only ----------------------------------------------

Round = tuple[list[float] | None, list[float]]


def experts_play(rounds: list[Round], commitment: bytes) -> ExpertsReferee:
    """An experts game of d = 2 where each round is (advice or None, costs), committed."""
    ref = ExpertsReferee(2, len(rounds), seed=0)
    ref.commit(commitment)
    for advice, costs in rounds:
        if advice is not None:
            ref.advice(advice)
        ref.weights([0.5, 0.5])
        ref.costs(costs)
    return ref


def test_a_sequence_commitment_opens_to_one_play_only():
    """An adversary commits to its whole sequence of moves. Advice and costs were
    hashed alike (a tagged vector each), so (no advice, costs a), (advice b, costs c)
    and (advice a, costs b), (no advice, costs c) hashed to the same bytes: committed to
    one, the adversary could choose at round 1 or 2, after seeing the learner's moves,
    to play either, and open the commitment all the same (it was not bound to one
    sequence: no oblivious adversary). Advice is now hashed with its own tag."""
    a, b, c = [0.0, 1.0], [1.0, 0.0], [0.25, 0.75]
    committed: list[Round] = [(None, a), (b, c)]
    played: list[Round] = [(a, b), (None, c)]
    probe = experts_play(committed, bytes(32))
    assert probe._sequence is not None
    commitment = probe._sequence.digest(SALT)
    experts_play(committed, commitment).reveal(None, SALT)  # the committed play opens it
    other = experts_play(played, commitment)
    with pytest.raises(RuleViolation):
        other.reveal(None, SALT)
    assert other.result().status == "rule_violation:adversary:commitment"


@pytest.mark.parametrize(("target", "status"), [
    (4, "rule_violation:adversary:commitment"), (9, "rule_violation:adversary:reveal"),
    (-1, "rule_violation:adversary:reveal"), ((1 << 64) - 1, "rule_violation:adversary:reveal"),
    (None, "rule_violation:adversary:commitment"), (3, "complete")])
async def test_a_class_experts_reveal_opens_the_committed_hypothesis_only(server, target,
                                                                         status):
    """Experts derived from a class: the adversary commits to a hypothesis; another one
    that agrees with every label given, one outside the class, or a sequence opening
    does not open it."""
    rules = {"game": "experts", "class": "thresholds:n=8", "experts": None, "rounds": 2}
    async with peer(server, role="adversary") as ws:
        await send(ws, challenge(rules, opponent="hedge"))
        game_id = (await receive(ws))["game_id"]
        await send(ws, {"type": "commit", "digest": digest(H8, 3, SALT)})
        for t, x in ((1, 0), (2, 7)):
            await send(ws, {"type": "instance", "t": t, "x": x})
            assert (await receive(ws))["type"] == "answer"
            await send(ws, {"type": "label", "t": t, "y": int(x < 3)})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": target, "salt": SALT})
        end = await receive(ws)
        assert end["status"] == status, end
    assert row(server, game_id)["status"] == status
    await honest_game(server)
