"""PROTOCOL.md as a stranger reads it, point by point (issue 43's 21 places where a client
written from the spec alone had to guess): each test says whether the server or the spec
was fixed, and checks the spec's words on a real loopback server with msgpack and
websockets only."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import re
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from littlestone.cli import main
from littlestone.cli.parser import build_parser
from littlestone.server.net import GameServer
from littlestone.server.net.settings import ConnectionLimits
from littlestone.server.records.store import Store
from tests.support.servers import running_server

ROOT = Path(__file__).resolve().parents[3]
MB = {"game": "mistake-bound", "class": "thresholds:n=4", "rounds": 2}


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[GameServer]:
    async with running_server(tmp_path, move_deadline=5.0, time_bank=0.0) as game_server:
        yield game_server


@pytest.fixture
async def hasty(tmp_path: Path) -> AsyncIterator[GameServer]:
    """A short deadline (long enough for a move made at once on a loaded machine), no
    time bank, a short handshake."""
    async with running_server(tmp_path, move_deadline=1.0, time_bank=0.0,
                              connections=ConnectionLimits(handshake_s=0.3)) as game_server:
        yield game_server


def spec_says(*phrases: str) -> None:
    """PROTOCOL.md holds each phrase: the spec says what the test checks."""
    text = (ROOT / "PROTOCOL.md").read_text()
    for phrase in phrases:
        assert phrase in text, phrase


async def opened(server: GameServer) -> ClientConnection:
    return await connect(server.url, compression=None, proxy=None, max_size=None)


def hello(server: GameServer, role: str = "learner", **changes: Any) -> dict[str, Any]:
    return {"type": "hello", "version": 1, "role": role, "agent": "stranger",
            "token": server.token, "capabilities": [], **changes}  # type: ignore[attr-defined]


@contextlib.asynccontextmanager
async def peer(server: GameServer, role: str = "learner") -> AsyncIterator[ClientConnection]:
    ws = await opened(server)
    await send(ws, hello(server, role))
    assert (await receive(ws))["type"] == "welcome"
    try:
        yield ws
    finally:
        await ws.close()


async def send(ws: ClientConnection, message: dict[str, Any]) -> None:
    await ws.send(msgpack.packb(message, use_bin_type=True))


async def receive(ws: ClientConnection) -> dict[str, Any]:
    return dict(msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10)))


async def until_closed(ws: ClientConnection) -> tuple[list[dict[str, Any]], int | None]:
    """The messages still to come, and the close code the server sent."""
    messages = []
    try:
        while True:
            messages.append(await receive(ws))
    except ConnectionClosed as closed:
        return messages, None if closed.rcvd is None else closed.rcvd.code


async def status_of(server: GameServer, game_id: str) -> str:
    store = Store(server.settings.data)
    for _ in range(200):
        row = store.game(game_id)
        if row is not None and row["status"] != "running":
            return str(row["status"])
        await asyncio.sleep(0.025)
    raise AssertionError(f"game {game_id} still running")


async def learner_game(ws: ClientConnection, p: float = 0.0, **challenge: Any
                       ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Challenge, then answer every instance with p: the start and the messages after."""
    await send(ws, {"type": "challenge", "rules": MB, "opponent": "random-target",
                    "seed": 1, **challenge})
    start = await receive(ws)
    assert start["type"] == "start", start
    seen = []
    while True:
        message = await receive(ws)
        seen.append(message)
        if message["type"] == "instance":
            await send(ws, {"type": "predict", "t": message["t"], "p": p})
        if message["type"] == "end":
            return start, seen


def commitment_digest(spec: str, target: int, salt: bytes) -> bytes:
    """PROTOCOL.md 7.3, from its words: SHA-256 of the tag, the class's canonical spec and
    a zero byte, the salt's length (4 bytes LE) and the salt, the target (8 bytes LE)."""
    return hashlib.sha256(b"littlestone-commitment-v1\x00" + spec.encode() + b"\x00"
                          + struct.pack("<I", len(salt)) + salt
                          + struct.pack("<q", target)).digest()


