"""littlestone: a referee for the games of online learning theory.

One import package. Its sub-packages live in the repository's top-level folders and
are mapped here by setuptools' ``package-dir`` (``littlestone/games`` and its siblings
are symbolic links to them, for tools that read the source tree):

- :mod:`littlestone.games`: the rules, sans-I/O (classes, exact Ldim, the referees);
- :mod:`littlestone.learners` and :mod:`littlestone.adversaries`: the agents;
- :mod:`littlestone.protocol`: the wire format, sans-I/O;
- :mod:`littlestone.server`: everything that touches the world.

>>> import littlestone
>>> littlestone.__version__
'0.3.0'
"""

from __future__ import annotations

__all__ = ["__version__"]

#: The package's version: the wheel's, every log header's and the server's ``welcome``.
__version__ = "0.3.0"
