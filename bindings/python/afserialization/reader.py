"""Reading HTTP/1.1 responses off the wire: :class:`ResponseReader` over
``afs_response_reader`` (a sans-I/O reader: bytes in, status, headers, decoded body and
trailers out), and :func:`read_response`, which reads one response from a socket::

    import socket
    from afserialization import ResponseReader, read_response

    sock = socket.create_connection(("127.0.0.1", 8000))
    sock.sendall(b"GET / HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAccept-Encoding: gzip, br, zstd\\r\\n\\r\\n")
    r = read_response(sock, "GET")
    print(r.status, r.reason, r.headers, r.text())

    rd = ResponseReader("GET")          # or drive it yourself
    while rd.state != ReaderState.DONE:
        data = sock.recv(65536)
        if not data:
            rd.eof()
            break
        used = rd.feed(data)            # data[used:] belongs to the next response

Header values are the bytes as sent decoded as latin-1, like :mod:`http.client`. Framing
errors raise :class:`~afserialization.BadResponseError`, limits
:class:`~afserialization.LimitError` (see the C header, section 14, for the rules).
"""
from __future__ import annotations

import enum
from ctypes import byref, c_char_p, c_size_t, c_void_p, cast, string_at
from typing import Any, List, Optional, Tuple

from . import _ffi
from ._ffi import c_value_p, lib
from ._handle import CHandle, HandleOwner
from .errors import Status
from .values import tree_to_python

__all__ = ["ReaderState", "ResponseReader", "read_response"]

_LIMIT_NAMES = ("max_head_bytes", "max_headers", "max_line_length", "max_chunk_extension")


class ReaderState(enum.IntEnum):
    """``afs_reader_state``."""
    HEAD = 0
    BODY = 1
    DONE = 2


def _method_arg(method: str) -> bytes:
    if not isinstance(method, str):
        raise TypeError(f"method must be str, not {type(method).__name__}")
    return method.encode("utf-8")


def _latin1(b: Optional[bytes]) -> str:
    return b.decode("latin-1") if b is not None else ""


