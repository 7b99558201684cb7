"""MultipartForm and BodyStream: every part kind, exact bytes, io.RawIOBase behaviour
(readinto at any size, seek/tell/len), stream sources and their failures, progress,
write_to, lifecycle.
"""
import errno
import gc
import io
import os
import random
import socket
import threading

import pytest

import afserialization as afs
from afserialization import _ffi, multipart

URL = "http://example.com/upload"


@pytest.fixture
def s():
    with afs.HTTPRequestSerializer() as serializer:
        yield serializer


def readn(stream, n):
    """Exactly n bytes unless the end comes first (a raw read may return fewer)."""
    out = bytearray()
    while len(out) < n:
        chunk = stream.read(n - len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def expected_body(boundary, parts):
    """parts: (headers list, body bytes) in order (docs/DESIGN.md's wire format)."""
    out = b""
    for i, (headers, body) in enumerate(parts):
        out += (b"--" if i == 0 else b"\r\n--") + boundary.encode() + b"\r\n"
        out += b"".join(f"{k}: {v}\r\n".encode() for k, v in headers) + b"\r\n" + body
    return out + b"\r\n--" + boundary.encode() + b"--\r\n"


@pytest.fixture
def sample(s, tmp_path):
    """A form with each part kind and a fixed boundary; (request, expected body)."""
    path = tmp_path / "photo.png"
    file_bytes = os.urandom(100_000)
    path.write_bytes(file_bytes)
    with s.multipart_form("POST", URL) as form:
        form.boundary = "TestBoundary"
        form.append_field("title", "Zoë")
        form.append_field("raw", b"\x00\xff")
        form.append_data(b"data bytes", "doc", "doc.txt", "text/plain")
        form.append_file(path, "photo", "p.png", "image/png")
        form.append_stream(io.BytesIO(b"streamed" * 100), 800, "log", "log.bin",
                           "application/octet-stream")
        form.append_part({"Content-Disposition": 'form-data; name="custom"', "X-Extra": "1"},
                         b"custom body")
        request = form.finish()
    cd = "Content-Disposition"
    parts = [
        ([(cd, 'form-data; name="title"')], "Zoë".encode()),
        ([(cd, 'form-data; name="raw"')], b"\x00\xff"),
        ([(cd, 'form-data; name="doc"; filename="doc.txt"'), ("Content-Type", "text/plain")],
         b"data bytes"),
        ([(cd, 'form-data; name="photo"; filename="p.png"'), ("Content-Type", "image/png")],
         file_bytes),
        ([(cd, 'form-data; name="log"; filename="log.bin"'),
          ("Content-Type", "application/octet-stream")], b"streamed" * 100),
        ([(cd, 'form-data; name="custom"'), ("X-Extra", "1")], b"custom body"),
    ]
    with request:
        yield request, expected_body("TestBoundary", parts)


def test_exact_bytes_headers_and_length(sample):
    request, expected = sample
    assert request.headers["Content-Type"] == "multipart/form-data; boundary=TestBoundary"
    assert request.headers["content-length"] == str(len(expected))
    assert request.body is None
    stream = request.body_stream
    assert stream is request.body_stream  # always the same object
    assert isinstance(stream, io.RawIOBase) and stream.readable() and stream.seekable()
    assert not stream.writable()
    assert len(stream) == stream.content_length == len(expected)
    assert stream.read() == expected
    assert stream.read() == b"" and stream.read(10) == b""
    assert not stream.has_bytes_available


@pytest.mark.parametrize("size", [1, 7, 4096, 65536, 1 << 20])
def test_readinto_at_any_size(sample, size):
    request, expected = sample
    stream = request.body_stream
    buffer = bytearray(size)
    out = bytearray()
    while True:
        n = stream.readinto(buffer)
        if not n:
            break
        out += buffer[:n]
    assert bytes(out) == expected


def test_random_read_sizes_and_buffer_kinds(sample):
    request, expected = sample
    stream = request.body_stream
    rng = random.Random(4)
    out = bytearray()
    while True:
        chunk = stream.read(rng.randint(1, 16))
        if not chunk:
            break
        out += chunk
    assert bytes(out) == expected
    stream.seek(0)
    import array
    words = array.array("I", bytes(64))  # a non-byte buffer format
    n = stream.readinto(words)
    assert 0 < n <= 256 and words.tobytes()[:n] == expected[:n]
    assert stream.readinto(bytearray()) == 0
    with pytest.raises(TypeError):
        stream.readinto(b"read-only")
    assert stream.readall() == expected[n:]


def test_seek_tell(sample):
    request, expected = sample
    stream = request.body_stream
    assert stream.tell() == 0
    assert stream.seek(100) == 100 and readn(stream, 50) == expected[100:150]
    assert stream.tell() == 150
    assert stream.seek(-10, io.SEEK_CUR) == 140 and readn(stream, 10) == expected[140:150]
    assert stream.seek(-20, io.SEEK_END) == len(expected) - 20
    assert stream.read() == expected[-20:]
    assert stream.seek(0, io.SEEK_END) == len(expected) and stream.read() == b""
    # back over the stream part (a seekable BytesIO rewinds) and the file part
    assert stream.seek(3) == 3 and stream.read() == expected[3:]
    with pytest.raises(afs.InvalidArgumentError):
        stream.seek(len(expected) + 1)
    with pytest.raises(ValueError):
        stream.seek(-1)
    with pytest.raises(ValueError):
        stream.seek(0, 5)
    stream.rewind()
    assert readn(stream, 5) == expected[:5]


def test_shutil_and_iteration_work(sample, tmp_path):
    import shutil
    request, expected = sample
    out = io.BytesIO()
    shutil.copyfileobj(request.body_stream, out)
    assert out.getvalue() == expected


def test_parameters_become_fields_first(s):
    with s.multipart_form("POST", URL, {"b": [1, 2], "a": {"x": "y"}, "n": None}) as form:
        form.boundary = "B"
        form.append_field("last", "z")
        request = form.finish()
    body = request.body_stream.read()
    cd = "Content-Disposition"
    assert body == expected_body("B", [
        ([(cd, 'form-data; name="a[x]"')], b"y"),
        ([(cd, 'form-data; name="b[]"')], b"1"),
        ([(cd, 'form-data; name="b[]"')], b"2"),
        ([(cd, 'form-data; name="n"')], b""),
        ([(cd, 'form-data; name="last"')], b"z"),
    ])


def test_append_file_defaults(s, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello")
    with s.multipart_form("POST", URL) as form:
        form.boundary = "B"
        form.append_file(str(path), "f")
        form.append_file(os.fsencode(path), "g", filename="other.json")
        body = form.finish().body_stream.read()
    assert b'name="f"; filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\nhello' in body
    assert b'name="g"; filename="other.json"\r\nContent-Type: ' in body


def test_names_are_escaped(s):
    with s.multipart_form("POST", URL) as form:
        form.boundary = "B"
        form.append_data(b"x", 'a"b\r\nc', 'f"\n.txt', "text/plain")
        body = form.finish().body_stream.read()
    assert b'name="a%22b%0D%0Ac"; filename="f%22%0A.txt"' in body


def test_file_errors(s, tmp_path):
    with s.multipart_form("POST", URL) as form:
        with pytest.raises(afs.FileError) as e:
            form.append_file(tmp_path / "missing.bin", "f")
        assert e.value.os_errno == errno.ENOENT and "missing.bin" in str(e.value)
        with pytest.raises(afs.FileError):
            form.append_file(tmp_path, "dir")
        with pytest.raises(TypeError):
            form.append_file(12, "f")  # type: ignore[arg-type]


def test_get_and_head_cannot_be_multipart(s):
    for method in ("GET", "HEAD"):
        with pytest.raises(afs.InvalidMethodError):
            s.multipart_form(method, URL)


def test_bad_boundary_and_headers(s):
    with s.multipart_form("POST", URL) as form:
        for bad in ("", "has space", "x" * 71, "quote\"d"):
            with pytest.raises(afs.InvalidArgumentError):
                form.boundary = bad
        with pytest.raises(afs.InvalidHeaderError):
            form.append_part({"X-Bad": "a\r\nInjected: 1"}, b"")
        with pytest.raises(afs.InvalidHeaderError):
            form.append_part([("Bad Name", "v")], b"")
        assert form.boundary.startswith("Boundary+") and len(form.boundary) == 25


def test_boundary_collision_is_refused(s):
    with s.multipart_form("POST", URL) as form:
        form.boundary = "Collide"
        form.append_data(b"xx--Collide yy", "f", "f.txt", "text/plain")
        with pytest.raises(afs.InvalidArgumentError):
            form.finish()


def test_empty_form_gives_the_plain_request(s):
    with s.multipart_form("POST", URL) as form:
        request = form.finish()
    assert request.body_stream is None and request.body == b""
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"


def test_throttle_limits_each_read(s):
    with s.multipart_form("POST", URL) as form:
        form.throttle(1000, 0.0)
        form.append_data(os.urandom(5000), "f", "f.bin", "application/octet-stream")
        request = form.finish()
    stream = request.body_stream
    sizes = []
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        sizes.append(len(chunk))
    assert max(sizes) <= 1000 and sum(sizes) == len(stream)
    assert multipart.UPLOAD_STREAM_3G_SUGGESTED_PACKET_SIZE == 16384
    assert multipart.UPLOAD_STREAM_3G_SUGGESTED_DELAY == 0.2


# -- stream sources ----------------------------------------------------------------------


def stream_request(s, source, length):
    with s.multipart_form("POST", URL) as form:
        form.boundary = "B"
        form.append_stream(source, length, "s", "s.bin", "application/octet-stream")
        return form.finish()


def body_of(payload):
    return expected_body("B", [([("Content-Disposition", 'form-data; name="s"; filename="s.bin"'),
                                 ("Content-Type", "application/octet-stream")], payload)])


class ReadOnly:
    """A source with read() but no readinto()."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def read(self, n):
        chunk = self.data[self.pos:self.pos + min(n, 3)]
        self.pos += len(chunk)
        return chunk


@pytest.mark.parametrize("make", [
    lambda d: io.BytesIO(d),
    lambda d: ReadOnly(d),
    lambda d: [d[:5], b"", bytearray(d[5:9]), memoryview(d[9:])],
    lambda d: (d[i:i + 4] for i in range(0, len(d), 4)),
], ids=["bytesio", "read-only", "list", "generator"])
def test_stream_sources(s, make):
    payload = bytes(range(256)) * 4
    with stream_request(s, make(payload), len(payload)) as request:
        assert request.body_stream.read() == body_of(payload)


def test_rewindable_sources_rewind(s):
    payload = b"0123456789" * 10
    for source in (io.BytesIO(b"skip" + payload), [payload[:50], payload[50:]]):
        if isinstance(source, io.BytesIO):
            source.seek(4)  # rewinds back to where it was when appended
        with stream_request(s, source, len(payload)) as request:
            stream = request.body_stream
            first = stream.read()
            stream.seek(10)
            assert stream.read() == first[10:]
            stream.seek(0)
            assert stream.read() == first == body_of(payload)


def test_one_shot_sources_cannot_go_back(s):
    payload = b"x" * 100
    with stream_request(s, iter([payload]), 100) as request:
        stream = request.body_stream
        assert stream.read() == body_of(payload)
        with pytest.raises(afs.UnsupportedError):
            stream.seek(0)


@pytest.mark.parametrize("declared", [99, 101])
def test_length_mismatch(s, declared):
    with stream_request(s, io.BytesIO(b"y" * 100), declared) as request:
        with pytest.raises(afs.LengthMismatchError):
            request.body_stream.read()
        with pytest.raises(afs.LengthMismatchError):  # sticky
            request.body_stream.read(1)


def test_source_that_raises(s):
    class Flaky(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, b):
            raise ConnectionResetError("the source went away")

    with stream_request(s, Flaky(), 10) as request:
        stream = request.body_stream
        with pytest.raises(afs.StreamIOError) as e:
            stream.read()
        assert isinstance(e.value.__cause__, ConnectionResetError)
        with pytest.raises(afs.StreamIOError) as e:  # sticky, nothing pending any more
            stream.read()
        assert e.value.__cause__ is None


def test_sources_yielding_junk(s):
    with stream_request(s, iter(["text, not bytes"]), 15) as request:
        with pytest.raises(afs.StreamIOError) as e:
            request.body_stream.read()
        assert isinstance(e.value.__cause__, TypeError)
    with pytest.raises(TypeError):
        stream_request(s, b"bytes are not a stream", 5)
    with pytest.raises(TypeError):
        stream_request(s, 42, 5)
    with pytest.raises(ValueError):
        stream_request(s, [], -1)


def test_release_runs_once_per_part(s):
    before = len(multipart._sources)
    request = stream_request(s, [b"abc"], 3)
    assert len(multipart._sources) == before + 1
    request.close()
    assert len(multipart._sources) == before
    with s.multipart_form("POST", URL) as form:  # a form freed without finish
        form.append_stream([b"abc"], 3, "s", "s", "a/b")
        assert len(multipart._sources) == before + 1
    assert len(multipart._sources) == before


# -- progress ----------------------------------------------------------------------------


def test_progress(sample):
    request, expected = sample
    stream = request.body_stream
    calls = []
    stream.progress = lambda sent, total: calls.append((sent, total))
    assert stream.progress is not None
    while stream.read(10_000):
        pass
    assert calls[-1] == (len(expected), len(expected))
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)
    stream.set_progress(None)
    stream.seek(0)
    stream.read()
    assert calls[-1] == (len(expected), len(expected)) and stream.progress is None


def test_progress_callback_that_raises(sample):
    request, expected = sample
    stream = request.body_stream

    def progress(sent, total):
        if sent > 1000:
            raise RuntimeError("stop the upload")

    stream.set_progress(progress)
    assert readn(stream, 1000) == expected[:1000]
    with pytest.raises(RuntimeError, match="stop the upload"):
        stream.read(10)
    assert 1000 < stream.tell() <= 1010  # the bytes of that read were consumed
    with pytest.raises(TypeError):
        stream.set_progress("no")  # type: ignore[arg-type]


# -- write_to ----------------------------------------------------------------------------


def test_write_to_file_object(sample, tmp_path):
    request, expected = sample
    stream = request.body_stream
    readn(stream, 10)
    with open(tmp_path / "out.bin", "wb") as f:
        f.write(b"HEAD")
        assert stream.write_to(f) == len(expected) - 10
        assert f.tell() == 4 + len(expected) - 10
        f.write(b"TAIL")
    assert (tmp_path / "out.bin").read_bytes() == b"HEAD" + expected[10:] + b"TAIL"
    assert stream.write_to(os.open(os.devnull, os.O_WRONLY)) == 0  # at the end already


def test_write_to_socket_and_fd(sample):
    request, expected = sample
    stream = request.body_stream
    a, b = socket.socketpair()
    a.settimeout(5)  # write_to switches it to blocking for the call
    received = bytearray()

    def reader():
        while True:
            chunk = b.recv(65536)
            if not chunk:
                break
            received.extend(chunk)

    t = threading.Thread(target=reader)
    t.start()
    assert stream.write_to(a) == len(expected)
    assert a.gettimeout() == 5
    a.close()
    t.join(10)
    b.close()
    assert bytes(received) == expected
    r, w = os.pipe()
    stream.seek(len(expected) - 100)
    assert stream.write_to(w) == 100
    os.close(w)
    assert os.read(r, 1000) == expected[-100:]
    os.close(r)
    with pytest.raises(TypeError):
        stream.write_to(object())


def test_write_to_a_closed_pipe(sample):
    request, expected = sample
    r, w = os.pipe()
    os.close(r)
    import signal
    old = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        with pytest.raises(afs.StreamIOError) as e:
            request.body_stream.write_to(w)
        assert e.value.os_errno == errno.EPIPE and e.value.bytes_written == 0
    finally:
        signal.signal(signal.SIGPIPE, old)
        os.close(w)
    assert request.body_stream.read() == expected  # not sticky: the destination failed


def test_write_body_to_file(sample, tmp_path):
    request, expected = sample
    with request.write_body_to_file(tmp_path / "body.bin") as copy:
        assert copy.body_stream is None
        assert copy.headers["Content-Type"] == request.headers["Content-Type"]
    assert (tmp_path / "body.bin").read_bytes() == expected
    with pytest.raises(afs.SerializationError):
        request.write_body_to_file(tmp_path / "no" / "such" / "dir" / "x")
    assert not (tmp_path / "no").exists()


# -- lifecycle ---------------------------------------------------------------------------


def test_form_lifecycle(s):
    form = s.multipart_form("POST", URL)
    form.append_field("a", "b")
    request = form.finish()
    with pytest.raises(afs.StateError):
        form.finish()
    with pytest.raises(afs.StateError):
        form.append_field("c", "d")
    assert "boundary=" in repr(form)
    form.close()
    form.close()
    assert form.closed and "closed" in repr(form)
    with pytest.raises(afs.HandleClosedError):
        form.append_field("c", "d")
    with pytest.raises(afs.HandleClosedError):
        form.boundary
    assert request.body_stream.read().endswith(b"--\r\n")  # the request outlives the form
    with pytest.raises(TypeError):
        afs.MultipartForm()


def test_stream_lifecycle(sample):
    request, expected = sample
    stream = request.body_stream
    assert "BodyStream 0/" in repr(stream)
    assert bool(stream)
    stream.close()
    stream.close()
    assert stream.closed
    for use in (stream.read, stream.tell, lambda: len(stream), lambda: stream.seek(0),
                stream.readable, lambda: stream.write_to(1), stream.rewind, stream.open):
        with pytest.raises(ValueError):  # HandleClosedError, as for a closed file
            use()
    assert request.body_stream is stream


def test_closing_the_request_closes_the_stream(sample):
    request, expected = sample
    stream = request.body_stream
    request.close()
    assert stream.closed and "closed" in repr(stream)
    with pytest.raises(afs.HandleClosedError):
        stream.read()


def test_stream_keeps_its_request_alive(s):
    with s.multipart_form("POST", URL) as form:
        form.append_data(b"z" * 1000, "f", "f", "a/b")
        stream = form.finish().body_stream  # the Request object is dropped at once
    gc.collect()
    assert stream.read().count(b"z") == 1000
    stream.open()
    del stream
    gc.collect()


def test_wrong_handle_type(sample):
    request, _ = sample
    with pytest.raises(TypeError):
        _ffi.lib.afs_body_stream_read(request._h.get(), None, 0)
    with pytest.raises(TypeError):
        _ffi.lib.afs_form_free(request.body_stream._ptr)
