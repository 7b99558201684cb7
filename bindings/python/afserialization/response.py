"""Response serializers: AFHTTPResponseSerializer, AFJSONResponseSerializer,
AFPropertyListResponseSerializer and AFCompoundResponseSerializer over
``afs_response_serializer``.

They send and receive nothing: give them what your HTTP client received (status code,
``Content-Type`` header, body bytes)::

    import requests
    from afserialization import JSONResponseSerializer, UnacceptableStatusError

    with JSONResponseSerializer() as rs:
        r = requests.get("http://127.0.0.1:8000/users/1")
        try:
            user = rs.response_object(r.status_code, r.headers.get("Content-Type"), r.content)
        except UnacceptableStatusError as e:
            print(e.message, e.document)   # "Request failed: not found (404)", {...}

What decoded bodies become (the library's ``afs_value`` trees mapped to plain Python):

=====================  ==========================================================
``afs_value``          Python
=====================  ==========================================================
dictionary             ``dict`` (keys in document order)
array                  ``list``
string                 ``str``
data                   ``bytes`` (an HTTP serializer's whole body; plist ``<data>``)
integer                ``int`` (JSON and plist integers within int64)
double                 ``float`` (other numbers, including integers beyond int64 and
                       JSON ``-0``, as Foundation reads them)
bool                   ``bool``
null                   ``None``
set                    ``frozenset`` when its members are hashable and stay distinct in
                       Python (``1``, ``1.0`` and ``True`` are one Python member),
                       otherwise a ``list`` in the set's order
no object              ``None``: an empty body (every kind) or a single space (JSON and
                       plist) decodes to no object and no error, as in AFNetworking; a
                       JSON ``null`` fragment gives ``None`` too
=====================  ==========================================================

Plist dates arrive as ISO 8601 ``str`` and UIDs as ``{"CF$UID": n}`` (the library's
reader; see the C header).

How bodies become Python objects: once, by the library. ``response_object`` makes one
library call (``afs_response_object_pickle``) that validates the status and the MIME type
and decodes the body (strict RFC 8259 JSON in UTF-8 with every error's byte offset, XML
and binary property lists, null removal with the library's rule), and hands back the
document as one pickle that Python loads with an unpickler that refuses every class
(``afserialization._transfer``), plus one ``afs_free``. JSON bodies go straight from the
text to that pickle, without an intermediate tree; dictionary keys are shared ``str``
objects, as :func:`json.loads` shares them.

Integers beyond int64 (``9223372036854775808`` and larger, in JSON) arrive as the nearest
``float``, as Foundation's ``NSJSONSerialization`` reads them and as the C API gives them
(``json.loads`` would give an exact ``int``); ``-0`` arrives as ``-0.0``.
"""
from __future__ import annotations

import enum
from ctypes import byref, c_char, c_char_p, c_int, c_size_t, c_void_p, cast, string_at
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple, TypeVar, Union

from ._enum import QuietEnumMeta
from . import _ffi, _transfer
from ._ffi import c_response_serializer_p, c_value_p, lib
from ._handle import CHandle, HandleOwner
from ._text import cstr
from .errors import Status, UnacceptableStatusError, UnsupportedTypeError, ValueOutOfRangeError
from .serializers import _coerce
from .values import tree_to_python

__all__ = [
    "HTTPResponseSerializer", "JSONResponseSerializer", "PropertyListResponseSerializer",
    "CompoundResponseSerializer", "ImageResponseSerializer", "JSONReadingOptions", "StatusCodes",
    "ResponseBody",
]

#: What ``acceptable_status_codes`` accepts: ints and ``range`` objects (``range(200, 300)``),
#: one of them alone, or ``None`` for every status.
StatusCodes = Union[int, range, Iterable[Union[int, range]], None]
#: A response body: ``bytes``, ``bytearray``, ``memoryview`` or any other bytes-like object;
#: ``None`` for no body.
ResponseBody = Any

_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

_HTTP, _JSON, _PLIST, _XML = 0, 1, 2, 3
_IMAGE = 4

#: Whether a response is decoded in one call into one pickle (``afs_response_pickle``);
#: off, the library's tree is walked node by node (``afs_response_object`` and the
#: ``afs_value_*`` accessors). Tests switch it off to compare the two.
_DECODE_AS_PICKLE = True


