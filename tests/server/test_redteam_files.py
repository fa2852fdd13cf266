"""Red team: what a hostile *file* can do to the one who opens it.

A log a stranger sends a teacher (``replay``, ``replay --verify``, ``--against``), a
tournament submission (a student's Python file) and a tournament config. Each test tries
one attack through the real command line (a subprocess of ``python -m littlestone``)
and asserts that it fails cleanly: one line and a documented exit status, never a
traceback, a hang or code run that nobody chose to run. A forged log keeps a valid hash
chain (the chain has no key: anybody recomputes it), so it is read as data.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.cli import main
from littlestone.games.classes import make_class
from littlestone.games.game import GameSpec
from littlestone.learners import LEARNERS
from littlestone.server.records.logged import play_logged
from littlestone.server.records.logs import MAGIC
from littlestone.server.records.store import Store
from tests.support import ROOT

# -- running the command line -------------------------------------------------------------


def cli(*args: str | Path, timeout: float = 60, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m littlestone ARGS`` as a user runs it (bytes: names need not be UTF-8)."""
    return subprocess.run([sys.executable, "-m", "littlestone", *map(os.fsencode, args)],
                          capture_output=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})


def one_line(run: subprocess.CompletedProcess[bytes], *statuses: int) -> str:
    """The one line a refusal prints on stderr, checked: a documented exit status, no
    traceback, no internal error, no control code for the terminal to obey."""
    err = run.stderr.decode(errors="replace")
    assert run.returncode in statuses, (run.returncode, err, run.stdout[-400:])
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert b"\x1b" not in run.stderr and b"\x1b" not in run.stdout
    return err.strip()


# -- forging logs ---------------------------------------------------------------------------


def frames(path: Path) -> list[list[Any]]:
    """A log's frames as [header map, [buffer bytes...]], to edit and forge again."""
    data, offset, out = path.read_bytes(), len(MAGIC), []
    while offset < len(data):
        n = int.from_bytes(data[offset:offset + 4], "little")
        head = msgpack.unpackb(data[offset + 4:offset + 4 + n])
        offset += 4 + n
        buffers = []
        for _, dtype, shape in head["buffers"]:
            size = int(np.prod(shape)) * np.dtype(dtype).itemsize
            buffers.append(data[offset:offset + size])
            offset += size
        offset += 32
        out.append([head, buffers])
    return out


def packed_frame(chain: bytes, packed: bytes, buffers: Sequence[bytes] = ()) -> tuple[bytes, bytes]:
    pieces = [len(packed).to_bytes(4, "little"), packed, *buffers]
    digest = hashlib.sha256(chain + b"".join(pieces)).digest()
    return b"".join(pieces) + digest, digest


def forge(path: Path, heads: list[list[Any]], raw: Sequence[bytes] = ()) -> Path:
    """Write ``heads`` as a log whose hash chain holds (``raw``: frames' msgpack bytes as
    they are, after them)."""
    chain, out = hashlib.sha256(MAGIC).digest(), [MAGIC]
    for head, buffers in heads:
        data, chain = packed_frame(chain, msgpack.packb(head, use_bin_type=True), buffers)
        out.append(data)
    for packed in raw:
        data, chain = packed_frame(chain, packed)
        out.append(data)
    path.write_bytes(b"".join(out))
    return path


@pytest.fixture(scope="module")
def genuine(tmp_path_factory) -> Path:
    """An honest 50-round log, played and anchored in its own data folder."""
    data = tmp_path_factory.mktemp("genuine")
    game = GameSpec("mistake-bound", 50, make_class("thresholds:n=15"))
    done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 1,
                       data)
    assert done.log is not None
    return done.log


def edited(genuine: Path, tmp_path: Path, name: str, edit) -> Path:
    """A stranger's copy of the genuine log, edited by ``edit(frames)``, chain recomputed."""
    heads = copy.deepcopy(frames(genuine))
    edit(heads)
    return forge(tmp_path / f"{name}.lslog", heads)


# -- logs: what the file is -----------------------------------------------------------------


