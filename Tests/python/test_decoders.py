"""Decoders from Python: query and form parsing, the multipart push parser and iter_multipart.

Peers: bodies written by this library's form builder, requests/urllib3, httpx, curl's and the
browsers' formats parse here as python-multipart and werkzeug read them; the writer's
backslash escape is read back as one backslash by Go's mime/multipart (a small program built
with `go build` at test time), Python's email, werkzeug and python-multipart; the inputs
behind Go's CVE-2022-41725, CVE-2023-24536, CVE-2023-45290 and busboy/multer advisories are
refused with the limit they hit. The peer cases are our own, written from the peers'
published behaviour (no upstream test file was copied). python-multipart's own HTTP test
data (vendored) runs in test_multipart_peer_data.py.
"""
from __future__ import annotations

import email.parser
import email.policy
import io
import json
import os
import random
import shutil
import subprocess
import tempfile
import urllib.parse
from pathlib import Path

import pytest

import afserialization as afs
from afserialization.errors import InvalidArgumentError, InvalidMultipartError, InvalidUTF8Error, LimitError

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------
# Query strings and form bodies


def test_that_names_nest_as_afnetworking_writes_them():
    assert afs.parse_query("a%5Bb%5D=1&c%5B%5D=x&c%5B%5D=y&n") == {"a": {"b": "1"}, "c": ["x", "y"], "n": None}
    assert afs.parse_query("a=1&a=2") == {"a": "2"}
    assert afs.parse_query("?a=1") == {"?a": "1"}  # the writer leaves `?` unescaped: part of the name
    assert afs.parse_query("a=1&a=2", array_style="no_brackets") == {"a": ["1", "2"]}
    assert afs.parse_query("a[1]=y&a[0]=x", array_style="indexed") == {"a": ["x", "y"]}
    assert afs.parse_query("s=a+b") == {"s": "a+b"}
    assert afs.parse_query("s=a+b", plus_as_space=True) == {"s": "a b"}
    assert afs.parse_form(b"s=a+b&t=%C3%A9") == {"s": "a b", "t": "é"}


def test_that_every_written_tree_comes_back():
    ser = afs.HTTPRequestSerializer()
    rng = random.Random(26)
    for _ in range(200):
        tree = {rng.choice(["a", "b", "é", "x y"]) + str(rng.randrange(5)):
                rng.choice(["v", "", None, "a&b=c", {"k": rng.choice(["1", None])}, ["p", "q"]])
                for _ in range(rng.randrange(1, 5))}
        query = afs.query_string(tree)
        assert afs.parse_query(query) == tree, query
    del ser


def test_that_limits_and_bad_escapes_raise():
    with pytest.raises(LimitError, match="max_params"):
        afs.parse_query("&".join(f"k{i}=v" for i in range(1001)))
    with pytest.raises(LimitError, match="max_length"):
        afs.parse_query("a=" + "x" * 65537)
    with pytest.raises(LimitError, match="max_depth"):
        afs.parse_query("a[b][c]=1", max_depth=1, refuse_deep=True)
    assert afs.parse_query("a[b][c]=1", max_depth=1) == {"a": {"b": {"[c]": "1"}}}
    with pytest.raises(InvalidArgumentError, match="malformed escape"):
        afs.parse_query("a=%zz")
    with pytest.raises(InvalidUTF8Error):
        afs.parse_query("a=%E9")
    assert afs.parse_query("a=%zz", keep_bad_escapes=True) == {"a": "%zz"}
    with pytest.raises(ValueError):
        afs.parse_query("a=1", array_style="commas")


def test_that_flat_queries_read_as_parse_qs_reads_them():
    rng = random.Random(5)
    for _ in range(100):
        pairs = [("".join(rng.choice("abc é+&=%") for _ in range(rng.randrange(1, 6))),
                  "".join(rng.choice("xyz é+&=%/") for _ in range(rng.randrange(0, 6)))) for _ in range(5)]
        query = urllib.parse.urlencode(pairs)
        ours = afs.parse_form(query, array_style="no_brackets")
        theirs = urllib.parse.parse_qs(query, keep_blank_values=True)
        assert {k: (v if isinstance(v, list) else [v]) for k, v in ours.items()} == theirs


