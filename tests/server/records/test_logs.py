"""Game logs, the SQLite index and replay (issue: logs)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.cli import main
from littlestone.games.classes import make_class
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.server.records.logged import play_logged
from littlestone.server.records.logs import MAGIC, LogCorrupted, LogError, read_log
from littlestone.server.records.replay import against
from littlestone.server.records.store import Store
from littlestone.server.records.verify import verify
from tests.support.agents_for_tests import NoisyAdvice, Spoiler

GAMES = [
    (MISTAKE_BOUND, "thresholds:n=255", None, "halving", "random-target", 9000),
    (MISTAKE_BOUND, "halfspaces:d=7,margin=0.2", None, "perceptron", "random-target", 5000),
    (MISTAKE_BOUND, "k-disjunctions:n=100,k=1", None, "winnow", "random-target", 300),
    (MISTAKE_BOUND, "intervals:n=20", None, "hedge", "shattered-tree", 50),
    (EXPERTS, "singletons:n=16", None, "hedge", "noisy:rate=0.2", 300),
    (EXPERTS, None, 3, "weighted-majority", "cover-flip", 200),
]


def game_of(name, spec, d, rounds):
    return GameSpec(name, rounds, make_class(spec) if spec else None, d)


def as_plain(record):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in record]


@pytest.mark.parametrize(("name", "spec", "d", "learner", "adversary", "rounds"), GAMES)
def test_round_trip_of_every_record_field(tmp_path, name, spec, d, learner, adversary, rounds):
    game = game_of(name, spec, d, rounds)
    played = []
    play(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), 5,
         on_record=lambda r: played.append(as_plain(r)))
    done = play_logged(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), 5, tmp_path)
    log = read_log(done.log)
    assert log.status == "complete" and log.n_rounds == rounds
    assert [as_plain(r) for r in log.records()] == played
    assert log.footer is not None and log.footer["result"] == done.result.to_dict()
    assert log.header["learner"]["spec"] == LEARNERS.make(learner).spec
    assert verify(log).ok


def small_log(tmp_path: Path) -> Path:
    """A log with one frame per round (an adaptive adversary, rounds not gathered)."""
    from littlestone.server.records.logs import writer

    game = GameSpec(MISTAKE_BOUND, 12, make_class("thresholds:n=63"))
    saved, writer.ROUND_BATCH = writer.ROUND_BATCH, 1
    try:
        log = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("shattered-tree"),
                          0, tmp_path).log
        assert log is not None
        return log
    finally:
        writer.ROUND_BATCH = saved


def frame_ends(data: bytes) -> list[int]:
    """Byte offsets where each frame ends, read from the format (records/logs/__init__.py)."""
    import msgpack

    ends, offset = [], len(MAGIC)
    while offset < len(data):
        length = int.from_bytes(data[offset : offset + 4], "little")
        head = msgpack.unpackb(data[offset + 4 : offset + 4 + length])
        size = sum(int(np.prod(shape)) * np.dtype(dtype).itemsize
                   for _, dtype, shape in head["buffers"])
        offset += 4 + length + size + 32
        ends.append(offset)
    return ends


@pytest.mark.slow
def test_truncated_at_every_offset_of_its_last_records_still_opens(tmp_path):
    path = small_log(tmp_path)
    data = path.read_bytes()
    ends = frame_ends(data)
    assert read_log(path).n_rounds == 12 and len(ends) == 14  # header, 12 rounds, footer
    cut_path = tmp_path / "cut.lslog"
    for cut in range(ends[-5], len(data)):  # the last three rounds and the footer
        cut_path.write_bytes(data[:cut])
        log = read_log(cut_path)  # never raises
        whole_rounds = sum(1 for end in ends[1:-1] if end <= cut)
        assert log.status == "incomplete"
        assert log.n_rounds == whole_rounds
        assert [r.t for r in log.records()] == list(range(1, whole_rounds + 1))


@pytest.mark.slow
def test_a_single_flipped_byte_anywhere_fails_verify(tmp_path):
    path = small_log(tmp_path)
    data = bytearray(path.read_bytes())
    flipped = tmp_path / "flipped.lslog"
    for offset in range(len(data)):
        data[offset] ^= 0x20
        flipped.write_bytes(bytes(data))
        data[offset] ^= 0x20
        try:
            ok = verify(read_log(flipped)).records_ok  # (the anchor alone would fail it)
        except LogError:
            ok = False
        assert not ok, f"a flipped byte at offset {offset} went unnoticed"


def test_corruption_names_the_byte_range(tmp_path):
    path = small_log(tmp_path)
    data = bytearray(path.read_bytes())
    data[200] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(LogCorrupted) as info:
        read_log(path)
    assert info.value.start <= 200 < info.value.end


def all_pairs():
    """Every built-in pair on each game it plays: 20 rounds a game (40 cost 60% more, for
    the same records, chain and footer verified)."""
    games = [GameSpec(MISTAKE_BOUND, 20, make_class(s)) for s in
             ("thresholds:n=31", "k-disjunctions:n=8,k=2", "halfspaces:d=9,margin=0.34")]
    games += [GameSpec(EXPERTS, 20, make_class("singletons:n=6")), GameSpec(EXPERTS, 20,
                                                                           experts=3)]
    for game in games:
        for adversary_id in ADVERSARIES.ids():
            if adversary_id == "replay":
                continue
            if ADVERSARIES.make(adversary_id).unsupported(game) is not None:
                continue
            for learner_id in LEARNERS.ids():
                learner = LEARNERS[learner_id].example()
                if learner.unsupported(game) is None:
                    yield game, learner_id, adversary_id


@pytest.mark.slow
def test_verify_passes_for_every_built_in_pair(tmp_path):
    count = 0
    for game, learner_id, adversary_id in all_pairs():
        done = play_logged(game, LEARNERS[learner_id].example(), ADVERSARIES.make(adversary_id),
                           2, tmp_path)
        report = verify(read_log(done.log))
        assert report.ok, (learner_id, adversary_id, game.hclass, report.message)
        count += 1
    assert count > 60


@pytest.mark.parametrize("learner", ["halving", "soa", "perceptron", "winnow"])
def test_against_the_same_learner_reproduces_its_mistakes(tmp_path, learner):
    spec = "halfspaces:d=5,margin=0.2" if learner == "perceptron" else "monotone-disjunctions:n=6"
    game = GameSpec(MISTAKE_BOUND, 300, make_class(spec))
    for adversary in ("random-target", "shattered-tree"):
        opponent = ADVERSARIES.make(adversary)
        if opponent.unsupported(game) is not None:
            continue
        done = play_logged(game, LEARNERS.make(learner), opponent, 1, tmp_path)
        original, again = against(read_log(done.log), learner)
        assert again.complete
        assert (again.mistakes, again.expected_mistakes) == (original.mistakes,
                                                             original.expected_mistakes)


def test_against_another_learner_on_an_adaptive_sequence(tmp_path):
    game = GameSpec(MISTAKE_BOUND, 30, make_class("thresholds:n=255"))
    done = play_logged(game, LEARNERS.make("halving"), Spoiler(), 0, tmp_path)
    original, soa = against(read_log(done.log), "soa")
    assert soa.complete and soa.rounds == original.rounds
    assert soa.mistakes <= 8  # Ldim of thresholds:n=255, on any sequence


def test_experts_log_replays_against_hedge(tmp_path):
    game = GameSpec(EXPERTS, 200, experts=4)
    done = play_logged(game, LEARNERS.make("weighted-majority"), NoisyAdvice(), 0, tmp_path)
    original, hedge = against(read_log(done.log), "hedge")
    assert hedge.complete and hedge.best_expert_loss == original.best_expert_loss


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from littlestone.adversaries import ADVERSARIES
    from littlestone.games.classes import make_class
    from littlestone.games.game import GameSpec
    from littlestone.learners import LEARNERS
    from littlestone.server.records.logged import play_logged
    game = GameSpec("mistake-bound", 200, make_class("thresholds:n=63"))
    for seed in range(int(sys.argv[2])):
        play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), seed,
                    Path(sys.argv[1]))
""")