@pytest.mark.slow
def test_a_truncated_log_reads_as_incomplete_in_one_line(genuine, tmp_path):
    cut = tmp_path / "cut.lslog"
    cut.write_bytes(genuine.read_bytes()[:-100])  # inside the footer
    assert "is incomplete" in one_line(cli("replay", cut), 5)
    run = cli("replay", cut, "--verify")
    assert run.returncode == 1 and b"incomplete" in run.stdout


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "index-symlink", "dotdot"])
def test_a_log_path_that_is_no_log_file_is_refused_without_opening_it(genuine, tmp_path, kind):
    """A FIFO would block a reader forever, /dev/zero never ends; the index must never be
    opened by a reader (SQLite's locks); none is read."""
    if kind == "fifo":
        path = tmp_path / "game.lslog"
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "directory":
        path = tmp_path / "folder.lslog"
        path.mkdir()
    elif kind == "index-symlink":
        path = tmp_path / "innocent.lslog"
        path.symlink_to(genuine.parent.parent / "littlestone.db")
    else:
        path = Path(f"{tmp_path}/../{tmp_path.name}/../{tmp_path.name}")
    run = cli("replay", path, "--verify", timeout=30)
    one_line(run, 2, 3)


def test_a_log_name_with_control_codes_is_shown_escaped(tmp_path):
    named = tmp_path / "\x1b]0;owned\x07\x1b[2Jgame.lslog"
    named.write_bytes(b"not a log at all")
    assert "\\x1b[2J" in one_line(cli("replay", named), 3)


@pytest.mark.slow
def test_a_log_name_that_is_not_utf8_is_replayed(genuine, tmp_path):
    named = Path(os.fsdecode(bytes(tmp_path) + b"/\xff\xfe.lslog"))
    named.write_bytes(genuine.read_bytes())
    run = cli("replay", named)
    assert run.returncode == 0, run.stderr
    run = cli("replay", named, "--verify")
    assert run.returncode == 1 and run.stdout.startswith(b"not anchored:"), run.stdout


# -- logs: what the frames say --------------------------------------------------------------


def _pop(key: str):
    return lambda fr: fr[0][0].pop(key)


def _set(key: str, value: Any, frame: int = 0):
    return lambda fr: fr[frame][0].__setitem__(key, value)


def _rules(key: str, value: Any):
    return lambda fr: fr[0][0]["rules"].__setitem__(key, value)


MALFORMED = {
    "no rules": _pop("rules"),
    "rules a list": _set("rules", [1]),
    "no learner": _pop("learner"),
    "learner a string": _set("learner", "halving"),
    "seed a string": _set("seed", "abc"),
    "seed past 64 bits": _set("seed", 2**64 - 1),
    "negative rounds": _rules("rounds", -5),
    "unknown game": _rules("game", "chess"),
    "rounds without buffers": lambda fr: fr[1].__setitem__(1, []) or _set("buffers", [], 1)(fr),
    "object buffer": lambda fr: fr[1][0]["buffers"][0].__setitem__(1, "|O"),
    "an experts round in a mistake-bound log": lambda fr: fr.insert(
        2, [{"kind": "expert", "t": 1, "buffers": []}, []]),
    "footer result a list": _set("result", [1, 2], 2),
    "footer bound a string": lambda fr: fr[2][0]["result"].__setitem__("bound", "abc"),
    "footer mistakes a string": lambda fr: fr[2][0]["result"].__setitem__("mistakes", "x"),
    "two footers": lambda fr: fr.append(copy.deepcopy(fr[2])),
}


#: The cases also run as a user runs them (the others through main() in process: a
#: subprocess costs half a second).
THROUGH_A_PROCESS = {"no rules", "object buffer", "two footers", "footer mistakes a string"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_frame_with_a_valid_chain_is_one_line(genuine, tmp_path, name, capsys):
    """Each used to end in ``internal error: KeyError`` (or TypeError, ValueError), exit 1."""
    log = edited(genuine, tmp_path, name.replace(" ", "-"), MALFORMED[name])
    if name in THROUGH_A_PROCESS:
        one_line(cli("replay", log, "--verify"), 1, 3, 4)
    for args in ([log, "--verify"], [log], [log, "--export", "jsonl"], [log, "--against", "soa"],
                 [log, "--plot", str(tmp_path / "p.png")]):  # (the same main(), in process)
        assert main(["replay", *map(str, args)]) in (1, 3, 4)
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "internal" not in err, err


@pytest.mark.slow
def test_csv_export_is_csv_for_pandas(genuine):
    """Found on the way: stdout escapes control codes, and the csv module ends its lines
    with \\r\\n, so every exported line ended with a literal '\\x0d' (the last column read
    as text)."""
    import csv

    run = cli("replay", genuine, "--export", "csv")
    assert run.returncode == 0 and b"\\x0d" not in run.stdout
    rows = list(csv.DictReader(io.StringIO(run.stdout.decode())))
    assert len(rows) == 50 and float(rows[-1]["expected_mistakes"]) >= 0


@pytest.mark.slow
def test_a_msgpack_bomb_is_one_line(genuine, tmp_path):
    """100,000 nested arrays, and a frame that says it is 4 GiB long."""
    header = frames(genuine)[0]
    deep = forge(tmp_path / "deep.lslog", [header], raw=[b"\x91" * 100_000 + b"\xc0"])
    one_line(cli("replay", deep), 4)
    huge = tmp_path / "huge.lslog"
    huge.write_bytes(MAGIC + b"\xff\xff\xff\xff" + b"\x00" * 64)
    one_line(cli("replay", huge), 4)


@pytest.mark.slow
def test_frames_full_of_nothing_do_not_pile_up_in_memory(genuine, tmp_path):
    """msgpack grows a list of nils about tenfold in memory (8 bytes a pointer): 12 experts
    rounds, each carrying 4 MiB of nils under a key of its own, were all kept (400 MB for
    a 48 MB file); a frame's extra fields are kept only when scalar. The reader runs under
    a 400 MiB address-space limit."""
    header = copy.deepcopy(frames(genuine)[0])
    header[0]["rules"] = {"game": "experts", "class": None, "rounds": 12, "experts": 2,
                          "horizon_known": True}
    junk = [None] * (4 << 20)
    rounds = [[{"kind": "expert", "t": t, "p": 0.5, "y": 1, "drawn": 0, "loss": 0.0,
                "expected_loss": 0.5, "regret": 0.0, "expected_regret": 0.5, "junk": junk,
                "buffers": []}, []] for t in range(1, 13)]
    log = forge(tmp_path / "nothing.lslog", [header, *rounds])

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))
    run = subprocess.run([sys.executable, "-m", "littlestone", "replay", str(log), "--page", "1"],
                         capture_output=True, timeout=60, preexec_fn=limited)
    assert "is incomplete" in one_line(run, 5)  # (no footer), read whole


