"""Soak with misbehaviour: many concurrent agents against one server, a tenth of them hostile.

    .venv/bin/python -m benchmarks.soak                     # 500 peers, a few minutes at most
    .venv/bin/python -m benchmarks.soak --peers 100 --games 1 --max-seconds 60

Loopback only, and bounded: the server is a child process on 127.0.0.1 with a fresh
data folder, every peer stops after ``--games`` games (or misbehaviours), and the whole
run is cancelled after ``--max-seconds``. 90% of the peers are well-behaved agents (the
client of ``littlestone connect``, built-in learners and adversaries, four kinds of game);
10% misbehave, one kind each in turn: garbage bytes in the lobby, a stall past the move
deadline, a disconnect mid-game, out-of-turn moves, an oversized frame, an idle lobby
connection held to the end, challenges for huge classes.

Checked and printed (``--json`` for the figures as JSON):

- every well-behaved game completes, with the same records as the same game played by
  the local driver under the game's revealed key (seed and key -> the same log);
- each misbehaviour got the answer PROTOCOL.md names (counted by kind), never
  ``internal``; refusals by the server's limits (over_budget, a closed connection, a
  socket dropped before its handshake over the per-address cap: every peer shares
  127.0.0.1, and a peer's next socket may open while the server has not yet seen its
  last one close) are counted and retried, not failures;
- the CPU seconds of the server's process and of the peers' during the load, and the
  server's per honest move (what the machine's load does not change much);
- the server's resident memory (VmRSS of its process, sampled every 0.2 s): at start,
  the peak, at the end;
- server-side move latency: for every move the server accepted, the time from its
  request leaving the server to the move being taken (PROTOCOL.md's move clock), p50,
  p99, max; it includes the peers' own time, so also the lag of the server's event loop
  (how late it runs a 10 ms timer: the server's own share), each beside the same figure
  for one peer alone earlier in the same run (the baseline).

Exit status 1 when a well-behaved game failed or differed, an ``internal`` was seen, or
the server grew beyond ``--rss-bound-mb`` over its start.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from array import array
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack
import numpy as np

if TYPE_CHECKING:
    from littlestone.games.game import PlayedFields

HERE = Path(__file__).resolve().parent.parent

#: The well-behaved games, played in turn: (role of the peer, game, class, experts, learner,
#: adversary, rounds) as in tests/server/net/test_server.py's PAIRS.
PAIRS = [
    ("learner", "mistake-bound", "thresholds:n=255", None, "halving", "random-target", 200),
    ("learner", "experts", "singletons:n=8", None, "hedge", "noisy:rate=0.2", 60),
    ("adversary", "mistake-bound", "thresholds:n=63", None, "halving", "random-target", 100),
    ("learner", "experts", None, 3, "weighted-majority", "cover-flip", 50),
]
MISBEHAVIOURS = ["garbage", "stall", "disconnect", "out_of_turn", "oversized", "idle",
                 "huge_class"]
HELLO = {"type": "hello", "version": 1, "agent": "soak", "capabilities": []}
RULES = {"game": "mistake-bound", "class": "thresholds:n=15", "rounds": 40}


# -- the server, in a child process ---------------------------------------------------------

def serve_child(args: argparse.Namespace) -> None:
    """The server under test, with the move clock of every accepted move recorded."""
    from littlestone.games.loop import MoveClock
    from littlestone.server.net import GameServer, ServerSettings
    from littlestone.server.net import settings as server_settings
    from littlestone.server.net.eventloop import run
    from littlestone.server.net.settings import Budgets

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    latencies = array("d")  # pairs: when the move was taken (monotonic), its clock
    lags = array("d")  # pairs: when, the event loop's lag
    charge = MoveClock.charge  # (every move a remote player took, on the loop's clock)

    def timed(self: MoveClock, started: float, now: float) -> None:
        latencies.append(now)
        latencies.append(now - started)
        charge(self, started, now)

    MoveClock.charge = timed  # type: ignore[method-assign]  # the soak's probe

    async def main() -> None:
        settings = ServerSettings(port=0, data=Path(args.data), move_deadline=args.move_deadline,
                                  time_bank=args.time_bank,
                                  budgets=Budgets(max_games=max(256, 2 * args.peers)))
        connection_limits = getattr(server_settings, "ConnectionLimits", None)
        if connection_limits is not None:  # a server with connection limits: its defaults,
            # but every peer shares 127.0.0.1 (a class behind one address) and idle
            # lobby connections are closed within the run
            wider = connection_limits(per_address=args.peers + 16, lobby_idle_s=args.lobby_idle)
            settings = dataclasses.replace(settings, **{"connections": wider})
        server = GameServer(settings)
        await server.start()
        tokens = [server.store.add_token(f"soak-{peer}") for peer in range(args.peers + 1)]
        Path(args.ready).write_text(json.dumps({"port": server.port, "tokens": tokens,
                                                "limits": connection_limits is not None}))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)

        async def lag() -> None:  # how late the server's event loop runs a 10 ms timer
            while True:
                asked = loop.time()
                await asyncio.sleep(0.01)
                lags.append(loop.time())
                lags.append(loop.time() - asked - 0.01)

        watch = asyncio.create_task(lag())
        await stop.wait()
        watch.cancel()
        await server.stop()
        np.save(Path(args.ready).with_suffix(".lag.npy"),
                np.frombuffer(lags, dtype=np.float64).reshape(-1, 2))
        np.save(Path(args.ready).with_suffix(".npy"),
                np.frombuffer(latencies, dtype=np.float64).reshape(-1, 2))
        Path(args.ready).write_text("{}")

    run(main())  # on the server's event loop (uvloop when installed), as `littlestone serve`


def cpu_s(pid: int) -> float:
    """The CPU seconds (user and system) process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# -- the peers ------------------------------------------------------------------------------

