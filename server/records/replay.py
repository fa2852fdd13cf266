"""Replaying logged games: verify, play the logged sequence against another learner,
export the rounds, plot them; and the ``replay`` adversary.

>>> import tempfile, pathlib
>>> from littlestone.games.classes import make_class
>>> from littlestone.learners import LEARNERS
>>> from littlestone.adversaries import ADVERSARIES
>>> from littlestone.server.records.logged import play_logged
>>> data = pathlib.Path(tempfile.mkdtemp())
>>> game = GameSpec("mistake-bound", 40, make_class("thresholds:n=63"))
>>> done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 3, data)
>>> report = verify(read_log(done.log))
>>> report.ok, report.anchored
(True, True)
>>> print(report.message)
all 40 rounds and the result match; anchored: the index recorded this log's final chain
digest when game ... ended
>>> original, other = against(read_log(done.log), "halving")
>>> original.mistakes == other.mistakes
True
"""

from __future__ import annotations

import atexit
import csv
import dataclasses
import hashlib
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray

from littlestone.adversaries.base import ADVERSARIES, Adversary, register
from littlestone.games import commitment
from littlestone.games.classes import make_class
from littlestone.games.errors import SpecError
from littlestone.games.game import (
    EXPERTS,
    MISTAKE_BOUND,
    ExpertsRecord,
    GameResult,
    GameSpec,
    RoundRecord,
    public_key,
)
from littlestone.learners.base import LEARNERS, Learner
from littlestone.local import play
from littlestone.server.records.anchors import anchoring
from littlestone.server.records.logged import package_version
from littlestone.server.records.logs import ForeignLog, GameLogData, LogError, checked, read_log
from littlestone.server.records.store import DEFAULT_DATA, INDEX_NAME, Store, is_index
from littlestone.server.records.strangers import agent_spec, rules_of

__all__ = ["Replay", "VerifyReport", "against", "export", "filled", "game_spec", "is_compact",
           "locate", "plot", "resolve", "verify"]


def locate(log_or_id: str, data: str | Path = DEFAULT_DATA) -> tuple[Path, str | None]:
    """The log file named by a path, or by a game id in the data folder's index (then
    with that id, which :func:`verify` anchors it to). The index and SQLite's files
    beside it are refused (:class:`.logs.ForeignLog`) before anything opens them."""
    path = Path(log_or_id)
    if is_index(path):
        raise ForeignLog(f"{path} is the SQLite index, not a game log")
    if path.is_file():
        return path, None
    if (Path(data) / INDEX_NAME).is_file():
        store = Store(Path(data))
        try:
            row = store.game(log_or_id)
        finally:
            store.close()
        if row is not None:
            logged = Path(row["log"]) if row.get("log") else None
            if logged is not None and is_index(logged):
                raise ForeignLog(f"game {log_or_id}: its log {logged} is the SQLite index, "
                                 "not a game log")
            if logged is not None and logged.is_file():
                return logged, log_or_id
            if logged is None:
                raise LogError(f"game {log_or_id} was played with log level none: it has no "
                               "log (littlestone games --json shows its index row)")
            raise LogError(f"game {log_or_id}: its log {row.get('log')!r} is missing")
    raise LogError(f"no log file or game id {log_or_id!r} (data folder {data})")


def resolve(log_or_id: str, data: str | Path = DEFAULT_DATA) -> Path:
    """The log file named by a path or by a game id in the data folder's index
    (:func:`locate`)."""
    return locate(log_or_id, data)[0]


def game_spec(log: GameLogData, anchored: bool = True) -> GameSpec:
    """The rules of a logged game (``anchored`` False: within the budgets of a log nothing
    anchors, :mod:`.strangers`)."""
    return rules_of(log.header, anchored)


def _anchored(log: GameLogData, data: str | Path | None, game_id: str | None) -> bool:
    return anchoring(log, data, game_id).anchored is True