@pytest.mark.slow
def test_a_buffer_claiming_terabytes_is_not_allocated(genuine, tmp_path):
    """A rounds frame whose buffers claim 10^12 rounds: read as a cut-off tail (the file
    holds no such bytes), never allocated."""
    def claim(fr):
        fr[1][0]["buffers"][0][2] = [10**12]
    log = edited(genuine, tmp_path, "terabytes", claim)
    assert "is incomplete" in one_line(cli("replay", log), 5)


@pytest.mark.slow
def test_a_compact_log_claiming_a_trillion_rounds_is_not_re_simulated(genuine, tmp_path):
    def compact(fr):
        fr[0][0]["log_level"] = "compact"
        fr[0][0]["rules"]["rounds"] = 10**12
        del fr[1]
    log = edited(genuine, tmp_path, "trillion", compact)
    assert "at most" in one_line(cli("replay", log, timeout=30), 2)
    run = cli("replay", log, "--verify", timeout=30)
    assert run.returncode == 1 and b"1000000000000 rounds" in run.stdout, run.stdout


@pytest.mark.slow
def test_a_log_naming_a_file_on_disk_never_has_it_opened(genuine, tmp_path):
    """A class read from a file (a FIFO: a reader would block) named by a stranger's log."""
    fifo = tmp_path / "class.csv"
    os.mkfifo(fifo)
    log = edited(genuine, tmp_path, "matrix", _rules("class", f"matrix:path={fifo}"))
    run = cli("replay", log, "--verify", timeout=30)
    assert run.returncode == 1 and b"not served" in run.stdout, run.stdout


PAYLOAD = '''
from collections.abc import Sequence
from pathlib import Path
Path(__file__).with_name("PWNED").write_text("ran")
from littlestone.learners.halving import Halving
class Evil(Halving):
    pass
'''


@pytest.mark.slow
def test_a_log_naming_a_python_file_never_runs_it(genuine, tmp_path):
    """A stranger's log whose learner is ``payload.py:Evil`` (a file shipped beside it,
    or any file on the teacher's disk): verifying or replaying it imports nothing."""
    payload = tmp_path / "payload.py"
    payload.write_text(PAYLOAD)
    sha = hashlib.sha256(payload.read_bytes()).hexdigest()

    def name_it(fr):
        fr[0][0]["learner"] = {"spec": f"{payload}:Evil", "file": str(payload), "sha256": sha}
    full = edited(genuine, tmp_path, "file-agent", name_it)
    run = cli("replay", full, "--verify")
    assert run.returncode == 1 and b"file agent" in run.stdout, run.stdout

    def compact(fr):
        name_it(fr)
        fr[0][0]["log_level"] = "compact"
        del fr[1]
    log = edited(genuine, tmp_path, "file-agent-compact", compact)
    assert "file agent" in one_line(cli("replay", log), 2)
    one_line(cli("replay", log, "--against", "soa"), 2)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.slow
