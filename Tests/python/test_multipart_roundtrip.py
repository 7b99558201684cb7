"""Round trip of random multipart bodies through parsers no one here wrote.

Hundreds of seeded random forms (field, data, file, callback and custom parts; names and
filenames with quotes, CR, LF and non-ASCII; bodies with CRLF, dashes and boundary-like
text; generated and custom boundaries) are built by libafserialization (loaded with
ctypes from $AFSERIALIZATION_LIBRARY), read through afs_body_stream_read with random
buffer sizes, and parsed back by Python's `email` package, by `multipart` and by
`python-multipart`: every part must come back with the same name, filename, content type
and bytes.

The ctypes declarations here are deliberately minimal and local to this test; the real
Python bindings live in bindings/python/.
"""
import ctypes
import email
import email.policy
from email.parser import BytesParser
import io
import os
import random
import tempfile

import pytest

# The library: AFSERIALIZATION_LIBRARY, else the build tree of scripts/build-library.sh.
LIB_PATH = os.environ.get("AFSERIALIZATION_LIBRARY") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "lib", "libafserialization.so")
if not os.path.exists(LIB_PATH):
    raise RuntimeError(f"libafserialization.so not found at {LIB_PATH}: run scripts/build-library.sh "
                       "or set AFSERIALIZATION_LIBRARY")

import multipart  # noqa: E402  (scripts/install-deps.sh installs both parsers)
import python_multipart  # noqa: E402
from python_multipart.multipart import MultipartParser as PMParser  # noqa: E402
from python_multipart.multipart import parse_options_header  # noqa: E402

CASES = int(os.environ.get("AFS_ROUNDTRIP_CASES", "300"))


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("os_errno", ctypes.c_int), ("message", ctypes.c_char * 512)]