# --------------------------------------------------------------------------------------
# Multipart helpers


def parse_all(body: bytes, content_type: str, sizes=None, **limits):
    """Our parts as (name, filename, headers, body) under the given feed sizes."""
    parser = afs.MultipartParser(content_type, **limits)
    parts = []
    i = 0
    k = 0
    while i < len(body):
        n = len(body) if not sizes else sizes[k % len(sizes)]
        k += 1
        parts += parser.feed(body[i:i + n])
        i += n
    parts += parser.close()
    return [(p.name, p.filename, p.headers, p.read()) for p in parts]


def python_multipart_parts(body: bytes, content_type: str):
    """python-multipart's reading: (name, filename, body) per part."""
    import python_multipart
    from python_multipart.multipart import parse_options_header
    _, params = parse_options_header(content_type)
    out = []
    cur = {}

    def on_part_begin():
        cur.clear()
        cur["headers"] = []
        cur["data"] = b""

    def on_header_field(data, start, end):
        cur["field"] = cur.get("field", b"") + data[start:end]

    def on_header_value(data, start, end):
        cur["value"] = cur.get("value", b"") + data[start:end]

    def on_header_end():
        cur["headers"].append((cur.pop("field", b""), cur.pop("value", b"")))

    def on_part_data(data, start, end):
        cur["data"] += data[start:end]

    def on_part_end():
        cd = next((v for k, v in cur["headers"] if k.lower() == b"content-disposition"), b"")
        _, p = parse_options_header(cd)
        name = p.get(b"name")
        fn = p.get(b"filename")
        out.append((name.decode() if name is not None else None,
                     fn.decode() if fn is not None else None, cur["data"]))

    parser = python_multipart.MultipartParser(params[b"boundary"], {
        "on_part_begin": on_part_begin, "on_header_field": on_header_field,
        "on_header_value": on_header_value, "on_header_end": on_header_end,
        "on_part_data": on_part_data, "on_part_end": on_part_end})
    parser.write(body)
    parser.finalize()
    return out


def werkzeug_parts(body: bytes, content_type: str):
    """werkzeug's reading: {name: [values]} for fields, {name: [(filename, bytes)]} for files."""
    from werkzeug.formparser import parse_form_data
    environ = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": content_type,
               "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}
    _, form, files = parse_form_data(environ)
    return ({k: form.getlist(k) for k in form},
            {k: [(f.filename, f.read()) for f in files.getlist(k)] for k in files})


def ours_like_werkzeug(parts):
    form, files = {}, {}
    for name, filename, _, data in parts:
        if filename is None:
            form.setdefault(name, []).append(data.decode("utf-8", "replace"))
        else:
            files.setdefault(name, []).append((filename, data))
    return form, files


SIZES = [None, [1], [2, 3, 5], [7], [64], [4096, 1]]


# --------------------------------------------------------------------------------------
# Round trip of the library's own form bodies


def test_that_every_form_body_parses_back_under_any_split():
    rng = random.Random(2026)
    ser = afs.HTTPRequestSerializer()
    for round_ in range(12):
        params = {"a": "1", "nested": {"k": "v é"}, "list": ["x", "y"]}
        form = ser.multipart_form("POST", "http://127.0.0.1/up", params)
        files = []
        for i in range(rng.randrange(1, 4)):
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 3000)))
            data += b"\r\n--" + form.boundary.encode()[:5]
            fn = f'f{i} "q" back\\slash.bin'
            form.append_data(data, f"file{i}", fn, "application/octet-stream")
            files.append((f"file{i}", fn, data))
        form.append_part({"Content-Disposition": 'form-data; name="custom"', "X-Trace": "  t1 "}, b"\x00\x01")
        req = form.finish()
        body = b"".join(iter(req.body_stream))
        ct = req.headers["Content-Type"]
        for sizes in SIZES:
            parts = parse_all(body, ct, sizes)
            assert [p[0] for p in parts] == ["a", "list[]", "list[]", "nested[k]"] + [f[0] for f in files] + ["custom"]
            assert parts[3][3] == "v é".encode()
            for j, (name, fn, data) in enumerate(files):
                assert parts[4 + j][1] == fn
                assert parts[4 + j][3] == data
                assert ("Content-Type", "application/octet-stream") in parts[4 + j][2]
            assert ("X-Trace", "t1") in parts[-1][2]  # trimmed by the writer (RFC 9110)
            assert parts[-1][3] == b"\x00\x01"


