"""The library owns the framing (issue 19).

A strict RFC 9112 request reader, written for this test from the RFC's grammar (section
3 request line, section 5 field lines, section 6 message body length), parses exactly what
``afs_request_write_to_fd`` sends for every kind of request and checks that the head
carries exactly one framing and that it matches the bytes that follow: a Content-Length
equal to the body's length, or, without a body, no framing and no bytes. Callers cannot set
Content-Length or Transfer-Encoding (on a request, as a serializer default): the library
refuses them with InvalidHeaderError naming the header.
"""
import os
import re
import tempfile
from typing import Dict, List, Optional, Tuple

import pytest

import afserialization as afs

TOKEN = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
REQUEST_LINE = re.compile(rb"^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (/[\x21-\x7e]*) HTTP/1\.1$")
FIELD_VALUE = re.compile(rb"^[\x21-\x7e\x80-\xff]([\x20-\x7e\x80-\xff\t]*[\x21-\x7e\x80-\xff])?$|^$")


class StrictError(AssertionError):
    pass


def read_strict(wire: bytes) -> Tuple[bytes, List[Tuple[bytes, bytes]], Optional[int], bytes]:
    """Parses one request and nothing after it: (method, fields, declared length, body).

    Refuses: bare LF, obs-fold, whitespace before a colon, a name that is not a token,
    a value with control characters, Transfer-Encoding (this library never sends it),
    more than one Content-Length, a Content-Length that is not 1*DIGIT, a body that is
    not exactly the declared length, and bytes after an unframed request."""
    end = wire.find(b"\r\n\r\n")
    if end < 0:
        raise StrictError("no end of head (CRLF CRLF)")
    head, rest = wire[:end], wire[end + 4:]
    if b"\n" in head.replace(b"\r\n", b"") or b"\r" in head.replace(b"\r\n", b""):
        raise StrictError("a bare CR or LF in the head")
    lines = head.split(b"\r\n")
    m = REQUEST_LINE.match(lines[0])
    if not m:
        raise StrictError(f"bad request line {lines[0]!r}")
    fields: List[Tuple[bytes, bytes]] = []
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            raise StrictError(f"obs-fold {line!r}")
        name, colon, value = line.partition(b":")
        if not colon or not TOKEN.match(name):
            raise StrictError(f"bad field name in {line!r}")
        value = value.strip(b" \t")
        if not FIELD_VALUE.match(value):
            raise StrictError(f"bad field value in {line!r}")
        fields.append((name, value))
    lower = [n.lower() for n, _ in fields]
    if b"transfer-encoding" in lower:
        raise StrictError("Transfer-Encoding in a request this library wrote")
    lengths = [v for n, v in fields if n.lower() == b"content-length"]
    if len(lengths) > 1:
        raise StrictError(f"{len(lengths)} Content-Length fields")
    if lengths and not re.fullmatch(rb"[0-9]+", lengths[0]):
        raise StrictError(f"Content-Length {lengths[0]!r} is not 1*DIGIT")
    if len([n for n in lower if n == b"host"]) != 1:
        raise StrictError("not exactly one Host")
    declared = int(lengths[0]) if lengths else None
    if declared is None:
        if rest:
            raise StrictError(f"{len(rest)} bytes after a request without framing")
        return m.group(1), fields, None, b""
    if len(rest) != declared:
        raise StrictError(f"Content-Length {declared} but {len(rest)} bytes follow")
    return m.group(1), fields, declared, rest


def wire_of(req: afs.Request) -> bytes:
    """What write_to sends, through a file descriptor (twice: the second write starts over
    and must send the same bytes)."""
    with tempfile.TemporaryFile() as f:
        n = req.write_to(f.fileno())
        os.lseek(f.fileno(), 0, os.SEEK_SET)
        first = os.read(f.fileno(), n + 1)
        assert len(first) == n
    with tempfile.TemporaryFile() as f:
        req.write_to(f.fileno())
        os.lseek(f.fileno(), 0, os.SEEK_SET)
        second = os.read(f.fileno(), n + 1)
    assert first == second
    assert first.startswith(req.head)
    return first


