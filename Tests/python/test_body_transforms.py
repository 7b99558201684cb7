"""Bodies of unknown length, compressed bodies and body digests (issue 22) against real
receivers on 127.0.0.1.

* Receivers that de-chunk on their own: werkzeug's WSGI server, an h11 server (which also
  hands over the trailer fields), and nginx from Debian's package (its own configuration in
  a temporary directory: it buffers the chunked body — client_body_buffer_size 16k, so big
  bodies go through its temporary files — and passes it with a Content-Length to the
  werkzeug receiver). Every receiver records the bytes it got; the tests compare them and
  their SHA-256 with the body the library streams.
* Senders: the library itself (``Request.write_to``: chunked framing, trailers, file parts
  by sendfile), and stacks framing the library's raw body themselves: ``http.client`` with
  ``encode_chunked=True``, ``requests`` with an iterator, and libcurl without
  CURLOPT_INFILESIZE (Tests/python/clients/curl_chunked_upload.c, compiled here with gcc).
* Compression: the bodies decompress with Python's gzip/zlib, ``zstandard`` and ``brotli``
  to exactly the uncompressed body, for every part kind and any read size.
* Digests: Content-Digest / Content-MD5 in headers and trailers equal hashlib over what the
  receiver got.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import io
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import afserialization as afs
from afserialization import transforms

brotli = pytest.importorskip("brotli")
zstandard = pytest.importorskip("zstandard")
h11 = pytest.importorskip("h11")
requests = pytest.importorskip("requests")
from werkzeug.serving import make_server  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------------------
# Receivers: each stores {"headers": {lower: value}, "body": bytes, "trailers": [...]}
# under the last path component of the request.

RECEIVED: Dict[str, Dict[str, Any]] = {}
_tokens = itertools.count(1)


def token() -> str:
    return f"t{next(_tokens)}-{os.getpid()}"


def _wsgi_app(environ: Dict[str, Any], start_response: Any) -> List[bytes]:
    stream = environ["wsgi.input"]
    chunks = []
    while True:
        # werkzeug de-chunks a chunked body (wsgi.input_terminated); nginx sends a length.
        block = stream.read(1 << 16) if environ.get("wsgi.input_terminated") else \
            stream.read(min(1 << 16, int(environ.get("CONTENT_LENGTH") or 0) - sum(map(len, chunks))))
        if not block:
            break
        chunks.append(block)
    body = b"".join(chunks)
    headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
    for k in ("CONTENT_LENGTH", "CONTENT_TYPE"):
        if environ.get(k):
            headers[k.replace("_", "-").lower()] = environ[k]
    RECEIVED[environ["PATH_INFO"].rsplit("/", 1)[-1]] = {"headers": headers, "body": body, "trailers": []}
    out = json.dumps({"sha256": hashlib.sha256(body).hexdigest(), "length": len(body)}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


class Werkzeug:
    def __init__(self) -> None:
        self.httpd = make_server("127.0.0.1", 0, _wsgi_app, threaded=True)
        self.port = self.httpd.server_port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class H11Server:
    """A tiny HTTP/1.1 server on h11: one request per connection, trailers kept."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        h = h11.Connection(h11.SERVER, max_incomplete_event_size=1 << 20)
        body = bytearray()
        headers: Dict[str, str] = {}
        target = ""
        with conn:
            conn.settimeout(30)
            while True:
                event = h.next_event()
                if event is h11.NEED_DATA:
                    data = conn.recv(1 << 16)
                    h.receive_data(data)
                    if not data and h.their_state is not h11.DONE:
                        return
                    continue
                if isinstance(event, h11.Request):
                    target = event.target.decode()
                    headers = {k.decode().lower(): v.decode() for k, v in event.headers}
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    trailers = [(k.decode(), v.decode()) for k, v in event.headers]
                    RECEIVED[target.rsplit("/", 1)[-1]] = {"headers": headers, "body": bytes(body),
                                                          "trailers": trailers}
                    out = json.dumps({"sha256": hashlib.sha256(body).hexdigest()}).encode()
                    conn.sendall(h.send(h11.Response(status_code=200, headers=[
                        ("Content-Length", str(len(out))), ("Connection", "close")])))
                    conn.sendall(h.send(h11.Data(data=out)) + h.send(h11.EndOfMessage()))
                    return
                else:
                    return

    def close(self) -> None:
        self.stop = True
        self.sock.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """Debian's nginx with its own configuration in `tmp`, proxying to `backend`."""

    def __init__(self, tmp: Path, backend: int) -> None:
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(exe):
            pytest.skip("nginx is not installed (Debian: nginx-light; scripts/install-deps.sh)")
        self.port = _free_port()
        for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (tmp / d).mkdir()
        user = "user root;\n" if os.geteuid() == 0 else ""
        conf = tmp / "nginx.conf"
        conf.write_text(f"""{user}worker_processes 1;
error_log {tmp}/error.log warn;
pid {tmp}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    client_body_buffer_size 16k;
    client_max_body_size 0;
    chunked_transfer_encoding on;
    server {{
        listen 127.0.0.1:{self.port};
        location / {{
            proxy_pass http://127.0.0.1:{backend};
            proxy_request_buffering on;
        }}
    }}
}}
""")
        self.proc = subprocess.Popen([exe, "-e", str(tmp / "error.log"), "-p", str(tmp), "-c", str(conf),
                                      "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    raise RuntimeError(f"nginx did not start: {err}")
                time.sleep(0.05)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: Any) -> Iterator[Dict[str, int]]:
    w = Werkzeug()
    h = H11Server()
    n = Nginx(tmp_path_factory.mktemp("nginx"), w.port)
    try:
        yield {"werkzeug": w.port, "h11": h.port, "nginx": n.port}
    finally:
        n.close()
        h.close()
        w.close()


# --------------------------------------------------------------------------------------
# Bodies

def data(n: int, seed: int) -> bytes:
    """Compressible pseudo-random bytes."""
    out = bytearray()
    x = seed
    words = [b"alpha ", b"beta ", b"gamma\n", b"{\"k\": 1}, ", b"\x00\x01\x02", b"delta "]
    while len(out) < n:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out += words[x % len(words)] if x & 8 else bytes([x & 0xFF])
    return bytes(out[:n])


def generator(b: bytes, step: int = 3333) -> Iterator[bytes]:
    for i in range(0, len(b), step):
        yield b[i:i + step]


class Rewindable:
    """An iterable of chunks that can start over (so the library can rewind it)."""

    def __init__(self, b: bytes, step: int = 5000) -> None:
        self.b, self.step = b, step

    def __iter__(self) -> Iterator[bytes]:
        return generator(self.b, self.step)


FILE_DATA = data(300_000, 1)
FIELD = data(20_000, 2)
STREAM_KNOWN = data(70_000, 3)
STREAM_UNKNOWN = data(90_000, 4)


@pytest.fixture(scope="module")
def file_part(tmp_path_factory: Any) -> Path:
    p = tmp_path_factory.mktemp("parts") / "big.bin"
    p.write_bytes(FILE_DATA)
    return p


def form_request(file_part: Path, unknown_source: Any, target: str = "http://127.0.0.1/up") -> afs.Request:
    """A multipart request with every part kind: file, data, field, stream of known length,
    stream of unknown length."""
    s = afs.HTTPRequestSerializer()
    form = s.multipart_form("POST", target, {"field": "value"})
    form.boundary = "TransformsBoundary"
    form.append_file(file_part, "file", "big.bin", "application/octet-stream")
    form.append_data(FIELD, "data", "d.bin", "application/octet-stream")
    form.append_stream(io.BytesIO(STREAM_KNOWN), len(STREAM_KNOWN), "known", "k.bin", "application/octet-stream")
    form.append_stream(unknown_source, None, "unknown", "u.bin", "application/octet-stream")
    return form.finish()


def expected_form_body(file_part: Path) -> bytes:
    """The same body with every length known: what a receiver must get."""
    s = afs.HTTPRequestSerializer()
    form = s.multipart_form("POST", "http://127.0.0.1/up", {"field": "value"})
    form.boundary = "TransformsBoundary"
    form.append_file(file_part, "file", "big.bin", "application/octet-stream")
    form.append_data(FIELD, "data", "d.bin", "application/octet-stream")
    form.append_stream(io.BytesIO(STREAM_KNOWN), len(STREAM_KNOWN), "known", "k.bin", "application/octet-stream")
    form.append_stream(io.BytesIO(STREAM_UNKNOWN), len(STREAM_UNKNOWN), "unknown", "u.bin", "application/octet-stream")
    r = form.finish()
    return r.body_stream.read()


def url(port: int, tok: str) -> str:
    return f"http://127.0.0.1:{port}/up/{tok}"


def send_raw(r: afs.Request, port: int) -> bytes:
    """Writes the request with the library's own framing (``write_to``: head, chunks, file
    parts by sendfile, trailers) to 127.0.0.1:port; returns the response."""
    r.headers["Connection"] = "close"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        r.write_to(sock)
        resp = b""
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            resp += chunk
    assert resp.startswith(b"HTTP/1.1 200") or resp.startswith(b"HTTP/1.0 200"), resp[:300]
    return resp


# --------------------------------------------------------------------------------------
# Unknown length and chunked framing

def test_unknown_length_stream_part_makes_a_chunked_request(file_part: Path) -> None:
    r = form_request(file_part, generator(STREAM_UNKNOWN))
    assert r.is_chunked
    assert "Content-Length" not in r.headers
    assert r.body is None
    bs = r.body_stream
    assert bs.content_length is None and len(bs) == 0
    assert b"\r\nTransfer-Encoding: chunked\r\n" in r.head and b"Content-Length" not in r.head
    assert bs.read() == expected_form_body(file_part)
    # A generator cannot start over.
    with pytest.raises(afs.UnsupportedError):
        bs.rewind()


def test_text_mode_files_are_refused_and_file_objects_of_unknown_length_accepted(tmp_path: Path) -> None:
    s = afs.HTTPRequestSerializer()
    form = s.multipart_form("POST", "http://127.0.0.1/up", None)
    p = tmp_path / "t.txt"
    p.write_text("text")
    with open(p, "r") as text, pytest.raises(TypeError, match="binary"):
        form.append_stream(text, None, "t", "t.txt", "text/plain")
    with pytest.raises(TypeError):
        form.append_stream(io.StringIO("x"), None, "t", "t.txt", "text/plain")
    # A pipe: a file object whose length nobody knows.
    rfd, wfd = os.pipe()
    payload = data(200_000, 9)
    writer = threading.Thread(target=lambda: (os.write(wfd, payload), os.close(wfd)))
    writer.start()
    with open(rfd, "rb") as pipe:
        form.append_stream(pipe, None, "p", "p.bin", "application/octet-stream")
        r = form.finish()
        body = r.body_stream.read()
    writer.join()
    assert payload in body and r.is_chunked


@pytest.mark.parametrize("receiver", ["werkzeug", "h11", "nginx"])
def test_chunked_uploads_are_received_intact(servers: Dict[str, int], file_part: Path, receiver: str) -> None:
    expected = expected_form_body(file_part)
    # Multipart with every part kind, the unknown one a generator (sent once).
    tok = token()
    r = form_request(file_part, generator(STREAM_UNKNOWN), url(servers[receiver], tok))
    send_raw(r, servers[receiver])
    got = RECEIVED.pop(tok)
    assert hashlib.sha256(got["body"]).hexdigest() == hashlib.sha256(expected).hexdigest()
    assert got["body"] == expected
    if receiver != "nginx":
        assert got["headers"].get("transfer-encoding") == "chunked"
    else:
        assert got["headers"].get("content-length") == str(len(expected))  # nginx de-chunked
    # A whole-body generator of unknown length.
    payload = data(500_000, 5)
    tok = token()
    b = afs.Request("PUT", url(servers[receiver], tok))
    b.set_body_stream(generator(payload, 10_000))
    assert b.is_chunked
    send_raw(b, servers[receiver])
    assert RECEIVED.pop(tok)["body"] == payload


def test_retries_resend_the_same_chunked_body(servers: Dict[str, int], file_part: Path) -> None:
    tok = token()
    r = form_request(file_part, Rewindable(STREAM_UNKNOWN), url(servers["h11"], tok))
    bodies = []
    for _ in range(2):
        send_raw(r, servers["h11"])
        bodies.append(RECEIVED.pop(tok)["body"])
    assert bodies[0] == bodies[1] == expected_form_body(file_part)


# --------------------------------------------------------------------------------------
# Stacks that frame the raw body themselves

def test_http_client_encode_chunked(servers: Dict[str, int], file_part: Path) -> None:
    r = form_request(file_part, generator(STREAM_UNKNOWN))
    tok = token()
    conn = http.client.HTTPConnection("127.0.0.1", servers["werkzeug"], timeout=30)
    headers = dict(r.headers)
    headers["Transfer-Encoding"] = "chunked"
    conn.request("POST", f"/up/{tok}", body=r.body_stream, headers=headers, encode_chunked=True)
    assert conn.getresponse().status == 200
    conn.close()
    assert RECEIVED.pop(tok)["body"] == expected_form_body(file_part)


def test_requests_with_the_iterator(servers: Dict[str, int], file_part: Path) -> None:
    r = form_request(file_part, generator(STREAM_UNKNOWN))
    r.set_content_encoding("gzip", 1)
    tok = token()
    resp = requests.post(f"http://127.0.0.1:{servers['h11']}/up/{tok}", data=r.body_stream.iter_chunks(),
                         headers=dict(r.headers), timeout=30)
    assert resp.status_code == 200
    got = RECEIVED.pop(tok)
    assert got["headers"]["transfer-encoding"] == "chunked"
    assert got["headers"]["content-encoding"] == "gzip"
    assert gzip.decompress(got["body"]) == expected_form_body(file_part)


def test_requests_with_the_stream_itself_and_httpx(servers: Dict[str, int], file_part: Path) -> None:
    # requests asks len(): 0 for a body of unknown length, so it sends the file object chunked.
    r = form_request(file_part, generator(STREAM_UNKNOWN))
    tok = token()
    resp = requests.post(f"http://127.0.0.1:{servers['werkzeug']}/up/{tok}", data=r.body_stream,
                         headers=dict(r.headers), timeout=30)
    assert resp.status_code == 200
    got = RECEIVED.pop(tok)
    assert got["headers"]["transfer-encoding"] == "chunked"
    assert got["body"] == expected_form_body(file_part)
    httpx = pytest.importorskip("httpx")
    r = form_request(file_part, generator(STREAM_UNKNOWN))
    r.set_content_encoding("br", 4)
    tok = token()
    resp = httpx.post(f"http://127.0.0.1:{servers['h11']}/up/{tok}", content=r.body_stream.iter_chunks(),
                      headers=dict(r.headers), timeout=30)
    assert resp.status_code == 200
    got = RECEIVED.pop(tok)
    assert got["headers"]["transfer-encoding"] == "chunked"
    assert brotli.decompress(got["body"]) == expected_form_body(file_part)


@pytest.fixture(scope="module")
def curl_client(tmp_path_factory: Any) -> str:
    if not shutil.which("gcc") or not any(os.path.exists(p) for p in (
            "/usr/include/curl/curl.h", "/usr/include/x86_64-linux-gnu/curl/curl.h")):
        pytest.skip("gcc and libcurl's headers are needed (Debian: libcurl4-openssl-dev)")
    lib = os.environ.get("AFSERIALIZATION_LIBRARY") or str(REPO / "build" / "lib" / "libafserialization.so")
    out = str(tmp_path_factory.mktemp("curl") / "curl_chunked_upload")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-o", out,
                    str(REPO / "Tests" / "python" / "clients" / "curl_chunked_upload.c"),
                    "-I", str(REPO / "include"), lib, f"-Wl,-rpath,{os.path.dirname(lib)}", "-lcurl"],
                   check=True)
    return out


