"""Request: built by hand, headers view, body, properties, wire head, lifecycle."""
import gc

import pytest

import afserialization as afs

URL = "http://example.com/p?x=1#frag"


def test_request_by_hand():
    r = afs.Request("PATCH", URL, [("X-A", "1"), ("x-b", "2")])
    assert (r.method, r.url) == ("PATCH", URL)
    assert r.headers.copy() == {"X-A": "1", "x-b": "2"}
    assert r.body is None and r.body_stream is None
    assert r.properties["timeout_interval"] == 60.0
    assert "PATCH" in repr(r)


def test_request_headers_view():
    r = afs.Request("GET", URL, {"Content-Type": "text/plain"})
    h = r.headers
    assert h["content-type"] == "text/plain" and "CONTENT-TYPE" in h and len(h) == 1
    h["X-New"] = "v"
    h["content-type"] = "application/json"  # replaces in place
    assert [n.lower() for n in h] == ["content-type", "x-new"]
    assert h == {"content-type": "application/json", "x-new": "v"}
    assert h != {"content-type": "application/json"}
    assert h.get("missing", "d") == "d" and 3 not in h
    del h["x-new"]
    with pytest.raises(KeyError):
        del h["x-new"]
    with pytest.raises(KeyError):
        h["x-new"]
    assert r.headers == {"CONTENT-TYPE": "application/json"}
    assert "RequestHeaders" in repr(h)
    with pytest.raises(afs.InvalidHeaderError):
        h["X"] = "a\r\nb"
    with pytest.raises(afs.InvalidHeaderError):
        h["X Y"] = "v"
    with pytest.raises(afs.InvalidHeaderError):
        h["X"] = "a\0b"


def test_bad_method_and_url():
    with pytest.raises(afs.InvalidMethodError):
        afs.Request("GE T", URL)
    with pytest.raises(afs.InvalidMethodError):
        afs.Request("GE\0T", URL)
    for url in ("no-scheme", "http://ex ample.com/", "http://example.com:99999/", "http://a/\x01"):
        with pytest.raises(afs.BadURLError):
            afs.Request("GET", url)
    with pytest.raises(afs.BadURLError):
        afs.Request("GET", "http://a/\0b")
    with pytest.raises(TypeError):
        afs.Request(1, URL)  # type: ignore[arg-type]


def test_body_none_empty_and_bytes():
    s = afs.HTTPRequestSerializer()
    assert s.request("GET", URL).body is None
    assert s.request("POST", URL).body == b""
    assert s.request("POST", URL, {"a": "\0"}).body == b"a=%00"


def test_wire_head():
    s = afs.HTTPRequestSerializer()
    r = s.request("POST", "http://user@example.com:8080/a/b?x=1#frag", {"k": "v"})
    head = r.wire_head().decode()
    assert head.startswith("POST /a/b?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n")
    assert "Content-Length: 3\r\n" in head and head.endswith("\r\n\r\n")
    g = s.request("GET", "http://example.com")
    assert g.wire_head().startswith(b"GET / HTTP/1.1\r\n")
    assert b"Content-Length" not in g.wire_head()


def test_lifecycle():
    r = afs.Request("GET", URL)
    r.close()
    r.close()
    assert r.closed and "closed" in repr(r)
    for use in (lambda: r.url, lambda: r.method, lambda: r.body, lambda: r.headers["a"],
                lambda: list(r.headers), lambda: r.timeout_interval, lambda: r.body_stream,
                lambda: r.wire_head()):
        with pytest.raises(afs.HandleClosedError):
            use()
    with afs.Request("GET", URL) as r2:
        assert r2.url == URL
    assert r2.closed


def test_garbage_collection_frees_quietly():
    for _ in range(1000):
        afs.HTTPRequestSerializer().request("GET", URL, {"a": [1, 2, 3]})
    gc.collect()


def test_handles_left_open_at_interpreter_shutdown(tmp_path):
    """Objects never closed, some in reference cycles, some with Python callbacks C still
    holds: the interpreter exits cleanly, with nothing printed by a finalizer."""
    import subprocess
    import sys
    from pathlib import Path
    from afserialization import _ffi
    code = """
import io, afserialization as afs
from afserialization import _ffi
s = afs.HTTPRequestSerializer()
s.query_serializer = lambda request, params: "a=1"
r = s.request("GET", "http://h/", {"a": 1})
v = afs.Value({"k": [1, 2]})
class Holder: pass
h = Holder(); h.me = h; h.things = [s, r, v]
if True:
    form = s.multipart_form("POST", "http://h/")
    form.append_stream([b"abc"], 3, "s", "s.bin", "a/b")
    request = form.finish()
    stream = request.body_stream
    stream.set_progress(lambda sent, total: None)
    stream.read(5)
    unfinished = s.multipart_form("POST", "http://h/")
    unfinished.append_stream(io.BytesIO(b"x"), 1, "t", "t.bin", "a/b")
    h.things += [request, stream, unfinished]
    g = Holder(); g.me = g; g.stream = s.multipart_form("POST", "http://h/")
print("done")
"""
    env = dict(__import__("os").environ,
               PYTHONPATH=str(Path(__file__).resolve().parents[2] / "bindings" / "python"))
    out = subprocess.run([sys.executable, "-X", "dev", "-c", code], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
    assert "Exception ignored" not in out.stderr and "Traceback" not in out.stderr, out.stderr