def test_a_changed_agent_file_is_refused_before_it_is_imported(tmp_path):
    """An anchored game of a file agent, whose file was then replaced: ``--verify`` says so
    without running the new file (it used to import it, then compare the hashes)."""
    agent = tmp_path / "mine.py"
    agent.write_text("from littlestone.learners.halving import Halving\n"
                     "class Mine(Halving):\n    pass\n")
    data = tmp_path / "data"
    run = cli("play", "--learner", f"{agent}:Mine", "--adversary", "random-target", "--class",
              "thresholds:n=7", "--rounds", "20", "--data", data, "--json")
    assert run.returncode == 0, run.stderr
    game_id = json.loads(run.stdout.splitlines()[-1])["game_id"]
    assert cli("replay", game_id, "--verify", "--data", data).returncode == 0
    agent.write_text(PAYLOAD.replace("Evil", "Mine"))
    run = cli("replay", game_id, "--verify", "--data", data)
    assert run.returncode == 1 and b"changed since the game" in run.stdout, run.stdout
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.slow
@pytest.mark.parametrize("lie", ["status", "mistakes"])
def test_a_footer_that_hides_the_result_does_not_verify(genuine, tmp_path, lie):
    """A footer that drops the result's keys (the old check compared only the keys it
    found) or states another status: the records no longer 'match'."""
    def hide(fr):
        if lie == "status":
            fr[2][0]["status"] = "rule_violation:adversary:commitment"
            fr[2][0]["result"].pop("status")
        else:
            fr[2][0]["result"].pop("mistakes")
    log = edited(genuine, tmp_path, f"lie-{lie}", hide)
    run = cli("replay", log, "--verify", "--json")
    report = json.loads(run.stdout)
    assert run.returncode == 1 and report["records_ok"] is False, report
    assert lie in report["message"]


@pytest.mark.slow
def test_bytes_appended_after_the_footer_do_not_verify(tmp_path):
    """A cut-off frame's worth of bytes after the footer used to be dropped as a torn
    write: the log read as whole and verified, anchored, with bytes nobody wrote."""
    data = tmp_path / "data"
    game = GameSpec("mistake-bound", 20, make_class("thresholds:n=15"))
    done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 2,
                       data)
    assert done.log is not None
    assert cli("replay", done.game_id, "--data", data, "--verify").returncode == 0
    with open(done.log, "ab") as log:
        log.write(b"\x40\x00\x00\x00" + b"anything the sender likes")
    assert "corrupted" in one_line(cli("replay", done.game_id, "--data", data, "--verify"), 1)


@pytest.mark.slow
def test_a_forged_game_key_does_not_verify(genuine, tmp_path):
    """The footer reveals a key the header did not commit to."""
    log = edited(genuine, tmp_path, "key", _set("key", "00" * 32, 2))
    run = cli("replay", log, "--verify")
    assert run.returncode == 1 and b"does not match the SHA-256" in run.stdout, run.stdout


@pytest.mark.slow
def test_a_game_played_under_a_chosen_key_does_not_pass_for_the_teachers(genuine, tmp_path):
    """The stranger plays at home under a key of their choosing (ground for luck), takes
    the id of a game of the teacher's and drops the log in the teacher's folder: it
    re-simulates perfectly, and fails its anchor."""
    home = tmp_path / "home"
    game = GameSpec("mistake-bound", 50, make_class("thresholds:n=15"))
    done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 1,
                       home, key=b"\x01" * 32)
    assert done.log is not None
    teacher = frames(genuine)[0][0]["game_id"]
    heads = frames(done.log)
    heads[0][0]["game_id"] = teacher
    target = genuine.parent / "swapped.lslog"
    forge(target, heads)
    try:
        run = cli("replay", target, "--verify")
    finally:
        target.unlink()
    assert run.returncode == 1 and run.stdout.startswith(b"differs:"), run.stdout
    assert b"rewritten or replaced" in run.stdout


@pytest.mark.slow
def test_control_codes_inside_a_log_are_shown_escaped(genuine, tmp_path):
    def paint(fr):
        fr[0][0]["game_id"] = "\x1b]0;owned\x07\x1b[2J"
        fr[0][0]["rules"]["class"] = "\x1b[31mthresholds:n=15"
        fr[0][0]["learner"]["spec"] = "halving\x1b[8m"
        fr[2][0]["result"]["bound_name"] = "\x1b[1A\x1b[2Kverified"
    log = edited(genuine, tmp_path, "paint", paint)
    for args in ([log], [log, "--verify"]):
        run = cli("replay", *args)
        assert b"\x1b" not in run.stdout and b"\x1b" not in run.stderr, args
        assert b"Traceback" not in run.stderr and b"\\x1b[2J" in run.stdout + run.stderr