# -- 1, 19: before welcome, and close codes ---------------------------------------------

async def test_01_a_challenge_before_hello_is_a_fatal_out_of_turn_closed_1008(server):
    """Spec fixed: section 3 lists out_of_turn among the codes before welcome."""
    ws = await opened(server)
    await send(ws, {"type": "challenge", "rules": MB, "opponent": "random-target"})
    messages, code = await until_closed(ws)
    assert [(m["code"], m["fatal"]) for m in messages] == [("out_of_turn", True)]
    assert code == 1008
    assert "`out_of_turn` (a message other than `hello` first)" in \
        (ROOT / "PROTOCOL.md").read_text()


async def test_19_close_codes_a_bad_hello_1003_a_handshake_timeout_1008(hasty):
    """Spec fixed: section 6.2 tables every close code."""
    ws = await opened(hasty)
    await send(ws, hello(hasty, role="referee"))
    messages, code = await until_closed(ws)
    assert [m["code"] for m in messages] == ["bad_message"] and code == 1003
    ws = await opened(hasty)  # says nothing
    messages, code = await until_closed(ws)
    assert [(m["code"], m["fatal"]) for m in messages] == [("timeout", True)] and code == 1008
    ws = await opened(hasty)
    await send(ws, hello(hasty, version=2))
    messages, code = await until_closed(ws)
    assert [m["code"] for m in messages] == ["unsupported_version"] and code == 1002
    ws = await opened(hasty)
    await send(ws, hello(hasty, token="nope"))
    messages, code = await until_closed(ws)
    assert [m["code"] for m in messages] == ["unauthorized"] and code == 1008
    text = (ROOT / "PROTOCOL.md").read_text()
    for row in ("| 1003 |", "| 1008 |", "| 1009 |", "| 1002 |", "| 1011 |", "| 1013 |",
                "| 1001 |"):
        assert row in text


# -- 2, 3: frame limits ------------------------------------------------------------------

async def test_02_a_frame_over_max_frame_closes_1009_without_an_error(server):
    """Spec fixed: websockets refuses the frame before it is read, so no `error` comes;
    in a game that is `disconnected:ROLE`."""
    async with peer(server) as ws:
        await ws.send(bytes((1 << 20) + 1))
        messages, code = await until_closed(ws)
        assert messages == [] and code == 1009
    async with peer(server) as ws:
        await send(ws, {"type": "challenge", "rules": {**MB, "rounds": 5},
                        "opponent": "random-target", "seed": 1})
        start = await receive(ws)
        assert (await receive(ws))["type"] == "instance"
        await ws.send(bytes((1 << 20) + 1))
        messages, code = await until_closed(ws)
        assert messages == [] and code == 1009
    assert await status_of(server, start["game_id"]) == "disconnected:learner"
    spec_says("the WebSocket layer closes the connection with 1009 before the frame is read: "
              "no `error` is sent")


async def test_03_a_lobby_message_over_64_kib_is_a_fatal_bad_message_closed_1003(server):
    """Spec fixed: the 1.1 table gives the lobby's 64 KiB beside the 1 MiB of a game."""
    async with peer(server) as ws:
        await send(ws, {"type": "challenge", "rules": MB, "opponent": "random-target",
                        "seed": 1, "padding": "x" * 60_000, "more": "y" * 10_000})
        messages, code = await until_closed(ws)
        assert [(m["code"], m["fatal"]) for m in messages] == [("bad_message", True)]
        assert code == 1003
    assert "| a lobby message (all but `submit`) | 64 KiB |" in (ROOT / "PROTOCOL.md").read_text()


# -- 4, 5, 6: optional keys, the result, faults ---------------------------------------

