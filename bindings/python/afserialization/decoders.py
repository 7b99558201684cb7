"""The other direction: query strings, form bodies and multipart bodies as a server reads them.

* :func:`parse_query` / :func:`parse_form`: ``a[b][]=1`` names back into nested ``dict`` and
  ``list`` trees (``afs_query_parse`` / ``afs_form_body_parse``); a bare ``key`` is ``None``.
* :class:`MultipartParser`: a push parser for ASGI/WSGI servers; ``feed(data)`` returns the
  parts it finished.
* :func:`iter_multipart`: parts from a binary file object (a WSGI ``wsgi.input``, a socket's
  ``makefile('rb')``), one at a time, each body in memory up to ``spool_bytes`` and in a
  temporary file on disk beyond.

Limits (keywords of both multipart entry points, 0 or absent: the library's default):
``max_parts`` (1000), ``max_header_bytes`` (16384 per part), ``max_headers`` (32 per part),
``max_line_length`` (16384), ``max_total_bytes`` (unlimited), ``max_field_bytes`` (1 MiB for a
part without a filename). A limit raises :class:`~afserialization.LimitError`, malformed
framing or a body that ends early :class:`~afserialization.InvalidMultipartError`.
"""
from __future__ import annotations

import ctypes
import io
import tempfile
from ctypes import byref, c_void_p
from typing import IO, Any, Iterator, List, Optional, Tuple

from . import _ffi, _transfer
from ._ffi import lib
from ._handle import CHandle
from .values import Value

__all__ = ["parse_query", "parse_form", "Part", "MultipartParser", "iter_multipart"]

_STYLES = {"brackets": 0, "no_brackets": 1, "indexed": 2}
#: ``AFS_QUERY_*`` flags of ``afs_query_parse_options`` (the keywords below set them).
QUERY_KEEP_BAD_ESCAPES, QUERY_REFUSE_DEEP, QUERY_PLUS_AS_SPACE = 1, 2, 4
_KEEP_BAD_ESCAPES, _REFUSE_DEEP, _PLUS_AS_SPACE = QUERY_KEEP_BAD_ESCAPES, QUERY_REFUSE_DEEP, QUERY_PLUS_AS_SPACE


def _options(array_style: str, plus_as_space: bool, max_depth: int, max_params: int,
             max_length: int, keep_bad_escapes: bool, refuse_deep: bool) -> Any:
    if array_style not in _STYLES:
        raise ValueError(f"array_style must be one of {sorted(_STYLES)}, not {array_style!r}")
    o = _ffi.afs_query_parse_options()
    o.array_style = _STYLES[array_style]
    o.max_depth = max_depth
    o.max_params = max_params
    o.max_length = max_length
    o.flags = ((_KEEP_BAD_ESCAPES if keep_bad_escapes else 0) | (_REFUSE_DEEP if refuse_deep else 0)
               | (_PLUS_AS_SPACE if plus_as_space else 0))
    return o


def parse_query(text: "str | bytes", array_style: str = "brackets", plus_as_space: bool = False,
                max_depth: int = 5, max_params: int = 1000, max_length: int = 65536,
                keep_bad_escapes: bool = False, refuse_deep: bool = False) -> dict:
    """A query string (without the URL's ``?``: a leading ``?`` is part of the first name)
    as a ``dict`` of ``str``, ``None``,
    ``dict`` and ``list``, nested as AFNetworking writes names (see the header's section 16
    for the rules of each ``array_style`` and what comes back where the format is ambiguous).

    Raises:
        LimitError: more than ``max_params`` parameters, a name or value longer than
            ``max_length`` bytes, a name deeper than ``max_depth`` with ``refuse_deep``.
        InvalidArgumentError: a malformed escape (``%zz``), a name that conflicts with an
            earlier one (``a[]=1&a[x]=2``).
        InvalidUTF8Error: an escape that decodes to bytes that are not UTF-8.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    o = _options(array_style, plus_as_space, max_depth, max_params, max_length, keep_bad_escapes, refuse_deep)
    return _parsed(data, o)


def parse_form(body: "bytes | str", array_style: str = "brackets", plus_as_space: bool = True,
               max_depth: int = 5, max_params: int = 1000, max_length: int = 65536,
               keep_bad_escapes: bool = False, refuse_deep: bool = False) -> dict:
    """An ``application/x-www-form-urlencoded`` body: :func:`parse_query` with ``+`` as a
    space (always, as ``afs_form_body_parse``)."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)
    o = _options(array_style, True, max_depth, max_params, max_length, keep_bad_escapes, refuse_deep)
    return _parsed(data, o)


