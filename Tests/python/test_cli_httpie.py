"""The CLI means what HTTPie means: a table of HTTPie invocations runs through both
`http --offline` (httpie from PyPI, installed by scripts/install-deps.sh) and
`python3 -m afserialization`, and the two printed requests are compared by meaning:

* User-Agent, Accept-Encoding, Connection and Accept-Language are dropped (the HTTP
  library's and AFNetworking's defaults);
* the other headers as a case-insensitive set (a repeated header's values joined by ", ");
* Content-Length is checked against the body on each side (and must be on both or neither);
* the method and path exactly; the query as (key, value) pairs in any order;
* JSON bodies by value, form bodies as pairs, multipart bodies part by part (headers and
  content) with the boundaries masked, other bodies byte for byte.

Any other difference fails unless its header is listed in the CLI's `--help` section
"Differences from HTTPie:" (one header name per line, then one line of reason). Invocations
HTTPie refuses must be refused by the CLI too.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

import afserialization as afs

REPO = Path(__file__).resolve().parents[2]
HTTP = shutil.which("http") or str(Path(sys.executable).parent / "http")
if not os.access(HTTP, os.X_OK):
    pytest.skip("httpie is not installed (scripts/install-deps.sh installs it)",
                allow_module_level=True)
DROPPED = {"user-agent", "accept-encoding", "connection", "accept-language"}


def env():
    e = dict(os.environ)
    if os.environ.get("AFS_TEST_INSTALLED_PACKAGE") != "1":  # else the installed package
        e["PYTHONPATH"] = os.pathsep.join([str(REPO / "bindings" / "python"),
                                           e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    e.setdefault(afs.LIBRARY_ENV, afs.library_path)
    e["HTTPIE_CONFIG_DIR"] = e.get("AFS_TEST_HTTPIE_CONFIG", "/nonexistent-httpie-config")
    return e


def run(argv, cwd, stdin):
    return subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, timeout=60, env=env())


def ours(args, cwd, stdin=None):
    extra = [] if stdin is not None else ["--ignore-stdin"]
    return run([sys.executable, "-m", "afserialization", *extra, *args], cwd, stdin)


def httpie(args, cwd, stdin=None):
    extra = [] if stdin is not None else ["--ignore-stdin"]
    return run([HTTP, "--offline", *extra, *args], cwd, stdin)


@pytest.fixture(scope="module")
def allowed():
    return allowed_differences()


def allowed_differences():
    """The header names of the `--help` section "Differences from HTTPie:"."""
    out = subprocess.run([sys.executable, "-m", "afserialization", "--help"],
                         capture_output=True, text=True, env=env(), timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    start = lines.index("Differences from HTTPie:") + 1
    names = []
    body = []
    for line in lines[start:]:
        if not line.strip():
            break
        body.append(line.strip())
    assert len(body) % 2 == 0 and body, body  # name, reason, name, reason ...
    for name, reason in zip(body[0::2], body[1::2]):
        assert re.fullmatch(r"[A-Za-z0-9-]+", name), name
        assert len(reason) > 20, reason
        names.append(name.lower())
    return set(names)


class Parsed:
    def __init__(self, raw: bytes, what: str = "HB"):
        self.method = self.path = None
        self.query = []
        self.headers = {}
        if "H" in what:
            head, sep, body = raw.partition(b"\r\n\r\n")
            assert sep, raw[:300]
            lines = head.decode("utf-8").split("\r\n")
            self.method, target, version = lines[0].split(" ")
            assert version == "HTTP/1.1"
            parts = urlsplit(target)
            self.path = parts.path
            self.query = sorted(parse_qsl(parts.query, keep_blank_values=True))
            for line in lines[1:]:
                name, _, value = line.partition(":")
                key = name.strip().lower()
                value = value.strip()
                self.headers[key] = f"{self.headers[key]}, {value}" if key in self.headers else value
        else:
            body = raw
        self.body = body

    def content_type(self):
        return self.headers.get("content-type", "")

    def boundary(self):
        m = re.search(r"boundary=([^;]+)", self.content_type())
        return m.group(1) if m else None

    def masked_headers(self):
        out = {k: v for k, v in self.headers.items() if k not in DROPPED and k != "content-length"}
        if self.boundary():
            out["content-type"] = out["content-type"].replace(self.boundary(), "BOUNDARY")
        return out


def body_meaning(p: Parsed, hint_json: bool):
    """What the body means: a JSON value, sorted form pairs, a list of parts, or bytes."""
    ct = p.content_type().lower()
    if ct.startswith("multipart/"):
        delimiter = b"--" + p.boundary().encode()
        chunks = p.body.split(delimiter)
        assert chunks[0] == b"" and chunks[-1] in (b"--\r\n", b"--"), chunks[-1][:20]
        parts = []
        for chunk in chunks[1:-1]:
            assert chunk.startswith(b"\r\n") and chunk.endswith(b"\r\n")
            head, _, content = chunk[2:-2].partition(b"\r\n\r\n")
            headers = {}
            for line in head.decode("utf-8").split("\r\n"):
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = " ".join(value.split())
            parts.append((sorted(headers.items()), content))
        return ("multipart", sorted(parts))
    if "x-www-form-urlencoded" in ct:
        return ("form", sorted(parse_qsl(p.body.decode("utf-8"), keep_blank_values=True)))
    if "json" in ct or hint_json:
        try:
            return ("json", json.loads(p.body)) if p.body else ("empty", b"")
        except ValueError:
            pass
    return ("bytes", p.body)


def check_content_length(p: Parsed, who: str):
    if "content-length" in p.headers:
        assert int(p.headers["content-length"]) == len(p.body), \
            f"{who}: Content-Length {p.headers['content-length']} but a {len(p.body)}-byte body"
    else:
        assert p.body == b"", f"{who}: a body without Content-Length"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("httpie")
    (d / "d.json").write_text('{"a": 1, "b": [true, null]}\n')
    (d / "t.txt").write_text("some text\n")
    (d / "note.txt").write_text("Zoë's note\n")
    return d


# (arguments, stdin or None)
CASES = [
    (["GET", "example.com", "q==1"], None),
    (["example.com/search", "q==swift ctypes", "page==2", "a==1", "a==2", "e=="], None),
    (["example.com/x?z=0&y=", "q==1"], None),
    (["https://example.com/users", "name=Zoë", "age:=3", "admin:=true", "tags:=[\"a\",\"b\"]"], None),
    (["get", "example.com", "name=x"], None),
    (["PUT", "example.com/u", "user[name]=x", "user[tags][]=a", "user[tags][]=b", "list[1]=y",
      "deep[a][b][c]:=1"], None),
    (["example.com", "[]=a", "[]=b"], None),
    (["example.com", "a[0]=x", "a[2]=y", "b[c][]=1", "b[d]:=[1]"], None),
    (["example.com", "text=@d.json", "j:=@d.json", "q==@t.txt"], None),
    (["example.com", "a\\=b=c", "x\\:y=1", "p\\@q=2", "br\\[0\\]=lit"], None),
    (["example.com", "X-Trace:abc", "X-Empty;", "User-Agent:", "Accept:", "X-Multi:1", "X-Multi:2"], None),
    (["example.com", "Host:other.example", "X-From-File:@t.txt"], None),
    (["-f", ":3000/x", "a=1", "b=2", "a=3"], None),
    (["-f", "localhost:8080", "name=Zoë", "empty="], None),
    (["-f", "POST", "example.com"], None),
    (["POST", "example.com"], None),
    (["DELETE", "example.com/items/7"], None),
    (["HEAD", "example.com"], None),
    (["OPTIONS", "example.com"], None),
    (["-f", "OPTIONS", "example.com"], None),
    (["-f", "GET", "example.com"], None),
    (["-f", "HEAD", "example.com"], None),
    (["-f", "GET", "example.com", "a=1", "n:=2"], None),
    (["http://user:pw@example.com:8080/p?x=1#frag", "q==2"], None),
    (["-j", "example.com"], None),
    (["--multipart", "example.com", "a=1", "b=two words"], None),
    (["-f", "example.com/up", "title=T", "file@d.json", "f2@t.txt;type=text/x-custom",
      "note@note.txt"], None),
    (["-a", "user:pass", "example.com"], None),
    (["-A", "bearer", "-a", "TOKEN123", "example.com"], None),
    (["--raw", '{"k": [1, 2]}', "example.com"], None),
    (["example.com/echo"], b"hello from stdin"),
    (["PUT", "example.com/doc"], b'{"piped": true}'),
    (["-f", "example.com"], b"a=1&b=2"),
    (["--print=H", "example.com", "a=1"], None),
    (["--print=B", "example.com", "a=1", "b:=2"], None),
    (["--print=HB", "PATCH", "example.com", "x:=null"], None),
]

REFUSED = [
    (["example.com", "f@d.json"], None),          # a file part needs --form
    (["example.com", "a=1"], b"body"),             # stdin beside data
    (["--raw", "x", "example.com", "a=1"], None),  # --raw beside data
    (["example.com", "a:={bad"], None),            # not JSON
    (["example.com", "a[x]=1", "a[]=2"], None),    # an object appended to
]


@pytest.fixture(scope="module")
def runs(files):
    """Every invocation through both programs, a few at a time (HTTPie takes most of a
    second to start, mostly waiting)."""
    jobs = [(side, tuple(args), stdin) for args, stdin in CASES + REFUSED
            for side in ("httpie", "ours")]

    def one(job):
        side, args, stdin = job
        return job, (httpie if side == "httpie" else ours)(list(args), files, stdin)

    with ThreadPoolExecutor(max_workers=6) as pool:
        return dict(pool.map(one, jobs))


@pytest.mark.parametrize("args,stdin", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_same_request_as_httpie(args, stdin, runs, allowed):
    theirs_run = runs[("httpie", tuple(args), stdin)]
    assert theirs_run.returncode == 0, theirs_run.stderr.decode()
    ours_run = runs[("ours", tuple(args), stdin)]
    assert ours_run.returncode == 0, ours_run.stderr.decode()
    what = next((a.split("=", 1)[1] for a in args if a.startswith("--print=")), "HB")
    theirs, mine = Parsed(theirs_run.stdout, what), Parsed(ours_run.stdout, what)

    differing = set()
    if "H" in what:
        assert (mine.method, mine.path) == (theirs.method, theirs.path)
        assert mine.query == theirs.query
        a, b = theirs.masked_headers(), mine.masked_headers()
        differing = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
        if "B" in what:
            check_content_length(theirs, "httpie")
            check_content_length(mine, "afserialization")
            assert ("content-length" in theirs.headers) == ("content-length" in mine.headers)
    json_hint = "H" not in what
    assert body_meaning(mine, json_hint) == body_meaning(theirs, json_hint), \
        (theirs_run.stdout, ours_run.stdout)
    unexplained = differing - allowed
    assert not unexplained, {k: (theirs.headers.get(k), mine.headers.get(k)) for k in unexplained}


@pytest.mark.parametrize("args,stdin", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_refused_like_httpie(args, stdin, runs):
    theirs_run = runs[("httpie", tuple(args), stdin)]
    ours_run = runs[("ours", tuple(args), stdin)]
    assert theirs_run.returncode != 0, theirs_run.stdout
    assert ours_run.returncode != 0, ours_run.stdout
    assert b"Traceback" not in ours_run.stderr


def test_the_differences_are_in_the_help_and_the_readme(allowed):
    assert allowed, "the --help section lists the headers that differ"
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("Differences from HTTPie:"):]
    for name in allowed:
        assert name in section.lower()[:3000], name
