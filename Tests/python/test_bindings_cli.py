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
    assert parse_item("X-H:v=1") == (":", "X-H", "v=1")
    assert parse_item("f@/tmp/a=b") == ("@", "f", "/tmp/a=b")
    with pytest.raises(ValueError):
        parse_item("nothing")


def test_get_with_query_and_header(capsysbinary):
    code, out, _ = run_cli(capsysbinary, "GET", "http://example.com/s?x=1", "q=a b", "page:=2",
                           "X-Trace:abc")
    assert code == 0
    lines = out.decode().split("\r\n")
    assert lines[0] == "GET /s?x=1&page=2&q=a%20b HTTP/1.1"
    assert "Host: example.com" in lines and "X-Trace: abc" in lines
    assert out.endswith(b"\r\n\r\n")


def test_form_post_with_styles_and_auth(capsysbinary):
    code, out, _ = run_cli(capsysbinary, "POST", "http://h/items", "name=pen", "tags:=[\"a\",\"b\"]",
                           "--array-style", "indexed", "--auth", "u:p")
    assert code == 0
    head, _, body = out.partition(b"\r\n\r\n")
    assert b"Authorization: Basic dTpw" in head and b"Content-Length: 36" in head
    assert body == b"name=pen&tags%5B0%5D=a&tags%5B1%5D=b"


def test_json_body(capsysbinary):
    code, out, _ = run_cli(capsysbinary, "--json", "--json-options", "sorted", "POST", "http://h/",
                           "b=x", "a:=1")
    assert code == 0
    assert out.endswith(b'{"a":1,"b":"x"}')


def test_errors_are_reported(capsys):
    assert main(["GET", "http://bad host/"]) == 1
    assert "AFS_E_BAD_URL" in capsys.readouterr().err
    assert main(["GET", "http://h/", "noseparator"]) == 1


def test_multipart_with_a_file(capsysbinary, tmp_path):
    path = tmp_path / "hello.txt"
    path.write_bytes(b"hello file")
    code, out, _ = run_cli(capsysbinary, "--boundary", "XYZ", "POST", "http://h/up",
                           "title=T", f"file@{path}")
    assert code == 0
    head, _, body = out.partition(b"\r\n\r\n")
    assert b"Content-Type: multipart/form-data; boundary=XYZ" in head
    assert body.startswith(b"--XYZ\r\n") and body.endswith(b"\r\n--XYZ--\r\n")
    assert b'filename="hello.txt"' in body and b"hello file" in body


def test_render_body_on_a_terminal():
    body = (b"--B\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n\x00\x01\xff\r\n"
            b"--B\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\ntext\r\n--B--\r\n")
    shown = render_body(body, "multipart/form-data; boundary=B", tty=True)
    assert b"[3 bytes of binary data]" in shown and b"text" in shown
    assert render_body(body, "multipart/form-data; boundary=B", tty=False) == body
    assert b"binary body" in render_body(b"\x00", "application/octet-stream", tty=True)


def test_module_runs_as_a_program():
    env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"))
    out = subprocess.run([sys.executable, "-m", "afserialization", "DELETE",
                          "http://h/x", "id:=7"], capture_output=True, env=env, timeout=60)
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
