"""The main job, end to end: ``python3 scripts/demo.py`` (or ``python3 -m afserialization.demo``).

With no arguments it

1. starts a local HTTP server on 127.0.0.1 (werkzeug, with its form parser) in a thread;
2. prints a GET with a query, a form POST, a JSON POST and a property-list POST as they go
   on the wire, sends each to the server and shows what the server parsed;
3. generates a file and uploads it in a multipart form through the library: from C with
   libcurl (``examples/upload_with_curl.c``, compiled with gcc when it is not built yet) and
   from Python with ``requests``, with a progress bar, and shows what the server parsed
   (fields, and each file's name, type, size and SHA-256 checked against the original);
4. stops the server.

``--url BASE`` sends to another server instead of starting one (it should answer like the
embedded one: JSON describing what it parsed). Needs ``requests`` and ``werkzeug``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import plistlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import (HTTPRequestSerializer, JSONRequestSerializer, PropertyListRequestSerializer,
               Request, _ffi)
from .__main__ import render_body

MIB = 1 << 20
REPO = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------------------
# The embedded server


class DemoServer:
    """werkzeug's threaded server on 127.0.0.1 answering every request with JSON of what it
    parsed: query, form fields, files (name, type, size, SHA-256), JSON or plist bodies."""

    def __init__(self) -> None:
        from werkzeug.serving import WSGIRequestHandler, make_server

        class Quiet(WSGIRequestHandler):
            def log_request(self, *args: Any, **kwargs: Any) -> None:
                pass

        import logging
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True, request_handler=Quiet)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       kwargs={"poll_interval": 0.1})

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "DemoServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    @staticmethod
    def app(environ: Dict[str, Any], start_response: Any) -> Any:
        from werkzeug.wrappers import Request as WRequest, Response
        request = WRequest(environ)
        parsed: Dict[str, Any] = {"method": request.method, "path": request.path}
        if request.query_string:
            parsed["query"] = {k: request.args.getlist(k) for k in request.args}
        mimetype = request.mimetype
        if mimetype in ("multipart/form-data", "application/x-www-form-urlencoded"):
            parsed["form"] = {k: request.form.getlist(k) for k in request.form}
            files = []
            for name, storage in request.files.items(multi=True):
                digest, size = hashlib.sha256(), 0
                while True:
                    block = storage.stream.read(MIB)
                    if not block:
                        break
                    digest.update(block)
                    size += len(block)
                files.append({"name": name, "filename": storage.filename,
                              "content_type": storage.content_type, "size": size,
                              "sha256": digest.hexdigest()})
            if files:
                parsed["files"] = files
        else:
            data = request.get_data()
            try:
                if mimetype == "application/json":
                    parsed["json"] = json.loads(data)
                elif mimetype == "application/x-plist":
                    value = plistlib.loads(data)
                    parsed["plist"] = json.loads(json.dumps(value, default=repr))
                elif data:
                    parsed["body_bytes"] = len(data)
            except ValueError as e:
                parsed["error"] = f"cannot parse the {len(data)}-byte {mimetype} body: {e}"
        parsed["content_length"] = request.headers.get("Content-Length")
        request.close()  # the parsed files' temporary storage
        return Response(json.dumps(parsed), content_type="application/json")(
            environ, start_response)


# --------------------------------------------------------------------------------------
# Output helpers


#: (check, passed) in the order they ran: the demo's last line gives the verdict of each.
CHECKS: List[Tuple[str, bool]] = []


def record(name: str, ok: bool) -> bool:
    CHECKS.append((name, ok))
    return ok


def verdict() -> str:
    """The last line: every check with its result, then the count."""
    failed = [name for name, ok in CHECKS if not ok]
    parts = "; ".join(f"{name}: {'ok' if ok else 'FAILED'}" for name, ok in CHECKS)
    total = f"{len(CHECKS) - len(failed)}/{len(CHECKS)} checks passed"
    return f"verdict: {parts} — {total}" if CHECKS else "verdict: no check ran"


def heading(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}")


def show_wire(request: Request, body: Optional[bytes]) -> None:
    head = request.wire_head().decode("utf-8", "replace")
    print("\n".join("    " + line for line in head.rstrip("\r\n").split("\r\n")))
    if body:
        shown = render_body(body, request.headers.get("Content-Type", ""), True)
        if len(shown) > 1500:
            shown = shown[:1500] + f"... [{len(shown) - 1500} more bytes]".encode()
        print("    ")
        text = shown.decode("utf-8", "replace").replace("\r\n", "\n")
        print("\n".join("    " + line for line in text.rstrip("\n").split("\n")))


def show_parsed(parsed: Any) -> None:
    print("  server parsed:")
    for key, value in parsed.items():
        if key == "files":
            for f in value:
                print(f"    file {f['name']!r}: filename {f['filename']!r}, "
                      f"{f['content_type']}, {f['size']} bytes, SHA-256 {f['sha256'][:16]}...")
        elif value is not None:
            print(f"    {key}: {json.dumps(value, ensure_ascii=False)}")


class ProgressBar:
    """A one-line progress bar on stderr (milestones only when stderr is not a terminal)."""

    def __init__(self, label: str, width: int = 30) -> None:
        self.label, self.width = label, width
        self.start = time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.last_shown = -1

    def __call__(self, sent: int, total: int) -> None:
        fraction = sent / total if total else 1.0
        percent = int(fraction * 100)
        if not self.tty and percent // 25 == self.last_shown // 25 and sent != total:
            return
        if self.tty and percent == self.last_shown and sent != total:
            return
        self.last_shown = percent
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        filled = int(fraction * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        line = (f"  {self.label} [{bar}] {percent:3d}% {sent / MIB:7.1f}/{total / MIB:.1f} MiB "
                f"{sent / elapsed / MIB:7.1f} MiB/s")
        sys.stderr.write(("\r" + line) if self.tty else (line + "\n"))
        if self.tty and sent == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


# --------------------------------------------------------------------------------------
# The steps


def plain_requests(base: str) -> None:
    import requests
    http = HTTPRequestSerializer()
    http.headers["X-Demo"] = "afserialization"
    sent_form = {"name": "Zoë", "filters": {"min": 1, "max": 9}}
    sent_json = {"name": "Zoë", "admin": False, "ids": [1, 2], "url": "http://x/y"}
    sent_plist = {"title": "notes", "count": 3, "ratio": 0.5}
    cases = [
        ("GET with a query string (AFHTTPRequestSerializer)", "GET query",
         http.request("GET", base + "/search", {"q": "swift & python", "page": 2,
                                                "tags": ["a b", "c"], "exact": True}),
         lambda p: p.get("query", {}).get("q") == ["swift & python"]
         and p["query"].get("tags[]") == ["a b", "c"]),
        ("POST with a form body (AFHTTPRequestSerializer)", "form POST",
         http.request("POST", base + "/form", sent_form),
         lambda p: p.get("form", {}).get("name") == ["Zoë"]
         and p["form"].get("filters[max]") == ["9"]),
        ("POST with a JSON body (AFJSONRequestSerializer)", "JSON POST",
         JSONRequestSerializer().request("POST", base + "/json", sent_json),
         lambda p: p.get("json") == sent_json),
        ("PUT with a property-list body (AFPropertyListRequestSerializer, XML)", "plist PUT",
         PropertyListRequestSerializer().request("PUT", base + "/plist", sent_plist),
         lambda p: p.get("plist") == sent_plist),
    ]
    for title, name, request, check in cases:
        with request:
            heading(title)
            body = request.body
            show_wire(request, body)
            response = requests.request(request.method, request.url, data=body,
                                        headers=request.headers, timeout=30)
            response.raise_for_status()
            parsed = response.json()
            show_parsed(parsed)
            ok = record(name, check(parsed))
            print(f"  check: the server parsed what was sent: {'yes' if ok else 'NO'}")


def make_file(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    block = bytes(range(256)) * 4096  # 1 MiB
    with open(path, "wb") as f:
        left = size
        while left:
            chunk = block[:min(left, len(block))]
            f.write(chunk)
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def check_upload(name: str, parsed: Dict[str, Any], size: int, digest: str) -> None:
    files = parsed.get("files", [])
    ok = record(name, any(f["size"] == size and f["sha256"] == digest for f in files))
    print(f"  check: the server received the {size / MIB:.0f} MiB file intact "
          f"(SHA-256 {digest[:16]}...): {'yes' if ok else 'NO'}")


def python_upload(base: str, path: Path, size: int, digest: str) -> None:
    import requests
    heading("Multipart upload from Python with requests (body streamed by the library)")
    serializer = HTTPRequestSerializer()
    with serializer.multipart_form("POST", base + "/upload",
                                   {"title": "holiday", "tags": ["sea", "sun"]}) as form:
        form.append_file(path, "file")
        form.append_data(b'{"camera": "demo"}', "meta", "meta.json", "application/json")
        with form.finish() as request:
            stream = request.body_stream
            preview = stream.read(2000)
            stream.seek(0)
            head = request.wire_head()
            print("\n".join("    " + l for l in head.decode().rstrip("\r\n").split("\r\n")))
            print("    ")
            lines = preview.decode("utf-8", "replace").split("\r\n")
            end = next(i for i, line in enumerate(lines) if 'filename="' + path.name in line)
            for line in lines[:end + 3]:  # the fields and the file part's headers
                print("    " + line)
            print(f"    [{size} bytes of {path.name}, read from disk while sending]")
            print(f"    ... ({len(stream)} bytes in all)")
            print("  code:  requests.post(request.url, data=request.body_stream, "
                  "headers=request.headers)")
            stream.set_progress(ProgressBar("requests"))
            response = requests.post(request.url, data=stream, headers=request.headers,
                                     timeout=300)
            response.raise_for_status()
    parsed = response.json()
    show_parsed(parsed)
    check_upload("Python upload", parsed, size, digest)


def curl_program(work: Path) -> Optional[List[str]]:
    """The C example's binary: $AFS_UPLOAD_WITH_CURL, build/upload_with_curl, or compiled
    here from examples/upload_with_curl.c with gcc and libcurl's headers."""
    for candidate in (os.environ.get("AFS_UPLOAD_WITH_CURL"), str(REPO / "build" / "upload_with_curl")):
        if candidate and os.access(candidate, os.X_OK):
            return [candidate]
    source = REPO / "examples" / "upload_with_curl.c"
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not source.exists():
        print(f"  skipped: {source} is not in this checkout")
        return None
    if not gcc:
        print("  skipped: no gcc to compile examples/upload_with_curl.c")
        return None
    library = Path(_ffi.library_path).resolve()
    binary = work / "upload_with_curl"
    command = [gcc, "-O2", "-std=c99", "-o", str(binary), str(source), f"-I{REPO / 'include'}",
               str(library), f"-Wl,-rpath,{library.parent}", "-lcurl"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print("  skipped: could not compile examples/upload_with_curl.c (libcurl headers: "
              "apt-get install libcurl4-openssl-dev):")
        print("    " + result.stderr.strip().replace("\n", "\n    ")[:800])
        return None
    print(f"  compiled: {' '.join(command)}")
    return [str(binary)]


def c_upload(base: str, path: Path, size: int, digest: str, work: Path) -> None:
    heading("Multipart upload from C with libcurl (examples/upload_with_curl.c)")
    program = curl_program(work)
    if program is None:
        return
    command = program + [base + "/upload", str(path), "title=holiday", "tags[]=sea"]
    print(f"  run: {' '.join(command)}")
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    output = result.stdout.strip()
    head = [line[2:] for line in result.stderr.splitlines() if line.startswith("> ")]
    rest = [line for line in result.stderr.splitlines() if not line.startswith("> ")]
    if head:
        print("  the request head libcurl sent (headers from the library, body pulled through "
              "afs_body_stream_read):")
        print("\n".join("    " + line for line in head))
    if rest:
        print("  stderr: " + "\n          ".join(rest)[:2000])
    if result.returncode != 0:
        record("C upload", False)
        print(f"  upload_with_curl failed with status {result.returncode}")
        return
    parsed = None
    start = output.find("{")
    if start >= 0:
        try:
            parsed, _ = json.JSONDecoder().raw_decode(output[start:])
        except ValueError:
            parsed = None
    if output[:start].strip():
        print("  output: " + output[:start].strip().replace("\n", "\n          "))
    if parsed is not None:
        show_parsed(parsed)
        check_upload("C upload", parsed, size, digest)
    else:
        record("C upload", False)
        print("  output: " + output[:2000])


def c_socket_get(base: str) -> None:
    """examples/get_with_socket.c: two GETs written with afs_request_write_to_fd on one
    socket, each answer read with afs_response_reader."""
    heading("C on a raw socket: afs_request_write_to_fd + afs_response_reader (examples/get_with_socket.c)")
    program = None
    for candidate in (os.environ.get("AFS_GET_WITH_SOCKET"), str(REPO / "build" / "get_with_socket")):
        if candidate and os.access(candidate, os.X_OK):
            program = candidate
            break
    if program is None:
        print("  skipped: build/get_with_socket is not built (cmake --build build --target get_with_socket)")
        return
    urls = [base + "/search?q=raw+socket", base + "/json"]
    result = subprocess.run([program] + urls, capture_output=True, text=True, timeout=60)
    print("\n".join("    " + line for line in result.stdout.rstrip("\n").split("\n")))
    if result.returncode != 0:
        print("  FAILED: " + result.stderr.strip()[:1000])
    print("  (werkzeug's development server answers Connection: close, so the example reconnects;"
          " a keep-alive server gets both requests on one connection)")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=64, help="size of the uploaded file")
    parser.add_argument("--url", help="send to this server instead of an embedded one")
    args = parser.parse_args(argv)
    try:
        import requests  # noqa: F401
        import werkzeug  # noqa: F401
    except ImportError as e:
        print(f"demo: needs requests and werkzeug ({e}); pip install requests werkzeug",
              file=sys.stderr)
        return 2
    from . import library_version
    print(f"AFSerialization {library_version} — library {_ffi.library_path}")
    server = None if args.url else DemoServer()
    if server is not None:
        server.__enter__()
        print(f"local server: {server.url} (werkzeug, form parser), stopped at the end")
    base = args.url.rstrip("/") if args.url else server.url  # type: ignore[union-attr]
    work = Path(tempfile.mkdtemp(prefix="afs-demo-"))
    try:
        plain_requests(base)
        c_socket_get(base)
        size = args.size_mib * MIB
        path = work / "holiday-video.bin"
        digest = make_file(path, size)
        print(f"\ngenerated {path} ({args.size_mib} MiB)")
        c_upload(base, path, size, digest, work)
        python_upload(base, path, size, digest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if server is not None:
            server.__exit__(None, None, None)
            print("\nlocal server stopped")
        print(verdict())
    return 0 if CHECKS and all(ok for _, ok in CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