class Tally:
    def __init__(self) -> None:
        self.good = Counter[str]()
        self.bad = Counter[str]()
        self.codes = Counter[str]()
        self.failures: list[str] = []
        self.games: list[tuple[int, PlayedFields, str]] = []  # (pair, client's out, seed)
        self.hostile: list[tuple[str, str]] = []  # (misbehaviour, game id)


async def well_behaved(url: str, token: str, peer: int, games: int, tally: Tally) -> None:
    from websockets.exceptions import InvalidHandshake

    from littlestone.adversaries import ADVERSARIES
    from littlestone.client import ServerError, play_remote
    from littlestone.games.classes import make_class
    from littlestone.games.game import GameSpec
    from littlestone.learners import LEARNERS

    for g in range(games):
        index = (peer + g) % len(PAIRS)
        role, name, spec, d, learner, adversary, rounds = PAIRS[index]
        game = GameSpec(name, rounds, make_class(spec) if spec else None, d)
        seed = peer * 1000 + g
        for attempt in range(5):
            try:
                if role == "learner":
                    out = await play_remote(url, LEARNERS.make(learner), adversary, game, seed,
                                            token, name=f"soak-{peer}")
                else:
                    out = await play_remote(url, ADVERSARIES.make(adversary), learner, game,
                                            seed, token, name=f"soak-{peer}")
            except ServerError as exc:
                tally.codes[exc.code] += 1
                if exc.code in ("over_budget",):  # a limit: counted, then tried again
                    tally.good["refused:" + exc.code] += 1
                    await asyncio.sleep(0.5 * (attempt + 1))
                    continue
                tally.failures.append(f"peer {peer}: {exc}")
                break
            except (OSError, ConnectionError, TimeoutError, InvalidHandshake) as exc:
                # (a socket the server dropped over its per-address cap before the
                # handshake: websockets' InvalidMessage, "no valid HTTP response"; or a
                # handshake unanswered within the client's open timeout, the server
                # saturated: a refusal, counted and tried again, as a refused socket)
                tally.good["refused:connection"] += 1
                if attempt == 4:
                    tally.failures.append(f"peer {peer}: {type(exc).__name__}: {exc}")
                await asyncio.sleep(0.5 * (attempt + 1))
                continue
            if out["status"] != "complete":
                tally.failures.append(f"peer {peer}: status {out['status']}")
            tally.good[out["status"]] += 1
            tally.games.append((index, out, str(seed)))
            break


async def raw(url: str, token: str, role: str = "learner") -> Any:
    from websockets.asyncio.client import connect

    ws = await connect(url, compression=None, proxy=None, max_size=None, open_timeout=30)
    await ws.send(msgpack.packb({**HELLO, "role": role, "token": token}))
    welcome = msgpack.unpackb(await ws.recv())
    if welcome.get("type") != "welcome":
        raise ConnectionError(f"no welcome: {welcome}")
    return ws