# -- tournament configs ---------------------------------------------------------------------

EXAMPLES = ROOT / "examples"


def tournament_toml(folder: Path, learners: list[str], adversaries: list[str],
                    rounds: int | str = 10, seeds: str = "1",
                    limits: str = "move_deadline = 2.0\ntime_bank = 5.0\n") -> Path:
    path = folder / "t.toml"
    path.write_text(
        f"learners = {json.dumps(learners, ensure_ascii=False)}\n"
        f"adversaries = {json.dumps(adversaries)}\n\n"
        f'[tournament]\nname = "red"\nrounds = {rounds}\nseeds = {seeds}\n'
        'games = ["mistake-bound"]\n\n[[classes]]\nspec = "thresholds:n=15"\n\n'
        "[limits]\n" + limits, encoding="utf-8")
    return path


HOSTILE_CONFIGS = {
    # (each used to end in an internal error, exit 1, or to play on under a NaN deadline
    # that charged every submission with a fault: the student blamed for the config)
    "rounds past 64 bits": ({"rounds": 10**30}, "tournament.rounds"),
    "a seed past 64 bits": ({"seeds": "[18446744073709551616]"}, "tournament.seeds"),
    "memory_mb = inf": ({"limits": "memory_mb = inf\n"}, "limits.memory_mb"),
    "memory_mb = 1.5": ({"limits": "memory_mb = 1.5\n"}, "limits.memory_mb"),
    "cpu_seconds = 1e300": ({"limits": "cpu_seconds = 1e300\n"}, "limits.cpu_seconds"),
    "load_seconds = 0": ({"limits": "load_seconds = 0\n"}, "limits.load_seconds"),
    "output_kb = 1e20": ({"limits": "output_kb = 1e20\n"}, "limits.output_kb"),
    "move_deadline = nan": ({"limits": "move_deadline = nan\n"}, "limits.move_deadline"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_CONFIGS))
