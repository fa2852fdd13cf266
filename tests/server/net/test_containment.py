"""Containment on the server: a peer with a token can make the server run, open or
allocate nothing beyond what its operator configured. Each attack is tried over a real
socket, shown refused with its typed error, and followed by an honest game that
completes."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.server.net.settings import Budgets
from littlestone.server.records.store import Store
from tests.support.servers import running_server

RULES = {"game": "mistake-bound", "class": "thresholds:n=15", "rounds": 20}


@contextlib.asynccontextmanager
async def peer(server: Any, role: str = "learner") -> AsyncIterator[ClientConnection]:
    """A raw client past the handshake."""
    async with connect(server.url, compression=None, proxy=None) as ws:
        await ws.send(msgpack.packb({"type": "hello", "version": 1, "role": role,
                                     "agent": "curious", "token": server.token,
                                     "capabilities": []}))
        assert msgpack.unpackb(await ws.recv())["type"] == "welcome"
        yield ws


async def ask(ws: ClientConnection, message: dict[str, Any], timeout: float = 30.0
              ) -> dict[str, Any]:
    await ws.send(msgpack.packb(message))
    return dict(msgpack.unpackb(await asyncio.wait_for(ws.recv(), timeout)))


async def honest_game(server: Any) -> None:
    """The server and its other games go on: a whole game against it completes."""
    game = GameSpec(MISTAKE_BOUND, 30, make_class("thresholds:n=31"))
    out = await play_remote(server.url, LEARNERS.make("halving"), "random-target", game, 1,
                            server.token)
    assert out["status"] == "complete" and out["mistakes"] <= 5


def evil_file(folder: Path, marker: Path) -> Path:
    """An agent file whose import writes ``marker`` (as a submission could place one)."""
    evil = folder / "evil.py"
    evil.write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from littlestone.adversaries.flips import CoverFlip as Evil\n")
    return evil


async def test_an_opponent_named_by_a_file_is_never_imported(tmp_path):
    marker = tmp_path / "marker"
    evil = evil_file(tmp_path, marker)
    async with running_server(tmp_path / "data") as server, peer(server) as ws:
        replies = []
        for opponent in (f"{evil}:Evil", "evil.py:Evil", f"{tmp_path}/missing.py:Evil",
                         f"{evil.with_suffix('')}", "../../evil.py:Evil"):
            replies.append(await ask(ws, {"type": "challenge", "rules": RULES,
                                          "opponent": opponent, "seed": 1}))
        assert all(r["type"] == "error" and r["code"] == "unsupported_game" for r in replies)
        # the same words whether the file exists or not: nothing about the disk leaks
        assert len({r["message"] for r in replies}) == 1, replies
        assert "named by id" in replies[0]["message"]
        await honest_game(server)
    assert not marker.exists()


@pytest.mark.parametrize(("opponent", "role"), [
    ("replay:log=littlestone", "learner"),
    ("replay", "learner"),
    ("shattered-tree:tree=/etc/passwd", "learner"),
    ("river:linear_model.Perceptron", "adversary"),
    ("sklearn:linear_model.SGDClassifier", "adversary"),
    ("sklearn:model=os.system", "adversary"),
])
async def test_agents_that_read_files_or_import_code_are_not_served(tmp_path, opponent, role):
    async with running_server(tmp_path / "data") as server:
        async with peer(server, role) as ws:
            reply = await ask(ws, {"type": "challenge", "rules": RULES, "opponent": opponent,
                                   "seed": 1})
        assert reply["type"] == "error" and reply["code"] == "unsupported_game", reply
        assert "/etc" not in reply["message"] and "littlestone.db" not in reply["message"]
        await honest_game(server)


async def test_a_class_read_from_a_file_is_refused_before_the_file_is_opened(tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("TOP-SECRET,1\n0,1\n")
    async with running_server(tmp_path / "data") as server, peer(server) as ws:
        replies = [await ask(ws, {"type": "challenge", "opponent": "halving", "seed": 1,
                                  "rules": {**RULES, "class": f"matrix:path={path}"}})
                   for path in (secret, tmp_path / "none.csv", "/etc/passwd")]
        for reply in replies:
            assert reply["type"] == "error" and reply["code"] == "unsupported_game"
            assert "TOP-SECRET" not in reply["message"] and "root" not in reply["message"]
        assert len({r["message"] for r in replies}) == 1  # exists or not: the same words
        created = await ask(ws, {"type": "create", "seed": 1,
                                 "rules": {**RULES, "class": f"matrix:path={secret}"}})
        assert created["type"] == "error" and "TOP-SECRET" not in created["message"]
        await honest_game(server)


SMALL = Budgets(max_rounds=1000, max_hypotheses=1024, max_dimension=64, max_experts=50,
                ldim_work=200_000, max_truth_table=1 << 16, solver_memory_mb=4,
                game_memory_mb=8, max_games=4)


@pytest.mark.slow
@pytest.mark.parametrize(("rules", "opponent", "admitted"), [
    # each budget, just inside and just beyond
    ({**RULES, "rounds": 1000}, "random-target", True),
    ({**RULES, "rounds": 1001}, "random-target", False),
    ({**RULES, "class": "thresholds:n=1023"}, "random-target", True),       # 1024 hypotheses
    ({**RULES, "class": "thresholds:n=1024"}, "random-target", False),
    ({**RULES, "class": "conjunctions:n=15"}, "random-target", False),      # 14 million
    ({**RULES, "class": "monotone-disjunctions:n=21"}, "random-target", False),
    ({**RULES, "class": "halfspaces:d=64"}, "random-target", True),
    ({**RULES, "class": "halfspaces:d=65"}, "random-target", False),
    ({**RULES, "class": "halfspaces:d=1048576"}, "random-target", False),
    ({"game": "experts", "experts": 50, "rounds": 20}, "cover-flip", True),
    ({"game": "experts", "experts": 51, "rounds": 20}, "cover-flip", False),
    ({**RULES, "class": "thresholds:n=255"}, "shattered-tree:budget=200000", True),
    ({**RULES, "class": "thresholds:n=255"}, "shattered-tree:budget=200001", False),
    ({**RULES, "class": "thresholds:n=255"}, "shattered-tree:budget=1000000000000", False),
    ({**RULES, "class": "intervals:n=400"}, "shattered-tree", False),        # truth table
    ({**RULES, "class": "halfspaces:d=64", "rounds": 1000}, "random-target", True),
])
async def test_each_budget_on_both_sides(tmp_path, rules, opponent, admitted):
    async with running_server(tmp_path / "data", budgets=SMALL) as server:
        async with peer(server) as ws:
            reply = await ask(ws, {"type": "challenge", "rules": rules, "opponent": opponent,
                                   "seed": 2})
        if admitted:
            assert reply["type"] == "start", reply
        else:
            assert reply["type"] == "error" and reply["code"] == "over_budget", reply
            assert reply["message"].startswith("over budget")
        await honest_game(server)


async def test_the_memory_estimate_refuses_a_game_that_would_hold_too_much(tmp_path):
    budgets = Budgets(max_dimension=1 << 20, game_memory_mb=64)
    async with running_server(tmp_path / "data", budgets=budgets) as server:
        async with peer(server) as ws:
            refused = await ask(ws, {"type": "challenge", "opponent": "random-target", "seed": 1,
                                     "rules": {**RULES, "class": "halfspaces:d=262144"}})
            fits = await ask(ws, {"type": "challenge", "opponent": "random-target", "seed": 1,
                                  "rules": {**RULES, "class": "halfspaces:d=2048"}})
        assert refused["code"] == "over_budget" and "MiB" in refused["message"]
        assert fits["type"] == "start"


async def test_the_server_referees_at_most_max_games_at_once(tmp_path):
    budgets = Budgets(max_games=2)
    async with running_server(tmp_path / "data", budgets=budgets) as server:
        async with peer(server) as one, peer(server) as two, peer(server) as three:
            long = {**RULES, "rounds": 1000}
            for ws in (one, two):  # two games started, never answered: running
                assert (await ask(ws, {"type": "challenge", "rules": long,
                                       "opponent": "random-target", "seed": 1}))["type"] == "start"
            third = await ask(three, {"type": "challenge", "rules": long,
                                      "opponent": "random-target", "seed": 1})
            assert third["code"] == "over_budget"
        # the two idle games end with their connections; then there is room again
        for _ in range(100):
            if not server.running:
                break
            await asyncio.sleep(0.05)
        await honest_game(server)


@pytest.mark.slow
async def test_a_slow_set_up_does_not_hold_up_a_running_game(tmp_path):
    """SOA on k-disjunctions:n=12,k=3 spends most of a second on its set-up (exact Ldim,
    from a cold cache: a process of its own each game); it does not run on the event
    loop, so a game in progress keeps being played meanwhile: the rounds it plays
    between the challenge and its start are counted, in the log's batches of 256 (no
    clock is read)."""
    budgets = Budgets(ldim_work=50_000_000, setup_cpu_s=60.0, move_cpu_s=60.0)
    async with running_server(tmp_path / "data", budgets=budgets) as server:
        busy = GameSpec(MISTAKE_BOUND, 1_000_000, make_class("thresholds:n=1023"))
        running = asyncio.create_task(play_remote(
            server.url, LEARNERS.make("halving"), "random-target", busy, 1, server.token))
        while not server.running:
            await asyncio.sleep(0.01)
        (broadcast,) = server.running.values()  # its t: the rounds logged so far
        await asyncio.sleep(0.2)
        before = broadcast.t
        async with peer(server, "adversary") as ws:
            # (its process runs at a lower priority than the server's, here busy)
            start = await ask(ws, {"type": "challenge", "opponent": "soa", "seed": 1,
                                   "rules": {**RULES, "class": "k-disjunctions:n=12,k=3"}},
                              timeout=300)
            assert start["type"] == "start", start
        during = broadcast.t - before
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await running
    # whole batches of 256 rounds were logged while SOA set up (none when the set-up ran
    # on the event loop)
    assert during >= 256, during


async def test_an_operator_agent_is_served_by_name_and_takes_no_parameters(tmp_path):
    marker = tmp_path / "marker"
    evil = evil_file(tmp_path, marker)  # the operator's own file: trusted, loaded at start
    async with running_server(tmp_path / "data",
                              agents=(("teacher", f"{evil}:Evil"),)) as server:
        assert marker.exists()  # loaded once, by the operator's choice
        marker.unlink()
        async with peer(server) as ws:
            ok = await ask(ws, {"type": "challenge", "opponent": "teacher", "seed": 1,
                                "rules": {"game": "experts", "experts": 2, "rounds": 5}})
        assert ok["type"] == "start"
        async with peer(server) as ws:
            refused = await ask(ws, {"type": "challenge", "opponent": "teacher:x=1", "seed": 1,
                                     "rules": {"game": "experts", "experts": 2, "rounds": 5}})
        assert refused["code"] == "unsupported_game"


async def test_the_index_keeps_every_row_when_peers_name_it(tmp_path):
    """Peers once opened the server's own littlestone.db as a log (replay:log=...), which
    released SQLite's locks: rows were lost. Now nothing opens it but the store; many
    games with such attempts in between leave every row in place."""
    data = tmp_path / "data"
    async with running_server(data) as server:
        games = []
        for i in range(12):
            async with peer(server) as ws:
                reply = await ask(ws, {"type": "challenge", "rules": RULES, "seed": i,
                                       "opponent": f"replay:log={data / 'littlestone.db'}"})
                assert reply["code"] == "unsupported_game"
            game = GameSpec(MISTAKE_BOUND, 10, make_class("thresholds:n=7"))
            out = await play_remote(server.url, LEARNERS.make("halving"), "random-target",
                                    game, i, server.token)
            games.append(out["game_id"])
    store = Store(data)
    assert all(store.game(g)["status"] == "complete" for g in games)
    assert os.path.getsize(data / "littlestone.db") > 0


async def test_a_one_time_credential_enters_its_tournament_once_and_nothing_else(tmp_path):
    """What a submission gets: a credential good for one connection that may only enter
    its own tournament, void once revoked."""
    async with running_server(tmp_path / "data") as server:
        token = server.grant("week-3", "learner-abc")

        async def hello(credential: str) -> tuple[Any, dict[str, Any]]:
            ws = await connect(server.url, compression=None, proxy=None)
            await ws.send(msgpack.packb({"type": "hello", "version": 1, "role": "learner",
                                         "agent": "sub", "token": credential,
                                         "capabilities": []}))
            return ws, msgpack.unpackb(await ws.recv())

        ws, welcome = await hello(token)
        assert welcome["type"] == "welcome"
        refused = await ask(ws, {"type": "challenge", "rules": RULES, "opponent": "halving",
                                 "seed": 1})
        assert refused["code"] == "unauthorized" and refused["fatal"]
        await ws.close()
        again, answer = await hello(token)  # used once already
        assert answer["code"] == "unauthorized"
        await again.close()
        fresh = server.grant("week-3", "learner-def")
        ws, welcome = await hello(fresh)
        other = await ask(ws, {"type": "enter", "tournament": "week-4"})
        assert other["code"] == "unauthorized"
        await ws.close()
        unused = server.grant("week-3", "learner-ghi")
        server.revoke("learner-ghi")
        late, answer = await hello(unused)
        assert answer["code"] == "unauthorized"
        await late.close()
        await honest_game(server)


async def test_a_submissions_connection_closes_when_its_games_are_done(tmp_path):
    """After ``done`` a submission's connection cannot linger to ask for games of its own
    (revoking its credential at the end of its game lifts nothing): it is closed."""
    async with running_server(tmp_path / "data") as server:
        token = server.grant("week-3", "learner-xyz")
        async with connect(server.url, compression=None, proxy=None) as ws:
            await ws.send(msgpack.packb({"type": "hello", "version": 1, "role": "learner",
                                         "agent": "sub", "token": token,
                                         "capabilities": []}))
            assert msgpack.unpackb(await ws.recv())["type"] == "welcome"
            entered = await ask(ws, {"type": "enter", "tournament": "week-3"})
            assert entered["type"] == "entered"
            server.release_entrant("week-3", "learner-xyz")
            server.revoke("learner-xyz")
            assert msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10))["type"] == "done"
            with pytest.raises(ConnectionClosed):  # closed by the server after done
                await ws.send(msgpack.packb({"type": "challenge", "rules": RULES, "seed": 1,
                                             "opponent": "random-target"}))
                await asyncio.wait_for(ws.recv(), 10)
        assert not server.running
        await honest_game(server)


async def test_a_huge_class_spec_is_refused_at_once(tmp_path):
    """k-disjunctions:n=65536,k=65536 once summed binomials for half an hour before its
    size was known, in a worker the other games' set-ups needed: now refused at once."""
    async with running_server(tmp_path / "data") as server:
        for _ in range(8):  # more than the worker threads
            async with peer(server) as ws:
                reply = await ask(ws, {"type": "challenge", "opponent": "random-target",
                                       "seed": 1, "rules": {
                                           **RULES, "class": "k-disjunctions:n=65536,k=65536"}})
                assert reply["type"] == "error" and "over the limit" in reply["message"]
        await honest_game(server)