@dataclass
class VerifyReport:
    """What ``replay --verify`` found. ``ok`` when everything held: the records (re-simulated
    and equal, or for a game with a remote player, which cannot be re-simulated, whole)
    and the anchor (the index row of the game holds this log's final digest)."""

    ok: bool
    message: str
    rounds_checked: int
    #: As :attr:`.anchors.Anchoring.anchored` (None: nothing anchors the log).
    anchored: bool | None = None
    #: The records alone hold, whatever the index says.
    records_ok: bool = False


class _Differs(BaseException):
    """Raised from inside the re-simulated game at the first record that differs (a
    BaseException, so that the driver does not take it for a player's crash)."""

    def __init__(self, t: int, what: str) -> None:
        super().__init__(f"round {t} differs: {what}")
        self.t = t


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is not None and b is not None and np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, float) or isinstance(b, float):
        return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))
    return bool(a == b)


_COMPARED = {
    RoundRecord: ("t", "x", "p", "y", "prediction", "mistake", "loss", "mistakes",
                  "expected_mistakes"),
    ExpertsRecord: ("t", "x", "p", "y", "drawn", "loss", "expected_loss", "regret",
                    "expected_regret"),
}


def game_key(log: GameLogData) -> bytes:
    """The key the game's seeds derive from: revealed in the footer and checked against
    the SHA-256 in the header; a game without a footer can be re-derived only if its
    key was the public one of its seed (``play``). LogError when it cannot be had."""
    promised = log.header.get("key_sha256")
    if not isinstance(promised, str):
        raise LogError("the log names no game key (written before littlestone 0.3): "
                       "re-simulate it with the version that wrote it")
    revealed = (log.footer or {}).get("key")
    if revealed is None:
        key = public_key(int(log.header["seed"]))
        if hashlib.sha256(key).hexdigest() != promised:
            raise LogError("the game ended before its key was revealed: its seeds and coin "
                           "cannot be re-derived")
        return key
    try:
        key = bytes.fromhex(str(revealed))
    except ValueError:
        raise LogError("the footer's game key is not hexadecimal") from None
    if hashlib.sha256(key).hexdigest() != promised:
        raise LogError("the game key in the footer does not match the SHA-256 the header "
                       "committed to")
    return key


def verify(log: GameLogData, data: str | Path | None = None, game_id: str | None = None
           ) -> VerifyReport:
    """Check a log three ways: its hash chain (checked when it was read), its anchor (the
    index row of its game, :func:`.anchors.anchoring`; ``data`` and ``game_id`` as there) and the
    re-simulation of the game from its seeds with the same agents, record by record (not
    for a game with a remote player, whose moves came over the wire). Not ok unless all
    hold: a log nothing anchors is not verified, however well it re-simulates."""
    anchor = anchoring(checked(log), data, game_id)
    records = _records(log, anchor.anchored is True)
    parts = [records.message]
    if anchor.anchored is True and records.ok:
        parts.append(anchor.message)
    elif anchor.anchored is not True:
        parts.insert(0, anchor.message)
    return VerifyReport(records.ok and anchor.anchored is True, "; ".join(parts),
                        records.rounds_checked, anchor.anchored, records.ok)


