"""The explorer's server over real HTTP (no browser): the page and its files, the JSON API,
refusals, and ``fpemu explore`` started and stopped as a user would."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from importlib import resources

import numpy as np
import pytest
from cli_helpers import fails

import fpemu
from fpemu.teach import serve_in_thread
from fpemu.teach.server import STATIC_FILES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(fpemu.__file__)))  # where this fpemu lives


@pytest.fixture(scope="module")
def server():
    srv, url = serve_in_thread(0)
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def request(port: int, method: str, path: str, body: bytes | None = None, host: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"}
    if host:
        headers["Host"] = host
    conn.request(method, path, body=body, headers=headers)
    reply = conn.getresponse()
    data = reply.read()
    conn.close()
    return reply.status, reply.getheader("Content-Type"), data


def post(port: int, path: str, payload) -> tuple[int, dict]:
    status, _, data = request(port, "POST", path, json.dumps(payload).encode())
    return status, json.loads(data)


def test_the_page_and_its_files(server):
    status, kind, html = request(server, "GET", "/")
    assert status == 200 and kind.startswith("text/html") and b"fpemu explore" in html
    for name, mime in STATIC_FILES.items():
        status, kind, data = request(server, "GET", f"/static/{name}")
        assert status == 200 and kind.startswith(mime) and data == resources.files("fpemu.teach").joinpath(
            "static", name).read_bytes()
    assert request(server, "GET", "/favicon.ico")[0] == 204


@pytest.mark.parametrize("path", ["/static/../server.py", "/static/%2e%2e/server.py", "/server.py", "/static/",
                                  "/etc/passwd", "/static/index.html/x"])
def test_nothing_else_is_served(server, path):
    status, _, data = request(server, "GET", path)
    assert status == 404 and b"import" not in data


def test_the_page_works_offline():
    """No file of the page names another host: no CDN, no font service, no analytics."""
    for name in STATIC_FILES:
        text = resources.files("fpemu.teach").joinpath("static", name).read_text()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, name


def test_the_json_api(server):
    status, reply = post(server, "/api/encode", {"format": "e4m3", "value": "0.3", "rounding": "nearest_even"})
    code = int(fpemu.encode(np.array([0.3]), "e4m3")[0])
    assert status == 200 and int(reply["code"], 16) == code == 0x2A and reply["value"] == "0.3125"
    status, reply = post(server, "/api/code", {"format": "e5m2", "code": "01111100"})
    assert status == 200 and reply["value"] == "inf"
    status, reply = post(server, "/api/block", {"format": "mxfp4", "values": ["7", "3", "0.4"]})
    assert status == 200 and [e["code"] for e in reply["elements"]] == ["0x7", "0x5", "0x1"]
    status, _, data = request(server, "GET", "/api/formats")
    assert status == 200 and len(json.loads(data)["formats"]) == len(fpemu.FORMATS)


@pytest.mark.parametrize("path, body, status, says", [
    ("/api/encode", b'{"format": "fp9", "value": "1"}', 400, "unknown format 'fp9'"),
    ("/api/encode", b'{"format": "e4m3", "value": "1", "rounding": "sideways"}', 400, "unknown rounding"),
    ("/api/code", b'{"format": "e4m3", "code": "2"}', 400, "8 bits"),
    ("/api/code", b"not json", 400, "not JSON"),
    ("/api/code", b"[1, 2]", 400, "JSON object"),
    ("/api/nothing", b"{}", 404, "no such API call"),
])
def test_bad_requests_are_one_line_errors(server, path, body, status, says):
    got, kind, data = request(server, "POST", path, body)
    reply = json.loads(data)
    assert got == status and kind.startswith("application/json") and says in reply["error"]
    assert "\n" not in reply["error"]


def test_only_local_pages_may_call_it(server):
    status, _, data = request(server, "GET", "/api/formats", host="evil.example:80")
    assert status == 403 and b"127.0.0.1" in data
    assert request(server, "GET", "/", host=f"localhost:{server}")[0] == 200
    assert request(server, "POST", "/api/code", b"{}", host="evil.example")[0] == 403


def test_large_bodies_are_refused(server):
    assert request(server, "POST", "/api/block", b" " * (1 << 17))[0] == 413


# ---- fpemu explore ------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_explore_serves_until_interrupted():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "fpemu", "explore", "--port", str(port), "--no-browser",
                             "--format", "E4M3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"fpemu explore: serving http://127.0.0.1:{port}/#format=e4m3")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/formats", timeout=10) as reply:
            assert json.load(reply)["roundings"][0] == "nearest_even"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "Traceback" not in err and err.strip() == "stopped"


def test_explore_errors_are_one_line(capsys):
    fails(["explore", "--format", "fp9", "--no-browser"], 2, capsys, says="unknown format 'fp9'")
    fails(["explore", "--port", "70000"], 2, capsys, says="a port is 0..65535")
    fails(["explore", "--port", "http"], 2, capsys, says="not a port number")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        fails(["explore", "--port", str(port), "--no-browser"], 1, capsys, says=f"cannot listen on 127.0.0.1:{port}")


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks only")
@pytest.mark.parametrize("how", ["blocked", "ignored"])
def test_explore_stops_on_ctrl_c_even_if_the_parent_blocked_or_ignored_it(how):
    """A parent with SIGINT blocked or ignored (a test run's thread pools, a job runner) passes
    that on across exec; the server must still stop on Ctrl-C (it hung before)."""

    def inherit() -> None:
        if how == "blocked":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        else:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen([sys.executable, "-m", "fpemu", "explore", "--port", "0", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=inherit,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        assert proc.stdout.readline().startswith("fpemu explore: serving")
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"fpemu explore did not stop on SIGINT with SIGINT {how} in its parent")
    assert proc.returncode == 0 and err.strip() == "stopped"


@pytest.mark.parametrize("gone", [BrokenPipeError, ConnectionResetError])
def test_a_page_that_went_away_is_not_a_traceback(gone):
    """A browser that closes its connection before the answer is written (a reload, a request
    it dropped) ends that request quietly instead of socketserver's traceback on stderr."""
    from fpemu.teach.server import _Handler

    class Gone:
        def write(self, data):
            raise gone()

    handler = object.__new__(_Handler)  # (no socket: only what _send touches)
    handler.send_response = handler.send_header = lambda *args: None
    handler.end_headers = lambda: None
    handler.wfile = Gone()
    handler._send(200, b"{}", "application/json")
    assert handler.close_connection is True
