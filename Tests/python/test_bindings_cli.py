"""python3 -m afserialization (HTTPie --offline style) and the main-job demo."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import afserialization as afs
from afserialization.__main__ import main, parse_item, render_body

REPO = Path(__file__).resolve().parents[2]


def run_cli(capsysbinary, *argv):
    code = main(list(argv))
    out, err = capsysbinary.readouterr()
    return code, out, err


def test_parse_item():
    assert parse_item("a=b") == ("=", "a", "b")
    assert parse_item("a=b:c") == ("=", "a", "b:c")
    assert parse_item("n:=1") == (":=", "n", "1")
    assert parse_item("q==1") == ("==", "q", "1")
    assert parse_item("t=@f.txt") == ("=@", "t", "f.txt")
    assert parse_item("j:=@f.json") == (":=@", "j", "f.json")
    assert parse_item("q==@f.txt") == ("==@", "q", "f.txt")
    assert parse_item("X-H:v=1") == (":", "X-H", "v=1")
    assert parse_item("X-H;") == (";", "X-H", "")
    assert parse_item("f@/tmp/a=b") == ("@", "f", "/tmp/a=b")
    assert parse_item("a\\=b=c") == ("=", "a=b", "c")
    with pytest.raises(ValueError):
        parse_item("nothing")


def test_query_items_and_headers(capsysbinary):
    code, out, _ = run_cli(capsysbinary, "-I", "GET", "http://example.com/s?x=1", "q==a b",
                           "page==2", "X-Trace:abc", "X-Empty;")
    assert code == 0
    lines = out.decode().split("\r\n")
    assert lines[0] == "GET /s?x=1&page=2&q=a%20b HTTP/1.1"
    assert "Host: example.com" in lines and "X-Trace: abc" in lines and "X-Empty: " in lines
    assert "Accept: */*" in lines
    assert out.endswith(b"\r\n\r\n")


def test_method_and_scheme_are_inferred(capsysbinary):
    code, out, _ = run_cli(capsysbinary, "-I", "example.com/users", "name=Zoë", "age:=3")
    assert code == 0
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /users HTTP/1.1\r\nHost: example.com\r\n")
    assert b"Content-Type: application/json" in head
    assert b"Accept: application/json, */*;q=0.5" in head
    assert json.loads(body) == {"name": "Zoë", "age": 3}
    code, out, _ = run_cli(capsysbinary, "-I", "get", ":3000/x", "tags[]=a", "user[name]=z")
    assert code == 0
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"GET /x HTTP/1.1\r\nHost: localhost:3000\r\n")
    assert json.loads(body) == {"tags": ["a"], "user": {"name": "z"}}


def test_form_post_with_styles_and_auth(capsysbinary):
    code, out, _ = run_cli(capsysbinary, "-I", "-f", "POST", "http://h/items", "name=pen",
                           "tags=a", "tags=b", "-a", "u:p")
    assert code == 0
    head, _, body = out.partition(b"\r\n\r\n")
    assert b"Authorization: Basic dTpw" in head and b"Content-Length: 22" in head
    assert b"Content-Type: application/x-www-form-urlencoded\r\n" in head
    assert body == b"name=pen&tags=a&tags=b"
    code, out, _ = run_cli(capsysbinary, "-I", "-f", "--array-style", "indexed", "POST",
                           "http://h/items", "tags=a", "tags=b", "-A", "bearer", "-a", "T0K")
    head, _, body = out.partition(b"\r\n\r\n")
    assert body == b"tags%5B0%5D=a&tags%5B1%5D=b" and b"Authorization: Bearer T0K" in head


def test_json_options(capsysbinary):
    code, out, _ = run_cli(capsysbinary, "-I", "--json-options", "sorted", "POST", "http://h/",
                           "b=x", "a:=1")
    assert code == 0
    assert out.endswith(b'{"a":1,"b":"x"}')


def test_header_removal_raw_body_and_print(capsysbinary):
    code, out, _ = run_cli(capsysbinary, "-I", "http://h/", "User-Agent:", "Accept:")
    assert code == 0 and b"User-Agent" not in out and b"Accept:" not in out
    code, out, _ = run_cli(capsysbinary, "-I", "--raw", "hello", "http://h/")
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"POST / HTTP/1.1") and b"Content-Length: 5" in head and body == b"hello"
    code, out, _ = run_cli(capsysbinary, "-I", "--print=B", "http://h/", "a=1")
    assert out == b'{"a":"1"}'
    code, out, _ = run_cli(capsysbinary, "-I", "--print=H", "http://h/", "a=1")
    assert out.endswith(b"\r\n\r\n") and b'{"a"' not in out


def test_stdin_is_the_body(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"))
    out = subprocess.run([sys.executable, "-m", "afserialization", "http://h/"],
                         input=b"piped", capture_output=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(b"POST / HTTP/1.1") and out.stdout.endswith(b"\r\n\r\npiped")
    out = subprocess.run([sys.executable, "-m", "afserialization", "http://h/", "a=1"],
                         input=b"piped", capture_output=True, env=env, timeout=60)
    assert out.returncode == 1 and b"--ignore-stdin" in out.stderr


def test_errors_are_reported(capsys):
    assert main(["-I", "GET", "http://bad host/"]) == 1
    assert "AFS_E_BAD_URL" in capsys.readouterr().err
    assert main(["-I", "GET", "http://h/", "noseparator"]) == 1
    assert main(["-I", "http://h/", "f@/etc/hostname"]) == 1
    assert "--form" in capsys.readouterr().err


def test_multipart_with_a_file(capsysbinary, tmp_path):
    path = tmp_path / "hello.txt"
    path.write_bytes(b"hello file")
    code, out, _ = run_cli(capsysbinary, "-I", "-f", "--boundary", "XYZ", "POST", "http://h/up",
                           "title=T", f"file@{path}", f"typed@{path};type=text/x-t")
    assert code == 0
    head, _, body = out.partition(b"\r\n\r\n")
    assert b"Content-Type: multipart/form-data; boundary=XYZ" in head
    assert body.startswith(b"--XYZ\r\n") and body.endswith(b"\r\n--XYZ--\r\n")
    assert b'filename="hello.txt"' in body and b"hello file" in body
    assert b"Content-Type: text/x-t" in body


def test_render_body_on_a_terminal():
    body = (b"--B\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n\x00\x01\xff\r\n"
            b"--B\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\ntext\r\n--B--\r\n")
    shown = render_body(body, "multipart/form-data; boundary=B", tty=True)
    assert b"[3 bytes of binary data]" in shown and b"text" in shown
    assert render_body(body, "multipart/form-data; boundary=B", tty=False) == body
    assert b"binary body" in render_body(b"\x00", "application/octet-stream", tty=True)


def test_module_runs_as_a_program():
    env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"))
    out = subprocess.run([sys.executable, "-m", "afserialization", "-I", "DELETE",
                          "http://h/x", "id==7"], capture_output=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(b"DELETE /x?id=7 HTTP/1.1\r\n")


@pytest.mark.slow
def test_demo_runs_end_to_end():
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "demo.py"), "--size-mib", "8"],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "local server: http://127.0.0.1:" in text and "local server stopped" in text
    for title in ("GET with a query string", "POST with a form body", "POST with a JSON body",
                  "property-list body"):
        assert title in text
    assert '"q": ["swift & python"]' in text
    assert "100%" in out.stderr  # the progress bar
    c_example = (REPO / "examples" / "upload_with_curl.c").exists() or \
        os.environ.get("AFS_UPLOAD_WITH_CURL")
    curl_headers = any(Path(p).exists() for p in ("/usr/include/curl/curl.h",
                                                  "/usr/include/x86_64-linux-gnu/curl/curl.h"))
    uploads = 2 if c_example and curl_headers else 1  # from C with libcurl, from Python
    assert text.count("the server received the 8 MiB file intact (SHA-256") == uploads, text
    last = text.strip().splitlines()[-1]
    assert last.startswith("verdict: GET query: ok; form POST: ok; JSON POST: ok; plist PUT: ok")
    assert last.endswith(f"{4 + uploads}/{4 + uploads} checks passed") and "FAILED" not in last
    if uploads == 2:
        assert "the request head libcurl sent" in text and "    POST /upload HTTP/1.1" in text
