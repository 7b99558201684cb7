"""``python3 -m afserialization`` (also ``afserialization``): the request HTTPie would
send for the same command line, serialized by AFSerialization and printed as it would go
on the wire. Nothing is sent (HTTPie's ``--offline``).

    [METHOD] URL [REQUEST_ITEM ...]

The request items are HTTPie's:

=====================  =============================================================
``name==value``        a query parameter (``name==@file``: the value from a file,
                       without its final newlines)
``name=value``         a data field (string)
``name:=json``         a data field with a raw JSON value (``n:=1``, ``tags:='["a"]'``)
``name=@file``         a data field with the text of a file
``name:=@file``        a data field with the JSON of a file
``name@file``          a file part (``name@file;type=image/png`` sets its type); needs
                       ``--form`` or ``--multipart``
``Header:value``       a header (``Header:`` removes a default header, ``Header;``
                       sends it empty, ``Header:@file`` takes the value from a file)
=====================  =============================================================

A backslash escapes a separator character (``a\\=b=c`` is the field ``a=b``). Data
fields are a JSON object by default, with HTTPie's nested keys (``user[name]=x``,
``tags[]=a``, ``list[1]=b``, ``[]=top-level array item``); ``-f/--form`` makes them a
form (multipart as soon as a file part is given), ``--multipart`` always multipart.
The method is optional: GET without data, POST with data (or a body on stdin or
``--raw``). A URL without a scheme gets ``http://``; ``:3000/x`` is
``http://localhost:3000/x``. A body piped on stdin is sent as is (``--ignore-stdin``
skips it; beside data fields it is an error, as in HTTPie).

Examples::

    python3 -m afserialization example.com/search q=='swift ctypes' page==2
    python3 -m afserialization POST example.com/users name=Zoë age:=3 'tags[]=admin'
    python3 -m afserialization -f example.com/upload title=cat photo@cat.jpg
"""
from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import sys
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Tuple, Union

from . import (HTTPRequestSerializer, JSONRequestSerializer, PropertyListRequestSerializer,
               Request, SerializationError)

__all__ = ["main", "parse_item", "render_body", "DIFFERENCES"]

