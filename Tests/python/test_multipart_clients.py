"""A real HTTP stack uploads a multipart body pulled from libafserialization.

The compiled example examples/upload_with_curl.c (path in $AFS_UPLOAD_WITH_CURL) sends a
file and fields with libcurl through CURLOPT_READFUNCTION over afs_body_stream_read and
CURLOPT_SEEKFUNCTION over afs_body_stream_seek, to a server on 127.0.0.1 that this test
starts (werkzeug's WSGI server and form parser, in a thread) and stops. The server checks
every part: names, filenames, content types, field values and file bytes. A 307 redirect
makes curl send the body twice, seeking back to its start in between.
"""
import hashlib
import json
import os
import subprocess
import threading

import pytest

# The compiled examples/upload_with_curl: AFS_UPLOAD_WITH_CURL, else the CMake build tree.
UPLOAD = os.environ.get("AFS_UPLOAD_WITH_CURL") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "upload_with_curl")
if not os.access(UPLOAD, os.X_OK):
    raise RuntimeError(f"upload_with_curl not found at {UPLOAD}: build it (cmake --build build) "
                       "or set AFS_UPLOAD_WITH_CURL")

from werkzeug.serving import make_server  # noqa: E402
from werkzeug.wrappers import Request, Response  # noqa: E402


class Server:
    """A local form-parsing server; stops itself after `limit` seconds at the latest."""

    def __init__(self, limit=120):
        self.hits = []
        self.bodies = {}
        self.httpd = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.port = self.httpd.server_port
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.timer = threading.Timer(limit, self.httpd.shutdown)

    def __enter__(self):
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    @Request.application
    def app(self, request):
        data = request.get_data(cache=True)  # the raw body, byte for byte
        self.hits.append((request.path, request.headers.get("Content-Length"), len(data)))
        if request.path.startswith("/redirect"):
            # the body was received completely; curl must send it again
            return Response(status=307, headers={"Location": "/upload"})
        if request.path != "/upload":
            return Response("not found", status=404)
        self.bodies[len(self.hits)] = data
        fields = [[k, v] for k, v in request.form.items(multi=True)]
        files = []
        for k, f in request.files.items(multi=True):
            content = f.read()
            files.append({"name": k, "filename": f.filename, "content_type": f.content_type,
                          "size": len(content), "sha256": hashlib.sha256(content).hexdigest()})
        answer = {"content_type": request.headers.get("Content-Type"),
                  "content_length": request.headers.get("Content-Length"),
                  "received": len(data), "fields": fields, "files": files}
        return Response(json.dumps(answer), mimetype="application/json")


def run_upload(url, path, *fields):
    p = subprocess.run([UPLOAD, url, path] + list(fields), capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return json.loads(p.stdout), p.stderr.decode(errors="replace")


@pytest.fixture
def upload_file(tmp_path):
    def make(name, size, seed=1):
        data = bytes((i * 31 + seed + (i >> 11)) & 0xFF for i in range(size))
        path = tmp_path / name
        path.write_bytes(data)
        return str(path), data
    return make


def check_answer(answer, data, filename, content_type, fields):
    assert answer["fields"] == [list(f) for f in fields]
    assert len(answer["files"]) == 1
    f = answer["files"][0]
    assert f["name"] == "file"
    assert f["filename"] == filename
    assert f["content_type"] == content_type
    assert f["size"] == len(data)
    assert f["sha256"] == hashlib.sha256(data).hexdigest()
    assert answer["content_length"] == str(answer["received"])
    assert answer["content_type"].startswith("multipart/form-data; boundary=Boundary+")


def test_that_curl_uploads_a_file_and_fields(upload_file):
    path, data = upload_file("photo.png", 300000)
    fields = [("title", "Holiday"), ("tags[]", "sea"), ("tags[]", "sun"), ("note", "caf\u00e9 \u4e2d \U0001F600")]
    with Server() as srv:
        answer, err = run_upload(srv.url("/upload"), path, *["%s=%s" % f for f in fields])
    check_answer(answer, data, "photo.png", "image/png", fields)
    assert "seek" not in err


def test_that_curl_seeks_back_after_a_307_redirect(upload_file):
    path, data = upload_file("report.pdf", 3 * 1024 * 1024 + 17, seed=7)
    fields = [("a", "1"), ("empty", "")]
    with Server() as srv:
        answer, err = run_upload(srv.url("/redirect"), path, *["%s=%s" % f for f in fields])
        hits = list(srv.hits)
        bodies = dict(srv.bodies)
    check_answer(answer, data, "report.pdf", "application/pdf", fields)
    assert "seek to offset 0" in err
    # the body went out twice, complete both times
    assert [h[0] for h in hits] == ["/redirect", "/upload"]
    assert hits[0][1] == hits[1][1] == str(hits[0][2]) == str(hits[1][2])
    # and both times the same bytes, ending with the closing boundary
    (body,) = bodies.values()
    boundary = answer["content_type"].split("boundary=")[1]
    assert body.startswith(("--" + boundary + "\r\n").encode())
    assert body.endswith(("\r\n--" + boundary + "--\r\n").encode())
    assert data in body


def test_that_an_empty_file_and_an_unknown_extension_upload(upload_file):
    path, data = upload_file("blob.unknownext", 0)
    with Server() as srv:
        answer, _ = run_upload(srv.url("/redirect"), path)
    check_answer(answer, data, "blob.unknownext", "application/octet-stream", [])


def test_that_a_missing_file_fails_with_a_clear_message(tmp_path):
    p = subprocess.run([UPLOAD, "http://127.0.0.1:9/upload", str(tmp_path / "missing.bin")],
                       capture_output=True, timeout=60)
    assert p.returncode != 0
    assert b"AFS_E_FILE" in p.stderr and b"missing.bin" in p.stderr