async def test_04_seed_experts_and_horizon_may_be_left_out(server):
    """Spec fixed: `seed` of challenge and create, `experts`, `class` and `horizon` of
    the rules are optional (nil when absent); a horizon left out is the rounds."""
    async with peer(server) as ws:
        await send(ws, {"type": "challenge", "rules": {"game": "mistake-bound",
                                                       "class": "thresholds:n=4",
                                                       "rounds": 3},
                        "opponent": "random-target"})
        start = await receive(ws)
        assert start["type"] == "start"
        assert start["rules"]["horizon"] == 3 and start["rules"]["experts"] is None
        await send(ws, {"type": "challenge", "rules": {"class": "thresholds:n=4"},
                        "opponent": "random-target"})  # rounds is required
        await ws.close()
    async with peer(server) as ws:
        await send(ws, {"type": "challenge", "rules": {"game": "mistake-bound",
                                                       "class": "thresholds:n=4"},
                        "opponent": "random-target"})
        answer = await receive(ws)
        assert (answer["type"], answer["code"]) == ("error", "bad_message")
    spec_says("A key whose value may be nil may also be left out, and then reads as nil.",
              "The one exception is `rules.horizon`: left out, it is `rules.rounds`",
              "`seed` MAY be nil or left out")


#: The keys of a mistake-bound game's result, as PROTOCOL.md 5.5 lists them.
RESULT_KEYS = {"game", "status", "rounds", "mistakes", "expected_mistakes", "regret",
               "expected_regret", "message", "size"}


async def test_05_the_result_holds_the_keys_section_5_5_lists(server):
    """Spec fixed: `result` holds the scores, not the game's names, seed or log; `bound`
    and `bound_name` only when the learner is the server's."""
    async with peer(server) as ws:
        _, seen = await learner_game(ws)
        assert set(seen[-1]["result"]) == RESULT_KEYS
    async with peer(server, "adversary") as ws:
        await send(ws, {"type": "challenge", "rules": {**MB, "rounds": 1},
                        "opponent": "halving", "seed": 1})
        assert (await receive(ws))["type"] == "start"
        await send(ws, {"type": "instance", "t": 1, "x": 0})
        assert (await receive(ws))["type"] == "prediction"
        await send(ws, {"type": "label", "t": 1, "y": 1})
        end = await receive(ws)
        assert set(end["result"]) == RESULT_KEYS | {"bound", "bound_name"}
        assert end["result"]["bound_name"] == "log2|H| (UML Thm 21.3)"
    table = (ROOT / "PROTOCOL.md").read_text().split("### 5.5 The result")[1].split("## 6.")[0]
    keys = {key for row in re.findall(r"^\|([^|]*)\|", table, re.MULTILINE)
            for key in re.findall(r"`([a-z_]+)`", row)}
    assert RESULT_KEYS | {"bound", "bound_name", "faults"} <= keys


async def test_06_faults_are_in_the_result_and_the_forfeiting_round_is_not_scored(server):
    """Server fixed: `result.faults` lists every fault; spec fixed: the round of the
    third fault is not scored (the game ends there)."""
    async with peer(server) as ws:
        _, seen = await learner_game(ws, p=2.0, **{"rules": {**MB, "rounds": 5}})
        errors = [m for m in seen if m["type"] == "error"]
        assert [m["code"] for m in errors] == ["illegal_move"] * 3
        result = seen[-1]["result"]
        assert seen[-1]["status"] == "forfeit:learner:illegal_move"
        assert [(f["t"], f["role"], f["code"]) for f in result["faults"]] == [
            (1, "learner", "illegal_move"), (2, "learner", "illegal_move"),
            (3, "learner", "illegal_move")]
        assert result["rounds"] == 2 and result["mistakes"] == 2
    spec_says("The round of the third fault is not scored")


# -- 7, 8, 9, 10: the adversary's rules ----------------------------------------------

