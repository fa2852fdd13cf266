"""What a game is: its spec, its seeds, its per-round records and its result.

Both referees (:mod:`littlestone.games.mistake_bound`, :mod:`littlestone.games.experts`)
emit the records and the result defined here; the drivers, logs and the wire format
carry them.

>>> seeds = game_seeds(0)
>>> seeds == game_seeds(0), len({seeds.learner, seeds.adversary}), len(seeds.referee)
(True, 2, 32)
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypedDict, cast

import numpy as np

from littlestone.games.classes import FiniteClass, HypothesisClass
from littlestone.games.coin import KEY_BYTES
from littlestone.games.errors import SpecError

__all__ = [
    "EXPERTS",
    "GAMES",
    "MISTAKE_BOUND",
    "Bound",
    "ExpertsRecord",
    "Fault",
    "GameResult",
    "GameSeeds",
    "GameSpec",
    "PlayedFields",
    "ResultFields",
    "RoundRecord",
    "game_seeds",
    "public_key",
    "secret_key",
]

MISTAKE_BOUND = "mistake-bound"
EXPERTS = "experts"
GAMES = (MISTAKE_BOUND, EXPERTS)
#: A game name: one of GAMES (checked where a GameSpec is made).
GameName = str


@dataclass(frozen=True)
class GameSpec:
    """The rules both players are told before round 1.

    ``hclass`` is H (mistake-bound game) or the class whose hypotheses are the experts
    (experts game with class-derived advice); ``experts`` is d in an experts game
    (|H| when class-derived). ``horizon_known`` says whether the learner is told T.

    >>> from littlestone.games.classes import make_class
    >>> GameSpec("mistake-bound", 100, make_class("thresholds:n=7")).horizon
    100
    >>> GameSpec("experts", 50, make_class("singletons:n=4")).n_experts  # one per hypothesis
    4
    >>> GameSpec("experts", 50)
    Traceback (most recent call last):
    ...
    littlestone.games.errors.SpecError: the experts game needs --experts D >= 1 or a finite --class
    """

    game: GameName
    rounds: int
    hclass: HypothesisClass | None = None
    experts: int | None = None
    horizon_known: bool = True

    def __post_init__(self) -> None:
        if self.game not in GAMES:
            raise SpecError(f"unknown game {self.game!r} (known: {', '.join(GAMES)})")
        if self.rounds < 0:
            raise SpecError(f"rounds must be >= 0, got {self.rounds}")
        if self.game == MISTAKE_BOUND:
            if self.hclass is None:
                raise SpecError("the mistake-bound game needs a class (--class)")
            if self.experts is not None:
                raise SpecError("--experts belongs to the experts game")
        else:
            if self.hclass is not None:
                if not isinstance(self.hclass, FiniteClass):
                    raise SpecError(
                        f"experts from class {self.hclass.spec}: the class must be finite"
                    )
                if self.experts is not None and self.experts != self.hclass.size:
                    raise SpecError(
                        f"--experts {self.experts} does not match |H| = {self.hclass.size} "
                        f"of {self.hclass.spec} (the class's hypotheses are the experts)"
                    )
                object.__setattr__(self, "experts", self.hclass.size)
            if self.experts is None or self.experts < 1:
                raise SpecError("the experts game needs --experts D >= 1 or a finite --class")

    @property
    def n_experts(self) -> int:
        """d, the number of experts (experts game only)."""
        if self.experts is None:
            raise SpecError("not an experts game")
        return self.experts

    @property
    def horizon(self) -> int | None:
        """T as the learner may see it: ``None`` when the horizon is not announced."""
        return self.rounds if self.horizon_known else None


@dataclass(frozen=True)
class GameSeeds:
    """A game's key and what it derives: the referee's coin key, each player's seed.

    ``game`` is the game seed S (public: in the log, the index, a tournament's TOML);
    ``key`` the 256-bit game key everything else is derived from, with HMAC-SHA256, so
    that knowing S, or one player's seed, tells nothing of the coin or of the other
    player's seed. ``commitment`` is SHA-256(key): a server announces it before round 1
    and reveals the key after the game, and anyone can then check every seed and draw.
    """

    game: int
    key: bytes
    #: The key of the referee's coin (:class:`littlestone.games.coin.Coin`).
    referee: bytes
    learner: int
    adversary: int

    @property
    def commitment(self) -> bytes:
        """SHA-256 of the game key."""
        return hashlib.sha256(self.key).digest()

    @property
    def public(self) -> bool:
        """Whether the key is the one anybody derives from S (:func:`public_key`)."""
        return self.key == public_key(self.game)


def public_key(seed: int) -> bytes:
    """The game key of ``play --seed S``: derived from S alone, so anybody can replay the
    game (and an agent in the same process could predict its coin: in-process play
    protects nothing, README says so)."""
    return hashlib.sha256(f"littlestone public game key:{seed}".encode()).digest()


def secret_key() -> bytes:
    """A fresh random game key (a server's, a tournament's): 256 bits from the OS."""
    return secrets.token_bytes(KEY_BYTES)


@functools.lru_cache(maxsize=4096)
def game_seeds(seed: int, key: bytes | None = None) -> GameSeeds:
    """The seeds of game S under ``key`` (default :func:`public_key`): for each of
    ``referee``, ``learner``, ``adversary``, HMAC-SHA256(key, "ROLE:S"); the coin takes
    all 32 bytes, a player the first 8 as an integer.

    >>> secret = game_seeds(7, bytes(32))
    >>> secret.learner != game_seeds(7).learner, game_seeds(7).public, secret.public
    (True, True, False)
    """
    if key is None:
        key = public_key(seed)
    if len(key) != KEY_BYTES:
        raise ValueError(f"a game key is {KEY_BYTES} bytes, got {len(key)}")

    def derive(role: str) -> bytes:
        return hmac.new(key, f"{role}:{seed}".encode(), hashlib.sha256).digest()

    return GameSeeds(seed, key, derive("referee"),
                     int.from_bytes(derive("learner")[:8], "little"),
                     int.from_bytes(derive("adversary")[:8], "little"))


@dataclass(frozen=True)
class Bound:
    """A learner's theoretical bound on this game: its value and the theorem's name."""

    value: float
    name: str


class RoundRecord(NamedTuple):
    """One round of the mistake-bound game (docs/design.md 1.1).

    ``prediction`` is the referee's draw yhat ~ Bernoulli(p); ``loss`` is the expected
    loss |p - y|; ``mistakes`` and ``expected_mistakes`` are running totals, which are
    also the running regret against H (realizable: the best hypothesis makes none).
    """

    t: int
    x: Any
    p: float
    y: int
    prediction: int
    mistake: bool
    loss: float
    mistakes: int
    expected_mistakes: float


class ExpertsRecord(NamedTuple):
    """One round of the expert-advice game (docs/design.md 1.2).

    ``weights`` is the learner's distribution (``None`` when it answered a prediction
    ``p``); ``drawn`` is the referee's draw: an expert index, or the predicted label when
    the learner answered ``p``. ``loss`` is the realised loss, ``expected_loss`` <w, v>
    (or |p - y|); ``regret`` and ``expected_regret`` are running values.
    """

    t: int
    x: Any
    advice: np.ndarray[Any, np.dtype[Any]] | None
    weights: np.ndarray[Any, np.dtype[np.float64]] | None
    p: float | None
    y: int | None
    costs: np.ndarray[Any, np.dtype[np.float64]]
    drawn: int
    loss: float
    expected_loss: float
    regret: float
    expected_regret: float


class Fault(TypedDict):
    """A player's non-fatal fault (a late or malformed move, :mod:`.loop`'s ladder; a
    remote player's error from the server): the round (None: between rounds), the error
    code, its message and the player's role."""

    t: int | None
    code: str
    message: str
    role: str


