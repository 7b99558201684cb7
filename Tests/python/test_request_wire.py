"""The request as HTTP/1.1 bytes (``Request.head``, ``Request.write_to``) read by real HTTP
parsers over loopback sockets: werkzeug (the session's server, see conftest.py), the
standard library's ``http.server``, and h11's server-side parser. Also base URLs and
``resolve_url`` from Python.
"""
from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import socket
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import h11
import pytest

import afserialization as afs


def http_response(sock: socket.socket) -> Tuple[int, bytes]:
    """Reads one HTTP/1.1 response (Content-Length framed) from sock."""
    conn = h11.Connection(our_role=h11.CLIENT)
    # The client side must have sent a request for h11 to read a response: pretend it.
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    status, body = 0, b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(sock.recv(1 << 16))
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            body += bytes(event.data)
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            return status, body


def send(request: afs.Request, port: int) -> Tuple[int, bytes, int]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        written = request.write_to(sock)
        status, body = http_response(sock)
    return status, body, written


# -- werkzeug ----------------------------------------------------------------------------

def test_that_werkzeug_parses_a_json_request_with_userinfo(http_server: Any) -> None:
    port = int(http_server.base_url.rsplit(":", 1)[1])
    s = afs.JSONRequestSerializer()
    req = s.request("POST", f"http://al%20ice:p%40ss@127.0.0.1:{port}/echo/a b?x=[1]#frag",
                    {"name": "Zoë"})
    status, body, written = send(req, port)
    assert status == 200
    info = json.loads(body)
    assert written == len(req.head) + len(req.body)
    assert info["path"] == "/echo/a b" and info["query"] == "x=%5B1%5D"
    assert info["headers"]["Host"] == f"127.0.0.1:{port}"
    assert info["headers"]["Authorization"] == "Basic " + base64.b64encode(b"al ice:p@ss").decode()
    assert info["headers"]["Content-Type"] == "application/json"
    assert info["body_sha256"] == hashlib.sha256(req.body).hexdigest()


def test_that_a_large_multipart_upload_written_with_the_fd_call_arrives_intact(
        http_server: Any, tmp_path: Path) -> None:
    port = int(http_server.base_url.rsplit(":", 1)[1])
    big = tmp_path / "big.bin"
    data = os.urandom(1 << 20) * 24  # 24 MiB
    big.write_bytes(data)
    s = afs.HTTPRequestSerializer(base_url=f"http://127.0.0.1:{port}/")
    with s.multipart_form("POST", "echo", {"title": "Holiday"}) as form:
        form.append_file(str(big), "file")
        with form.finish() as req:
            status, body, written = send(req, port)
            assert written == len(req.head) + req.body_stream.content_length
    assert status == 200
    info = json.loads(body)
    assert info["form"] == {"title": ["Holiday"]}
    (f,) = info["files"]["file"]
    assert f["filename"] == "big.bin" and f["size"] == len(data)
    assert f["sha256"] == hashlib.sha256(data).hexdigest()


# -- http.server -------------------------------------------------------------------------

class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: List[Dict[str, Any]] = []

    def do_any(self) -> None:
        n = int(self.headers.get("Content-Length", "0"))
        digest, left = hashlib.sha256(), n
        while left:
            block = self.rfile.read(min(left, 1 << 20))
            if not block:
                break
            digest.update(block)
            left -= len(block)
        self.seen.append({"command": self.command, "path": self.path, "version": self.request_version,
                          "headers": list(self.headers.items()), "length": n - left,
                          "sha256": digest.hexdigest()})
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PUT = do_DELETE = do_any

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stdlib_server() -> Iterator[int]:
    _Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_that_http_server_reads_head_and_form_body(stdlib_server: int) -> None:
    s = afs.HTTPRequestSerializer(base_url=f"http://127.0.0.1:{stdlib_server}/api/v1")
    s.headers["X-Trace"] = "abc"
    req = s.request("PUT", "items/../things/Köln", {"a": "b c", "n": 1})
    status, _, _ = send(req, stdlib_server)
    assert status == 204
    (seen,) = _Recorder.seen
    assert seen["command"] == "PUT" and seen["version"] == "HTTP/1.1"
    assert seen["path"] == "/api/v1/things/K%C3%B6ln"
    names = [k for k, _ in seen["headers"]]
    assert names[0] == "Host" and names[-1] == "Content-Length"
    assert [k for k in names[1:-1]] == list(req.headers.keys())
    assert seen["length"] == len(req.body) and seen["sha256"] == hashlib.sha256(req.body).hexdigest()


