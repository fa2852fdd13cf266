"""The games of a tournament: every learner x adversary x class x seed that can be
played, the pairs that cannot (with the reason), and the entrants that failed to load.

Built-in agents are built here, in the tournament's process (they are the package's
own). A submitted file is never imported here: :func:`probe` loads it inside its
sandbox (``littlestone probe``), which answers which of the tournament's games it can
play, or why it cannot be loaded at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from littlestone.adversaries import ADVERSARIES
from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.errors import LittlestoneError, SandboxError, SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.protocol.messages import rules_to_wire
from littlestone.sandbox import Sandbox, SandboxPool, printed_json
from littlestone.server.records.rows import Skipped
from littlestone.server.tournament.config import (
    TournamentConfig,
    file_of,
    is_file_agent,
    remote_account,
)

__all__ = ["Entrant", "Pairing", "candidates", "file_digests", "judge",
           "load_entrants", "pairings", "probe", "rules", "spaces", "version"]


@dataclass(frozen=True)
class Pairing:
    """One game of the tournament. ``declined`` names the side that cannot play it (the
    game is then not played, and counts as that side's fault: declining the hard
    classes must not pay), with its ``reason``."""

    game: str
    hclass: str | None
    learner: str
    adversary: str
    seed: int
    declined: str | None = None
    reason: str = ""
    #: What else the game depends on, digested (:func:`version`): the rounds, the
    #: submissions' limits and the bytes of each submitted file that plays it.
    version: str = ""

    @property
    def base(self) -> str:
        """The game without its version: ``game|class|learner|adversary|seed``."""
        return f"{self.game}|{self.hclass}|{self.learner}|{self.adversary}|{self.seed}"

    @property
    def key(self) -> str:
        """What a tournament stores the game's result under: a changed file, or changed
        rules, make another key, and the game is played again."""
        return f"{self.base}|{self.version}" if self.version else self.base


@dataclass(frozen=True)
class Entrant:
    """What loading an entrant told: the reason it cannot play each game space (None
    where it can), or the reason it cannot be loaded at all (``failed``)."""

    spec: str
    role: str
    unsupported: tuple[str | None, ...] = ()
    failed: str | None = None
    #: Whether the failure is the server's (its sandbox could not start), not the
    #: file's: a competition does not remember it (:class:`.run._ProbeCache`).
    servers: bool = False


def spaces(config: TournamentConfig) -> list[tuple[str, str | None]]:
    """The (game, class) pairs the tournament plays (class None: free experts)."""
    out: list[tuple[str, str | None]] = []
    for game in config.games:
        if game == MISTAKE_BOUND:
            out += [(game, c) for c in config.classes]
        else:
            out += [(game, c) for c in config.classes
                    if isinstance(make_class(c), FiniteClass)]
            if config.experts is not None:
                out.append((game, None))
    return out


def rules(config: TournamentConfig, pairing: Pairing | tuple[str, str | None]) -> GameSpec:
    """The rules of one pairing's game (or of a game space)."""
    game, spec = ((pairing.game, pairing.hclass) if isinstance(pairing, Pairing)
                  else pairing)
    hclass = make_class(spec) if spec else None
    return GameSpec(game, config.rounds, hclass, None if hclass else config.experts)


