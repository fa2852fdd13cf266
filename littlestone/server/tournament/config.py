"""A tournament's TOML file: reading it, checking every key, and the agents it names.

Imports the games (to check class specs) and the sandbox's limits.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import tomllib
import unicodedata
from dataclasses import dataclass, fields
from pathlib import Path

from littlestone.games.classes import make_class
from littlestone.games.errors import ConfigError, SpecError
from littlestone.games.game import GAMES, MISTAKE_BOUND
from littlestone.sandbox import Limits

__all__ = ["GAMES_PER_VERSION", "SCHEDULES", "SEEDS_MAX", "ConfigError", "Limits",
           "TournamentConfig", "file_of", "is_file_agent", "load_config", "remote_account"]


#: The largest count of seeds a config may give (``seeds = N``): that many games of each
#: learner, adversary and class. The same number as the Python API's
#: (``littlestone.api.SEEDS_MAX``), which refuses it before it writes a config.
SEEDS_MAX = 1 << 20
#: The schedules a tournament file may name (:mod:`.schedule`).
SCHEDULES = ("auto", "round-robin", "sampled")
#: The sampled schedule's games of each entrant, unless the file says
#: ``games_per_version``.
GAMES_PER_VERSION = 48


@dataclass(frozen=True)
class TournamentConfig:
    name: str
    rounds: int
    seeds: tuple[int, ...]
    games: tuple[str, ...]
    classes: tuple[str, ...]
    experts: int | None
    learners: tuple[str, ...]
    adversaries: tuple[str, ...]
    limits: Limits
    source: str = ""
    #: host:port the tournament's server listens on (remote agents connect there).
    listen: str = "127.0.0.1:0"
    #: The TOML file's folder: submitted files' relative paths start there.
    base: Path = Path()
    #: Which games are played (:mod:`.schedule`): ``auto``, ``round-robin`` or
    #: ``sampled``; and the sampled schedule's games of each entrant.
    schedule: str = "auto"
    games_per_version: int = GAMES_PER_VERSION

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    def identity(self) -> str:
        """What the tournament's games are played under: its file's text and, when it
        names submitted files, their bytes. A data folder refuses to resume a
        tournament under another identity: its games would mix two versions of an
        entrant (a file replaced between two runs)."""
        files = sorted({s for s in (*self.learners, *self.adversaries) if is_file_agent(s)})
        if not files:
            return self.sha256
        digest = hashlib.sha256(self.source.encode())
        for spec in files:
            file, _ = file_of(spec, self.base)
            digest.update(b"\0" + spec.encode() + b"\0")
            if file.is_file():  # (one that is missing or no file fails to load anyway)
                with contextlib.suppress(OSError), open(file, "rb") as f:
                    digest.update(hashlib.file_digest(f, "sha256").digest())
        return digest.hexdigest()


#: A tournament file's most bytes.
CONFIG_MAX = 1 << 20

_KNOWN = {
    "tournament": {"name", "rounds", "seeds", "games", "experts", "listen", "schedule",
                   "games_per_version"},
    "limits": {f.name for f in fields(Limits)},
    "classes": {"spec"},
    "": {"tournament", "classes", "learners", "adversaries", "limits"},
}
#: A competition's file (:mod:`.competition`) is a tournament file with this table too.
COMPETITION_TABLE = "competition"


def _line_of(text: str, key: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(key):
            return number
    return 0


def load_config(path: str | Path, competition: bool = False) -> TournamentConfig:
    """Read and check a tournament file::

        [tournament]
        name = "week-3"
        rounds = 200
        seeds = [0, 1, 2]            # or a count: seeds = 3
        games = ["mistake-bound"]    # and/or "experts"
        experts = 4                  # d, for experts games without a class
        schedule = "auto"            # or "round-robin", "sampled" (past 25,000 games)
        games_per_version = 48       # the sampled schedule's games of each entrant

        [[classes]]
        spec = "thresholds:n=255"

        learners = ["halving", "soa", "submissions/alice.py:Learner"]
        adversaries = ["random-target", "shattered-tree"]

        [limits]                     # for submitted agents
        move_deadline = 5.0          # seconds a move
        time_bank = 30.0             # seconds over the deadlines, a game
        memory_mb = 1024             # RLIMIT_AS
        cpu_seconds = 120            # RLIMIT_CPU
        remote_wait = 120            # seconds to wait for a remote agent to enter
        processes = 16               # RLIMIT_NPROC (threads; one process in a game)
        open_files = 64              # RLIMIT_NOFILE
        file_mb = 64                 # RLIMIT_FSIZE and the size of its /tmp
        output_kb = 64               # output kept from each of stdout and stderr

    A submission's path (``submissions/alice.py``) is relative to the TOML file's folder.
    ``remote:NAME`` in ``learners`` or ``adversaries`` is an agent that enters with the
    token named NAME (``littlestone connect URL --token-file F --learner SPEC --tournament
    NAME``), against built-in opponents; ``[tournament] listen = "HOST:PORT"`` (default
    ``127.0.0.1:0``, a free port, announced on stderr) is where it connects.

    (``learners`` and ``adversaries`` are top-level keys: put them before the first
    table.) Unknown keys and bad values raise ConfigError naming file, line and key.
    With ``competition`` (a competition's file, :mod:`.competition`), a
    ``[competition]`` table is allowed (and read there), and ``learners`` or
    ``adversaries`` may be empty or missing: the students' versions fill them.
    """
    path = Path(path)
    if path.exists() and not path.is_file():  # a FIFO would block, /dev/zero never end
        raise ConfigError(f"{path}: not a regular file")
    try:
        with open(path, "rb") as f:
            raw = f.read(CONFIG_MAX + 1)
        if len(raw) > CONFIG_MAX:
            raise ConfigError(f"{path}: over {CONFIG_MAX >> 20} MiB: not a tournament file")
        text = raw.decode()
        data = tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{path}:{_line_of(text, key.split('.')[-1])}: {key}: {message}")

    top = _KNOWN[""] | ({COMPETITION_TABLE} if competition else set())
    for table, known in (("", top), ("tournament", _KNOWN["tournament"]),
                         ("limits", _KNOWN["limits"])):
        section = data if not table else data.get(table, {})
        if not isinstance(section, dict):
            raise fail(table, "must be a table")
        for key in section:
            if key not in known:
                raise fail(f"{table}.{key}" if table else key, "unknown key")
    head = data.get("tournament", {})
    name = head.get("name")
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise fail("tournament.name", "a name of letters, digits, - _ . is required")
    rounds = head.get("rounds")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds < 1 << 63:
        raise fail("tournament.rounds", "an integer >= 1 (and below 2^63) is required")
    seeds_raw = head.get("seeds", 1)
    if isinstance(seeds_raw, int) and not isinstance(seeds_raw, bool) and seeds_raw >= 1:
        if seeds_raw > SEEDS_MAX:  # (a tuple of 10^9 seeds is 36 GB: checked first)
            raise fail("tournament.seeds", f"a count of at most {SEEDS_MAX} seeds (as many "
                       f"games each pairing), not {seeds_raw}")
        seeds = tuple(range(seeds_raw))
    elif isinstance(seeds_raw, list) and seeds_raw and all(
        isinstance(s, int) and not isinstance(s, bool) and -(1 << 63) <= s < 1 << 63
        for s in seeds_raw
    ):
        seeds = tuple(seeds_raw)
    else:
        raise fail("tournament.seeds", "a count >= 1 or a list of signed 64-bit integers")
    games = head.get("games", [MISTAKE_BOUND])
    if not isinstance(games, list) or not games or any(g not in GAMES for g in games):
        raise fail("tournament.games", f"a list of {', '.join(GAMES)}")
    experts = head.get("experts")
    if experts is not None and (isinstance(experts, bool) or not isinstance(experts, int)
                                or not 1 <= experts < 1 << 63):
        raise fail("tournament.experts", "an integer >= 1")
    classes_raw = data.get("classes", [])
    if not isinstance(classes_raw, list):
        raise fail("classes", "use [[classes]] tables with a spec")
    classes = []
    for entry in classes_raw:
        if not isinstance(entry, dict) or set(entry) - _KNOWN["classes"] or "spec" not in entry:
            raise fail("classes", "each [[classes]] has exactly a spec")
        try:
            make_class(entry["spec"])
        except SpecError as exc:
            raise fail("classes.spec", str(exc)) from None
        classes.append(entry["spec"])
    if MISTAKE_BOUND in games and not classes:
        raise fail("classes", "the mistake-bound game needs at least one [[classes]]")
    agents = {}
    for key in ("learners", "adversaries"):
        value = data.get(key, [] if competition else None)
        if not isinstance(value, list) or not (value or competition) or not all(
                isinstance(v, str) for v in value):
            raise fail(key, "a non-empty list of agent specs")
        for spec in value:  # names a ranking shows: no two may look alike
            odd = next((c for c in spec if not (c.isascii() and c.isprintable())), None)
            if spec != spec.strip():
                raise fail(key, f"{spec!r} starts or ends with a space (it would rank as a "
                           "second entrant named like the first)")
            if odd is not None:
                raise fail(key, f"{spec!r} holds U+{ord(odd):04X} {unicodedata.name(odd, '')}"
                           ": entrant names are printable ASCII, so that none can pass for "
                           "another in the ranking")
        agents[key] = tuple(value)
    limits_raw = data.get("limits", {})
    try:
        limits = Limits(**limits_raw)
    except TypeError as exc:
        raise fail("limits", str(exc)) from None
    for key, value in vars(limits).items():
        whole = isinstance(getattr(Limits, key), int)  # (a count, or MiB, KiB: shifted)
        if isinstance(value, bool) or not isinstance(value, int if whole else int | float) or (
                not 0 < value < (1 << 31 if whole else math.inf)):
            raise fail(f"limits.{key}", "a whole number from 1 to 2^31 - 1" if whole
                       else "a positive finite number")
    listen = head.get("listen", "127.0.0.1:0")
    host, _, port = str(listen).rpartition(":")
    if not host or not port.isdigit():
        raise fail("tournament.listen", "HOST:PORT, e.g. 127.0.0.1:8765")
    schedule = head.get("schedule", "auto")
    if schedule not in SCHEDULES:
        raise fail("tournament.schedule", f"one of {', '.join(map(repr, SCHEDULES))}")
    per_version = head.get("games_per_version", GAMES_PER_VERSION)
    if isinstance(per_version, bool) or not isinstance(per_version, int) or not (
            1 <= per_version <= 1 << 20):
        raise fail("tournament.games_per_version", "an integer from 1 to 2^20")
    if schedule == "sampled" and any(remote_account(s) for key in ("learners", "adversaries")
                                     for s in agents[key]):
        raise fail("tournament.schedule", "remote agents play only in a round robin (a "
                   "sampled stage cannot wait for them)")
    return TournamentConfig(name, rounds, seeds, tuple(games), tuple(classes), experts,
                            agents["learners"], agents["adversaries"], limits, text, listen,
                            path.resolve().parent, schedule, per_version)


def is_file_agent(spec: str) -> bool:
    """Whether ``spec`` names a submitted file (``FILE.py:Class``)."""
    return ".py:" in spec or spec.endswith(".py")


def file_of(spec: str, base: Path) -> tuple[Path, str]:
    """A file agent's file (relative paths resolve against ``base``, the TOML's folder)
    and the rest of its spec (``Class[:params]``)."""
    path, _, rest = spec.partition(".py:")
    file = Path(path + ".py")
    return (file if file.is_absolute() else base / file).resolve(), rest


def remote_account(spec: str) -> str | None:
    """``remote:NAME``: the agent that enters with the token named NAME."""
    return spec.removeprefix("remote:") if spec.startswith("remote:") else None