def _records(log: GameLogData, anchored: bool) -> VerifyReport:
    """The records alone: re-simulated and compared (or, remote, whole)."""
    remote = [r for r in ("learner", "adversary")
              if str(log.header[r]["spec"]).startswith("remote:")]
    if remote:  # its moves came over the wire: only the hash chain can vouch for them
        return VerifyReport(log.footer is not None,
                            f"the hash chain of all {log.n_rounds} rounds is intact; the "
                            f"{' and '.join(remote)} played remotely, so the game cannot be "
                            "re-simulated" + ("" if log.footer else " (and the log is "
                                              "incomplete)"), log.n_rounds)
    try:
        spec = game_spec(log, anchored)
        learner, adversary = _agents(log, anchored)
    except LogError as exc:
        return VerifyReport(False, str(exc), 0)
    if is_compact(log):
        return _compact_records(log, spec, learner, adversary)
    logged = log.records()
    checked = 0

    def compare(record: Any) -> None:
        nonlocal checked
        expected = next(logged, None)
        if expected is None:
            raise _Differs(record.t, "the log ends before it")
        for name in _COMPARED[type(record)]:
            if not _same(getattr(record, name), getattr(expected, name)):
                raise _Differs(record.t, f"{name} is {getattr(expected, name)!r} in the log, "
                               f"{getattr(record, name)!r} when replayed")
        if isinstance(record, ExpertsRecord):
            stored = log.expert_rounds[record.t - 1]
            for name in ("advice", "weights", "costs"):
                value = getattr(record, name)
                if name in stored and not _same(value, stored[name]):
                    raise _Differs(record.t, f"{name} differs")
        checked += 1

    try:
        key_of_game = game_key(log)
    except LogError as exc:
        return VerifyReport(False, str(exc), 0)
    try:
        result = play(spec, learner, adversary, int(log.header["seed"]), on_record=compare,
                      key=key_of_game)
    except _Differs as exc:
        why, written_by = str(exc), log.header.get("package")
        if written_by is not None and written_by != package_version():
            why += (f" (the log was written by littlestone {written_by}, this is "
                    f"{package_version()}: re-simulate with the version that wrote it)")
        return VerifyReport(False, why, exc.t - 1)
    if log.footer is None:
        return VerifyReport(False, f"the log is incomplete (no footer): the {checked} rounds it "
                            "holds match the re-simulation", checked)
    if checked != log.n_rounds:
        return VerifyReport(False, f"the log holds {log.n_rounds} rounds, the replay "
                            f"{checked}", checked)
    differs = _result_differs(log.footer, result, "log", "replayed")
    if differs is not None:
        return VerifyReport(False, differs, checked)
    return VerifyReport(True, f"all {checked} rounds and the result match", checked)


#: What every footer's result holds (a footer without one of them hides it: no match).
_REQUIRED = ("status", "rounds", "mistakes", "expected_mistakes", "regret", "expected_regret")


def _result_differs(footer: dict[str, Any], result: GameResult, where: str, how: str
                    ) -> str | None:
    """The first way the footer says otherwise than the re-simulated result, or None."""
    logged = footer.get("result") or {}
    for key, value in result.to_dict().items():
        if key not in logged and key in _REQUIRED:
            return f"the result's {key} is missing from the {where}, {value!r} when {how}"
        if key in logged and not _same(logged[key], value):
            return f"the result's {key} is {logged[key]!r} in the {where}, {value!r} when {how}"
    status = footer.get("status")
    if status != result.status:
        return f"the status is {status!r} in the {where}, {result.status!r} when {how}"
    return None


def _agents(log: GameLogData, anchored: bool) -> tuple[Learner, Adversary]:
    """The logged game's agents, made again from their specs; LogError when a file agent
    changed since the game (its re-simulation would be another game; checked before the
    file is imported) or the log may not have them built (:func:`.strangers.agent_spec`)."""
    agents = []
    for role, registry in (("learner", LEARNERS), ("adversary", ADVERSARIES)):
        info = log.header[role]
        agents.append(registry.make(agent_spec(log.header, role, info, anchored)))
    learner, adversary = agents
    assert isinstance(learner, Learner) and isinstance(adversary, Adversary)
    return learner, adversary


def is_compact(log: GameLogData) -> bool:
    """Whether the log keeps no rounds (log level ``compact``): :func:`filled` re-derives
    them."""
    return log.header.get("log_level") == "compact"


def _resimulated(log: GameLogData, spec: GameSpec, learner: Learner, adversary: Adversary
                 ) -> tuple[GameResult, list[Any]]:
    kept: list[Any] = []
    result = play(spec, learner, adversary, int(log.header["seed"]), on_record=kept.append,
                  key=game_key(log))
    return result, kept


