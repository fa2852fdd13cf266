"""What ``littlestone check`` can say of a submission without trusting it: its check
games, played as a tournament plays them, and judged from outside its process.

The generic check suite (``littlestone/testing.py``) runs inside the submission's sandbox, in
the submission's own interpreter: its code can rewrite what that process reports (an
``atexit`` hook that prints "every check passed" and exits 0). So the one check a
tournament scores, *plays a game*, is decided here instead: the submission is probed in
its sandbox (:func:`~.pairing.probe`: which games it declares it can play) and plays
each of them through a private Unix-socket server (:class:`~.matches.Arena`,
:func:`~.matches.play_file_agent`), the server refereeing: the same process, limits,
credential and rules as in a tournament. The verdict is the server's record of each
game, never a word the submission printed.

The sandbox is loaded once for the whole check, as a tournament loads it: its own
checks, its probe and each game are fresh children of its fork server
(:class:`~littlestone.sandbox.LoadedSandbox`), so that nothing one of them does reaches
the next, and a check starts one Python, not two.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from littlestone.games.errors import SandboxError
from littlestone.sandbox import LoadedSandbox, Sandbox, SandboxPool, printed_json
from littlestone.server.records.rows import SubmissionCheck
from littlestone.server.tournament.config import TournamentConfig
from littlestone.server.tournament.matches import Arena, play_file_agent
from littlestone.server.tournament.pairing import Pairing, probe, spaces
from littlestone.server.tournament.ranking import ROLES
from littlestone.server.tournament.report import plain
from littlestone.testing import (
    CHECK_EXPERTS,
    CHECK_ROUNDS,
    IN_TOURNAMENT,
    CheckGame,
    refereed_games,
)

__all__ = ["CHECK_SECONDS", "CHECK_SEED", "PLAYS", "ROLES", "CheckRow", "Refereed", "Verdict",
           "as_submitted", "check_file", "check_games", "play_check_games"]

#: How long a submission's own checks may run in its sandbox (``check``, and a
#: competition's check of a submitted version).
CHECK_SECONDS = 60
#: The check a tournament scores, which the server referees from outside the submission.
PLAYS = "plays a game"

#: The seed of every refereed check game (the suite's own ``plays a game`` uses it too).
CHECK_SEED = 1


@dataclass(frozen=True)
class Refereed:
    """One check game as the server recorded it: ``status`` is ``complete``, a fault
    (``crash:learner:no_game``, ``forfeit:learner:illegal_move``, ...), ``declined``
    (the submission says it cannot play it: not played) or ``load_failed``."""

    game: str
    hclass: str | None
    opponent: str
    status: str
    message: str = ""
    rounds: int = 0

    @property
    def where(self) -> str:
        """The game in words: ``mistake-bound on thresholds:n=32 against random-target``."""
        on = self.hclass if self.hclass is not None else "free experts"
        return f"{self.game} on {on} against {self.opponent}"


class _OneFile(SandboxPool):
    """A check's pool: one loaded sandbox for its file, whatever role it is leased as (a
    loaded sandbox has not imported the file: its own checks, its probe and its games,
    as either role, are all fresh children of it)."""

    @contextlib.contextmanager
    def lease(self, key: str, submission: Path) -> Iterator[LoadedSandbox]:
        with super().lease("check", submission) as loaded:
            yield loaded


@contextlib.contextmanager
def _checking(sandbox: Sandbox, base: Path) -> Iterator[tuple[Arena, SandboxPool]]:
    """A check's private game server (on a Unix socket) and its file's loaded sandbox."""
    config = TournamentConfig(name="check", rounds=0, seeds=(), games=(), classes=(),
                              experts=None, learners=(), adversaries=(),
                              limits=sandbox.limits, base=base)
    with tempfile.TemporaryDirectory(prefix="littlestone-check-") as data, \
            Arena(config, Path(data), unix=True, tcp=False) as arena, \
            contextlib.closing(_OneFile(sandbox, arena.socket, capacity=1)) as pool:
        yield arena, pool


def play_check_games(agent: str, role: str, games: Sequence[tuple[str, str | None, str]],
                     rounds: int, experts: int | None, sandbox: Sandbox,
                     base: Path, checking: tuple[Arena, SandboxPool] | None = None,
                     seconds: float | None = None) -> list[Refereed]:
    """Play ``agent`` (a ``FILE.py:Class`` spec relative to ``base``) as ``role`` in each
    of ``games`` (game, class spec or None for ``experts`` free experts, built-in
    opponent) that it declares it can play, one game each, seed :data:`CHECK_SEED`. As in
    a tournament, the file is loaded once in its sandbox (a :class:`.SandboxPool`), and
    its probe and each game are fresh children of that loaded sandbox. The
    games stop at the first one that does not complete (the rest are not listed): a
    hanging submission costs one game's deadlines, not every game's.

    The result lists one :class:`Refereed` per game played or declined, or a single
    ``load_failed`` one when the submission cannot be loaded at all. ``checking``: the
    game server and loaded sandbox to play in (:func:`check_file`'s), else new ones.
    ``seconds``: the games' wall budget: once spent, no further game starts, and the
    next is listed ``over_time:ROLE`` (a game under way ends under its own deadlines,
    so the check's worst case is the budget and one game's).
    """
    if checking is None:
        with _checking(sandbox, base) as new:
            return play_check_games(agent, role, games, rounds, experts, sandbox, base, new,
                                    seconds)
    started = time.monotonic()
    arena, pool = checking
    learners = (agent,) if role == "learner" else tuple(dict.fromkeys(o for *_, o in games))
    adversaries = (agent,) if role == "adversary" else tuple(dict.fromkeys(o for *_, o in games))
    config = TournamentConfig(
        name="check", rounds=rounds, seeds=(CHECK_SEED,),
        games=tuple(dict.fromkeys(g for g, _, _ in games)),
        classes=tuple(dict.fromkeys(c for _, c, _ in games if c is not None)),
        experts=experts, learners=learners, adversaries=adversaries,
        limits=sandbox.limits, base=base)
    out: list[Refereed] = []
    entrant = probe(config, agent, role, sandbox, [(g, c) for g, c, _ in games], pool)
    if entrant.failed is not None:
        return [Refereed("", None, "", f"load_failed:{role}", entrant.failed)]
    for (game, hclass, opponent), declined in zip(games, entrant.unsupported, strict=True):
        if declined is not None:
            out.append(Refereed(game, hclass, opponent, "declined", declined))
            continue
        if seconds is not None and time.monotonic() - started > seconds:
            out.append(Refereed(game, hclass, opponent, f"over_time:{role}",
                                f"the check games took over {seconds:g} s"))
            break
        learner, adversary = (agent, opponent) if role == "learner" else (opponent, agent)
        outcome = play_file_agent(config, Pairing(game, hclass, learner, adversary,
                                                  CHECK_SEED), arena, sandbox, pool)
        played = int(outcome["result"].get("rounds") or 0)
        out.append(Refereed(game, hclass, opponent, str(outcome["status"]),
                            str(outcome.get("message") or ""), played))
        if outcome["status"] != "complete":
            break
    return out


#: A check's row (:class:`~littlestone.server.records.rows.SubmissionCheck`: declared with
#: the records, which keep it in a submitted version's report).
CheckRow = SubmissionCheck


@dataclass
class Verdict:
    """What the check of a submitted file found, written outside its process: the role it
    loads as, each check's row (``check``, ``ok``, ``skipped``, ``advice``, ``message``,
    ``in_tournament``, ``refereed``), or, when the checks could not run at all, why
    (``refused``: ``syntax_error``, ``load_failed`` or ``timeout``, and ``message``)."""

    agent: str
    kind: str | None = None
    rows: list[CheckRow] = field(default_factory=list)
    refused: str | None = None
    message: str = ""
    #: Whether its own run started other processes (a tournament's game ends then).
    forked: bool = False

    @property
    def passed(self) -> bool:
        """Every check passed (advice included)."""
        return self.refused is None and all(r["ok"] for r in self.rows)

    @property
    def costly(self) -> list[str]:
        """The checks that failed and that a tournament would score against it."""
        return [r["check"] for r in self.rows if not r["ok"] and r["in_tournament"]]

    @property
    def ready(self) -> bool:
        """What a tournament scores passed: it may be entered."""
        return self.refused is None and not self.costly


def as_submitted(verdict: Verdict, stored: Path, submitted: str, version: int,
                 folder: Path) -> Verdict:
    """``verdict`` on a stored version (``stored``: the data folder's ``vN.py``, under
    ``folder``) as its student reads it: every message names the file they uploaded,
    ``submitted`` (``FILE.py:Class``; its folders dropped), as
    ``raises.py:Raiser (your v2)``, its lines as ``raises.py:12``, and never the
    server's path (issue 44 item 5).

    >>> v = Verdict("v2.py:Raiser", rows=[{"check": "plays a game", "ok": False,
    ...     "skipped": False, "advice": False, "in_tournament": "x", "refereed": True,
    ...     "message": "ZeroDivisionError at v2.py:12 in predict"}],
    ...     message="check: /srv/data/competitions/w/ann/v2.py:Raiser did not load")
    >>> shown = as_submitted(v, Path("/srv/data/competitions/w/ann/v2.py"),
    ...                      "work/raises.py:Raiser", 2, Path("/srv/data"))
    >>> shown.message
    'check: raises.py:Raiser (your v2) did not load'
    >>> shown.rows[0]["message"]
    'ZeroDivisionError at raises.py:12 in predict'
    """
    file, _, cls = submitted.partition(".py:")
    own = Path(file + ".py").name
    label = f"{own}:{cls} (your v{version})"
    bare = re.compile(rf"(?<![\w.\-/]){re.escape(stored.name)}\b")

    def said(text: str) -> str:
        text = text.replace(f"{stored}:{cls}", label).replace(str(stored), own)
        text = text.replace(f"{stored.name}:{cls}", label).replace(f"{folder}/", "")
        return bare.sub(own, text.replace(str(folder), "the data folder"))

    rows = [row.copy() for row in verdict.rows]
    for row in rows:
        row["message"] = said(row["message"])
    return dataclasses.replace(verdict, agent=label, message=said(verdict.message), rows=rows)


def check_games(config: TournamentConfig) -> list[CheckGame]:
    """The check games of a tournament or competition: its games on its classes (and its
    free experts), rather than the suite's :data:`~littlestone.testing.CHECK_GAMES`: a
    student's learner is checked on what it will play, not on a class it never meets.

    >>> from littlestone.sandbox import Limits
    >>> config = TournamentConfig(name="week-5", rounds=50, seeds=(1,),
    ...     games=("mistake-bound", "experts"), classes=("thresholds:n=8",), experts=3,
    ...     learners=(), adversaries=(), limits=Limits())
    >>> for game in check_games(config):
    ...     print(game)
    ('mistake-bound', 'thresholds:n=8', None)
    ('experts', 'thresholds:n=8', None)
    ('experts', None, 3)
    """
    return [(game, spec, config.experts if spec is None else None)
            for game, spec in spaces(config)]


def check_file(agent: str, file: Path, rest: str, sandbox: Sandbox, base: Path,
               seconds: float = CHECK_SECONDS,
               roles: Sequence[str] = ROLES,
               games: Sequence[CheckGame] | None = None) -> Verdict:
    """Check ``file`` (named ``agent``, ``FILE.py:Class``; ``rest`` is its ``Class[:params]``)
    where a tournament would run it, in ``sandbox``: its own checks run there (its own
    word, shown as advice), then *plays a game* is refereed here by a server, outside its
    process (:func:`play_check_games`), as what it loads as, or as each of ``roles``.
    A file whose own checks say it is of a role not in ``roles`` gets that kind and no
    game (a competition that takes learners refuses an adversary without playing it).
    ``games``: the check games (:func:`check_games`), else the suite's own. ``seconds``
    bounds its own checks, and again its refereed games (their wall budget:
    :func:`play_check_games`)."""
    chosen = ["--games", json.dumps(list(games))] if games is not None else []
    experts = next((e for _, c, e in games or () if c is None and e), CHECK_EXPERTS)
    inside = f"{sandbox.inside(file)}:{rest}"

    shown = agent.partition(".py:")[0] + ".py" if ".py:" in agent else str(file)

    def ours(text: str) -> str:  # (the file as the student named it, not the sandbox's)
        return text.replace(inside, agent).replace(sandbox.inside(file), shown)

    with _checking(sandbox, base) as checking:
        try:
            with checking[1].lease("check", file) as loaded:
                run = loaded.run(["check", inside, "--in-sandbox", *chosen], seconds)
        except SandboxError as exc:
            return Verdict(agent, refused="load_failed", message=ours(f"check: {exc}"))
        if run.code is None and not (run.stalled or run.over_memory):
            return Verdict(agent, refused="timeout", forked=run.forked, message=(
                f"check: {agent} did not finish its checks in {seconds:g} s (a hang?): a "
                "tournament would kill it"))
        if run.code not in (0, 1, None):
            last = [line for line in run.err.strip().splitlines() if line][-1:] or [
                "no message"]
            said = last[0].removeprefix("littlestone: error: ").removeprefix("check: ")
            reason = "syntax_error" if "SyntaxError" in said or "IndentationError" in said \
                else "load_failed"
            return Verdict(agent, refused=reason, forked=run.forked,
                           message=ours(f"check: {said}"))
        own = _own_report(run.out)
        rows = [_own_row(row, ours) for row in (own["checks"] if own is not None else [])]
        kinds = [own["kind"]] if own is not None and own.get("kind") in ROLES else list(roles)
        kind = kinds[0]
        if kind not in roles:  # a role the caller does not take: none of its games is played
            return Verdict(agent, kind, rows, forked=run.forked)
        for kind in kinds:  # (without its report: as what it loads as)
            played = play_check_games(agent, kind, refereed_games(kind, games),
                                      CHECK_ROUNDS, experts, sandbox, base, checking, seconds)
            if not (played[:1] and played[0].status.startswith("load_failed")
                    and f"is not a{'n' if kind == 'adversary' else ''} {kind}"
                    in played[0].message):
                break
    said_row = next((r for r in rows if r["check"] == PLAYS), None)
    refereed = _refereed_row(agent, played, said_row, ours)
    at = rows.index(said_row) if said_row is not None else 0  # (in its place, once)
    rows = [r for r in rows if r["check"] != PLAYS]
    rows.insert(at, refereed)
    if own is None:
        why = (f"its processes held more than {sandbox.limits.memory_mb} MiB: killed"
               if run.over_memory else "it stopped or killed its own sandbox"
               if run.stalled else "it printed no report (did it exit early?)")
        rows.append(_own_row({"check": "own checks", "ok": False,
                              "message": f"its own checks did not run: {why}"}, ours))
    return Verdict(agent, kind, rows, forked=run.forked)


# (``row``: the submission's own JSON, its check and ok checked by _own_report)
def _own_row(row: dict[str, Any], ours: Callable[[str], str]) -> CheckRow:
    """A row of the submission's own report, as an advice row: only its name, outcome
    and message are taken from it (what a failure costs in a tournament is ours)."""
    name = str(row["check"])[:100]
    return {"check": name, "ok": row["ok"], "skipped": row.get("skipped") is True,
            "advice": row.get("advice") is True and row["ok"],
            "message": ours(str(row.get("message", "")))[:2000],
            "in_tournament": IN_TOURNAMENT.get("check_" + name.replace(" ", "_"), ""),
            "refereed": False}


# (JSON the submission printed: any fields until _own_row reads them)
def _own_report(out: str) -> dict[str, Any] | None:
    """The report the sandboxed run printed: its last line that reads as one (the
    submission may print around it)."""
    for report in printed_json(out):
        if isinstance(report, dict) and isinstance(report.get("checks"), list) and all(
                isinstance(r, dict) and isinstance(r.get("check"), str)
                and isinstance(r.get("ok"), bool) for r in report["checks"]):
            return report
    return None


#: (a sandboxed game's failure as a student reads it: one function, the report's too)
_plain = plain


def _refereed_row(agent: str, played: list[Refereed], said: CheckRow | None,
                  ours: Callable[[str], str] = str) -> CheckRow:
    """*plays a game* as the server recorded the games, in one verdict: where one failed,
    its status, the rounds played and why, with the student's file and line (its own
    run's word, so marked, only where the server's record says no more than the status);
    where it failed on a class after others went well, how to say it does not play it."""
    games = [g for g in played if g.status != "declined"]
    failed = next((g for g in games if g.status != "complete"), None)
    ok, message = True, (f"{len(games)} game{'s' if len(games) != 1 else ''} refereed by "
                         "a server, outside its process")
    if failed is not None and failed.status.startswith("load_failed"):
        ok, message = False, f"{agent}: not loaded: {ours(failed.message)}"
    elif failed is not None:
        why = _plain(ours(failed.message))
        ok, message = False, (f"{agent}, {failed.where}: {failed.status} after "
                              f"{failed.rounds} rounds" + (f": {why}" if why else ""))
        if said is not None and not said["ok"] and not why:
            own = str(said.get("message", ""))
            own = own.partition(failed.where + ": ")[2] or own
            message += f" (its own run: {own.partition(': ')[2] or own})"
        if failed.hclass is not None and games.index(failed) > 0 and (
                failed.status.startswith(("crash", "disconnected", "forfeit:"))):
            cls = agent.rpartition(":")[2]
            message += (f"; if {cls} does not play {failed.hclass}, add a method "
                        "unsupported(self, game) to it that returns why for that class "
                        "(None for the others), or check only your tournament's classes "
                        "(check --class SPEC)")
        return {"check": PLAYS, "ok": ok, "skipped": False, "advice": False,
                "message": message, "in_tournament": IN_TOURNAMENT["check_plays_a_game"],
                "refereed": True}
    elif not games:
        ok, message = False, f"{agent}: plays none of the check games"
    elif short := next((g for g in games if g.rounds != CHECK_ROUNDS), None):
        ok, message = False, f"{agent}, {short.where}: ended after {short.rounds} rounds"
    if not ok and failed is not None and said is not None and not said["ok"]:
        own = str(said.get("message", ""))
        message += f" (its own run: {own.partition(failed.where + ': ')[2] or own})"
    return {"check": PLAYS, "ok": ok, "skipped": False, "advice": False, "message": message,
            "in_tournament": IN_TOURNAMENT["check_plays_a_game"], "refereed": True}
