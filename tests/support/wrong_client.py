"""A deliberately wrong client of PROTOCOL.md, for the conformance kit's tests.

``python -m tests.support.wrong_client BUG URL`` plays a learner on ``thresholds:n=4``
with one bug: ``early`` sends its challenge before ``welcome``; ``late-t`` numbers every
``predict`` one round ahead; ``none`` is a correct client (Halving).
"""

from __future__ import annotations

import sys

import msgpack
from websockets.sync.client import connect


def main(bug: str, url: str) -> int:
    hello = {"type": "hello", "version": 1, "role": "learner", "agent": "wrong-" + bug,
             "token": "t", "capabilities": []}
    challenge = {"type": "challenge", "opponent": "random-target", "seed": 3,
                 "rules": {"game": "mistake-bound", "class": "thresholds:n=4",
                           "experts": None, "rounds": 5, "horizon": 5}}
    with connect(url, compression=None, proxy=None) as ws:
        ws.send(msgpack.packb(hello))
        if bug == "early":
            ws.send(msgpack.packb(challenge))
        while True:
            message = msgpack.unpackb(ws.recv())
            if message["type"] == "welcome" and bug != "early":
                ws.send(msgpack.packb(challenge))
            elif message["type"] == "instance":
                t = message["t"] + (bug == "late-t")
                ws.send(msgpack.packb({"type": "predict", "t": t, "p": 0.0}))
            elif message["type"] == "end":
                return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