def filled(log: GameLogData, data: str | Path | None = None, game_id: str | None = None
           ) -> GameLogData:
    """The log with its rounds: a compact log's re-derived by re-simulating the game from
    its seeds and revealed key with the same agents (LogError when that cannot be done:
    a remote player, a changed agent file, a log nothing anchors asking beyond a peer's
    budgets; ``data`` and ``game_id`` as :func:`verify`'s); any other log as it is."""
    if not is_compact(log) or log.n_rounds:
        return log
    if any(str(log.header[r]["spec"]).startswith("remote:") for r in ("learner", "adversary")):
        raise LogError("a compact log of a game with a remote player keeps no moves to show")
    anchored = _anchored(log, data, game_id)
    spec = game_spec(log, anchored)
    learner, adversary = _agents(log, anchored)
    _, kept = _resimulated(log, spec, learner, adversary)
    logged_rounds = ((log.footer or {}).get("result") or {}).get("rounds", len(kept))
    if logged_rounds != len(kept):
        raise LogError(f"re-simulating the compact log gives {len(kept)} rounds, its footer "
                       f"{logged_rounds}")
    if log.header["rules"]["game"] == EXPERTS:
        rounds = [{k: v for k, v in r._asdict().items() if v is not None} for r in kept]
        return dataclasses.replace(log, expert_rounds=rounds)
    columns = {"x": [r.x for r in kept], "p": np.array([r.p for r in kept], dtype=np.float64),
               "y": np.array([r.y for r in kept], dtype=np.int8),
               "prediction": np.array([r.prediction for r in kept], dtype=np.int8)}
    return dataclasses.replace(log, columns=columns)


def _compact_records(log: GameLogData, spec: GameSpec, learner: Learner, adversary: Adversary
                     ) -> VerifyReport:
    """A compact log holds no rounds: its re-simulation's result against its footer."""
    try:
        result, kept = _resimulated(log, spec, learner, adversary)
    except LogError as exc:
        return VerifyReport(False, str(exc), 0)
    if log.footer is None:
        return VerifyReport(False, "the compact log is incomplete (no footer)", 0)
    differs = _result_differs(log.footer, result, "compact log", "re-simulated")
    if differs is not None:
        return VerifyReport(False, differs, 0)
    return VerifyReport(True, f"compact log: the game re-simulated from its seeds ({len(kept)} "
                        "rounds) gives the result its footer holds", len(kept))


def against(log: GameLogData, learner_spec: str, data: str | Path | None = None,
            game_id: str | None = None) -> tuple[GameResult, GameResult]:
    """The logged game's result, and another learner's on the same logged sequence."""
    spec = game_spec(log, _anchored(log, data, game_id))
    log = filled(log, data, game_id)
    if log.footer is None:
        raise LogError("the log is incomplete: nothing to compare with")
    original = GameResult(**{k: v for k, v in log.footer["result"].items()
                             if k in GameResult.__dataclass_fields__ and k != "bound"})
    rounds = log.n_rounds
    spec = GameSpec(spec.game, rounds, spec.hclass, spec.experts, spec.horizon_known)
    result = play(spec, LEARNERS.make(learner_spec), Replay.from_log(log),
                  int(log.header["seed"]), key=game_key(log))
    return original, result


def rows(log: GameLogData) -> Iterator[dict[str, Any]]:
    """Every round as a flat dict of JSON-ready values (vectors as lists)."""
    for record in log.records():
        row = {}
        for name, value in zip(record._fields, record, strict=True):
            if isinstance(value, np.ndarray):
                value = value.tolist()
            elif isinstance(value, np.generic):
                value = value.item()
            row[name] = value
        yield row


def export(log: GameLogData, fmt: str, out: TextIO) -> int:
    """Write every round as CSV or JSON lines; returns the number of rounds."""
    count = 0
    writer: csv.DictWriter[str] | None = None
    for row in rows(log):
        if fmt == "jsonl":
            out.write(json.dumps(row) + "\n")
        else:
            flat = {k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()}
            if writer is None:
                writer = csv.DictWriter(out, fieldnames=list(flat), lineterminator="\n")
                writer.writeheader()
            writer.writerow(flat)
        count += 1
    return count


