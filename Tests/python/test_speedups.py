"""The compiled module ``afserialization._speedups`` against the pure-Python loops it
replaces: the pickle loader (every transfer from the library) and the multipart record loop
(``MultipartParser``). Same objects, same parts, same errors; bad input never crashes.

The pure loops run here by setting ``_transfer.speedups`` / ``decoders._fast`` to ``None``
(both are read at each call); the last test also runs the decoders' and transfer tests in a
subprocess with ``AFSERIALIZATION_PURE_PYTHON=1``, where ``Part`` is the pure-Python class.
"""
from __future__ import annotations

import datetime
import gc
import io
import math
import os
import pickle
import random
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any, List

import pytest

import afserialization as afs
from afserialization import _transfer, decoders

REPO = Path(__file__).resolve().parents[2]
fast = _transfer.speedups
needs_fast = pytest.mark.skipif(fast is None, reason="afserialization._speedups is not built here "
                                "(bindings/python/build_speedups.py) or AFSERIALIZATION_PURE_PYTHON is set")


def test_the_wheel_carries_the_compiled_module():
    if os.environ.get("AFS_TEST_INSTALLED_PACKAGE") != "1":
        pytest.skip("checked on the installed wheel (scripts/test.sh)")
    assert fast is not None, "the wheel has no afserialization._speedups"
    assert fast.__file__.endswith("_speedups.abi3.so")
    assert afs.Part is fast.Part


# ---- the pickle loader ----------------------------------------------------------------------

def pure_load(data: bytes) -> Any:
    return _transfer.SafeUnpickler(io.BytesIO(data)).load()


def random_object(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["none", "bool", "int", "bigint", "float", "str", "bytes", "date"]
    if depth < 4:
        kinds += ["list", "dict", "tuple", "set", "frozenset"] * 2
    k = rng.choice(kinds)
    if k == "none":
        return None
    if k == "bool":
        return rng.random() < 0.5
    if k == "int":
        return rng.choice([0, 1, 255, 256, 65535, 65536, -1, -129, 2**31 - 1, -2**31, 2**31, 2**63 - 1,
                           -2**63, rng.randrange(-2**40, 2**40)])
    if k == "bigint":
        return rng.choice([1, -1]) * rng.randrange(2**64, 2**300)
    if k == "float":
        return rng.choice([0.0, -0.0, 1.5, -1e308, 5e-324, math.inf, -math.inf, rng.random()])
    if k == "str":
        n = rng.choice([0, 1, 5, 255, 256, 70000])
        alphabet = "aZ09 ~é€😀\ud800"
        return "".join(rng.choice(alphabet) for _ in range(n))
    if k == "bytes":
        return bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 255, 256, 70000])))
    if k == "date":
        return datetime.datetime(2001, 2, 3, 4, 5, 6, rng.randrange(10**6), tzinfo=datetime.timezone.utc)
    n = rng.randrange(0, 6)
    if k == "list":
        return [random_object(rng, depth + 1) for _ in range(n)]
    if k == "tuple":
        return tuple(random_object(rng, depth + 1) for _ in range(n))
    if k == "dict":
        return {f"k{rng.randrange(10)}": random_object(rng, depth + 1) for _ in range(n)}
    members = {rng.choice([1, 2, "a", "b", (1, "x"), None]) for _ in range(n)}
    return members if k == "set" else frozenset(members)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 == 1.0 == True is not enough) and
    NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@needs_fast
@pytest.mark.parametrize("protocol", [4, 5])
def test_the_loader_reads_what_pickle_writes_as_pickle_does(protocol: int):
    rng = random.Random(20261127 + protocol)
    for _ in range(300):
        obj = random_object(rng)
        f = io.BytesIO()
        p = pickle.Pickler(f, protocol)
        p.dispatch_table = _transfer._DISPATCH  # dates as the library writes them
        p.dump(obj)
        data = f.getvalue()
        got = fast.load(data, len(data), _transfer._date)
        assert same(got, pure_load(data)), obj


@needs_fast
def test_the_loader_keeps_shared_objects_shared():
    inner = [1, 2]
    data = pickle.dumps({"a": inner, "b": inner, "c": (inner,)}, 4)
    got = fast.load(data, len(data), _transfer._date)
    assert got["a"] is got["b"] is got["c"][0]