@pytest.mark.slow
def test_the_index_survives_two_processes_writing_at_once(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "data"), "25"])
             for _ in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    rows = Store(tmp_path / "data").games(limit=1000)
    assert len(rows) == 50 and all(r["status"] == "complete" for r in rows)
    assert len({r["game_id"] for r in rows}) == 50


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_cli_play_games_and_replay(tmp_path, capsys):
    data = str(tmp_path / "d")
    code, out, _ = run(capsys, "play", "--learner", "halving", "--adversary", "random-target",
                       "--class", "thresholds:n=127", "--rounds", "500", "--data", data, "--json")
    assert code == 0
    played = json.loads(out.strip().splitlines()[-1])
    assert Path(played["log"]).is_file() and played["game_id"]
    run(capsys, "play", "--learner", "soa", "--adversary", "shattered-tree", "--class",
        "thresholds:n=127", "--rounds", "10", "--data", data)
    code, out, _ = run(capsys, "games", "--data", data, "--json")
    assert code == 0 and len(json.loads(out)["games"]) == 2
    code, out, _ = run(capsys, "games", "--data", data, "--learner", "so*")
    assert code == 0 and "soa" in out and "halving" not in out
    code, out, _ = run(capsys, "replay", played["game_id"], "--data", data, "--json")
    shown = json.loads(out)
    assert code == 0
    for key in ("game", "learner", "adversary", "class", "rounds", "seed", "status", "mistakes",
                "expected_mistakes"):
        assert shown[key] == played[key], key
    code, out, _ = run(capsys, "replay", played["log"], "--page", "2", "--page-size", "10")
    assert code == 0 and "rounds 11-20 of 500" in out
    code, out, _ = run(capsys, "replay", played["log"], "--verify")
    assert code == 0 and out.startswith("verified")
    code, out, _ = run(capsys, "replay", played["log"], "--against", "soa", "--json")
    assert code == 0 and json.loads(out)["against"]["learner"] == "soa"
    code, out, _ = run(capsys, "replay", played["log"], "--export", "csv")
    assert code == 0 and len(out.strip().splitlines()) == 501
    code, out, _ = run(capsys, "replay", played["log"], "--export", "jsonl")
    assert json.loads(out.splitlines()[3])["t"] == 4
    plot = tmp_path / "p.png"
    code, _, _ = run(capsys, "replay", played["log"], "--plot", str(plot))
    assert code == 0 and plot.read_bytes()[:4] == b"\x89PNG"