def plot(log: GameLogData, path: str) -> None:
    """Cumulative mistakes (mistake-bound) or regret (experts) per round, with the
    learner's bound, and sqrt(2 t ln d) in the experts game."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SpecError("--plot needs matplotlib: pip install 'littlestone[plot]'") from None
    records = list(log.records())
    t = np.arange(1, len(records) + 1)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    result = (log.footer or {}).get("result", {})
    title = f"{log.header['learner']['spec']} vs {log.header['adversary']['spec']}"
    experts = [r for r in records if isinstance(r, ExpertsRecord)]
    rounds = [r for r in records if isinstance(r, RoundRecord)]
    if log.header["rules"]["game"] == EXPERTS:
        ax.plot(t, [r.regret for r in experts], label="regret", lw=1)
        ax.plot(t, [r.expected_regret for r in experts], label="expected regret", lw=1.5)
        d = log.header["rules"].get("experts") or 2
        ax.plot(t, np.sqrt(2 * t * math.log(max(d, 2))), "--", label="sqrt(2 t ln d)")
        ax.set_ylabel("regret")
    else:
        ax.step(t, [r.mistakes for r in rounds], where="post", label="mistakes")
        ax.plot(t, [r.expected_mistakes for r in rounds], lw=1, label="expected mistakes")
        ax.set_ylabel("cumulative mistakes")
    if result.get("bound") is not None:
        ax.axhline(float(result["bound"]), color="crimson", ls=":",
                   label=f"bound: {result.get('bound_name', '')}"[:60])
    ax.set_xlabel("round t")
    ax.set_title(f"{title}\n{log.header['rules'].get('class') or ''}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


#: The log of the replay adversary's example (the check suite's), made once a process.
_EXAMPLE: Path | None = None


@register
class Replay(Adversary):
    """Plays back the instances and labels of a logged game, in order (oblivious).

    ``log`` is a log file or a game id of the ``data`` folder. It plays the game the log
    holds (same game, same class, at most as many rounds). In the experts game it commits
    to its whole sequence before round 1 (games.commitment.SequenceHash); in the
    mistake-bound game the referee's version space checks that the sequence is
    realizable. Free-experts logs replay only when their advice and costs were stored in
    full (at most :data:`.logs.FULL_ARRAYS_MAX` experts).

    >>> Replay.id
    'replay'
    """

    id = "replay"
    games = frozenset({MISTAKE_BOUND, EXPERTS})
    file_params = frozenset({"log", "data"})
    served = False  # it reads a log named by its spec
    oblivious = True

    def __init__(self, log: str = "", data: str = DEFAULT_DATA) -> None:
        self.log, self.data = log, data
        if not log:
            raise ValueError("name the game to replay: replay:log=FILE_OR_GAME_ID")
        try:
            path, game_id = locate(log, data)
            self._data = filled(checked(read_log(path)), data, game_id)
        except (LogError, OSError) as exc:
            raise SpecError(f"replay: {exc}") from None
        self._load()

    @classmethod
    def from_log(cls, log: GameLogData) -> Replay:
        replay = cls.__new__(cls)
        replay.log, replay.data, replay._data = str(log.path), DEFAULT_DATA, log
        replay._load()
        return replay

    @classmethod
    def example(cls) -> Replay:
        """A replay of a short logged game (for the generic check suite)."""
        import tempfile

        from littlestone.adversaries import ADVERSARIES as adversaries
        from littlestone.server.records.logged import play_logged
        from littlestone.testing import CHECK_ROUNDS

        global _EXAMPLE
        if _EXAMPLE is None or not _EXAMPLE.exists():  # one a process, removed at its exit
            folder = tempfile.TemporaryDirectory(prefix="littlestone-replay-")
            atexit.register(folder.cleanup)
            game = GameSpec(MISTAKE_BOUND, CHECK_ROUNDS, make_class("thresholds:n=32"))
            _EXAMPLE = play_logged(game, LEARNERS.make("halving"),
                                   adversaries.make("random-target"), 0, Path(folder.name)).log
        return cls(log=str(_EXAMPLE))

    def _load(self) -> None:
        data = self._data
        self._rules = data.header["rules"]
        if data.expert_rounds:
            self._xs: list[Any] = [r.get("x") for r in data.expert_rounds]
            self._ys: list[Any] = [r.get("y") for r in data.expert_rounds]
        else:
            self._xs = list(data.columns.get("x", []))
            self._ys = [int(y) for y in data.columns.get("y", [])]
        self._t = 0
        self._salt = b""
        self._digest: bytes | None = None

    def unsupported(self, game: GameSpec) -> str | None:
        rules = self._rules
        if game.game != rules["game"]:
            return f"the log holds a {rules['game']} game"
        logged_class = rules.get("class")
        if (game.hclass.spec if game.hclass else None) != logged_class:
            return f"the log's class is {logged_class}"
        if game.experts != rules.get("experts") and game.hclass is None:
            return f"the log's game has {rules.get('experts')} experts"
        if game.rounds > len(self._ys):
            return f"the log holds {len(self._ys)} rounds, fewer than {game.rounds}"
        if game.game == EXPERTS and game.hclass is None and self._data.expert_rounds and (
            "costs" not in self._data.expert_rounds[0]
        ):
            return "the log keeps only digests of its costs (too many experts to replay)"
        return super().unsupported(game)

    def reset(self, game: GameSpec, seed: int) -> None:
        self._t = 0
        self._salt = np.random.default_rng(seed).bytes(commitment.MIN_SALT_BYTES)
        self._digest = None
        if game.game == EXPERTS:
            spec = game.hclass.spec if game.hclass is not None else f"experts:d={game.experts}"
            sequence = commitment.SequenceHash(spec)
            for t in range(game.rounds):
                row = self._data.expert_rounds[t]
                if game.hclass is not None:
                    sequence.add(int(row["x"]))
                elif "advice" in row:
                    sequence.add_advice(np.asarray(row["advice"]))
                sequence.add(row["y"] if row.get("y") is not None else np.asarray(row["costs"]))
            self._digest = sequence.digest(self._salt)

    def commitment(self) -> bytes | None:
        return self._digest

    def reveal(self) -> tuple[Any, bytes] | None:
        if self._digest is not None:
            return None, self._salt
        revealed = (self._data.footer or {}).get("revealed")
        if revealed is not None:  # the original adversary's target: a witness here
            return (np.asarray(revealed) if isinstance(revealed, list) else revealed), b""
        return None

    def instance(self) -> Any:
        self._t += 1
        return self._xs[self._t - 1]

    def label(self, x: Any, p: float) -> int:
        return int(self._ys[self._t - 1])

    def moves(self, n: int) -> tuple[Any, list[int]] | None:
        if self._rules["game"] != MISTAKE_BOUND or self._t >= len(self._ys):
            return None
        end = min(self._t + n, len(self._ys))
        xs = self._xs[self._t : end]
        block = (np.asarray(xs) if xs and isinstance(xs[0], np.ndarray) else xs,
                 self._ys[self._t : end])
        self._t = end
        return block

    def advice(self) -> NDArray[np.float64] | None:
        self._t += 1
        row = self._data.expert_rounds[self._t - 1]
        return np.asarray(row["advice"]) if "advice" in row else None

    def costs(self, answer: Any) -> NDArray[np.float64] | int:
        row = self._data.expert_rounds[self._t - 1]
        if row.get("y") is not None:
            return int(row["y"])
        return np.asarray(row["costs"])


def summary_table(log: GameLogData) -> str:
    """The header and the result as aligned lines."""
    head = log.header
    lines = {
        "game_id": head.get("game_id"), "game": head["rules"]["game"],
        "class": head["rules"].get("class"), "learner": head["learner"]["spec"],
        "adversary": head["adversary"]["spec"], "seed": head.get("seed"),
        "horizon": head["rules"]["rounds"], "rounds logged": log.n_rounds,
        "log level": head.get("log_level", "full"),
        "status": log.status, "log": str(log.path), "bytes": log.size,
    }
    lines.update((log.footer or {}).get("result", {}))
    width = max(len(k) for k in lines)
    out = io.StringIO()
    for key, value in lines.items():
        out.write(f"{key:<{width}}  {value:.6g}\n" if isinstance(value, float)
                  else f"{key:<{width}}  {value}\n")
    return out.getvalue()