# --------------------------------------------------------------------------------------
# Bodies written by other clients, read as their servers' parsers read them


def requests_body():
    import requests
    req = requests.Request("POST", "http://127.0.0.1/", data={"field": "value", "é": "ü"},
                           files={"up": ("report.csv", b"a,b\r\n1,2\r\n", "text/csv"),
                                  "raw": ("blob", b"\x00\xff" * 100)}).prepare()
    return req.body, req.headers["Content-Type"]


def urllib3_body():
    import urllib3
    body, ct = urllib3.encode_multipart_formdata([("a", "1"), ("f", ("x.txt", b"hello", "text/plain"))])
    return body, ct


def httpx_body():
    import httpx
    req = httpx.Request("POST", "http://127.0.0.1/", data={"a": "1", "b": "two words"},
                        files={"f": ('we"ird\\name.txt', b"content\r\n", "text/plain")})
    return req.read(), req.headers["Content-Type"]


def curl_body():
    # The format curl -F writes (lib/mime.c): a boundary of 24 dashes and 16 random
    # alphanumerics, Content-Disposition then Content-Type for files, CRLF everywhere, the
    # closing boundary followed by CRLF. Written by hand here: `curl -F a=1 -F f=@x.txt`.
    b = "------------------------d74496d66958873e"
    body = (f"--{b}\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n"
            f"--{b}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.txt\"\r\n"
            f"Content-Type: text/plain\r\n\r\nfile body\n\r\n--{b}--\r\n").encode()
    return body, f"multipart/form-data; boundary={b}"


def browser_body():
    # The format Chromium and Firefox write (WHATWG multipart/form-data encoding): a
    # WebKitFormBoundary boundary, `"` CR LF in names as %22 %0D %0A, an empty file input as
    # filename="" with application/octet-stream and no bytes.
    b = "----WebKitFormBoundary7MA4YWxkTrZu0gW"
    body = (f"--{b}\r\nContent-Disposition: form-data; name=\"q%22uote\"\r\n\r\nsay %22hi%22\r\n"
            f"--{b}\r\nContent-Disposition: form-data; name=\"pic\"; filename=\"\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n\r\n"
            f"--{b}\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"r\u00e9sum\u00e9.txt\"\r\n"
            f"Content-Type: text/plain\r\n\r\nCV\r\n--{b}--\r\n").encode()
    return body, f"multipart/form-data; boundary={b}"


@pytest.mark.parametrize("maker", [requests_body, urllib3_body, httpx_body, curl_body, browser_body])
def test_that_peer_bodies_parse_as_their_servers_read_them(maker):
    body, ct = maker()
    for sizes in SIZES:
        ours = parse_all(body, ct, sizes)
        theirs = python_multipart_parts(body, ct)
        assert len(ours) == len(theirs)
        for (name, fn, _, data), (pname, pfn, pdata) in zip(ours, theirs):
            assert data == pdata
            # python-multipart leaves the WHATWG escape %22 as written; this library decodes it.
            undo = (lambda s: s.replace("%22", '"') if s is not None else None)
            assert (name, fn) == (undo(pname), undo(pfn))
    form, files = werkzeug_parts(body, ct)
    ours_form, ours_files = ours_like_werkzeug(parse_all(body, ct))
    assert ours_form == form
    assert ours_files == files


