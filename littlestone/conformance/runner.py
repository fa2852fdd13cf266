"""The kit's I/O: the cases' steps carried out on real WebSocket connections.

:func:`run_server_cases` plays each server case against a server's URL.
:func:`run_client_cases` starts the scripted server on loopback and runs a client
program against it once per run of :mod:`littlestone.conformance.client_cases`. Only
this module touches sockets, processes and clocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from littlestone.conformance.client_cases import (
    CLIENT_CASES,
    CLIENT_RUNS,
    URL_VARIABLE,
    ClientRun,
    Transcript,
)
from littlestone.conformance.script import (
    Case,
    CaseFailed,
    CaseSkipped,
    Closed,
    Connect,
    Event,
    Garbled,
    Message,
    Receive,
    Script,
    Send,
    Silence,
)
from littlestone.conformance.server_cases import SERVER_CASES, ServerUnderTest

__all__ = ["CaseResult", "run_client_cases", "run_server_cases"]

#: Seconds one case may take in all, beyond which it fails.
CASE_SECONDS = 60.0
#: Seconds a client program may take to play a scripted game.
CLIENT_SECONDS = 60.0


@dataclass(frozen=True)
class CaseResult:
    """A case's verdict: ``pass``, ``fail`` or ``skip``, and why when it did not pass."""

    id: str
    section: str
    title: str
    verdict: str
    detail: str = ""
    point: int | None = None

    @classmethod
    def of(cls, case: Case, verdict: str, detail: str = "") -> CaseResult:
        return cls(case.id, case.section, case.title, verdict, detail, case.point)


def event_of(data: bytes | str) -> Event:
    """A received frame as the scripts see it."""
    if isinstance(data, str):
        return Garbled("a text frame")
    try:
        body = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several kinds; any means undecodable
        return Garbled(f"an undecodable frame ({type(exc).__name__})")
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        return Garbled("a frame that is not a map with a type")
    return Message(body)


def closed_of(exc: ConnectionClosed) -> Closed:
    return Closed(exc.rcvd.code, exc.rcvd.reason) if exc.rcvd is not None else Closed(None)


class _Connections:
    """A case's connections, by number."""

    def __init__(self, url: str, tls: ssl.SSLContext | None) -> None:
        self.url, self.tls = url, tls
        self.open: dict[int, ClientConnection] = {}

    async def step(self, step: Connect | Send | Receive) -> Event | None:
        if isinstance(step, Connect):
            await self.close(step.conn)
            self.open[step.conn] = await connect(
                self.url, compression=None, proxy=None, max_size=None, ssl=self.tls,
                open_timeout=10, close_timeout=2)
            return None
        ws = self.open.get(step.conn)
        if ws is None:
            raise CaseFailed(f"the case used connection {step.conn} before opening it")
        if isinstance(step, Send):
            with contextlib.suppress(ConnectionClosed):  # the next receive says it closed
                await ws.send(step.frame)
            return None
        try:
            return event_of(await asyncio.wait_for(ws.recv(), step.wait))
        except TimeoutError:
            return Silence()
        except ConnectionClosed as exc:
            return closed_of(exc)

    async def close(self, conn: int | None = None) -> None:
        for number in [conn] if conn is not None else list(self.open):
            ws = self.open.pop(number, None) if number is not None else None
            if ws is not None:
                with contextlib.suppress(Exception):
                    await ws.close()


async def drive(script: Script, connections: _Connections) -> None:
    """Carry out a script's steps until it returns or raises."""
    event: Event | None = None
    try:
        while True:
            step = script.send(event)
            event = await connections.step(step)
    except StopIteration:
        return


async def run_server_case(case: Case, url: str, server: ServerUnderTest,
                          tls: ssl.SSLContext | None = None) -> CaseResult:
    connections = _Connections(url, tls)
    script = case.script(server)
    assert script is not None, f"{case.id} is not a server case"
    try:
        await asyncio.wait_for(drive(script, connections), CASE_SECONDS)
    except CaseFailed as exc:
        return CaseResult.of(case, "fail", str(exc))
    except CaseSkipped as exc:
        return CaseResult.of(case, "skip", str(exc))
    except TimeoutError:
        return CaseResult.of(case, "fail", f"the case took over {CASE_SECONDS:.0f} s")
    except (OSError, ConnectionClosed) as exc:
        return CaseResult.of(case, "fail", f"cannot connect: {exc}")
    except Exception as exc:  # a handshake refused, an unexpected frame: the server's
        return CaseResult.of(case, "fail", f"{type(exc).__name__}: {exc}")
    finally:
        await connections.close()
    return CaseResult.of(case, "pass")


