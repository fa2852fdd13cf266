"""The records room: what a game leaves behind, and what can be done with it.

Bottom to top (each module imports only those above it in this list):

- :mod:`.rows`: the index's rows and a log header's rules and agents, as types;
- :mod:`.folder`: the data folder, and which of its files are the index's (told apart
  without opening them);
- :mod:`.logs`: the append-only, hash-chained msgpack log of one game: its format,
  levels, writer and reader;
- :mod:`.database`: the SQLite index's connection, tables and migrations;
- :mod:`.tokens`: the index's tokens (who may connect to a server, as what);
- :mod:`.store`: the index's games, agents, tournaments and the anchors' key;
- :mod:`.anchors`: a log and the index row of its game: found by game id, checked
  against its row;
- :mod:`.logged`: a local game played with its log and its index row;
- :mod:`.strangers`: what a log may make this process build when it is re-simulated;
- :mod:`.resimulation`: a logged game played again from its seeds (a compact log's
  rounds re-derived);
- :mod:`.playback`: the ``replay`` adversary, which plays a logged game back;
- :mod:`.verify`: ``replay --verify``: chain, anchor and re-simulation;
- :mod:`.replay`: ``replay``'s other uses: against another learner, summary, rows,
  export, plot.

Imports the games, the agents and the local runner; never the network.
"""