def test_that_browser_escapes_are_decoded():
    body, ct = browser_body()
    parts = parse_all(body, ct)
    assert parts[0][0] == 'q"uote'
    assert parts[0][3] == b"say %22hi%22"  # data is data
    assert parts[1][1] == ""
    assert parts[2][1] == "résumé.txt"


def test_that_the_disposition_header_is_found_in_any_case_and_only_as_a_token():
    """The parser's 8-bytes-a-step check for `Content-Disposition:` agrees with the
    byte-by-byte token rule: any case is the header, anything else is another name."""
    def one(line: bytes):
        body = b"--b\r\n" + line + b"\r\n\r\nv\r\n--b--"
        return afs.MultipartParser("multipart/form-data; boundary=b").feed(body)
    for name in (b"Content-Disposition", b"CONTENT-DISPOSITION", b"content-disposition", b"cOnTeNt-DiSpOsItIoN"):
        (part,) = one(name + b': form-data; name="n"')
        assert part.name == "n" and part.headers == [(name.decode(), 'form-data; name="n"')]
    (part,) = one(b"Content-Dispositio: form-data; name=\"n\"")
    assert part.name is None  # another header
    (part,) = one(b"Content-Disposition:")
    assert part.name is None and part.headers == [("Content-Disposition", "")]
    for bad in (b"Content-Disposition : x", b"Content\x00Disposition: x", b"Content@Disposition: x"):
        with pytest.raises(InvalidMultipartError):
            one(bad)


# --------------------------------------------------------------------------------------
# The backslash: what the writer escapes, every reader reads as one backslash


@pytest.fixture(scope="module")
def go_reader(tmp_path_factory):
    go = shutil.which("go")
    if go is None:
        pytest.fail("go (Debian golang-go) is required for the interop check")
    out = tmp_path_factory.mktemp("go") / "multipartcheck"
    env = dict(os.environ, GOCACHE=str(out.parent / "cache"), GOPATH=str(out.parent / "gopath"),
               GO111MODULE="off", GOFLAGS="", GOTOOLCHAIN="local")
    subprocess.run([go, "build", "-o", str(out), "."], cwd=ROOT / "Tests/go/multipartcheck",
                   env=env, check=True)
    return out


def test_that_every_reader_keeps_backslashes_in_names(go_reader):
    names = ["tail\\", "a\\\\b", "a\\b", 'q"\\"x']
    ser = afs.HTTPRequestSerializer()
    form = ser.multipart_form("POST", "http://127.0.0.1/", None)
    for i, n in enumerate(names):
        form.append_data(b"%d" % i, n, n + ".txt", "text/plain")
    req = form.finish()
    body = b"".join(iter(req.body_stream))
    ct = req.headers["Content-Type"]
    assert b'name="tail\\\\"' in body
    # this library
    assert [p[0] for p in parse_all(body, ct)] == names
    assert [p[1] for p in parse_all(body, ct)] == [n + ".txt" for n in names]
    # Go
    run = subprocess.run([str(go_reader), ct], input=body, capture_output=True, check=True)
    go = [json.loads(line) for line in run.stdout.splitlines()]
    assert [g.get("error") for g in go] == [None] * len(names)
    assert [g["name"] for g in go] == [n.replace('"', "%22") for n in names]
    assert [g["filename"] for g in go] == [n.replace('"', "%22") + ".txt" for n in names]
    # Python's email
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ct.encode() + b"\r\n\r\n" + body)
    assert [p["content-disposition"].params["name"] for p in msg.iter_parts()] == \
        [n.replace('"', "%22") for n in names]
    # werkzeug (reads quoted-pairs and the %22 escape)
    form_, files = werkzeug_parts(body, ct)
    assert sorted(files) == sorted(names)
    assert all(files[n][0][0] == n + ".txt" for n in names)
    # python-multipart (0.0.34) reads quoted-pairs, but misreads a name that ends in a
    # backslash whether it is escaped or not (it ends the name at `";`); the others agree.
    pm = [p[0] for p in python_multipart_parts(body, ct)]
    assert len(set(pm)) == len(names)
    assert pm[1:] == [n.replace('"', "%22") for n in names[1:]]
    assert pm[0].startswith('tail"; filename=')