async def test_the_disk_a_game_would_write_is_budgeted(tmp_path):
    """66 GB once: a halfspace game logs and keeps every instance (8 d bytes each)."""
    async with running_server(tmp_path / "data", budgets=Budgets(game_disk_mb=1)) as server:
        async with peer(server) as ws:
            fits = await ask(ws, {"type": "challenge", "opponent": "random-target", "seed": 1,
                                  "rules": {**RULES, "class": "halfspaces:d=64",
                                            "rounds": 900}})
        async with peer(server) as ws:
            refused = await ask(ws, {"type": "challenge", "opponent": "random-target", "seed": 1,
                                     "rules": {**RULES, "class": "halfspaces:d=64",
                                               "rounds": 1000}})
        assert fits["type"] == "start"
        assert refused["code"] == "over_budget" and "write" in refused["message"]
        await honest_game(server)


async def test_simultaneous_challenges_cannot_exceed_max_games(tmp_path):
    """A slot is held from the moment a challenge is admitted: twelve challenges sent at
    once with --max-games 2 start two games."""
    async with (running_server(tmp_path / "data", budgets=Budgets(max_games=2)) as server,
                contextlib.AsyncExitStack() as stack):
        peers = [await stack.enter_async_context(peer(server)) for _ in range(12)]
        long = {**RULES, "class": "conjunctions:n=12", "rounds": 1000}
        for ws in peers:
            await ws.send(msgpack.packb({"type": "challenge", "rules": long, "seed": 1,
                                         "opponent": "random-target"}))
        replies = [msgpack.unpackb(await asyncio.wait_for(ws.recv(), 30)) for ws in peers]
        kinds = sorted(r["type"] if r["type"] == "start" else r["code"] for r in replies)
        assert kinds == ["over_budget"] * 10 + ["start"] * 2


