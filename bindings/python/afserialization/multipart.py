"""Multipart forms (``afs_form``): AFStreamingMultipartFormData as a builder."""
from __future__ import annotations

import ctypes
import io
import itertools
import os
from collections.abc import Mapping
from typing import Any, Dict, Iterable, Optional, Union

from . import _ffi
from ._ffi import READ_FN, RELEASE_FN, REWIND_FN, c_char_p, lib
from ._handle import CHandle, HandleOwner
from ._text import cpath, cstr
from .errors import InvalidHeaderError, UnsupportedTypeError
from .request import HeadersInput, MultipartRequest, Request

__all__ = ["MultipartForm", "UPLOAD_STREAM_3G_SUGGESTED_PACKET_SIZE",
           "UPLOAD_STREAM_3G_SUGGESTED_DELAY", "StreamSource"]

#: AFNetworking's throttling suggestions for 3G (``kAFUploadStream3GSuggested…``).
UPLOAD_STREAM_3G_SUGGESTED_PACKET_SIZE = 16384
UPLOAD_STREAM_3G_SUGGESTED_DELAY = 0.2

#: ``append_stream`` sources: a binary file object, or an iterable of bytes.
StreamSource = Union[io.IOBase, Any, Iterable[bytes]]


class MultipartForm(HandleOwner):
    """A multipart form being built (``afs_form``); made by
    :meth:`HTTPRequestSerializer.multipart_form`.

    Append parts in order, then :meth:`finish` returns the :class:`Request` whose
    :attr:`Request.body_stream` streams the body. Use it as a context manager: leaving the
    block frees the form (the finished request stays valid). Calls after :meth:`finish`
    raise :class:`~afserialization.StateError`; calls after :meth:`close`,
    :class:`~afserialization.HandleClosedError`.
    """

    __slots__ = ("_h",)

    def __init__(self) -> None:
        """Not constructible: use :meth:`HTTPRequestSerializer.multipart_form`."""
        raise TypeError("use serializer.multipart_form(method, url, params)")

    @classmethod
    def _adopt(cls, ptr: Any) -> "MultipartForm":
        self = object.__new__(cls)
        self._h = CHandle(ptr, lib.raw.afs_form_free, "afs_form")
        return self

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Frees the form (idempotent); parts not handed to a request are released."""
        self._h.close()

    def __repr__(self) -> str:
        if self._h.closed:
            return "<afserialization.MultipartForm closed>"
        return f"<afserialization.MultipartForm boundary={self.boundary!r}>"

    # -- parts ----------------------------------------------------------------------------

    def append_file(self, path: "str | bytes | os.PathLike[str]", name: str,
                    filename: Optional[str] = None, mime_type: Optional[str] = None) -> None:
        """A file part streamed from disk (opened only while its part is read). ``filename``
        defaults to the path's last component and ``mime_type`` to the library's guess
        from the extension.

        Raises:
            FileError: not a regular file, or it cannot be stat'ed (see ``os_errno``).
        """
        ptr = self._h.get()
        p = cpath(path)
        n = cstr(name, "name")
        if filename is None and mime_type is None:
            lib.afs_form_append_file(ptr, p, n)
            return
        if filename is None:
            filename = os.path.basename(os.fsdecode(path))
        lib.afs_form_append_file_ex(ptr, p, n, cstr(filename, "filename"),
                                    None if mime_type is None else cstr(mime_type, "mime_type"))

    def append_data(self, data: bytes, name: str, filename: str, mime_type: str) -> None:
        """A file part from bytes (copied now)."""
        b = _bytes(data, "append_data(): data")
        lib.afs_form_append_file_data(self._h.get(), b, len(b), cstr(name, "name"),
                                      cstr(filename, "filename"), cstr(mime_type, "mime_type"))

    def __copy__(self) -> "MultipartForm":
        raise TypeError("a MultipartForm cannot be copied (it is built once and spent by "
                        "finish()); build another form, or copy the finished Request")

    def __deepcopy__(self, memo: Any) -> "MultipartForm":
        return self.__copy__()

    def __reduce__(self) -> Any:
        raise TypeError("a MultipartForm holds a C handle and cannot be pickled")

    def append_field(self, name: str, value: "str | bytes") -> None:
        """A form field part (``Content-Disposition: form-data; name="…"``). A ``str`` value
        is sent as UTF-8; pass bytes for another encoding."""
        b = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else \
            _bytes(value, "append_field(): value", str_too=True)
        lib.afs_form_append_form_data(self._h.get(), b, len(b), cstr(name, "name"))

    def append_stream(self, source: StreamSource, length: Optional[int], name: str, filename: str,
                      mime_type: str) -> None:
        """A file part pulled from ``source`` while the body is read: a binary file object
        (``readinto`` or ``read``; rewindable when ``seekable()``, back to the position it
        had here), or an iterable of bytes chunks (rewindable when it is not an iterator
        itself, e.g. a list). It must yield exactly ``length`` bytes, else the read fails
        with :class:`~afserialization.LengthMismatchError`. ``length=None`` means unknown
        (a pipe, a generator): ``source`` is read until it ends and the request is sent
        chunked (:attr:`Request.is_chunked`). A text-mode file is refused with
        :class:`TypeError` (open it in binary mode). The form does not close
        ``source``. An exception ``source`` raises fails the read with
        :class:`~afserialization.StreamIOError` chained from it (KeyboardInterrupt and
        SystemExit propagate as themselves; the stream's error then stays until rewind).
        """
        ptr = self._h.get()
        from .transforms import length_arg
        length = length_arg(length)
        part = _PartSource(source, length)
        key = next(_ids)
        _sources[key] = part  # released by C through _release (also when the append fails)
        lib.afs_form_append_stream(ptr, _READ, _REWIND if part.can_rewind else REWIND_FN(),
                                   _RELEASE, key, length, cstr(name, "name"),
                                   cstr(filename, "filename"), cstr(mime_type, "mime_type"))

    def append_part(self, headers: HeadersInput, body: bytes) -> None:
        """A part with your own headers (validated: no CR/LF/NUL, names are tokens)."""
        pairs = list(headers.items() if isinstance(headers, Mapping) else headers)
        names = [cstr(k, "header name", InvalidHeaderError) for k, _ in pairs]
        values = [cstr(v, f"the value of header {k!r}", InvalidHeaderError) for k, v in pairs]
        count = len(pairs)
        name_array = (c_char_p * max(count, 1))(*names)
        value_array = (c_char_p * max(count, 1))(*values)
        b = _bytes(body, "append_part(): body")
        lib.afs_form_append_part(self._h.get(), name_array, value_array, count, b, len(b))

    def throttle(self, packet_size: int = UPLOAD_STREAM_3G_SUGGESTED_PACKET_SIZE,
                 delay: float = UPLOAD_STREAM_3G_SUGGESTED_DELAY) -> None:
        """At most ``packet_size`` bytes per read and a sleep of ``delay`` seconds after each
        chunk (AFNetworking's ``throttleBandwidthWithPacketSize:delay:``)."""
        lib.afs_form_throttle_bandwidth(self._h.get(), int(packet_size), float(delay))

    @property
    def boundary(self) -> str:
        """The boundary (``Boundary+`` and 16 hex digits unless set). Settable: 1-70 of
        ``A-Z a-z 0-9 ' + _ - .``; a collision with in-memory content fails at
        :meth:`finish`."""
        return lib.afs_form_boundary(self._h.get()).decode("ascii")

    @boundary.setter
    def boundary(self, value: str) -> None:
        lib.afs_form_set_boundary(self._h.get(), cstr(value, "boundary"))

    def finish(self) -> MultipartRequest:
        """The request: ``Content-Type: multipart/form-data; boundary=…``, exact
        ``Content-Length`` and :attr:`MultipartRequest.body_stream` (a ``BodyStream``, never
        ``None``). The form is spent afterwards.

        An empty form (no parameters, no parts) gives the plain request AFNetworking gives:
        a :class:`Request` without body stream (``body == b""``), the one case in which the
        result is not a :class:`MultipartRequest` (check ``isinstance`` if you build empty
        forms)."""
        ptr = lib.afs_form_finish(self._h.get())
        if lib.afs_request_body_stream(ptr):
            return MultipartRequest._adopt(ptr)
        return Request._adopt(ptr)  # type: ignore[return-value]


def _bytes(data: Any, what: str, str_too: bool = False) -> bytes:
    """``data`` as bytes; anything else raises :class:`UnsupportedTypeError` naming the
    parameter (``what``)."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    accepted = "str or bytes-like" if str_too else "bytes-like"
    raise UnsupportedTypeError(f"{what} must be {accepted} (bytes, bytearray, memoryview), "
                               f"not {type(data).__name__}")


# --------------------------------------------------------------------------------------
# Stream parts: one trampoline per callback kind; ``ctx`` is a key into _sources.

_ids = itertools.count(1)
_sources: Dict[int, "_PartSource"] = {}


def _is_text_stream(source: Any) -> bool:
    """A text-mode file object (``open(path)``, ``io.StringIO``, ``sys.stdin``): it yields
    str, which the body cannot carry."""
    if isinstance(source, io.TextIOBase):
        return True
    mode = getattr(source, "mode", None)
    return isinstance(mode, str) and hasattr(source, "encoding") and "b" not in mode


class _PartSource:
    """Adapts a file object or an iterable of bytes to ``afs_read_fn``/``afs_rewind_fn``."""

    def __init__(self, source: Any, length: int) -> None:
        self.source = source
        self.length = length
        self.can_rewind = False
        self._chunk = b""
        self._offset = 0
        if _is_text_stream(source):
            raise TypeError(f"append_stream() takes a binary file object, not the text "
                            f"stream {type(source).__name__} (open the file with 'rb', or "
                            f"encode the text and use append_data())")
        if isinstance(source, (list, tuple)) and any(isinstance(c, str) for c in source):
            raise TypeError("append_stream() takes an iterable of bytes, not of str (encode "
                            "the chunks)")
        if hasattr(source, "readinto"):
            self.mode = "readinto"
        elif hasattr(source, "read"):
            self.mode = "read"
        elif isinstance(source, (str, bytes, bytearray, memoryview)):
            raise TypeError("append_stream() takes a file object or an iterable of bytes; "
                            "use append_data() for bytes")
        else:
            try:
                self._iterator = iter(source)
            except TypeError:
                raise TypeError(f"append_stream() takes a binary file object or an iterable "
                                f"of bytes, not {type(source).__name__}") from None
            self.mode = "iter"
            self.can_rewind = self._iterator is not source
        if self.mode != "iter":
            seekable = getattr(source, "seekable", None)
            try:
                if seekable is not None and seekable():
                    self._start = source.tell()
                    self.can_rewind = True
            except (OSError, ValueError):
                self.can_rewind = False

    def read(self, address: int, n: int) -> int:
        if self.mode == "readinto":
            view = memoryview((ctypes.c_char * n).from_address(address)).cast("B")
            got = self.source.readinto(view)
            if got is None:
                raise BlockingIOError("the stream source has no data now (non-blocking)")
            return got
        if self.mode == "read":
            data = self.source.read(n)
            if data is None:
                raise BlockingIOError("the stream source has no data now (non-blocking)")
            if len(data) > n:
                raise ValueError(f"read({n}) returned {len(data)} bytes")
            ctypes.memmove(address, bytes(data), len(data))
            return len(data)
        while self._offset >= len(self._chunk):
            try:
                chunk = next(self._iterator)
            except StopIteration:
                return 0
            if not isinstance(chunk, (bytes, bytearray, memoryview)):
                raise TypeError(f"the stream source yielded {type(chunk).__name__}, "
                                "expected bytes")
            self._chunk = bytes(chunk)
            self._offset = 0
        take = min(n, len(self._chunk) - self._offset)
        base = ctypes.cast(c_char_p(self._chunk), ctypes.c_void_p).value or 0
        ctypes.memmove(address, base + self._offset, take)
        self._offset += take
        return take

    def rewind(self) -> None:
        if self.mode == "iter":
            self._iterator = iter(self.source)
            self._chunk = b""
            self._offset = 0
        else:
            self.source.seek(self._start)


def _read(ctx: Optional[int], buffer: Optional[int], n: int) -> int:
    try:
        return _sources[ctx].read(buffer, n)  # type: ignore[index,arg-type]
    except BaseException as exc:  # noqa: B902 - must not unwind through C
        try:
            _ffi.store_exception(exc)
        except BaseException:
            pass
        return -1


def _rewind(ctx: Optional[int]) -> int:
    try:
        _sources[ctx].rewind()  # type: ignore[index]
        return 0
    except BaseException as exc:  # noqa: B902
        try:
            _ffi.store_exception(exc)
        except BaseException:
            pass
        return -1


def _release(ctx: Optional[int]) -> None:
    try:
        _sources.pop(ctx, None)  # type: ignore[arg-type]
    except BaseException:  # interpreter shutdown
        pass


_READ = READ_FN(_read)
_REWIND = REWIND_FN(_rewind)
_RELEASE = RELEASE_FN(_release)
_ffi.KEEP_ALIVE["multipart"] = (_READ, _REWIND, _RELEASE, _sources)