async def answers(ws: Any, tally: Tally, until: str = "end", timeout: float = 60) -> dict[str, Any]:
    """Read until ``until`` (or a close); count the error codes seen."""
    while True:
        message = msgpack.unpackb(await asyncio.wait_for(ws.recv(), timeout))
        if message.get("type") == "error":
            tally.codes[message["code"]] += 1
        if message.get("type") == until:
            return dict(message)


async def misbehaving(url: str, token: str, peer: int, games: int, stop: asyncio.Event,
                      tally: Tally) -> None:
    from websockets.exceptions import ConnectionClosed, InvalidHandshake

    kind = MISBEHAVIOURS[peer % len(MISBEHAVIOURS)]
    rng = np.random.default_rng(peer)
    for _ in range(games):
        try:
            ws = await raw(url, token)
        except (OSError, ConnectionError, TimeoutError, ConnectionClosed, InvalidHandshake):
            tally.bad[f"{kind}:refused"] += 1
            await asyncio.sleep(0.5)
            continue
        try:
            if kind == "garbage":
                for _ in range(64):  # the 16th bad lobby message closes the connection
                    await ws.send(rng.bytes(int(rng.integers(1, 200))))
                    await answers(ws, tally, until="error")
            elif kind == "huge_class":
                for spec in ("thresholds:n=1099511627776", "thresholds:n=16777215",
                             "k-disjunctions:n=4096,k=64", "halfspaces:d=1000000,margin=0.1",
                             "thresholds:n=5000", "matrix:path=/etc/passwd"):
                    await ws.send(msgpack.packb({"type": "challenge",
                                                 "opponent": "shattered-tree",
                                                 "seed": 1, "rules": {**RULES, "class": spec}}))
                    await answers(ws, tally, until="error")
                tally.bad[f"{kind}:refused"] += 1
                await ws.close()
                continue
            elif kind == "oversized":
                await ws.send(b"\x81\xa4type" + bytes(200_000))
                await answers(ws, tally, until="never")
            elif kind == "idle":  # silent until the soak ends or the server closes it
                ended = asyncio.ensure_future(stop.wait())
                closed = asyncio.ensure_future(ws.wait_closed())
                await asyncio.wait((ended, closed), return_when=asyncio.FIRST_COMPLETED)
                ended.cancel()
                if closed.done():
                    code = ws.close_code
                    tally.bad[f"{kind}:closed by the server {code}"] += 1
                    continue
                closed.cancel()
                tally.bad[f"{kind}:held to the end"] += 1
                await ws.close()
                return
            else:
                await ws.send(msgpack.packb({"type": "challenge", "opponent": "random-target",
                                             "seed": peer, "rules": RULES}))
                start = await answers(ws, tally, until="start")
                tally.hostile.append((kind, start["game_id"]))
                t = 0
                while True:
                    message = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 60))
                    if message["type"] == "error":
                        tally.codes[message["code"]] += 1
                        continue
                    if message["type"] == "end":
                        tally.bad[f"{kind}:{message['status']}"] += 1
                        break
                    t = message["t"]
                    if kind == "disconnect" and t == 5:
                        await ws.close()
                        tally.bad[f"{kind}:closed mid-game"] += 1
                        break
                    if kind == "stall" and t >= 3:
                        continue  # never answers: timeouts, then a forfeit
                    if kind == "out_of_turn" and t >= 3:
                        await ws.send(msgpack.packb({"type": "predict", "t": t + 7, "p": 0.5}))
                        await ws.send(msgpack.packb({"type": "label", "t": t, "y": 1}))
                        continue
                    await ws.send(msgpack.packb({"type": "predict", "t": t, "p": 0.5}))
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd is not None else None
            tally.bad[f"{kind}:closed {code}"] += 1
        except TimeoutError:
            tally.bad[f"{kind}:no answer in 60 s"] += 1
        finally:
            with contextlib.suppress(Exception):
                await ws.close()


# -- the check against the local driver ------------------------------------------------------

def rows_of(records: Any) -> list[list[Any]]:
    return [[v.tolist() if isinstance(v, np.ndarray) else v for v in r] for r in records]


