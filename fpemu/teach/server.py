"""The explorer's web server: Python's standard library only (:mod:`http.server`), bound to
127.0.0.1, serving the page shipped in ``fpemu/teach/static`` and the JSON API.

Routes: ``GET /`` (the page), ``GET /static/<file>``, ``GET /docs/<name>.md`` (fpemu's docs,
as text, where the page runs from a checkout that has them), ``GET /api/formats``, and
``POST`` ``/api/code``, ``/api/encode``, ``/api/compare`` (one number in several formats),
``/api/table`` (every code of a small format), ``/api/block`` and ``/api/blocks`` (MXFP4 floor,
rceil and NVFP4 side by side) with a JSON object. A bad request is answered
``400 {"error": "..."}`` in one line, as the command line would say it.

>>> server = make_server(0)
>>> server.server_address[0]
'127.0.0.1'
>>> server.server_close()
"""

from __future__ import annotations

import json
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from ..arguments import is_whole
from .api import describe_code, encode_number
from .blocks import compare_blocks, describe_block
from .options import COMPARED, formats_payload
from .side_by_side import compare_formats, table_payload

__all__ = ["make_server", "serve_in_thread", "handle_api", "STATIC_FILES"]

HOST = "127.0.0.1"
#: The page's files, and the only files served (no path from a request reaches the disk).
STATIC_FILES = {"index.html": "text/html", "app.js": "text/javascript", "views.js": "text/javascript",
                "style.css": "text/css"}
_MAX_BODY = 1 << 16
#: fpemu's docs, where this is a checkout (an installed package has none: the page then names
#: them without a link). Only ``<name>.md`` files directly in it are served.
DOCS = Path(__file__).resolve().parents[2] / "docs"
_DOC_NAME = re.compile(r"[a-z0-9_]+\.md")


def docs_available() -> bool:
    return (DOCS / "mx.md").is_file()


def _code(body: dict[str, Any]) -> dict[str, Any]:
    return describe_code(body.get("format"), body.get("code"))


def _encode(body: dict[str, Any]) -> dict[str, Any]:
    return encode_number(body.get("format"), body.get("value"), body.get("rounding", "nearest_even"),
                         body.get("overflow", "default"), body.get("nan", "default"), body.get("seed", 0),
                         body.get("sr_bits"))


def _block(body: dict[str, Any]) -> dict[str, Any]:
    return describe_block(body.get("format"), body.get("values"), body.get("scale_rounding", "floor"),
                          body.get("rounding", "nearest_even"), body.get("seed", 0), body.get("tensor_amax"))


def _compare(body: dict[str, Any]) -> dict[str, Any]:
    return compare_formats(body.get("value"), body.get("formats") or COMPARED, body.get("rounding", "nearest_even"),
                           body.get("seed", 0), body.get("sr_bits"))


def _table(body: dict[str, Any]) -> dict[str, Any]:
    return table_payload(body.get("format"))


def _blocks(body: dict[str, Any]) -> dict[str, Any]:
    return compare_blocks(body.get("values"), body.get("tensor_amax"))


_POST: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "/api/code": _code, "/api/encode": _encode, "/api/block": _block, "/api/compare": _compare,
    "/api/table": _table, "/api/blocks": _blocks}


def handle_api(path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON object) of one API call, without a socket.

    >>> status, reply = handle_api("/api/encode", {"format": "e2m1", "value": "2.5"})
    >>> status, reply["value"], reply["rules"][0]["rule"]
    (200, '2.0', 'tie')
    >>> handle_api("/api/encode", {"format": "fp9", "value": "1"})[1]["error"][:22]
    "unknown format 'fp9'; "
    """
    if path == "/api/formats" and body is None:
        return 200, {**formats_payload(), "docs": docs_available()}
    if path not in _POST or body is None:
        return 404, {"error": f"no such API call: {'POST' if body is not None else 'GET'} {path}"}
    if not isinstance(body, dict):
        return 400, {"error": "the request must be a JSON object"}
    try:
        return 200, _POST[path](body)
    except (ValueError, TypeError, OverflowError) as exc:
        return 400, {"error": str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}


class _Handler(BaseHTTPRequestHandler):
    server_version = "fpemu-explore"
    quiet = True

    def log_message(self, format: str, *args: Any) -> None:
        if not self.quiet:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", f"{content_type}; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            # The page went away (a reload, or a request it no longer waits for): nothing to
            # answer, and no traceback on the terminal of `fpemu explore`.
            self.close_connection = True

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        try:
            text = json.dumps(payload, allow_nan=False)
        except ValueError:  # a bug (numbers travel as text): say so in one line
            status, text = 500, json.dumps({"error": "internal error: a number that JSON cannot carry"})
        self._send(status, text.encode(), "application/json")

    def _local_host(self) -> bool:
        """Only pages of this server may call it (a DNS-rebinding page names another host)."""
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        return host in ("127.0.0.1", "localhost")

    def do_GET(self) -> None:
        if not self._local_host():
            return self._json(403, {"error": "the explorer answers on 127.0.0.1 only"})
        path = self.path.split("?", 1)[0]
        if path == "/favicon.ico":  # none: say so without an error in the console
            return self._send(204, b"", "image/x-icon")
        if path.startswith("/api/"):
            return self._json(*handle_api(path))
        if path.startswith("/docs/"):
            name = path.removeprefix("/docs/")
            if not _DOC_NAME.fullmatch(name) or not (DOCS / name).is_file():
                return self._json(404, {"error": f"not found: {path}"})
            return self._send(200, (DOCS / name).read_bytes(), "text/plain")
        name = "index.html" if path in ("/", "/index.html") else path.removeprefix("/static/")
        if name not in STATIC_FILES or (path not in ("/", "/index.html") and not path.startswith("/static/")):
            return self._json(404, {"error": f"not found: {path}"})
        data = resources.files(__package__).joinpath("static", name).read_bytes()
        self._send(200, data, STATIC_FILES[name])

    def do_POST(self) -> None:
        if not self._local_host():
            return self._json(403, {"error": "the explorer answers on 127.0.0.1 only"})
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            return self._json(413, {"error": "request too large"})
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except (ValueError, UnicodeDecodeError):
            return self._json(400, {"error": "the request is not JSON"})
        try:
            status, payload = handle_api(self.path.split("?", 1)[0], body if body is not None else {})
        except Exception as exc:  # a bug: still one line, and the server goes on
            status = HTTPStatus.INTERNAL_SERVER_ERROR
            payload = {"error": f"internal error ({type(exc).__name__}: {exc})"}
        self._json(int(status), payload)


def make_server(port: int = 8765, *, quiet: bool = True) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:``port`` (0: any free port), not yet serving."""
    if not is_whole(port) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an integer 0..65535, got {port!r}")
    handler = type("Handler", (_Handler,), {"quiet": quiet})
    server = ThreadingHTTPServer((HOST, int(port)), handler)
    server.daemon_threads = True
    return server


def serve_in_thread(port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start a server in a background thread (for tests and notebooks); returns it and its
    URL. Stop it with ``server.shutdown(); server.server_close()``."""
    server = make_server(port)
    threading.Thread(target=server.serve_forever, name="fpemu-explore", daemon=True).start()
    return server, f"http://{HOST}:{server.server_address[1]}/"
