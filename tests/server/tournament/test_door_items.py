"""The competition's door against the smaller items of issue 41: a guest's submit is
refused without closing its session; the same bytes naming another class, or checked
under another competition file, are a new version; errored versions (a syntax error, a
check cut by a stopped server) do not count against ``versions_per_day``."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from littlestone.client import _hello
from littlestone.games.errors import OverBudget
from littlestone.protocol import build
from littlestone.protocol.codec import encode
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.net.disk import DiskLedger
from littlestone.server.net.settings import Budgets
from littlestone.server.records.store import Store
from littlestone.server.records.submissions import INTERRUPTED
from littlestone.server.tournament.competition import load_competition
from littlestone.server.tournament.competition.door import Competition
from littlestone.server.web import attach
from littlestone.transport import connect
from tests.server.tournament.test_competition import (
    BROKEN,
    COMPETITION,
    GOOD,
    OPENS,
    Clock,
    Served,
    needs_sandbox,
)


class _Anonymous(Served):
    """A server that lets sessions without a token in (as a guest's, no account)."""

    async def _start(self, data: Path, budgets: Budgets | None) -> GameServer:
        server = GameServer(ServerSettings(port=0, data=data, anonymous=True))
        self.competition.attach(server)
        self.web = attach(server, public=False)
        await server.start()
        return server


@pytest.mark.slow
@needs_sandbox
def test_a_guests_submit_is_refused_and_its_session_stays_open(tmp_path: Path) -> None:
    """PROTOCOL.md 4.2: ``unauthorized`` for a session without a token of its own (a
    guest, an anonymous session), not fatal (main closed the session)."""
    config = tmp_path / "c.toml"
    config.write_text(COMPETITION)
    served = _Anonymous(tmp_path / "data", config, Clock(OPENS + timedelta(hours=1)))

    async def twice() -> list[dict[str, object]]:
        async with connect(served.server.url) as ws:
            receive = await _hello(ws, "learner", "guest", None)
            answers = []
            for _ in range(2):  # (the second is answered: the session is open)
                await ws.send(encode(build.submit(None, "a.py:Good", GOOD.encode())))
                answers.append(dict(await receive()))
            return answers

    try:
        answers = asyncio.run(twice())
    finally:
        served.close()
    assert [(a["code"], a["fatal"]) for a in answers] == [("unauthorized", False)] * 2


def test_a_duplicate_is_the_same_bytes_class_and_settings(tmp_path: Path) -> None:
    store = Store(tmp_path)
    row = store.add_submission("week-5", "ann", "a.py:Good", "ab" * 32, 10)
    store.set_verdict(row["id"], "accepted", "learner", None, {"settings": "s1"})
    same = store.duplicate("week-5", "ann", "ab" * 32, "b.py:Good", "s1")
    assert same is not None and same["id"] == row["id"]  # (the file's name aside)
    assert store.duplicate("week-5", "ann", "ab" * 32, "a.py:Other", "s1") is None
    assert store.duplicate("week-5", "ann", "ab" * 32, "a.py:Good", "s2") is None


def test_errored_versions_do_not_count_against_the_days_versions(tmp_path: Path) -> None:
    """A syntax error, a file that does not load and a check cut by a stopped server
    are errored: the day's quota counts the others (main counted them all)."""
    store = Store(tmp_path)
    for reason in ("syntax_error", "load_failed", INTERRUPTED, "check_failed", None):
        row = store.add_submission("week-5", "ann", "a.py:A", "ab" * 32, 10)
        store.set_verdict(row["id"], "accepted" if reason is None else "refused",
                          "learner", reason, {})
    assert store.submitted_since("week-5", "ann", 24) == 2


@pytest.mark.slow
@needs_sandbox
def test_a_broken_file_is_refused_without_using_the_quota(tmp_path: Path) -> None:
    """With ``versions_per_day = 1``, a syntax error first still leaves the day's one
    version to a good file."""
    config = tmp_path / "c.toml"
    # (a replace that misses leaves the quota at 2, and the test without its point)
    config.write_text(COMPETITION.replace("versions_per_day = 2", "versions_per_day = 1"))
    loaded = load_competition(config)
    assert loaded.versions_per_day == 1
    competition = Competition(loaded, tmp_path / "data", now=Clock(OPENS + timedelta(hours=1)))
    try:
        broken = competition.enter("ann", "a.py:Broken", BROKEN.encode())
        good = competition.enter("ann", "a.py:Good", GOOD.encode())
    finally:
        competition.close()
    assert (broken["verdict"], broken["reason"]) == ("refused", "syntax_error")
    assert good["verdict"] == "accepted"


def test_the_disk_refusal_of_a_submit_names_versions(tmp_path: Path) -> None:
    """(main: "this token's games would take 2 MiB of disk", for versions.)"""
    ledger = DiskLedger(tmp_path, Budgets(token_disk_mb=1))
    with pytest.raises(OverBudget) as caught:
        ledger.check(["ann"], 2 << 20, "version")
    assert caught.value.message.startswith("over budget: this token's versions would take")


def test_a_tip_is_a_tip_in_submits_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    """``check`` marks a passed check with a suggestion ``tip``; ``submit`` said ``ok``
    (main): the answer now carries ``advice`` and both mark it ``tip``."""
    from littlestone.cli.remote import print_submitted

    config = tmp_path / "c.toml"
    config.write_text(COMPETITION)
    store = Store(tmp_path / "data")
    row = store.add_submission("week-5", "ann", "a.py:Good", "ab" * 32, 10)
    store.set_verdict(row["id"], "accepted", "learner", None, {"checks": [
        {"check": "docstring example", "ok": True, "skipped": False, "advice": True,
         "message": "add an example", "in_tournament": "", "refereed": False}]})
    competition = Competition.__new__(Competition)
    competition.name = "week-5"
    stored = store.submission(row["id"])
    assert stored is not None
    answer = competition._answer(stored, duplicate=False)
    assert answer["checks"][0]["advice"] is True
    print_submitted(answer)
    assert "  tip   docstring example: add an example" in capsys.readouterr().out