async def run_server_cases(url: str, server: ServerUnderTest,
                           cases: Iterable[Case] = SERVER_CASES,
                           tls: ssl.SSLContext | None = None) -> list[CaseResult]:
    """Every case against the server at ``url``, one after another."""
    return [await run_server_case(case, url, server, tls) for case in cases]


# ---------------------------------------------------------------- the client side

async def _serve_one(run: ClientRun, transcript: Transcript,
                     connection: ServerConnection) -> None:
    """The scripted server's side of one connection of a run."""
    if transcript.connections:
        transcript.extra_connections += 1
        await connection.close(1013, "one connection a run")
        return
    transcript.connections += 1
    script = run.script(transcript)
    event: Event | None = None
    try:
        while True:
            step = script.send(event)
            event = None
            if isinstance(step, Send):
                with contextlib.suppress(ConnectionClosed):
                    await connection.send(step.frame)
            elif isinstance(step, Receive):
                try:
                    data = await asyncio.wait_for(connection.recv(), step.wait)
                    event = event_of(data)
                    transcript.frames.append(event)
                except TimeoutError:
                    event = Silence()
                except ConnectionClosed as exc:
                    event = closed_of(exc)
            else:  # a client run's script never connects
                raise CaseFailed("a scripted server cannot connect")
    except StopIteration:
        pass
    except CaseFailed as exc:
        transcript.failure = str(exc)
    except Exception as exc:  # a client's input the scripted server did not foresee
        transcript.failure = (f"the scripted server failed on the client's input: "
                              f"{type(exc).__name__}: {exc}")
    finally:
        await connection.close()


def command_for(argv: Sequence[str], url: str) -> list[str]:
    """The program's arguments, ``{url}`` replaced by the scripted server's URL."""
    return [arg.replace("{url}", url) for arg in argv]


async def play_client(run: ClientRun, argv: Sequence[str],
                      env: dict[str, str] | None = None) -> Transcript:
    """Start the scripted server for ``run``, run the program against it, and keep what
    happened."""
    transcript = Transcript()

    async def handler(connection: ServerConnection) -> None:
        await _serve_one(run, transcript, connection)

    async with serve(handler, "127.0.0.1", 0, compression=None, max_size=1 << 20) as server:
        port = server.sockets[0].getsockname()[1]
        url = f"ws://127.0.0.1:{port}"
        environment = dict(os.environ if env is None else env, **{URL_VARIABLE: url})
        try:
            process = await asyncio.create_subprocess_exec(
                *command_for(argv, url), env=environment, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            transcript.failure = f"cannot start {argv[0]}: {exc.strerror}"
            return transcript
        try:
            out, err = await asyncio.wait_for(process.communicate(), CLIENT_SECONDS)
            transcript.exit_status = process.returncode
        except TimeoutError:
            process.kill()
            out, err = await process.communicate()
            transcript.timed_out = True
        transcript.output = (out + err).decode(errors="replace")[-2000:]
    return transcript


async def run_client_cases(argv: Sequence[str], env: dict[str, str] | None = None,
                           cases: Iterable[Case] = CLIENT_CASES) -> list[CaseResult]:
    """Each run of the scripted server against the program, then every case's verdict on
    the transcripts."""
    wanted = list(cases)
    transcripts: dict[str, Transcript] = {}
    for run in CLIENT_RUNS:
        if any(case.id in run.cases for case in wanted):
            transcripts[run.name] = await play_client(run, argv, env)
    results = []
    for case in wanted:
        run_name = next(run.name for run in CLIENT_RUNS if case.id in run.cases)
        try:
            case.script(transcripts[run_name])
        except CaseFailed as exc:
            results.append(CaseResult.of(case, "fail", str(exc)))
        except CaseSkipped as exc:
            results.append(CaseResult.of(case, "skip", str(exc)))
        else:
            results.append(CaseResult.of(case, "pass"))
    return results
