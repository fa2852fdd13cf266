"""Everything that touches the world: processes, files, sockets, clocks.

The rooms, and what each may import (``games``, ``learners``, ``adversaries`` and
``protocol`` never import this package):

- :mod:`.local`: the local driver, in-process agents in a tight loop (no I/O but an
  optional log writer);
- :mod:`.checks`: the generic check suite every agent passes (``littlestone check``);
- :mod:`.records`: the log format, the SQLite index, logged play and replay;
- :mod:`.net`: the WebSocket transport, the game server, remote players, spectators;
- :mod:`.client`: the side a remote agent runs (``littlestone connect`` and ``watch``);
- :mod:`.tournament`: configs, pairings, the sandbox, matches, ranking and the report;
- :mod:`.cli`: the command line, which only parses and dispatches to the rooms.

Arrows point one way (``tests/test_layout.py`` holds them): ``cli`` may call every
room; ``tournament`` calls ``net`` and ``records``; ``net`` calls ``records`` and
``local``; ``records`` calls ``local`` and ``checks``; ``local`` only writes through
``records.logs``; ``client`` uses ``net.transport`` and nothing else of the server.
"""