def kinds(tmp: str) -> Dict[str, afs.Request]:
    http = afs.HTTPRequestSerializer()
    out = {
        "GET": http.request("GET", "http://example.com/a?b=1", {"x": "y z"}),
        "HEAD": http.request("HEAD", "http://example.com/", {"x": 1}),
        "DELETE": http.request("DELETE", "http://example.com/item"),
        "form": http.request("POST", "http://example.com/f", {"a": "b c", "n": [1, 2]}),
        "empty POST": http.request("POST", "http://example.com/e"),
        "empty PUT": http.request("PUT", "http://example.com/e", {}),
        "JSON": afs.JSONRequestSerializer().request("POST", "http://example.com/j", {"k": ["v", 1, None]}),
        "plist": afs.PropertyListRequestSerializer().request("PUT", "http://u:p@example.com:8080/p", {"k": 1}),
    }
    path = os.path.join(tmp, "file.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(70000))
    form = http.multipart_form("POST", "http://example.com/up", {"field": "value"})
    form.append_file(path, "file")
    form.append_data(b"\x00\r\n--x", "blob", "b.bin", "application/octet-stream")
    form.append_part({"Content-Disposition": 'form-data; name="raw"', "Content-Length": "999"}, b"raw")
    out["multipart"] = form.finish()
    return out


@pytest.fixture(scope="module")
def requests_of_every_kind():
    with tempfile.TemporaryDirectory() as tmp:
        yield kinds(tmp)


@pytest.mark.parametrize("kind", ["GET", "HEAD", "DELETE", "form", "empty POST", "empty PUT", "JSON", "plist",
                                  "multipart"])
def test_exactly_one_framing_matching_the_body(requests_of_every_kind, kind: str) -> None:
    req = requests_of_every_kind[kind]
    method, fields, declared, body = read_strict(wire_of(req))
    assert method.decode() == req.method
    if kind in ("GET", "HEAD", "DELETE"):
        assert declared is None and body == b""  # no body: no framing, no bytes
    else:
        assert declared is not None and declared == len(body)
        if req.body is not None:
            assert body == req.body
        else:
            req.body_stream.rewind()
            assert body == req.body_stream.read()
    if kind == "empty POST":
        assert declared == 0


def test_the_reader_is_strict() -> None:
    """The reader refuses what it must (so a passing framing test means something)."""
    good = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
    assert read_strict(good)[3] == b"abc"
    bad = [
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nHost: a\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nHost : a\r\nContent-Length: 3\r\n\r\nabc",
        b"POST / HTTP/1.1\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nHost: a\r\n folded\r\nContent-Length: 3\r\n\r\nabc",
    ]
    for wire in bad:
        with pytest.raises(StrictError):
            read_strict(wire)


@pytest.mark.parametrize("name", ["Content-Length", "content-length", "Transfer-Encoding", "TRANSFER-encoding"])
def test_callers_cannot_set_framing(name: str) -> None:
    req = afs.HTTPRequestSerializer().request("POST", "http://example.com/", {"a": "b"})
    with pytest.raises(afs.InvalidHeaderError) as e:
        req.headers[name] = "5"
    assert name in str(e.value) and "the library frames the body" in str(e.value)
    with pytest.raises(afs.InvalidHeaderError):
        afs.Request("POST", "http://example.com/", {name: "chunked"})
    s = afs.HTTPRequestSerializer()
    with pytest.raises(afs.InvalidHeaderError) as e:
        s.headers[name] = "300"
    assert "the library frames the body" in str(e.value)
    assert name.lower() not in {k.lower() for k in s.headers}
    # the request is as it was: one framing, the body's
    method, fields, declared, body = read_strict(wire_of(req))
    assert declared == len(body) == len(req.body)
