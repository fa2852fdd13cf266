"""Playing on the page, server side (littlestone.server.web.play, the play tickets of
littlestone.server.net.admission, the ``human`` capability): the page's script is one
more client, and it gets nothing a peer cannot get. The browser itself plays in
tests/server/web/test_web_browser.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import msgpack
import pytest
from websockets.asyncio.client import ClientConnection, connect

from littlestone.games.classes import make_class
from littlestone.server.net.admission import Credentials
from littlestone.server.net.settings import ConnectionLimits, ServerSettings
from littlestone.server.records.store import Store
from littlestone.server.web import play
from tests.server.web.test_web import get, running_server

RULES = {"game": "mistake-bound", "class": "thresholds:n=7", "experts": None, "rounds": 3,
         "horizon": 3}


def base(server: Any) -> str:
    return f"http://127.0.0.1:{server.port}"


async def ticket(server: Any, headers: dict[str, str] | None = None
                 ) -> tuple[int, dict[str, Any]]:
    """POST /api/play/ticket as the page's script does (same origin, the cookie)."""
    host = f"127.0.0.1:{server.port}"
    sent = {"Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin", **(headers or {})}
    status, _, body = await get(base(server) + "/api/play/ticket", headers=sent, method="POST")
    return status, json.loads(body)


def cookie(token: str) -> dict[str, str]:
    return {"Cookie": f"littlestone_token={token}"}


@contextlib.asynccontextmanager
async def hello(server: Any, token: str | None, capabilities: list[str] | None = None,
                role: str = "learner") -> AsyncIterator[tuple[ClientConnection, dict[str, Any]]]:
    """A raw client that said hello with ``token``; yields it and the server's answer."""
    async with connect(server.url, compression=None, proxy=None) as ws:
        await ws.send(msgpack.packb({"type": "hello", "version": 1, "role": role,
                                     "agent": "person", "token": token,
                                     "capabilities": capabilities or []}))
        yield ws, msgpack.unpackb(await asyncio.wait_for(ws.recv(), 30))


async def ask(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(msgpack.packb(message))
    return dict(msgpack.unpackb(await asyncio.wait_for(ws.recv(), 30)))


async def test_a_ticket_plays_once_as_the_cookies_account_with_a_persons_deadlines(tmp_path):
    async with running_server(tmp_path) as server:
        status, answer = await ticket(server, cookie(server.token))
        assert status == 200 and answer["guest"] is False
        assert answer["ticket"].startswith("lsp_") and server.token not in json.dumps(answer)
        async with hello(server, answer["ticket"], ["human"]) as (ws, welcome):
            assert welcome["type"] == "welcome"
            limits = welcome["limits"]
            assert limits["move_deadline_ms"] == 120_000 and limits["time_bank_ms"] == 600_000
            start = await ask(ws, {"type": "challenge", "rules": RULES,
                                   "opponent": "shattered-tree", "seed": 1})
            assert start["type"] == "start"
            assert server.running[start["game_id"]].accounts == {"bob"}  # the cookie's account
        # one connection: the same ticket again is unknown
        async with hello(server, answer["ticket"]) as (_, refused):
            assert refused["code"] == "unauthorized"


async def test_a_peer_that_says_human_gets_the_same_deadlines_without_the_page(tmp_path):
    """Nothing the page can do that a peer cannot: the capability is anyone's to say."""
    async with running_server(tmp_path, human_move_deadline=30.0, human_time_bank=90.0) as server:
        async with hello(server, server.token, ["human"]) as (_, welcome):
            assert welcome["limits"]["move_deadline_ms"] == 30_000
            assert welcome["limits"]["time_bank_ms"] == 90_000
        async with hello(server, server.token, ["something-else"]) as (_, welcome):
            assert welcome["limits"]["move_deadline_ms"] == 10_000  # the agents' deadline


async def test_a_persons_deadline_is_the_one_their_moves_are_held_to(tmp_path):
    """A person who walks away forfeits on the human deadline (here short), not on the
    agents' (here long enough that the test would never see it)."""
    async with (running_server(tmp_path, move_deadline=300.0, human_move_deadline=0.05,
                               human_time_bank=0.0) as server,
                hello(server, server.token, ["human"]) as (ws, _)):
        start = await ask(ws, {"type": "challenge", "rules": RULES,
                               "opponent": "random-target", "seed": 1})
        assert start["type"] == "start"
        seen = []
        while not seen or seen[-1]["type"] != "end":
            seen.append(msgpack.unpackb(await asyncio.wait_for(ws.recv(), 30)))
        assert seen[-1]["status"] == "forfeit:learner:timeout"
        assert [m["code"] for m in seen if m["type"] == "error"] == ["timeout"] * 3


async def test_tickets_are_refused_to_other_origins_spectators_and_strangers(tmp_path):
    async with running_server(tmp_path) as server:
        spectator = server.store.add_token("eve", "spectator")
        status, answer = await ticket(server, cookie(spectator))
        assert status == 403 and "only watches" in answer["error"]
        for other in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                      {"Origin": "null"}, {"Sec-Fetch-Site": "same-site"}):
            status, answer = await ticket(server, {**cookie(server.token), **other})
            assert status == 403, other
        status, answer = await ticket(server)  # no token, and no public play
        assert status == 401
        status, answer = await ticket(server, cookie("ls_not-a-token"))
        assert status == 401
        # the public read-only view alone does not open play to guests
        assert not server.settings.public_play


