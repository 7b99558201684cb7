"""Fault injection through the Python bindings: a stream source (a Python callback) that
raises midway through read(), write_to() and write_body_to_file(), a rewind that raises,
a source raising KeyboardInterrupt, and a file part whose reads fail with EIO (through the
LD_PRELOAD shim, when it is loaded).

Each scenario runs three times (a warm-up; measured for descriptors and the C heap;
measured for Python objects with tracemalloc) and must end in the typed exception
chained from the source's exception, a position (tell()) equal to the bytes delivered, the
same number of open descriptors (/proc/self/fd) and no growth of the C heap (mallinfo2)
or of Python's traced memory beyond a small allowance.

Run by Tests/fault/run.sh:
    AFSERIALIZATION_LIBRARY=build/lib/libafserialization.so LD_PRELOAD=.../libafsfault.so \
        python3 Tests/fault/test_fault.py [scratch-dir]
It prints one tab-separated line per scenario (the columns of the C fault program) and
exits non-zero when one fails.
"""
import ctypes
import errno
import gc
import io
import os
import socket
import sys
import tempfile
import threading
import tracemalloc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
import afserialization as afs  # noqa: E402

URL = "http://example.com/upload"
LENGTH = 200_000
PAYLOAD = bytes((i * 31 + (i >> 8)) & 0xFF for i in range(LENGTH))
PY_ALLOWANCE = 16 * 1024  # traced Python memory a run may keep (caches, interned names)

libc = ctypes.CDLL(None)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


libc.mallinfo2.restype = _Mallinfo2
try:
    _fault_set = libc.afs_fault_set
    _fault_set.argtypes = [ctypes.c_char_p]
    _fault_fired = libc.afs_fault_fired
    _fault_fired.restype = ctypes.c_long
except AttributeError:  # the shim is not loaded
    _fault_set = _fault_fired = None


def fault(spec):
    if _fault_set is None:
        raise RuntimeError("run with LD_PRELOAD=libafsfault.so")
    if _fault_set(spec.encode()) < 0:
        raise RuntimeError(f"the shim rejected {spec!r}")


def fds():
    return len(os.listdir("/proc/self/fd")) - 1  # listdir's own descriptor


def heap():
    return libc.mallinfo2().uordblks


class Failed(AssertionError):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


class Flaky(io.RawIOBase):
    """PAYLOAD, raising `exc` once at read call `fail_at` (0: never); seekable."""

    def __init__(self, fail_at=0, exc=None, seek_exc=None):
        self.pos = 0
        self.calls = 0
        self.fail_at = fail_at
        self.exc = exc
        self.seek_exc = seek_exc

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, pos, whence=0):
        if self.seek_exc is not None:
            raise self.seek_exc
        self.pos = pos
        return pos

    def readinto(self, b):
        self.calls += 1
        if self.calls == self.fail_at:
            raise self.exc
        n = min(len(b), LENGTH - self.pos)
        b[:n] = PAYLOAD[self.pos:self.pos + n]
        self.pos += n
        return n


def make_request(serializer, source, path=None):
    with serializer.multipart_form("POST", URL) as form:
        form.boundary = "fault-boundary"
        form.append_field("first", "head")
        if path is not None:
            form.append_file(path, "file", "f.bin", "application/octet-stream")
        else:
            form.append_stream(source, LENGTH, "data", "d.bin", "application/octet-stream")
        form.append_field("last", "tail")
        return form.finish()


def reference(serializer, path=None):
    with make_request(serializer, Flaky(), path) as r:
        return r.body_stream.read()


def drain(stream, got):
    while True:
        chunk = stream.read(4096)
        if not chunk:
            return
        got += chunk


# ---- scenarios: each returns summary(the exception it is about) ----------------------------

def summary(e):
    """What the report needs of an exception, without keeping it (its traceback holds the
    scenario's frames and buffers alive)."""
    cause = type(e.__cause__).__name__ if e.__cause__ is not None else "-"
    return (e.code, e.os_errno, e.message, type(e).__name__, cause)


