"""Serialized requests (``afs_request``) and their case-insensitive header views."""
from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Mapping, MutableMapping
from ctypes import byref
from typing import (TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union)

from . import _transfer
from ._ffi import c_size_t, lib
from ._handle import CHandle, HandleOwner, serialized
from ._text import cpath, cstr
from .errors import BadURLError, InvalidHeaderError, InvalidMethodError

if TYPE_CHECKING:  # pragma: no cover
    from .body_stream import BodyStream

# The fields of a request snapshot (``afs_request_pickle``): read in one call, kept until
# the request changes.
_METHOD, _URL, _HEADERS, _BODY, _HAS_STREAM, _TIMEOUT, _CACHE, _COOKIES, _PIPELINING, \
    _CELLULAR, _SERVICE = range(11)

__all__ = ["Request", "MultipartRequest", "RequestHeaders", "HeadersInput"]

#: What ``headers`` arguments accept: a mapping or an iterable of (name, value) pairs.
HeadersInput = Union[Mapping, Iterable[Tuple[str, str]]]


def _pairs(headers: HeadersInput) -> Iterable[Tuple[Any, Any]]:
    if isinstance(headers, Mapping):
        return headers.items()
    return headers


class RequestHeaders(MutableMapping):
    """The headers of a :class:`Request`, live on the C request: insertion order, names
    compared case-insensitively (``h["content-type"]`` finds ``Content-Type``). Setting a
    header validates it (``InvalidHeaderError`` for a name that is not a token or a value
    with CR, LF or NUL, and for ``Content-Length`` and ``Transfer-Encoding``: the library
    frames the body, with exactly one Content-Length matching the bytes it sends); setting ``None`` or deleting removes it (``del`` raises
    ``KeyError`` for a header that is not there; ``= None`` does not, as in C).

    Reads come from the request's snapshot (one library call after each change)."""

    __slots__ = ("_owner",)

    def __init__(self, owner: "Request") -> None:
        """Internal: use :attr:`Request.headers`."""
        self._owner = owner

    @property
    def _h(self) -> CHandle:
        """The request's handle: its lock serializes this view with the request (the
        snapshot is read and reset under it)."""
        return self._owner._h

    def _pairs(self) -> List[Tuple[str, str]]:
        return self._owner._snapshot()[_HEADERS]

    def __getitem__(self, name: str) -> str:
        if isinstance(name, bytes):
            try:
                name = name.decode("utf-8")
            except UnicodeDecodeError:
                raise KeyError(name) from None
        if not isinstance(name, str):
            raise KeyError(name)
        pairs = self._pairs()
        for k, v in pairs:  # exact spelling first (the common case), then any case
            if k == name:
                return v
        folded = name.lower()
        for k, v in pairs:
            if k.lower() == folded:
                return v
        raise KeyError(name)

    def __setitem__(self, name: str, value: Optional[str]) -> None:
        owner = self._owner
        lib.afs_request_set_header(owner._h.get(), cstr(name, "header name", InvalidHeaderError),
                                   None if value is None else
                                   cstr(value, f"the value of header {name!r}", InvalidHeaderError))
        owner._snap = None

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self[name] = None

    def __contains__(self, name: object) -> bool:
        try:
            self[name]  # type: ignore[index]
        except (KeyError, InvalidHeaderError):
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, _ in self._pairs()])

    def __len__(self) -> int:
        """The number of headers."""
        return len(self._pairs())

    def items(self) -> Any:
        """``(name, value)`` pairs in order (a new list)."""
        return list(self._pairs())

    def __eq__(self, other: object) -> bool:
        """Equal to any mapping with the same fields, names compared case-insensitively."""
        if not isinstance(other, Mapping):
            return False
        mine = {k.lower(): v for k, v in self._pairs()}
        theirs = {str(k).lower(): v for k, v in other.items()}
        return mine == theirs

    def __repr__(self) -> str:
        return f"RequestHeaders({dict(self._pairs())!r})"

    def copy(self) -> Dict[str, str]:
        """A plain ``dict`` snapshot (case-sensitive keys as the request spells them)."""
        return dict(self._pairs())


serialized(RequestHeaders, "_owner")  # the request's lock: see the thread rule in _handle


