"""Real HTTP clients stream a multipart body from the library to a local server, which
parses it with werkzeug's form parser: requests, http.client, urllib3, a raw socket with
write_to; a 307 redirect makes requests and urllib3 rewind the body and send it again."""
import hashlib
import http.client
import io
import os
import socket
from urllib.parse import urlsplit

import pytest

import afserialization as afs

import requests  # noqa: E402  (scripts/install-deps.sh installs it)
import urllib3  # noqa: E402


@pytest.fixture
def upload(tmp_path):
    """(make_request(url) -> Request, check(server_json)) for a form with every part kind."""
    file_bytes = os.urandom(3 << 20) + b"end of file"
    path = tmp_path / "big.bin"
    path.write_bytes(file_bytes)
    streamed = b"streamed chunk " * 1000
    fields = {"title": "Zoë's upload", "tags[]": ["a", "b"]}

    def make(url):
        serializer = afs.HTTPRequestSerializer()
        with serializer.multipart_form("POST", url) as form:
            form.append_field("title", fields["title"])
            form.append_field("tags[]", "a")
            form.append_field("tags[]", b"b")
            form.append_file(path, "file", "big.bin", "application/octet-stream")
            form.append_data(b"{\"k\": 1}", "meta", "meta.json", "application/json")
            form.append_stream([streamed[:7000], streamed[7000:]], len(streamed),
                               "stream", "s.txt", "text/plain")
            form.append_field("note", "plain field")
            return form.finish()

    def check(info):
        assert info["form"] == {"title": [fields["title"]], "tags[]": ["a", "b"],
                                "note": ["plain field"]}
        files = info["files"]
        assert files["file"] == [{"filename": "big.bin",
                                  "content_type": "application/octet-stream",
                                  "size": len(file_bytes),
                                  "sha256": hashlib.sha256(file_bytes).hexdigest(),
                                  "hex": None}]
        assert files["meta"][0]["hex"] == b"{\"k\": 1}".hex()
        assert files["meta"][0]["content_type"] == "application/json"
        assert files["stream"][0]["size"] == len(streamed)
        assert files["stream"][0]["sha256"] == hashlib.sha256(streamed).hexdigest()

    return make, check


def expected_digest(request):
    stream = request.body_stream
    position = stream.tell()
    stream.seek(0)
    digest = hashlib.sha256(stream.read()).hexdigest()
    stream.seek(position)
    return digest


def test_requests_streams_the_body(server, upload):
    make, check = upload
    with make(server.url("/echo")) as request:
        digest = expected_digest(request)
        response = requests.post(request.url, data=request.body_stream,
                                 headers=request.headers, timeout=60)
        response.raise_for_status()
        info = response.json()
        assert info["headers"]["Content-Length"] == request.headers["Content-Length"]
        assert "Transfer-Encoding" not in info["headers"]
        assert info["headers"]["User-Agent"] == request.headers["User-Agent"]
        assert info["body_sha256"] == digest
        check(info)


def test_http_client_streams_the_body(server, upload):
    make, check = upload
    with make(server.url("/echo")) as request:
        parts = urlsplit(request.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        try:
            conn.request("POST", parts.path, body=request.body_stream,
                         headers=dict(request.headers.items()))
            response = conn.getresponse()
            assert response.status == 200
            import json
            info = json.loads(response.read())
        finally:
            conn.close()
        assert info["body_length"] == len(request.body_stream)
        check(info)


def test_urllib3_streams_the_body(server, upload):
    make, check = upload
    with make(server.url("/echo")) as request, urllib3.PoolManager() as http:
        response = http.request("POST", request.url, body=request.body_stream,
                                headers=dict(request.headers.items()),
                                timeout=urllib3.Timeout(60))
        assert response.status == 200
        check(response.json())


def test_requests_rewinds_on_307(server, upload):
    make, check = upload
    with make(server.url("/redirect307?to=/echo")) as request:
        digest = expected_digest(request)  # requests records tell() and seeks back to it
        response = requests.post(request.url, data=request.body_stream,
                                 headers=request.headers, timeout=60)
        assert response.status_code == 200
        assert [r.status_code for r in response.history] == [307]
        info = response.json()
        check(info)
    first, second = server.log[-2:]
    assert first["path"] == "/redirect307" and second["path"] == "/echo"
    assert first["body_length"] == second["body_length"] == int(info["headers"]["Content-Length"])
    assert first["body_sha256"] == second["body_sha256"] == digest


def test_urllib3_rewinds_on_307(server, upload):
    # A connection pool follows same-host redirects itself and rewinds the body to the
    # position it recorded with tell(). (PoolManager re-records the position at each hop,
    # after the body was read, so it would resend an exhausted body: urllib3's behaviour.)
    make, check = upload
    parts = urlsplit(server.base_url)
    with make(server.url("/redirect307?to=/echo")) as request, \
            urllib3.HTTPConnectionPool(parts.hostname, parts.port) as pool:
        digest = expected_digest(request)
        response = pool.urlopen("POST", "/redirect307?to=/echo", body=request.body_stream,
                                headers=dict(request.headers.items()),
                                timeout=urllib3.Timeout(60), redirect=True)
        assert response.status == 200
        check(response.json())
    first, second = server.log[-2:]
    assert (first["path"], second["path"]) == ("/redirect307", "/echo")
    assert first["body_sha256"] == second["body_sha256"] == digest


def test_write_to_a_raw_socket(server, upload):
    make, check = upload
    with make(server.url("/echo")) as request:
        parts = urlsplit(request.url)
        with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
            sock.sendall(request.wire_head().replace(b"HTTP/1.1\r\n",
                                                     b"HTTP/1.1\r\nConnection: close\r\n", 1))
            assert request.body_stream.write_to(sock) == len(request.body_stream)
            response = http.client.HTTPResponse(sock)
            response.begin()
            assert response.status == 200
            import json
            check(json.loads(response.read()))


def test_progress_during_an_upload(server, upload):
    make, check = upload
    with make(server.url("/echo")) as request:
        seen = []
        request.body_stream.set_progress(lambda sent, total: seen.append((sent, total)))
        requests.post(request.url, data=request.body_stream, headers=request.headers,
                      timeout=60).raise_for_status()
        total = len(request.body_stream)
        assert seen[-1] == (total, total) and len(seen) > 10


def test_plain_requests_reach_the_server(server):
    s = afs.HTTPRequestSerializer()
    r = s.request("GET", server.url("/echo"), {"q": "a b", "n": [1, 2]})
    info = requests.get(r.url, headers=r.headers, timeout=30).json()
    assert info["query"] == "n%5B%5D=1&n%5B%5D=2&q=a%20b"
    r = s.request("POST", server.url("/echo"), {"q": "a b", "n": [1, 2]})
    info = requests.post(r.url, data=r.body, headers=r.headers, timeout=30).json()
    assert info["form"] == {"q": ["a b"], "n[]": ["1", "2"]}