@needs_fast
def test_the_loader_and_the_unpickler_agree_on_library_outputs(monkeypatch: Any):
    doc = {"n": [1, -2, 2**40, 1.5, None, True], "s": "zoë", "d": {"x": {"y": []}}}
    body = afs.JSONRequestSerializer().request("POST", "https://e.com/", doc).body
    query = "a[b][]=1&a[b][]=2&c=%E2%82%AC&d&e[0]=x&e[1]=y"

    def outputs() -> List[Any]:
        return [afs.JSONResponseSerializer().response_object(200, "application/json", body),
                afs.parse_query(query, array_style="indexed"), afs.parse_form(b"a=1+2&b[]=3"),
                afs.JSONRequestSerializer().request("PUT", "https://e.com/p?q=1", {"k": "v"}).headers.items()]
    with_fast = outputs()
    monkeypatch.setattr(_transfer, "speedups", None)
    assert same(with_fast, outputs())


@needs_fast
def test_every_truncation_is_an_error_in_both():
    f = io.BytesIO()
    p = pickle.Pickler(f, 4)
    p.dispatch_table = _transfer._DISPATCH
    p.dump({"a": [1, 2.5, "x" * 300, b"y" * 3, (None, True), {1, 2}, frozenset([3]), 2**70],
            "t": datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)})
    data = f.getvalue()
    for n in range(len(data)):
        with pytest.raises(Exception):
            pure_load(data[:n])
        with pytest.raises(pickle.UnpicklingError):
            fast.load(data[:n], n, _transfer._date)


@needs_fast
def test_random_damage_never_crashes():
    rng = random.Random(7)
    seeds = [pickle.dumps(random_object(rng), 4) for _ in range(40)]
    for _ in range(4000):
        d = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(d))
            d[i] = rng.randrange(256)
        data = bytes(d)
        try:
            fast.load(data, len(data), _transfer._date)
        except (pickle.UnpicklingError, TypeError, ValueError, OverflowError, MemoryError):
            pass


def random_program(rng: random.Random) -> bytes:
    """A random sequence of the subset's opcodes with well-formed arguments (no FRAME: the
    loader reads frames as a hint, the unpickler checks their lengths)."""
    out = bytearray(b"\x80\x04")
    memo_top = 0
    for _ in range(rng.randrange(1, 40)):
        k = rng.randrange(24)
        if k == 0:
            out += b"("                                     # MARK
        elif k == 1:
            out += rng.choice([b"N", b"\x88", b"\x89", b"}", b"]", b")", b"\x8f"])
        elif k == 2:
            out += b"K" + bytes([rng.randrange(256)])        # BININT1
        elif k == 3:
            out += b"J" + rng.randbytes(4)                   # BININT
        elif k == 4:
            n = rng.randrange(0, 12)
            out += b"\x8a" + bytes([n]) + rng.randbytes(n)  # LONG1
        elif k == 5:
            out += b"G" + rng.randbytes(8)                   # BINFLOAT
        elif k == 6:
            t = rng.choice([b"a", b"bb", b"\xc3\xa9", b"\xed\xa0\x80", b"\xff"])
            out += b"\x8c" + bytes([len(t)]) + t            # SHORT_BINUNICODE (some not UTF-8)
        elif k == 7:
            t = rng.randbytes(rng.randrange(0, 5))
            out += b"C" + bytes([len(t)]) + t               # SHORT_BINBYTES
        elif k in (8, 9):
            out += rng.choice([b"s", b"u", b"a", b"e", b"\x90", b"t", b"\x91"])
        elif k == 10:
            out += rng.choice([b"\x85", b"\x86", b"\x87"])
        elif k == 11:
            out += b"\x94"                                  # MEMOIZE
            memo_top += 1
        elif k == 12:
            out += b"h" + bytes([rng.randrange(memo_top + 2)])   # BINGET
        elif k == 13:
            out += b"q" + bytes([rng.randrange(memo_top + 2)])   # BINPUT
        elif k == 14:
            out += rng.choice([b"0", b"1"])                 # POP, POP_MARK
        elif k == 15:
            out += b"\x8c\x19afserialization._transfer\x8c\x05_date\x93"
        elif k == 16:
            out += b"R"                                      # REDUCE
        else:
            out += rng.choice([b"K\x01", b"N", b"}", b"]", b"\x8c\x01k"])
    out += b"."
    return bytes(out)


