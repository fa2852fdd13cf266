"""Spectators of a running game (PROTOCOL.md 5.4): the game's log frames, as they are
written, become ``rounds`` messages, and its footer the ``end``.

The broadcast hangs on the game's :class:`~littlestone.server.records.logs.LogWriter`
(its ``observer``), so it sees exactly what the log keeps, in the same batches (a block
of rounds, or up to 256 rounds played one at a time, or one experts round), and never
slows the game: each message goes to a spectator only if its connection takes it at
once (:meth:`.transport.Connection.send_nowait`). A spectator that does not keep up
misses batches; the running totals in every message stay exact. :func:`watch` is a
spectator's session while it watches.

>>> import msgpack, numpy as np
>>> class Spectator:  # a connection that takes every message
...     sent: list[dict] = []
...     def send_nowait(self, frame: bytes) -> bool:
...         self.sent.append(msgpack.unpackb(frame))
...         return True
>>> watch = Broadcast("g1", {"game": "mistake-bound"}, "halving", "random-target")
>>> watch.spectators.add(Spectator())
>>> watch({"kind": "rounds", "t0": 1, "n": 3}, [("p", np.array([1.0, 0.0, 0.5])),
...       ("y", np.array([1, 1, 0], dtype=np.int8)),
...       ("prediction", np.array([1, 0, 1], dtype=np.int8))])
>>> message = Spectator.sent[0]
>>> message["t"], message["mistakes"], message["expected_mistakes"], message["y"]
(3, 2, 1.5, [1, 1, 0])
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

import numpy as np

from littlestone.games.errors import ProtocolError
from littlestone.games.game import ResultFields
from littlestone.protocol import build
from littlestone.protocol.codec import encode
from littlestone.protocol.errors import Code
from littlestone.protocol.session import ServerSession
from littlestone.protocol.wire import Rules, ServerMessage, Totals, Watch, Watching
from littlestone.server.net.peers import PeerLog, refuse
from littlestone.server.net.settings import REVOKE_CHECK_S
from littlestone.server.records.logs.format import ExpertFrame, ExpertsFrame, RoundsFrame
from littlestone.transport import Connection

__all__ = ["Broadcast", "watch", "wire_result"]


def wire_result(scores: ResultFields) -> ResultFields:
    """A result's scalar keys, as plain msgpack values, and its ``faults`` (the ``result``
    of ``end``, PROTOCOL.md 5.1 and 6): each fault a map of ``t`` (nil for the reveal),
    ``role``, ``code`` and ``message``.

    >>> wire_result({"rounds": np.int64(2), "faults": [{"t": 1, "role": "learner",
    ...              "code": "timeout", "message": "late"}], "tree": [1, 2]})
    {'rounds': 2, 'faults': [{'t': 1, 'role': 'learner', 'code': 'timeout', 'message': 'late'}]}
    """
    out: dict[str, object] = {}
    for key, value in scores.items():
        if isinstance(value, np.generic):
            value = value.item()
        if key == "faults" and isinstance(value, list):
            out[key] = [{"t": None if f.get("t") is None else int(f["t"]),
                         "role": str(f.get("role", "")), "code": str(f.get("code", "")),
                         "message": str(f.get("message", ""))} for f in value]
            continue
        if isinstance(value, list | dict):
            continue
        out[key] = value
    return cast("ResultFields", out)  # (its scalar keys: the same fields)


class Broadcast:
    """One running game as its spectators see it."""

    def __init__(self, game_id: str, rules: Rules, learner: str,
                 adversary: str) -> None:
        self.game_id, self.rules = game_id, rules
        self.learner, self.adversary = learner, adversary
        self.spectators: set[Any] = set()
        #: The accounts of the game's players (a player's token watches only its games).
        self.accounts: set[str] = set()
        #: Rounds logged so far, and the running totals of the game (mistake-bound:
        #: mistakes and expected mistakes; experts: loss and regret, realised and expected).
        self.t = 0
        # (zeros before the first round logged: a ``watching`` at t = 0 has its totals)
        self.totals: Totals = (
            {"loss": 0.0, "expected_loss": 0.0, "regret": 0.0, "expected_regret": 0.0}
            if rules.get("game") == "experts" else {"mistakes": 0, "expected_mistakes": 0.0})
        self.over = asyncio.Event()

    def watching(self) -> Watching:
        """The first message a new spectator gets."""
        return build.watching(self.game_id, self.rules, self.learner, self.adversary, self.t,
                              self.totals)

    # (head: a frame's, as the writer's observer gets them: its kind says its type)
    def __call__(self, head: dict[str, Any], buffers: list[tuple[str, Any]]) -> None:
        """A frame of the log (the writer's observer)."""
        kind = head["kind"]
        if kind == "rounds":
            self._rounds(cast("RoundsFrame", head), dict(buffers))
        elif kind == "expert":
            self._expert(cast("ExpertFrame", head))
        elif kind == "experts":
            self._experts(cast("ExpertsFrame", head), dict(buffers))
        elif kind == "footer":
            self.finish(head.get("status", "aborted"), head.get("result") or ResultFields())

    def _rounds(self, head: RoundsFrame, columns: Mapping[str, np.ndarray]) -> None:
        p = np.asarray(columns["p"], dtype=np.float64)
        y = np.asarray(columns["y"], dtype=np.int64)
        drawn = np.asarray(columns["prediction"], dtype=np.int64)
        totals = self.totals
        totals["mistakes"] = int(totals.get("mistakes", 0) + np.count_nonzero(drawn != y))
        totals["expected_mistakes"] = float(totals.get("expected_mistakes", 0.0)
                                            + np.where(y == 1, 1.0 - p, p).sum())
        self.t = int(head["t0"]) + int(head["n"]) - 1
        if self.spectators:
            self._send(build.rounds(self.game_id, int(head["t0"]), int(head["n"]), p.tolist(),
                                    y.tolist(), drawn.tolist(), totals))

    def _expert(self, head: ExpertFrame) -> None:
        totals = self.totals
        totals["loss"] = float(totals.get("loss", 0.0) + head["loss"])
        totals["expected_loss"] = float(totals.get("expected_loss", 0.0)
                                        + head["expected_loss"])
        totals["regret"] = float(head["regret"])
        totals["expected_regret"] = float(head["expected_regret"])
        self.t = int(head["t"])
        if self.spectators:
            self._send(build.expert_rounds(self.game_id, self.t, 1, [head["y"]],
                                           [float(head["loss"])],
                                           [float(head["expected_loss"])], totals))

    def _experts(self, head: ExpertsFrame, columns: Mapping[str, np.ndarray]) -> None:
        """A frame of experts rounds: the totals after its last round, and its rounds."""
        losses = np.asarray(columns["loss"], dtype=np.float64).tolist()
        expected = np.asarray(columns["expected_loss"], dtype=np.float64).tolist()
        if not losses:
            return
        totals = self.totals
        loss, expected_loss = totals.get("loss", 0.0), totals.get("expected_loss", 0.0)
        for round_loss, round_expected in zip(losses, expected, strict=True):
            loss += round_loss
            expected_loss += round_expected
        totals["loss"], totals["expected_loss"] = float(loss), float(expected_loss)
        totals["regret"] = float(columns["regret"][-1])
        totals["expected_regret"] = float(columns["expected_regret"][-1])
        t0, n = int(head["t0"]), int(head["n"])
        self.t = t0 + n - 1
        if self.spectators:
            ys = np.asarray(columns["y"], dtype=np.int64).tolist()
            self._send(build.expert_rounds(self.game_id, t0, n,
                                           [None if y < 0 else y for y in ys], losses,
                                           expected, totals))

    def finish(self, status: str, scores: ResultFields) -> None:
        """The game is over: every spectator gets ``end`` (once)."""
        if self.over.is_set():
            return
        self.over.set()
        if self.spectators:
            self._send(build.spectator_end(self.game_id, status, wire_result(scores)))

    def _send(self, message: ServerMessage) -> None:
        frame = encode(message)
        for connection in list(self.spectators):
            connection.send_nowait(frame)  # False: it does not keep up, and misses this one


async def watch(ws: Connection, session: ServerSession, peer: PeerLog,
                message: Watch, running: Mapping[str, Broadcast],
                revoked: Callable[[], Awaitable[bool]] | None = None) -> None:
    """A spectator follows a running game until its end (PROTOCOL.md 5.4), or until its
    token is revoked (``revoked``, asked every :data:`REVOKE_CHECK_S` seconds, read when
    the watch starts: then ``unauthorized``, and the connection closes, as the web page's
    feed does)."""
    check_every = REVOKE_CHECK_S
    broadcast = running.get(message["game_id"])
    if broadcast is not None and session.privilege == "player" and (
            session.account is not None and session.account not in broadcast.accounts):
        broadcast = None  # a player's token watches its own games only: as unknown
    if broadcast is None:
        await refuse(ws, peer, ProtocolError(Code.NOT_FOUND, "no running game with id "
                                             f"{message['game_id']}"))
        return
    peer.debug("watches game %s", broadcast.game_id, extra={"game_id": broadcast.game_id})
    session.start_game()  # nothing is expected from a spectator until the end
    broadcast.spectators.add(ws)
    try:
        await ws.send(encode(broadcast.watching()))
        end = asyncio.ensure_future(broadcast.over.wait())
        try:
            while not (end.done() or ws.closed.done()):
                await asyncio.wait((end, ws.closed), timeout=check_every,
                                   return_when=asyncio.FIRST_COMPLETED)
                if not end.done() and revoked is not None and await revoked():
                    raise ProtocolError(Code.UNAUTHORIZED, "this token was revoked",
                                        fatal=True)
        finally:
            end.cancel()
    finally:
        broadcast.spectators.discard(ws)
        session.end_game()