class Request(HandleOwner):
    """A serialized request: method, URL, headers in order, body or body stream, and
    NSURLRequest's properties.

    Made by a serializer (:meth:`HTTPRequestSerializer.request`,
    :meth:`~HTTPRequestSerializer.serialize`, :meth:`MultipartForm.finish`) or by hand with
    ``Request(method, url, headers)`` for :meth:`HTTPRequestSerializer.serialize`.
    Free it with :meth:`close` or a ``with`` block (closing also closes its body stream);
    otherwise it is freed when neither it nor its body stream is referenced.
    """

    __slots__ = ("_h", "_stream", "_snap", "__weakref__")

    def __init__(self, method: str, url: str, headers: Optional[HeadersInput] = None) -> None:
        """A bare request (``afs_request_new``): no headers but ``headers``, NSURLRequest's
        default properties.

        Raises:
            InvalidMethodError, BadURLError, InvalidHeaderError, InvalidUTF8Error
        """
        ptr = lib.afs_request_new(cstr(method, "method", InvalidMethodError),
                                  cstr(url, "url", BadURLError))
        self._h = CHandle(ptr, lib.raw.afs_request_free, "afs_request")
        self._stream: "Optional[BodyStream]" = None
        self._snap: Optional[tuple] = None
        if headers is not None:
            for name, value in _pairs(headers):
                self.headers[name] = value

    @classmethod
    def _adopt(cls, ptr: Any, snapshot: Optional[tuple] = None) -> "Request":
        self = cls.__new__(cls)
        self._h = CHandle(ptr, _free_request, "afs_request")
        self._stream = None
        self._snap = snapshot
        return self

    @classmethod
    def _borrow(cls, ptr: Any) -> "Request":
        """A view of a request C lends for a callback's duration (never freed by Python)."""
        self = cls.__new__(cls)
        self._h = CHandle(ptr, None, "borrowed afs_request (valid only during the callback)")
        self._stream = None
        self._snap = None
        return self

    def _snapshot(self) -> tuple:
        """Method, URL, headers, body and properties from one ``afs_request_pickle``
        call, kept until the request changes."""
        snap = self._snap
        if snap is None:
            n = c_size_t()
            address = _request_pickle(self._h.get(), byref(n))
            snap = self._snap = _transfer.load_at(address, n.value)
        return snap

    def copy(self) -> "Request":
        """An independent copy (``afs_request_copy``): changing one's headers leaves the
        other alone. ``copy.copy`` and ``copy.deepcopy`` give the same.

        Raises:
            UnsupportedError: a multipart request (its body stream has one read position:
                build the form again).
        """
        return Request._adopt(lib.afs_request_copy(self._h.get()), self._snap)

    def __copy__(self) -> "Request":
        return self.copy()

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Request":
        return self.copy()

    def __reduce__(self) -> Any:
        raise TypeError("a Request holds a C handle and cannot be pickled; use its method, "
                        "url, headers and body")

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Frees the request and closes its body stream (idempotent)."""
        if self._stream is not None:
            self._stream.close()
        self._h.close()

    # -- contents -------------------------------------------------------------------------

    @property
    def method(self) -> str:
        """The HTTP method as given."""
        return self._snapshot()[_METHOD]

    @property
    def url(self) -> str:
        """The URL, with the query added for URI methods."""
        return self._snapshot()[_URL]

    @property
    def headers(self) -> RequestHeaders:
        """Case-insensitive, live, mutable view of the headers (see :class:`RequestHeaders`)."""
        return RequestHeaders(self)

    @property
    def body(self) -> Optional[bytes]:
        """The body bytes (a copy); ``None`` when the request has no body, ``b""`` for an
        empty one. A multipart request has no plain body: see :attr:`body_stream`."""
        return self._snapshot()[_BODY]

    @property
    def body_stream(self) -> "Optional[BodyStream]":
        """The multipart body as a :class:`BodyStream` (always the same object), or ``None``
        for a request without one."""
        if self._stream is None:
            ptr = self._h.get()
            stream_ptr = lib.afs_request_body_stream(ptr)
            if not stream_ptr:
                return None
            from .body_stream import BodyStream
            self._stream = BodyStream._borrow(stream_ptr, self._h)
        return self._stream

    # -- NSURLRequest's properties ---------------------------------------------------------

    @property
    def timeout_interval(self) -> float:
        """Seconds (NSURLRequest's default 60)."""
        return self._snapshot()[_TIMEOUT]

    @property
    def cache_policy(self) -> int:
        """NSURLRequestCachePolicy value (default 0)."""
        return self._snapshot()[_CACHE]

    @property
    def should_handle_cookies(self) -> bool:
        """Default True."""
        return self._snapshot()[_COOKIES]

    @property
    def should_use_pipelining(self) -> bool:
        """Default False."""
        return self._snapshot()[_PIPELINING]

    @property
    def allows_cellular_access(self) -> bool:
        """Default True."""
        return self._snapshot()[_CELLULAR]

    @property
    def network_service_type(self) -> int:
        """NSURLRequestNetworkServiceType value (default 0)."""
        return self._snapshot()[_SERVICE]

    @property
    def properties(self) -> Dict[str, Any]:
        """All six request properties as a dict."""
        return {name: getattr(self, name) for name in (
            "timeout_interval", "cache_policy", "should_handle_cookies",
            "should_use_pipelining", "allows_cellular_access", "network_service_type")}

    # -- multipart ------------------------------------------------------------------------

    def write_body_to_file(self, path: "str | bytes | os.PathLike[str]") -> "Request":
        """Writes the whole multipart body to ``path`` (AFNetworking's
        ``requestWithMultipartFormRequest:writingStreamContentsToFile:``) and returns a copy
        of this request without body stream (headers kept). No partial file is left behind
        on failure.

        Raises:
            FileError, StreamIOError, LengthMismatchError, InvalidArgumentError
        """
        return Request._adopt(lib.afs_request_write_body_to_file(self._h.get(), cpath(path)))

    # -- body transforms (header section 15) ----------------------------------------------

    def _transformed(self) -> None:
        """After a change of how the body streams: new snapshot, new body stream object."""
        self._snap = None
        self._stream = None

    def set_body_stream(self, source: Any, length: Optional[int] = None) -> None:
        """Makes the body ``source`` (``afs_request_set_body_stream``): a binary file object
        or an iterable of bytes (a generator), read while the request is sent. ``length``
        bytes (checked: ``LengthMismatchError``), or ``None``: unknown, read until the source
        ends, sent chunked. Rewindable as for :meth:`MultipartForm.append_stream`.

        Raises:
            TypeError (a text-mode file, bytes, another type), StateError (after
            :meth:`set_content_encoding` or a header digest: set the body first).
        """
        from . import transforms
        transforms.set_body_stream(self._h.get(), source, length)
        self._transformed()

    @property
    def is_chunked(self) -> bool:
        """True when the body goes out with ``Transfer-Encoding: chunked`` (unknown length,
        compression while streaming, trailer digests)."""
        return bool(lib.afs_request_is_chunked(self._h.get()))

    def set_content_encoding(self, coding: str, level: Optional[int] = None,
                             exact: bool = False) -> None:
        """Compresses the body with ``coding`` ("gzip", "deflate" (zlib format), "zstd",
        "br") and sets ``Content-Encoding``. ``level`` None: the coding's default. Without
        ``exact`` the body is compressed while it streams and sent chunked (it is then in
        :attr:`body_stream`, :attr:`body` is None); with ``exact`` it is compressed once now
        (in memory, or into a temporary file for a streamed body: :meth:`set_temp_dir`) and
        keeps an exact ``Content-Length``.

        Raises:
            StateError (no body, already encoded), UnsupportedError (another coding),
            InvalidArgumentError (level), NoMemoryError, and the body's errors with ``exact``.
        """
        from . import transforms
        transforms.set_content_encoding(self._h.get(), coding, level, exact)
        self._transformed()

    def add_digest(self, algorithm: str, trailer: bool = False) -> None:
        """Adds ``Content-Digest`` ("sha-256", "sha-512") or ``Content-MD5`` ("md5") over the
        body as sent (after compression): in the headers now, or with ``trailer=True`` as a
        trailer field computed while the body streams (the request becomes chunked; see
        :attr:`trailers`).

        Raises:
            StateError (no body), UnsupportedError (another algorithm; a header digest over
            a source that cannot rewind), and the body's errors for a header digest.
        """
        from . import transforms
        transforms.add_digest(self._h.get(), algorithm, trailer)
        self._transformed()

    def set_temp_dir(self, path: "Optional[str | bytes | os.PathLike[str]]") -> None:
        """Where ``set_content_encoding(..., exact=True)`` puts the compressed copy of a
        streamed body (None: ``$TMPDIR``, else ``/tmp``)."""
        lib.afs_request_set_temp_dir(self._h.get(), None if path is None else cpath(path))

    @property
    def trailers(self) -> List[Tuple[str, str]]:
        """The trailer fields as ``(name, value)`` pairs, once the body has been read or
        written to its end; ``[]`` without trailer digests.

        Raises:
            StateError: the body has not been read to its end yet.
        """
        from . import transforms
        return transforms.trailers(self._h.get())

    # -- presentation ---------------------------------------------------------------------

    @property
    def head(self) -> bytes:
        """The request head exactly as it goes on the wire (``afs_request_copy_head``):
        ``METHOD target HTTP/1.1`` with the origin-form target (path and query, ``/`` for an
        empty path, never the fragment), ``Host`` from the URL (without userinfo; a ``Host``
        header of the request replaces it), ``Authorization: Basic`` from the URL's userinfo
        unless the request sets one, the headers in order, ``Content-Length`` for a request
        with a body that has none (and no ``Transfer-Encoding``), and the blank line.

        Raises:
            BadURLError: the URL has no host.
        """
        return lib.afs_request_copy_head(self._h.get(), None).encode("utf-8")

    def wire_head(self) -> bytes:
        """The same as :attr:`head` (kept for callers of the earlier name)."""
        return self.head

    def write_to(self, target: Any) -> int:
        """Writes the head and the body to ``target`` (``afs_request_write_to_fd``; file
        parts of a multipart body go through ``sendfile``/``copy_file_range``) and returns
        the bytes written.

        ``target`` is a socket, a file object with ``fileno()`` (flushed first; its position
        is updated afterwards) or a raw file descriptor. A socket with a timeout or in
        non-blocking mode is written as far as it takes and waited on until writable (the C
        call resumes where it stopped), with the socket's timeout as the limit for each wait.
        After a complete write, calling again writes the whole request again. A signal
        (Ctrl-C) interrupts the write: its handler runs at once (``KeyboardInterrupt``
        propagates) and the request stays resumable: calling again continues where it
        stopped (``afs_request_set_interruptible``).

        Raises:
            StreamIOError (``bytes_written`` says how far it got; calling again resumes),
            BadURLError, and the body stream's errors.
        """
        import select
        import socket as _socket
        from .body_stream import _descriptor
        from .errors import SerializationError
        timeout = target.gettimeout() if isinstance(target, _socket.socket) else None
        if isinstance(target, _socket.socket):
            fd, restore = target.fileno(), (lambda: None)
        else:
            fd, restore = _descriptor(target)
        from ._ffi import check_signals
        ptr = self._h.get()
        lib.afs_request_set_interruptible(ptr, True)
        total = 0
        try:
            while True:
                written = ctypes.c_uint64(0)
                try:
                    lib.afs_request_write_to_fd(ptr, fd, ctypes.byref(written))
                    return total + written.value
                except SerializationError as e:
                    total += written.value
                    if e.os_errno == errno.EINTR:  # a signal: run its handler, then go on
                        check_signals()
                        continue
                    if e.os_errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                        _, ready, _ = select.select([], [fd], [], timeout)
                        if ready:
                            continue
                        e.message += f" (not writable within the socket's timeout of {timeout} s)"
                    e.bytes_written = total  # type: ignore[attr-defined]
                    raise
        finally:
            restore()

    def __repr__(self) -> str:
        if self._h.closed:
            return "<afserialization.Request closed>"
        return f"<afserialization.Request {self.method} {self.url}>"


_free_request = lib.raw.afs_request_free
_request_pickle = lib.raw.afs_request_pickle


class MultipartRequest(Request):
    """The request :meth:`MultipartForm.finish` gives: a :class:`Request` whose
    :attr:`body_stream` is always there (typed ``BodyStream``, not ``Optional``), so that
    ``request.body_stream.progress = ...`` type-checks."""

    __slots__ = ()

    @property
    def body_stream(self) -> "BodyStream":
        """The multipart body as a :class:`BodyStream` (always the same object)."""
        stream = Request.body_stream.fget(self)  # type: ignore[attr-defined]
        if stream is None:  # pragma: no cover - finish() makes this class only with a stream
            raise AssertionError("a MultipartRequest without a body stream")
        return stream  # type: ignore[no-any-return]