def verify(data: Path, tally: Tally) -> int:
    """Every well-behaved game's log has the records the local driver plays under its
    seed and revealed key; returns how many were checked."""
    from littlestone.adversaries import ADVERSARIES
    from littlestone.games.classes import make_class
    from littlestone.games.game import GameSpec
    from littlestone.learners import LEARNERS
    from littlestone.local import play
    from littlestone.server.records.logs import read_log
    from littlestone.server.records.store import Store

    store = Store(data)
    for kind, game_id in tally.hostile:  # how the server ended each misbehaving game
        row = store.game(game_id)
        tally.bad[f"{kind}: indexed as {row['status'] if row else 'missing'}"] += 1
        if row is None or row["status"] in ("running", "incomplete"):
            tally.failures.append(f"game {game_id} ({kind}): not ended in the index")
    checked = 0
    for index, out, seed in tally.games:
        _, name, spec, d, learner, adversary, rounds = PAIRS[index]
        game = GameSpec(name, rounds, make_class(spec) if spec else None, d)
        local: list[Any] = []
        result = play(game, LEARNERS.make(learner), ADVERSARIES.make(adversary), int(seed),
                      key=bytes.fromhex(out["game_key"]), on_record=local.append)
        row = store.game(str(out["game_id"]))
        logged = rows_of(read_log(Path(str(row["log"]))).records()) if row else None
        if logged != rows_of(local) or result.mistakes != out["mistakes"]:
            tally.failures.append(f"game {out['game_id']}: differs from the local game")
        checked += 1
    return checked


# -- the run --------------------------------------------------------------------------------

async def soak(args: argparse.Namespace, url: str, tokens: list[str], server_pid: int
               ) -> dict[str, Any]:
    tally = Tally()
    stop = asyncio.Event()
    samples: list[float] = []

    async def sample() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                samples.append(rss_mb(server_pid))
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(sample())
    # the baseline, in the same run: one well-behaved peer alone plays each kind of game
    baseline = Tally()
    phases = [time.monotonic()]
    await well_behaved(url, tokens[-1], 10**6, len(PAIRS), baseline)
    phases.append(time.monotonic())
    tally.games.extend(baseline.games)
    tally.failures.extend(baseline.failures)
    start_rss = rss_mb(server_pid)
    n_bad = args.peers // 10
    began = time.perf_counter()
    began_cpu = cpu_s(server_pid), time.process_time()
    good = [asyncio.create_task(well_behaved(url, tokens[n_bad + p], p, args.games, tally))
            for p in range(args.peers - n_bad)]
    bad = [asyncio.create_task(misbehaving(url, tokens[p], p, args.games, stop, tally))
           for p in range(n_bad)]
    done, pending = await asyncio.wait(good, timeout=args.max_seconds)
    elapsed = time.perf_counter() - began
    server_cpu, peers_cpu = (cpu_s(server_pid) - began_cpu[0],
                             time.process_time() - began_cpu[1])
    stop.set()
    _, still = await asyncio.wait(bad, timeout=30)
    for task in [*pending, *still]:
        task.cancel()
    await asyncio.gather(*pending, *still, return_exceptions=True)
    for task in done:
        if task.exception() is not None:
            tally.failures.append(f"a peer raised {task.exception()!r}")
    if pending:
        tally.failures.append(f"{len(pending)} well-behaved peers unfinished after "
                              f"{args.max_seconds} s")
    phases.append(time.monotonic())
    await asyncio.sleep(1.0)  # connections closed, games ended: memory after the load
    end_rss = rss_mb(server_pid)
    stop.set()
    await sampler
    return {"tally": tally, "elapsed_s": elapsed, "server_cpu_s": server_cpu,
            "peers_cpu_s": peers_cpu, "rss_start_mb": start_rss,
            "rss_peak_mb": max(samples, default=start_rss), "rss_end_mb": end_rss,
            "misbehaving_peers": n_bad, "rss_samples": len(samples), "phases": phases}


