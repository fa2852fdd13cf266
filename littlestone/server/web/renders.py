"""Rendered answers kept by their ETag (:class:`Renders`): a competition's page, its board,
its API page and its CSV are rendered once a version stamp, viewer and request (what the
tag hashes, :func:`~littlestone.server.web.app._tag`), and every request without
``If-None-Match`` that asks for the same (forty tabs of one class opened afresh, a
reload) is answered from that one render, at about what a 304 costs. Requests that ask
for a render under way wait for it instead of rendering it again (one render a tag).

The cache holds :data:`RENDERS_KEPT` answers and :data:`RENDERS_BYTES` of bodies at
most, the least recently asked for leaving first; a stamp that moves makes new tags, and
the old answers age out unasked.

>>> renders = Renders(kept=2)
>>> made = []
>>> def page(text):
...     made.append(text)
...     return (text.encode(), "text/plain", [])
>>> [renders.answer(tag, lambda: page(tag))[0] for tag in ("a", "a", "b", "c", "a")]
[b'a', b'a', b'b', b'c', b'a']
>>> made  # ("a" left when "c" came: two are kept)
['a', 'b', 'c', 'a']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["RENDERS_BYTES", "RENDERS_KEPT", "Rendered", "Renders"]

#: How many rendered answers a server keeps (a few pages for each of a class's viewers).
RENDERS_KEPT = 512
#: The bytes of rendered bodies a server keeps at most (an admin's page of 2,000
#: versions is about a megabyte).
RENDERS_BYTES = 64 << 20

#: A rendered answer: its body, its content type, its extra headers.
Rendered = tuple[bytes, str, list[tuple[str, str]]]


class Renders:
    """Rendered answers by tag, at most ``kept`` of them and ``budget`` bytes of bodies,
    one render a tag at a time."""

    def __init__(self, kept: int = RENDERS_KEPT, budget: int = RENDERS_BYTES) -> None:
        self.kept, self.budget = kept, budget
        self._bytes = 0
        self._answers: OrderedDict[str, Rendered] = OrderedDict()
        self._rendering: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        #: Renders made (what a benchmark or a test counts).
        self.made = 0

    def _held(self, tag: str) -> Rendered | None:
        with self._lock:
            held = self._answers.get(tag)
            if held is not None:
                self._answers.move_to_end(tag)
            return held

    def answer(self, tag: str, render: Callable[[], Rendered]) -> Rendered:
        """The answer rendered for ``tag``: kept, or rendered now (once, while other
        requests for the same tag wait for it)."""
        held = self._held(tag)
        if held is not None:
            return held
        with self._lock:
            rendering = self._rendering.setdefault(tag, threading.Lock())
        with rendering:
            held = self._held(tag)
            if held is not None:
                return held
            try:
                made = render()
            except BaseException:
                with self._lock:
                    self._rendering.pop(tag, None)
                raise
            with self._lock:  # (kept before the next request may render it)
                self.made += 1
                self._answers[tag] = made
                self._bytes += len(made[0])
                while len(self._answers) > self.kept or (self._bytes > self.budget
                                                         and len(self._answers) > 1):
                    self._bytes -= len(self._answers.popitem(last=False)[1][0])
                self._rendering.pop(tag, None)
            return made