def probe(config: TournamentConfig, spec: str, role: str, sandbox: Sandbox,
          asked: list[tuple[str, str | None]] | None = None, pool: SandboxPool | None = None,
          file: Path | None = None) -> Entrant:
    """Load a submitted file in its sandbox and ask which games it can play: the
    tournament's game spaces, or those ``asked`` (``Entrant.unsupported`` in their order).
    With a ``pool``, the file is loaded there once (:class:`.SandboxPool`) and asked
    by a fresh child, as its games will be played; ``file``: where the file is, when
    not where the config says (a Ray node's copy)."""
    rest = file_of(spec, config.base)[1]
    if file is None:
        file = file_of(spec, config.base)[0]
        given = Path(spec.partition(".py:")[0] + ".py")
        if (given if given.is_absolute() else config.base / given).is_symlink():
            return Entrant(spec, role, failed=f"it is a symbolic link (to {str(file)!r}): a "
                           "submission is its own file, not another's")
    if not file.is_file():
        return Entrant(spec, role, failed=f"no such file {str(file)!r} (paths are relative "
                       "to the tournament file's folder)")
    games = [rules_to_wire(rules(config, space)) for space in (
        spaces(config) if asked is None else asked)]
    request = json.dumps({"role": role, "spec": f"{sandbox.inside(file)}:{rest}",
                          "games": games}).encode()
    if pool is None:
        run = sandbox.run(file, ["probe"], timeout=config.limits.load_seconds,
                          stdin=request)
    else:
        try:
            with pool.lease(f"{role}:{spec}", file) as loaded:
                run = loaded.run(["probe"], config.limits.load_seconds, request)
        except SandboxError as exc:  # (its sandbox, which never imports the file)
            return Entrant(spec, role, failed=str(exc), servers=True)
    answer = next(printed_json(run.out), None)  # (its own prints and hostile lines skipped)
    if not isinstance(answer, dict) or run.code is None:
        why = ("it stopped or killed its own sandbox" if run.stalled else
               f"its processes held more than {sandbox.limits.memory_mb} MiB (killed)"
               if run.over_memory else
               "it did not load within the time allowed" if run.code is None else
               _last_line(run.err) or "it printed no answer")
        return Entrant(spec, role, failed=why)
    if not answer.get("ok"):
        reason = str(answer.get("reason", "it printed something else than its answer"))
        return Entrant(spec, role, failed=reason.replace(sandbox.inside(file),
                                                         spec.partition(".py:")[0] + ".py"))
    reasons = answer.get("unsupported", [])
    if not isinstance(reasons, list) or len(reasons) != len(games):
        return Entrant(spec, role, failed="its probe answered something else than asked")
    return Entrant(spec, role, tuple(None if r is None else str(r) for r in reasons))


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].removeprefix("littlestone: error: ")[:300] if lines else ""


def load_entrants(config: TournamentConfig, sandbox: Sandbox | None,
                  probe_files: Callable[[list[tuple[str, str]]],
                                        dict[tuple[str, str], Entrant]] | None = None
                  ) -> dict[str, Entrant]:
    """Every learner and adversary of the tournament, loaded: built-ins here, files by
    :func:`probe` in their sandbox, or by ``probe_files`` (given (role, spec) pairs: a
    tournament's workers, which keep them loaded) (``sandbox`` None: files cannot be
    run, and fail)."""
    entrants: dict[str, Entrant] = {}
    games = [rules(config, space) for space in spaces(config)]
    files: list[tuple[str, str]] = []
    for role, registry, specs in (("learner", LEARNERS, config.learners),
                                  ("adversary", ADVERSARIES, config.adversaries)):
        for spec in specs:
            key = f"{role}:{spec}"
            if key in entrants or remote_account(spec):
                continue
            if is_file_agent(spec):
                if sandbox is None:
                    entrants[key] = Entrant(spec, role, failed="submissions need a sandbox")
                elif probe_files is None:
                    entrants[key] = probe(config, spec, role, sandbox)
                else:
                    files.append((role, spec))
                continue
            try:
                agent: Any = registry.make(spec)
            except SpecError as exc:
                entrants[key] = Entrant(spec, role, failed=str(exc))
                continue
            entrants[key] = Entrant(spec, role, tuple(_unsupported(agent, g) for g in games))
    if files and probe_files is not None:
        found = probe_files(files)
        for role, spec in files:
            entrants[f"{role}:{spec}"] = found.get((role, spec)) or Entrant(
                spec, role, failed="it was not probed")
    return entrants


def _unsupported(agent: Any, game: GameSpec) -> str | None:
    try:
        return agent.unsupported(game)  # type: ignore[no-any-return]
    except LittlestoneError as exc:
        return str(exc)


def file_digests(config: TournamentConfig) -> dict[str, str | None]:
    """The SHA-256 of each submitted file the tournament names, by spec (None: no such
    file, or unreadable: it fails to load anyway)."""
    out: dict[str, str | None] = {}
    for spec in {*config.learners, *config.adversaries}:
        if is_file_agent(spec):
            file, _ = file_of(spec, config.base)
            out[spec] = None
            with contextlib.suppress(OSError), open(file, "rb") as f:
                out[spec] = hashlib.file_digest(f, "sha256").hexdigest()
    return out


