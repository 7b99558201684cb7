"""``python3 -m afserialization``: print a request as it would go on the wire.

Like HTTPie's ``--offline`` mode: nothing is sent. Items after the URL:

==================  ==================================================================
``name=value``      a parameter (string)
``name:=json``      a parameter with a JSON value (``n:=1``, ``tags:='["a","b"]'``)
``name@path``       a file part (makes the request multipart)
``Header:value``    a request header
==================  ==================================================================

Examples::

    python3 -m afserialization GET https://example.com/search q='swift ctypes' page:=2
    python3 -m afserialization --json POST https://example.com/items name=pen price:=1.5
    python3 -m afserialization POST https://example.com/upload title=cat photo@cat.jpg
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Tuple

from . import (HTTPRequestSerializer, JSONRequestSerializer, PropertyListRequestSerializer,
               Request, SerializationError)

__all__ = ["main", "parse_item", "render_body"]

_SEPARATORS = (":=", "=", "@", ":")


def parse_item(item: str) -> Tuple[str, str, str]:
    """Splits an item at its first separator: ``(kind, name, value)`` with kind one of
    ``":="``, ``"="``, ``"@"``, ``":"`` (at the same position ``:=`` wins over ``:``)."""
    best: Optional[Tuple[int, str]] = None
    for sep in _SEPARATORS:
        i = item.find(sep)
        if i > 0 and (best is None or i < best[0]):
            best = (i, sep)
    if best is None:
        raise ValueError(f"item {item!r} has no separator (=, :=, @ or :)")
    i, sep = best
    return sep, item[:i], item[i + len(sep):]


def _serializer(args: argparse.Namespace) -> HTTPRequestSerializer:
    if args.json:
        options = [o for o in (args.json_options or "").split(",") if o]
        names = {"pretty": "PRETTY_PRINTED", "sorted": "SORTED_KEYS",
                 "fragments": "FRAGMENTS_ALLOWED", "slashes": "WITHOUT_ESCAPING_SLASHES"}
        return JSONRequestSerializer(options=[names.get(o, o) for o in options])
    if args.plist:
        return PropertyListRequestSerializer(format=args.plist)
    return HTTPRequestSerializer()


def build_request(args: argparse.Namespace) -> Request:
    """The request the command line describes."""
    serializer = _serializer(args)
    if args.array_style or args.bool_style or args.space_style:
        serializer.set_query_style(args.array_style, args.bool_style, args.space_style)
    if args.auth:
        user, _, password = args.auth.partition(":")
        serializer.set_basic_auth(user, password)
    params: Dict[str, Any] = {}
    files: List[Tuple[str, str]] = []
    headers: List[Tuple[str, str]] = []
    for item in args.items:
        sep, name, value = parse_item(item)
        if sep == "=":
            params[name] = value
        elif sep == ":=":
            try:
                params[name] = json.loads(value)
            except ValueError as e:
                raise ValueError(f"item {item!r}: the value after ':=' is not JSON ({e})") from None
        elif sep == "@":
            files.append((name, os.path.expanduser(value)))
        else:
            headers.append((name, value.strip()))
    for name, value in headers:
        serializer.headers[name] = value
    if files or args.multipart:
        with serializer.multipart_form(args.method, args.url, params or None) as form:
            if args.boundary:
                form.boundary = args.boundary
            for name, path in files:
                form.append_file(path, name)
            return form.finish()
    return serializer.request(args.method, args.url, params or None)


def render_body(body: bytes, content_type: str, tty: bool) -> bytes:
    """The body for display: raw bytes for a pipe; on a terminal, binary content (NUL or
    invalid UTF-8) is replaced by a note — per part for a multipart body."""
    if not tty or _is_text(body):
        return body
    m = re.search(r'boundary="?([^";]+)"?', content_type or "")
    if not m or not content_type.lower().startswith("multipart/"):
        return f"[binary body: {len(body)} bytes not shown on a terminal]".encode()
    delimiter = b"--" + m.group(1).encode()
    out = []
    for chunk in body.split(delimiter):
        head, sep, part = chunk.partition(b"\r\n\r\n")
        if sep and not _is_text(part):
            tail = b"\r\n" if part.endswith(b"\r\n") else b""
            chunk = head + sep + f"[{len(part) - len(tail)} bytes of binary data]".encode() + tail
        out.append(chunk)
    return delimiter.join(out)


def _is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def write_request(request: Request, out: BinaryIO, tty: bool) -> None:
    """Writes the request line, headers and body to ``out``; the head is the library's
    wire bytes (``Request.head``: what ``write_to`` sends). On a terminal, binary bodies and
    binary parts are replaced by a note and a body ends with a newline."""
    out.write(request.head)
    stream = request.body_stream
    body = stream.readall() if stream is not None else request.body
    if body:
        out.write(render_body(body, request.headers.get("Content-Type", ""), tty))
        if tty and not body.endswith(b"\n"):
            out.write(b"\n")


def _prog() -> str:
    """The program name as invoked: ``python3 -m afserialization`` for ``-m``, else the
    script's name."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if not argv0 or os.path.basename(argv0) in ("__main__.py", "-c", "-m"):
        return f"{os.path.basename(sys.executable) or 'python3'} -m afserialization"
    return os.path.basename(argv0)


def _version() -> str:
    from . import __version__, library_path, library_version
    return f"afserialization {__version__} (library {library_version()} at {library_path})"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns the exit status (141 when the reader of the output
    went away early, as for a program killed by SIGPIPE, without a traceback)."""
    prog = _prog()
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Print an HTTP request as AFSerialization builds it, as it would go on "
                    "the wire (nothing is sent).",
        epilog="items: name=value (parameter), name:=json (JSON parameter), name@path (file "
               "part), Header:value (header). In a source checkout, scripts/demo.sh runs the "
               "end-to-end upload demo.")
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("method", help="HTTP method, e.g. GET or POST")
    parser.add_argument("url", help="absolute URL")
    parser.add_argument("items", nargs="*", help="name=value, name:=json, name@path, Header:value")
    body = parser.add_mutually_exclusive_group()
    body.add_argument("--json", action="store_true", help="JSON body (AFJSONRequestSerializer)")
    body.add_argument("--plist", choices=["xml", "binary"],
                      help="property-list body (AFPropertyListRequestSerializer)")
    body.add_argument("--multipart", action="store_true",
                      help="multipart/form-data even without files")
    parser.add_argument("--json-options", metavar="LIST",
                        help="comma-separated: pretty, sorted, fragments, slashes")
    parser.add_argument("--auth", metavar="USER:PASSWORD", help="basic authorization")
    parser.add_argument("--boundary", help="multipart boundary (reproducible output)")
    parser.add_argument("--array-style", choices=["brackets", "no_brackets", "indexed"])
    parser.add_argument("--bool-style", choices=["numeric", "literal"])
    parser.add_argument("--space-style", choices=["percent", "plus"])
    # Options may follow the items, as in HTTPie: `POST url a=1 --json`.
    args = parser.parse_intermixed_args(argv)
    try:
        with build_request(args) as request:
            out = sys.stdout.buffer
            write_request(request, out, sys.stdout.isatty())
            out.flush()
    except BrokenPipeError:
        # `| head`: the reader is gone. Point stdout at /dev/null so that the interpreter's
        # final flush does not fail again, and exit quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 141
    except (SerializationError, ValueError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
