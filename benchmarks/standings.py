"""A competition's standings read at the size of a deadline night, beside a class-sized
field in the same run (``python -m benchmarks.standings``; ``--students 400 --versions
5`` by default: 2,000 versions and 24,000 games).

:func:`build_field` writes such a data folder synthetically, in seconds (the versions'
rows and the games' rows straight into the index, then the stored cells rebuilt from the
games once). A server with its page then runs in a child process; this process asks it
for the board (``?part=board``), the API (``/api/competitions/NAME``) and the CSV, and
prints for each the child's CPU per request (its ``/proc`` times around N requests):
fresh (no ``If-None-Match``), ``304`` (the page's script's refresh while nothing
changed) and ``changed`` (a game recorded before each request, alternately the built-in
learner's and a student's version's: its cell read, its two entrants' lines moved on the
ladders, and the page rendered once), then the latency p50/p99 of the board at 100
requests a second, with ``If-None-Match`` and without (the render kept for its tag).

Tests never time anything; tests/server/web/test_standings_web.py asserts that a
request reads no game and that a repeated one reads nothing but the stamp.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

COMPETITION = """learners = ["halving"]
adversaries = ["random-target", "shattered-tree", "prior-target"]

[tournament]
name = "{name}"
rounds = 30
seeds = 2
games = ["mistake-bound"]

[[classes]]
spec = "thresholds:n=15"

[[classes]]
spec = "thresholds:n=31"

[competition]
submitted = ["learner"]
versions_per_day = 10
"""
ADVERSARIES = ("random-target", "shattered-tree", "prior-target")
CLASSES = ("thresholds:n=15", "thresholds:n=31")
SEEDS = (0, 1)


def build_field(data: Path, name: str, students: int, versions: int) -> Path:
    """A competition ``name`` in ``data`` with ``students`` x ``versions`` rated versions
    of learners, each with its 12 games against the three built-in adversaries (two
    classes, two seeds; one game in 16 a crash), and the built-in learner's; returns the
    competition's file. Writes rows straight into the index, then rebuilds the cells."""
    import importlib

    from littlestone.server.records.store import Store

    importlib.import_module("littlestone.server.tournament.ranking")  # (registers the rules)

    data.mkdir(parents=True, exist_ok=True)
    config = data.parent / f"{name}.toml"
    config.write_text(COMPETITION.format(name=name))
    store = Store(data)
    store.start_tournament(name, "synthetic")
    learners = ["halving"]
    db = store._db  # (a benchmark's shortcut: one transaction for every row)
    db.execute("BEGIN")
    for student in range(students):
        account = f"s{student:04d}"
        for version in range(1, versions + 1):
            path = f"competitions/{name}/{account}/v{version}.py"
            digest = hashlib.sha256(f"{account}{version}".encode()).hexdigest()
            db.execute("INSERT INTO submissions (competition, account, version, agent, "
                       "sha256, bytes, path, submitted, role, verdict, report, rating) "
                       "VALUES (?, ?, ?, ?, ?, 100, ?, '2026-11-27T10:00:00Z', 'learner', "
                       "'accepted', '{}', 'rated')",
                       (name, account, version, f"v{version}.py:Vote", digest, path))
            learners.append(f"{(data / path).resolve()}:Vote")
    count = 0
    for index, learner in enumerate(learners):
        for adversary in ADVERSARIES:
            for hclass in CLASSES:
                for seed in SEEDS:
                    count += 1
                    crashed = count % 16 == 0
                    mistakes = (index * 7 + seed * 3 + len(hclass)) % 11
                    status = "crash:learner:ZeroDivisionError" if crashed else "complete"
                    row = {"game_id": f"g{count:07d}", "status": status, "message": "",
                           "game": "mistake-bound", "class": hclass, "learner": learner,
                           "adversary": adversary, "seed": seed, "horizon": 30,
                           "normaliser_value": 4.0,
                           "result": {"rounds": 3 if crashed else 30,
                                      "mistakes": mistakes,
                                      "expected_mistakes": mistakes - 0.25}}
                    key = f"mistake-bound|{hclass}|{learner}|{adversary}|{seed}"
                    db.execute("INSERT INTO tournament_games VALUES (?, ?, ?, ?, ?, ?)",
                               (name, key, row["game_id"], status, json.dumps(row),
                                "2026-11-27T10:00:00Z"))
    db.execute("COMMIT")
    store.rebuild_scores(name)
    store.close()
    return config


