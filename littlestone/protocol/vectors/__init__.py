"""The protocol's test vectors (PROTOCOL.md 11): what a client written in another
language checks its own code against, computed here by the reference implementation.

Each file of this folder is one JSON document, made by :func:`generate` and written by
``python -m littlestone.protocol.vectors`` (``--check`` compares instead of writing).
Bytes are lowercase hex; an integer of 64 bits is a JSON integer; a float is written so
that it reads back exactly (Python's ``repr``). The suite
(``tests/protocol/test_vectors.py``) checks that the files equal what this module
generates, so the spec's examples, the files and the code cannot drift apart:

- ``coin.json``: the referee's coin (section 7.2), its words, draws and decisions;
- ``seeds.json``: a game's keys and seeds (section 7.1), public keys included;
- ``commitments.json``: ``digest`` and the sequence hash (section 7.3), byte by byte;
- ``classes.json``: every class family's canonical specs and hypotheses h(x) (section 2.1);
- ``frames.json``: one sample frame of each message, as msgpack in hex (sections 3-5).

>>> sorted(generate()) == sorted(FILES)
True
>>> load("coin")["chunk_draws"]
1024
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from littlestone.games.classes import FiniteClass, HalfspaceClass, make_class
from littlestone.games.coin import CHUNK, Coin
from littlestone.games.commitment import SequenceHash, digest, move_bytes, target_bytes
from littlestone.games.game import game_seeds, public_key
from littlestone.protocol import build
from littlestone.protocol.codec import encode
from littlestone.protocol.messages import vector_to_wire

__all__ = ["FILES", "FOLDER", "check", "generate", "load", "write"]

#: Where the files live (shipped with the package).
FOLDER = Path(__file__).resolve().parent
#: The files, by name (``NAME.json``).
FILES = ("coin", "seeds", "commitments", "classes", "frames")

#: The keys the vectors use: zeros, 0..31, and SHA-256 of a phrase.
_KEYS = (bytes(32), bytes(range(32)), hashlib.sha256(b"littlestone test vectors").digest())


def _hex(data: bytes) -> str:
    return data.hex()


#: A vector file's JSON document, as written and read back: its keys are the file's own
#: (each maker's docstring says them) and the tests read them by name.
Document = dict[str, Any]


def coin() -> Document:
    """The coin (PROTOCOL.md 7.2): for each key, the first words of its stream, their
    draws u, the draws at the first chunk's end and the next one's start, and the
    learner's prediction [u < p] for a few p."""
    cases = []
    for key in _KEYS:
        chunk0 = hashlib.shake_256(key + (0).to_bytes(8, "little")).digest(8 * CHUNK)
        words = np.frombuffer(chunk0[:64], dtype="<u8")
        coin = Coin(key)
        draws = coin.random(CHUNK + 2)
        first = [float(u) for u in draws[:8]]
        cases.append({
            "key": _hex(key),
            "chunk_0_input": _hex(key + (0).to_bytes(8, "little")),
            "chunk_0_first_64_bytes": _hex(chunk0[:64]),
            "words": [int(w) for w in words],
            "u_53_bits": [int(w) >> 11 for w in words],
            "u": first,
            "u_1023_1024_1025": [float(u) for u in draws[CHUNK - 1: CHUNK + 2]],
            "predictions": {repr(p): [int(u < p) for u in first]
                            for p in (0.0, 0.25, 0.5, 0.75, 1.0)},
        })
    return {"chunk_draws": CHUNK, "chunk_bytes": 8 * CHUNK, "first_counter": 0,
            "rule": "u = (word >> 11) / 2**53; the prediction is 1 iff u < p", "cases": cases}


def seeds() -> Document:
    """A game's seeds (PROTOCOL.md 7.1): the HMAC messages, the referee's coin key, the
    players' seeds (unsigned), the commitment; and the public keys of local games."""
    cases = []
    for key, seed in ((_KEYS[0], 7), (_KEYS[1], -1), (_KEYS[2], (1 << 63) - 1),
                      (_KEYS[2], -(1 << 63)), (_KEYS[1], 0)):
        derived = game_seeds(seed, key)
        out: Document = {"key": _hex(key), "seed": seed,
                               "commitment": _hex(hashlib.sha256(key).digest())}
        for role in ("referee", "learner", "adversary"):
            message = f"{role}:{seed}"
            mac = hmac.new(key, message.encode(), hashlib.sha256).digest()
            out[role] = {"message": message, "hmac": _hex(mac)}
        out["referee"]["coin_key"] = _hex(derived.referee)
        out["learner"]["seed"] = derived.learner
        out["adversary"]["seed"] = derived.adversary
        cases.append(out)
    public = [{"seed": s, "message": f"littlestone public game key:{s}",
               "key": _hex(public_key(s))} for s in (0, 7, -3)]
    return {"cases": cases, "public_keys": public}


