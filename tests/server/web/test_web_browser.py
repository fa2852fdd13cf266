"""The page in a real browser: headless Chromium (Debian's ``chromium``; ``.ci/run``
installs it) driven by Playwright. A server plays a game while the page follows it;
a tournament's leaderboard fills in while the page is open. Screenshots are kept under
the data folder (``screenshots/``); with ``LITTLESTONE_DOCS_SCREENSHOTS=1`` they are also
copied to docs/ (README shows them)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.game import GameSpec
from littlestone.learners.halving import Halving
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.records.store import Store
from littlestone.server.tournament import load_config, rank, run_tournament
from littlestone.server.web import attach
from tests.support import ROOT
from tests.support.browser import CHROMIUM, chromium

DOCS = ROOT / "docs"

pytestmark = [pytest.mark.skipif(not CHROMIUM.exists(),
                                 reason="no /usr/bin/chromium (apt-get install chromium)"),
              pytest.mark.xdist_group("browser")]  # one worker: one Chromium


class GatedHalving(Halving):
    """Halving that stops before the rounds of its gates until the test opens them: a
    game that runs, held at a round it has reached, for as long as the page needs to
    look (not a game slowed down and raced against the page)."""

    def __init__(self, gates: dict[int, threading.Event]) -> None:
        super().__init__()
        self.gates, self.asked = gates, 0

    def predict(self, x: Any) -> float:
        self.asked += 1
        gate = self.gates.get(self.asked)
        if gate is not None:
            gate.wait(60)  # (a test that never opens it fails on its own waits)
        return super().predict(x)


class Background:
    """A game server with its page, on its own event loop in a thread."""

    def __init__(self, data: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server: GameServer = self.call(self._start(data))
        self.url = f"http://127.0.0.1:{self.server.port}"

    async def _start(self, data: Path) -> GameServer:
        server = GameServer(ServerSettings(port=0, data=data))
        self.web = attach(server, public=False)
        await server.start()
        self.token = server.store.add_token("teacher")
        return server

    def call(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(60)

    def close(self) -> None:
        self.call(self.server.stop())
        self.web.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the file's tests (each opens its own pages). The tests
    run on one xdist worker (``pytestmark``)."""
    with chromium() as browser:
        yield browser


TOURNAMENT = """learners = ["soa", "halving", "consistent"]
adversaries = ["shattered-tree", "random-target"]

[tournament]
name = "{name}"
rounds = 40
seeds = 1
games = ["mistake-bound"]

[[classes]]
spec = "thresholds:n=15"
"""


