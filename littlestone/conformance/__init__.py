"""The conformance kit: PROTOCOL.md's cases, run against any server or client.

In the spirit of the Autobahn test suite for WebSocket implementations.
``littlestone conformance server ws://HOST:PORT`` plays every case of
:mod:`~littlestone.conformance.server_cases` against a server, and
``littlestone conformance client -- CMD ...`` runs a client program against the
scripted server of :mod:`~littlestone.conformance.client_cases`; each prints a table of
the cases passed and failed with their PROTOCOL.md sections. The cases are sans-I/O
scripts (:mod:`~littlestone.conformance.script`); :mod:`~littlestone.conformance.runner`
carries them out on sockets.
"""

from __future__ import annotations

from littlestone.conformance.client_cases import CLIENT_CASES, URL_VARIABLE
from littlestone.conformance.runner import CaseResult, run_client_cases, run_server_cases
from littlestone.conformance.server_cases import SERVER_CASES, ServerUnderTest

__all__ = ["CLIENT_CASES", "SERVER_CASES", "URL_VARIABLE", "CaseResult", "ServerUnderTest",
           "run_client_cases", "run_server_cases"]
