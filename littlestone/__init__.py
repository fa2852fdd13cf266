"""littlestone: a referee for the games of online learning theory.

One import package. The rules, the agents and the wire format live in the repository's
top-level folders and are mapped here by setuptools' ``package-dir``
(``littlestone/games`` and its siblings are symbolic links to them, for tools that read
the source tree); the runners, the client and the check suite live in this folder:

- :mod:`littlestone.games`: the rules, sans-I/O (classes, exact Ldim, the referees);
- :mod:`littlestone.learners` and :mod:`littlestone.adversaries`: the agents;
- :mod:`littlestone.protocol`: the wire format, sans-I/O;
- :mod:`littlestone.local`: the synchronous runner, in-process agents in a tight loop;
- :mod:`littlestone.transport` and :mod:`littlestone.client`: WebSocket connections,
  and the side a remote agent runs (``littlestone connect``, ``watch``);
- :mod:`littlestone.testing`: the check suite every agent passes (``littlestone check``);
- :mod:`littlestone.sandbox`: bubblewrap, for submitted agents;
- :mod:`littlestone.charts`: the curves and heatmaps of the page and the report;
- :mod:`littlestone.server`: the game server, records, tournaments, the page, the CLI.

>>> import littlestone
>>> littlestone.__version__
'0.3.0'
"""

from __future__ import annotations

__all__ = ["__version__"]

#: The package's version: the wheel's, every log header's and the server's ``welcome``.
__version__ = "0.3.0"
