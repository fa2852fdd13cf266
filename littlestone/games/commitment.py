"""Commit and reveal: how an adversary binds itself to a target before round 1.

The adversary sends ``digest(hclass, target, salt)`` before round 1 and the target and
salt after the last round; the referee recomputes the digest and checks every label
against the target (docs/design.md 1.1). The salt (at least :data:`MIN_SALT_BYTES` random
bytes) keeps the digest from being inverted by trying every hypothesis.
PROTOCOL.md 7.3 states both digests byte by byte for a client in another language, and
``protocol/vectors/commitments.json`` holds examples with every intermediate byte.

>>> from littlestone.games.classes import make_class
>>> H = make_class("thresholds:n=8")
>>> salt = bytes(16)
>>> digest(H, 3, salt) == digest(H, 3, salt) != digest(H, 4, salt)
True
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

import numpy as np

from littlestone.games.classes import FiniteClass, HalfspaceClass, HypothesisClass

__all__ = ["MIN_SALT_BYTES", "SequenceHash", "digest", "move_bytes", "new_salt", "target_bytes"]

#: Shortest salt the referee accepts.
MIN_SALT_BYTES = 16
_DOMAIN = b"littlestone-commitment-v1\x00"
_SEQUENCE = b"littlestone-sequence-v1\x00"


def target_bytes(hclass: HypothesisClass, target: object) -> bytes:
    """The canonical bytes of a target: a hypothesis index (8 bytes, little-endian) for a
    finite class, the float64 little-endian coordinates of w for halfspaces."""
    if isinstance(hclass, HalfspaceClass):
        return np.asarray(target, dtype="<f8").tobytes()
    if isinstance(hclass, FiniteClass):
        if isinstance(target, bool) or not isinstance(target, int | np.integer):
            raise ValueError(f"target {target!r} is not a hypothesis index")
        return int(target).to_bytes(8, "little", signed=True)
    raise ValueError(f"no commitment format for {hclass.spec}")  # pragma: no cover


def digest(hclass: HypothesisClass, target: object, salt: bytes) -> bytes:
    """SHA-256 over a domain tag, the class spec, the salt and the target's bytes."""
    h = hashlib.sha256(_DOMAIN)
    h.update(hclass.spec.encode() + b"\x00")
    h.update(len(salt).to_bytes(4, "little") + salt)
    h.update(target_bytes(hclass, target))
    return h.digest()


def new_salt() -> bytes:
    """A fresh random salt (from the OS, never from a game seed)."""
    return secrets.token_bytes(MIN_SALT_BYTES)


def _int_bytes(value: int) -> bytes:
    raw = value.to_bytes(max(1, (value.bit_length() + 8) // 8), "little", signed=True)
    return b"i" + len(raw).to_bytes(4, "little") + raw


#: The bytes of the ints 0..1023, made once (labels and small instances, every round).
_SMALL_INTS = [_int_bytes(v) for v in range(1024)]


def move_bytes(move: object, tag: bytes = b"f") -> bytes:
    """Canonical bytes of one move: an int (instance or label), length-prefixed little-endian;
    a vector (costs, a halfspace instance; advice with ``tag`` ``a``), its float64
    little-endian coordinates. Advice has a tag of its own: a round is (advice, costs) or
    costs alone, so with one tag for both the same bytes would read as two plays."""
    if type(move) is int and 0 <= move < len(_SMALL_INTS):  # an instance or a label
        return _SMALL_INTS[move]
    if isinstance(move, int | np.integer) and not isinstance(move, bool):
        return _int_bytes(int(move))
    raw = np.ascontiguousarray(move, dtype="<f8").tobytes()
    return tag + len(raw).to_bytes(4, "little") + raw


class SequenceHash:
    """A running SHA-256 over a game's sequence of adversary moves (docs/design.md 1.2).

    An oblivious adversary that is not bound by a target (noisy labels) commits to
    ``digest(salt)`` of its whole sequence before round 1; the referee feeds the moves as
    they are played and, given the salt after the last round, compares. The salt comes
    last, so the referee can hash as the game goes, in constant memory.

    >>> a, b = SequenceHash("singletons:n=3"), SequenceHash("singletons:n=3")
    >>> for h in (a, b):
    ...     h.add(2); h.add(1)
    >>> a.digest(bytes(16)) == b.digest(bytes(16)) != a.digest(bytes(range(16)))
    True
    """

    def __init__(self, spec: str) -> None:
        self._hash = hashlib.sha256(_SEQUENCE + spec.encode() + b"\x00")

    def add(self, move: object) -> None:
        """One move of the adversary (an instance, a label or costs), in order."""
        self._hash.update(move_bytes(move))

    def add_all(self, moves: Iterable[object]) -> None:
        """Moves of the adversary in order, as :meth:`add` one by one (one update)."""
        self._hash.update(b"".join(map(move_bytes, moves)))

    def add_advice(self, advice: object) -> None:
        """The experts' advice of a round (a vector, tagged apart from costs)."""
        self._hash.update(move_bytes(advice, b"a"))

    def digest(self, salt: bytes) -> bytes:
        """The commitment to the moves so far, with ``salt``."""
        final = self._hash.copy()
        final.update(len(salt).to_bytes(4, "little") + salt)
        return final.digest()

