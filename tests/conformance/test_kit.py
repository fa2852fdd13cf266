"""The conformance kit against the project's own server and client, and against
deliberately wrong ones: each wrong one fails exactly the cases its bug breaks."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from littlestone.cli import main
from littlestone.conformance import (
    CLIENT_CASES,
    SERVER_CASES,
    ServerUnderTest,
    run_client_cases,
    run_server_cases,
)
from littlestone.protocol.errors import CLOSE_CODES, Code
from tests.support.commands import cli, one_line
from tests.support.servers import running_server

#: Cases the project's server is known to fail (none: PROTOCOL.md and the server agree).
PENDING: dict[str, int] = {}


async def verdicts(server, cases=SERVER_CASES):
    """The failed cases and why; the skipped ones must be the timeout case alone (the
    default deadline and bank are too long to wait out)."""
    results = await run_server_cases(server.url, ServerUnderTest(server.token), cases)
    assert [r.id for r in results if r.verdict == "skip"] == ["timeout"]
    return {r.id: r.detail for r in results if r.verdict == "fail"}


def without_pending():
    return [case for case in SERVER_CASES if case.id not in PENDING]


async def test_the_projects_server_passes_every_case(tmp_path):
    async with running_server(tmp_path, anonymous=False) as server:
        failed = await verdicts(server)
    assert set(failed) <= set(PENDING), failed


async def test_an_anonymous_server_passes_and_skips_the_token_case(tmp_path):
    async with running_server(tmp_path, anonymous=True) as server:
        results = await run_server_cases(server.url, ServerUnderTest(None), without_pending())
    assert {r.id: r.verdict for r in results if r.verdict != "pass"} == {"token": "skip",
                                                                         "timeout": "skip"}


async def test_a_server_with_short_deadlines_passes_the_timeout_case(tmp_path):
    (case,) = [case for case in SERVER_CASES if case.id == "timeout"]
    async with running_server(tmp_path, anonymous=False, move_deadline=0.2,
                              time_bank=0.2) as server:
        (result,) = await run_server_cases(server.url, ServerUnderTest(server.token), [case])
    assert (result.verdict, result.detail) == ("pass", "")


async def test_a_wrong_close_code_fails_the_version_case(tmp_path, monkeypatch):
    monkeypatch.setitem(CLOSE_CODES, Code.UNSUPPORTED_VERSION, 1000)
    async with running_server(tmp_path, anonymous=False) as server:
        failed = await verdicts(server, without_pending())
    assert list(failed) == ["version"]
    assert failed["version"] == "expected a close with code 1002, got a close with code 1000"


async def test_a_wrong_coin_fails_the_coin_case(tmp_path, monkeypatch):
    from littlestone.games import coin, mistake_bound
    # the key read backwards: a coin a client cannot recompute from section 7
    monkeypatch.setattr(mistake_bound, "coin_for",
                        lambda key: coin.coin_for(bytes(reversed(key))))
    async with running_server(tmp_path, anonymous=False) as server:
        failed = await verdicts(server, without_pending())
    assert list(failed) == ["coin"], failed
    assert "the coin of section 7 gives" in failed["coin"]


async def test_a_welcome_without_a_limit_fails_the_hello_case(tmp_path, monkeypatch):
    from littlestone.protocol.session import ServerSession
    welcome = ServerSession.welcome

    def short_welcome(self, server, limits):
        return welcome(self, server, {k: v for k, v in limits.items()
                                      if k != "lobby_idle_ms"})

    monkeypatch.setattr(ServerSession, "welcome", short_welcome)
    async with running_server(tmp_path, anonymous=False) as server:
        failed = await verdicts(server, without_pending())
    assert failed == {"hello": "welcome.limits.lobby_idle_ms is not a positive int"}


async def test_a_frame_size_left_to_the_decoder_fails_the_frame_size_case(tmp_path,
                                                                          monkeypatch):
    from websockets.server import ServerProtocol

    from littlestone import transport

    class Unlimited(ServerProtocol):  # the WebSocket layer lets any frame through
        def __init__(self, max_size=None, **kwargs):
            super().__init__(max_size=None, **kwargs)

    monkeypatch.setattr(transport, "ServerProtocol", Unlimited)
    async with running_server(tmp_path, anonymous=False) as server:
        failed = await verdicts(server, without_pending())
    assert list(failed) == ["frame-size"], failed
    assert failed["frame-size"].startswith("expected a close with code 1009, got ")


CONNECT = [sys.executable, "-m", "littlestone", "connect", "{url}", "--class",
           "thresholds:n=8", "--rounds", "6"]


@pytest.mark.parametrize(("side", "skipped"), [
    (["--learner", "halving", "--vs", "random-target"], {}),
    # random-target commits and reveals: the scripted server checks the reveal opens it
    (["--adversary", "random-target", "--vs", "halving"],
     {"client-error-not-fatal": "an adversary's fault is not scripted: the learner's only"}),
    # noisy labels: a committed sequence, revealed when asked
    (["--adversary", "noisy:rate=0.2", "--vs", "hedge", "--game", "experts"],
     {"client-error-not-fatal": "an adversary's fault is not scripted: the learner's only"}),
])
async def test_the_projects_client_passes_every_client_case(side, skipped):
    results = await run_client_cases([*CONNECT, *side],
                                     env=dict(os.environ, LITTLESTONE_TOKEN="t"))
    assert [r.id for r in results] == [case.id for case in CLIENT_CASES]
    assert {r.id: r.detail for r in results if r.verdict == "fail"} == {}
    assert {r.id: r.detail for r in results if r.verdict == "skip"} == skipped


@pytest.mark.parametrize(("bug", "failing"), [
    ("none", set()),
    ("early", {"client-waits"}),
    ("late-t", {"client-moves", "client-unknown-keys", "client-error-not-fatal"}),
])
async def test_a_wrong_client_fails_the_cases_of_its_bug(bug, failing):
    program = [sys.executable, "-m", "tests.support.wrong_client", bug, "{url}"]
    results = await run_client_cases(program)
    failed = {r.id: r.detail for r in results if r.verdict != "pass"}
    assert set(failed) == failing, failed
    if bug == "late-t":
        assert failed["client-moves"].startswith("round 1: predict has t=2")


def test_the_command_prints_a_table_and_exits_by_the_verdicts(capsys):
    status = main(["conformance", "client", "--case", "client-waits", "--",
                   sys.executable, "-m", "tests.support.wrong_client", "early", "{url}"])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert out[0].split() == ["case", "section", "verdict"]
    assert out[1].split()[:3] == ["client-waits", "3", "FAIL"]
    assert out[-1] == "0 passed, 1 failed"
    status = main(["conformance", "client", "--json", "--case", "client-hello", "--",
                   sys.executable, "-m", "tests.support.wrong_client", "early", "{url}"])
    answer = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert status == 0 and (answer["passed"], answer["failed"]) == (1, 0)
    assert answer["cases"] == [{"id": "client-hello", "section": "3", "verdict": "pass",
                                "detail": "", "point": None,
                                "title": CLIENT_CASES[0].title}]


@pytest.mark.parametrize(("args", "says"), [
    (["server", "http://x"], "is not a ws:// or wss:// URL"),
    (["server", "ws://127.0.0.1:9", "--case", "nosuch"], "no case 'nosuch'"),
    (["client"], "name the client program after --"),
    # a program not found, a server not listening: one line, not a table of every case
    # failing for the same reason
    (["client", "--", "/nonexistent/ls-client", "{url}"],
     "cannot run '/nonexistent/ls-client'"),
    (["server", "ws://127.0.0.1:1"], "cannot connect to ws://127.0.0.1:1"),
    (["server", "ws://127.0.0.1:99999"], "is not a ws:// or wss:// URL"),
])
def test_bad_use_is_one_line_and_status_2(args, says):
    assert says in one_line(cli("conformance", *args), 2)


@pytest.mark.parametrize(("spec", "says"), [
    ("matrix:path=/etc/passwd", "a class read from a file is not served here"),
    ("thresholds:n=70000", "hypotheses"),
    ("halfspaces:d=3", "finite classes of up to 2^16 hypotheses"),
])
def test_the_scripted_server_builds_no_file_nor_a_class_over_its_budget(spec, says):
    from littlestone.conformance.client_cases import Game, Unsupported
    rules = {"game": "mistake-bound", "class": spec, "experts": None, "rounds": 3,
             "horizon": 3}
    with pytest.raises(Unsupported, match=re.escape(says)):
        Game.of({"type": "challenge", "rules": rules, "opponent": "x", "seed": 1})
    assert Game.of({"type": "challenge", "opponent": "x", "seed": 1,
                    "rules": dict(rules, **{"class": "thresholds:n=4"})}).hclass is not None
