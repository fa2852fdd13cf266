"""Red team of the logs: what a hostile log file can do to the one who opens it (``replay``,
``replay --verify``, ``--against``). A log a stranger sends a teacher is forged with a
valid hash chain (the chain has no key: anybody recomputes it), so it is read as data.
Each test tries one attack through the real command line (a subprocess of ``python -m
littlestone``) and asserts that it fails cleanly: one line and a documented exit status,
never a traceback, a hang or code run that nobody chose to run.
"""

from __future__ import annotations

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
from tests.support.commands import cli, one_line

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
