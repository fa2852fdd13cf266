"""The warm rating lanes attacked from outside (issue 41's lanes, never attacked before):
with one token (a version that loads slowly, ignores SIGTERM, sleeps as it ends) and as
a careless teacher (``kill -9`` of a lane's child or of the lane, the competition's
file edited while the server runs). Each break found is a test here, fixed in
``competition/rater.py``; the attacks that held pin what the docs promise."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from littlestone.sandbox import Sandbox
from littlestone.server.records.store import Store
from littlestone.server.tournament import run
from littlestone.server.tournament.competition import (
    Rater,
    load_competition,
    rate_version,
    rater,
    version_spec,
)
from littlestone.server.tournament.pairing import Entrant
from tests.server.tournament.test_rating_lanes import (
    COMPETITION,
    HONEST,
    _accepted,
    _alive,
    own_game_running,
)
from tests.server.tournament.test_warm_lanes import _rated

pytestmark = pytest.mark.slow

UNSAFE = Sandbox.unavailable() is not None

# a learner a twentieth of a second a move: its game of 40 rounds lasts two seconds
SLOWISH = '''"""Halving, slowly."""
import time

from littlestone.learners.halving import Halving


class Slowish(Halving):
    def predict(self, x):
        time.sleep(0.05)
        return super().predict(x)
'''

# a learner that prints the lane's own lines, at its import and at each move
NOISY = SLOWISH.replace("import time\n", """import sys, time

print("started 1\\nended 1 0", flush=True)
print("ended 1 0", file=sys.stderr, flush=True)
""").replace("        time.sleep(0.05)\n", """        time.sleep(0.05)
        print("ended 1 0\\nready", flush=True)
        print("started 2", file=sys.stderr, flush=True)
