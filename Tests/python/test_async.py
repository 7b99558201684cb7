"""asyncio: a multipart body read off the event loop (BodyStream.__aiter__/__anext__,
aclose, aiter), uploaded by httpx.AsyncClient and aiohttp to a server on 127.0.0.1.

Every upload carries a 50 MiB file part plus fields; the server (a thread, not the loop)
receives the body byte for byte and the test compares it with the same request read
synchronously. Meanwhile a task on the loop wakes every 5 ms and records how late it
woke: the largest delay is printed and must stay under 50 ms (a file part read on the
loop itself, or a throttled part sleeping on it, would stall it). The throttled runs use
AFNetworking's throttle (16 KiB packets, a 60 ms sleep after each) on a smaller file, and
a control run reads that body on the loop and must be seen stalling.
"""
import asyncio
import hashlib
import os
import socket
import threading
import time

import pytest

import afserialization as afs
from afserialization.body_stream import AsyncBodyIterator

httpx = pytest.importorskip("httpx", reason="httpx is installed by scripts/install-deps.sh")
aiohttp = pytest.importorskip("aiohttp", reason="aiohttp is installed by scripts/install-deps.sh")

MIB = 1024 * 1024
BIG = 50 * MIB
STALL_LIMIT = 0.050  # seconds the loop may wake late at most
BOUNDARY = "Boundary+AsyncTest0123"
FIELDS = {"title": "holiday photos", "album": "Zoë's"}


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("async") / "big.bin"
    block = os.urandom(MIB)
    with open(path, "wb") as f:
        for i in range(BIG // MIB):
            f.write(bytes([i]) + block[1:])
    return path


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("async-small") / "small.bin"
    path.write_bytes(os.urandom(MIB + 12345))
    return path


@pytest.fixture(scope="module")
def throttled_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("async-throttled") / "throttled.bin"
    path.write_bytes(os.urandom(200 * 1024 + 7))
    return path


# AFNetworking's 3G packet size (16 KiB) with a 60 ms sleep after each packet: longer than
# the stall limit, so one throttled read on the loop is a stall the watcher sees (the
# suggested 0.2 s delay would make the upload take seconds for nothing).
THROTTLE = (afs.UPLOAD_STREAM_3G_SUGGESTED_PACKET_SIZE, 0.060)


def make_request(path, throttle=None):
    form = afs.HTTPRequestSerializer().multipart_form("POST", "http://127.0.0.1/upload", FIELDS)
    form.boundary = BOUNDARY
    form.append_file(path, "file")
    if throttle:
        form.throttle(*throttle)
    return form.finish()


def expected_digest(path):
    """The body read synchronously (no throttle: the bytes are the same)."""
    with make_request(path) as request:
        h = hashlib.sha256()
        stream = request.body_stream
        while True:
            chunk = stream.read(MIB)
            if not chunk:
                break
            h.update(chunk)
        return h.hexdigest(), len(stream)


class Server:
    """HTTP/1.1 on 127.0.0.1 in a thread: reads one request per connection (Content-Length
    body, or chunked), records the body's length and SHA-256, answers 200."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.received = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the thread
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)

    def url(self):
        return f"http://127.0.0.1:{self.port}/upload"

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    self._one(conn)
                except OSError:
                    pass

    def _one(self, conn):
        f = conn.makefile("rb")
        request_line = f.readline()
        headers = {}
        while True:
            line = f.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        h = hashlib.sha256()
        size = 0
        if "content-length" in headers:
            remaining = int(headers["content-length"])
            while remaining:
                chunk = f.read(min(remaining, MIB))
                if not chunk:
                    break
                h.update(chunk)
                size += len(chunk)
                remaining -= len(chunk)
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                n = int(f.readline().split(b";")[0], 16)
                if n == 0:
                    f.readline()
                    break
                chunk = f.read(n)
                h.update(chunk)
                size += len(chunk)
                f.readline()
        self.received.append({"line": request_line, "headers": headers, "size": size,
                              "sha256": h.hexdigest()})
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


async def watch_loop(stop, lags):
    """Wakes every 5 ms; records how late each wake-up came."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        start = loop.time()
        await asyncio.sleep(0.005)
        lags.append(loop.time() - start - 0.005)


async def on_the_loop(stream, chunk_size):
    """What not to do: read the stream on the loop (the control case)."""
    while True:
        chunk = stream.read(chunk_size)
        if not chunk:
            return
        yield chunk


async def upload_with(client, url, request, chunk_size, naive=False):
    headers = {k: v for k, v in request.headers.items()}
    if naive:
        body = on_the_loop(request.body_stream, chunk_size)
    else:
        body = request.body_stream.aiter(chunk_size=chunk_size)
    if client == "httpx":
        async with httpx.AsyncClient(timeout=120) as c:
            r = await c.post(url, content=body, headers=headers)
            return r.status_code
    async with aiohttp.ClientSession() as s:
        async with s.post(url, data=body, headers=headers) as r:
            return r.status


def run_upload(client, path, throttle=None, chunk_size=65536, naive=False):
    digest, length = expected_digest(path)

    async def main(server):
        stop = asyncio.Event()
        lags = []
        watcher = asyncio.ensure_future(watch_loop(stop, lags))
        with make_request(path, throttle) as request:
            started = time.monotonic()
            status = await upload_with(client, server.url(), request, chunk_size, naive)
            elapsed = time.monotonic() - started
        stop.set()
        await watcher
        return status, lags, elapsed

    with Server() as server:
        status, lags, elapsed = asyncio.run(main(server))
    received = server.received
    worst = max(lags) if lags else 0.0
    label = f"{client}{' throttled' if throttle else ''}{' on the loop' if naive else ''}"
    print(f"\n{label:18} {length / MIB:6.1f} MiB  {elapsed:6.2f} s  "
          f"loop wake-ups {len(lags):5}  worst delay {worst * 1000:6.1f} ms")
    assert status == 200
    (got,) = received
    assert got["line"].startswith(b"POST /upload ")
    assert got["headers"]["content-length"] == str(length)
    assert "transfer-encoding" not in got["headers"]
    assert got["headers"]["content-type"] == f"multipart/form-data; boundary={BOUNDARY}"
    assert (got["size"], got["sha256"]) == (length, digest)
    return worst


@pytest.mark.parametrize("client", ["httpx", "aiohttp"])
def test_a_50_mib_upload_does_not_block_the_loop(client, big_file):
    worst = run_upload(client, big_file)
    assert worst < STALL_LIMIT, f"the event loop stalled for {worst * 1000:.1f} ms"


@pytest.mark.parametrize("client", ["httpx", "aiohttp"])
def test_a_throttled_upload_sleeps_off_the_loop(client, throttled_file):
    worst = run_upload(client, throttled_file, throttle=THROTTLE)
    assert worst < STALL_LIMIT, f"the event loop stalled for {worst * 1000:.1f} ms"


def test_the_watcher_sees_a_throttled_read_on_the_loop(throttled_file):
    """The control: the same throttled upload read on the loop stalls it (so the
    watcher can fail the tests above)."""
    worst = run_upload("httpx", throttled_file, throttle=THROTTLE, naive=True)
    assert worst > STALL_LIMIT


def test_async_for_yields_the_body_and_aclose_closes(small_file):
    digest, length = expected_digest(small_file)

    async def main():
        with make_request(small_file) as request:
            stream = request.body_stream
            h = hashlib.sha256()
            sizes = set()
            async for chunk in stream:
                h.update(chunk)
                sizes.add(len(chunk))
            assert stream.tell() == length
            stream.seek(0)
            first = await stream.__anext__()
            await stream.aclose()
            assert stream.closed
            with pytest.raises(afs.HandleClosedError):
                await stream.__anext__()
            return h.hexdigest(), sizes, first

    got, sizes, first = asyncio.run(main())
    assert got == digest
    assert max(sizes) == afs.DEFAULT_CHUNK_SIZE
    assert first.startswith(f"--{BOUNDARY}\r\n".encode())


def test_aiter_is_async_only_and_checks_its_chunk_size(small_file):
    with make_request(small_file) as request:
        stream = request.body_stream
        it = stream.aiter(chunk_size=1000)
        assert isinstance(it, AsyncBodyIterator)
        assert not hasattr(it, "__iter__")  # httpx would take it for a sync body
        for bad in (0, -1, 1.5, True, "1"):
            with pytest.raises(ValueError):
                stream.aiter(chunk_size=bad)

        async def collect():
            chunks = [c async for c in it]
            await it.aclose()
            assert [c async for c in it] == []
            return chunks

        chunks = asyncio.run(collect())
        assert {len(c) for c in chunks[:-1]} == {1000}
        assert sum(map(len, chunks)) == len(stream)
        assert not stream.closed  # the iterator's aclose leaves the stream to its request


def test_a_failing_part_raises_from_the_async_read(tmp_path):
    path = tmp_path / "gone.bin"
    path.write_bytes(b"x" * 1000)
    form = afs.HTTPRequestSerializer().multipart_form("POST", "http://127.0.0.1/", None)
    form.append_file(path, "file")
    request = form.finish()
    path.write_bytes(b"x" * 10)  # shorter than when it was appended

    async def drain():
        async for _ in request.body_stream.aiter():
            pass

    with request, pytest.raises(afs.SerializationError):
        asyncio.run(drain())
