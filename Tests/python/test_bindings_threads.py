"""The thread rule of the bindings (see afserialization/_handle.py): objects shared between
threads serialise their calls; close() from another thread waits for the running call;
close() from inside the object's own callback raises. Each case runs 1,000 times and must
give correct results or the documented exceptions, never a crash."""
import threading

import pytest

import afserialization as afs

REPS = 1000
URL = "http://example.com/upload"


def multipart_request(serializer, size=64 * 1024):
    with serializer.multipart_form("POST", URL) as form:
        form.boundary = "thread-boundary"
        form.append_field("a", b"A" * size)
        form.append_field("b", b"B" * 1000)
        return form.finish()


@pytest.fixture(scope="module")
def serializer():
    with afs.HTTPRequestSerializer() as s:
        yield s


def test_watchdog_close_while_reading(serializer):
    """A watchdog thread closes the request while another thread reads its body stream: the
    reader finishes or gets HandleClosedError (a ValueError), never a crash."""
    outcomes = {"completed": 0, "closed": 0}
    for i in range(REPS):
        r = multipart_request(serializer, 16 * 1024)
        bs = r.body_stream
        total = len(bs)
        result = []
        start = threading.Barrier(2)

        def reader():
            start.wait()
            got = 0
            try:
                while True:
                    chunk = bs.read(512)
                    if not chunk:
                        break
                    got += len(chunk)
                result.append(("completed", got))
            except ValueError as e:  # HandleClosedError; also io's "I/O operation on closed file"
                result.append(("closed", e))

        t = threading.Thread(target=reader)
        t.start()
        start.wait()
        if i % 2:
            threading.Event().wait(0.0001 * (i % 5))
        r.close()
        t.join()
        kind, value = result[0]
        outcomes[kind] += 1
        if kind == "completed":
            assert value == total
        assert r.closed
    assert sum(outcomes.values()) == REPS


def test_two_readers_one_stream(serializer):
    """Two threads read one stream: every read is one whole call (serialised), so the chunks
    ordered by position are exactly the body."""
    r = multipart_request(serializer, 8 * 1024)
    reference = r.body_stream.read()
    bs = r.body_stream
    lock = r._h.lock  # the stream's lock (re-entrant): position and read taken together
    for _ in range(REPS):
        bs.seek(0)
        chunks = []
        start = threading.Barrier(2)

        def reader():
            start.wait()
            while True:
                with lock:
                    pos = bs.tell()
                    chunk = bs.read(700)
                if not chunk:
                    return
                chunks.append((pos, chunk))

        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert b"".join(c for _, c in sorted(chunks)) == reference
    r.close()


def test_two_readers_without_coordination(serializer):
    """Without any coordination two readers still get disjoint chunks that add up to the
    body's length (each read is atomic), and nothing crashes."""
    r = multipart_request(serializer, 8 * 1024)
    bs = r.body_stream
    total = len(bs)
    for _ in range(REPS // 4):
        bs.seek(0)
        counts = [0, 0]
        start = threading.Barrier(2)

        def reader(k):
            start.wait()
            while True:
                chunk = bs.read(333)
                if not chunk:
                    return
                counts[k] += len(chunk)

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(counts) == total
    r.close()


def test_concurrent_headers():
    """Threads changing and reading one request's headers see well-formed names and values
    (no garbage from a header table changing under a read), and every change lands."""
    for i in range(REPS):
        r = afs.Request("GET", "http://example.com/")
        start = threading.Barrier(2)
        errors = []

        def worker(k):
            start.wait()
            try:
                for j in range(5):
                    r.headers[f"X-T{k}-{j}"] = f"v{k}{j}"
                    items = r.headers.items()
                    assert all(name.startswith("X-T") and value.startswith("v") for name, value in items)
                    if j % 2:
                        del r.headers[f"X-T{k}-{j}"]
            except BaseException as e:  # noqa: B902 - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert sorted(r.headers) == sorted(f"X-T{k}-{j}" for k in range(2) for j in (0, 2, 4))
        r.close()


def test_close_inside_stream_source_raises(serializer):
    """request.close() called by the request's own stream source raises StateError; the read
    fails with it as the cause and the request stays usable."""
    holder = {}

    class Source:
        def __init__(self):
            self.pos = 0

        def readinto(self, b):
            if self.pos:
                holder["r"].close()
            n = min(len(b), 10000 - self.pos)
            b[:n] = b"s" * n
            self.pos += n
            return n

    with serializer.multipart_form("POST", URL) as form:
        form.append_stream(Source(), 10000, "s", "s.bin", "application/octet-stream")
        r = form.finish()
    holder["r"] = r
    with pytest.raises(afs.StreamIOError) as info:
        while r.body_stream.read(4096):
            pass
    assert isinstance(info.value.__cause__, afs.StateError)
    assert not r.closed
    holder.clear()
    r.close()
    assert r.closed


def test_progress_exception_stops_write_to(serializer, tmp_path):
    r = multipart_request(serializer, 3 << 20)
    bs = r.body_stream
    seen = []

    def progress(sent, total):
        seen.append(sent)
        raise KeyError("stop")

    bs.progress = progress
    with open(tmp_path / "out", "wb") as f:
        with pytest.raises(afs.StreamIOError) as info:
            bs.write_to(f)
    assert isinstance(info.value.__cause__, KeyError)
    assert "cancelled by the progress callback" in info.value.message
    assert len(seen) == 1 and info.value.bytes_written == seen[0] == bs.tell() < len(bs)
    assert seen[0] <= 1 << 20  # a step of at most 1 MiB
    r.close()


def test_no_memory_error_class():
    assert afs.NoMemoryError.status == afs.Status.NO_MEMORY
    assert issubclass(afs.NoMemoryError, afs.SerializationError)


def test_max_decoded_bytes():
    with afs.JSONResponseSerializer() as rs:
        assert rs.max_decoded_bytes == 0
        rs.max_decoded_bytes = 64
        with pytest.raises(afs.InvalidJSONError, match="decoded tree"):
            rs.response_object(200, "application/json", b"[1,2,3,4,5]")
        rs.max_decoded_bytes = 0
        assert rs.response_object(200, "application/json", b"[1,2,3,4,5]") == [1, 2, 3, 4, 5]
        with pytest.raises(ValueError):
            rs.max_decoded_bytes = -1
