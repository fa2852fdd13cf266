"""Red team of admission: play tickets, guests and people. A guest from many addresses, a
ticket holder and a peer that says it is human each try to hold more of the server than
their share (docs/manual/network.md); real sockets on loopback, costs counted, never
timed.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator
from typing import Any

import msgpack
import pytest
from websockets.asyncio.client import ClientConnection, connect

from littlestone.server.net.admission import TICKETS_MAX, Credentials, Ticket
from littlestone.server.net.settings import GUESTS_SHARE, Budgets, ConnectionLimits
from littlestone.server.records.store import Store
from tests.server.web.test_web import running_server
from tests.server.web.test_web_play import RULES, ask, hello, ticket

# -- play tickets, guests and people ----------------------------------------------------


class _Watched(Ticket):
    """A ticket that counts how often its expiry is read."""

    reads = 0

    def __getattribute__(self, name: str) -> Any:
        if name == "expires":
            type(self).reads += 1
        return super().__getattribute__(name)


def test_minting_a_ticket_looks_at_few_of_the_tickets_held(tmp_path):
    """Break (fixed): each mint walked every ticket held; with the 4096 a guests' flood
    keeps, a mint cost 3.3 ms of the event loop instead of 11 us (300x). Now it stops at
    the first ticket that is neither expired nor over the cap (counted: tickets read)."""
    credentials = Credentials(Store(tmp_path))
    for i in range(TICKETS_MAX - 1):
        credentials.tickets[f"{i:064x}"] = _Watched("guest", None, math.inf)
    _Watched.reads = 0
    credentials.ticket(None)
    credentials.ticket(None)
    assert len(credentials.tickets) == TICKETS_MAX
    assert _Watched.reads <= 4, f"{_Watched.reads} tickets looked at to mint 2"


@contextlib.asynccontextmanager
async def _guest_from(server: Any, address: str) -> AsyncIterator[ClientConnection]:
    """A guest's session from ``address`` (127.0.0.x: loopback has them all), playing a
    game that waits for its first move."""
    _, minted = await ticket(server)
    async with connect(server.url, compression=None, proxy=None,
                       local_addr=(address, 0)) as ws:
        await ws.send(msgpack.packb({"type": "hello", "version": 1, "role": "learner",
                                     "agent": "person", "token": minted["ticket"],
                                     "capabilities": ["human"]}))
        assert msgpack.unpackb(await asyncio.wait_for(ws.recv(), 30))["type"] == "welcome"
        start = await ask(ws, {"type": "challenge", "rules": RULES,
                               "opponent": "random-target", "seed": 1})
        assert start["type"] == "start", start
        yield ws


async def test_guests_from_many_addresses_leave_game_slots_to_token_holders(tmp_path):
    """Break (fixed): guests were capped per address (--guest-games) but not in all:
    guests from as many addresses as max_games/guest_games (128 by default; one IPv6
    host had 2^64) held every game slot, each for up to 10^6 rounds at the human
    deadlines, and no token holder could play. Now guests together hold at most
    GUESTS_SHARE of --max-games: the third and fourth addresses are told over_budget,
    and a token holder plays."""
    async with running_server(tmp_path, public=True, public_play=True,
                              budgets=Budgets(max_games=4),
                              connections=ConnectionLimits(guest_games=1)) as server, \
            contextlib.AsyncExitStack() as stack:
        assert int(4 * GUESTS_SHARE) == 2
        for i in range(2):
            await stack.enter_async_context(_guest_from(server, f"127.0.0.{2 + i}"))
        for i in range(2, 4):
            with pytest.raises(AssertionError, match="guests play 2 games already"):
                await stack.enter_async_context(_guest_from(server, f"127.0.0.{2 + i}"))
        async with hello(server, server.token) as (ws, _):
            reply = await ask(ws, {"type": "challenge", "rules": RULES,
                                   "opponent": "random-target", "seed": 2})
            assert reply["type"] == "start", reply  # (was over_budget max_games)


def test_a_guest_is_named_by_its_ipv6_network_not_each_address(tmp_path):
    """Break (fixed): a guest was its exact address; on IPv6 one host has a /64 of them,
    each a new guest with its own --guest-games share. Now an IPv6 guest is its /64."""
    credentials = Credentials(Store(tmp_path))
    assert credentials.guest_name("2001:db8:1:2::1") == credentials.guest_name(
        "2001:db8:1:2:ffff::9")


async def test_a_peer_that_says_human_cannot_hold_a_game_for_years(tmp_path):
    """Break (fixed): a peer that says 'human' got 120 s a move on any rules: with the
    10^6 rounds the budgets allow, one game held its slot for up to 10^6 x 2 x 120 s
    (7.6 years), 8 such games a token. Now a person's game is of at most
    ``human_max_rounds`` (1000) rounds, challenged, created or joined."""
    async with running_server(tmp_path) as server, hello(server, server.token,
                                                         ["human"]) as (ws, welcome):
        assert welcome["limits"]["move_deadline_ms"] == 120_000
        long_rules = {**RULES, "rounds": 1_000_000, "horizon": 1_000_000}
        reply = await ask(ws, {"type": "challenge", "seed": 1, "opponent": "random-target",
                               "rules": long_rules})
        assert reply["type"] == "error" and reply["code"] == "over_budget", reply
        assert "a person plays" in reply["message"]
        reply = await ask(ws, {"type": "create", "seed": 1, "rules": long_rules})
        assert reply["type"] == "error" and reply["code"] == "over_budget", reply
        # nor by joining a machine's long game
        async with hello(server, server.store.add_token("machine"), role="adversary") as (
                creator, _):
            created = await ask(creator, {"type": "create", "seed": 1, "rules": long_rules})
            assert created["type"] == "created", created
            reply = await ask(ws, {"type": "join", "game_id": created["game_id"]})
            assert reply["type"] == "error" and reply["code"] == "over_budget", reply
        reply = await ask(ws, {"type": "challenge", "seed": 1, "opponent": "random-target",
                               "rules": {**RULES, "rounds": 1000, "horizon": 1000}})
        assert reply["type"] == "start", reply  # (a person's game of 1000 rounds is fine)