def commitments() -> Document:
    """Commitments (PROTOCOL.md 7.3): ``digest`` of a target with its preimage, and the
    sequence hash of a few sequences of moves, the bytes of each move beside it."""
    targets: list[tuple[str, Any]] = [
        ("thresholds:n=8", 3), ("singletons:n=3", 0), ("monotone-disjunctions:n=3", 5),
        ("halfspaces:d=2,margin=0.1", [0.6, 0.8]),
    ]
    salts = (bytes(16), bytes(range(16, 48)))
    digests = []
    for spec, target in targets:
        hclass = make_class(spec)
        for salt in salts:
            tb = target_bytes(hclass, np.array(target) if isinstance(target, list) else target)
            preimage = (b"littlestone-commitment-v1\x00" + hclass.spec.encode() + b"\x00"
                        + len(salt).to_bytes(4, "little") + salt + tb)
            value = digest(hclass, np.array(target) if isinstance(target, list) else target,
                           salt)
            assert hashlib.sha256(preimage).digest() == value
            digests.append({"class": hclass.spec, "target": target, "salt": _hex(salt),
                            "target_bytes": _hex(tb), "preimage": _hex(preimage),
                            "digest": _hex(value)})
    sequences: list[tuple[str, list[tuple[str, Any]]]] = [
        ("thresholds:n=8", [("move", 5), ("move", 1), ("move", 2), ("move", 0)]),
        ("singletons:n=2000", [("move", 1500), ("move", 1), ("move", -2)]),
        ("experts:d=2", [("advice", [0.25, 1.0]), ("move", [0.0, 1.0]),
                         ("move", [0.5, 0.5])]),
    ]
    hashes = []
    for spec, moves in sequences:
        sequence = SequenceHash(spec)
        shown = []
        for kind, move in moves:
            played = np.array(move) if isinstance(move, list) else move
            if kind == "advice":
                sequence.add_advice(played)
                raw = move_bytes(played, b"a")
            else:
                sequence.add(played)
                raw = move_bytes(played)
            shown.append({"kind": kind, "value": move, "bytes": _hex(raw)})
        salt = bytes(range(16))
        hashes.append({"spec": spec, "moves": shown, "salt": _hex(salt),
                       "digest": _hex(sequence.digest(salt))})
    return {"digest_tag": _hex(b"littlestone-commitment-v1\x00"),
            "sequence_tag": _hex(b"littlestone-sequence-v1\x00"),
            "digests": digests, "sequences": hashes}


#: A member of every class family (as a peer may write it), small enough to tabulate.
CLASS_SPECS = ("thresholds:n=4", "singletons:n=3", "intervals:n=3",
               "monotone-disjunctions:n=2", "k-disjunctions:n=3,k=1", "conjunctions:n=2",
               "monotone-conjunctions:n=2", "quadratic:n=3", "halfspaces:d=2",
               "halfspaces:margin=0.25,d=2", "halfspaces:d=2,margin=0.2,agnostic=true",
               "halfspaces:d=3,agnostic=false", "halfspaces:d=1,margin=0",
               "k-disjunctions:n=2,k=2", "monotone-conjunctions:n=2,literals=1",
               "decision-trees:d=2,leaves=2", "threshold-networks:n=2,hidden=1",
               "thresholds: n = +4")


def classes() -> Document:
    """Each family's canonical spec and hypotheses: for a finite class, ``table[h]`` is
    h's values on the instances 0..domain_size-1 as a string of 0 and 1; for
    halfspaces, h_w(x) = [<w, x> > 0] on a few (w, x)."""
    cases = []
    for spec in CLASS_SPECS:
        hclass = make_class(spec)
        out: Document = {"spec": spec, "canonical": hclass.spec}
        if isinstance(hclass, FiniteClass):
            out["size"], out["domain_size"] = hclass.size, hclass.domain_size
            matrix = hclass.matrix()
            out["table"] = ["".join("1" if v else "0" for v in row) for row in matrix]
        elif isinstance(hclass, HalfspaceClass):
            out["d"], out["margin"], out["agnostic"] = hclass.d, hclass.margin, hclass.agnostic
            samples = []
            for w, x in product(([0.6, 0.8], [1.0, 0.0], [0.0, -1.0]),
                                ([0.8, -0.6], [0.0, 1.0], [-1.0, 0.0])):
                if hclass.d == 2:
                    wa, xa = np.array(w), np.array(x)
                    samples.append({"w": w, "x": x, "x_bin": _hex(vector_to_wire(xa)),
                                    "h": HalfspaceClass.label(wa, xa)})
            out["samples"] = samples
        cases.append(out)
    return {"cases": cases}