class ResponseReader(HandleOwner):
    """``afs_response_reader``: feed it what the connection delivers.

    Args:
        method: the request's method (``HEAD`` responses have no body).
        decode_content: decode ``Content-Encoding`` (gzip, deflate, br, zstd).
        max_decoded_bytes: the decoding limit (default: 64 x the coded bytes received +
            1 MiB).
        **limits: ``max_head_bytes``, ``max_headers``, ``max_line_length``,
            ``max_chunk_extension`` (see ``afs_reader_limits``).
    """

    __slots__ = ("_h", "leftover", "_used", "_err", "_uref", "_eref", "_ptr")

    def __init__(self, method: str = "GET", decode_content: bool = True,
                 max_decoded_bytes: Optional[int] = None, **limits: int) -> None:
        unknown = set(limits) - set(_LIMIT_NAMES)
        if unknown:
            raise TypeError(f"unknown limit(s): {', '.join(sorted(unknown))}")
        self._h = CHandle(lib.afs_response_reader_new(_method_arg(method)),
                          lib.raw.afs_response_reader_free, "ResponseReader")
        #: Bytes read past the end of the response by :func:`read_response`.
        self.leftover = b""
        ptr = self._h.get()
        # Scratch for the hot calls (feed, state, reset): no objects made per call.
        self._used = c_size_t(0)
        self._err = _ffi.afs_error()
        self._uref = byref(self._used)
        self._eref = byref(self._err)
        self._ptr = cast(ptr, c_void_p).value
        lib.afs_response_reader_set_decodes_content(ptr, bool(decode_content))
        if max_decoded_bytes is not None:
            if max_decoded_bytes < 1:
                raise ValueError("max_decoded_bytes must be at least 1")
            lib.afs_response_reader_set_max_decoded_bytes(ptr, int(max_decoded_bytes))
        if limits:
            lim = _ffi.afs_reader_limits(*(int(limits.get(n, 0)) for n in _LIMIT_NAMES))
            lib.afs_response_reader_set_limits(ptr, byref(lim))

    def close(self) -> None:
        """Frees the reader (idempotent)."""
        self._h.close()

    def __enter__(self) -> "ResponseReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def feed(self, data: bytes, start: int = 0) -> int:
        """Feeds ``data[start:]`` (``start`` spares the copy a slice would make when one
        buffer holds several responses); returns how many bytes were consumed (0 once the
        response is done: the rest belongs to the next response)."""
        if type(data) is not bytes:
            data = bytes(data)
        n = len(data)
        if start:
            if not 0 <= start <= n:
                raise ValueError(f"start {start} is outside the data (0..{n})")
            address = cast(c_char_p(data), c_void_p).value + start  # type: ignore[operator]
        else:
            address = data
        self._h.get()  # raises after close
        status = _feed(self._ptr, address, n - start, self._uref, self._eref)
        if status:
            raise self._err.to_exception(status)
        return self._used.value

    def eof(self) -> None:
        """The connection closed: completes a body that runs to the end of the connection,
        raises :class:`BadResponseError` for a response cut short."""
        lib.afs_response_reader_eof(self._h.get())

    def reset(self, method: str = "GET") -> None:
        """Gets ready for the next response on the same connection (settings kept)."""
        self._h.get()  # raises after close
        status = _reset(self._ptr, _METHODS.get(method) or _method_arg(method), self._eref)
        if status:
            raise self._err.to_exception(status)
        self.leftover = b""

    @property
    def state(self) -> ReaderState:
        self._h.get()  # raises after close
        return _STATES[_state(self._ptr)]

    @property
    def status(self) -> int:
        """The final status code (0 before the head is complete)."""
        return lib.afs_response_reader_status(self._h.get())

    @property
    def reason(self) -> Optional[str]:
        r = lib.afs_response_reader_reason(self._h.get())
        return None if r is None else _latin1(r)

    @property
    def version(self) -> int:
        """10 or 11 (0 before the head is complete)."""
        return lib.afs_response_reader_version(self._h.get())

    def _fields(self, count: Any, name: Any, value: Any) -> List[Tuple[str, str]]:
        ptr = self._h.get()
        return [(_latin1(name(ptr, i)), _latin1(value(ptr, i))) for i in range(count(ptr))]

    @property
    def headers(self) -> List[Tuple[str, str]]:
        """The header fields as sent, in order, values decoded as latin-1."""
        return self._fields(lib.afs_response_reader_header_count, lib.afs_response_reader_header_name,
                            lib.afs_response_reader_header_value)

    def header(self, name: str) -> Optional[str]:
        """The first field named ``name`` (case-insensitive), or None."""
        v = lib.afs_response_reader_header(self._h.get(), name.encode("latin-1"))
        return None if v is None else _latin1(v)

    @property
    def trailers(self) -> List[Tuple[str, str]]:
        return self._fields(lib.afs_response_reader_trailer_count, lib.afs_response_reader_trailer_name,
                            lib.afs_response_reader_trailer_value)

    @property
    def interim(self) -> List[int]:
        """The codes of the 1xx responses skipped before the final one."""
        ptr = self._h.get()
        return [lib.afs_response_reader_interim_status(ptr, i)
                for i in range(lib.afs_response_reader_interim_count(ptr))]

    @property
    def body(self) -> bytes:
        """The decoded body received so far (all of it once done)."""
        n = c_size_t(0)
        p = lib.afs_response_reader_body(self._h.get(), byref(n))
        return string_at(p, n.value) if p and n.value else b""

    def text(self, fallback: str = "utf-8") -> str:
        """The body as text, decoded as the WHATWG Encoding Standard says (BOM, then the
        charset parameter, then ``fallback``)."""
        err = _ffi.afs_error()
        n = c_size_t(0)
        p = lib.afs_response_reader_text(self._h.get(), fallback.encode("utf-8"), byref(n), byref(err))
        if not p:
            raise err.to_exception()
        try:
            return string_at(p, n.value).decode("utf-8")
        finally:
            lib.raw.afs_free(p)

    def response_object(self, serializer: Any) -> Any:
        """Validates and decodes the finished response with a response serializer, exactly
        as ``serializer.response_object(status, content_type, body)`` does."""
        err = _ffi.afs_error()
        out = c_value_p()
        status = lib.afs_response_reader_object(self._h.get(), serializer._h.get(), byref(out), byref(err))
        document = None
        if out:
            try:
                document = tree_to_python(cast(out, c_void_p).value)
            finally:
                lib.raw.afs_value_free(out)
        if status:
            exc = err.to_exception(status)
            if status == int(Status.UNACCEPTABLE_STATUS):
                exc.status_code = self.status  # type: ignore[attr-defined]
                exc.document = document  # type: ignore[attr-defined]
            raise exc
        return document

    def __repr__(self) -> str:
        if self._h.closed:
            return "<ResponseReader closed>"
        return f"<ResponseReader {self.state.name} status={self.status}>"


_feed = lib.untyped("afs_response_reader_feed")
_state = lib.untyped("afs_response_reader_state")
_reset = lib.untyped("afs_response_reader_reset")
_STATES = tuple(ReaderState)
_METHODS = {m: m.encode() for m in ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")}


def read_response(sock: Any, method: str = "GET", bufsize: int = 65536, **options: Any) -> ResponseReader:
    """Reads one complete response from a connected socket (``recv``) and returns the
    finished reader. Bytes received past its end (pipelining) are in ``reader.leftover``.
    ``options`` go to :class:`ResponseReader`."""
    rd = ResponseReader(method, **options)
    try:
        while rd.state != ReaderState.DONE:
            data = sock.recv(bufsize)
            if not data:
                rd.eof()
                break
            used = rd.feed(data)
            if rd.state == ReaderState.DONE:
                rd.leftover = data[used:]
    except BaseException:
        rd.close()
        raise
    return rd
