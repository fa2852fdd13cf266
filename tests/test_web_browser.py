"""The page in a real browser: headless Chromium (Debian's ``chromium``; ``.ci/run``
installs it) driven by Playwright. A server plays a game while the page follows it;
a tournament's leaderboard fills in while the page is open. Screenshots are kept under
the data folder (``screenshots/``); with ``LITTLESTONE_DOCS_SCREENSHOTS=1`` they are also
copied to docs/ (README shows them)."""

from __future__ import annotations

import asyncio
import os
import shutil
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

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
DOCS = Path(__file__).resolve().parent.parent / "docs"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="no /usr/bin/chromium (apt-get install chromium)")


class SlowHalving(Halving):
    """Halving that thinks a little each round: a game long enough to watch."""

    def predict(self, x: Any) -> float:
        time.sleep(0.004)
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


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright  # (the dev extra's: never skipped)

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


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


def test_the_page_follows_a_game_steps_its_replay_and_fills_a_leaderboard(tmp_path, browser):
    data = tmp_path / "data"
    shots = data / "screenshots"
    shots.mkdir(parents=True)
    background = Background(data)
    try:
        # a game between a remote (slow) learner and the server's shattered-tree
        played: list[dict[str, Any]] = []
        game = GameSpec("mistake-bound", 1000, make_class("thresholds:n=15"))
        player = threading.Thread(target=lambda: played.append(asyncio.run(play_remote(
            background.server.url.replace("http", "ws"), SlowHalving(), "shattered-tree", game,
            seed=7, token=background.token, name="slow-halving"))))
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
        page.wait_for_function(
            f"Number(document.querySelector('#curve').dataset.points) > {first} + 50 && "
            "!document.querySelector('#curve').dataset.ended", timeout=15000)
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

        local = threading.Thread(target=lambda: played.append(play_logged(
            game, SlowHalving(), ADVERSARIES.make("shattered-tree"), 8, data)))
        local.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not [
                g for g in Store(data).games(status="running") if g["source"] != "server"]:
            time.sleep(0.02)
        (other,) = [g for g in Store(data).games(status="running") if g["source"] != "server"]
        page.goto(f"{background.url}/games/{other['game_id']}")
        page.wait_for_function("document.querySelector('#curve').dataset.points !== undefined")
        first = int(page.get_attribute("#curve", "data-points") or 0)
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
