"""afs_multipart_parser_feed_events (records instead of callbacks) and MultipartParser on top
of it: records checked one by one through ctypes, and the Python parts checked against the
parts our own writer put in, under one feed and under many splits, past the record array
and the 64 KiB arena bound of one call, with decoded (base64) data, spooling and errors.
"""
import ctypes
import io
import random

import pytest

import afserialization as afs
from afserialization import _ffi
from afserialization.errors import InvalidMultipartError, LimitError, StateError

B = "RecB0undary"
CT = f"multipart/form-data; boundary={B}"


def field(name, value, extra=""):
    return f"--{B}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n{extra}\r\n".encode() + value + b"\r\n"


def parse(body, sizes=None, **kw):
    p = afs.MultipartParser(CT, **kw)
    parts = []
    i = k = 0
    while i < len(body):
        n = len(body) if not sizes else sizes[k % len(sizes)]
        k += 1
        parts += p.feed(body[i:i + n])
        i += n
    parts += p.close()
    return parts


def test_records_through_ctypes():
    body = (field("a", b"hello") + field("b", b"aGk=", "Content-Transfer-Encoding: base64\r\n")
            + f"--{B}--\r\n".encode())
    lib = _ffi.lib
    p = lib.afs_multipart_parser_new(CT.encode(), None, None, None)
    try:
        ev = (_ffi.afs_multipart_event * 8)()
        res = _ffi.afs_multipart_feed_result()
        lib.afs_multipart_parser_feed_events(p, body, len(body), ev, 8, ctypes.byref(res))
        assert (res.consumed, res.event_count, res.more) == (len(body), 2, 0)
        arena = ctypes.string_at(res.arena, res.arena_length)
        a, b = ev[0], ev[1]
        assert a.flags == 1 | 2 | 8 and a.index == 0 and a.header_count == 1
        assert arena[a.head_offset:a.head_offset + a.head_length] == \
            b'a\0\0Content-Disposition\0form-data; name="a"\0'
        assert body[a.data_offset:a.data_offset + a.data_length] == b"hello"
        assert b.flags == 1 | 2 | 4 | 8 and b.index == 1 and b.header_count == 2
        assert arena[b.data_offset:b.data_offset + b.data_length] == b"hi"
        # one record at a time: the call returns early and says so
        lib.afs_multipart_parser_free(p)
        p = lib.afs_multipart_parser_new(CT.encode(), None, None, None)
        lib.afs_multipart_parser_feed_events(p, body, len(body), ev, 1, ctypes.byref(res))
        assert res.event_count == 1 and res.more == 1 and res.consumed < len(body)
        with pytest.raises(afs.InvalidArgumentError, match="max_events"):
            lib.afs_multipart_parser_feed_events(p, body, len(body), ev, 0, ctypes.byref(res))
        with pytest.raises(StateError, match="feed_events"):
            lib.afs_multipart_parser_feed(p, body, len(body))
    finally:
        lib.afs_multipart_parser_free(p)


def test_many_fields_past_the_record_array_and_arena_bound():
    # 6000 parts with long headers: more than 4096 records and 64 KiB of head blocks per feed
    rng = random.Random(26)
    want = []
    body = b""
    for i in range(6000):
        value = rng.randbytes(rng.randrange(0, 40))
        extra = f"X-Pad: {'p' * 30}\r\n" if i % 3 == 0 else ""
        want.append((f"f{i}", value, 2 if extra else 1))
        body += field(f"f{i}", value, extra)
    body += f"--{B}--\r\n".encode()
    for sizes in (None, [1 << 20], [7, 1000, 65536], [rng.randrange(1, 3000) for _ in range(50)]):
        parts = parse(body, sizes, max_parts=10000)
        assert [(p.name, p.read(), len(p.headers)) for p in parts] == want
        assert [p.index for p in parts] == list(range(6000))
        assert all(p.filename is None and p.size == len(p.read()) for p in parts)


def test_parts_as_before_file_spooling_and_lazy_fields():
    big = random.Random(1).randbytes(300000)
    body = (field("t", b"caf\xc3\xa9")
            + f"--{B}\r\nContent-Disposition: form-data; name=\"up\"; filename*=UTF-8''%E2%82%AC.bin\r\n"
              "Content-Type: application/octet-stream\r\n\r\n".encode() + big + b"\r\n"
            + field("e", b"") + f"--{B}--".encode())
    for sizes in (None, [1], [4093], [100000]):
        if sizes == [1]:
            sizes = [1] * 50 + [70000]
        t, up, e = parse(body, sizes, spool_bytes=100000)
        assert (t.name, t.read(), t.size) == ("t", b"caf\xc3\xa9", 5)
        assert isinstance(t.body, io.BytesIO) and t.body.read() == b"caf\xc3\xa9"
        assert (up.name, up.filename, up.content_type, up.size) == ("up", "\u20ac.bin", "application/octet-stream", len(big))
        assert not isinstance(up.body, io.BytesIO) and up.body.read() == big
        assert (e.name, e.read(), e.size, e.headers) == ("e", b"", 0, [("Content-Disposition", 'form-data; name="e"')])
    # the public constructor still makes a plain part
    p = afs.Part(3, "n", None, [("A", "b")], io.BytesIO(b"xy"))
    assert (p.index, p.name, p.filename, p.header("a"), p.read()) == (3, "n", None, "b", b"xy")


def test_errors_keep_the_part_index_and_stay():
    body = b"".join(field(f"f{i}", b"v") for i in range(10)) + f"--{B}\r\n".encode() + b"X: 1\r\n" * 40
    p = afs.MultipartParser(CT)
    with pytest.raises(LimitError, match="part 10 has more than max_headers"):
        p.feed(body)
    with pytest.raises(LimitError):
        p.feed(b"more")
    with pytest.raises(InvalidMultipartError, match="before its closing boundary"):
        parse(field("a", b"x") + f"--{B}\r\n\r\nunfinished".encode(), [3])
