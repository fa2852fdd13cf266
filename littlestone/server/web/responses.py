"""HTTP responses of the web room, as websockets' Sans-I/O :class:`Response` objects:
JSON, HTML, static files, redirects, errors; each with headers that keep the page to
its own origin (no inline scripts, no framing, no sniffing).

>>> response = json_response({"ok": True})
>>> response.status_code, response.headers["Content-Type"], response.body
(200, 'application/json', b'{"ok": true}')
"""

from __future__ import annotations

import email.utils
import hashlib
import http
import json
from importlib import resources
from typing import Any

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from littlestone.server.web.pages import error_page

__all__ = ["entity_tag", "error", "html_response", "json_response", "matches", "not_modified",
           "redirect", "respond", "static_file"]

#: Only this origin's scripts, styles, images and WebSockets; inline styles (uPlot and
#: the heatmap's cells set them) but no inline script.
POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
          "img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; "
          "base-uri 'none'; form-action 'self'")

#: Static files by suffix: their content type.
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".png": "image/png", ".txt": "text/plain; charset=utf-8",
         ".LICENSE": "text/plain; charset=utf-8"}


def respond(status: int, body: bytes, content_type: str,
            extra: list[tuple[str, str]] | None = None, cache: str = "no-store") -> Response:
    """A complete response; the connection closes after it."""
    headers = Headers([
        ("Date", email.utils.formatdate(usegmt=True)), ("Connection", "close"),
        ("Content-Length", str(len(body))), ("Content-Type", content_type),
        ("Cache-Control", cache), ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"), ("Content-Security-Policy", POLICY),
    ])
    for name, value in extra or []:
        headers[name] = value
    return Response(status, http.HTTPStatus(status).phrase, headers, body)


def json_response(data: Any, status: int = 200,
                  extra: list[tuple[str, str]] | None = None) -> Response:
    return respond(status, json.dumps(data, default=str).encode(), "application/json", extra)


def html_response(text: str, status: int = 200,
                  extra: list[tuple[str, str]] | None = None) -> Response:
    return respond(status, text.encode(), "text/html; charset=utf-8", extra)


def error(status: int, message: str, api: bool,
          extra: list[tuple[str, str]] | None = None) -> Response:
    """An error as JSON (``{"error": ...}``) for the API, as a short page otherwise.

    >>> error(404, "no such game: <x>", False).body.count(b"&lt;x&gt;")
    1
    """
    if api:
        return json_response({"error": message}, status, extra)
    return html_response(error_page(status, message), status, extra)


def redirect(location: str, extra: list[tuple[str, str]] | None = None) -> Response:
    return respond(303, b"", "text/plain", [("Location", location), *(extra or [])])


def static_file(name: str) -> Response | None:
    """A file shipped in the package's ``static/`` folder (None: no such file)."""
    if "/" in name or name.startswith(".") or not name:
        return None
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    if suffix not in TYPES:
        return None
    source = resources.files("littlestone.server.web") / "static" / name
    if not source.is_file():
        return None
    return respond(200, source.read_bytes(), TYPES[suffix], cache="max-age=3600")


def entity_tag(*parts: str) -> str:
    """A strong ETag (RFC 9110 8.8.3) of what an answer depends on: a version stamp,
    who is looking, what was asked.

    >>> entity_tag("7", "ann", "/competitions/w?part=board")[:2]
    '"s'
    """
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]
    return f'"s{digest}"'


def matches(request: Request, tag: str) -> bool:
    """Whether the request's ``If-None-Match`` holds ``tag`` (or ``*``): its copy is
    current (RFC 9110 13.1.2, a weak comparison).

    >>> from websockets.datastructures import Headers
    >>> asked = Request("/", Headers({"If-None-Match": 'W/"sab", "sx"'}))
    >>> matches(asked, '"sab"'), matches(asked, '"sy"')
    (True, False)
    """
    held = ",".join(request.headers.get_all("If-None-Match"))
    if not held:
        return False
    tags = {t.strip().removeprefix("W/") for t in held.split(",")}
    return "*" in tags or tag.removeprefix("W/") in tags


def not_modified(tag: str) -> Response:
    """304 Not Modified: no body, the tag again."""
    return respond(304, b"", "text/plain", [("ETag", tag)])