class ResultFields(TypedDict, total=False):
    """A game's result as JSON fields (:meth:`GameResult.to_dict`: ``littlestone play
    --json``, a log's footer, the wire's ``end``): the game's scores (the experts game's
    losses only in it; ``bound`` split into ``bound`` and ``bound_name``), then what its
    learner's :meth:`~littlestone.learners.base.Learner.report` adds: the package's
    learners' keys are these; another agent's own keys are carried along unread. A
    played game's has every score; a game cut short has its ``status`` (and ``rounds``)
    only, and a log or a peer anybody wrote what it holds: every key may be missing."""

    game: str
    status: str
    rounds: int
    mistakes: float
    expected_mistakes: float
    regret: float
    expected_regret: float
    learner_loss: float | None
    expected_learner_loss: float | None
    best_expert_loss: float | None
    message: str
    bound: float | int | None
    bound_name: str
    updates: int
    conservative_updates: int
    unsure_mistakes: int
    update_bound: float | None
    convex_loss: float
    hedge_over: str
    prior_entropy_bits: float
    radius: float
    regret_bound: float | None
    regret_bound_name: str
    start_cosine: float | None
    start_vector: list[float]
    tuned_bound: float | None
    size: int
    faults: list[Fault]


class EnteredGame(TypedDict):
    """A tournament's game a remote entrant played: its id and its status."""

    game_id: str | None
    status: str