def s_source_raises_midway(s, tmp):
    ref = reference(s)
    src = Flaky(fail_at=5, exc=ConnectionResetError("the source went away"))
    with make_request(s, src) as r:
        bs = r.body_stream
        got = bytearray()
        try:
            drain(bs, got)
            raise Failed("no error")
        except afs.StreamIOError as e:
            err = e
        check(isinstance(err.__cause__, ConnectionResetError), "not chained from the source's exception")
        check(bs.tell() == len(got) and bytes(got) == ref[:len(got)], "position or bytes wrong")
        try:
            bs.read(10)
            raise Failed("not sticky")
        except afs.StreamIOError as again:
            check(again.__cause__ is None and str(again) == str(err), "sticky error differs")
        bs.seek(0)  # rewinds the source (seekable); it does not fail twice
        check(bs.read() == ref, "body after rewind differs")
        return summary(err)


def s_source_raises_in_write_to(s, tmp):
    ref = reference(s)
    src = Flaky(fail_at=3, exc=OSError(errno.EIO, "disk gone"))
    out = os.path.join(tmp, "out.bin")
    with make_request(s, src) as r, open(out, "wb") as f:
        bs = r.body_stream
        try:
            bs.write_to(f)
            raise Failed("no error")
        except afs.StreamIOError as e:
            err = e
        check(isinstance(err.__cause__, OSError), "not chained from the source's exception")
        check(err.bytes_written == bs.tell(), "bytes_written != tell()")
        f.flush()
        check(open(out, "rb").read() == ref[:bs.tell()], "file differs from the body's prefix")
        bs.seek(bs.tell())  # clears the sticky error; the source is positioned again
        bs.write_to(f)
    check(open(out, "rb").read() == ref, "completed file differs")
    os.unlink(out)
    return summary(err)


def s_source_raises_in_write_body_to_file(s, tmp):
    src = Flaky(fail_at=4, exc=ValueError("bad chunk"))
    out = os.path.join(tmp, "body.out")
    with make_request(s, src) as r:
        try:
            r.write_body_to_file(out)
            raise Failed("no error")
        except afs.StreamIOError as e:
            err = e
        check(isinstance(err.__cause__, ValueError), "not chained from the source's exception")
        check(not os.path.exists(out), "a partial file was left")
        check(not [n for n in os.listdir(tmp) if n.endswith(".tmp")], "a temporary file was left")
        with r.write_body_to_file(out):  # the source does not fail twice
            pass
        check(os.path.getsize(out) == len(r.body_stream), "written file has the wrong size")
    os.unlink(out)
    return summary(err)


def s_rewind_raises(s, tmp):
    src = Flaky(seek_exc=OSError(errno.ESPIPE, "cannot seek"))
    with make_request(s, src) as r:
        bs = r.body_stream
        first = bs.read(100_000)
        check(len(first) == 100_000, "short first read")
        err = None
        try:
            bs.seek(0)
            bs.read()
            raise Failed("no error")
        except afs.SerializationError as e:
            err = e
        check(isinstance(err.__cause__, OSError), "not chained from the seek's exception")
        return summary(err)


def s_source_keyboard_interrupt(s, tmp):
    src = Flaky(fail_at=2, exc=KeyboardInterrupt())
    with make_request(s, src) as r:
        bs = r.body_stream
        try:
            bs.read()
            raise Failed("no error")
        except KeyboardInterrupt:
            pass                       # Ctrl-C stays Ctrl-C
        except afs.StreamIOError:
            raise Failed("KeyboardInterrupt was wrapped in StreamIOError")
        # the C stream failed the read: its error is sticky until rewind
        try:
            bs.read()
            raise Failed("the read after the interrupt succeeded")
        except afs.StreamIOError as e:
            err = e
        return summary(err)


def s_file_part_eio(s, tmp):
    path = os.path.join(tmp, "part.bin")
    with open(path, "wb") as f:
        f.write(PAYLOAD)
    ref = reference(s, path)
    with make_request(s, None, path) as r:
        bs = r.body_stream
        fault("op=pread,path=part.bin,nth=2,errno=EIO")
        got = bytearray()
        try:
            drain(bs, got)
            raise Failed("no error")
        except afs.StreamIOError as e:
            err = e
        fired = _fault_fired()
        fault("")
        check(fired == 1, "the fault did not fire")
        check(err.os_errno == errno.EIO, "os_errno is not EIO")
        check(bs.tell() == len(got) and bytes(got) == ref[:len(got)], "position or bytes wrong")
        bs.seek(0)
        check(bs.read() == ref, "body after rewind differs")
    os.unlink(path)
    return summary(err)