def _parsed(data: bytes, o: Any) -> dict:
    """The tree as one pickle (``afs_query_parse_pickle``: no C tree, one call) loaded by
    the safe unpickler; a form body is the same with ``AFS_QUERY_PLUS_AS_SPACE`` in ``o``."""
    length = ctypes.c_size_t()
    err = _ffi.afs_error()
    address = lib.raw.afs_query_parse_pickle(data, len(data), byref(o), byref(length), byref(err))
    if not address:
        raise err.to_exception()
    try:
        # Loaded in place (no copy of the pickle into bytes, none of its frame by BytesIO).
        reader = _BufferReader(memoryview((ctypes.c_char * length.value).from_address(address)).cast("B"))
        return _transfer.SafeUnpickler(reader).load()  # type: ignore[no-any-return]
    finally:
        lib.raw.afs_free(address)


class _BufferReader:
    """The file the unpickler reads a pickle from: slices of a memoryview (the library's
    buffer, freed once the load returns; the objects loaded are copies)."""

    def __init__(self, view: memoryview) -> None:
        self.view, self.pos = view, 0

    def read(self, n: int = -1) -> memoryview:
        end = len(self.view) if n < 0 else min(len(self.view), self.pos + n)
        piece = self.view[self.pos:end]
        self.pos = end
        return piece

    def readline(self) -> bytes:  # only the text protocols read lines; the library writes protocol 4
        raise ValueError("afserialization: the library's pickle has no text lines")


def _limits(kw: dict) -> Any:
    l = _ffi.afs_multipart_limits()
    for name in ("max_parts", "max_header_bytes", "max_headers", "max_line_length",
                 "max_total_bytes", "max_field_bytes"):
        v = kw.pop(name, None)
        if v is not None:
            setattr(l, name, v)
    if kw:
        raise TypeError(f"unknown multipart limit(s): {', '.join(sorted(kw))}")
    return l


def _text(raw: Optional[bytes]) -> Optional[str]:
    return None if raw is None else raw.decode("utf-8", "surrogateescape")


class Part:
    """One part: ``name`` and ``filename`` (``str`` or ``None``; decoded from
    Content-Disposition), ``headers`` (a list of ``(name, value)`` as sent, values decoded as
    latin-1 like ``http.client``), ``body`` (a binary file object at offset 0: an ``io.BytesIO``, or a temporary file on
    disk once the part passed ``spool_bytes``), ``size``."""

    __slots__ = ("index", "name", "filename", "headers", "body", "size")

    def __init__(self, index: int, name: Optional[str], filename: Optional[str],
                 headers: List[Tuple[str, str]], body: IO[bytes]) -> None:
        self.index = index
        self.name = name
        self.filename = filename
        self.headers = headers
        self.body = body
        self.size = 0

    def header(self, name: str) -> Optional[str]:
        """The first header called ``name`` (case-insensitive), or ``None``."""
        low = name.lower()
        for n, v in self.headers:
            if n.lower() == low:
                return v
        return None

    @property
    def content_type(self) -> Optional[str]:
        return self.header("Content-Type")

    def read(self) -> bytes:
        """The whole body (from the start)."""
        self.body.seek(0)
        data = self.body.read()
        self.body.seek(0)
        return data

    def __repr__(self) -> str:
        return f"<Part {self.index} name={self.name!r} filename={self.filename!r} size={self.size}>"