class JSONReadingOptions(enum.IntFlag, metaclass=QuietEnumMeta):
    """NSJSONReadingOptions. ``MUTABLE_CONTAINERS`` and ``MUTABLE_LEAVES`` are accepted and
    change nothing (decoded objects are always new Python objects)."""

    NONE = 0
    MUTABLE_CONTAINERS = 1
    MUTABLE_LEAVES = 2
    FRAGMENTS_ALLOWED = 4


# --------------------------------------------------------------------------------------
# Arguments


def _status_arg(status_code: Any) -> int:
    if isinstance(status_code, bool) or not isinstance(status_code, int):
        raise UnsupportedTypeError(
            f"status_code must be int, not {type(status_code).__name__}")
    if not _INT_MIN <= status_code <= _INT_MAX:
        raise ValueOutOfRangeError(f"status code {status_code} is outside C int")
    return int(status_code)


def _content_type_arg(content_type: Any) -> Optional[bytes]:
    if content_type is None:
        return None
    return cstr(content_type, "content_type")


def _body_arg(data: Any) -> Tuple[Any, int, Any]:
    """``(argument for C, length, the same bytes as a Python buffer)`` for a body.

    ``bytes`` and writable buffers (``bytearray``, writable ``memoryview``, ``mmap``,
    ``array``) go to C without a copy; a read-only view of a whole ``bytes`` object too.
    Other read-only or non-contiguous buffers are copied once (ctypes cannot take their
    address)."""
    if data is None:
        return None, 0, b""
    if type(data) is bytes:
        return data, len(data), data
    if isinstance(data, str):
        raise UnsupportedTypeError("data must be the raw body as bytes (or bytearray, "
                                   "memoryview), not str: encode it first")
    try:
        view = memoryview(data)
    except TypeError:
        raise UnsupportedTypeError(f"data must be bytes-like (bytes, bytearray, memoryview), "
                                   f"not {type(data).__name__}") from None
    if not view.c_contiguous:
        copy = view.tobytes()
        return copy, len(copy), copy
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    n = view.nbytes
    if n == 0:
        return None, 0, b""
    if view.readonly:
        base = view.obj
        if type(base) is bytes and len(base) == n:
            return base, n, base
        copy = view.tobytes()
        return copy, n, copy
    return (c_char * n).from_buffer(view), n, view


def _status_ranges(codes: StatusCodes) -> Optional[Tuple[range, ...]]:
    """Normalised inclusive ranges (step 1) for ``acceptable_status_codes``."""
    if codes is None:
        return None
    if isinstance(codes, (str, bytes)):
        raise UnsupportedTypeError("acceptable_status_codes takes ints and ranges, "
                                   f"not {type(codes).__name__}")
    items = [codes] if isinstance(codes, (int, range)) else codes
    try:
        iterator = iter(items)
    except TypeError:
        raise UnsupportedTypeError("acceptable_status_codes takes ints, ranges or an "
                                   f"iterable of them, not {type(codes).__name__}") from None
    ranges: List[range] = []
    for item in iterator:
        if isinstance(item, range):
            if len(item) == 0:
                raise ValueError(f"acceptable_status_codes: {item!r} is empty")
            if abs(item.step) == 1:
                low, high = min(item[0], item[-1]), max(item[0], item[-1])
                ranges.append(range(low, high + 1))
            else:
                ranges.extend(range(c, c + 1) for c in item)
        elif isinstance(item, int) and not isinstance(item, bool):
            ranges.append(range(item, item + 1))
        else:
            raise UnsupportedTypeError("acceptable_status_codes takes ints and ranges, "
                                       f"not {type(item).__name__} ({item!r})")
    if not ranges:
        raise ValueError("acceptable_status_codes is empty: use None to accept every status")
    for r in ranges:
        if r.start < _INT_MIN or r.stop - 1 > _INT_MAX:
            raise ValueOutOfRangeError(f"acceptable_status_codes: {r!r} is outside C int")
    return tuple(ranges)


def _content_types(types: Optional[Iterable[str]]) -> Optional[FrozenSet[str]]:
    """The MIME types for ``acceptable_content_types`` as a frozenset (``None``: any)."""
    if types is None:
        return None
    if isinstance(types, (str, bytes)):
        raise UnsupportedTypeError("acceptable_content_types takes an iterable of MIME types "
                                   "(e.g. {'application/json'}), not a single string")
    try:
        items = list(types)
    except TypeError:
        raise UnsupportedTypeError("acceptable_content_types takes an iterable of str, not "
                                   f"{type(types).__name__}") from None
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise UnsupportedTypeError(f"acceptable_content_types[{i}] must be str, not "
                                       f"{type(t).__name__}")
    if not items:
        raise ValueError("acceptable_content_types is empty: use None to accept every type")
    return frozenset(items)


