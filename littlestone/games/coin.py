"""The referee's coin: uniform draws that nobody without the key can predict.

The referee flips the learner's coin (yhat_t = [u_t < p_t]) and draws the expert
I_t ~ w_t itself, so a draw that a player could foresee would hand it the game: a
learner answering p just above the coming u_t never errs, and an adversary of the
experts game charges the very expert about to be drawn. numpy's generators are fast
but not made to be unpredictable (PCG64's state can be recovered from its outputs), and
a seed small enough to be searched is no secret at all. So the coin is a counter-mode
stream of SHAKE-256 under a 256-bit key: u_1, u_2, ... are the key's output, 53 bits
each, in chunks of :data:`CHUNK` draws. Without the key no draw is predictable, even
from every earlier one; with the key (revealed after the game, see
:func:`littlestone.games.game.game_seeds`) every draw can be checked. PROTOCOL.md 7.2
states it byte by byte, and ``protocol/vectors/coin.json`` holds draws to check against.

>>> coin = Coin(bytes(32))
>>> first = [coin.random() for _ in range(3)]
>>> again = Coin(bytes(32))
>>> again.random(3).tolist() == first, all(0.0 <= u < 1.0 for u in first)
(True, True)
>>> Coin(b"short")
Traceback (most recent call last):
...
ValueError: the coin's key must be 32 bytes, got 5
"""

from __future__ import annotations

import hashlib
from typing import overload

import numpy as np
from numpy.typing import NDArray

__all__ = ["CHUNK", "KEY_BYTES", "Coin", "coin_for"]

#: Bytes of a coin's key (and of a game's key): 256 bits.
KEY_BYTES = 32
#: Draws computed by one SHAKE-256 call.
CHUNK = 1024
_SCALE = 2.0**-53


class Coin:
    """Uniform draws in [0, 1) from SHAKE-256(key || chunk number), 53 bits each.

    ``random()`` gives the next draw, ``random(n)`` the next n as an array: the same
    values either way, so a block of rounds scored at once draws what round-by-round
    play would have drawn.
    """

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"the coin's key must be {KEY_BYTES} bytes, got {len(key)}")
        self._key = bytes(key)
        self._chunk = 0
        self._buffer: NDArray[np.float64] = np.empty(0)
        self._list: list[float] = []
        self._next = 0

    def _refill(self) -> None:
        stream = hashlib.shake_256(self._key + self._chunk.to_bytes(8, "little"))
        words = np.frombuffer(stream.digest(8 * CHUNK), dtype="<u8")
        self._buffer = (words >> np.uint64(11)).astype(np.float64) * _SCALE
        self._list = self._buffer.tolist()
        self._chunk += 1
        self._next = 0

    @overload
    def random(self, n: None = None) -> float: ...

    @overload
    def random(self, n: int) -> NDArray[np.float64]: ...

    def random(self, n: int | None = None) -> float | NDArray[np.float64]:
        """The next draw, or the next ``n`` draws."""
        if n is None:
            if self._next == len(self._list):
                self._refill()
            u = self._list[self._next]
            self._next += 1
            return u
        out = np.empty(n)
        filled = 0
        while filled < n:
            if self._next == len(self._buffer):
                self._refill()
            take = min(n - filled, len(self._buffer) - self._next)
            out[filled : filled + take] = self._buffer[self._next : self._next + take]
            self._next += take
            filled += take
        return out


def coin_for(seed: int | bytes) -> Coin:
    """The coin of a referee seeded with a key, or with an int (tests, tools: the key is
    then SHA-256 of it, which anybody can compute).

    >>> coin_for(3).random() == coin_for(3).random() != coin_for(4).random()
    True
    """
    if isinstance(seed, bytes):
        return Coin(seed)
    return Coin(hashlib.sha256(f"littlestone coin:{seed}".encode()).digest())