def test_a_hostile_tournament_config_is_one_line(tmp_path, name, capsys):
    values, key = HOSTILE_CONFIGS[name]
    (tmp_path / "alice.py").write_text(EXAMPLES.joinpath("minimal_learner.py").read_text())
    config = tournament_toml(tmp_path, ["halving", "alice.py:MajorityVote"], ["random-target"],
                             **values)
    if name == "memory_mb = inf":  # (as a user runs it; the others through main())
        assert key in one_line(cli("tournament", config, "--data", tmp_path / "data"), 2)
    assert main(["tournament", str(config), "--data", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and key in err, err
    assert not (tmp_path / "data" / "littlestone.db").exists()


@pytest.mark.slow
def test_an_entrant_name_that_looks_like_another_is_refused(tmp_path):
    """'аlice.py' with a Cyrillic а (or a zero-width space) would rank beside alice.py
    under the same name."""
    for fake in ("\u0430lice.py:MajorityVote", "alice\u200b.py:MajorityVote"):
        (tmp_path / fake.partition(":")[0]).write_text("")
        config = tournament_toml(tmp_path, ["alice.py:MajorityVote", fake], ["random-target"])
        assert "U+" in one_line(cli("tournament", config, "--data", tmp_path / "data"), 2)
    config = tournament_toml(tmp_path, ["halving", "halving "], ["random-target"])
    assert "space" in one_line(cli("tournament", config, "--data", tmp_path / "data"), 2)


def test_an_entrant_named_twice_plays_and_ranks_once(tmp_path, capsys):
    config = tournament_toml(tmp_path, ["halving", "halving", "soa"], ["random-target"],
                             seeds="[3, 3]")
    assert main(["tournament", str(config), "--data", str(tmp_path / "data"), "--workers", "1",
                 "--json"]) == 0
    board = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert sorted(r["learner"] for r in board["learners"]) == ["halving", "soa"]
    assert board["games"] == 2 and all(r["games"] == 1 for r in board["learners"])


# -- tournament submissions -----------------------------------------------------------------

ENDCRASH = '''
from littlestone.learners.halving import Halving


class EndCrash(Halving):
    """Plays well, and raises in the last round of every game."""

    def reset(self, game, seed):
        super().reset(game, seed)
        self.t, self.horizon = 0, game.rounds

    def predict(self, x):
        self.t += 1
        if self.t == self.horizon:
            raise RuntimeError("spite")
        return super().predict(x)
'''

SPOILER = '''
from littlestone.adversaries.random_target import RandomTarget


class Spoiler(RandomTarget):
    """Labels by a random target, and crashes after the last round of every game: a
    game it chooses to spoil is not scored for the learner that played it."""

    oblivious = False

    def reset(self, game, seed):
        super().reset(game, seed)
        self.t, self.horizon = 0, game.rounds

    def moves(self, n):
        return None

    def label(self, x, p):
        self.t += 1
        if self.t == self.horizon:
            raise RuntimeError("the learner did too well")
        return super().label(x, p)
'''

CLOSER = '''
import os
import socket

from littlestone.learners.halving import Halving


class Closer(Halving):
    """In round 3, closes every socket it holds, opens a new connection to the referee's
    socket and sends it a forged frame, then answers on."""

    def predict(self, x):
        self.t = getattr(self, "t", 0) + 1
        if self.t == 3:
            for fd in os.listdir("/proc/self/fd"):
                try:
                    if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                        os.close(int(fd))
                except OSError:
                    pass
            try:
                again = socket.socket(socket.AF_UNIX)
                again.connect("/run/littlestone.sock")
                again.sendall(b"GET / HTTP/1.1\\r\\n\\r\\n\\x82\\x85forge")
            except OSError:
                pass
        return super().predict(x)
'''

#: A file name a shell would run, starting with a dash an option parser would take.
WEIRD = "-rf $(touch PWNED); `id`.py"


@pytest.fixture(scope="module")
def hostile_tournament(tmp_path_factory):
    """One tournament: honest built-ins, a submission with a shell-hostile name, one that
    crashes at the end of every game, an adversary that spoils every game at its end,
    and entrants that must not load: a symlink to another student's file, a symlink to
    /etc/shadow, a directory, a file that sleeps forever at import."""
    folder = tmp_path_factory.mktemp("submissions")
    honest = EXAMPLES.joinpath("minimal_learner.py").read_text()
    (folder / WEIRD).write_text(honest)
    (folder / "endcrash.py").write_text(ENDCRASH)
    (folder / "spoiler.py").write_text(SPOILER)
    (folder / "closer.py").write_text(CLOSER)
    (folder / "bob.py").symlink_to(folder / WEIRD)
    (folder / "shadow.py").symlink_to("/etc/shadow")
    (folder / "folder.py").mkdir()
    (folder / "sleepy.py").write_text("import time\ntime.sleep(10**6)\n")
    learners = ["halving", f"{WEIRD}:MajorityVote", "endcrash.py:EndCrash", "closer.py:Closer",
                "bob.py:MajorityVote", "shadow.py:X", "folder.py:X", "sleepy.py:X"]
    # (a sleeper costs the time a submission may take to load: 60 s by default; an
    # honest probe, a child of its loaded sandbox, answers in 10-60 ms, loaded or not)
    config = tournament_toml(folder, learners, ["random-target", "spoiler.py:Spoiler"],
                             limits="move_deadline = 2.0\ntime_bank = 5.0\nload_seconds = 1.5\n")
    data = folder / "data"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["tournament", str(config), "--data", str(data), "--workers", "2",
                       "--keep-going", "--json"])
    assert status == 0, err.getvalue()
    board = json.loads(out.getvalue().splitlines()[-1])
    rows = {(r["learner"], r["adversary"]): r for r in Store(data).tournament_games("red")}
    return folder, board, rows


@pytest.mark.xdist_group("hostile_tournament")  # one tournament, built once
@pytest.mark.slow
def test_submissions_that_must_not_load_fail_alone(hostile_tournament):
    folder, board, rows = hostile_tournament
    failed = {f["entrant"]: f["reason"] for f in board["failed_to_load"]}
    assert "symbolic link" in failed["bob.py:MajorityVote"]  # another student's file
    assert "symbolic link" in failed["shadow.py:X"]
    assert "no such file" in failed["folder.py:X"]
    assert "did not load" in failed["sleepy.py:X"]
    for spec in failed:
        assert rows[(spec, "random-target")]["status"] == "load_failed:learner"
    assert not list(folder.rglob("PWNED"))


@pytest.mark.slow
@pytest.mark.xdist_group("hostile_tournament")  # one tournament, built once
def test_a_shell_hostile_file_name_plays_like_any_other(hostile_tournament):
    folder, _, rows = hostile_tournament
    row = rows[(f"{WEIRD}:MajorityVote", "random-target")]
    assert row["status"] == "complete" and row["result"]["rounds"] == 10
    assert not list(folder.rglob("PWNED")) and not Path("PWNED").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("hostile_tournament")  # one tournament, built once
def test_a_learner_that_closes_its_socket_and_reconnects_loses_its_own_game(
        hostile_tournament):
    _, board, rows = hostile_tournament
    row = rows[("closer.py:Closer", "random-target")]
    assert row["status"].endswith(":learner") or ":learner:" in row["status"], row
    assert row["result"]["rounds"] < 10
    assert {r["learner"]: r for r in board["learners"]}["closer.py:Closer"]["failed"] >= 1
    assert rows[(f"{WEIRD}:MajorityVote", "random-target")]["status"] == "complete"


@pytest.mark.slow
@pytest.mark.xdist_group("hostile_tournament")  # one tournament, built once
def test_a_learner_that_crashes_at_the_end_loses_its_own_games_only(hostile_tournament):
    _, board, rows = hostile_tournament
    row = rows[("endcrash.py:EndCrash", "random-target")]
    assert row["status"].split(":")[:2] in (["crash", "learner"], ["disconnected", "learner"])
    by_name = {r["learner"]: r for r in board["learners"]}
    assert by_name["endcrash.py:EndCrash"]["failed"] == 2
    adversary = {r["adversary"]: r for r in board["adversaries"]}["random-target"]
    assert adversary["failed"] == 0 and adversary["unscored"] == 0
    assert rows[("halving", "random-target")]["status"] == "complete"


@pytest.mark.slow
@pytest.mark.xdist_group("hostile_tournament")  # one tournament, built once
def test_an_adversary_that_spoils_its_games_pays_for_it(hostile_tournament):
    _, board, rows = hostile_tournament
    row = rows[("halving", "spoiler.py:Spoiler")]
    assert row["status"].endswith(":adversary") or ":adversary:" in row["status"], row
    spoiler = {r["adversary"]: r for r in board["adversaries"]}["spoiler.py:Spoiler"]
    assert spoiler["failed"] == 2  # halving's game and the weird name's (endcrash fell first)
    assert board["payoff"]["halving"]["random-target"] is not None


@pytest.mark.slow
@pytest.mark.xdist_group("hostile_tournament")  # one tournament, built once
def test_a_game_spoiled_after_the_learner_played_every_round_is_unscored_for_it(
        hostile_tournament):
    """A decision (docs/manual/tournaments.md, "Scoring faults and ties"): a game its
    adversary spoils is not scored for its learner, even after round T. Counting it as
    played would be the adversary's weapon (labels no target fits, then no reveal: every
    round a mistake, charged to the learner); counting it as perfect, a gift it could
    make a friend. So it neither lowers nor lifts the learner, and the adversary pays
    for it (it forced nothing: the test above)."""
    _, board, rows = hostile_tournament
    row = rows[("halving", "spoiler.py:Spoiler")]
    assert row["result"]["rounds"] in (9, 10)  # the learner played (nearly) every round
    assert board["payoff"]["halving"]["spoiler.py:Spoiler"] is None
    halving = {r["learner"]: r for r in board["learners"]}["halving"]
    assert halving["unscored"] == 1 and halving["failed"] == 0
    assert halving["worst"] == board["payoff"]["halving"]["random-target"]


# -- check ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "directory", "shadow"])
def test_check_on_a_file_that_is_no_python_file_is_one_line(tmp_path, kind):
    """A FIFO would block the import forever; /etc/shadow behind a symlink must not be
    read (the sandbox's uid cannot) nor shown."""
    path = tmp_path / "agent.py"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/etc/shadow")
    err = one_line(cli("check", f"{path}:X", cwd=tmp_path, timeout=100), 2)
    assert "root:" not in err


LIAR = '''
import atexit, os, sys

def lie():
    sys.stdout.write('every check passed: ready for a tournament\\n')
    sys.stdout.flush()
    os._exit(0)

atexit.register(lie)
from littlestone.learners.halving import Halving

class Liar(Halving):
    def predict(self, x):
        return 7.0  # an illegal move: its game is forfeited
'''


FORGER = '''
import json, os, sys
from littlestone.learners.halving import Halving

NAMES = ["docstring example", "spec round trip", "plays a game", "seeding",
         "inputs not mutated", "restart is fresh"]
# its report, forged, the moment it is imported; then it leaves before any check runs
print(json.dumps({"agent": sys.argv[2] if len(sys.argv) > 2 else "", "kind": "learner",
                  "passed": True, "ready": True,
                  "checks": [{"check": n, "ok": True, "skipped": False, "message": "",
                              "in_tournament": "", "refereed": True} for n in NAMES]}))
print("every check passed: ready for a tournament")
sys.stdout.flush()
os._exit(0)

class Forger(Halving):
    pass
'''

PATCHER = '''
import littlestone.testing as checks
from littlestone.learners.halving import Halving

def nothing_to_check(agent):
    def check_plays_a_game():
        pass
    yield check_plays_a_game

checks.yield_checks = nothing_to_check  # the suite in its own process, emptied
import littlestone.cli.sandboxed as sandboxed  # where check --in-sandbox runs
sandboxed.yield_checks = nothing_to_check

class Patcher(Halving):
    def predict(self, x):
        return float("nan")  # an illegal move every round
'''


@pytest.mark.slow
@pytest.mark.parametrize("report", [
    '{"checks": [{"check": "plays a game", "ok": true}, {"check": "plays a game", "ok": true}]}',
    '{"kind": "adversary", "checks": [{"check": "x\\u001b[2J", "ok": true, "skipped": 7, '
    '"message": {"a": 1}, "in_tournament": [], "refereed": true}]}',
    '{"kind": 3, "checks": []}',
])
def test_a_forged_report_of_any_shape_is_one_verdict(tmp_path, report):
    """A report the file prints for itself, in odd shapes: rows with only a name and an
    outcome, twice the refereed check, odd types, a control code, a wrong kind. The
    verdict is still the refereed one, once, with no traceback."""
    (tmp_path / "odd.py").write_text(
        "import os, sys\nfrom littlestone.learners.halving import Halving\n"
        f"print({report!r})\nsys.stdout.flush()\nos._exit(0)\nclass Odd(Halving):\n    pass\n")
    run = cli("check", "odd.py:Odd", cwd=tmp_path, timeout=200)
    out = run.stdout.decode()
    assert run.returncode == 1 and "Traceback" not in run.stderr.decode(), (out, run.stderr)
    assert sum("  plays a game:" in line for line in out.splitlines()) == 1
    assert "FAIL  plays a game: odd.py:Odd" in out
    assert b"\x1b" not in run.stdout
    assert out.strip().splitlines()[-1].startswith("not ready: a tournament would score")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["liar", "forger", "patcher"])