def test_cli_bad_logs_have_distinct_exit_statuses(tmp_path, capsys):
    path = small_log(tmp_path)
    data = path.read_bytes()
    cases = {}
    (tmp_path / "foreign.lslog").write_bytes(b"PK\x03\x04 not a log")
    cases["foreign"] = run(capsys, "replay", str(tmp_path / "foreign.lslog"))
    cases["missing"] = run(capsys, "replay", str(tmp_path / "nope.lslog"), "--data",
                           str(tmp_path))
    tampered = bytearray(data)
    tampered[150] ^= 4
    (tmp_path / "tampered.lslog").write_bytes(bytes(tampered))
    cases["tampered"] = run(capsys, "replay", str(tmp_path / "tampered.lslog"))
    cases["tampered-verify"] = run(capsys, "replay", str(tmp_path / "tampered.lslog"),
                                   "--verify")
    (tmp_path / "cut.lslog").write_bytes(data[:-7])
    cases["truncated"] = run(capsys, "replay", str(tmp_path / "cut.lslog"))
    codes = {name: code for name, (code, _, _) in cases.items()}
    assert codes == {"foreign": 3, "missing": 2, "tampered": 4, "tampered-verify": 1,
                     "truncated": 5}
    for name, (_, _, err) in cases.items():
        assert "Traceback" not in err
        assert len(err.strip().splitlines()) == 1, (name, err)
    assert "bytes" in cases["tampered"][2]


