"""The records room: what a game leaves behind, and what can be done with it.

- :mod:`.logs`: the append-only, hash-chained msgpack log of one game;
- :mod:`.store`: the SQLite index of games, agents, tokens and tournaments;
- :mod:`.anchors`: a log checked against the index row of its game (its anchor);
- :mod:`.logged`: a local game played with its log and its index row;
- :mod:`.replay`: showing, verifying, re-playing, plotting and exporting a log, and
  the ``replay`` adversary that plays a log back.

Imports the games, the agents and the local driver; never the network.
"""