@pytest.mark.parametrize("opponent", ["soa:budget=1", "shattered-tree:budget=3"])
async def test_a_built_in_that_cannot_set_up_is_refused_not_the_session(tmp_path, opponent):
    """SOA or shattered-tree with too small a budget for exact Ldim used to escape as
    `internal` (1011, a row left running), then ended its game against the built-in: now
    its set-up (in its own process, before the game starts) is refused ``over_budget``,
    no game is indexed, and the session goes on."""
    role = "adversary" if opponent.startswith("soa") else "learner"
    async with running_server(tmp_path / "data") as server:
        async with peer(server, role) as ws:
            refused = await ask(ws, {"type": "challenge", "opponent": opponent, "seed": 1,
                                     "rules": {**RULES, "class": "thresholds:n=255"}})
            assert refused["type"] == "error" and refused["code"] == "over_budget", refused
            assert "instance checks" in refused["message"] and not refused["fatal"]
            assert not server.store.games()
            again = await ask(ws, {"type": "challenge", "opponent": opponent.split(":")[0],
                                   "seed": 1, "rules": {**RULES, "class": "thresholds:n=255"}})
            assert again["type"] == "start", again
        await honest_game(server)


@pytest.mark.parametrize(("message", "code"), [
    ({"type": "challenge", "rules": RULES, "opponent": "random-target", "seed": 1 << 63},
     "bad_message"),
    ({"type": "create", "rules": RULES, "seed": (1 << 64) - 1}, "bad_message"),
    ({"type": "challenge", "rules": RULES, "opponent": "soa:budget=\u00b2", "seed": 1},
     "over_budget"),  # a superscript two: isdigit(), and int() refuses it
    ({"type": "challenge", "rules": RULES, "opponent": "soa:budget=\u2460", "seed": 1},
     "over_budget"),
])
async def test_requests_that_once_ended_in_internal(tmp_path, message, code):
    async with running_server(tmp_path / "data") as server:
        role = "adversary" if "soa" in str(message.get("opponent")) else "learner"
        async with peer(server, role) as ws:
            reply = await ask(ws, message)
        assert reply["type"] == "error" and reply["code"] == code, reply
        await honest_game(server)


async def test_an_oversized_lobby_frame_is_not_decoded(tmp_path):
    """Lobby messages are small: a 100 KiB one closes the session before decoding."""
    async with running_server(tmp_path / "data") as server:
        async with peer(server) as ws:
            await ws.send(msgpack.packb({"type": "join", "game_id": "g",
                                         "pad": [[i] for i in range(30_000)]}))
            reply = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10))
            assert reply["code"] == "bad_message" and reply["fatal"]
            assert "lobby" in reply["message"]
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 10)
        await honest_game(server)