@pytest.mark.slow
def test_the_page_follows_a_game_steps_its_replay_and_fills_a_leaderboard(tmp_path, browser):
    data = tmp_path / "data"
    shots = data / "screenshots"
    shots.mkdir(parents=True)
    background = Background(data)
    try:
        # a game between a remote (slow) learner and the server's shattered-tree
        played: list[dict[str, Any]] = []
        game = GameSpec("mistake-bound", 1000, make_class("thresholds:n=15"))
        # held before round 100 until the page has looked, then before round 900 until
        # it has seen the curve grow
        looked, grew = threading.Event(), threading.Event()
        player = threading.Thread(target=lambda: played.append(asyncio.run(play_remote(
            background.server.url.replace("http", "ws"), GatedHalving({100: looked, 900: grew}),
            "shattered-tree", game, seed=7, token=background.token, name="slow-halving"))))
        player.start()
        deadline = time.monotonic() + 20
        while not background.server.running and time.monotonic() < deadline:
            time.sleep(0.02)
        (game_id,) = list(background.server.running)

        # (the page forbids eval; Playwright's wait_for_function evaluates strings)
        page = browser.new_page(viewport={"width": 1100, "height": 900}, bypass_csp=True)
        # no token: the login form; the token logs in (a cookie), then the games list
        page.goto(background.url + "/")
        page.fill("input[name=token]", background.token)
        page.click("#login button")
        row = page.locator(f"tr[data-game-id='{game_id}']")
        row.wait_for()
        assert row.locator("td.learner").inner_text() == "remote:slow-halving"

        # the game's page while it runs: the curve grows from the spectator feed
        page.goto(f"{background.url}/games/{game_id}")
        page.wait_for_function("document.querySelector('#curve').dataset.points !== undefined")
        first = int(page.get_attribute("#curve", "data-points") or 0)
        assert first < 100
        looked.set()
        page.wait_for_function(
            f"Number(document.querySelector('#curve').dataset.points) > {first} + 50 && "
            "!document.querySelector('#curve').dataset.ended", timeout=15000)
        grew.set()
        assert page.locator("#curve .u-legend").inner_text().count("bound") == 1
        page.wait_for_function("document.querySelector('#curve').dataset.ended === 'complete'",
                               timeout=30000)
        player.join(30)
        (result,) = played
        assert page.locator("#summary td.mistakes").inner_text() == str(result["mistakes"])
        assert int(page.get_attribute("#curve", "data-points") or 0) >= 900
        assert float(page.get_attribute("#curve", "data-last") or -1) == result["mistakes"]
        # the tree: root and Ldim(H) = 4 nodes down the path played are lit
        page.wait_for_function("document.querySelector('#tree').dataset.lit === '5'")
        # the replay steps round by round
        page.click("#step-next")
        page.click("#step-next")
        page.wait_for_function("document.querySelector('#step-t').textContent === '2'")
        detail = page.locator("#step-detail").inner_text()
        assert "label" in detail and "|V| 4" in detail  # thresholds:n=15: 16 -> 8 -> 4
        assert page.locator("#step-total").inner_text() == "1000"  # (grew with the game)
        page.screenshot(path=str(shots / "web-game.png"), full_page=True)

        # a game another process plays (here a local, logged game): the page polls its log
        from littlestone.adversaries import ADVERSARIES
        from littlestone.server.records.logged import play_logged

        polled = threading.Event()  # (held before round 100 until the page has its log)
        local = threading.Thread(target=lambda: played.append(play_logged(
            game, GatedHalving({100: polled}), ADVERSARIES.make("shattered-tree"), 8, data)))
        local.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not [
                g for g in Store(data).games(status="running") if g["source"] != "server"]:
            time.sleep(0.02)
        (other,) = [g for g in Store(data).games(status="running") if g["source"] != "server"]
        page.goto(f"{background.url}/games/{other['game_id']}")
        page.wait_for_function("document.querySelector('#curve').dataset.points !== undefined")
        first = int(page.get_attribute("#curve", "data-points") or 0)
        polled.set()
        page.wait_for_function("document.querySelector('#curve').dataset.ended === 'complete'",
                               timeout=30000)
        local.join(30)
        assert int(page.get_attribute("#curve", "data-points") or 0) > first
        assert page.locator("#summary td.round").inner_text() == "1000"

        # the games list, refreshed, has the right mistake count
        page.goto(background.url + "/")
        cell = page.locator(f"tr[data-game-id='{game_id}'] td.mistakes")
        assert cell.inner_text() == str(result["mistakes"])

        # a tournament, then its leaderboard filling in while the page is open
        config = tmp_path / "t.toml"
        config.write_text(TOURNAMENT.format(name="done"))
        report = run_tournament(load_config(config), data, workers=1, progress=False)
        store = Store(data)
        rows = store.tournament_games("done")
        store.start_tournament("live", "a config")
        store.add_tournament_game("live", "0", rows[0])
        page.goto(background.url + "/tournaments/live")
        assert "1 games recorded" in page.locator("main").inner_text()
        for i, row_ in enumerate(rows[1:], 1):
            store.add_tournament_game("live", str(i), row_)
        page.wait_for_function(f"document.querySelector('main').innerText.includes("
                               f"'{len(rows)} games recorded')", timeout=10000)
        shown = page.locator("#learners td.name").all_inner_texts()
        assert shown == [r["learner"] for r in report.learners]
        assert shown == [r["learner"] for r in rank("live", rows, []).learners]
        assert page.locator("#heatmap td").count() == 3 * 2
        page.screenshot(path=str(shots / "web-tournament.png"), full_page=True)

        # with JavaScript off, the lists and the replay are plain HTML (pages of rounds)
        context = browser.new_context(java_script_enabled=False)
        context.add_cookies([{"name": "littlestone_token", "value": background.token,
                              "url": background.url}])
        plain = context.new_page()
        plain.goto(background.url + "/")
        assert plain.locator(f"tr[data-game-id='{game_id}'] td.mistakes").inner_text() == \
            str(result["mistakes"])
        plain.goto(f"{background.url}/games/{game_id}")
        plain.click("a[rel=next]")
        assert plain.locator("table.replay tr[data-t]").first.get_attribute("data-t") == "21"
        assert plain.locator("#curve svg").count() == 1  # the curve, drawn by the server
        plain.goto(background.url + "/tournaments/live")
        assert plain.locator("#learners td.name").all_inner_texts() == shown
        context.close()
    finally:
        background.close()
    for name in ("web-game.png", "web-tournament.png"):
        assert (shots / name).stat().st_size > 10_000
        if os.environ.get("LITTLESTONE_DOCS_SCREENSHOTS"):
            shutil.copy(shots / name, DOCS / name)


