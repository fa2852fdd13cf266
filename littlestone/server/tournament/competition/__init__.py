"""A competition: students submit files over the network while it is open, each version
is checked at once and rated against the field as it comes, and at the close the
ranking is frozen.

``littlestone serve --competition FILE.toml`` runs one. Its file is a tournament file
(:func:`.config.load_config`: the rounds, seeds, games, classes, limits; ``learners``
and ``adversaries`` are the built-ins in the field) with a ``[competition]`` table::

    [competition]
    submitted = ["learner"]            # the roles students submit: learner, adversary
    opens = 2026-11-25T08:00:00Z       # (optional) TOML date-times, with their offset
    closes = 2026-12-02T08:00:00Z
    versions_per_day = 10              # a token's versions in any 24 hours
    max_kb = 64                        # a file's most KiB
    final = "last"                     # the ranking is on each student's last version,
                                       # or on its "best"
    version_disk_mb = 64               # the disk one version (file, logs) may take
    check_seconds = 30                 # its own checks' time in the sandbox, and again
                                       # its check games' wall time
    raters = 0                         # rating lanes (0: two more than the cores)
    rating_seconds = 600               # a version's whole rating's most wall time

What a ``submit`` starts, and its budget (SECURITY.md, "A competition's submissions"):

1. at once, on the event loop: refused (PROTOCOL.md 4.2) when the competition is not
   open, the file is over ``max_kb``, the token's versions (this one too, at
   ``version_disk_mb`` each) would pass its disk budget (the server's ledger,
   ``--token-disk-mb``), the token has a check running, or :data:`CHECKS_WAITING`
   checks wait already;
2. in one of :data:`CHECKS_AT_ONCE` check lanes: a duplicate (the same bytes naming the
   same class, from the same token, under the same competition file) is answered with
   its version, not checked nor rated again; over ``versions_per_day`` (errored versions
   not counted) it is refused; else the file is stored
   (``competitions/NAME/ACCOUNT/vN.py``, its row in the index) and checked in the
   sandbox under the competition's limits (:func:`.preflight.check_file`: its own checks
   for ``check_seconds`` at most, then *plays a game* refereed here, each game under the
   limits' deadlines): a file that does not load, plays another role, or fails what a
   tournament scores is ``refused`` and not entered;
3. an accepted version waits in the index for a rating lane (:class:`Rater`; the next
   is the oldest-waiting token's, and a newer version supersedes the same token's
   queued older one): a child of the lane's warm ``littlestone competition rate
   --lane`` process (:mod:`.lane`: started once, its imports done), its own session,
   plays its games against the field (the built-ins and every version of the other
   role accepted before it: :func:`.run.rate_entrant`, incremental, each game stored as
   it ends under a key of the files' bytes, ``games.pairing`` unique), each game under
   the limits, the whole within ``rating_seconds`` (past it, its games left are
   ``over_time``, its fault). Its opponents are loaded first, off its clock (their
   loads are their time, with a budget of their own), and an opponent that failed to
   load is remembered by its bytes and never loaded again: its games are ``load_failed``
   at once, its fault (:func:`.rater.rate_version`).
   A lane or its child killed from outside is not the version's fault: the games left
   running end ``interrupted`` at once and the version is queued again, once
   (:class:`.rater.Rater`); a lane starts only on the competition's file as the server
   read it.
   Stopped, however the server stops, every process it started dies with it: its
   games in flight were never stored, those stored stay, and the next start rates the
   version again, playing only what is missing: no game lost or recorded twice.

The standings (:func:`standings`) rank each student's last rated version (or best) with
the built-ins; at the close, once nothing waits to be rated, they are frozen
(``competitions/NAME/final.json``) and exported as they are (:func:`export`).

The package's modules are the competition's rooms, each importing only those before it:
:mod:`.config` (the file), :mod:`.standings` (the ranking as it stands, frozen at the
close), :mod:`.export` (the ranking as CSV or JSON), :mod:`.lane` (a warm rating lane's
process), :mod:`.rater` (the rating lanes, each with its warm process) and :mod:`.door`
(admitting a ``submit``, the check pool, the running competition). Their rows are typed
(:class:`.standings.Standings` and its rows).
"""

from __future__ import annotations

from littlestone.server.tournament.competition.config import (
    CompetitionConfig,
    load_competition,
    version_spec,
)
from littlestone.server.tournament.competition.door import (
    CHECKS_AT_ONCE,
    CHECKS_WAITING,
    Competition,
)
from littlestone.server.tournament.competition.export import EXPORT_COLUMNS, export
from littlestone.server.tournament.competition.rater import Rater, rate_version
from littlestone.server.tournament.competition.standings import Standings, standings

__all__ = ["CHECKS_AT_ONCE", "CHECKS_WAITING", "EXPORT_COLUMNS", "Competition",
           "CompetitionConfig", "Rater", "Standings", "export", "load_competition",
           "rate_version", "standings", "version_spec"]