@needs_fast
def test_what_the_loader_accepts_the_unpickler_reads_the_same():
    """Differential fuzzing against CPython's unpickler: random programs of the subset's
    opcodes; whatever the compiled loader accepts, the unpickler reads as the same objects
    (the loader may refuse more: a memo index past the input, a container below a mark).
    CI runs 200,000 programs, a local run 20,000."""
    rng = random.Random(26)
    runs = 200_000 if os.environ.get("CI") == "true" else 20_000
    accepted = 0
    for _ in range(runs):
        data = random_program(rng)
        try:
            got = fast.load(data, len(data), _transfer._date)
        except (pickle.UnpicklingError, TypeError, ValueError, OverflowError, AttributeError):
            continue
        accepted += 1
        want = pure_load(data)
        assert same(got, want), (data, got, want)
    assert accepted > runs // 20  # the programs exercise the accepting paths too


@needs_fast
def test_the_loader_refuses_code_and_what_is_outside_the_subset():
    refused = [
        (pickle.dumps(OrderedDict(a=1), 5), "collections.OrderedDict"),
        (b"cos\nsystem\n(S'echo owned'\ntR.", "outside the library's subset"),      # GLOBAL
        (b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00Q.", "outside"),               # BINPERSID
        (b"\x80\x04N\x8c\x01a\x8c\x01b\x93.", "named 'a'"[0:0] + "named a.b"),          # STACK_GLOBAL
        (b"\x80\x04N)R.", "REDUCE"),                                                     # REDUCE on None
        (b"\x80\x04Nr\xf0\xff\xff\xff.", "memo index out of range"),                    # a huge memo index
        (b"\x80\x04h\x05.", "memo key not found"),
        (b"\x80\x04(u.", "no container"),
        (b"\x80\x04]Nu.", "no MARK"),
        (b"\x80\x04N", "without STOP"),
        (b"\x80\x06N.", "unsupported protocol"),
    ]
    for data, message in refused:
        with pytest.raises(pickle.UnpicklingError, match=message):
            fast.load(data, len(data), _transfer._date)
    # an unhashable key is Python's own error
    with pytest.raises(TypeError):
        data = b"\x80\x04}(]Nu."
        fast.load(data, len(data), _transfer._date)


@needs_fast
def test_the_loader_reads_library_memory_in_place():
    import ctypes
    data = pickle.dumps({"k": ["v"] * 3}, 4)
    buf = ctypes.create_string_buffer(data, len(data))
    assert fast.load(ctypes.addressof(buf), len(data), _transfer._date) == {"k": ["v"] * 3}
    assert _transfer.load_at(ctypes.addressof(buf), len(data)) == {"k": ["v"] * 3}
    with pytest.raises(ValueError):
        fast.load(data, len(data) + 1, _transfer._date)
    with pytest.raises(ValueError):
        fast.load(0, 5, _transfer._date)


# ---- the multipart record loop --------------------------------------------------------------

BOUNDARY = "speedupsBoundary"
CT = f"multipart/form-data; boundary={BOUNDARY}"


def body() -> bytes:
    rng = random.Random(3)
    parts = []
    for i in range(300):
        parts.append(f'Content-Disposition: form-data; name="f{i}"\r\n\r\n'.encode() + b"v" * rng.randrange(0, 40))
    parts.append(b'Content-Disposition: form-data; name="big"; filename="big.bin"\r\n'
                 b"Content-Type: application/octet-stream\r\n\r\n" + bytes(rng.randrange(256) for _ in range(200_000)))
    parts.append(b'Content-Disposition: form-data; name="b64"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
                 b"aGVsbG8gd29ybGQ=")
    parts.append(b'Content-Disposition: form-data; name="empty"\r\n\r\n')
    parts.append(b'Content-Disposition: form-data; name="qp"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n'
                 b"caf=C3=A9=\r\n!")
    out = b"preamble\r\n"
    for p in parts:
        out += f"--{BOUNDARY}\r\n".encode() + p + b"\r\n"
    return out + f"--{BOUNDARY}--\r\nepilogue".encode()


def parse(data: bytes, splits: List[int], spool: int, sink: bool) -> List[Any]:
    p = afs.MultipartParser(CT, spool_bytes=spool)
    pieces: dict = {}
    if sink:
        p._sink = lambda part, d: pieces.setdefault(part.index, []).append(bytes(d))
    parts = []
    at = 0
    for s in splits + [len(data)]:
        parts += p.feed(data[at:s])
        at = s
    parts += p.close()
    return [(q.index, q.name, q.filename, q.headers, q.size,
             b"".join(pieces.get(q.index, [])) if sink else q.read()) for q in parts]


@needs_fast
@pytest.mark.parametrize("spool,sink", [(1 << 20, False), (100, False), (1 << 20, True)])
def test_the_record_loop_makes_the_parts_the_python_loop_makes(monkeypatch: Any, spool: int, sink: bool):
    data = body()
    rng = random.Random(spool + sink)
    for _ in range(12):
        splits = sorted(rng.sample(range(1, len(data)), rng.randrange(0, 30)))
        got = parse(data, splits, spool, sink)
        with monkeypatch.context() as m:
            m.setattr(decoders, "_fast", None)
            want = parse(data, splits, spool, sink)
        assert got == want
    assert got[-1][1:] == ("qp", None, [("Content-Disposition", 'form-data; name="qp"'),
                                        ("Content-Transfer-Encoding", "quoted-printable")], 6, "café!".encode())
    assert [g[5] for g in got if g[1] == "b64"] == [b"hello world"]


@needs_fast
def test_parts_made_in_c_are_ordinary_parts():
    (part,) = afs.MultipartParser(CT).feed(
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="n"\r\n\r\nvalue\r\n--{BOUNDARY}--'.encode())
    assert isinstance(part, afs.Part) and type(part) is afs.Part
    assert not gc.is_tracked(part)  # no collector work per field
    assert (part.index, part.name, part.filename, part.size, part.read()) == (0, "n", None, 5, b"value")
    assert part.body.read() == b"value" and repr(part) == "<Part 0 name='n' filename=None size=5>"
    made = afs.Part(4, "x", "x.txt", [("Content-Type", "text/plain")], io.BytesIO(b"abc"))
    assert (made.name, made.content_type, made.read(), made.index) == ("x", "text/plain", b"abc", 4)
    with pytest.raises(AttributeError):
        made.unknown = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        made.index = "three"  # type: ignore[assignment]


@needs_fast
def test_bad_records_are_refused_not_read():
    """multipart_feed checks every record against the bytes it gave and the arena before
    reading: a feed function that reports data outside them gets ValueError, not a read."""
    import ctypes
    from afserialization import _ffi
    arena = ctypes.create_string_buffer(16)

    @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                      ctypes.POINTER(_ffi.afs_multipart_event), ctypes.c_size_t,
                      ctypes.POINTER(_ffi.afs_multipart_feed_result), ctypes.c_void_p)
    def lying_feed(parser, data, n, events, max_events, result, err):
        events[0].flags = 3
        events[0].head_offset, events[0].head_length = 0, 10
        events[0].data_offset, events[0].data_length = 5, 100  # outside the 8 bytes fed
        result[0].consumed, result[0].event_count, result[0].more = n, 1, 0
        result[0].arena, result[0].arena_length = ctypes.cast(arena, ctypes.c_void_p), 16
        return 0
    events = (_ffi.afs_multipart_event * 4)()
    res, err = _ffi.afs_multipart_feed_result(), _ffi.afs_error()
    fn = ctypes.cast(lying_feed, ctypes.c_void_p).value
    done: list = []
    with pytest.raises(ValueError, match="outside its buffers"):
        fast.multipart_feed(fn, 1, b"12345678", ctypes.addressof(events), 4, ctypes.addressof(res),
                            ctypes.addressof(err), afs.Part, 1 << 20, None, done, lambda *a: None)
    assert done == []
    with pytest.raises(TypeError):
        fast.multipart_feed(fn, 1, b"x", ctypes.addressof(events), 4, ctypes.addressof(res),
                            ctypes.addressof(err), dict, 1 << 20, None, done, lambda *a: None)


def test_the_pure_python_package_passes_the_same_tests():
    """The decoders', records' and transfer tests with AFSERIALIZATION_PURE_PYTHON=1."""
    env = dict(os.environ, AFSERIALIZATION_PURE_PYTHON="1")
    tests = ["test_decoders.py", "test_multipart_records.py", "test_bindings_transfer.py",
             "test_query_pickle.py", "test_bindings_multipart.py"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                           *[str(REPO / "Tests" / "python" / t) for t in tests]],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