""")

# a time bomb: it loaded in a blink at its check, and now its import takes ten minutes
BOMB = '''"""Halving, after ten minutes at its import."""
import time

time.sleep(600)

from littlestone.learners.halving import Halving


class Slowish(Halving):
    pass
'''


def _competition(tmp_path: Path, **competition: object) -> Path:
    """The neighbours' competition (a version's rating is two games of 40 rounds), with
    these keys added to its ``[competition]`` table."""
    extra = "".join(f"\n{key} = {value}" for key, value in competition.items())
    path = tmp_path / "c.toml"
    path.write_text(COMPETITION.replace('submitted = ["learner"]',
                                        'submitted = ["learner"]' + extra))
    return path


def _leftovers(tmp_path: Path) -> list[int]:
    """The processes still running with the test's folder in their command line (a lane,
    a child, its fork server, a worker, a sandbox)."""
    mine = str(tmp_path).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mine in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return _alive(found)


def _gone(tmp_path: Path, seconds: float = 10) -> list[int]:
    """The leftovers once they had ``seconds`` to end (each dies with its parent)."""
    deadline = time.monotonic() + seconds
    while (left := _leftovers(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@contextlib.contextmanager
def _lanes(config_path: Path, data: Path, lanes: int = 1) -> Iterator[tuple[Rater, Store]]:
    """The competition's rating lanes started on ``data`` (and the store), stopped at
    the end."""
    rater_ = Rater(load_competition(config_path), data, UNSAFE, lambda: Store(data),
                   lambda: None, lanes=lanes)
    rater_.start()
    try:
        yield rater_, Store(data)
    finally:
        rater_.stop()


def test_kill_9_of_a_lanes_child_then_of_the_lane_loses_no_version(tmp_path: Path) -> None:
    """A careless teacher (or the OOM killer) kills a lane's child mid-game, then the
    lane itself mid-game (the next version's). Neither is the version's fault: each
    version is queued again, once, and rated (before: ``failed``, with no reason, never
    rated), no game is left ``running`` while the server runs on (before: until its next
    start), the lane that lost its child rates on and the lane killed is replaced,
    without a restart; after the stop, no process of the folder is left. (Held: a
    version that prints the lane's own lines, at its import and at each move, confuses
    nothing: its output is its sandbox's.)"""
    config_path = _competition(tmp_path)
    data = tmp_path / "data"
    ann, bob = _accepted(data, "ann", SLOWISH), _accepted(data, "bob", NOISY)
    with _lanes(config_path, data) as (lanes, store):
        own_game_running(store)  # (ann's: the first claimed)
        warm = lanes._lanes[0]
        child = warm.child
        assert child is not None
        os.kill(child, signal.SIGKILL)  # (the child, not its group: the rest dies with it)
        deadline = time.monotonic() + 120
        while store.submission(bob)["rating"] != "rating":  # type: ignore[index]
            assert time.monotonic() < deadline, "bob's version was not rated after the kill"
            time.sleep(0.02)
        own_game_running(store)  # (bob's: ann's is rated, or over)
        assert lanes._lanes[0] is warm and warm.process.poll() is None  # (it rated on)
        os.kill(warm.process.pid, signal.SIGKILL)
        assert _rated(store, [ann, bob]) == {ann: "rated", bob: "rated"}
        assert lanes._lanes[0] is not warm  # (replaced)
        running = [g for g in store.games(limit=100) if g["status"] == "running"]
        assert running == []
    rows = store.tournament_games("week-5")
    assert {r["status"] for r in rows} == {"complete"}
    recorded = [g["pairing"] for g in store.games(limit=100) if g["pairing"]]
    assert len(recorded) == len(set(recorded)) == len(rows) == 3  # (2 versions x 1, 1 pair)
    assert _gone(tmp_path) == []


def test_a_slow_loading_version_does_not_slow_the_ratings_after_it(tmp_path: Path) -> None:
    """A version that loaded in a blink at its check and now sleeps at its import (a
    time bomb) was loaded again in every later version's rating, though a learner never
    meets a learner: each later rating waited ``load_seconds`` for it (its failure to
    load is not kept), and ran out of its ``rating_seconds``, its games ``over_time``,
    its fault. A rating loads only the versions its version meets."""
    # (an honest rating takes seconds, under 10 s at load 30: the 20 s are generous;
    # before, the later rating waited 25 s for the bomb, twice)
    config_path = _competition(tmp_path, rating_seconds=20)
    config_path.write_text(config_path.read_text().replace(
        "time_bank = 0.5", "time_bank = 0.5\nload_seconds = 25"))
    data = tmp_path / "data"
    store = Store(data)
    bomb = _accepted(data, "bob", BOMB)
    store.set_rating(bomb, "rated")  # (its own rating is not the point)
    ann = _accepted(data, "ann", HONEST)
    lanes = Rater(load_competition(config_path), data, UNSAFE, lambda: Store(data),
                  lambda: None, lanes=1)
    lanes.start()
    try:
        assert _rated(store, [ann], seconds=300) == {ann: "rated"}
    finally:
        lanes.stop()
    assert {g["status"] for g in store.tournament_games("week-5")} == {"complete"}
    assert _gone(tmp_path) == []


def test_a_rating_past_its_time_is_over_within_its_overrun_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``rating_seconds`` the rating is run again to record its games left
    ``over_time``; that second run loads the version again (its first load never ended,
    so it was not kept), and had no time limit: a version asleep at its import held the
    lane ``load_seconds`` more (up to a day). The second run has
    :data:`.rater.OVERRUN_WAIT_S`; past it the version's rating ``failed``, its fault,
    and the lane rates the next."""
    monkeypatch.setattr(rater, "OVERRUN_WAIT_S", 2.0)
    config_path = _competition(tmp_path, rating_seconds=1)
    config_path.write_text(config_path.read_text().replace(
        "time_bank = 0.5", "time_bank = 0.5\nload_seconds = 3600"))
    data = tmp_path / "data"
    bomb = _accepted(data, "bob", BOMB)
    with _lanes(config_path, data) as (_, store):
        assert _rated(store, [bomb], seconds=120) == {bomb: "failed"}
    assert _gone(tmp_path) == []


def test_a_competition_file_edited_while_the_server_runs_fails_no_version(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The teacher edits the competition's file while the server runs (here: a typo),
    and a lane ends (``kill -9``; a crash): the lane started again read the new file,
    could not start, and every version it took was ``failed`` at once, the queue
    emptied in a blink (a valid edit rated the versions under other rules than the
    server's). A lane starts only on the file the server started with: till then the
    versions wait, queued, and the log says why."""
    config_path = _competition(tmp_path)
    data = tmp_path / "data"
    Store(data)
    lanes = Rater(load_competition(config_path), data, UNSAFE, lambda: Store(data),
                  lambda: None, lanes=1)
    lanes.start()
    store = Store(data)
    good = config_path.read_text()
    try:
        deadline = time.monotonic() + 120
        while 0 not in lanes._lanes:  # (warm before its first version)
            assert time.monotonic() < deadline, "the lane did not start"
            time.sleep(0.02)
        config_path.write_text(good.replace("rounds = 40", "rounds = forty"))
        os.kill(lanes._lanes[0].process.pid, signal.SIGKILL)
        with caplog.at_level(logging.WARNING, logger=rater.__name__):
            ann = _accepted(data, "ann", HONEST)
            lanes.wake()
            while not any("changed" in r.getMessage() for r in caplog.records) and \
                    store.submission(ann)["rating"] not in ("failed", "rated"):  # type: ignore[index]
                assert time.monotonic() < deadline + 60, "the lane neither rated nor said"
                time.sleep(0.02)
        config_path.write_text(good)
        lanes.wake()
        assert _rated(store, [ann]) == {ann: "rated"}
    finally:
        lanes.stop()
    assert {g["status"] for g in store.tournament_games("week-5")} == {"complete"}


# a learner a second a move: its game of 40 rounds lasts past any rating_seconds here
SLOW = SLOWISH.replace("time.sleep(0.05)", "time.sleep(1.0)")


def test_a_rating_cut_at_its_time_leaves_no_game_running(tmp_path: Path) -> None:
    """A version's rating past ``rating_seconds`` is killed with its group, mid-game:
    that game stayed ``running`` in the index (and on the page's live list) until the
    server's next start. Now it is ended ``interrupted`` before the lane goes on, and the
    version's games left are ``over_time``."""
    config_path = _competition(tmp_path, rating_seconds=6)
    data = tmp_path / "data"
    sam = _accepted(data, "sam", SLOW)
    with _lanes(config_path, data) as (_, store):
        def not_over() -> None:
            if store.submission(sam)["rating"] in ("rated", "failed"):  # type: ignore[index]
                pytest.skip("the machine is too loaded: the rating was over before its game")

        own_game_running(store, not_over)
        assert _rated(store, [sam]) == {sam: "rated"}
        assert [g for g in store.games(limit=100) if g["status"] == "running"] == []
    assert {g["status"] for g in store.tournament_games("week-5")
            if g["learner"] != "halving"} == {"over_time:learner"}
    assert "interrupted" in {g["status"] for g in store.games(limit=100)}
    assert _gone(tmp_path) == []


# a learner that, from its first move, ignores SIGTERM, holds a thread and sleeps at
# its end (atexit, __del__): its load and probe end as they should
STUBBORN = SLOWISH.replace("import time\n", "import atexit, signal, threading, time\n").replace(
    "        time.sleep(0.05)\n", """        time.sleep(0.05)
        if not hasattr(self, "armed"):
            self.armed = True
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            threading.Thread(target=time.sleep, args=(600,), daemon=False).start()
            atexit.register(time.sleep, 600)
            type(self).__del__ = lambda me: time.sleep(600)
""")


def test_a_version_that_ignores_sigterm_and_sleeps_at_its_end_does_not_hold_the_stop(
        tmp_path: Path) -> None:
    """Held: the server stops mid-game of a version that ignores SIGTERM, holds a
    thread and sleeps in ``atexit`` and ``__del__``: the stop returns (the child's
    SIGTERM, then :data:`.rater.STOP_WAIT_S`, then the kill of the lane), the game ends
    ``interrupted``, the version is not failed (rated again at the next start), and no
    process of the folder is left."""
    config_path = _competition(tmp_path)
    data = tmp_path / "data"
    ident = _accepted(data, "ann", STUBBORN)
    with _lanes(config_path, data) as (_, store):
        own_game_running(store)
    assert [g for g in store.games(limit=100) if g["status"] == "running"] == []
    assert store.submission(ident)["rating"] not in ("failed", "rated")  # type: ignore[index]
    assert _gone(tmp_path) == []


def test_a_lane_asked_for_a_version_gone_or_whose_file_is_gone_answers_and_lives_on(
        tmp_path: Path) -> None:
    """A version id the index does not hold, then a version whose file was deleted from
    the data folder: each child ends 1 with its reason in the rating's log, and the lane
    lives on (held for the first). The deleted file was rated, its games
    ``load_failed``, its fault: ranked last, in place of its student's previous version;
    now its rating fails, and the log says the file is gone. Held too: a lane whose
    input is closed while a child rates lets the rating end, says so, and ends (0)."""
    config_path = _competition(tmp_path)
    data = tmp_path / "data"
    ident = _accepted(data, "ann", HONEST)
    bob = _accepted(data, "bob", HONEST)
    row = Store(data).submission(ident)
    assert row is not None
    (data / row["path"]).unlink()
    folder = data / "competitions" / "week-5"
    argv = [sys.executable, "-m", "littlestone", "competition", "rate", str(config_path),
            "--data", str(data), "--lane", *(["--unsafe-no-sandbox"] if UNSAFE else [])]
    warm = rater.WarmLane(argv, folder / "rating.log")
    try:
        assert warm.rate(ident + 1000, False, None) == 1
        assert warm.rate(ident, False, None) == 1
        assert warm.process.poll() is None
        codes: list[int | None] = []
        rating = threading.Thread(target=lambda: codes.append(warm.rate(bob, False, None)))
        rating.start()
        deadline = time.monotonic() + 120
        while warm.child is None:
            assert time.monotonic() < deadline and rating.is_alive(), codes
            time.sleep(0.01)
        assert warm.process.stdin is not None
        warm.process.stdin.close()
        rating.join(120)
        assert codes == [0]
        assert warm.process.wait(60) == 0
    finally:
        warm.close()
    said = (folder / "rating.log").read_text()
    assert f"no accepted version {ident + 1000}" in said
    assert "is gone from the data folder" in said
    assert {r["learner"] for r in Store(data).tournament_games("week-5")} == {
        "halving", f"{(data / 'competitions/week-5/bob/v1.py').resolve()}:Slowish"}
    assert _gone(tmp_path) == []


def test_a_version_superseded_while_it_is_rated_finishes_and_the_board_shows_the_newer(
        tmp_path: Path) -> None:
    """Held: a student's newer version accepted while the older one is being rated (not
    waiting: then it would be ``superseded``) is rated at once by another lane; the
    older one's rating finishes, ``rated``, its games kept and listed with it; the board
    ranks the newer one (``final = "last"``), and equals the ranking rebuilt from the
    stored games of the field, followed mid-way and at the end."""
    from littlestone.server.tournament.competition import standings, version_spec
    from littlestone.server.tournament.ranking import rank

    config = load_competition(_competition(tmp_path))
    data = tmp_path / "data"
    first = _accepted(data, "ann", SLOWISH)
    lanes = Rater(config, data, UNSAFE, lambda: Store(data), lambda: None, lanes=2)
    lanes.start()
    store = Store(data)
    try:
        deadline = time.monotonic() + 120
        while store.submission(first)["rating"] != "rating":  # type: ignore[index]
            assert time.monotonic() < deadline, "the first version was not taken"
            time.sleep(0.02)
        second = _accepted(data, "ann", HONEST)
        lanes.wake()
        standings(store, config, data)  # (followed from here, as the page does)
        assert _rated(store, [first, second]) == {first: "rated", second: "rated"}
        board = standings(store, config, data)
    finally:
        lanes.stop()
    assert [(p["entrant"], p["version"]) for p in board["ranking"] if not p["builtin"]] == [
        ("ann", 2)]
    listed = {v["id"]: v for v in board["versions"]}
    assert listed[first]["rating"] == "rated" and listed[first]["games"] == 1
    newer = store.submission(second)
    assert newer is not None
    field = {version_spec(data, newer), "halving", "random-target"}
    rebuilt = rank("week-5", [r for r in store.tournament_games("week-5")
                              if r["learner"] in field and r["adversary"] in field], [])
    expected = sorted((r["rank"], r["worst"]) for r in rebuilt.learners) + sorted(
        (r["rank"], r["forcing"]) for r in rebuilt.adversaries)
    shown = sorted((p["rank"], p["score"]) for p in board["ranking"]
                   if p["role"] == "learner") + sorted(
        (p["rank"], p["score"]) for p in board["ranking"] if p["role"] == "adversary")
    assert shown == expected


def _adversary(data: Path, account: str, source: str) -> int:
    """An adversary version stored and accepted, as the door leaves it (its check
    skipped)."""
    store = Store(data)
    row = store.add_submission("week-5", account, "mine.py:Slowish", "cd" * 32, len(source))
    (data / row["path"]).parent.mkdir(parents=True, exist_ok=True)
    (data / row["path"]).write_text(source)
    store.set_verdict(row["id"], "accepted", "adversary", None, {"checks": []})
    return int(row["id"])


# an adversary that loaded in a blink at its check, and now sleeps at its import
ADVERSARY_BOMB = '''"""Random targets, after ten minutes at its import."""
import time

time.sleep(600)

from littlestone.adversaries.random_target import RandomTarget


class Slowish(RandomTarget):
    pass
'''


def test_a_slow_loading_adversary_does_not_run_a_later_learner_over_its_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both roles submitted: an adversary version that sleeps at its import (after a
    check it passed) held each later learner's rating ``load_seconds``, charged to the
    learner's ``rating_seconds`` (the loads were in the rating's clock): the honest
    learner's games were ``over_time``, its fault (or, past the over_time run's wait,
    its rating failed). Now the version's clock stops while its opponents load
    (:meth:`.rater.WarmLane.rate`: their own time, with a budget of their own)."""
    monkeypatch.setattr(rater, "OVERRUN_WAIT_S", 1.0)  # (the over_time run: not the point)
    config_path = _competition(tmp_path, rating_seconds=6)
    config_path.write_text(config_path.read_text().replace(
        'submitted = ["learner"]', 'submitted = ["learner", "adversary"]').replace(
        "time_bank = 0.5", "time_bank = 0.5\nload_seconds = 8"))
    data = tmp_path / "data"
    store = Store(data)
    store.set_rating(_adversary(data, "bob", ADVERSARY_BOMB), "rated")  # (not the point)
    ann = _accepted(data, "ann", HONEST)
    lanes = Rater(load_competition(config_path), data, UNSAFE, lambda: Store(data),
                  lambda: None, lanes=1)
    lanes.start()
    try:
        assert _rated(store, [ann]) == {ann: "rated"}
    finally:
        lanes.stop()
    mine = [g for g in store.tournament_games("week-5") if g["learner"] != "halving"]
    assert not [g for g in mine if str(g["status"]).startswith("over_time")], mine


# the same adversary, its student's next version: it loads at once
ADVERSARY_FIXED = ADVERSARY_BOMB.replace("time.sleep(600)\n", "")


def test_a_slow_opponents_games_are_its_own_fault_and_it_is_not_loaded_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An adversary version asleep at its import was loaded again by every later
    learner's rating, each waiting ``load_seconds`` for it (its failure to load was not
    kept). Now its failure is remembered by its file's bytes: the first rating that
    loads it waits for it once, apart from its version's clock (inside ``aside``), and
    the later ratings do not load it; its games are ``load_failed:adversary``, its own
    fault, in each. Its student's next version is loaded afresh and plays."""
    config_path = _competition(tmp_path)
    config_path.write_text(config_path.read_text().replace(
        'submitted = ["learner"]', 'submitted = ["learner", "adversary"]').replace(
        "time_bank = 0.5", "time_bank = 0.5\nload_seconds = 4").replace(
        "rounds = 40", "rounds = 8"))
    config = load_competition(config_path)
    data = tmp_path / "data"
    store = Store(data)
    bomb = _adversary(data, "bob", ADVERSARY_BOMB)
    store.set_rating(bomb, "rated")  # (its own rating is not the point)
    ann, cat = _accepted(data, "ann", HONEST), _accepted(data, "cat", HONEST)
    asked: list[tuple[str, bool]] = []  # (each spec loaded, and whether aside)
    aside: list[bool] = [False]
    probe = run._Fleet.probe

    def probed(fleet: run._Fleet, entrants: list[tuple[str, str]]
               ) -> dict[tuple[str, str], Entrant]:
        asked.extend((spec, aside[0]) for _, spec in entrants)
        return probe(fleet, entrants)

    @contextlib.contextmanager
    def loading() -> Iterator[None]:
        aside[0] = True
        try:
            yield
        finally:
            aside[0] = False

    monkeypatch.setattr(run._Fleet, "probe", probed)

    def spec(ident: int) -> str:
        row = store.submission(ident)
        assert row is not None
        return version_spec(data, row)

    for ident in (ann, cat):
        rate_version(config, data, ident, unsafe=UNSAFE, aside=loading)
    assert asked == [(spec(bomb), True), (spec(ann), False), (spec(cat), False)]
    against = [g for g in store.tournament_games("week-5") if g["adversary"] == spec(bomb)]
    assert sorted((g["learner"], g["status"]) for g in against) == sorted(
        (spec(who), "load_failed:adversary") for who in (ann, cat))
    assert all("did not load within the time allowed" in g.get("message", "") for g in against)
    fixed = _adversary(data, "bob", ADVERSARY_FIXED)
    store.set_rating(fixed, "rated")
    dan = _accepted(data, "dan", HONEST)
    asked.clear()
    rate_version(config, data, dan, unsafe=UNSAFE, aside=loading)
    assert asked == [(spec(fixed), True), (spec(dan), False)]
    assert {g["adversary"]: g["status"] for g in store.tournament_games("week-5")
            if g["learner"] == spec(dan)} == {
        "random-target": "complete", spec(bomb): "load_failed:adversary",
        spec(fixed): "complete"}