@pytest.mark.parametrize("coding", ["-", "zstd"])
def test_libcurl_without_infilesize(servers: Dict[str, int], curl_client: str, tmp_path: Path, coding: str) -> None:
    payload = data(400_000, 7)
    src = tmp_path / "src.bin"
    src.write_bytes(payload)
    tok = token()
    subprocess.run([curl_client, f"http://127.0.0.1:{servers['h11']}/up/{tok}", str(src), coding, "trailer"],
                   check=True, stdout=subprocess.DEVNULL, timeout=60)
    got = RECEIVED.pop(tok)
    assert got["headers"]["transfer-encoding"] == "chunked"
    body = got["body"] if coding == "-" else zstandard.ZstdDecompressor().decompressobj().decompress(got["body"])
    assert body == payload
    # The trailer curl sent is the library's digest of what was sent.
    digest = base64.b64encode(hashlib.sha256(got["body"]).digest()).decode()
    assert ("content-digest", f"sha-256=:{digest}:") in got["trailers"]  # h11 lowercases names


# --------------------------------------------------------------------------------------
# Compression

def decompress(coding: str, b: bytes) -> bytes:
    if coding == "gzip":
        return gzip.decompress(b)
    if coding == "deflate":
        return zlib.decompress(b)  # the zlib format, as HTTP's "deflate"
    if coding == "zstd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(b)
    return brotli.decompress(b)