# Longest first: at one position the longest separator wins (`:=@` over `:=` over `:`).
_SEPARATORS = (":=@", "==@", "=@", ":=", ":@", "==", "=", "@", ":", ";")
_METHOD = re.compile(r"^[A-Za-z]+$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_DATA = ("=", ":=", "=@", ":=@")
_JSON_ACCEPT = "application/json, */*;q=0.5"

#: Where the printed request differs from HTTPie's, header by header: AFNetworking's
#: choices, kept on purpose. ``--help`` prints them under "Differences from HTTPie:".
DIFFERENCES = (
    ("Content-Type", "forms: application/x-www-form-urlencoded without HTTPie's "
                     "'; charset=utf-8' (AFHTTPRequestSerializer's value); multipart: "
                     "AFNetworking's boundary (Boundary+ and 16 hex digits)"),
    ("User-Agent", "AFNetworking's User-Agent (application, system, AFSerialization "
                   "version) instead of HTTPie/x.y.z"),
    ("Accept-Language", "AFNetworking's default Accept-Language (en;q=1), which HTTPie "
                        "does not send"),
)
_NOT_HEADERS = ("Beyond headers, as AFNetworking does: query keys sorted and spaces as %20 "
                "(HTTPie: item order, +), compact JSON with keys as AFNetworking orders "
                "them, form fields sorted, fields before file parts. HTTPie's "
                "Accept-Encoding and Connection: keep-alive are its HTTP library's, not "
                "sent here. A header given twice is sent once, its values joined by ', '.")


class ItemError(ValueError):
    """A request item HTTPie would refuse too."""


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _split_item(item: str) -> Tuple[str, str, str]:
    """``(separator, key, value)`` at the first unescaped separator, the key's escapes kept
    (nested JSON keys read ``\\[`` themselves). At one position the longest wins."""
    i = 0
    while i < len(item):
        if item[i] == "\\":
            i += 2
            continue
        for sep in _SEPARATORS:
            if item.startswith(sep, i):
                return sep, item[:i], item[i + len(sep):]
        i += 1
    raise ItemError(f"item {item!r} is not a request item (name=value, name:=json, "
                    f"name==query, name@file, Header:value, …)")


def parse_item(item: str) -> Tuple[str, str, str]:
    """Splits an item at its first unescaped separator: ``(separator, key, value)``, the
    key with backslash escapes resolved (``a\\=b=c`` gives ``("=", "a=b", "c")``). At one
    position the longest separator wins."""
    sep, key, value = _split_item(item)
    return sep, _unescape(key), value


# --- HTTPie's nested JSON keys -------------------------------------------------------------

def _key_path(key: str, item: str) -> List[Union[str, int, None]]:
    """``user[name][]`` → ``["user", "name", None]`` (None: append; an int: an index).
    ``\\[`` and ``\\]`` are literal brackets."""
    path: List[Union[str, int, None]] = []
    i, n = 0, len(key)
    head = []
    while i < n and key[i] != "[":
        if key[i] == "\\" and i + 1 < n:
            i += 1
        head.append(key[i])
        i += 1
    if i == n:
        return ["".join(head)]
    if head:
        path.append("".join(head))
    elif i != 0:
        path.append("")
    while i < n:
        if key[i] != "[":
            raise ItemError(f"{item!r}: expected '[' at offset {i} of the key {key!r}")
        j = i + 1
        part = []
        while j < n and key[j] != "]":
            if key[j] == "\\" and j + 1 < n:
                j += 1
            part.append(key[j])
            j += 1
        if j == n:
            raise ItemError(f"{item!r}: unterminated '[' at offset {i} of the key {key!r}")
        text = "".join(part)
        if text == "":
            path.append(None)
        elif text.isdigit():
            path.append(int(text))
        else:
            path.append(text)
        i = j + 1
    if not path:
        raise ItemError(f"{item!r}: empty key")
    return path


def _kind(node: Any) -> str:
    return "array" if isinstance(node, list) else "object" if isinstance(node, dict) else "value"


def _set_nested(root: Any, path: List[Union[str, int, None]], value: Any, item: str) -> Any:
    """Sets ``value`` at ``path`` inside ``root`` (created on the way); returns the root."""
    first = path[0]
    if root is None:
        root = [] if first is None or isinstance(first, int) else {}
    node = root
    for depth, step in enumerate(path):
        last = depth == len(path) - 1
        nxt = None if last else path[depth + 1]
        fresh: Any = None if last else ([] if nxt is None or isinstance(nxt, int) else {})
        if isinstance(step, str):
            if not isinstance(node, dict):
                raise ItemError(f"{item!r}: the key {step!r} needs an object, the value there "
                                f"is an {_kind(node)}")
            if last:
                node[step] = value
            else:
                if step not in node or node[step] is None:
                    node[step] = fresh
                node = node[step]
        else:
            if not isinstance(node, list):
                raise ItemError(f"{item!r}: '[{'' if step is None else step}]' needs an array, "
                                f"the value there is an {_kind(node)}")
            if step is None:
                node.append(value if last else fresh)
                node = node[-1]
            else:
                while len(node) <= step:
                    node.append(None)
                if last:
                    node[step] = value
                else:
                    if node[step] is None:
                        node[step] = fresh
                    node = node[step]
    return root


# --- the request -------------------------------------------------------------------------

class _Items:
    def __init__(self) -> None:
        self.query: List[Tuple[str, str]] = []
        # (key with its escapes, value, separator, item): nested JSON keys read the escapes
        self.data: List[Tuple[str, Any, str, str]] = []
        self.files: List[Tuple[str, str, Optional[str]]] = []
        self.headers: List[Tuple[str, Optional[str]]] = []


def _read_file(path: str, item: str) -> str:
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ItemError(f"{item!r}: cannot read {path!r}: {e}") from None


def _parse_items(items: Sequence[str]) -> _Items:
    out = _Items()
    for item in items:
        sep, raw_key, value = _split_item(item)
        key = _unescape(raw_key)
        if sep == "==":
            out.query.append((key, _unescape(value)))
        elif sep == "==@":
            out.query.append((key, _read_file(_unescape(value), item).rstrip("\n")))
        elif sep == ":@":
            out.headers.append((key, _read_file(_unescape(value), item).rstrip("\n")))
        elif sep == "=":
            out.data.append((raw_key, _unescape(value), sep, item))
        elif sep == "=@":
            out.data.append((raw_key, _read_file(_unescape(value), item), sep, item))
        elif sep in (":=", ":=@"):
            text = _read_file(_unescape(value), item) if sep == ":=@" else value
            try:
                out.data.append((raw_key, json.loads(text), sep, item))
            except ValueError as e:
                raise ItemError(f"item {item!r}: the value is not JSON ({e})") from None
        elif sep == "@":
            path, _, mime = _unescape(value).partition(";type=")
            out.files.append((key, os.path.expanduser(path), mime or None))
        elif sep == ":":
            value = value.strip()
            out.headers.append((key, value if value else None))
        else:  # ";"
            if value.strip():
                raise ItemError(f"{item!r}: 'Header;' takes no value (it sends an empty header)")
            out.headers.append((key, ""))
    return out


def _url(url: str) -> str:
    """HTTPie's URL shorthands: ``:3000/x`` → ``http://localhost:3000/x``, no scheme →
    ``http://``."""
    if url.startswith(":"):
        rest = url[1:]
        m = re.match(r"^(\d*)(.*)$", rest)
        port, path = (m.group(1), m.group(2)) if m else ("", rest)
        url = "localhost" + (f":{port}" if port else "") + (path if path.startswith("/") or not path else "/" + path)
    if not _SCHEME.match(url):
        url = "http://" + url
    return url


def _method_and_url(positional: List[str]) -> Tuple[Optional[str], str, List[str]]:
    """``[METHOD] URL [ITEM ...]`` as HTTPie splits it: with two words or more, the first
    is the method when it is letters only (so ``localhost a=1`` reads ``localhost`` as a
    method, as HTTPie does: write ``http://localhost`` or ``:/``)."""
    if not positional:
        raise ItemError("a URL is needed")
    if len(positional) >= 2 and _METHOD.match(positional[0]):
        return positional[0].upper(), positional[1], positional[2:]
    return None, positional[0], positional[1:]


def _query_url(url: str, query: List[Tuple[str, str]]) -> str:
    """The URL with the ``==`` items appended as AFNetworking escapes them."""
    if not query:
        return url
    params: Dict[str, Any] = {}
    for k, v in query:
        if k in params:
            params[k] = (params[k] if isinstance(params[k], list) else [params[k]]) + [v]
        else:
            params[k] = v
    s = HTTPRequestSerializer()
    s.set_query_style("no_brackets")
    return s.request("GET", url, params).url


def _auth(args: argparse.Namespace) -> Optional[str]:
    if args.auth is None:
        return None
    kind = (args.auth_type or "basic").lower()
    if kind == "bearer":
        return f"Bearer {args.auth}"
    if kind != "basic":
        raise ItemError(f"--auth-type {args.auth_type!r}: basic or bearer")
    if ":" not in args.auth:
        raise ItemError("-a USER:PASSWORD (nothing is asked interactively here)")
    return "Basic " + base64.b64encode(args.auth.encode("utf-8")).decode("ascii")


def _stdin_body(args: argparse.Namespace) -> Optional[bytes]:
    if args.raw is not None:
        return args.raw.encode("utf-8")
    if args.ignore_stdin:
        return None
    stdin = sys.stdin
    try:
        if stdin is None or stdin.isatty():
            return None
        return stdin.buffer.read()
    except (OSError, ValueError, AttributeError):
        return None  # no usable stdin (closed, or a test harness's stand-in)


def _serializer(args: argparse.Namespace) -> HTTPRequestSerializer:
    s: HTTPRequestSerializer
    if args.plist:
        s = PropertyListRequestSerializer(format=args.plist)
    elif not (args.form or args.multipart):
        options = [o for o in (args.json_options or "").split(",") if o]
        names = {"pretty": "PRETTY_PRINTED", "sorted": "SORTED_KEYS",
                 "fragments": "FRAGMENTS_ALLOWED", "slashes": "WITHOUT_ESCAPING_SLASHES"}
        s = JSONRequestSerializer(options=[names.get(o, o) for o in options])
    else:
        s = HTTPRequestSerializer()
        s.set_query_style(args.array_style or "no_brackets", args.bool_style, args.space_style)
    s.uri_methods = []  # HTTPie sends data fields in the body, whatever the method
    return s


class Built:
    """The request to print: the library's request, plus a raw body (stdin or --raw) for
    a request the serializers do not make."""

    def __init__(self, request: Request, raw: Optional[bytes] = None) -> None:
        self.request = request
        self.raw = raw

    def __enter__(self) -> "Built":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.request.close()


def build_request(args: argparse.Namespace) -> Built:
    """The request the command line describes, as HTTPie would build it."""
    method, url, rest = _method_and_url(list(args.positional))
    items = _parse_items(rest)
    raw = _stdin_body(args)
    form = args.form or args.multipart
    if raw is not None and (items.data or items.files):
        raise ItemError("Request body (from stdin, --raw or a file) and request data "
                        "(key=value) cannot be mixed. Pass --ignore-stdin to let key/value "
                        "take priority.")
    if items.files and not form:
        raise ItemError("Invalid file fields (perhaps you meant --form?): "
                        + ", ".join(k for k, _, _ in items.files))
    has_data = bool(items.data or items.files or raw is not None)
    method = method or ("POST" if has_data else "GET")
    url = _query_url(_url(url), items.query)
    serializer = _serializer(args)
    json_mode = not form and not args.plist

    built: Built
    if raw is not None or not (items.data or items.files or args.multipart):
        headers = serializer.headers.copy()
        headers.pop("Content-Type", None)
        request = Request(method, url, headers)
        if json_mode and (raw is not None or args.json):
            request.headers["Content-Type"] = "application/json"
        elif form and not args.multipart:
            request.headers["Content-Type"] = "application/x-www-form-urlencoded"
        # HTTPie (requests) sends Content-Length: 0 without a body, except for these
        body = raw if raw is not None else (
            b"" if method not in ("GET", "HEAD", "OPTIONS") else None)
        if body is not None:  # the library frames it: Content-Length from the source's length
            request.set_body_stream(io.BytesIO(body), len(body))
        built = Built(request, body)
    elif args.multipart or items.files:
        with serializer.multipart_form(method, url, None) as mp:
            if args.boundary:
                mp.boundary = args.boundary
            for key, value, sep, item in items.data:
                mp.append_field(_unescape(key), value if isinstance(value, str) else json.dumps(value))
            for key, path, mime in items.files:
                mp.append_file(path, key, None, mime)
            built = Built(mp.finish())
    elif json_mode or args.plist:
        root: Any = None
        for key, value, sep, item in items.data:
            root = _set_nested(root, _key_path(key, item) if json_mode else [_unescape(key)],
                               value, item)
        built = Built(serializer.request(method, url, root))
    else:
        params: Dict[str, Any] = {}
        for raw_key, value, sep, item in items.data:
            key = _unescape(raw_key)
            text = value if isinstance(value, str) else json.dumps(value)
            if key in params:
                params[key] = (params[key] if isinstance(params[key], list) else [params[key]]) + [text]
            else:
                params[key] = text
        built = Built(serializer.request(method, url, params))

    request = built.request
    if json_mode and (has_data or args.json) and "Accept" not in request.headers:
        request.headers["Accept"] = _JSON_ACCEPT
    elif "Accept" not in request.headers:
        request.headers["Accept"] = "*/*"
    auth = _auth(args)
    if auth:
        request.headers["Authorization"] = auth
    given: Dict[str, List[str]] = {}
    removed = set()
    for name, value in items.headers:
        if value is None:
            removed.add(name.lower())
            given.pop(name.lower(), None)
            if name in request.headers:
                del request.headers[name]
        else:
            removed.discard(name.lower())
            given.setdefault(name.lower(), []).append(value)
            request.headers[name] = ", ".join(v for v in given[name.lower()] if v) \
                if len(given[name.lower()]) > 1 else value
    return built


# --- output ------------------------------------------------------------------------------

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


def write_request(built: Union[Built, Request], out: BinaryIO, tty: bool, what: str = "HB") -> None:
    """Writes the request head (``H``: the library's wire bytes, ``Request.head``) and the
    body (``B``) to ``out``. On a terminal, binary bodies and binary parts are replaced by
    a note and a body ends with a newline."""
    if isinstance(built, Request):
        built = Built(built)
    request = built.request
    if "H" in what:
        out.write(request.head)
    if "B" not in what:
        return
    if built.raw is not None:
        body: Optional[bytes] = built.raw
    else:
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
    return f"afserialization {__version__} (library {library_version} at {library_path})"


def differences_help() -> str:
    """The ``--help`` section: one header name per line, then one line of reason."""
    lines = ["Differences from HTTPie:"]
    for name, reason in DIFFERENCES:
        lines += [f"  {name}", f"      {reason}"]
    return "\n".join(lines) + "\n\n" + _NOT_HEADERS


def make_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, add_help=False, formatter_class=argparse.RawDescriptionHelpFormatter,
        usage=f"{prog} [options] [METHOD] URL [REQUEST_ITEM ...]",
        description="Print the HTTP request HTTPie would send for these arguments, built by "
                    "AFSerialization as AFNetworking builds it, as it would go on the wire "
                    "(nothing is sent, like `http --offline`).\n\nRequest items: "
                    "name==query, name=text, name:=json, name=@file (text), name:=@file "
                    "(JSON), name@file[;type=MIME] (file part), Header:value, Header: "
                    "(removes), Header; (empty), Header:@file; a backslash escapes a "
                    "separator.",
        epilog=differences_help())
    parser.add_argument("--help", action="help", help="show this help and exit")
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("positional", nargs="*", metavar="[METHOD] URL [REQUEST_ITEM ...]",
                        help=argparse.SUPPRESS)
    body = parser.add_mutually_exclusive_group()
    body.add_argument("-j", "--json", action="store_true",
                      help="JSON data (the default; with no data it still sets Accept and "
                           "Content-Type to JSON)")
    body.add_argument("-f", "--form", action="store_true",
                      help="data fields as a form (multipart with file parts)")
    body.add_argument("--multipart", action="store_true", help="multipart/form-data always")
    body.add_argument("--plist", choices=["xml", "binary"],
                      help="property-list body (AFPropertyListRequestSerializer)")
    parser.add_argument("--raw", metavar="BODY", help="the request body, as is")
    parser.add_argument("-I", "--ignore-stdin", action="store_true",
                        help="do not read a body from stdin")
    parser.add_argument("-a", "--auth", metavar="USER:PASSWORD|TOKEN", help="credentials")
    parser.add_argument("-A", "--auth-type", choices=["basic", "bearer"],
                        help="basic (default) or bearer")
    parser.add_argument("-p", "--print", dest="what", metavar="WHAT", default="HB",
                        help="H: request headers, B: request body (h and b, the response's, "
                             "print nothing: nothing is sent); default HB")
    parser.add_argument("--offline", action="store_true",
                        help="accepted for HTTPie compatibility (this never sends)")
    parser.add_argument("--boundary", help="multipart boundary (reproducible output)")
    parser.add_argument("--json-options", metavar="LIST",
                        help="comma-separated: pretty, sorted, fragments, slashes")
    parser.add_argument("--array-style", choices=["brackets", "no_brackets", "indexed"],
                        help="form arrays (default no_brackets, as HTTPie repeats keys)")
    parser.add_argument("--bool-style", choices=["numeric", "literal"])
    parser.add_argument("--space-style", choices=["percent", "plus"])
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns the exit status (141 when the reader of the output
    went away early, as for a program killed by SIGPIPE, without a traceback)."""
    prog = _prog()
    parser = make_parser(prog)
    # Options may follow the items, as in HTTPie: `POST url a=1 --form`.
    args = parser.parse_intermixed_args(argv)
    if set(args.what) - set("HBhbm"):
        parser.error(f"--print={args.what}: letters of H, B, h, b")
    if not args.positional:
        parser.error("a URL is needed: [METHOD] URL [REQUEST_ITEM ...]")
    try:
        with build_request(args) as built:
            out = sys.stdout.buffer
            write_request(built, out, sys.stdout.isatty(), args.what)
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