READ_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t)
REWIND_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def load():
    lib = ctypes.CDLL(LIB_PATH)
    P, S, E = ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(Error)
    sigs = {
        "afs_serializer_new": (P, [ctypes.c_int]),
        "afs_serializer_free": (None, [P]),
        "afs_serializer_multipart_form": (P, [P, S, S, P, E]),
        "afs_form_append_form_data": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_size_t, S, E]),
        "afs_form_append_file_data": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_size_t, S, S, S, E]),
        "afs_form_append_file_ex": (ctypes.c_int, [P, S, S, S, S, E]),
        "afs_form_append_stream": (ctypes.c_int, [P, READ_FN, REWIND_FN, RELEASE_FN, P, ctypes.c_uint64, S, S, S, E]),
        "afs_form_append_part": (ctypes.c_int, [P, ctypes.POINTER(S), ctypes.POINTER(S), ctypes.c_size_t,
                                                ctypes.c_char_p, ctypes.c_size_t, E]),
        "afs_form_set_boundary": (ctypes.c_int, [P, S, E]),
        "afs_form_boundary": (S, [P]),
        "afs_form_finish": (P, [P, E]),
        "afs_form_free": (None, [P]),
        "afs_request_free": (None, [P]),
        "afs_request_header": (S, [P, S]),
        "afs_request_body_stream": (P, [P]),
        "afs_body_stream_read": (ctypes.c_int64, [P, ctypes.c_char_p, ctypes.c_size_t]),
        "afs_body_stream_content_length": (ctypes.c_uint64, [P]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


LIB = load()
AFS_OK, AFS_E_INVALID_ARGUMENT = 0, 1

NAME_CHARS = ["a", "b", "Z", "0", "9", " ", "-", "_", ".", "[", "]", "é", "ß", "中", "😀", '"', "\r", "\n",
              ";", "=", "'", "/", ":", ","]
BOUNDARY_CHARS = "ABCXYZabcxyz0189'+_-."
MIME_TYPES = ["application/octet-stream", "text/plain", "image/png", "application/json", "video/mp4",
              "application/x-custom+json"]


def rand_text(rng, lo=0, hi=12):
    return "".join(rng.choice(NAME_CHARS) for _ in range(rng.randint(lo, hi)))


def rand_body(rng):
    kind = rng.random()
    n = rng.choice([0, 1, 2, 5, 17, 100, 1000, 5000, 70000]) if kind < 0.9 else rng.randint(0, 200000)
    pieces = []
    size = 0
    while size < n:
        r = rng.random()
        if r < 0.5:
            chunk = rng.randbytes(rng.randint(1, 64))
        elif r < 0.7:
            chunk = b"\r\n"
        elif r < 0.8:
            chunk = b"--"
        elif r < 0.9:
            chunk = b"\r\n--Boundary+"
        else:
            chunk = b"Content-Disposition: form-data\r\n\r\n"
        pieces.append(chunk)
        size += len(chunk)
    return b"".join(pieces)[:n]


def escape(s):
    return s.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


class Source:
    """A callback part over bytes, kept alive by the test until the request is freed."""

    def __init__(self, data):
        self.data = data
        self.pos = 0
        self.released = 0
        self.read = READ_FN(self._read)
        self.rewind = REWIND_FN(self._rewind)
        self.release = RELEASE_FN(self._release)

    def _read(self, ctx, buf, n):
        chunk = self.data[self.pos:self.pos + n]
        ctypes.memmove(buf, chunk, len(chunk))
        self.pos += len(chunk)
        return len(chunk)

    def _rewind(self, ctx):
        self.pos = 0
        return 0

    def _release(self, ctx):
        self.released += 1


def build_case(seed, tmpdir):
    """Returns (expected parts, body bytes, boundary, sources)."""
    rng = random.Random(seed)
    err = Error()
    s = LIB.afs_serializer_new(0)
    form = LIB.afs_serializer_multipart_form(s, b"POST", b"http://example.com/upload", None, ctypes.byref(err))
    assert form, err.message
    parts, sources, custom = [], [], None
    if rng.random() < 0.5:
        custom = "".join(rng.choice(BOUNDARY_CHARS) for _ in range(rng.randint(1, 70)))
        assert LIB.afs_form_set_boundary(form, custom.encode(), ctypes.byref(err)) == AFS_OK, err.message
    for i in range(rng.randint(1, 8)):
        name = rand_text(rng, 0, 12)
        body = rand_body(rng)
        kind = rng.choice(["field", "data", "file", "stream", "custom"])
        if kind == "field":
            st = LIB.afs_form_append_form_data(form, body, len(body), name.encode(), ctypes.byref(err))
            parts.append((name, None, None, body))
        elif kind in ("data", "file", "stream"):
            filename = rand_text(rng, 1, 16)
            mime = rng.choice(MIME_TYPES)
            if kind == "data":
                st = LIB.afs_form_append_file_data(form, body, len(body), name.encode(), filename.encode(),
                                                   mime.encode(), ctypes.byref(err))
            elif kind == "file":
                path = os.path.join(tmpdir, "f%d_%d.bin" % (seed, i))
                with open(path, "wb") as fh:
                    fh.write(body)
                st = LIB.afs_form_append_file_ex(form, path.encode(), name.encode(), filename.encode(),
                                                 mime.encode(), ctypes.byref(err))
            else:
                src = Source(body)
                sources.append(src)
                st = LIB.afs_form_append_stream(form, src.read, src.rewind, src.release, None, len(body),
                                                name.encode(), filename.encode(), mime.encode(), ctypes.byref(err))
            parts.append((name, filename, mime, body))
        else:
            disposition = 'form-data; name="%s"' % escape(name)
            names = (ctypes.c_char_p * 2)(b"Content-Disposition", b"X-Extra")
            values = (ctypes.c_char_p * 2)(disposition.encode(), b"seed %d" % seed)
            st = LIB.afs_form_append_part(form, names, values, 2, body, len(body), ctypes.byref(err))
            parts.append((name, None, None, body))
        assert st == AFS_OK, err.message
    req = LIB.afs_form_finish(form, ctypes.byref(err))
    if not req:
        # Only a custom boundary may collide with content; then a safe one must work.
        assert custom is not None and err.code == AFS_E_INVALID_ARGUMENT, err.message
        assert b"occurs" in err.message
        assert LIB.afs_form_set_boundary(form, b"Safe.Boundary'" + b"9" * 40, ctypes.byref(err)) == AFS_OK
        req = LIB.afs_form_finish(form, ctypes.byref(err))
        assert req, err.message
    boundary = LIB.afs_form_boundary(form).decode()
    assert LIB.afs_request_header(req, b"Content-Type").decode() == "multipart/form-data; boundary=" + boundary
    bs = LIB.afs_request_body_stream(req)
    total = LIB.afs_body_stream_content_length(bs)
    assert LIB.afs_request_header(req, b"Content-Length").decode() == str(total)
    out = bytearray()
    buf = ctypes.create_string_buffer(65536)
    while True:
        n = LIB.afs_body_stream_read(bs, buf, rng.choice([1, 7, 16, 100, 4096, 65536]))
        assert n >= 0
        if n == 0:
            break
        out += buf.raw[:n]
    assert len(out) == total
    LIB.afs_request_free(req)
    LIB.afs_form_free(form)
    LIB.afs_serializer_free(s)
    assert all(src.released == 1 for src in sources)
    return parts, bytes(out), boundary


def parse_with_email(body, boundary):
    # policy=HTTP reads the UTF-8 header blocks as UTF-8 (compat32 would mangle them)
    msg = BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: multipart/form-data; boundary=\"" + boundary.encode() + b"\"\r\n\r\n" + body)
    assert msg.is_multipart()
    out = []
    for part in msg.get_payload():
        name = part.get_param("name", header="content-disposition")
        if name is None:
            name = ""  # an empty quoted value
        filename = part.get_param("filename", header="content-disposition")
        ctype = part.get_content_type() if part.get("Content-Type") else None
        out.append((name, filename, ctype, part.get_payload(decode=True) or b""))
    return out