async def test_a_ticket_stops_with_its_token(tmp_path):
    async with running_server(tmp_path) as server:
        _, first = await ticket(server, cookie(server.token))
        _, second = await ticket(server, cookie(server.token))
        async with hello(server, first["ticket"]) as (ws, welcome):
            assert welcome["type"] == "welcome"
            assert server.store.revoke_token("bob")
            refused = await ask(ws, {"type": "challenge", "rules": RULES,
                                     "opponent": "shattered-tree", "seed": 1})
            assert refused["code"] == "unauthorized" and "revoked" in refused["message"]
        async with hello(server, second["ticket"]) as (_, refused):  # minted before
            assert refused["code"] == "unauthorized"


def test_a_ticket_expires_unused(tmp_path):
    store = Store(tmp_path)
    credentials = Credentials(store)
    token = store.add_token("ann")
    late = credentials.ticket(token, ttl_s=-1.0)
    assert credentials.account(late) is None
    assert credentials.account(credentials.ticket(token)) == ("ann", "player")
    with pytest.raises(LookupError):
        credentials.ticket("ls_unknown")


async def test_public_play_gives_guests_tickets_within_a_share_per_address(tmp_path):
    async with running_server(tmp_path, public=True, public_play=True,
                              connections=ConnectionLimits(guest_games=1)) as server:
        status, answer = await ticket(server)
        assert status == 200 and answer["guest"] is True
        _, other = await ticket(server)
        async with hello(server, answer["ticket"], ["human"]) as (ws, welcome):
            assert welcome["type"] == "welcome"
            start = await ask(ws, {"type": "challenge", "rules": RULES,
                                   "opponent": "shattered-tree", "seed": 1})
            (account,) = server.running[start["game_id"]].accounts
            assert account.startswith("guest-") and "127" not in account
            # a second guest game from the same address, while the first runs: refused
            async with hello(server, other["ticket"], ["human"]) as (ws2, _):
                refused = await ask(ws2, {"type": "challenge", "rules": RULES,
                                          "opponent": "shattered-tree", "seed": 2})
                assert refused["code"] == "over_budget" and "guest" in refused["message"]


async def test_the_menu_and_a_menu_class_only(tmp_path):
    async with running_server(tmp_path) as server:
        auth = {"Authorization": f"Bearer {server.token}"}
        status, _, body = await get(base(server) + "/api/play", headers=auth)
        menu = json.loads(body)
        assert status == 200 and menu["limits"]["move_deadline_ms"] == 120_000
        assert menu["classes"] == list(play.CLASSES)
        status, _, body = await get(base(server) + "/api/play/class?spec=singletons:n=8",
                                    headers=auth)
        info = json.loads(body)
        assert status == 200 and info["ldim"] == 1 and info["table"][2] == "00100000"
        # a viewer cannot make the server build (or solve) any other class
        status, _, _ = await get(base(server) + "/api/play/class?spec=thresholds:n=100000000",
                                 headers=auth)
        assert status == 404
        status, _, body = await get(base(server) + "/play", headers=auth)
        assert status == 200 and b"/static/msgpack.min.js" in body and b"<noscript>" in body
        status, _, body = await get(base(server) + "/static/msgpack.LICENSE")
        assert status == 200 and b"MessagePack" in body


def test_the_menus_classes_are_canonical_specs():
    """The page checks that ``start`` has the rules it asked for, by the class's spec."""
    for spec in play.CLASSES:
        assert make_class(spec).spec == spec
        info = play.class_info(spec)
        assert info is not None
        if info["kind"] != "halfspaces":
            assert len(info["table"]) == info["size"] == len(info["hypotheses"])
            assert {len(row) for row in info["table"]} == {info["domain_size"]}
            assert "error" not in info["tree"] and info["tree"]["ldim"] == info["ldim"]


def test_the_class_modes_histograms_sort_games_by_who_played_remotely(tmp_path):
    store = Store(tmp_path)
    rows = [("remote:ann", "shattered-tree", 3), ("remote:bo", "shattered-tree", 2),
            ("halving", "remote:cy", 1), ("soa", "shattered-tree", 3)]
    for learner, adversary, mistakes in rows:
        game_id = store.start_game({"game": "mistake-bound", "class": "thresholds:n=7",
                                    "learner": learner, "adversary": adversary, "horizon": 5},
                                   log=None)
        store.finish_game(game_id, {"status": "complete", "rounds": 5, "mistakes": mistakes,
                                    "expected_mistakes": float(mistakes), "regret": 0.0,
                                    "expected_regret": 0.0})
    board = play.class_mode(store, {}, frozenset())
    groups = {g["name"]: g for g in board["histograms"]}
    count = {name: [b["count"] for b in g["bars"]] for name, g in groups.items()}
    # Ldim(thresholds:n=7) = 3: 3 mistakes is the bin [1, 1.25), 2 is [0.5, 0.75)
    assert count["learner"] == [0, 0, 1, 0, 1, 0, 0, 0, 0]
    assert count["adversary"] == [0, 1, 0, 0, 0, 0, 0, 0, 0]
    assert count["agents"] == [0, 0, 0, 0, 1, 0, 0, 0, 0]
    assert [g["ldim"] for g in board["games"]] == [3, 3, 3, 3] and board["more"] == 0
    from littlestone.server.web import pages

    html = pages.class_board(board)
    assert 'id="histogram-learner" data-scored="2"' in html
    assert html.count("remote:ann") == 1


def test_a_persons_settings_are_the_servers():
    settings = ServerSettings(human_move_deadline=45.0, human_time_bank=5.0)
    person = settings.for_player(frozenset({"human", "x"}))
    assert (person.move_deadline, person.time_bank) == (45.0, 5.0)
    assert settings.for_player(frozenset({"Human"})) is settings