#: What ``littlestone play --json`` and ``connect --json`` print besides the result: the
#: players, the rules, the seed, where the game is kept, a finite class's size and Ldim,
#: the game key (connect) and the seconds (``class`` is a Python keyword, hence the
#: functional form).
_PlayedKeys = TypedDict("_PlayedKeys", {
    "learner": str, "adversary": str, "class": str | None, "horizon": int,
    "experts": int | None, "seed": int | None, "game_id": str | None, "log": str | None,
    "game_key": str, "seconds": float, "size": int, "ldim": int | None,
    "tournament": str, "games": list[EnteredGame],
}, total=False)


class PlayedFields(ResultFields, _PlayedKeys, total=False):
    """A played game as ``littlestone play --json`` and ``connect --json`` print it (and
    :func:`littlestone.client.play_remote` returns it): its result's fields and the
    game's (``cli/common.game_output`` puts them in order); a remote entrant's
    tournament (``connect --tournament``) as its name and its ``games`` only."""


@dataclass
class GameResult:
    """How a game ended and its scores.

    ``status`` is ``complete`` or the rule broken and by whom (``rule_violation:
    adversary:empty_version_space``, ``illegal_move:learner:p_range``,
    ``crash:learner:ZeroDivisionError`` ...). ``rounds`` counts the rounds scored.
    In the experts game ``mistakes`` is the realised cumulative loss (the number of
    mistakes when costs are 0/1) and ``expected_mistakes`` the expected one.

    >>> result = GameResult("mistake-bound", "complete", 10, 2, 2.5, 0.0, 0.0)
    >>> result.complete, result.to_dict()["mistakes"]
    (True, 2)
    """

    game: GameName
    status: str
    rounds: int
    mistakes: float
    expected_mistakes: float
    regret: float
    expected_regret: float
    learner_loss: float | None = None
    expected_learner_loss: float | None = None
    best_expert_loss: float | None = None
    message: str = ""
    bound: Bound | None = None
    # (its learner's own report(), and the loop's faults: ResultFields names the package's)
    extra: dict[str, Any] = field(default_factory=dict)
    #: The target the adversary revealed after the last round, if it revealed one.
    revealed: Any = field(default=None, compare=False)

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def to_dict(self) -> ResultFields:
        """The JSON-ready fields (``bound`` split into ``bound`` and ``bound_name``)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("bound", "extra", "revealed")}  # scalars: no deep copy
        if self.game == MISTAKE_BOUND:
            for key in ("learner_loss", "expected_learner_loss", "best_expert_loss"):
                out.pop(key)
            out["mistakes"] = int(self.mistakes)
        if self.bound is not None:
            out["bound"] = _json_number(self.bound.value)
            out["bound_name"] = self.bound.name
        out.update(self.extra)
        return cast("ResultFields", out)  # (the extras: its learner's report(), as it gave them)


def _json_number(value: float) -> float | int | None:
    if math.isinf(value) or math.isnan(value):
        return None
    return int(value) if float(value).is_integer() else float(value)
