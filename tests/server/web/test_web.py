"""The web page's routes and JSON API on the game server's own port (littlestone.server.web),
and the tournament report's charts; the browser's view is tests/server/web/test_web_browser.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from littlestone.charts import heat_color
from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.game import GameSpec, PlayedFields
from littlestone.learners import LEARNERS
from littlestone.server.net import GameServer, ServerSettings
from littlestone.server.records.store import Store
from littlestone.server.tournament import rank
from littlestone.server.tournament.report import write_report
from littlestone.server.web import attach
from littlestone.transport import connect
from tests.support import ROOT


@contextlib.asynccontextmanager
async def running_server(tmp_path: Path, public: bool = False, **settings: Any
                         ) -> AsyncIterator[Any]:
    """A game server with the page on its port (and a token in ``.token``)."""
    server = GameServer(ServerSettings(port=0, data=tmp_path, **settings))
    server.web = attach(server, public=public)  # type: ignore[attr-defined]
    await server.start()
    server.token = server.store.add_token("bob")  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        await server.stop()
        server.web.close()  # type: ignore[attr-defined]


def fetch(url: str, headers: dict[str, str] | None = None, method: str = "GET"
          ) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


async def get(url: str, **kwargs: Any) -> tuple[int, dict[str, str], bytes]:
    return await asyncio.to_thread(fetch, url, **kwargs)


async def get_json(url: str, token: str | None = None) -> Any:
    status, _, body = await get(url, headers={"Authorization": f"Bearer {token}"} if token
                                else None)
    assert status == 200, (status, body)
    return json.loads(body)


THRESHOLDS = GameSpec("mistake-bound", 30, make_class("thresholds:n=15"))


async def play_one(server: Any, learner: str = "halving", name: str = "alice") -> PlayedFields:
    return await play_remote(server.url, LEARNERS.make(learner), "shattered-tree", THRESHOLDS,
                             seed=3, token=server.token, name=name)


async def test_the_api_lists_a_game_its_rounds_curve_and_tree(tmp_path):
    async with running_server(tmp_path) as server:
        played = await play_one(server)
        base = f"http://127.0.0.1:{server.port}"
        (row,) = (await get_json(f"{base}/api/games", server.token))["games"]
        assert row["learner"] == "remote:alice" and row["status"] == "complete"
        assert not {"log", "chain_sha256", "chain_hmac"} & set(row)  # no paths, no anchors
        assert row["mistakes"] == played["mistakes"] == 4  # Ldim(thresholds:n=15)
        game = await get_json(f"{base}/api/games/{row['game_id']}", server.token)
        assert game["tree"] and game["bound"] == 4.0
        page = await get_json(f"{base}/api/games/{row['game_id']}/records?start=1&count=5",
                              server.token)
        sizes = [r["version_space"] for r in page["records"]]
        assert sizes == [8, 4, 2, 1, 1]  # each tree round halves V; then one is left
        assert [r["t"] for r in page["records"]] == [1, 2, 3, 4, 5]
        curve = await get_json(f"{base}/api/games/{row['game_id']}/curve", server.token)
        assert curve["t"][-1] == 30 and curve["value"][-1] == 4.0
        tree = await get_json(f"{base}/api/tree?class=thresholds:n=15", server.token)
        assert tree["ldim"] == 4 and len(tree["nodes"]) == 31
        # only classes played here: a viewer cannot make the server build a huge class
        status, _, _ = await get(f"{base}/api/tree?class=thresholds:n=100000000",
                                 headers={"Authorization": f"Bearer {server.token}"})
        assert status == 404
        # the played path is a root-to-leaf path of that tree
        labels = "".join(str(r["y"]) for r in page["records"][:4])
        nodes = {n["id"]: n for n in tree["nodes"]}
        assert [nodes["t" + labels[:i]].get("instance") for i in range(4)] == \
            [r["x"] for r in page["records"][:4]]
        status, _, body = await get(f"{base}/games/{row['game_id']}?start=3",
                                    headers={"Authorization": f"Bearer {server.token}"})
        html = body.decode()
        assert status == 200 and "remote:alice" in html and "<svg" in html
        assert 'data-t="3"' in html and 'data-t="2"' not in html  # the replay's page
        assert "Ldim(H)" in html or "log2|H|" in html  # the bound is named


async def test_a_token_or_the_public_view_is_needed(tmp_path):
    async with running_server(tmp_path) as server:
        app = server.web
        base = f"http://127.0.0.1:{server.port}"
        status, _, body = await get(f"{base}/api/games")
        assert status == 401 and b"token" in body
        status, _, body = await get(f"{base}/")
        assert status == 401 and b'<form id="login"' in body
        assert (await get(f"{base}/api/games", headers={"Authorization": "Bearer nope"}))[0] \
            == 401
        assert (await get(f"{base}/static/littlestone.js"))[0] == 200  # holds no data
        # the login form without JavaScript: a cookie, then the page
        status, headers, _ = await asyncio.to_thread(_no_redirect, f"{base}/login?token="
                                                     f"{server.token}")
        assert status == 303 and "HttpOnly" in headers["Set-Cookie"]
        cookie = headers["Set-Cookie"].split(";")[0]
        assert (await get(f"{base}/api/games", headers={"Cookie": cookie}))[0] == 200
        # with the form's script: POST with the bearer token, 204 and the cookie
        status, headers, _ = await get(f"{base}/login", method="POST",
                                       headers={"Authorization": f"Bearer {server.token}",
                                                **SAME_ORIGIN})
        assert status == 204 and headers["Set-Cookie"].startswith("littlestone_token=")
        # a tournament not started yet: its page waits for it; the API says not found
        bearer = {"Authorization": f"Bearer {server.token}"}
        status, _, body = await get(f"{base}/tournaments/later", headers=bearer)
        assert status == 200 and b"No game of this tournament is recorded yet" in body
        assert (await get(f"{base}/tournaments/later?part=board", headers=bearer))[0] == 404
        assert (await get(f"{base}/api/tournaments/later", headers=bearer))[0] == 404
        # read-only: nothing but GET
        assert (await get(f"{base}/api/games", method="DELETE",
                          headers={"Authorization": f"Bearer {server.token}"}))[0] == 405
        app.access = type(app.access)(public=True, tokens=app.access.tokens)
        assert (await get(f"{base}/api/games"))[0] == 200
        # and the agents' endpoint is where it was
        played = await play_one(server)
        assert played["status"] == "complete"


#: What a browser says of a request from this origin's own page (the login form's).
SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}


def _no_redirect(url: str) -> tuple[int, dict[str, str], bytes]:
    """GET ``url`` as this origin's login form does, without following a redirect."""
    class Keep(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(Keep)
    try:
        with opener.open(urllib.request.Request(url, headers=SAME_ORIGIN),
                         timeout=20) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.mark.slow
async def test_the_live_feed_is_json_read_only_and_same_origin(tmp_path):
    async with running_server(tmp_path, public=True, anonymous=True) as server:
        url = f"ws://127.0.0.1:{server.port}/live/nosuch"
        async with connect(url) as live:
            assert json.loads(await live.recv()) == {"type": "gone", "game_id": "nosuch"}
        # a running game: the browser gets watching, rounds and end as JSON
        slow = LEARNERS.make("halving")
        predict = slow.predict
        started = asyncio.Event()

        def slow_predict(x: Any) -> float:
            started.set()
            return predict(x)

        slow.predict = slow_predict
        game = asyncio.create_task(play_remote(server.url, slow, "shattered-tree",
                                               GameSpec("mistake-bound", 3000,
                                                        make_class("thresholds:n=15")),
                                               seed=1, name="slow"))
        await started.wait()
        (game_id,) = list(server.running)
        seen = []
        async with connect(f"ws://127.0.0.1:{server.port}/live/{game_id}") as live:
            await live.send(msgpack.packb({"type": "predict", "p": 0.5}))  # never read
            while not seen or seen[-1]["type"] != "end":
                seen.append(json.loads(await live.recv()))
        result = await game
        assert seen[0]["type"] == "watching" and seen[0]["learner"] == "remote:slow"
        assert seen[-1]["status"] == "complete" == result["status"]
        rounds = [m for m in seen if m["type"] == "rounds"]
        assert rounds and rounds[-1]["mistakes"] == result["mistakes"]
        # another site's page may not open the feed
        request = Request(f"/live/{game_id}", Headers([
            ("Upgrade", "websocket"), ("Host", f"127.0.0.1:{server.port}"),
            ("Origin", "http://evil.example")]))
        assert server.http is not None
        answer = server.http(request)
        assert isinstance(answer, Response) and answer.status_code == 403


async def test_a_submission_is_listed_by_the_name_the_tournament_gave_it(tmp_path, capsys):
    async with running_server(tmp_path, public=True) as server:
        await play_one(server, name="learner-5f3a9c")
        (row,) = server.store.games()
        server.store.start_tournament("class1", "x")
        server.store.add_tournament_game("class1", "k1", {
            "game_id": row["game_id"], "status": "complete", "learner": "alice.py:Alice",
            "adversary": "shattered-tree", "game": "mistake-bound", "class": "thresholds:n=15",
            "seed": 3, "result": {}})
        base = f"http://127.0.0.1:{server.port}"
        (listed,) = (await get_json(f"{base}/api/games"))["games"]
        assert listed["learner"] == "alice.py:Alice" and listed["tournament"] == "class1"
        assert listed["learner_spec"] == "remote:learner-5f3a9c"
        html = (await get(f"{base}/"))[2].decode()
        assert "alice.py:Alice" in html and "learner-5f3a9c" not in html
    from littlestone.cli import main

    assert main(["games", "--data", str(tmp_path), "--json"]) == 0  # and the command line
    (listed,) = json.loads(capsys.readouterr().out)["games"]
    assert listed["learner"] == "alice.py:Alice"


def test_the_report_colours_on_the_theoretical_scale_and_its_logs_travel(tmp_path):
    from littlestone.adversaries import ADVERSARIES
    from littlestone.server.records.logged import play_logged

    data = tmp_path / "data"
    played = play_logged(THRESHOLDS, LEARNERS.make("soa"), ADVERSARIES.make("shattered-tree"),
                         1, data)
    store = Store(data)
    (game,) = store.games()

    def row(learner: str, status: str, mistakes: int, log: str | None) -> dict:
        return {"game_id": game["game_id"] if log else None, "status": status,
                "game": "mistake-bound", "class": "thresholds:n=15", "learner": learner,
                "adversary": "shattered-tree", "seed": 1, "horizon": 30,
                "normaliser_value": 4.0, "log": log, "message": "",
                "result": {"rounds": 30 if status == "complete" else 1, "mistakes": mistakes,
                           "expected_mistakes": mistakes, "bound": 4.0,
                           "bound_name": "Ldim(H)"}}

    report = rank("scale", [row("soa", "complete", 4, str(played.log)),
                            row("crasher", "crash:learner:ValueError", 0, None)], [])
    path = write_report(report, data)
    page = path.read_text()
    optimum = re.search(r'<th>soa</th><td style="background:([^"]+)"', page)
    crashed = re.search(r'<th>crasher</th><td style="background:([^"]+)"', page)
    assert optimum and crashed
    assert optimum.group(1) == heat_color(1.0) == heat_color(0.25)  # 1.0 = minimax: green
    assert crashed.group(1) == heat_color(100.0) != optimum.group(1)  # 7.25 > 3: red
    assert "hsl(120" in optimum.group(1) and "hsl(0," in crashed.group(1)
    assert "1.0 is the minimax value" in page
    # the curve has axes (tick labels, "rounds") and names its bound
    assert "rounds</text>" in page and "bound 4: Ldim(H)" in page
    # publish the reports folder alone: every log link still resolves
    published = tmp_path / "elsewhere"
    shutil.copytree(path.parent, published)
    links = re.findall(r'<a href="([^"]+)">log</a>', page)
    assert len(links) == 1 and not links[0].startswith(("/", ".."))
    assert (published / links[0]).read_bytes() == Path(played.log).read_bytes()


@pytest.mark.parametrize("value, colour", [(None, "#e6e6e6"), (0.5, "hsl(120, 55%, 72%)"),
                                           (2.0, "hsl(30, 75%, 67%)"),
                                           (3.0, "hsl(0, 75%, 62%)")])
def test_the_heat_scale_is_fixed_not_relative(value, colour):
    """The same score has the same colour in every tournament (no rescaling to the
    tournament's own maximum)."""
    assert heat_color(value) == colour


def _read_until(stream: Any, marker: str, seconds: float = 60) -> str:
    """Lines of a child's stream until one holds ``marker`` (that line)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = stream.readline()
        if marker in line:
            return str(line)
        if not line:
            break
    raise AssertionError(f"no {marker!r} from the child")


@pytest.mark.slow
def test_serve_shows_the_page_with_a_token_or_publicly(tmp_path):
    import subprocess
    import sys

    for public in (False, True):
        child = subprocess.Popen(
            [sys.executable, "-m", "littlestone", "serve", "--port", "0", "--data",
             str(tmp_path), *(["--public"] if public else [])],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = _read_until(child.stdout, "web page on")
            url = re.search(r"(http://\S+/)", line).group(1)
            assert ("public, read-only" in line) == public
            status, _, body = fetch(url + "api/games")
            assert status == (200 if public else 401), body
        finally:
            child.terminate()
            child.wait(30)
    child = subprocess.run([sys.executable, "-m", "littlestone", "serve", "--port", "0",
                            "--no-web", "--help"], capture_output=True, text=True)
    assert "--public" in child.stdout and "--no-web" in child.stdout


def test_tournament_serve_shows_the_leaderboard_as_it_fills_in(tmp_path):
    import signal
    import subprocess
    import sys

    config = tmp_path / "t.toml"
    config.write_text('learners = ["soa", "halving"]\nadversaries = ["shattered-tree"]\n\n'
                      '[tournament]\nname = "live"\nrounds = 20\nseeds = 2\n'
                      'games = ["mistake-bound"]\n\n[[classes]]\nspec = "thresholds:n=15"\n')
    child = subprocess.Popen(
        [sys.executable, "-m", "littlestone", "tournament", str(config), "--data",
         str(tmp_path / "data"), "--workers", "1", "--serve", "0", "--public"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # (SIGABRT: every thread's stack)
        # Ctrl-C as a terminal sends it, whatever this suite runs under: one started in
        # the background by a script (`make test &`) ignores SIGINT, its children
        # inherit that, and Python then raises no KeyboardInterrupt (this test's failure
        # in the loaded runs of issue 44)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = _read_until(child.stderr, "the leaderboard, live:")
        url = line.split("live: ", 1)[1].strip()
        assert url.endswith("/tournaments/live")
        _read_until(child.stderr, "still serving")  # the tournament is over; the page stays
        status, _, body = fetch(url.replace("/tournaments/", "/api/tournaments/"))
        board = json.loads(body)
        assert status == 200 and board["games"] == 4
        assert [r["learner"] for r in board["learners"]] == ["halving", "soa"]  # tied, by name
        status, _, body = fetch(url)
        assert status == 200 and b"Payoff heatmap" in body
    finally:
        child.send_signal(signal.SIGINT)
        try:
            code = child.wait(30)
        except subprocess.TimeoutExpired as late:  # (seen twice under load)
            child.send_signal(signal.SIGABRT)
            err = child.communicate(timeout=30)[1]
            raised = late.__context__  # (what the test hit first, if anything: kept)
            pytest.fail(f"the tournament did not stop on Ctrl-C in 30 s (the test had "
                        f"raised: {raised!r}): {err[-4000:]}")
        assert code == 0


async def test_an_experts_game_shows_regret_and_the_learners_weights(tmp_path):
    from littlestone.adversaries import ADVERSARIES
    from littlestone.server.records.logged import play_logged

    game = GameSpec("experts", 50, None, 4)
    played = play_logged(game, LEARNERS.make("hedge"), ADVERSARIES.make("cover-flip"), 2,
                         tmp_path)
    async with running_server(tmp_path, public=True) as server:
        base = f"http://127.0.0.1:{server.port}"
        (row,) = (await get_json(f"{base}/api/games"))["games"]
        curve = await get_json(f"{base}/api/games/{row['game_id']}/curve")
        assert curve["kind"] == "regret" and len(curve["t"]) == 50
        assert curve["value"][-1] == pytest.approx(played.result.regret)
        assert curve["bound"] is not None and "T" in curve["bound_name"]  # Hedge's bound
        page = await get_json(f"{base}/api/games/{row['game_id']}/records?start=49&count=9")
        assert [r["t"] for r in page["records"]] == [49, 50]
        weights = page["records"][0]["weights"]
        assert len(weights) == 4 and sum(weights) == pytest.approx(1.0)
        status, _, body = await get(f"{base}/games/{row['game_id']}")
        assert status == 200 and b"Cumulative regret" in body and b"weights" in body


def test_the_replay_rows_and_the_curve_are_the_referees_records(tmp_path):
    """The page computes the running totals vectorised: they equal the log reader's
    records (the referee's), round by round, for a randomised learner."""
    from littlestone.adversaries import ADVERSARIES
    from littlestone.server.records.logged import play_logged
    from littlestone.server.records.logs import read_log
    from littlestone.server.web import data

    game = GameSpec("mistake-bound", 700, make_class("thresholds:n=63"))
    played = play_logged(game, LEARNERS.make("randomized-weighted-majority"),
                         ADVERSARIES.make("random-target"), 5, tmp_path)
    store = Store(tmp_path)
    (row,) = store.games()
    expected = list(read_log(played.log).records())
    shown = data.records(store, row["game_id"], 1, 500)["records"]
    shown += data.records(store, row["game_id"], 501, 500)["records"]
    assert len(shown) == 700
    for mine, theirs in zip(shown, expected, strict=True):
        assert {k: mine[k] for k in theirs._fields} == theirs._asdict()
    assert any(0 < r["p"] < 1 for r in shown)  # (randomised: the expected sums are floats)
    curve = data.curve(store, row["game_id"])
    assert curve is not None and curve["t"][-1] == 700
    at = {t: i for i, t in enumerate(curve["t"])}
    for record in expected:
        if record.t in at:
            assert curve["value"][at[record.t]] == record.mistakes
            assert curve["expected"][at[record.t]] == record.expected_mistakes


def test_a_browser_that_fails_never_breaks_the_game():
    """The live feed's spectator is called from the game's log writer: whatever goes
    wrong with the browser's connection, it only misses the message."""
    from littlestone.protocol.codec import encode
    from littlestone.server.web.app import _JsonSpectator

    class Broken:
        def send_nowait(self, frame: bytes) -> bool:
            raise ConnectionError("gone")

    class Taking:
        def __init__(self) -> None:
            self.sent: list[bytes] = []

        def send_nowait(self, frame: bytes) -> bool:
            self.sent.append(frame)
            return True

    message = encode({"type": "rounds", "t": 3, "mistakes": 1, "y": [0, 1]})
    assert _JsonSpectator(Broken()).send_nowait(message) is False
    taking = Taking()
    assert _JsonSpectator(taking).send_nowait(message) is True
    assert json.loads(taking.sent[0]) == {"type": "rounds", "t": 3, "mistakes": 1,
                                          "y": [0, 1]}


async def test_the_page_is_served_over_https_on_a_tls_port(tmp_path):
    """``serve --tls-cert``: the page is https:// on the same port, and its login cookie
    is Secure."""
    import ssl

    import trustme

    from littlestone.transport import server_tls

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    context = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))

    def fetch_tls(url: str) -> tuple[int, dict[str, str]]:
        try:
            with urllib.request.urlopen(url, timeout=20, context=context) as response:
                return response.status, dict(response.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers)

    async with running_server(tmp_path / "data",
                              tls=server_tls(tmp_path / "server.pem")) as server:
        base = f"https://127.0.0.1:{server.port}"
        assert (await asyncio.to_thread(fetch_tls, f"{base}/api/games"))[0] == 401
        status, headers = await asyncio.to_thread(
            _no_redirect_tls, f"{base}/login?token={server.token}", context)
        assert status == 303 and "; Secure" in headers["Set-Cookie"]