def read_with(bs: afs.BodyStream, size: int) -> bytes:
    out = bytearray()
    while True:
        chunk = bs.read(size)
        if not chunk:
            return bytes(out)
        out += chunk


@pytest.mark.parametrize("coding", transforms.CODINGS)
def test_compressed_bodies_decompress_to_the_body_for_every_part_kind_and_read_size(
        file_part: Path, coding: str) -> None:
    expected = expected_form_body(file_part)
    r = form_request(file_part, Rewindable(STREAM_UNKNOWN))
    r.set_content_encoding(coding, 1)
    assert r.is_chunked and r.headers["Content-Encoding"] == coding and r.body is None
    bs = r.body_stream
    first = read_with(bs, 65536)
    assert decompress(coding, first) == expected
    for size in (7, 4096, 100_003, 1 << 20):
        bs.rewind()
        assert read_with(bs, size) == first
    # Exact: compressed ahead into a temporary file, the same bytes, a Content-Length.
    e = form_request(file_part, Rewindable(STREAM_UNKNOWN))
    e.set_content_encoding(coding, 1, exact=True)
    assert not e.is_chunked and e.headers["Content-Length"] == str(len(first))
    assert e.body_stream.read() == first
    # In-memory bodies (JSON) chunked and exact; every read size on a small body.
    small = json.dumps({"k": [i for i in range(3000)]}).encode()
    m = afs.Request("POST", "http://127.0.0.1/j")
    s = afs.JSONRequestSerializer()
    m = s.request("POST", "http://127.0.0.1/j", {"k": list(range(3000))})
    raw = m.body
    m.set_content_encoding(coding, 1)
    assert m.body is None
    whole = m.body_stream.read()
    assert decompress(coding, whole) == raw
    for size in (1, 2, 3, 1000):
        m.body_stream.rewind()
        assert read_with(m.body_stream, size) == whole
    x = s.request("POST", "http://127.0.0.1/j", {"k": list(range(3000))})
    x.set_content_encoding(coding, 1, exact=True)
    assert x.body == whole and x.body_stream is None
    assert small  # (built above to size the JSON)


