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
import struct
import tempfile
from ctypes import byref, c_void_p
from typing import IO, Any, Iterator, List, Optional, Tuple

from . import _ffi, _transfer
from ._ffi import lib
from ._handle import CHandle
from .errors import Status, make_error

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
    """The tree as one pickle (``afs_query_parse_pickle``: no C tree, one call), loaded in
    place; a form body is the same with ``AFS_QUERY_PLUS_AS_SPACE`` in ``o``."""
    length = ctypes.c_size_t()
    err = _ffi.afs_error()
    address = lib.raw.afs_query_parse_pickle(data, len(data), byref(o), byref(length), byref(err))
    if not address:
        raise err.to_exception()
    return _transfer.load_owned(address, length.value, lib.raw.afs_free)  # type: ignore[no-any-return]


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


# afs_multipart_event flags (section 16) and layout (48 bytes, fixed widths).
_BEGIN, _END, _IN_ARENA, _HAS_NAME, _HAS_FILENAME = 1, 2, 4, 8, 16
_EVENT = struct.Struct("=IIQQQQQ")
assert _EVENT.size == ctypes.sizeof(_ffi.afs_multipart_event)
#: Records per afs_multipart_parser_feed_events call (48 bytes each).
_MAX_EVENTS = 1024
_feed_events = lib.untyped("afs_multipart_parser_feed_events")
#: Its address, for the compiled loop (``_speedups.multipart_feed``).
_FEED_EVENTS_AT = ctypes.cast(lib.raw.afs_multipart_parser_feed_events, c_void_p).value


_fast = _transfer.speedups


class _PartMethods:
    """One part: ``name`` and ``filename`` (``str`` or ``None``; decoded from
    Content-Disposition), ``headers`` (a list of ``(name, value)`` as sent, values decoded as
    latin-1 like ``http.client``), ``body`` (a binary file object at offset 0: an ``io.BytesIO``, or a temporary file on
    disk once the part passed ``spool_bytes``), ``size``.

    Parts made by the parser decode their name, filename and headers when first asked for
    them, and make their ``body`` object on first use (a small field costs one object)."""

    __slots__ = ()  # Part's fields: below (pure Python) or in C (_speedups.Part)

    def __init__(self, index: int, name: Optional[str] = None, filename: Optional[str] = None,
                 headers: Optional[List[Tuple[str, str]]] = None, body: Optional[IO[bytes]] = None) -> None:
        self.index = index
        self.size = 0
        self._head = None
        self._flags = 0
        self._decoded = (name, filename, list(headers or []))
        self._data = None
        self._file = body if body is not None else io.BytesIO()

    def _fields(self) -> Tuple[Optional[str], Optional[str], List[Tuple[str, str]]]:
        d = getattr(self, "_decoded", None)  # unset on parts the parser made
        if d is None:
            # The head block: name NUL filename NUL (header name NUL value NUL)*
            s = self._head.split(b"\0")
            f = self._flags
            d = self._decoded = (
                s[0].decode("utf-8", "surrogateescape") if f & _HAS_NAME else None,
                s[1].decode("utf-8", "surrogateescape") if f & _HAS_FILENAME else None,
                [(s[i].decode("latin-1"), s[i + 1].decode("latin-1")) for i in range(2, len(s) - 1, 2)])
            self._head = None
        return d

    @property
    def name(self) -> Optional[str]:
        return self._fields()[0]

    @property
    def filename(self) -> Optional[str]:
        return self._fields()[1]

    @property
    def headers(self) -> List[Tuple[str, str]]:
        return self._fields()[2]

    @property
    def body(self) -> IO[bytes]:
        f = getattr(self, "_file", None)  # unset on small parts the parser made
        if f is None:
            d = self._data
            f = self._file = io.BytesIO(d if d is not None else b"")
            self._data = None
        return f

    @body.setter
    def body(self, value: IO[bytes]) -> None:
        self._file = value
        self._data = None

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
        if getattr(self, "_file", None) is None:
            d = self._data
            return d if d is not None else b""
        self.body.seek(0)
        data = self.body.read()
        self.body.seek(0)
        return data

    def __repr__(self) -> str:
        return f"<Part {self.index} name={self.name!r} filename={self.filename!r} size={self.size}>"


