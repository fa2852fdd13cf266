"""The server: the game server, its records, tournaments and the live page.

The rooms, top to bottom (each imports only the rooms below it; the import-linter
contracts in pyproject.toml hold the arrows, and ``make test`` runs them):

- :mod:`.web`: the live page and its JSON API, on the game server's port;
- :mod:`.tournament`: configs, pairings, matches, ranking and the report;
- :mod:`.net`: the game server, remote players, the remote driver, spectators;
- :mod:`.records`: the log format, the SQLite index, logged play and replay.

Above the server, the command line (:mod:`littlestone.cli`). Below it, and never
importing it: the runners and the client
(:mod:`littlestone.local`, :mod:`littlestone.client`, :mod:`littlestone.transport`),
the check suite (:mod:`littlestone.testing`), the sandbox and the charts, then the
agents, the protocol and the games.
"""

# one import name per file: the top-level server/ is a link kept for the design card's
# layout, so ``import server`` from a clone's root would load a second copy of every module
if __name__ != "littlestone.server":  # pragma: no cover
    raise ImportError(f"import littlestone.server, not {__name__}")