# --------------------------------------------------------------------------------------
# Limits: the inputs behind the CVEs and advisories


B = "XyZ"
CT = f"multipart/form-data; boundary={B}"


@pytest.mark.parametrize("body,limit,kw", [
    # CVE-2022-41725 / CVE-2023-24536: many parts, each cheap on the wire
    ((f"--{B}\r\n\r\nx\r\n" * 1001 + f"--{B}--").encode(), "max_parts (1000)", {}),
    # CVE-2023-24536: many headers per part
    ((f"--{B}\r\n" + "X: 1\r\n" * 33 + f"\r\nx\r\n--{B}--").encode(), "max_headers (32)", {}),
    # huge headers
    ((f"--{B}\r\n" + ("X: " + "v" * 1000 + "\r\n") * 20 + f"\r\nx\r\n--{B}--").encode(), "max_header_bytes (16384)", {}),
    # CVE-2023-45290: a very long line without CRLF
    ((f"--{B}\r\nX: " + "a" * 100000).encode(), "max_line_length (16384)", {}),
    # busboy/multer: a field without a filename over the limit
    ((f"--{B}\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n" + "z" * ((1 << 20) + 1) + f"\r\n--{B}--").encode(),
     "max_field_bytes (1048576)", {}),
    ((f"--{B}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\n" + "z" * 5000 + f"\r\n--{B}--").encode(),
     "max_total_bytes (4096)", {"max_total_bytes": 4096}),
    ((f"--{B}" + " " * 20000 + "\r\n\r\nx\r\n--{B}--").encode(), "max_line_length (16384)", {}),
])
def test_that_each_limit_is_refused_naming_it(body, limit, kw):
    for sizes in (None, [997]):
        with pytest.raises(LimitError, match=limit.replace("(", r"\(").replace(")", r"\)")):
            parse_all(body, CT, sizes, **kw)


def test_that_a_file_over_the_field_limit_is_fine_and_framing_errors_raise():
    body = (f"--{B}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\n".encode()
            + b"z" * (2 << 20) + f"\r\n--{B}--".encode())
    assert len(parse_all(body, CT)[0][3]) == 2 << 20
    with pytest.raises(InvalidMultipartError, match="before its closing boundary"):
        parse_all(body[:-7], CT)
    with pytest.raises(InvalidMultipartError, match="no boundary line"):
        parse_all(b"hello", CT)


def test_that_a_callback_error_propagates():
    parser = afs.MultipartParser(CT)
    parser._spool = "not a size"  # the size check then raises TypeError
    with pytest.raises(afs.StateError) as info:
        parser.feed(f"--{B}\r\n\r\nx\r\n--{B}--".encode())
    assert isinstance(info.value.__cause__, TypeError)
    with pytest.raises(afs.StateError):  # sticky
        parser.close()


# --------------------------------------------------------------------------------------
# iter_multipart: spooling, constant memory


def test_that_iter_multipart_spools_large_parts():
    big = os.urandom(3 << 20)
    body = (f"--{B}\r\nContent-Disposition: form-data; name=\"small\"\r\n\r\nhi\r\n"
            f"--{B}\r\nContent-Disposition: form-data; name=\"big\"; filename=\"b.bin\"\r\n\r\n").encode() \
        + big + f"\r\n--{B}--\r\n".encode()
    parts = list(afs.iter_multipart(io.BytesIO(body), CT, spool_bytes=1 << 20))
    assert [p.name for p in parts] == ["small", "big"]
    assert parts[0].body.read() == b"hi"
    assert not isinstance(parts[1].body, io.BytesIO)  # on disk
    assert isinstance(parts[0].body, io.BytesIO)
    assert parts[1].size == len(big)
    assert parts[1].body.read() == big
    with pytest.raises(InvalidMultipartError):
        list(afs.iter_multipart(io.BytesIO(body[:-20]), CT))