def _serve(data: Path, config: Path) -> None:
    """(The child.) A server with the competition and its page; prints its port and a
    token, then serves until stdin closes."""
    import asyncio

    from littlestone.server.net import GameServer, ServerSettings
    from littlestone.server.tournament.competition import Competition, load_competition
    from littlestone.server.web import attach

    async def run() -> None:
        server = GameServer(ServerSettings(port=0, data=data))
        competition = Competition(load_competition(config), data, unsafe=True)
        competition.attach(server)
        web = attach(server)
        await server.start()
        token = server.store.add_token(f"teacher-{os.getpid()}")
        print(server.port, token, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        competition.close()
        await server.stop()
        web.close()

    asyncio.run(run())


def _cpu(pid: int) -> float:
    """A process's CPU seconds so far (user + system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _get(url: str, token: str, tag: str | None = None) -> tuple[int, str | None]:
    headers = {"Authorization": f"Bearer {token}"}
    if tag:
        headers["If-None-Match"] = tag
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=30) as answer:
            answer.read()
            return answer.status, answer.headers.get("ETag")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("ETag")


def measure(data: Path, config: Path, name: str, requests: int, land: int) -> dict[str, float]:
    """The child's CPU milliseconds per request of each route and way, and the board's
    p50/p99 latency at 100 requests a second."""
    from littlestone.server.records.store import Store

    child = subprocess.Popen([sys.executable, "-m", "benchmarks.standings", "--serve",
                              str(data), str(config)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    port, token = child.stdout.readline().split()
    base = f"http://127.0.0.1:{port}"
    routes = {"board": f"{base}/competitions/{name}?part=board",
              "api": f"{base}/api/competitions/{name}",
              "csv": f"{base}/competitions/{name}/ranking.csv"}
    out: dict[str, float] = {}
    store = Store(data)
    try:
        for route, url in routes.items():
            status, tag = _get(url, token)  # (warm: the first computes the standings)
            assert status == 200, (route, status)
            for way in ("fresh", "304"):
                before = _cpu(child.pid)
                for _ in range(requests):
                    status, _ = _get(url, token, tag if way == "304" else None)
                    assert status == (304 if way == "304" else 200), (route, way, status)
                out[f"{route} {way}"] = (_cpu(child.pid) - before) / requests * 1000
        spent = 0.0
        for i in range(land):  # a game lands before each request: computed again
            learner = "halving" if i % 2 == 0 else (
                f"{(data / f'competitions/{name}/s0000/v1.py').resolve()}:Vote")
            store.add_tournament_game(name, f"landed-{time.time_ns()}-{i}", {
                "game_id": None, "status": "complete", "game": "mistake-bound",
                "class": CLASSES[0], "learner": learner, "adversary": ADVERSARIES[0],
                "seed": 100 + i, "horizon": 30, "normaliser_value": 4.0,
                "result": {"rounds": 30, "mistakes": 2, "expected_mistakes": 2.0}})
            before = _cpu(child.pid)
            _get(routes["board"], token)
            spent += _cpu(child.pid) - before
        out["board changed"] = spent / land * 1000
        _, tag = _get(routes["board"], token)
        latencies: list[float] = []
        lock = threading.Lock()

        def one() -> None:
            start = time.perf_counter()
            _get(routes["board"], token, tag)
            with lock:
                latencies.append(time.perf_counter() - start)

        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            start = time.perf_counter()
            for i in range(requests * 5):  # 100 a second
                time.sleep(max(0.0, start + i / 100 - time.perf_counter()))
                pool.submit(one)
        latencies.sort()
        out["board p50 ms at 100/s (304)"] = latencies[len(latencies) // 2] * 1000
        out["board p99 ms at 100/s (304)"] = latencies[int(len(latencies) * 0.99)] * 1000
        latencies.clear()

        def fresh() -> None:
            start = time.perf_counter()
            _get(routes["board"], token)
            with lock:
                latencies.append(time.perf_counter() - start)

        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            start = time.perf_counter()
            for i in range(requests * 5):
                time.sleep(max(0.0, start + i / 100 - time.perf_counter()))
                pool.submit(fresh)
        latencies.sort()
        out["board p50 ms at 100/s (200)"] = latencies[len(latencies) // 2] * 1000
        out["board p99 ms at 100/s (200)"] = latencies[int(len(latencies) * 0.99)] * 1000
    finally:
        store.close()
        child.stdin.close()
        child.wait(30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=400)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--serve", nargs=2, metavar=("DATA", "CONFIG"),
                        help="(the child) serve DATA's competition CONFIG")
    args = parser.parse_args()
    if args.serve:
        _serve(Path(args.serve[0]), Path(args.serve[1]))
        return
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for label, students, versions in (("baseline: 40 versions", 8, 5),
                                          (f"{args.students * args.versions} versions",
                                           args.students, args.versions)):
            data = Path(folder) / label.split(":")[0].replace(" ", "-")
            start = time.perf_counter()
            config = build_field(data, "week-5", students, versions)
            games = (students * versions + 1) * 12
            print(f"{label}: {games} games, built in {time.perf_counter() - start:.1f} s",
                  flush=True)
            results[label] = measure(data, config, "week-5", args.requests, 20)
    labels = list(results)
    print(f"{'':32}" + "".join(f"{label:>26}" for label in labels))
    for key in results[labels[0]]:
        unit = "" if "ms at" in key else " (CPU ms/request)"
        print(f"{key + unit:32}" + "".join(f"{results[label][key]:26.2f}" for label in labels))
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