def s_no_memory(s, tmp):
    """Each checked allocation of a JSON request (the pickled-parameters path), a form with a
    100 KiB field and a JSON response fails in turn (the shim's op=realloc): NoMemoryError,
    or the same result through a fallback path (a JSON response whose one-pass transcoding
    failed is decoded through the tree), never a crash."""
    blob = "x" * (20 * 1024)
    big = b"y" * (100 * 1024)
    body = b'{"a":[1,2.5,"s",true,null,{"k":[[]]}],"b":"' + b"z" * 20000 + b'"}'
    js = afs.JSONRequestSerializer()
    rs = afs.JSONResponseSerializer()
    last = None

    def ops():
        request_body = js.request("POST", URL, {"user": {"name": blob, "tags": [1, 2.5, True]}}).body
        with s.multipart_form("POST", URL, {"f": "v"}) as form:
            form.append_field("big", big)
            with form.finish() as r:
                check(len(r.body_stream.read()) > len(big), "a short multipart body")
        return request_body, rs.response_object(200, "application/json", body)

    expected = ops()

    try:
        walked = 0
        for k in range(1, 2000):
            fault(f"op=realloc,path=libafserialization,nth={k},errno=ENOMEM")
            try:
                got = ops()
                err = None
            except afs.NoMemoryError as e:
                err = e
            else:
                check(got == expected, "a call that survived a failed allocation gave another result")
            fired = _fault_fired()
            fault("")
            if not fired:
                check(err is None, "an error without a fault")
                break
            if err is not None:
                walked += 1
                check(err.code == afs.Status.NO_MEMORY and "out of memory" in err.message, "wrong error")
                last = err
        check(walked > 0, "no allocation failure was reported")
    finally:
        js.close()
        rs.close()
    return summary(last)


def s_progress_cancels_write_to(s, tmp):
    """A progress callback raising during write_to stops the write at once."""
    ref = reference(s)
    path = os.path.join(tmp, "out.bin")
    calls = []

    def progress(sent, total):
        calls.append(sent)
        if len(calls) == 2:
            raise RuntimeError("stop the upload")

    with make_request(s, Flaky()) as r:
        bs = r.body_stream
        bs.progress = progress
        with open(path, "wb") as f:
            try:
                bs.write_to(f)
                raise Failed("no error")
            except afs.StreamIOError as e:
                err = e
        check(isinstance(err.__cause__, RuntimeError), "not chained from the callback's exception")
        check(err.os_errno == errno.ECANCELED, "os_errno is not ECANCELED")
        check(len(calls) == 2 and err.bytes_written == calls[-1] == bs.tell(), "the write went on")
        check(os.path.getsize(path) == bs.tell() < len(ref), "the file holds more than was reported")
        bs.progress = None
        bs.seek(0)
        check(bs.read() == ref, "body after seek differs")
    os.unlink(path)
    return summary(err)


def s_close_inside_source(s, tmp):
    """request.close() from inside the request's own stream source raises StateError (the
    read fails with it as the cause), never frees the request under the read."""
    holder = {}

    class Closer(Flaky):
        def readinto(self, b):
            if self.calls == 2:
                holder["request"].close()
            return super().readinto(b)

    with make_request(s, Closer()) as r:
        holder["request"] = r
        try:
            drain(r.body_stream, bytearray())
            raise Failed("no error")
        except afs.StreamIOError as e:
            err = e
        check(isinstance(err.__cause__, afs.StateError), "the source's StateError is not the cause")
        check(not r.closed, "the request was closed under the read")
    holder.clear()
    return summary(err)


def s_generator_raises_inside_a_chunk(s, tmp):
    """A generator of unknown length raises while Request.write_to sends the body compressed
    and chunked: the chunk in flight stays incomplete on the wire, the error is the source's
    (chained), and after a rewind (a rewindable source) the whole request goes again."""
    def chunks():
        for i in range(40):
            if i == 7 and not state["ok"]:
                raise ConnectionResetError("the producer went away")
            yield bytes([65 + i % 26]) * 10000

    class Again:
        def __iter__(self):
            return chunks()

    state = {"ok": False}
    out = os.path.join(tmp, "chunked.out")
    r = afs.Request("PUT", URL)
    r.set_body_stream(Again())
    r.set_content_encoding("gzip", 1)
    r.add_digest("sha-256", trailer=True)
    with open(out, "wb") as f:
        try:
            r.write_to(f)
            raise Failed("no error")
        except afs.StreamIOError as e:
            err = e
    check(isinstance(err.__cause__, ConnectionResetError), "not chained from the generator's exception")
    state["ok"] = True
    r.body_stream.rewind()
    with open(out, "wb") as f:
        r.write_to(f)
    wire = open(out, "rb").read()
    check(wire.startswith(b"PUT ") and wire.endswith(b"\r\n\r\n") and b"Transfer-Encoding: chunked" in wire,
          "the retried request is not a whole chunked request")
    check(len(r.trailers) == 1, "no trailer after the retry")
    os.unlink(out)
    r.close()
    return summary(err)