def verify(data: Path, game_id: str) -> str:
    """``littlestone replay --verify`` of a game, from the command line (exit status 0)."""
    done = subprocess.run([sys.executable, "-m", "littlestone", "replay", game_id,
                           "--data", str(data), "--verify"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def set_up(page: Any, url: str, role: str, game: str, opponent: str, rounds: int,
           hclass: str | None = None, experts: int | None = None) -> None:
    """The play page's form, filled in and sent."""
    page.goto(url + "/play")
    page.check(f"input[name=role][value={role}]")
    page.check(f"input[name=game][value={game}]")
    if hclass is not None:
        page.select_option("select[name=class]", hclass)
    if experts is not None:
        page.select_option("select[name=experts]", str(experts))
    page.select_option("select[name=opponent]", opponent)
    page.fill("input[name=rounds]", str(rounds))
    page.click("#start")


def turn(page: Any, phase: str, t: int) -> None:
    page.wait_for_selector(f"#board[data-phase={phase}][data-round='{t}']", timeout=20000)


def over(page: Any) -> tuple[str, str]:
    """The game's id and status once the page says it is over."""
    page.wait_for_selector("#board[data-phase=over][data-status]", timeout=20000)
    return (page.get_attribute("#board", "data-game-id") or "",
            page.get_attribute("#board", "data-status") or "")


@pytest.mark.slow
def test_a_person_plays_both_sides_through_the_page(tmp_path, browser):
    """The play page (littlestone.server.web.play, static/play.js): a person plays as the
    learner against the shattered tree with the 0/1 keys (and once with a probability),
    as the adversary against Halving, and both sides of the experts game; the referee
    refuses a label that empties the version space; every game is refereed, logged and
    verified like any other, and the class mode counts them."""
    data = tmp_path / "data"
    shots = data / "screenshots"
    shots.mkdir(parents=True)
    background = Background(data)
    try:
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        context.add_cookies([{"name": "littlestone_token", "value": background.token,
                              "url": background.url}])
        page = context.new_page()
        missing: list[str] = []  # (main: the console showed a 404, /favicon.ico)
        page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
        store = Store(data)

        # -- the learner against the shattered tree: the keys, and once a probability --
        set_up(page, background.url, "learner", "mistake-bound", "shattered-tree", 5,
               "thresholds:n=7")
        turn(page, "predict", 1)
        assert "120 s a move" in page.locator("#status").inner_text()  # the server's
        for t in range(1, 6):
            turn(page, "predict", t)
            if t == 2:
                assert page.locator("#space svg circle.current").count() == 1
                page.screenshot(path=str(shots / "play-learner.png"), full_page=True)
            if t == 4:
                page.fill("#p", "0.25")
                page.click("#answer-p")
            else:
                page.keyboard.press("1" if t % 2 else "0")
        game_id, status = over(page)
        assert status == "complete"
        # the tree's path: the root and Ldim(thresholds:n=7) = 3 nodes down it are lit
        assert page.get_attribute("#tree", "data-lit") == "4"
        row = store.game(game_id)
        assert row is not None and row["learner"] == "remote:person"
        assert float(page.get_attribute("#result", "data-mistakes") or -1) == row["mistakes"]
        # the page's own sum of |p - y| is the referee's expected mistakes
        expected = float(page.get_attribute("#mistakes", "data-expected") or -1)
        assert abs(expected - row["expected_mistakes"]) < 1e-9
        assert row["mistakes"] >= 3  # the tree forces Ldim(H) on deterministic answers
        assert verify(data, game_id).startswith("verified")

        # -- the adversary against Halving: instances that split V, labels against it --
        set_up(page, background.url, "adversary", "mistake-bound", "halving", 3,
               "thresholds:n=7")
        forced = 0
        for t in range(1, 4):
            turn(page, "instance", t)
            sizes = [page.locator("#turn button[data-x]").nth(x).inner_text()
                     for x in range(7)]
            # the most even split (each side's |V| is shown on the button)
            best = max(range(7), key=lambda x: min(int(v) for v in sizes[x].split()[-3::2]))
            page.click(f"#turn button[data-x='{best}']")
            turn(page, "label", t)
            prompt = page.locator("#turn .prompt").inner_text()
            p = float(prompt.split("p = ")[1].split(" ")[0])
            label = 0 if p >= 0.5 else 1
            assert page.get_attribute(f"#label-{label}", "data-realizable") == "1"
            forced += 1
            if t == 2:
                page.screenshot(path=str(shots / "play-adversary.png"), full_page=True)
            page.keyboard.press(str(label))
        game_id, status = over(page)
        assert status == "complete"
        row = store.game(game_id)
        assert row is not None and row["adversary"] == "remote:person"
        assert row["mistakes"] == forced == 3  # Halving errs on every even split
        verify(data, game_id)

        # -- a label that empties the version space: the referee refuses it -------------
        set_up(page, background.url, "adversary", "mistake-bound", "halving", 2,
               "singletons:n=8")
        turn(page, "instance", 1)
        page.click("#turn button[data-x='0']")
        turn(page, "label", 1)
        page.keyboard.press("1")  # V = {x = 0}
        turn(page, "instance", 2)
        page.click("#turn button[data-x='0']")
        turn(page, "label", 2)
        assert page.get_attribute("#label-0", "data-realizable") == "0"  # the page says so
        assert "keeps 1 hypothesis consistent" in page.locator("#turn").inner_text()
        page.keyboard.press("0")
        game_id, status = over(page)
        assert status == "rule_violation:adversary:empty_version_space"

        # -- expert advice, both ways: the regret curve against sqrt((T/2) ln d) --------
        set_up(page, background.url, "learner", "experts", "random-costs", 6, experts=2)
        turn(page, "weights", 1)
        page.keyboard.press("3")  # (main ignored a key past the last expert, silently)
        assert "no expert 3: this game has experts 1 to 2" in page.locator(
            "#status").inner_text()
        for t in range(1, 7):
            turn(page, "weights", t)
            page.keyboard.press(str(t % 2 + 1))  # all weight on expert 1 or 2, as shown
        game_id, status = over(page)
        assert status == "complete"
        assert page.get_attribute("#curve", "data-points") == "6"
        row = store.game(game_id)
        assert row is not None
        shown = page.locator("#regret").inner_text()
        assert f"expected regret {row['expected_regret']:.4g}" in shown or \
            f"expected regret {row['expected_regret']:g}" in shown
        verify(data, game_id)

        set_up(page, background.url, "adversary", "experts", "hedge", 4, experts=3)
        for t in range(1, 5):
            turn(page, "costs", t)
            page.keyboard.press(str(t % 3 + 1))  # expert t mod 3 + 1 costs 1
            page.keyboard.press("Enter")
        game_id, status = over(page)
        assert status == "complete"
        page.screenshot(path=str(shots / "play-experts.png"), full_page=True)
        verify(data, game_id)

        # -- the class mode: every game of the hour, mistakes against Ldim --------------
        page.goto(background.url + "/class")
        assert page.locator("#class-table tr[data-game-id]").count() == 5
        assert page.get_attribute("#histogram-learner", "data-scored") == "1"
        assert page.get_attribute("#histogram-adversary", "data-scored") == "1"
        page.screenshot(path=str(shots / "class-mode.png"), full_page=True)
        assert not missing, missing
        context.close()
    finally:
        background.close()
    for name in ("play-learner.png", "play-adversary.png", "play-experts.png",
                 "class-mode.png"):
        assert (shots / name).stat().st_size > 10_000
        if os.environ.get("LITTLESTONE_DOCS_SCREENSHOTS"):
            shutil.copy(shots / name, DOCS / name)