@pytest.mark.parametrize("coding", transforms.CODINGS)
def test_compressed_uploads_received_and_decompressed(servers: Dict[str, int], file_part: Path, coding: str) -> None:
    tok = token()
    r = form_request(file_part, generator(STREAM_UNKNOWN), url(servers["werkzeug"], tok))
    r.set_content_encoding(coding, 3)
    send_raw(r, servers["werkzeug"])
    got = RECEIVED.pop(tok)
    assert got["headers"]["content-encoding"] == coding
    assert decompress(coding, got["body"]) == expected_form_body(file_part)


def test_serializer_wide_compression_rules() -> None:
    s = afs.JSONRequestSerializer()
    s.set_content_encoding("br", 5, exact=True, min_size=100)
    assert "Content-Encoding" not in s.request("POST", "http://h/", {"a": 1}).headers
    big = {"a": "x" * 5000}
    r = s.request("POST", "http://h/", big)
    assert r.headers["Content-Encoding"] == "br" and json.loads(brotli.decompress(r.body)) == big
    s.headers["Content-Encoding"] = "identity"
    with pytest.raises(afs.StateError, match="Content-Encoding: identity"):
        s.request("POST", "http://h/", big)
    s.set_content_encoding("gzip", existing="skip")
    assert s.request("POST", "http://h/", big).headers["Content-Encoding"] == "identity"
    s.set_content_encoding("gzip", existing=transforms.ExistingEncoding.REPLACE)
    r = s.request("POST", "http://h/", big)
    assert r.headers["Content-Encoding"] == "gzip" and r.is_chunked
    assert json.loads(gzip.decompress(r.body_stream.read())) == big
    with pytest.raises(afs.UnsupportedError):
        s.set_content_encoding("lzma")
    with pytest.raises(afs.InvalidArgumentError):
        s.set_content_encoding("gzip", 12)