def test_a_crashed_game_leaves_an_incomplete_log(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent(f"""
        import os
        import time
        from pathlib import Path
        from littlestone.adversaries import ADVERSARIES
        from littlestone.games.classes import make_class
        from littlestone.games.game import GameSpec
        from littlestone.learners.halving import Halving
        from littlestone.server.records.logged import play_logged
        from littlestone.server.records.logs import read_log

        class Dies(Halving):
            '''Halving that kills its process at round 300. >>> 1'''
            id = ""
            def update(self, x, y):
                super().update(x, y)
                self.t = getattr(self, "t", 0) + 1
                if self.t == 280:  # the writer thread writes what it was handed
                    for _ in range(1200):  # (a condition: a loaded machine is slow)
                        logs = list(Path({str(tmp_path)!r}, "games").glob("*.lslog"))
                        try:
                            if logs and read_log(logs[0]).n_rounds >= 256:
                                break
                        except Exception:  # (its header not written yet)
                            pass
                        time.sleep(0.05)
                if self.t == 300:
                    os.kill(os.getpid(), 9)

        game = GameSpec("mistake-bound", 1000, make_class("thresholds:n=63"))
        play_logged(game, Dies(), ADVERSARIES.make("shattered-tree"), 0, Path({str(tmp_path)!r}))
    """))
    proc = subprocess.run([sys.executable, str(script)], check=False)
    assert proc.returncode == -9
    logs = list((tmp_path / "games").glob("*.lslog"))
    assert len(logs) == 1
    log = read_log(logs[0])
    # rounds are gathered 256 at a time (or 0.25 s): the first 256 were handed over
    assert log.status == "incomplete" and 256 <= log.n_rounds < 300
    row = Store(tmp_path).games()[0]
    assert row["status"] == "running"  # killed: the index says so until someone looks


def test_a_log_written_in_the_callers_thread_is_the_same_bytes(tmp_path):
    from littlestone.server.records.logs import LogWriter

    game = game_of(MISTAKE_BOUND, "thresholds:n=255", None, 700)
    records = []
    play(game, LEARNERS.make("halving"), ADVERSARIES.make("shattered-tree"), 3,
         on_record=records.append)
    for background in (True, False):
        writer = LogWriter(tmp_path / f"{background}.lslog", {"game": MISTAKE_BOUND},
                           background=background)
        for record in records:
            writer.round(record)
        writer.close({"status": "complete"})
    inline = (tmp_path / "False.lslog").read_bytes()
    assert inline == (tmp_path / "True.lslog").read_bytes()
    assert [as_plain(r) for r in read_log(tmp_path / "False.lslog").records()] == [
        as_plain(r) for r in records]


def test_opening_an_index_another_process_holds_locked_waits_for_it(tmp_path):
    import sqlite3
    import threading
    import time

    data = tmp_path / "data"
    data.mkdir()
    holder = sqlite3.connect(data / "littlestone.db", isolation_level=None,
                             check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    started = time.monotonic()
    store = Store(data)  # waits, then opens
    assert time.monotonic() - started >= 0.25
    assert store.games() == []
    holder.close()


def test_a_locked_index_is_retried_and_other_errors_are_not():
    import sqlite3

    from littlestone.server.records.database import retry_locked

    calls = []

    def locked_twice():
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "opened"

    assert retry_locked(locked_twice) == "opened" and len(calls) == 3

    def no_snapshot_once():  # (SQLITE_PROTOCOL: a browser test's game lost its end to it)
        calls.append(1)
        if len(calls) < 2:
            error = sqlite3.OperationalError("locking protocol")
            error.sqlite_errorcode = sqlite3.SQLITE_PROTOCOL
            raise error
        return "finished"

    calls.clear()
    assert retry_locked(no_snapshot_once) == "finished" and len(calls) == 2

    def broken():
        calls.append(1)
        raise sqlite3.OperationalError("no such table: games")

    calls.clear()
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_locked(broken)
    assert len(calls) == 1


def test_the_replay_adversary_is_registered_but_never_built_for_a_peer(tmp_path):
    """The ``replay`` adversary reads the log its spec names: registered by importing
    its room (as every server process does, through the command line), listed nowhere a
    peer looks, and refused by name, by game id and by path."""
    from littlestone.protocol.errors import ProtocolError
    from littlestone.server.net.policy import Opponents
    from littlestone.server.net.settings import Budgets
    from littlestone.server.records import playback

    assert ADVERSARIES["replay"] is playback.Replay
    game = GameSpec(MISTAKE_BOUND, 10, make_class("thresholds:n=15"))
    done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 0,
                       tmp_path)
    assert ADVERSARIES.make(f"replay:log={done.log}").unsupported(game) is None  # it works
    opponents = Opponents()
    assert "replay" not in opponents.names(ADVERSARIES)
    for spec in ("replay", f"replay:log={done.game_id}", f"replay:log={done.log}",
                 f"replay:log={done.game_id},data={tmp_path.name}"):
        with pytest.raises(ProtocolError, match=r"does not serve|not by file"):
            opponents.make(spec, ADVERSARIES, Budgets())