def peer_loop(name: str) -> Any:
    """The peers' event loop factory (None: asyncio's)."""
    if name == "asyncio":
        return None
    import uvloop

    return uvloop.new_event_loop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", type=int, default=500, help="concurrent agents (default 500)")
    parser.add_argument("--games", type=int, default=2,
                        help="games (or misbehaviours) each peer plays in turn (default 2)")
    parser.add_argument("--max-seconds", type=float, default=240.0,
                        help="the run is cancelled after this long (default 240)")
    parser.add_argument("--move-deadline", type=float, default=2.0,
                        help="the server's per-move deadline, s (default 2)")
    parser.add_argument("--time-bank", type=float, default=1.0,
                        help="the server's time bank, s (default 1)")
    parser.add_argument("--lobby-idle", type=float, default=10.0,
                        help="the server's lobby idle timeout, s, when it has one (default 10)")
    parser.add_argument("--rss-bound-mb", type=float, default=1024.0,
                        help="fail when the server grows more than this (default 1024)")
    parser.add_argument("--peer-loop", choices=("asyncio", "uvloop"), default="asyncio",
                        help="the event loop of the peers' process (default asyncio; the "
                             "server's is LITTLESTONE_EVENT_LOOP's, uvloop when installed)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--ready", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve_child(args)
        return 0
    if args.peers < 10 or args.games < 1 or args.max_seconds <= 0:
        parser.error("--peers must be >= 10, --games >= 1, --max-seconds > 0")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    with tempfile.TemporaryDirectory(prefix="littlestone-soak-") as tmp:
        data, ready = Path(tmp) / "data", Path(tmp) / "ready.json"
        child = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.soak", "--serve", "--data", str(data),
             "--ready", str(ready), "--peers", str(args.peers),
             "--lobby-idle", str(args.lobby_idle),
             "--move-deadline", str(args.move_deadline), "--time-bank", str(args.time_bank)],
            cwd=HERE)
        try:
            for _ in range(300):
                if ready.exists() and ready.read_text():
                    break
                time.sleep(0.1)
            info = json.loads(ready.read_text())
            ready.unlink()
            url = f"ws://127.0.0.1:{info['port']}"
            with asyncio.Runner(loop_factory=peer_loop(args.peer_loop)) as runner:
                figures = runner.run(soak(args, url, info["tokens"], child.pid))
            figures["server_has_connection_limits"] = info["limits"]
        finally:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(60)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        clocks = ready.with_suffix(".npy")
        moves = np.load(clocks) if clocks.exists() else np.zeros((0, 2))
        lag_file = ready.with_suffix(".lag.npy")
        lags = np.load(lag_file) if lag_file.exists() else np.zeros((0, 2))
        tally: Tally = figures.pop("tally")
        checked = verify(data, tally)
    grew = figures["rss_peak_mb"] - figures["rss_start_mb"]
    if grew > args.rss_bound_mb:
        tally.failures.append(f"the server grew {grew:.0f} MiB (bound {args.rss_bound_mb})")
    if tally.codes.get("internal"):
        tally.failures.append(f"{tally.codes['internal']} internal errors")
    phases = figures.pop("phases")
    alone = moves[(moves[:, 0] >= phases[0]) & (moves[:, 0] < phases[1]), 1]
    loaded = moves[(moves[:, 0] >= phases[1]) & (moves[:, 0] <= phases[2]), 1]
    lag_alone = lags[(lags[:, 0] >= phases[0]) & (lags[:, 0] < phases[1]), 1]
    lag_loaded = lags[(lags[:, 0] >= phases[1]) & (lags[:, 0] <= phases[2]), 1]

    def ms(values: Any, q: float) -> float | None:
        return round(float(np.percentile(values, q)) * 1e3, 3) if len(values) else None

    from littlestone.server.net.eventloop import loop_name

    report = {"peers": args.peers, "games_per_peer": args.games, "server_loop": loop_name(),
              "peer_loop": args.peer_loop, **figures,
              "baseline_moves": len(alone), "baseline_move_p50_ms": ms(alone, 50),
              "baseline_move_p99_ms": ms(alone, 99),
              "server_moves": len(loaded),
              "server_cpu_us_a_move": round(figures["server_cpu_s"] / max(len(loaded), 1) * 1e6),
              "move_p50_ms": ms(loaded, 50),
              "move_p99_ms": ms(loaded, 99), "move_max_ms": ms(loaded, 100),
              "baseline_loop_lag_p50_ms": ms(lag_alone, 50),
              "baseline_loop_lag_p99_ms": ms(lag_alone, 99),
              "loop_lag_p50_ms": ms(lag_loaded, 50), "loop_lag_p99_ms": ms(lag_loaded, 99),
              "well_behaved": dict(tally.good), "verified_against_local": checked,
              "misbehaviour": dict(sorted(tally.bad.items())),
              "error_codes": dict(tally.codes), "failures": tally.failures[:20],
              "n_failures": len(tally.failures)}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for key, value in report.items():
            print(f"{key}: {round(value, 2) if isinstance(value, float) else value}")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