# --------------------------------------------------------------------------------------
# Digests

def b64(d: bytes) -> str:
    return base64.b64encode(d).decode()


def test_header_digests_equal_hashlib_over_what_the_server_got(servers: Dict[str, int], file_part: Path) -> None:
    for receiver in ("werkzeug", "nginx"):
        tok = token()
        r = form_request(file_part, Rewindable(STREAM_UNKNOWN), url(servers[receiver], tok))
        r.add_digest("sha-256")          # before compression: computed again after it
        r.set_content_encoding("zstd", 1)
        r.add_digest("sha-512")
        r.add_digest("md5")
        send_raw(r, servers[receiver])
        got = RECEIVED.pop(tok)
        body = got["body"]
        assert got["headers"]["content-digest"] == \
            f"sha-256=:{b64(hashlib.sha256(body).digest())}:, sha-512=:{b64(hashlib.sha512(body).digest())}:"
        assert got["headers"]["content-md5"] == b64(hashlib.md5(body).digest())
        assert decompress("zstd", body) == expected_form_body(file_part)


def test_trailer_digests_equal_hashlib_over_what_the_server_got(servers: Dict[str, int], file_part: Path) -> None:
    tok = token()
    r = form_request(file_part, Rewindable(STREAM_UNKNOWN), url(servers["h11"], tok))
    r.set_content_encoding("gzip", 1)
    r.add_digest("sha-256", trailer=True)
    r.add_digest("md5", trailer=True)
    assert b"\r\nTrailer: Content-Digest, Content-MD5\r\n" in r.head
    with pytest.raises(afs.StateError):
        r.trailers
    for _ in range(2):  # a rewound body: the same digests
        send_raw(r, servers["h11"])
        got = RECEIVED.pop(tok)
        body = got["body"]
        assert got["trailers"] == [("content-digest", f"sha-256=:{b64(hashlib.sha256(body).digest())}:"),
                                   ("content-md5", b64(hashlib.md5(body).digest()))]  # h11 lowercases names
        assert [(k.lower(), v) for k, v in r.trailers] == got["trailers"]
    # A trailer digest on an in-memory body with a Content-Length makes it chunked.
    tok = token()
    k = afs.Request("PUT", url(servers["h11"], tok))
    k.set_body_stream(io.BytesIO(b"hello"), 5)
    assert not k.is_chunked and k.headers["Content-Length"] == "5"
    k.add_digest("sha-512", trailer=True)
    assert k.is_chunked and "Content-Length" not in k.headers
    send_raw(k, servers["h11"])
    got = RECEIVED.pop(tok)
    assert got["body"] == b"hello"
    assert got["trailers"] == [("content-digest", f"sha-512=:{b64(hashlib.sha512(b'hello').digest())}:")]


def test_digest_rules() -> None:
    r = afs.Request("PUT", "http://127.0.0.1/k")
    with pytest.raises(afs.StateError):
        r.add_digest("sha-256")
    r.set_body_stream(generator(b"abc"))
    with pytest.raises(afs.UnsupportedError, match="rewind"):
        r.add_digest("sha-256")          # a generator cannot be read twice
    with pytest.raises(afs.UnsupportedError):
        r.add_digest("sha-1", trailer=True)
    r.add_digest("sha-256", trailer=True)
    assert r.body_stream.read() == b"abc"
    assert r.trailers == [("Content-Digest", "sha-256=:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=:")]
