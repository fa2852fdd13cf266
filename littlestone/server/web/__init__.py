"""The web room: a live page on the game server's own port (``littlestone serve``).

Plain HTTP requests to the agents' port are routed here (the transport's ``http`` hook,
:data:`littlestone.transport.HttpRoute`); WebSocket upgrades to ``/`` stay
the agents' endpoint. The page lists running and recent games, draws a game's curve
against its bound (live, from the spectator feed), the shattered tree the adversary
walks, a tournament's leaderboard and payoff heatmap, and steps through a logged game.
A person plays on it (``/play``): its script is a client of the agents' endpoint like
any other (PROTOCOL.md 3.2); ``/class`` is the teacher's class mode.

- :mod:`.access`: who may look (a token, or the operator's public read-only view);
- :mod:`.responses`: HTTP responses (JSON, HTML, static files, redirects);
- :mod:`.data`: the JSON API's data, from the index, the logs and the running games;
- :mod:`.pages`: the server-rendered pages, Jinja2 templates that escape every value
  (``templates/``; every list works without JavaScript);
- :mod:`.play`: what the play page offers and draws, and the class mode's games;
- :mod:`.routes`: the route table's machinery (a method, a path pattern, a handler);
- :mod:`.app`: the route table and its handlers, the live feed for the browser,
  attaching to a server.

The templates and the static files (the page's scripts and style, uPlot and
@msgpack/msgpack with their licences)
ship inside the package (``templates/``, ``static/``): no CDN, no build step, no network
at run time.

This room imports the games, the agents, the protocol, the records, the network room
and the tournament room (ranking, report charts); only the command line imports it.
"""

from __future__ import annotations

from littlestone.server.web.access import Access, viewer
from littlestone.server.web.app import WebApp, attach, serve_web

__all__ = ["Access", "WebApp", "attach", "serve_web", "viewer"]