def parse_with_multipart(body, boundary):
    parser = multipart.MultipartParser(io.BytesIO(body), boundary, len(body), part_limit=100000,
                                       memory_limit=1 << 30, strict=True)
    return [(p.name, p.filename, p.content_type if p.filename is not None else None, p.raw) for p in parser]


def parse_with_python_multipart(body, boundary):
    parts, state = [], {}

    def on_part_begin():
        state.update(headers={}, data=bytearray(), field=b"", value=b"")

    def on_header_field(data, start, end):
        state["field"] += data[start:end]

    def on_header_value(data, start, end):
        state["value"] += data[start:end]

    def on_header_end():
        state["headers"][state["field"].lower()] = state["value"]
        state["field"], state["value"] = b"", b""

    def on_part_data(data, start, end):
        state["data"] += data[start:end]

    def on_part_end():
        _, params = parse_options_header(state["headers"].get(b"content-disposition", b""))
        name = params.get(b"name", b"").decode()
        filename = params.get(b"filename")
        ctype = state["headers"].get(b"content-type")
        parts.append((name, filename.decode() if filename is not None else None,
                      ctype.decode() if ctype is not None and filename is not None else None, bytes(state["data"])))

    p = PMParser(boundary.encode(), {"on_part_begin": on_part_begin, "on_header_field": on_header_field,
                                     "on_header_value": on_header_value, "on_header_end": on_header_end,
                                     "on_part_data": on_part_data, "on_part_end": on_part_end})
    pos = 0
    while pos < len(body):  # feed in odd pieces
        p.write(body[pos:pos + 9973])
        pos += 9973
    p.finalize()
    return parts


@pytest.fixture(scope="module")
def cases():
    with tempfile.TemporaryDirectory() as tmp:
        yield [(seed,) + build_case(seed, tmp) for seed in range(CASES)]


def expected(parts, decode_escapes):
    out = []
    for name, filename, ctype, body in parts:
        if not decode_escapes:
            name = escape(name)
            filename = escape(filename) if filename is not None else None
        out.append((name, filename, ctype, body))
    return out


def test_that_email_parses_every_form_back(cases):
    for seed, parts, body, boundary in cases:
        assert parse_with_email(body, boundary) == expected(parts, False), "seed %d" % seed


def test_that_multipart_parses_every_form_back(cases):
    # `multipart` undoes the browsers' %22 %0D %0A escapes in names and filenames.
    for seed, parts, body, boundary in cases:
        assert parse_with_multipart(body, boundary) == expected(parts, True), "seed %d" % seed


def test_that_python_multipart_parses_every_form_back(cases):
    for seed, parts, body, boundary in cases:
        assert parse_with_python_multipart(body, boundary) == expected(parts, False), "seed %d" % seed


def test_that_the_cases_cover_every_part_kind_and_both_boundary_kinds(cases):
    kinds = set()
    custom = generated = 0
    for _, parts, _, boundary in cases:
        if boundary.startswith("Boundary+") and len(boundary) == 25:
            generated += 1
        else:
            custom += 1
        for name, filename, ctype, body in parts:
            kinds.add((filename is not None, any(c in name for c in '"\r\n'), len(body) > 0))
    assert len(cases) >= 100
    assert custom > 10 and generated > 10
    assert len(kinds) == 8