class MultipartParser:
    """A push parser for one multipart body (``afs_multipart_parser``).

    ``feed(data)`` returns the parts it finished (their bodies complete and rewound);
    ``close()`` checks that the closing boundary was seen and frees the parser. Usable as a
    context manager. ``content_type`` is the request's Content-Type (or the bare boundary).
    """

    def __init__(self, content_type: "str | bytes", spool_bytes: int = 1 << 20, **limits: Any) -> None:
        ct = content_type.encode("latin-1") if isinstance(content_type, str) else bytes(content_type)
        self._spool = spool_bytes
        self._done: List[Part] = []
        self._current: Optional[Part] = None
        self._write: Any = None
        self._size = 0
        handler = _ffi.afs_multipart_handler()
        # The callbacks stay alive with this object (C keeps their addresses).
        self._callbacks = (_ffi.PART_BEGIN_FN(self._on_begin), _ffi.PART_DATA_FN(self._on_data),
                           _ffi.PART_END_FN(self._on_end))
        handler.part_begin, handler.part_data, handler.part_end = self._callbacks
        ptr = lib.afs_multipart_parser_new(ct, byref(_limits(limits)), byref(handler), None)
        self._h = CHandle(ptr, lib.raw.afs_multipart_parser_free, "afs_multipart_parser")
        self._h.keepalive["callbacks"] = self._callbacks

    def _on_begin(self, ctx: Any, index: int, name: Any, filename: Any, names: Any, values: Any, count: int) -> int:
        try:
            headers = [(names[i].decode("latin-1"), values[i].decode("latin-1")) for i in range(count)]
            body = io.BytesIO()
            self._current = Part(index, _text(name), _text(filename), headers, body)
            self._size = 0
            self._write = body.write
            return 0
        except BaseException as e:  # stored, re-raised after the C call
            _ffi.store_exception(e)
            return 1

    def _on_data(self, ctx: Any, address: Any, n: int) -> int:
        try:
            self._size += n
            if self._size > self._spool and isinstance(self._current.body, io.BytesIO):
                # Past spool_bytes: move to a temporary file on disk (as SpooledTemporaryFile).
                disk = tempfile.TemporaryFile()
                disk.write(self._current.body.getbuffer())
                self._current.body = disk
                self._write = disk.write
            self._write(ctypes.string_at(address, n))
            return 0
        except BaseException as e:
            _ffi.store_exception(e)
            return 1

    def _on_end(self, ctx: Any) -> int:
        part = self._current
        if part is not None:
            part.size = part.body.tell()
            part.body.seek(0)
            self._done.append(part)
        self._current = None
        self._write = None
        return 0

    def feed(self, data: bytes) -> List[Part]:
        """Parses the next bytes of the body; returns the parts they finished."""
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        n = len(view)
        if isinstance(view, bytes):
            lib.afs_multipart_parser_feed(self._h.get(), view, n)
        else:
            buf = (ctypes.c_char * n).from_buffer_copy(view) if n else None
            lib.afs_multipart_parser_feed(self._h.get(), buf, n)
        done, self._done = self._done, []
        return done

    def close(self) -> List[Part]:
        """Ends the body (``afs_multipart_parser_finish``) and frees the parser; returns the
        parts finished last (none, normally). Raises InvalidMultipartError when the body
        ended before its closing boundary. Idempotent."""
        if self._h.closed:
            return []
        try:
            lib.afs_multipart_parser_finish(self._h.get())
            done, self._done = self._done, []
            return done
        finally:
            self._h.close()

    def __enter__(self) -> "MultipartParser":
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.close()
        elif not self._h.closed:
            self._h.close()


def iter_multipart(fileobj: IO[bytes], content_type: "str | bytes", spool_bytes: int = 1 << 20,
                   chunk_size: int = 1 << 16, **limits: Any) -> Iterator[Part]:
    """Yields the parts of the multipart body read from ``fileobj`` (to its end), each once
    complete; a part's ``body`` is spooled to disk above ``spool_bytes``. Memory stays
    bounded by the limits, ``chunk_size`` and ``spool_bytes`` whatever the body's size."""
    parser = MultipartParser(content_type, spool_bytes=spool_bytes, **limits)
    read = getattr(fileobj, "read1", None) or fileobj.read
    try:
        while True:
            chunk = read(chunk_size)
            if not chunk:
                break
            yield from parser.feed(chunk)
        yield from parser.close()
    finally:
        parser.close() if not parser._h.closed else None