def frames() -> Document:
    """One frame of each message, as the reference implementation builds it."""
    rules: Any = {"game": "mistake-bound", "class": "thresholds:n=4", "experts": None,
                  "rounds": 2, "horizon": 2}
    experts: Any = {"game": "experts", "class": None, "experts": 2, "rounds": 2,
                    "horizon": None}
    key = bytes(range(32))
    advice = vector_to_wire(np.array([0.25, 1.0]))
    messages: list[tuple[str, Any]] = [
        ("hello", build.hello("learner", "demo", "t0k")),
        ("welcome", build.welcome("3f2a", "littlestone 0.3.0",
                                  {"max_frame": 1048576, "move_deadline_ms": 10000,
                                   "time_bank_ms": 60000, "lobby_idle_ms": 300000})),
        ("challenge", build.challenge(rules, "random-target", 7)),
        ("create", build.create(experts, None)),
        ("created", build.created("g1")),
        ("join", build.join("g1")),
        ("enter", build.enter("week-3")),
        ("entered", build.entered("week-3")),
        ("done", build.done("week-3")),
        ("start", build.start("g1", "learner", rules, (1 << 64) - 1,
                              hashlib.sha256(key).digest())),
        ("instance (server, round 1)", build.instance_request(1, 2)),
        ("instance (server, with a label)", build.instance_request(2, 0, {"t": 1, "y": 1})),
        ("predict", build.predict(1, 0.0)),
        ("advice (server)", build.advice_request(1, advice)),
        ("advice (server, with an outcome)", build.advice_request(
            2, advice, outcome={"t": 1, "costs": advice, "y": None})),
        ("weights", build.weights(1, vector_to_wire(np.array([0.5, 0.5])))),
        ("commit", build.commit(bytes(32))),
        ("instance (adversary)", build.instance(1, 3)),
        ("instance (adversary, halfspaces)", build.instance(1, vector_to_wire(
            np.array([0.6, 0.8])))),
        ("prediction", build.prediction(1, 0.5)),
        ("label", build.label(1, 1)),
        ("advice (adversary)", build.advice(1, advice)),
        ("answer", build.answer(1, p=0.25)),
        ("costs", build.costs(1, advice)),
        ("reveal?", build.reveal_asked()),
        ("reveal", build.reveal(3, bytes(16))),
        ("end", build.end("complete", {"game": "mistake-bound", "status": "complete",
                                       "rounds": 2, "mistakes": 1, "expected_mistakes": 1.0,
                                       "regret": 1, "expected_regret": 1.0, "message": "",
                                       "size": 5}, "g1", key)),
        ("error", build.error("illegal_move", "prediction 1.5 is outside [0, 1]")),
        ("watch", build.watch("g1")),
        ("watching", build.watching("g1", rules, "remote:alice", "random-target", 0,
                                    {"mistakes": 0, "expected_mistakes": 0.0})),
        ("rounds", build.rounds("g1", 1, 2, [0.0, 1.0], [1, 1], [0, 1],
                                {"mistakes": 1, "expected_mistakes": 1.0})),
        ("revoke", build.revoke("bob")),
        ("revoked", build.revoked("bob")),
        ("submit", build.submit(None, "mine.py:MyLearner", b"import littlestone\n")),
        ("submitted", build.submitted("week-5", 2, hashlib.sha256(b"").hexdigest(),
                                      "accepted", None, "learner", False, "accepted",
                                      [{"check": "plays a game", "ok": True,
                                        "message": ""}])),
        ("rounds (experts)", build.expert_rounds(
            "g1", 1, 2, [None, None], [1.0, 0.0], [0.5, 0.25],
            {"loss": 1.0, "expected_loss": 0.75, "regret": 1.0, "expected_regret": 0.75})),
        ("end (spectator)", build.spectator_end("g1", "complete", {"rounds": 2})),
        ("end (a forfeit, with its faults)", build.end(
            "forfeit:learner:timeout",
            {"game": "mistake-bound", "status": "forfeit:learner:timeout", "rounds": 2,
             "mistakes": 2, "expected_mistakes": 2.0, "regret": 2, "expected_regret": 2.0,
             "message": "learner forfeits after 3 faults (timeout)", "size": 5,
             "faults": [{"t": t, "role": "learner", "code": "timeout",
                         "message": f"no move within the deadline for round {t}"}
                        for t in (1, 2, 3)]}, "g1", key)),
    ]
    out = []
    for name, message in messages:
        out.append({"name": name, "message": _jsonable(message), "hex": _hex(encode(message))})
    return {"note": "bin values are shown as {\"bin\": HEX}", "frames": out}


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"bin": value.hex()}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


_MAKERS: dict[str, Callable[[], Document]] = {
    "coin": coin, "seeds": seeds, "commitments": commitments, "classes": classes,
    "frames": frames,
}


def generate() -> dict[str, str]:
    """Every file's text, by name."""
    return {name: json.dumps(_MAKERS[name](), indent=1) + "\n" for name in FILES}


def load(name: str) -> Any:
    """One checked-in file, parsed."""
    return json.loads((FOLDER / f"{name}.json").read_text())


def write(folder: Path = FOLDER) -> list[Path]:
    """Write every file into ``folder``; returns their paths."""
    paths = []
    for name, text in generate().items():
        path = folder / f"{name}.json"
        path.write_text(text)
        paths.append(path)
    return paths


def check(folder: Path = FOLDER) -> list[str]:
    """The names of the files in ``folder`` that differ from what :func:`generate` makes."""
    return [name for name, text in generate().items()
            if not (folder / f"{name}.json").is_file()
            or (folder / f"{name}.json").read_text() != text]