SCENARIOS = [
    ("py-source-raises-midway", "python", "a stream source raises ConnectionResetError on its 5th read()",
     s_source_raises_midway),
    ("py-source-raises-in-write_to", "python", "a stream source raises OSError(EIO) during write_to(file)",
     s_source_raises_in_write_to),
    ("py-source-raises-in-write_body_to_file", "python", "a stream source raises ValueError during write_body_to_file",
     s_source_raises_in_write_body_to_file),
    ("py-rewind-raises", "python", "the source's seek() raises when the stream goes back to 0",
     s_rewind_raises),
    ("py-source-keyboard-interrupt", "python", "a stream source raises KeyboardInterrupt",
     s_source_keyboard_interrupt),
    ("py-file-part-eio", "python", "pread of a file part fails with EIO (shim), read through Python",
     s_file_part_eio),
    ("py-no-memory", "python", "each checked allocation of a JSON request, a form and a JSON response fails in turn (shim op=realloc)",
     s_no_memory),
    ("py-progress-cancels-write_to", "python", "the progress callback raises on its 2nd call during write_to(file)",
     s_progress_cancels_write_to),
    ("py-close-inside-source", "python", "a stream source calls request.close() during a read",
     s_close_inside_source),
    ("py-generator-raises-inside-a-chunk", "python", "a generator raises inside a chunk of a gzip, chunked write_to; retried after rewind",
     s_generator_raises_inside_a_chunk),
]


def status_name(code):
    try:
        return afs.Status(code).c_name
    except (ValueError, AttributeError):
        return str(code)


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else None
    failed = 0
    with afs.HTTPRequestSerializer() as s:
        for name, group, description, fn in SCENARIOS:
            tmp = tempfile.mkdtemp(prefix="afs_pyfault_", dir=base)
            notes, err, fired = [], None, 0
            before = after = (0, 0, 0)
            try:
                fn(s, tmp)  # warm-up
                gc.collect()
                before = [fds(), heap(), 0]
                err = fn(s, tmp)
                gc.collect()
                after = [fds(), heap(), 0]
                # Python objects, in a third run (tracemalloc's own tables live in the C heap)
                tracemalloc.start()
                gc.collect()
                before[2] = tracemalloc.get_traced_memory()[0]
                fn(s, tmp)
                gc.collect()
                after[2] = tracemalloc.get_traced_memory()[0]
                tracemalloc.stop()
                fired = 1
                if after[0] != before[0]:
                    notes.append("descriptor leaked")
                if after[1] > before[1]:
                    notes.append(f"C heap grew by {after[1] - before[1]} bytes")
                if after[2] - before[2] > PY_ALLOWANCE:
                    notes.append(f"Python memory grew by {after[2] - before[2]} bytes")
            except Failed as e:
                notes.append(str(e))
            except BaseException as e:  # noqa: B902 - report, do not stop
                notes.append(f"unexpected {type(e).__name__}: {e}")
            finally:
                fault("") if _fault_set is not None else None
                for n in os.listdir(tmp):
                    os.unlink(os.path.join(tmp, n))
                os.rmdir(tmp)
            verdict = "FAIL" if notes else "PASS"
            failed += bool(notes)
            code, os_errno, message, kind, cause = err if err is not None else (None, 0, "-", "-", "-")
            status = status_name(code) if code is not None else "-"
            eno = errno.errorcode.get(os_errno or 0, "-")
            message = message.replace(tmp, "<tmp>").replace("\t", " ").replace("\n", " ")
            print("\t".join(str(x) for x in (
                name, group, description, verdict, status, eno, message, fired,
                before[0], after[0], before[1], after[1], os.getpid(),
                "; ".join(notes) or f"{kind} from {cause}; Python traced "
                                    f"{before[2]} -> {after[2]} bytes")), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