def _reading_options(value: Any) -> JSONReadingOptions:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, int) and isinstance(value, Iterable):
        value = sum(_coerce(JSONReadingOptions, v) for v in value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnsupportedTypeError("reading_options takes JSONReadingOptions, an int, a flag "
                                   f"name or a list of them, not {type(value).__name__}")
    return value  # type: ignore[return-value]


# --------------------------------------------------------------------------------------
# Serializers

R = TypeVar("R", bound="HTTPResponseSerializer")


class HTTPResponseSerializer(HandleOwner):
    """AFHTTPResponseSerializer: validates the status code (default 200-299) and the MIME
    type (default: any); :meth:`response_object` returns the body as ``bytes``.

    Thread-safe like the C serializer: configure it, then validate and decode from any
    thread. Free it with :meth:`close` or ``with``.
    """

    _KIND = _HTTP
    _DEFAULT_TYPES: Optional[FrozenSet[str]] = None

    def __init__(self, *, empty_response_codes: Optional[Iterable[int]] = None,
                 accepts_structured_suffix: bool = False, strips_xssi_prefix: bool = False) -> None:
        """A serializer with AFNetworking's defaults for its kind.

        Args:
            empty_response_codes: Alamofire's rule (see :attr:`empty_response_codes`).
            accepts_structured_suffix: RFC 6839 suffixes (see the property).
            strips_xssi_prefix: the JSON XSSI prefix rule (see the property).
        """
        self._h = CHandle(lib.afs_response_serializer_new(self._KIND),
                          lib.raw.afs_response_serializer_free, "afs_response_serializer")
        self._status_codes: Optional[Tuple[range, ...]] = (range(200, 300),)
        self._types: Optional[FrozenSet[str]] = self._DEFAULT_TYPES
        self._removes_nulls = False
        self._options = JSONReadingOptions.NONE
        self._max_decoded_bytes = 0
        self._init_rules(empty_response_codes, accepts_structured_suffix, strips_xssi_prefix)

    def _init_rules(self, empty_response_codes: Optional[Iterable[int]],
                    accepts_structured_suffix: bool, strips_xssi_prefix: bool) -> None:
        self._empty_codes: Optional[Tuple[int, ...]] = None
        self._suffix = False
        self._xssi = False
        if empty_response_codes is not None:
            self.empty_response_codes = empty_response_codes
        if accepts_structured_suffix:
            self.accepts_structured_suffix = accepts_structured_suffix
        if strips_xssi_prefix:
            self.strips_xssi_prefix = strips_xssi_prefix

    # -- Alamofire's rules (header section 12) ---------------------------------------------

    @property
    def empty_response_codes(self) -> Optional[Tuple[int, ...]]:
        """Alamofire's emptyResponseCodes (default ``None``: any empty body is ``None``); with
        codes, an empty body elsewhere than those codes or ``method="HEAD"`` is an error."""
        return self._empty_codes

    @empty_response_codes.setter
    def empty_response_codes(self, codes: Optional[Iterable[int]]) -> None:
        if codes is None:
            listed: Tuple[int, ...] = ()
        elif isinstance(codes, int):
            listed = (codes,)
        else:
            listed = tuple(codes)
        for i, c in enumerate(listed):
            if type(c) is not int:
                raise UnsupportedTypeError(f"empty_response_codes[{i}] must be int, not "
                                           f"{type(c).__name__}")
            if not _INT_MIN <= c <= _INT_MAX:
                raise ValueOutOfRangeError(f"empty_response_codes[{i}] ({c}) is outside int")
        array = (c_int * max(len(listed), 1))(*listed)
        lib.afs_response_serializer_set_empty_response_codes(self._h.get(), array, len(listed))
        value = listed or None
        self._empty_codes = value
        for m in getattr(self, "_members", ()):
            m._empty_codes = value

    @property
    def accepts_structured_suffix(self) -> bool:
        """RFC 6839 (default False): JSON accepts any ``*/*+json``, XML any ``*/*+xml``."""
        return self._suffix

    @accepts_structured_suffix.setter
    def accepts_structured_suffix(self, on: bool) -> None:
        self._set_switch("accepts_structured_suffix", on, "_suffix",
                         lib.afs_response_serializer_set_accepts_structured_suffix)

    @property
    def strips_xssi_prefix(self) -> bool:
        """JSON (default False): strip a leading ``)]}'``, ``,`` and newline."""
        return self._xssi

    @strips_xssi_prefix.setter
    def strips_xssi_prefix(self, on: bool) -> None:
        self._set_switch("strips_xssi_prefix", on, "_xssi",
                         lib.afs_response_serializer_set_strips_xssi_prefix)

    def _set_switch(self, name: str, on: bool, attr: str, setter: Any) -> None:
        """Sets an on/off rule in C and remembers it here and on a compound's members (the
        C compound passes it to them)."""
        if not isinstance(on, bool):
            raise UnsupportedTypeError(f"{name} must be bool, not {type(on).__name__}")
        setter(self._h.get(), on)
        setattr(self, attr, on)
        for m in getattr(self, "_members", ()):
            setattr(m, attr, on)

    # -- lifecycle ------------------------------------------------------------------------

    def copy(self: R) -> R:
        """An independent copy of everything (``afs_response_serializer_copy``).
        ``copy.copy`` and ``copy.deepcopy`` give the same."""
        cls = type(self)
        new = cls.__new__(cls)
        new._h = CHandle(lib.afs_response_serializer_copy(self._h.get()),
                         lib.raw.afs_response_serializer_free, "afs_response_serializer")
        for name, value in self.__dict__.items():
            if name != "_h":
                new.__dict__[name] = value
        return new

    __copy__ = copy

    def __deepcopy__(self: R, memo: Dict[int, Any]) -> R:
        return self.copy()

    def __reduce__(self) -> Any:
        raise TypeError(f"a {type(self).__name__} holds a C handle and cannot be pickled; "
                        "use copy() for a copy")

    def __repr__(self) -> str:
        state = " closed" if self._h.closed else ""
        return f"<afserialization.{type(self).__name__}{state}>"

    # -- configuration --------------------------------------------------------------------

    @property
    def acceptable_status_codes(self) -> Optional[Tuple[range, ...]]:
        """The acceptable status codes as ranges (default ``(range(200, 300),)``), or
        ``None`` for every status.

        Set it to an int, a ``range`` (step 1 gives one inclusive C range; another step
        gives its codes one by one), an iterable of ints and ranges
        (``[range(200, 300), 304]``), or ``None``. An empty iterable raises ``ValueError``
        (in C an empty list accepts every status: say ``None`` for that).
        """
        return self._status_codes

    @acceptable_status_codes.setter
    def acceptable_status_codes(self, codes: StatusCodes) -> None:
        ranges = _status_ranges(codes)
        self._apply_status_codes(ranges)
        self._status_codes = ranges

    def _apply_status_codes(self, ranges: Optional[Tuple[range, ...]]) -> None:
        n = len(ranges) if ranges else 0
        first = (c_int * max(n, 1))(*(r.start for r in ranges or ()))
        last = (c_int * max(n, 1))(*(r.stop - 1 for r in ranges or ()))
        lib.afs_response_serializer_set_acceptable_status_codes(self._h.get(), first, last, n)

    @property
    def max_decoded_bytes(self) -> int:
        """The most a decoded tree may be charged, in bytes (0, the default: 64 x the body
        size + 1 MiB; a larger value cannot raise that). A value counts 32 bytes plus its
        text or data, a shared binary-plist object at every place it is referenced. Beyond
        it decoding raises :class:`~afserialization.InvalidJSONError` or
        :class:`~afserialization.InvalidPlistError` ("the decoded tree would take more
        than N bytes"). ``afs_response_serializer_set_max_decoded_bytes``.
        """
        return self._max_decoded_bytes

    @max_decoded_bytes.setter
    def max_decoded_bytes(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"max_decoded_bytes must be an int, not {type(n).__name__}")
        if n < 0:
            raise ValueError(f"max_decoded_bytes must be 0 or more, not {n}")
        lib.afs_response_serializer_set_max_decoded_bytes(self._h.get(), min(n, 2**64 - 1))
        self._max_decoded_bytes = n

    @property
    def acceptable_content_types(self) -> Optional[FrozenSet[str]]:
        """The acceptable MIME types (``type/subtype``, compared case-insensitively), or
        ``None`` for any. Defaults: HTTP ``None``; JSON ``application/json``, ``text/json``,
        ``text/javascript``; plist ``application/x-plist``.

        Set it to an iterable of str or ``None``. A single str or an empty iterable raises
        (``TypeError``, ``ValueError``); a malformed type raises
        :class:`~afserialization.InvalidArgumentError` naming it.
        """
        return self._types

    @acceptable_content_types.setter
    def acceptable_content_types(self, types: Optional[Iterable[str]]) -> None:
        frozen = _content_types(types)
        self._apply_content_types(None if frozen is None else sorted(frozen))
        self._types = frozen

    def _apply_content_types(self, types: Optional[List[str]]) -> None:
        encoded = [cstr(t, f"acceptable_content_types[{i}]") for i, t in enumerate(types or ())]
        array = (c_char_p * max(len(encoded), 1))(*encoded)
        lib.afs_response_serializer_set_acceptable_content_types(self._h.get(), array,
                                                                 len(encoded))

    def _apply_removes_nulls(self, on: bool) -> None:
        lib.afs_response_serializer_set_removes_keys_with_null_values(self._h.get(), on)

    def _apply_options(self, options: int) -> None:
        lib.afs_response_serializer_set_json_reading_options(self._h.get(), options)

    # -- validation and decoding ----------------------------------------------------------

    def validate(self, status_code: int, content_type: Optional[str],
                 data: ResponseBody) -> None:
        """``validateResponse:data:error:``: checks the status code and the MIME type.

        Args:
            status_code: the response's status code.
            content_type: the ``Content-Type`` header value (parameters ignored), or
                ``None`` when the response has none.
            data: the body (bytes-like, or ``None`` for none): an absent Content-Type with
                an empty body passes.

        Raises:
            UnacceptableStatusError: the status is outside the acceptable ranges
                ("Request failed: not found (404)"); ``status_code`` is set, ``document``
                is ``None`` (nothing is decoded here).
            UnacceptableContentTypeError: the MIME type is not acceptable (named).
            TypeError: arguments of the wrong type.
        """
        code = _status_arg(status_code)
        ct = _content_type_arg(content_type)
        buf, n, _ = _body_arg(data)
        try:
            lib.afs_response_validate(self._h.get(), code, ct, buf, n)
        except UnacceptableStatusError as e:
            e.status_code = code
            raise

    def response_object(self, status_code: int, content_type: Optional[str],
                        data: ResponseBody, method: Optional[str] = None) -> Any:
        """``responseObjectForResponse:data:error:``: validates, then decodes the body into
        plain Python objects (see the module docstring for the mapping).

        Returns ``None`` for no object: an empty body, or one space for JSON and plist.
        ``method`` is the request's method (``"HEAD"`` matters under
        :attr:`empty_response_codes`); ``None`` for unknown.

        Raises:
            UnacceptableStatusError: the status is outside the acceptable ranges; the body
                is still decoded when possible and is the exception's ``document`` (the
                server's error document), with ``status_code`` set.
            UnacceptableContentTypeError: the MIME type is not acceptable; nothing decoded.
            InvalidJSONError, InvalidPlistError: a malformed body; the message names the
                byte offset.
            TypeError: arguments of the wrong type.
        """
        if type(status_code) is int and _INT_MIN <= status_code <= _INT_MAX:
            code = status_code
        else:
            code = _status_arg(status_code)
        ct = _CONTENT_TYPES.get(content_type) if type(content_type) is str else None
        if ct is None:
            ct = _content_type_arg(content_type)
        if type(data) is bytes:
            buf, n = data, len(data)
        else:
            buf, n, _ = _body_arg(data)
        document = None
        if method is not None:
            if not isinstance(method, str):
                raise UnsupportedTypeError(f"method must be str or None, not {type(method).__name__}")
            mb = cstr(method, "method")
        if _DECODE_AS_PICKLE:
            err, eref, address, aref, length, lref = _scratch()
            if method is None:
                status = _response_pickle(self._h.get(), code, ct, buf, n, aref, lref, eref)
            else:
                status = _response_pickle_for_method(self._h.get(), mb, code, ct, buf, n, aref,
                                                     lref, eref)
            if status:
                err = _ffi.afs_error.from_buffer_copy(err)  # before loads can run other code
            if address:
                document = _load_owned(_transfer.address_of(address), length.value, _free)
        else:
            err = _ffi.afs_error()
            out = c_value_p()
            if method is None:
                status = lib.afs_response_object(self._h.get(), code, ct, buf, n, byref(out),
                                                 byref(err))
            else:
                status = lib.afs_response_object_for_method(self._h.get(), mb, code, ct, buf, n,
                                                            byref(out), byref(err))
            if out:
                try:
                    document = tree_to_python(cast(out, c_void_p).value)
                finally:
                    lib.raw.afs_value_free(out)
        if status:
            exc = err.to_exception(status)
            if isinstance(exc, UnacceptableStatusError):
                exc.status_code = code
                exc.document = document
            raise exc
        return document


class JSONResponseSerializer(HTTPResponseSerializer):
    """AFJSONResponseSerializer: accepts ``application/json``, ``text/json`` and
    ``text/javascript`` by default and decodes JSON bodies (strict RFC 8259, UTF-8)."""

    _KIND = _JSON
    _DEFAULT_TYPES = frozenset(("application/json", "text/json", "text/javascript"))

    def __init__(self, reading_options: Any = JSONReadingOptions.NONE,
                 removes_keys_with_null_values: bool = False, **rules: Any) -> None:
        """
        Args:
            reading_options: :class:`JSONReadingOptions`, an int, a flag name
                (``"fragments_allowed"``) or a list of them.
            removes_keys_with_null_values: drop null dictionary values and null array
                elements, recursively.
            rules: ``empty_response_codes``, ``accepts_structured_suffix``,
                ``strips_xssi_prefix`` (see :class:`HTTPResponseSerializer`).
        """
        super().__init__(**rules)
        if reading_options:
            self.reading_options = reading_options
        if removes_keys_with_null_values:
            self.removes_keys_with_null_values = removes_keys_with_null_values

    @property
    def reading_options(self) -> JSONReadingOptions:
        """NSJSONReadingOptions (default ``NONE``: the top level must be an object or an
        array; ``FRAGMENTS_ALLOWED`` accepts a scalar)."""
        return self._options

    @reading_options.setter
    def reading_options(self, value: Any) -> None:
        options = _reading_options(value)
        self._apply_options(int(options))
        self._options = JSONReadingOptions(int(options))

    @property
    def removes_keys_with_null_values(self) -> bool:
        """removesKeysWithNullValues (default False): null dictionary values and null array
        elements are dropped at every depth."""
        return self._removes_nulls

    @removes_keys_with_null_values.setter
    def removes_keys_with_null_values(self, on: bool) -> None:
        if not isinstance(on, bool):
            raise UnsupportedTypeError("removes_keys_with_null_values must be bool, not "
                                       f"{type(on).__name__}")
        self._apply_removes_nulls(on)
        self._removes_nulls = on


class PropertyListResponseSerializer(HTTPResponseSerializer):
    """AFPropertyListResponseSerializer: accepts ``application/x-plist`` by default and
    decodes XML and binary property lists (as Python's :mod:`plistlib` and Foundation
    write them)."""

    _KIND = _PLIST
    _DEFAULT_TYPES = frozenset(("application/x-plist",))


class CompoundResponseSerializer(HTTPResponseSerializer):
    """AFCompoundResponseSerializer: tries its members in order; the first whose validation
    passes decodes the response. When none passes, the outcome is that of the first member
    that accepts the MIME type (so a JSON error document with status 500 is decoded by the
    JSON member and becomes the error's ``document``), else that of the first member.

    The members are copied when the compound is made (a compound member contributes its
    own members). Setting :attr:`acceptable_status_codes`,
    :attr:`acceptable_content_types`, :attr:`removes_keys_with_null_values` or
    :attr:`reading_options` on the compound sets it on every member; reading one gives the
    members' common value and raises ``ValueError`` when they differ (see
    :attr:`members`). Bodies are decoded by walking the library's tree.
    """

    _KIND = _HTTP

    def __init__(self, members: Iterable[HTTPResponseSerializer], *,
                 empty_response_codes: Optional[Iterable[int]] = None,
                 accepts_structured_suffix: bool = False, strips_xssi_prefix: bool = False) -> None:
        """
        Args:
            members: response serializers, tried in this order (at least one).
            empty_response_codes, accepts_structured_suffix, strips_xssi_prefix: set on
                every member when given (see :class:`HTTPResponseSerializer`).

        Raises:
            TypeError: a member that is not a response serializer.
            InvalidArgumentError: no members.
        """
        if isinstance(members, HTTPResponseSerializer):
            raise UnsupportedTypeError("members must be an iterable of response serializers")
        flat: List[HTTPResponseSerializer] = []
        for i, m in enumerate(members):
            if not isinstance(m, HTTPResponseSerializer):
                raise UnsupportedTypeError(f"members[{i}] must be a response serializer, not "
                                           f"{type(m).__name__}")
            if isinstance(m, CompoundResponseSerializer):
                flat.extend(m._members)
            else:
                flat.append(m)
        pointers = [m._h.get() for m in flat]
        array = (c_response_serializer_p * max(len(pointers), 1))(*pointers)
        self._h = CHandle(lib.afs_response_serializer_new_compound(array, len(pointers)),
                          lib.raw.afs_response_serializer_free, "afs_response_serializer")
        self._members: Tuple[HTTPResponseSerializer, ...] = tuple(m.copy() for m in flat)
        self._empty_codes = self._common_or_none("_empty_codes")
        self._suffix = bool(self._common_or_none("_suffix"))
        self._xssi = bool(self._common_or_none("_xssi"))
        if empty_response_codes is not None:
            self.empty_response_codes = empty_response_codes
        if accepts_structured_suffix:
            self.accepts_structured_suffix = accepts_structured_suffix
        if strips_xssi_prefix:
            self.strips_xssi_prefix = strips_xssi_prefix

    def _common_or_none(self, name: str) -> Any:
        values = {getattr(m, name) for m in self._members}
        return values.pop() if len(values) == 1 else None

    def response_object(self, status_code: int, content_type: Optional[str],
                        data: ResponseBody) -> Any:
        """As :meth:`HTTPResponseSerializer.response_object`; an XML member's tree comes
        back as an ``xml.etree.ElementTree.Element`` (see :mod:`afserialization.xmlparse`)."""
        if not any(m._KIND == _XML for m in self._members):
            return super().response_object(status_code, content_type, data)
        from .xmlparse import compound_response_object
        return compound_response_object(self, super().response_object, status_code, content_type, data)

    def copy(self) -> "CompoundResponseSerializer":
        """An independent copy of everything, members included."""
        new = super().copy()
        new._members = tuple(m.copy() for m in self._members)
        return new

    __copy__ = copy

    def close(self) -> None:
        """Frees the C serializer and the members' copies (idempotent)."""
        self._h.close()
        for m in getattr(self, "_members", ()):
            m.close()

    @property
    def members(self) -> Tuple[HTTPResponseSerializer, ...]:
        """Copies of the members, flattened, in order, with the settings they have now
        (changing a copy does not change the compound)."""
        self._h.get()
        return tuple(m.copy() for m in self._members)

    def _common(self, name: str, json_only: bool = False) -> Any:
        members = self._members
        if json_only:
            members = tuple(m for m in members if m._KIND == _JSON) or members
        values = {getattr(m, name) for m in members}
        if len(values) != 1:
            raise ValueError(f"the members' {name.lstrip('_')} differ; read them from "
                             f".members")
        return values.pop()

    @property  # type: ignore[override]
    def acceptable_status_codes(self) -> Optional[Tuple[range, ...]]:
        """Every member's acceptable status codes (``ValueError`` when they differ);
        setting them sets every member's."""
        return self._common("_status_codes")

    @acceptable_status_codes.setter
    def acceptable_status_codes(self, codes: StatusCodes) -> None:
        ranges = _status_ranges(codes)
        self._apply_status_codes(ranges)
        for m in self._members:
            m._apply_status_codes(ranges)
            m._status_codes = ranges

    @property  # type: ignore[override]
    def acceptable_content_types(self) -> Optional[FrozenSet[str]]:
        """Every member's acceptable MIME types (``ValueError`` when they differ); setting
        them sets every member's."""
        return self._common("_types")

    @acceptable_content_types.setter
    def acceptable_content_types(self, types: Optional[Iterable[str]]) -> None:
        frozen = _content_types(types)
        listed = None if frozen is None else sorted(frozen)
        self._apply_content_types(listed)
        for m in self._members:
            m._apply_content_types(listed)
            m._types = frozen

    @property
    def removes_keys_with_null_values(self) -> bool:
        """The JSON members' removesKeysWithNullValues (``ValueError`` when they differ);
        setting it sets every member's."""
        return self._common("_removes_nulls", json_only=True)

    @removes_keys_with_null_values.setter
    def removes_keys_with_null_values(self, on: bool) -> None:
        if not isinstance(on, bool):
            raise UnsupportedTypeError("removes_keys_with_null_values must be bool, not "
                                       f"{type(on).__name__}")
        self._apply_removes_nulls(on)
        for m in self._members:
            m._apply_removes_nulls(on)
            m._removes_nulls = on

    @property
    def reading_options(self) -> JSONReadingOptions:
        """The JSON members' reading options (``ValueError`` when they differ); setting
        them sets every member's."""
        return self._common("_options", json_only=True)

    @reading_options.setter
    def reading_options(self, value: Any) -> None:
        options = JSONReadingOptions(int(_reading_options(value)))
        self._apply_options(int(options))
        for m in self._members:
            m._apply_options(int(options))
            m._options = options


class ImageResponseSerializer(HTTPResponseSerializer):
    """AFImageResponseSerializer without pixel decoding: accepts AFNetworking's image types
    plus ``image/webp``; identifies the body from its bytes (PNG, JPEG, GIF, BMP, TIFF, ICO,
    WebP; XBM for ``image/x-xbitmap``), reads its header strictly and returns a dict
    ``{"format", "width", "height", "scale", "point_width", "point_height", "frames",
    "data"}`` where ``data`` is the body as sent: decode it with your codec, e.g.
    ``PIL.Image.open(io.BytesIO(result["data"]))``.

    A content type that disagrees with the bytes, a truncated or corrupt file raise
    ``InvalidImageError``; more pixels than :attr:`max_image_pixels` ``LimitError``.
    """

    _KIND = _IMAGE
    _DEFAULT_TYPES = frozenset((
        "image/tiff", "image/jpeg", "image/gif", "image/png", "image/ico", "image/x-icon",
        "image/bmp", "image/x-bmp", "image/x-xbitmap", "image/x-win-bitmap", "image/webp"))

    def __init__(self, image_scale: float = 1.0, max_image_pixels: int = 1 << 31,
                 **rules: Any) -> None:
        """
        Args:
            image_scale: AFNetworking's ``imageScale``: point sizes are pixels / scale.
            max_image_pixels: the most width x height accepted (default 2**31).
            rules: ``empty_response_codes``, ``accepts_structured_suffix``,
                ``strips_xssi_prefix`` (see :class:`HTTPResponseSerializer`).
        """
        super().__init__(**rules)
        self._scale = 1.0
        self._max_pixels = 1 << 31
        if image_scale != 1.0:
            self.image_scale = image_scale
        if max_image_pixels != 1 << 31:
            self.max_image_pixels = max_image_pixels

    @property
    def image_scale(self) -> float:
        """The scale the point sizes divide by (default 1.0; a finite number above 0)."""
        return self._scale

    @image_scale.setter
    def image_scale(self, scale: float) -> None:
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise UnsupportedTypeError(f"image_scale must be a number, not {type(scale).__name__}")
        lib.afs_response_serializer_set_image_scale(self._h.get(), float(scale))
        self._scale = float(scale)

    @property
    def max_image_pixels(self) -> int:
        """The most pixels (width x height) an image may have (default 2**31)."""
        return self._max_pixels

    @max_image_pixels.setter
    def max_image_pixels(self, n: int) -> None:
        if type(n) is not int:
            raise UnsupportedTypeError(f"max_image_pixels must be int, not {type(n).__name__}")
        if not 0 < n < 1 << 64:
            raise ValueOutOfRangeError(f"max_image_pixels ({n}) must be 1 to 2**64-1")
        lib.afs_response_serializer_set_max_image_pixels(self._h.get(), n)
        self._max_pixels = n


_response_pickle = lib.raw.afs_response_object_pickle
_response_pickle_for_method = lib.raw.afs_response_object_pickle_for_method
_scratch = _transfer.scratch
_load_owned = _transfer.load_owned
_free = lib.raw.afs_free
#: Encoded Content-Type values seen often (``cstr`` for the others).
_CONTENT_TYPES = {t: t.encode("ascii") for t in (
    "application/json", "application/json; charset=utf-8", "application/json; charset=UTF-8",
    "text/json", "text/javascript", "application/x-plist", "text/plain",
    "application/octet-stream", "text/html; charset=utf-8")}