async def adversary_game(server: GameServer, rules: dict[str, Any], opponent: str,
                         moves: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Challenge as an adversary, send ``moves`` as the game asks, return what came."""
    seen = []
    async with peer(server, "adversary") as ws:
        await send(ws, {"type": "challenge", "rules": rules, "opponent": opponent, "seed": 1})
        assert (await receive(ws))["type"] == "start"
        queue = list(moves)
        await send(ws, queue.pop(0))
        while True:
            message = await receive(ws)
            seen.append(message)
            if message["type"] == "end":
                return seen
            if message["type"] in ("prediction", "reveal?") and queue:
                await send(ws, queue.pop(0))
                if message["type"] == "prediction" and queue and queue[0]["type"] == "instance":
                    await send(ws, queue.pop(0))


async def test_07_a_rule_violation_ends_the_game_with_no_error_sent(server):
    """Spec fixed: `rule_violation` is a status, `rule_violation:ROLE:RULE`, never an
    error code sent; section 6.3 lists the rules."""
    seen = await adversary_game(server, MB, "halving", [
        {"type": "instance", "t": 1, "x": 0}, {"type": "label", "t": 1, "y": 0},
        {"type": "instance", "t": 2, "x": 3}, {"type": "label", "t": 2, "y": 1}])
    assert [m["type"] for m in seen] == ["prediction", "prediction", "end"]
    assert seen[-1]["status"] == "rule_violation:adversary:empty_version_space"
    text = (ROOT / "PROTOCOL.md").read_text()
    assert "| `rule_violation` |" not in text  # (no longer among the error codes)
    assert "`rule_violation:adversary:empty_version_space`" in text


async def test_08_an_instance_outside_the_domain_is_a_rule_violation(server):
    """Spec fixed: an instance outside the domain (a finite class's range, a halfspace
    vector whose squared norm is off 1 by more than 2e-6) ends the game
    `rule_violation:adversary:instance_domain`; it is not a fault."""
    seen = await adversary_game(server, MB, "halving", [{"type": "instance", "t": 1, "x": 9}])
    assert [m["type"] for m in seen] == ["end"]
    assert seen[-1]["status"] == "rule_violation:adversary:instance_domain"
    halfspaces = {"game": "mistake-bound", "class": "halfspaces:d=2", "rounds": 1}
    seen = await adversary_game(server, halfspaces, "perceptron", [
        {"type": "instance", "t": 1, "x": struct.pack("<2d", 1.0, 1.0)}])
    assert seen[-1]["status"] == "rule_violation:adversary:instance_domain"
    seen = await adversary_game(server, halfspaces, "perceptron", [  # within the tolerance
        {"type": "instance", "t": 1, "x": struct.pack("<2d", 1.0 + 5e-7, 0.0)},
        {"type": "label", "t": 1, "y": 1},
        {"type": "reveal", "target": struct.pack("<2d", 1.0, 0.0), "salt": b""}])
    assert [m["type"] for m in seen] == ["prediction", "reveal?", "end"]
    assert seen[-1]["status"] == "complete"
    spec_says("the server takes x when \\|x·x - 1\\| <= 2e-6",
              "ends the game `rule_violation:adversary:instance_domain` at once")


async def test_09_10_a_bad_reveal_is_answered_by_the_error_alone(server):
    """Spec fixed (9): an adversary's move asked again is asked by the `error` itself:
    no new `reveal?` (nor `prediction`) comes, and the next reveal is taken. Spec fixed
    (10): the commitment's digest byte by byte, here written from the spec's words."""
    salt = bytes(range(16))
    async with peer(server, "adversary") as ws:
        await send(ws, {"type": "challenge", "rules": {**MB, "rounds": 1},
                        "opponent": "halving", "seed": 1})
        assert (await receive(ws))["type"] == "start"
        await send(ws, {"type": "commit", "digest": commitment_digest("thresholds:n=4", 2,
                                                                      salt)})
        await send(ws, {"type": "instance", "t": 1, "x": 0})
        assert (await receive(ws))["type"] == "prediction"
        await send(ws, {"type": "label", "t": 1, "y": 1})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": 2, "salt": b"four"})
        error = await receive(ws)
        assert (error["code"], error["fatal"]) == ("illegal_move", False)
        await send(ws, {"type": "reveal", "target": 2, "salt": salt})
        end = await receive(ws)
        assert end["type"] == "end" and end["status"] == "complete", end
        assert [(f["t"], f["code"]) for f in end["result"]["faults"]] == [(None, "illegal_move")]
    spec_says("no second `prediction`, `answer` or `reveal?` comes",
              '"littlestone-commitment-v1" 0x00 || spec || 0x00 || len(salt) || salt || '
              "target_bytes", "`reveal?` comes after round T, and only in these games")


def sequence_move(tag: bytes, value: Any) -> bytes:
    """PROTOCOL.md 7.3, from its words: a move of a committed sequence."""
    if isinstance(value, int):
        raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
        return b"i" + struct.pack("<I", len(raw)) + raw
    raw = struct.pack(f"<{len(value)}d", *value)
    return tag + struct.pack("<I", len(raw)) + raw


async def test_10_a_sequence_committed_from_the_spec_s_words_opens(server):
    """Spec fixed (10): the sequence hash byte by byte, and when `reveal?` is due: an
    experts adversary that committed to its moves, written from section 7.3 alone."""
    rounds = [([0.25, 1.0], [0.0, 1.0]), ([0.5, 0.0], [1.0, 0.5])]
    salt = bytes(range(16))
    sequence = hashlib.sha256(b"littlestone-sequence-v1\x00experts:d=2\x00")
    for advice, costs in rounds:
        sequence.update(sequence_move(b"a", advice) + sequence_move(b"f", costs))
    sequence.update(struct.pack("<I", len(salt)) + salt)
    async with peer(server, "adversary") as ws:
        await send(ws, {"type": "challenge", "rules": {"game": "experts", "experts": 2,
                                                       "rounds": 2},
                        "opponent": "hedge", "seed": 1})
        assert (await receive(ws))["type"] == "start"
        await send(ws, {"type": "commit", "digest": sequence.digest()})
        for t, (advice, costs) in enumerate(rounds, 1):
            await send(ws, {"type": "advice", "t": t, "advice": struct.pack("<2d", *advice)})
            answer = await receive(ws)
            assert (answer["type"], answer["t"]) == ("answer", t), answer
            await send(ws, {"type": "costs", "t": t, "v": list(costs)})
        assert (await receive(ws))["type"] == "reveal?"
        await send(ws, {"type": "reveal", "target": None, "salt": salt})
        end = await receive(ws)
    assert end["status"] == "complete", end
    spec_says('"littlestone-sequence-v1" 0x00 || spec || 0x00 || m_1 || m_2 || … || len(salt)',
              "Here `spec` is `experts:d=D` for D experts without a class.")


async def test_09_a_late_reveal_s_timeout_names_the_reveal(hasty):
    """Server fixed: the timeout's message said "round None"."""
    salt = bytes(range(16))
    async with peer(hasty, "adversary") as ws:
        await send(ws, {"type": "challenge", "rules": {**MB, "rounds": 1},
                        "opponent": "halving", "seed": 1})
        assert (await receive(ws))["type"] == "start"
        await send(ws, {"type": "commit", "digest": commitment_digest("thresholds:n=4", 2,
                                                                      salt)})
        await send(ws, {"type": "instance", "t": 1, "x": 0})
        assert (await receive(ws))["type"] == "prediction"
        await send(ws, {"type": "label", "t": 1, "y": 1})
        assert (await receive(ws))["type"] == "reveal?"
        error = await receive(ws)  # the server's own timeout, unasked
        assert error["code"] == "timeout" and "the reveal" in error["message"], error
        await send(ws, {"type": "reveal", "target": 2, "salt": salt})
        assert (await receive(ws))["status"] == "complete"


# -- 11, 12, 13: the coin and the seeds ----------------------------------------------

async def test_11_12_the_coin_and_the_seeds_recomputed_from_the_key(server):
    """Spec fixed: start.seed is unsigned, the first 8 bytes of HMAC-SHA256(K, "ROLE:S")
    little-endian, S the challenge's signed seed in decimal; the coin's chunks are 8192
    bytes, counted from 0, and the prediction is 1 iff u < p."""
    async with peer(server) as ws:
        rules = {**MB, "rounds": 12}
        start, seen = await learner_game(ws, p=0.5, rules=rules, seed=-5)
    end = seen[-1]
    key = end["key"]
    assert hashlib.sha256(key).digest() == start["commitment"]
    mac = hmac.new(key, b"learner:-5", hashlib.sha256).digest()
    assert start["seed"] == struct.unpack("<Q", mac[:8])[0]
    coin_key = hmac.new(key, b"referee:-5", hashlib.sha256).digest()
    stream = hashlib.shake_256(coin_key + struct.pack("<Q", 0)).digest(8192)
    us = [(w >> 11) / 2**53 for w in struct.unpack("<1024Q", stream)]
    labels = [m["label"]["y"] for m in seen if m["type"] == "instance" and "label" in m]
    labels.append(end["label"]["y"])
    assert len(labels) == 12
    drawn = [int(u < 0.5) for u in us[:12]]
    assert end["result"]["mistakes"] == sum(d != y for d, y in zip(drawn, labels, strict=True))
    spec_says("read as an **unsigned** little-endian integer, 0 .. 2^64-1",
              "the first 8192 bytes of SHAKE-256(C || c)",
              "is 1 if and only if u_t < p_t")


async def test_13_the_same_seed_twice_is_two_different_games_remotely(server):
    """Docs fixed: network.md promised a remote game the records of a local one with the
    same seed; each remote game has a fresh key (section 7)."""
    async with peer(server) as ws:
        first, _ = await learner_game(ws, seed=7)
        second, _ = await learner_game(ws, seed=7)
    assert first["commitment"] != second["commitment"] and first["seed"] != second["seed"]
    for page in ("docs/manual/network.md", "docs/reference/server.md"):
        assert "a local game with the same seed have the same records" not in \
            (ROOT / page).read_text()


# -- 14: class specs ---------------------------------------------------------------

async def test_14_the_start_s_class_is_the_canonical_spec_of_section_2_1(server):
    """Spec fixed: section 2.1 tables every family, its parameters, defaults and
    canonical form; a client compares the canonical forms."""
    async with peer(server) as ws:
        await send(ws, {"type": "challenge", "rules": {"game": "mistake-bound",
                                                       "class": "halfspaces:d=3",
                                                       "rounds": 1},
                        "opponent": "random-target"})
        start = await receive(ws)
    assert start["rules"]["class"] == "halfspaces:d=3,margin=0.1"
    text = (ROOT / "PROTOCOL.md").read_text()
    for family in ("thresholds", "singletons", "intervals", "monotone-disjunctions",
                   "k-disjunctions", "conjunctions", "monotone-conjunctions", "halfspaces",
                   "quadratic", "matrix"):
        assert f"| `{family}:" in text, family


# -- 15, 17: lobby answers -----------------------------------------------------------

async def test_15_an_unknown_message_type_is_a_lobby_fault_the_16th_closes_1003(server):
    """Spec fixed: an unknown type is a non-fatal bad_message, a lobby fault."""
    async with peer(server) as ws:
        for _ in range(15):
            await send(ws, {"type": "dance"})
            answer = await receive(ws)
            assert (answer["code"], answer["fatal"]) == ("bad_message", False)
        await send(ws, {"type": "dance"})
        messages, code = await until_closed(ws)
        assert [(m["code"], m["fatal"]) for m in messages] == [("bad_message", True)]
        assert code == 1003
    spec_says("A map whose `type` is not a message of this page is `bad_message` too.")


async def test_17_enter_on_a_server_running_no_tournament_is_not_found(server):
    """Spec fixed: `enter` also answers `not_found` (no such tournament running)."""
    async with peer(server) as ws:
        await send(ws, {"type": "enter", "tournament": "week-3"})
        answer = await receive(ws)
        assert (answer["code"], answer["fatal"]) == ("not_found", False)
    spec_says("`not_found`, not fatal, when no tournament of that name runs on this server")


# -- 16, 21: the command line and the README -------------------------------------

def test_16_serve_takes_a_time_bank_of_0_and_refuses_a_deadline_of_0(capsys):
    """Spec fixed: the time banks may be 0 (none); every other number must be positive."""
    parser = build_parser()
    assert parser.parse_args(["serve", "--time-bank", "0"]).time_bank == 0.0
    assert main(["serve", "--move-deadline", "0"]) == 2
    assert "--move-deadline: 0 must be a number > 0" in capsys.readouterr().err
    assert "`--time-bank` and `--human-time-bank` may be 0" in (ROOT / "PROTOCOL.md").read_text()


async def test_21_connect_refuses_a_learner_that_is_not_a_subclass(server, tmp_path, capsys):
    """README fixed: a learner subclasses littlestone.Learner; `connect` says so."""
    duck = tmp_path / "duck.py"
    duck.write_text("class Duck:\n    def predict(self, x):\n        return 0.0\n"
                    "    def update(self, x, y):\n        pass\n")
    status = await asyncio.to_thread(main, [
        "connect", server.url, "--learner", f"{duck}:Duck", "--vs", "random-target",
        "--class", "thresholds:n=4", "--rounds", "2"])
    assert status == 2
    assert "subclass littlestone" in capsys.readouterr().err
    assert "a subclass of `littlestone.Learner`" in (ROOT / "README.md").read_text()


# -- 18, 20: spectators and the clock --------------------------------------------

async def test_18_watching_at_t_0_has_its_totals(server):
    """Server fixed: `watching` before any round is logged carries zero totals."""
    async with peer(server, "adversary") as player:
        await send(player, {"type": "challenge", "rules": MB, "opponent": "halving",
                            "seed": 1})
        start = await receive(player)
        async with peer(server, "spectator") as spectator:
            await send(spectator, {"type": "watch", "game_id": start["game_id"]})
            watching = await receive(spectator)
    assert watching["type"] == "watching" and watching["t"] == 0
    assert (watching["mistakes"], watching["expected_mistakes"]) == (0, 0.0)
    spec_says("Before the first round is logged, `t` is 0 and the totals are 0")


async def test_20_the_server_sends_timeout_unasked_and_scores_the_round(hasty):
    """Spec fixed: `timeout` is the server's own message when the deadline and the bank
    run out; the round is then scored against the learner and the game goes on."""
    async with peer(hasty) as ws:
        await send(ws, {"type": "challenge", "rules": MB, "opponent": "random-target",
                        "seed": 1})
        assert (await receive(ws))["type"] == "start"
        assert (await receive(ws))["t"] == 1
        error = await receive(ws)  # nothing sent: the server speaks first
        assert (error["type"], error["code"], error["fatal"]) == ("error", "timeout", False)
        second = await receive(ws)
        assert (second["type"], second["t"], second["label"]["t"]) == ("instance", 2, 1)
    spec_says("the server itself sends", "A `timeout` is therefore never an answer to a move")


async def test_20_a_late_move_within_the_time_bank_is_taken(tmp_path):
    async with (running_server(tmp_path, move_deadline=0.05, time_bank=5.0) as slow,
                peer(slow) as ws):
        await send(ws, {"type": "challenge", "rules": MB, "opponent": "random-target",
                        "seed": 1})
        assert (await receive(ws))["type"] == "start"
        assert (await receive(ws))["t"] == 1
        await asyncio.sleep(0.2)  # past the deadline, within the bank
        await send(ws, {"type": "predict", "t": 1, "p": 0.0})
        second = await receive(ws)
        assert (second["type"], second["t"]) == ("instance", 2)
    spec_says("A move later than the per-move deadline is still taken while the time bank lasts")