def _no_redirect_tls(url: str, context: Any) -> tuple[int, dict[str, str]]:
    class Keep(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(Keep, urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(urllib.request.Request(url, headers=SAME_ORIGIN),
                         timeout=20) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


async def test_a_players_token_follows_only_its_own_running_games(tmp_path):
    """Roles hold on the page as on the wire (PROTOCOL.md 3.1)."""
    async with running_server(tmp_path) as server:
        carol = server.store.add_token("carol")
        viewer = server.store.add_token("viewer", "spectator")
        hand = connect(server.url)  # bob's learner, played by hand: the game waits
        ws = await hand.__aenter__()
        await ws.send(msgpack.packb({"type": "hello", "version": 1, "role": "learner",
                                     "agent": "hand", "token": server.token,
                                     "capabilities": []}))
        await ws.recv()
        await ws.send(msgpack.packb({"type": "challenge", "opponent": "random-target",
                                     "seed": 1, "rules": {"game": "mistake-bound",
                                                          "class": "thresholds:n=15",
                                                          "experts": None, "rounds": 5,
                                                          "horizon": 5}}))
        game_id = msgpack.unpackb(await ws.recv())["game_id"]
        base = f"http://127.0.0.1:{server.port}"
        for token, status in ((carol, 404), (viewer, 200), (server.token, 200)):
            code, _, _ = await get(f"{base}/api/games/{game_id}",
                                   headers={"Authorization": f"Bearer {token}"})
            assert code == status, token
            answer = server.http(Request(f"/live/{game_id}", Headers([
                ("Upgrade", "websocket"), ("Host", f"127.0.0.1:{server.port}"),
                ("Authorization", f"Bearer {token}")])))
            assert (isinstance(answer, Response) and answer.status_code == 404) == (
                status == 404)
        listed = await get_json(f"{base}/api/live", carol)
        assert listed == {"running": []}
        while True:  # bob plays it out; then it is a finished game, which anyone reads
            message = msgpack.unpackb(await ws.recv())
            if message["type"] == "end":
                break
            if message["type"] == "instance":
                await ws.send(msgpack.packb({"type": "predict", "t": message["t"], "p": 0}))
        await hand.__aexit__(None, None, None)
        code, _, _ = await get(f"{base}/api/games/{game_id}",
                               headers={"Authorization": f"Bearer {carol}"})
        assert code == 200


async def test_a_name_a_peer_chose_is_escaped_on_every_page(tmp_path):
    """A peer names its agent ``<script>…``: the page shows the text, never runs it."""
    async with running_server(tmp_path) as server:
        evil = "<script>alert(1)</script>'\"><img src=x onerror=alert(2)>"
        out = await play_one(server, name=evil[:60])
        base = f"http://127.0.0.1:{server.port}"
        headers = {"Authorization": f"Bearer {server.token}"}
        for path in ("/", f"/games/{out['game_id']}", "/?part=games"):
            status, _, body = await get(base + path, headers=headers)
            text = body.decode()
            assert status == 200 and "<script>alert" not in text and "<img src=x" not in text
            assert "&lt;script&gt;alert(1)" in text


@pytest.mark.slow
async def test_a_live_feed_closes_when_its_token_is_revoked(tmp_path, monkeypatch):
    """A spectator's token revoked while it watches: its feed closes (1008) within a
    check interval, and the game goes on; a fresh request with it is refused at once."""
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import ConnectionClosed

    from littlestone.server.web import app

    monkeypatch.setattr(app, "REVOKE_CHECK_S", 0.05)
    async with running_server(tmp_path) as server:
        viewer = server.store.add_token("viewer", "spectator")
        slow = LEARNERS.make("halving")
        predict = slow.predict
        started = asyncio.Event()

        def slow_predict(x: Any) -> float:
            started.set()
            return predict(x)

        slow.predict = slow_predict
        game = asyncio.create_task(play_remote(
            server.url, slow, "shattered-tree",
            GameSpec("mistake-bound", 10 ** 6, make_class("thresholds:n=15")), seed=1,
            token=server.token))
        await started.wait()
        (game_id,) = list(server.running)
        headers = {"Authorization": f"Bearer {viewer}"}
        async with ws_connect(f"ws://127.0.0.1:{server.port}/live/{game_id}",
                              additional_headers=headers, proxy=None) as live:
            assert json.loads(await live.recv())["type"] == "watching"
            assert server.store.revoke_token("viewer")
            with pytest.raises(ConnectionClosed) as info:
                while True:
                    await asyncio.wait_for(live.recv(), 10)
            assert info.value.rcvd is not None and info.value.rcvd.code == 1008
        code, _, _ = await get(f"http://127.0.0.1:{server.port}/api/games", headers=headers)
        assert code == 401
        assert game_id in server.running and not game.done()  # the game goes on
        game.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await game


async def _raw(port: int, request: bytes) -> bytes:
    """Everything the server sends back to ``request`` on a raw socket, up to its EOF."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 20)
    writer.close()
    return answer


@pytest.mark.parametrize("target", ["/static/littlestone.js", "/api/games", "/", "/nowhere"])
async def test_a_head_request_gets_the_gets_headers_and_no_body(tmp_path, target):
    async with running_server(tmp_path) as server:
        auth = f"Authorization: Bearer {server.token}\r\n".encode()
        asked = f"{{}} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode() + auth + b"\r\n"
        got = await _raw(server.port, asked.replace(b"{}", b"GET", 1))
        head = await _raw(server.port, asked.replace(b"{}", b"HEAD", 1))
        got_headers, _, got_body = got.partition(b"\r\n\r\n")
        head_headers, _, head_body = head.partition(b"\r\n\r\n")
        assert got_body and head_body == b""
        assert head_headers.split(b"\r\n")[0] == got_headers.split(b"\r\n")[0]  # status
        length = f"Content-Length: {len(got_body)}".encode()
        assert length in got_headers and length in head_headers


# -- templates that escape every value, and the route table (issue 24) ----------------

EVIL = "<script>alert(1)</script>'\"><img src=x onerror=alert(2)>"


def _shown_as_text(html: str, evil: str = EVIL) -> None:
    """``evil`` is on the page as text: escaped, never as markup."""
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html or "&lt;img src=x" in html


async def test_a_hostile_tournament_and_entrant_name_is_escaped_on_every_page(tmp_path):
    """A tournament and its entrants named ``<script>…`` (a submission's file name is
    its entrant's name): every page and part that shows them shows the text, and the
    index's link reaches the tournament's page though the name holds a ``/``."""
    async with running_server(tmp_path) as server:
        out = await play_one(server, name=EVIL[:60])
        server.store.start_tournament(EVIL, "x")
        for key, status in (("k1", "complete"), ("k2", "crash:learner:ValueError")):
            server.store.add_tournament_game(EVIL, key, {
                "game_id": out["game_id"] if key == "k1" else None, "status": status,
                "learner": f"{EVIL}.py:A", "adversary": EVIL, "game": "mistake-bound",
                "class": EVIL, "seed": 3, "horizon": 30, "normaliser_value": 4.0,
                "result": {"rounds": 30, "mistakes": 4, "expected_mistakes": 4.0}})
        base = f"http://127.0.0.1:{server.port}"
        headers = {"Authorization": f"Bearer {server.token}"}
        status, _, body = await get(f"{base}/", headers=headers)
        link = re.search(r'<a href="(/tournaments/[^"]+)">', body.decode())
        assert status == 200 and link is not None
        _shown_as_text(body.decode())
        for path in (link.group(1), link.group(1) + "?part=board", f"/games/{out['game_id']}",
                     "/?part=games"):
            status, _, body = await get(base + path, headers=headers)
            assert status == 200, path
            _shown_as_text(body.decode())
        status, _, body = await get(base + link.group(1), headers=headers)
        page = body.decode()
        assert "<h1>Tournament &lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "Payoff heatmap" in page and "Failed games" in page  # the board, shown
        assert page.count("&lt;img src=x onerror=alert(2)&gt;") >= 4  # name, entrants


def test_a_hostile_name_is_escaped_in_the_report(tmp_path):
    from littlestone.adversaries import ADVERSARIES
    from littlestone.server.records.logged import play_logged

    played = play_logged(THRESHOLDS, LEARNERS.make("soa"), ADVERSARIES.make("shattered-tree"),
                         1, tmp_path)
    (game,) = Store(tmp_path).games()
    name = "t<img src=x onerror=alert(3)>"  # (a file name: no "/")
    rows = [{"game_id": game["game_id"], "status": status, "game": "mistake-bound",
             "class": EVIL, "learner": EVIL, "adversary": f"{EVIL}.py:B", "seed": 1,
             "horizon": 30, "normaliser_value": 4.0, "log": str(played.log),
             "message": EVIL, "result": {"rounds": 30, "mistakes": 4, "expected_mistakes": 4,
                                         "bound": 4.0, "bound_name": EVIL}}
            for status in ("complete", "crash:learner:ValueError")]
    report = rank(name, rows, [{"learner": EVIL, "adversary": "x", "class": EVIL,
                                "game": "experts", "reason": EVIL}])
    page = write_report(report, tmp_path).read_text()
    _shown_as_text(page)
    assert "<img src=x onerror=alert(3)>" not in page
    assert "<title>t&lt;img src=x onerror=alert(3)&gt;</title>" in page
    assert "bound 4: &lt;script&gt;" in page  # in the curve's legend (SVG) too


def test_no_value_is_escaped_by_hand():
    """The page, the report and the charts leave escaping to the templates' environment
    (autoescape on): no ``escape()`` in their code, no template that switches it off or
    marks a value safe, and markup made from a string only of a rendered template."""
    root = ROOT
    code = [*sorted((root / "server" / "web").glob("*.py")),
            root / "server" / "tournament" / "report.py", root / "littlestone" / "charts.py"]
    templates = [*sorted((root / "server" / "web" / "templates").iterdir()),
                 *sorted((root / "server" / "tournament" / "templates").iterdir()),
                 *sorted((root / "littlestone" / "templates").iterdir())]
    assert len(code) >= 8 and len(templates) >= 10
    for path in code:
        text = path.read_text()
        for hand in (r"\bescape\(", r"import html\b", r"from html import", r"\bquoteattr\("):
            assert not re.search(hand, text), (path.name, hand)
        for made in re.findall(r"Markup\((.*)", text):
            assert ".render(" in made, (path.name, made)
    for path in templates:
        text = path.read_text()
        assert not re.search(r"\|\s*safe|autoescape\s+false|Markup", text), path.name


def test_the_templates_environment_escapes_html_and_svg():
    from littlestone.charts import environment

    env = environment("littlestone.server.web")
    assert env.autoescape("page.html") and env.autoescape("chart.svg")
    assert "&lt;b&gt;" in env.from_string("{{ x }}").render(x="<b>")


async def test_the_route_table_answers_its_routes_and_refuses_the_rest(tmp_path):
    """Each route of the table answers its own path; an unknown path is a 404 (JSON
    under /api/, a page elsewhere) whoever asks; a known path asked with another method
    is a 405 naming the methods it takes (``Allow``)."""
    from littlestone.server.web.app import ROUTES
    from littlestone.server.web.routes import WEBSOCKET

    async with running_server(tmp_path) as server:
        out = await play_one(server)
        server.store.start_tournament("cup", "x")
        base = f"http://127.0.0.1:{server.port}"
        bearer = {"Authorization": f"Bearer {server.token}"}
        values = {"game_id": out["game_id"], "name": "cup"}
        answered = set()
        for route in ROUTES:
            if route.method != "GET" or "competitions/" in route.pattern:
                continue  # (a competition's: tests/server/tournament/test_competition.py)
            path = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], route.pattern)
            path = path.replace("/static/cup", "/static/littlestone.css")
            path += "?class=thresholds:n=15" if path == "/api/tree" else ""
            path += "?spec=thresholds:n=7" if path == "/api/play/class" else ""
            status, headers, body = await get(base + path, headers=bearer)
            assert status == 200, (path, status, body[:200])
            assert headers["Content-Type"].startswith(
                "application/json" if path.startswith("/api/") else ("text/", "application/"))
            answered.add(route.pattern)
        assert {"/", "/games/{game_id}", "/api/games/{game_id}/records"} <= answered
        assert any(r.method == WEBSOCKET for r in ROUTES)
        for path, api in (("/nowhere", False), ("/api/nowhere", True),
                          (f"/games/{out['game_id']}/more", False), ("/api", True)):
            for headers in (bearer, {}):
                status, got, body = await get(base + path, headers=headers)
                assert status == 404, (path, headers)
                assert got["Content-Type"].startswith("application/json" if api else "text/html")
        for method, path, allow in (("DELETE", "/api/games", "GET, HEAD"),
                                    ("PUT", "/login", "GET, HEAD, POST"),
                                    ("POST", "/logout", "GET, HEAD"),
                                    ("POST", f"/games/{out['game_id']}", "GET, HEAD")):
            status, got, body = await get(base + path, method=method, headers=bearer)
            assert status == 405 and got["Allow"] == allow, (method, path, status)
            assert allow in (json.loads(body)["error"] if path.startswith("/api/")
                             else body.decode())
