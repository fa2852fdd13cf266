"""Red team of tournaments: hostile configs and hostile submissions (a student's Python
file). Each test tries one attack through the real command line and asserts that it
fails cleanly and alone: one line and a documented exit status, or the hostile entrant
loses its own games and the others play on.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from littlestone.cli import main
from littlestone.server.records.store import Store
from tests.support import ROOT
from tests.support.commands import cli, one_line

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


def _limited_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))


def test_a_tournament_config_with_a_huge_seed_count_is_one_line(tmp_path):
    """Break (fixed): seeds = 1000000000 (a count) was tuple(range(10^9)) when the config
    was read: 'internal error: MemoryError' under a 2 GiB limit, the OOM killer without.
    Now a count over SEEDS_MAX is one line, exit status 2."""
    config = tmp_path / "t.toml"
    config.write_text('learners = ["halving"]\nadversaries = ["random-target"]\n\n'
                      '[tournament]\nname = "t"\nrounds = 3\nseeds = 1000000000\n\n'
                      '[[classes]]\nspec = "thresholds:n=7"\n')
    done = subprocess.run([sys.executable, "-m", "littlestone", "tournament", str(config),
                           "--data", str(tmp_path / "data")], capture_output=True, text=True,
                          timeout=120, preexec_fn=_limited_memory)
    assert done.returncode == 2 and "seeds" in done.stderr, done.stderr[-300:]
    assert "internal error" not in done.stderr


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
    assert status == 1, err.getvalue()  # (files failed to load, crashed, spoiled games)
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
    # (the games its learners ended by their fault are won by forfeit, and only those
    # are not scored for it)
    assert adversary["failed"] == 0 and adversary["unscored"] == adversary["won_by_forfeit"]
    assert adversary["won_by_forfeit"] >= 2
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