def test_a_file_cannot_make_check_say_it_passed(tmp_path, name):
    """The verdict on what a tournament scores is the server's record of games played
    outside the file's process: an atexit hook that prints 'every check passed', a report
    forged at import, a check suite patched to pass in its own interpreter all fail."""
    source, cls = {"liar": (LIAR, "Liar"), "forger": (FORGER, "Forger"),
                   "patcher": (PATCHER, "Patcher")}[name]
    (tmp_path / f"{name}.py").write_text(source)
    run = cli("check", f"{name}.py:{cls}", cwd=tmp_path, timeout=200)
    out = run.stdout.decode()
    assert run.returncode == 1, (out, run.stderr)
    assert f"FAIL  plays a game: {name}.py:{cls}" in out
    assert out.strip().splitlines()[-1].startswith("not ready: a tournament would score")
    report = json.loads(cli("check", f"{name}.py:{cls}", "--json", cwd=tmp_path,
                            timeout=200).stdout.decode().strip().splitlines()[-1])
    assert not report["passed"] and not report["ready"]
    plays = next(r for r in report["checks"] if r["check"] == "plays a game")
    assert plays["refereed"] and not plays["ok"]


@pytest.mark.slow
def test_check_still_passes_an_honest_file_and_says_the_games_were_refereed(tmp_path):
    (tmp_path / "honest.py").write_text(LIAR.replace("atexit.register(lie)", "")
                                        .replace("return 7.0", "return super().predict(x)"))
    run = cli("check", "honest.py:Liar", cwd=tmp_path, timeout=200)
    out = run.stdout.decode()
    assert run.returncode == 0, (out, run.stderr)
    assert "ok    plays a game: 4 games refereed by a server, outside its process" in out
    assert out.strip().endswith("every check passed: ready for a tournament")


def test_an_index_row_whose_log_is_a_fifo_never_blocks_the_web_page(tmp_path):
    """The web page reads a game's log where its index row says: a FIFO there used to
    block the page's worker thread forever (a device would never end)."""
    import threading

    from littlestone.server.web import data as web_data

    folder = tmp_path / "data"
    (folder / "games").mkdir(parents=True)
    fifo = folder / "games" / "g.lslog"
    os.mkfifo(fifo)
    store = Store(folder)
    game_id = store.start_game({"game": "mistake-bound", "class": "thresholds:n=7",
                                "learner": "halving", "adversary": "random-target"}, str(fifo))
    answer: dict[str, Any] = {}
    reader = threading.Thread(target=lambda: answer.update(curve=web_data.curve(store, game_id)),
                              daemon=True)
    reader.start()
    reader.join(20)
    if reader.is_alive():  # unblock it before failing
        with open(fifo, "wb"):
            pass
    store.close()
    assert not reader.is_alive() and answer["curve"]["rounds"] == 0