def test_that_a_get_sends_no_body_and_no_fragment(stdlib_server: int) -> None:
    req = afs.HTTPRequestSerializer().request("GET", f"http://127.0.0.1:{stdlib_server}?q=a|b#top", {"x": 1})
    assert req.head.startswith(b"GET /?q=a%7Cb&x=1 HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"Content-Length" not in req.head and b"#" not in req.head
    status, _, _ = send(req, stdlib_server)
    assert status == 204
    assert _Recorder.seen[0]["path"] == "/?q=a%7Cb&x=1" and _Recorder.seen[0]["length"] == 0


# -- h11 ---------------------------------------------------------------------------------

def h11_parse(wire: bytes) -> Tuple[h11.Request, bytes]:
    conn = h11.Connection(our_role=h11.SERVER)
    conn.receive_data(wire)
    request, body = None, b""
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += bytes(event.data)
        elif isinstance(event, h11.EndOfMessage):
            break
        else:
            raise AssertionError(f"h11 stopped at {event!r}")
    assert request is not None
    return request, body


def loopback_bytes(req: afs.Request) -> bytes:
    """What req.write_to puts on a loopback TCP connection, as the peer receives it."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        got: List[bytes] = []

        def receive() -> None:
            conn, _ = server.accept()
            with conn:
                while True:
                    block = conn.recv(1 << 16)
                    if not block:
                        break
                    got.append(block)

        t = threading.Thread(target=receive)
        t.start()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.settimeout(10)  # non-blocking underneath: write_to waits and resumes
            req.write_to(sock)
        t.join(30)
    return b"".join(got)


def test_that_h11_parses_what_write_to_sends(tmp_path: Path) -> None:
    f = tmp_path / "photo.png"
    f.write_bytes(os.urandom(3 << 20))
    s = afs.HTTPRequestSerializer()
    with s.multipart_form("POST", "https://user:pw@bücher.example:8443/up?a=[1]", {"k": "v"}) as form:
        form.append_file(str(f), "file")
        with form.finish() as req:
            wire = loopback_bytes(req)
            request, body = h11_parse(wire)
            assert request.method == b"POST" and request.http_version == b"1.1"
            assert request.target == b"/up?a=%5B1%5D"
            headers = dict(request.headers)
            assert headers[b"host"] == b"xn--bcher-kva.example:8443"
            assert headers[b"authorization"] == b"Basic " + base64.b64encode(b"user:pw")
            assert int(headers[b"content-length"]) == len(body) == req.body_stream.content_length
            assert wire == req.head + body
            req.body_stream.rewind()
            assert body == req.body_stream.read()
            assert f.read_bytes() in body


@pytest.mark.parametrize("url,target,host", [
    ("http://e.com", b"/", b"e.com"),
    ("http://[::1]:8080/a%20b?", b"/a%20b?", b"[::1]:8080"),
    ("HTTP://E.COM:80/a/./b", b"/a/./b", b"E.COM:80"),
])
def test_that_h11_reads_the_origin_form_target(url: str, target: bytes, host: bytes) -> None:
    req = afs.Request("DELETE", url)
    request, body = h11_parse(req.head)
    assert request.target == target and dict(request.headers)[b"host"] == host and body == b""


def test_that_an_explicit_authorization_wins_over_userinfo() -> None:
    req = afs.Request("GET", "http://u:p@e.com/", {"Authorization": "Bearer t"})
    request, _ = h11_parse(req.head)
    assert dict(request.headers)[b"authorization"] == b"Bearer t"
    assert b"u:p" not in req.head and base64.b64encode(b"u:p") not in req.head


def test_that_a_url_without_host_has_no_head() -> None:
    with pytest.raises(afs.BadURLError, match="no host"):
        afs.Request("GET", "urn:isbn:1").head


# -- base URL and resolve_url from Python --------------------------------------------------

def test_that_base_url_is_a_keyword_and_a_property() -> None:
    s = afs.JSONRequestSerializer(base_url="https://api.example.com/v1")
    assert s.base_url == "https://api.example.com/v1/"
    assert s.request("GET", "users/1").url == "https://api.example.com/v1/users/1"
    assert s.copy().request("GET", "/x").url == "https://api.example.com/x"
    with pytest.raises(afs.BadURLError, match="must be absolute"):
        s.base_url = "v2/"
    assert s.base_url == "https://api.example.com/v1/"
    s.base_url = None
    assert s.base_url is None
    with pytest.raises(afs.BadURLError, match="a base URL is needed"):
        s.request("GET", "users/1")
    p = afs.PropertyListRequestSerializer(base_url="http://h")
    assert p.request("GET", "a").url == "http://h/a"


def test_that_resolve_url_is_rfc3986_strict() -> None:
    assert afs.resolve_url("http://a/b/c/d;p?q", "../../g") == "http://a/g"
    assert afs.resolve_url("http://a/b/c/d;p?q", "g;x=1/../y") == "http://a/b/c/y"
    assert afs.resolve_url("http://a/b", "c") == "http://a/c"  # no slash rule
    with pytest.raises(afs.BadURLError):
        afs.resolve_url("b/c", "g")