_PART_FIELDS = ("index", "size", "_flags", "_head", "_decoded", "_data", "_file")
if _fast is not None:
    # The fields live in C (``_speedups.Part``, a type the garbage collector does not
    # track, so 10,000 fields cost no collection); the methods are the ones above.
    Part: Any = _fast.Part
    for _name, _attr in vars(_PartMethods).items():
        if _name not in ("__slots__", "__module__", "__qualname__", "__dict__", "__weakref__"):
            setattr(Part, _name, _attr)
    Part.__module__ = __name__
else:
    class Part(_PartMethods):  # type: ignore[no-redef]
        __doc__ = _PartMethods.__doc__
        __slots__ = _PART_FIELDS


class MultipartParser:
    """A push parser for one multipart body (``afs_multipart_parser``).

    ``feed(data)`` returns the parts it finished (their bodies complete and rewound);
    ``close()`` checks that the closing boundary was seen and frees the parser. Usable as a
    context manager. ``content_type`` is the request's Content-Type (or the bare boundary).

    One C call per piece fed (``afs_multipart_parser_feed_events``, a few more for a piece
    with thousands of parts), no callback: the events come back as records, and a part's
    data is a slice of the piece fed (or of the parser's arena for decoded data). The
    compiled module makes the calls and turns the records into parts
    (``_speedups.multipart_feed``); without it the same loop runs in Python
    (:meth:`_run`, :meth:`_records`).
    """

    def __init__(self, content_type: "str | bytes", spool_bytes: int = 1 << 20, **limits: Any) -> None:
        ct = content_type.encode("latin-1") if isinstance(content_type, str) else bytes(content_type)
        self._spool = spool_bytes
        self._done: List[Part] = []
        self._current: Optional[Part] = None
        #: Private hook (the benchmark's): when set, ``_sink(part, data)`` gets each piece of
        #: data instead of the part's body.
        self._sink: Any = None
        self._failed: Optional[BaseException] = None
        ptr = lib.afs_multipart_parser_new(ct, byref(_limits(limits)), None, None)
        self._h = CHandle(ptr, lib.raw.afs_multipart_parser_free, "afs_multipart_parser")
        self._ptr = ctypes.cast(ptr, c_void_p).value
        self._events = (_ffi.afs_multipart_event * _MAX_EVENTS)()
        self._view = memoryview(self._events).cast("B")
        self._events_at = ctypes.addressof(self._events)
        self._res = _ffi.afs_multipart_feed_result()
        self._rref = byref(self._res)
        self._res_at = ctypes.addressof(self._res)
        self._err = _ffi.afs_error()
        self._eref = byref(self._err)
        self._err_at = ctypes.addressof(self._err)

    def _run(self, data: bytes, n: int) -> None:
        """Feeds data (its length n; b"" and 0: what the parser held back), turning records
        into parts."""
        if self._failed is not None:
            raise make_error(Status.STATE, f"the multipart parser failed earlier: {self._failed!r}") from self._failed
        self._h.get()  # raises after close
        fast = _fast
        if fast is not None:
            # One call: the library's feed_events and the parts made of its records, in C.
            try:
                status = fast.multipart_feed(_FEED_EVENTS_AT, self._ptr, data,
                                             self._events_at, _MAX_EVENTS, self._res_at, self._err_at, Part,
                                             self._spool, self._sink, self._done, self._record)
            except BaseException as e:
                self._failed = e
                index = self._current.index if self._current is not None else len(self._done)
                raise make_error(Status.STATE, f"building part {index} failed: {e!r}") from e
            if status:
                raise self._err.to_exception(status)
            return
        address = ctypes.cast(ctypes.c_char_p(data), c_void_p).value if n else None
        res = self._res
        off = 0
        while True:
            status = _feed_events(self._ptr, address + off if n else None, n - off, self._events, _MAX_EVENTS,
                                  self._rref, self._eref)
            if status:
                raise self._err.to_exception(status)
            count = res.event_count
            if count:
                try:
                    self._records(data, off, count, res.arena, res.arena_length)
                except BaseException as e:
                    self._failed = e
                    index = self._current.index if self._current is not None else len(self._done)
                    raise make_error(Status.STATE, f"building part {index} failed: {e!r}") from e
            off += res.consumed
            if not res.more:
                return

    def _records(self, data: bytes, base: int, count: int, arena_at: Optional[int], arena_len: int) -> None:
        """Turns ``count`` records of the last call into parts: a whole small part in one
        record becomes a finished part at once, every other record goes to
        :meth:`_record` (``_speedups.multipart_feed`` does the same in C)."""
        arena = ctypes.string_at(arena_at, arena_len) if arena_len else b""
        append = self._done.append
        sink = self._sink
        spool = self._spool
        record = self._record
        new = _new_part
        P = Part
        for flags, hc, index, ho, hl, do, dl in _EVENT.iter_unpack(self._view[:count * 48]):
            if flags & 7 == 3 and dl <= spool:
                # A whole part in this record, its data in the chunk: the common small field.
                part = new(P)  # (_decoded and _file unset: see _fields and body)
                part.index = index
                part._head = arena[ho:ho + hl]
                part._flags = flags
                part.size = dl
                if sink is None:
                    do += base
                    part._data = data[do:do + dl]
                else:
                    part._data = None
                    if dl:
                        do += base
                        sink(part, data[do:do + dl])
                append(part)
                continue
            if not dl:
                piece = None
            elif flags & 4:
                piece = arena[do:do + dl]
            else:
                do += base
                piece = data[do:do + dl] if dl < 65536 else memoryview(data)[do:do + dl]
            record(flags, index, arena[ho:ho + hl] if flags & 1 else None, piece)

    def _record(self, flags: int, index: int, head: Optional[bytes], piece: "bytes | memoryview | None") -> None:
        """One record that is not a whole small part: a part begins (``head``), gets data
        (``piece``) or ends; the part in progress is ``self._current``."""
        part = self._current
        if flags & 1:
            part = self._current = _new_part(Part)
            part.index = index
            part.size = 0
            part._head = head
            part._flags = flags
            part._data = part._file = None
        if part is None:
            raise RuntimeError(f"record of part {index} has data or an end but the part never began (library bug)")
        if piece is not None:
            size = part.size + len(piece)
            part.size = size
            sink = self._sink
            if sink is not None:
                sink(part, piece)
            elif part._file is not None:
                part._file.write(piece)
            elif size > self._spool:
                # Past spool_bytes: a temporary file on disk (as SpooledTemporaryFile).
                disk = tempfile.TemporaryFile()
                d = part._data
                if d is not None:
                    disk.write(b"".join(d) if type(d) is list else d)
                    part._data = None
                disk.write(piece)
                part._file = disk
            else:
                d = part._data
                if d is None:
                    part._data = piece if type(piece) is bytes else bytes(piece)
                elif type(d) is list:
                    d.append(piece)
                else:
                    part._data = [d, piece]
        if flags & 2:
            d = part._data
            if type(d) is list:
                part._data = b"".join(d)
            elif d is not None and type(d) is not bytes:
                part._data = bytes(d)
            if part._file is not None:
                part._file.seek(0)
            self._done.append(part)
            self._current = None

    def feed(self, data: bytes) -> List[Part]:
        """Parses the next bytes of the body; returns the parts they finished."""
        if type(data) is not bytes:
            data = bytes(data)
        if data:
            self._run(data, len(data))
        done, self._done = self._done, []
        return done

    def close(self) -> List[Part]:
        """Ends the body (``afs_multipart_parser_finish``) and frees the parser; returns the
        parts finished last (none, normally). Raises InvalidMultipartError when the body
        ended before its closing boundary. Idempotent."""
        if self._h.closed:
            return []
        try:
            self._run(b"", 0)  # what the parser held back
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


_new_part = Part.__new__


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
