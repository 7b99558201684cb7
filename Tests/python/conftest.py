"""Shared pytest fixtures for Tests/python.

Generic on purpose: the bindings' tests (test_bindings_*.py) and the raw-ctypes multipart
tests (test_multipart_*.py, which load $AFSERIALIZATION_LIBRARY themselves) both use it.
Importing this file imports nothing of the package.

* ``bindings/python`` goes first on ``sys.path``, so ``import afserialization`` tests this
  source tree (it then loads $AFSERIALIZATION_LIBRARY, else the repository's build/lib);
  with ``AFS_TEST_INSTALLED_PACKAGE=1`` the installed package is tested instead.
* ``http_server`` (session): a local HTTP/1.1 server on 127.0.0.1 (werkzeug's threaded WSGI
  server and form parser) in a daemon thread, stopped at the end of the session. Routes:

  ``/echo``          JSON of what arrived: method, path, query, headers, body length and
                     SHA-256, and the parsed form (fields; files with filename, content
                     type, size, SHA-256, and the bytes of small ones in hex); bodies up
                     to 256 MiB.
  ``/drain``         reads the body in 1 MiB blocks without keeping it; JSON of the byte
                     count, the SHA-256 and the last 200 bytes (hex) — for huge uploads.
  ``/redirect307``   drains the body, then ``307`` to ``/echo`` (or ``?to=``).
  ``/status/<n>``    answers status n.

  ``server.log`` lists what each request delivered (method, path, body length, SHA-256),
  so a test can see that a redirected upload was sent twice, identically.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

REPO = Path(__file__).resolve().parents[2]
BINDINGS = REPO / "bindings" / "python"
# AFS_TEST_INSTALLED_PACKAGE=1 (scripts/test.sh): test the installed wheel instead.
if str(BINDINGS) not in sys.path and os.environ.get("AFS_TEST_INSTALLED_PACKAGE") != "1":
    sys.path.insert(0, str(BINDINGS))

MAX_ECHO_BODY = 256 << 20


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "slow: takes seconds (still part of the default run)")


class LocalServer:
    """A werkzeug server on 127.0.0.1:<free port> in a thread (see the module docstring)."""

    def __init__(self) -> None:
        self.log: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: Any = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str = "/echo") -> str:
        return self.base_url + path

    def start(self) -> None:
        from werkzeug.serving import WSGIRequestHandler, make_server

        class QuietHandler(WSGIRequestHandler):
            def log_request(self, *args: Any, **kwargs: Any) -> None:
                pass

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True,
                                   request_handler=QuietHandler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.1},
                                        name="afs-test-http-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=10)
            self._server = None

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()

    def _record(self, entry: Dict[str, Any]) -> None:
        with self._lock:
            self.log.append(entry)
            del self.log[:-1000]  # bounded

    # -- the WSGI application -----------------------------------------------------------

    def _app(self, environ: Dict[str, Any], start_response: Any) -> Iterator[bytes]:
        from werkzeug.wrappers import Request, Response

        request = Request(environ)
        path = request.path
        if path == "/drain" or path == "/redirect307":
            info = self._drain(request)
            self._record({"method": request.method, "path": path, **info})
            if path == "/redirect307":
                target = request.args.get("to", "/echo")
                response = Response(status=307, headers={"Location": target})
            else:
                response = Response(json.dumps(info), content_type="application/json")
        elif path.startswith("/status/"):
            request.get_data()
            response = Response(status=int(path.rsplit("/", 1)[1]))
        else:
            request.max_content_length = MAX_ECHO_BODY
            data = request.get_data(cache=True)
            info = {"method": request.method, "path": path,
                    "query": environ.get("QUERY_STRING", ""),
                    "headers": {k: v for k, v in request.headers.items()},
                    "body_length": len(data), "body_sha256": hashlib.sha256(data).hexdigest()}
            self._record({"method": request.method, "path": path,
                          "body_length": len(data), "body_sha256": info["body_sha256"]})
            if request.mimetype in ("multipart/form-data", "application/x-www-form-urlencoded"):
                info["form"] = {k: request.form.getlist(k) for k in request.form}
                files: Dict[str, List[Dict[str, Any]]] = {}
                for name, storage in request.files.items(multi=True):
                    content = storage.read()
                    files.setdefault(name, []).append({
                        "filename": storage.filename, "content_type": storage.content_type,
                        "size": len(content), "sha256": hashlib.sha256(content).hexdigest(),
                        "hex": content.hex() if len(content) <= 4096 else None})
                info["files"] = files
            response = Response(json.dumps(info), content_type="application/json")
            request.close()  # the parsed files' temporary storage
        return response(environ, start_response)

    @staticmethod
    def _drain(request: Any) -> Dict[str, Any]:
        stream = request.stream
        digest = hashlib.sha256()
        total = 0
        tail = b""
        while True:
            block = stream.read(1 << 20)
            if not block:
                break
            total += len(block)
            digest.update(block)
            tail = (tail + block)[-200:]
        return {"body_length": total, "body_sha256": digest.hexdigest(), "tail": tail.hex(),
                "content_length": request.headers.get("Content-Length")}


@pytest.fixture(scope="session")
def http_server() -> Iterator[LocalServer]:
    """The session's local HTTP server (see the module docstring)."""
    server = LocalServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def server(http_server: LocalServer) -> LocalServer:
    """``http_server`` with an empty log."""
    http_server.clear_log()
    return http_server