def version(config: TournamentConfig, learner: str, adversary: str,
            digests: Mapping[str, str | None]) -> str:
    """What a game depends on beyond its pairing, digested (16 hex digits): the rounds
    and the experts; with a submission or a remote agent, the limits (its deadlines);
    and the bytes of each submitted file that plays it.

    >>> from littlestone.server.tournament.config import Limits
    >>> config = TournamentConfig("t", 30, (0,), ("mistake-bound",), ("thresholds:n=4",),
    ...                           None, ("halving",), ("a.py:A",), Limits())
    >>> one = version(config, "halving", "a.py:A", {"a.py:A": "aa"})
    >>> one == version(config, "halving", "a.py:A", {"a.py:A": "ab"})
    False
    """
    outside = [s for s in (learner, adversary) if is_file_agent(s) or remote_account(s)]
    what = {"rounds": config.rounds, "experts": config.experts,
            "limits": dataclasses.asdict(config.limits) if outside else None,
            "learner": digests.get(learner), "adversary": digests.get(adversary)}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def candidates(config: TournamentConfig, digests: Mapping[str, str | None]
               ) -> tuple[list[Pairing], list[Skipped]]:
    """Every game of the tournament, keyed (:attr:`Pairing.key`, with its
    :func:`version`), whoever can play it; and the pairs that are never played (a
    remote agent against a submission or another remote agent)."""
    todo: list[Pairing] = []
    skipped: list[Skipped] = []
    for (game, spec), learner, adversary in itertools.product(
            spaces(config), config.learners, config.adversaries):
        remote = [s for s in (learner, adversary) if remote_account(s)]
        if remote and (len(remote) == 2 or any(is_file_agent(s) for s in (learner, adversary))):
            skipped.append({"game": game, "class": spec, "learner": learner,
                            "adversary": adversary,
                            "reason": "a remote agent plays built-in opponents only"})
            continue
        stamp = version(config, learner, adversary, digests)
        todo += [Pairing(game, spec, learner, adversary, seed, version=stamp)
                 for seed in config.seeds]
    return todo, skipped


def judge(games: list[Pairing], config: TournamentConfig, entrants: dict[str, Entrant]
          ) -> tuple[list[Pairing], list[Skipped]]:
    """The ``games`` as the loaded ``entrants`` can play them: a game one side declines
    (``unsupported``) is kept, marked ``declined`` (it counts as that side's fault:
    declining the hard classes must not pay); a game both decline is dropped and listed
    with the reasons, as is (once a pair and class) every game one side declines. A game
    with an entrant that failed to load is kept too (recorded as its fault)."""
    index = {space: i for i, space in enumerate(spaces(config))}
    todo: list[Pairing] = []
    skipped: list[Skipped] = []
    listed = set()
    for pairing in games:
        reasons = {}
        for role, agent_spec in (("learner", pairing.learner), ("adversary", pairing.adversary)):
            entrant = entrants.get(f"{role}:{agent_spec}")
            if entrant is not None and entrant.failed is None:
                reason = entrant.unsupported[index[(pairing.game, pairing.hclass)]]
                if reason:
                    reasons[role] = f"{agent_spec}: {reason}"
        if reasons and (pairing.game, pairing.hclass, pairing.learner,
                        pairing.adversary) not in listed:
            listed.add((pairing.game, pairing.hclass, pairing.learner, pairing.adversary))
            skipped.append({"game": pairing.game, "class": pairing.hclass,
                            "learner": pairing.learner, "adversary": pairing.adversary,
                            "reason": "; ".join(reasons.values()),
                            "declined": " and ".join(reasons)})
        if len(reasons) == 2:  # neither can play it: nobody's loss
            continue
        declined = next(iter(reasons), None)  # the one side that cannot play it
        todo.append(dataclasses.replace(pairing, declined=declined,
                                        reason=reasons.get(declined or "", "")))
    return todo, skipped


def pairings(config: TournamentConfig, entrants: dict[str, Entrant],
             digests: Mapping[str, str | None] | None = None
             ) -> tuple[list[Pairing], list[Skipped]]:
    """Every pairing of the tournament (:func:`candidates` as :func:`judge` finds them),
    and the ones that are not, with the reason (a remote agent against a submission or
    another remote agent; both sides declining). A pairing one side declines
    (``unsupported``) is in the list, marked ``declined``: it counts as that side's
    fault. A pairing with an entrant that failed to load is in the list too (and is
    recorded as its fault): it is not the opponent's to lose."""
    games, never = candidates(config, file_digests(config) if digests is None else digests)
    todo, skipped = judge(games, config, entrants)
    return todo, never + skipped
