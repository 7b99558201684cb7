"""Request serializers: AFHTTPRequestSerializer, AFJSONRequestSerializer and
AFPropertyListRequestSerializer over ``afs_serializer``."""
from __future__ import annotations

import codecs
import enum
import threading
from collections.abc import MutableMapping
from typing import (TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Iterable, Iterator, List,
                    Optional, Tuple, Type, TypeVar, Union)

from ctypes import POINTER, byref, c_size_t, c_uint8

from ._enum import QuietEnumMeta
from . import _ffi, _transfer
from . import values as _values
from ._ffi import QUERY_FN, c_char_p, lib
from ._handle import CHandle, HandleOwner
from ._text import cstr
from .errors import (BadURLError, InvalidArgumentError, InvalidHeaderError, InvalidMethodError,
                     InvalidUTF8Error)
from .request import Request
from .values import Params, ParamsRef, Value

if TYPE_CHECKING:  # pragma: no cover
    from .multipart import MultipartForm

__all__ = [
    "HTTPRequestSerializer", "JSONRequestSerializer", "PropertyListRequestSerializer",
    "SerializerHeaders", "ArrayStyle", "BoolStyle", "SpaceStyle", "StringEncoding",
    "JSONWritingOptions", "PropertyListFormat", "QuerySerializer",
]

#: A custom query serializer: ``fn(request, params) -> str``. ``request`` is a read-only
#: view valid during the call; ``params`` is the object given to ``request()``.
QuerySerializer = Callable[[Request, Any], Optional[Union[str, bytes]]]


class ArrayStyle(enum.IntEnum, metaclass=QuietEnumMeta):
    """How arrays are written in queries: ``a[]=1`` (AFNetworking), ``a=1``, ``a[0]=1``."""

    BRACKETS = 0
    NO_BRACKETS = 1
    INDEXED = 2


class BoolStyle(enum.IntEnum, metaclass=QuietEnumMeta):
    """How bools are written in queries: ``1``/``0`` (AFNetworking) or ``true``/``false``."""

    NUMERIC = 0
    LITERAL = 1


class SpaceStyle(enum.IntEnum, metaclass=QuietEnumMeta):
    """How spaces are written in queries: ``%20`` (AFNetworking) or ``+``."""

    PERCENT = 0
    PLUS = 1


class StringEncoding(enum.IntEnum, metaclass=QuietEnumMeta):
    """Encoding of form bodies and multipart field values."""

    UTF8 = 0
    ASCII = 1
    ISO_8859_1 = 2


class JSONWritingOptions(enum.IntFlag, metaclass=QuietEnumMeta):
    """NSJSONWritingOptions."""

    NONE = 0
    PRETTY_PRINTED = 1
    SORTED_KEYS = 2
    FRAGMENTS_ALLOWED = 4
    WITHOUT_ESCAPING_SLASHES = 8


class PropertyListFormat(enum.IntEnum, metaclass=QuietEnumMeta):
    """NSPropertyListFormat."""

    XML = 100
    BINARY = 200


E = TypeVar("E", bound=enum.IntEnum)


def _coerce(cls: Type[E], value: Any) -> int:
    """An enum member, its name (any case, ``-`` for ``_``) or a raw int (passed to C
    unchecked, so the library reports an unknown value)."""
    if isinstance(value, str):
        key = value.strip().upper().replace("-", "_")
        try:
            return int(cls[key])
        except KeyError:
            raise ValueError(f"unknown {cls.__name__} {value!r}; expected one of "
                             f"{', '.join(m.name.lower() for m in cls)}") from None
    return int(value)


def _coerce_encoding(value: Any) -> int:
    if isinstance(value, str):
        try:
            name = codecs.lookup(value).name
        except LookupError:
            name = value
        aliases = {"utf-8": "UTF8", "ascii": "ASCII", "iso8859-1": "ISO_8859_1",
                   "latin-1": "ISO_8859_1"}
        value = aliases.get(name, value)
    return _coerce(StringEncoding, value)


# --------------------------------------------------------------------------------------
# The custom query serializer trampoline

_calls = threading.local()  # the Python params of the request() calls on this thread


def _make_query_trampoline(fn: QuerySerializer) -> Any:
    def trampoline(ctx: Any, request_ptr: Any, params_ptr: Any, err: Any) -> Optional[int]:
        try:
            stack = getattr(_calls, "params", None)
            params = stack[-1] if stack else None
            view = Request._borrow(request_ptr)
            try:
                result = fn(view, params)
            finally:
                view._h._ptr = None  # borrowed: invalid after the callback
            if result is None:
                return None
            if isinstance(result, str):
                data = result.encode("utf-8", "surrogatepass")
            elif isinstance(result, (bytes, bytearray)):
                data = bytes(result)
            else:
                raise TypeError(f"the query serializer returned {type(result).__name__}; "
                                "expected str (or bytes, or None for an error)")
            return lib.raw.afs_string_new(data, len(data))
        except BaseException as exc:  # noqa: B902 - everything must stay out of C
            try:
                _ffi.store_exception(exc)
                text = f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:500]
                text = text.decode("utf-8", "ignore").encode("utf-8")  # whole characters
                err.contents.message = text
            except BaseException:
                pass
            return None
    return QUERY_FN(trampoline)


class _Calling:
    """Pushes the Python ``params`` for the query trampoline during one C call."""

    __slots__ = ("params",)

    def __init__(self, params: Any) -> None:
        self.params = params

    def __enter__(self) -> None:
        stack = getattr(_calls, "params", None)
        if stack is None:
            stack = _calls.params = []
        stack.append(self.params)

    def __exit__(self, *exc: Any) -> None:
        _calls.params.pop()


# --------------------------------------------------------------------------------------
# Headers


class SerializerHeaders(MutableMapping):
    """The serializer's default headers (``HTTPRequestHeaders``), case-insensitive.

    A live view of the C serializer: every read asks it. Names and order come from
    ``afs_serializer_copy_headers`` (one consistent snapshot per iteration, ``len`` or
    :meth:`items`), so the defaults (``Accept-Language``, ``User-Agent``), headers set
    through this mapping, ``Authorization`` from :meth:`HTTPRequestSerializer.set_basic_auth`
    and headers set on the same C serializer by C code all appear; single values come from
    ``afs_serializer_copy_header``.

    ``headers[name] = None`` removes the header, as ``afs_serializer_set_header`` with a
    NULL value does, and is no error when it is not set; ``del headers[name]`` raises
    ``KeyError`` for a header that is not set. :class:`~afserialization.RequestHeaders`
    behave the same.
    """

    __slots__ = ("_owner",)

    def __init__(self, owner: "HTTPRequestSerializer") -> None:
        """Internal: use :attr:`HTTPRequestSerializer.headers`."""
        self._owner = owner

    def _snapshot(self) -> List[Tuple[str, str]]:
        """Every header at one instant, in order, as ``(name, value)`` pairs."""
        text = lib.afs_serializer_copy_headers(self._owner._h.get()) or ""
        pairs = []
        for line in text.split("\r\n"):
            if line:
                name, _, value = line.partition(": ")  # names are tokens: no ':' inside
                pairs.append((name, value))
        return pairs

    def __getitem__(self, name: str) -> str:
        if not isinstance(name, (str, bytes)):
            raise KeyError(name)
        value = lib.afs_serializer_copy_header(self._owner._h.get(),
                                               cstr(name, "header name", InvalidHeaderError))
        if value is None:
            raise KeyError(name)
        return value

    def __setitem__(self, name: str, value: Optional[str]) -> None:
        """Sets a default header; ``None`` removes it (no error when it is not set)."""
        if value is None:
            self.pop(name, None)
            return
        lib.afs_serializer_set_header(self._owner._h.get(),
                                      cstr(name, "header name", InvalidHeaderError),
                                      cstr(value, f"the value of header {name!r}",
                                           InvalidHeaderError))

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        lib.afs_serializer_set_header(self._owner._h.get(),
                                      cstr(name, "header name", InvalidHeaderError), None)

    def __contains__(self, name: object) -> bool:
        try:
            self[name]  # type: ignore[index]
        except (KeyError, InvalidHeaderError):
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, _ in self._snapshot()])

    def __len__(self) -> int:
        """The number of headers set."""
        return len(self._snapshot())

    def items(self) -> Any:
        """``(name, value)`` pairs in order, from one snapshot of the C serializer."""
        return self._snapshot()

    def copy(self) -> Dict[str, str]:
        """A plain ``dict`` snapshot (names as the serializer spells them)."""
        return dict(self._snapshot())

    def __repr__(self) -> str:
        return f"SerializerHeaders({dict(self._snapshot())!r})"


# --------------------------------------------------------------------------------------
# Serializers


class HTTPRequestSerializer(HandleOwner):
    """AFHTTPRequestSerializer: query strings for ``GET``/``HEAD``/``DELETE`` and
    ``application/x-www-form-urlencoded`` bodies for other methods.

    Thread-safe like the C serializer: configure it, then build requests from any thread.
    Free it with :meth:`close` or ``with``; requests it made stay valid.
    """

    _KIND = 0

    def __init__(self, *, base_url: Optional[str] = None) -> None:
        """A serializer with AFNetworking's defaults: ``Accept-Language`` and ``User-Agent``
        headers, URI methods GET/HEAD/DELETE, UTF-8, NSURLRequest's properties.

        ``base_url`` (AFHTTPSessionManager's ``baseURL``): relative references given to
        :meth:`request` and :meth:`multipart_form` resolve against it; see
        :attr:`base_url`."""
        self._h = CHandle(lib.afs_serializer_new(self._KIND), lib.raw.afs_serializer_free,
                          "afs_serializer")
        self._base_url: Optional[str] = None
        if base_url is not None:
            self.base_url = base_url
        self._uri_methods: FrozenSet[str] = frozenset(("GET", "HEAD", "DELETE"))
        self._string_encoding = StringEncoding.UTF8
        self._styles = (ArrayStyle.BRACKETS, BoolStyle.NUMERIC, SpaceStyle.PERCENT)
        self._query_serializer: Optional[QuerySerializer] = None
        self._properties: Dict[str, Any] = {
            "timeout_interval": 60.0, "cache_policy": 0, "should_handle_cookies": True,
            "should_use_pipelining": False, "allows_cellular_access": True,
            "network_service_type": 0}
        self._json_options = JSONWritingOptions.NONE
        self._plist_format = PropertyListFormat.XML

    # -- lifecycle ------------------------------------------------------------------------

    def copy(self) -> "HTTPRequestSerializer":
        """An independent copy of everything (``afs_serializer_copy``): changing one's
        headers or options leaves the other alone. ``copy.copy`` and ``copy.deepcopy`` give
        the same."""
        cls = type(self)
        new = cls.__new__(cls)
        new._h = CHandle(lib.afs_serializer_copy(self._h.get()), lib.raw.afs_serializer_free,
                         "afs_serializer")
        new._h.keepalive = dict(self._h.keepalive)  # the query trampoline C now shares
        for name, value in self.__dict__.items():
            if name != "_h":
                new.__dict__[name] = list(value) if isinstance(value, list) else \
                    dict(value) if isinstance(value, dict) else value
        return new

    __copy__ = copy

    def __deepcopy__(self, memo: Dict[int, Any]) -> "HTTPRequestSerializer":
        """The same as :meth:`copy`: an independent serializer (a custom query serializer,
        a Python callable, is shared, as ``copy`` shares it)."""
        return self.copy()

    def __reduce__(self) -> Any:
        raise TypeError(f"a {type(self).__name__} holds a C handle and cannot be pickled; "
                        "use copy() for a copy")

    def __repr__(self) -> str:
        state = " closed" if self._h.closed else ""
        return f"<afserialization.{type(self).__name__}{state}>"

    # -- headers and authorization -------------------------------------------------------

    @property
    def headers(self) -> SerializerHeaders:
        """The default headers added to requests that lack them (mapping, case-insensitive)."""
        return SerializerHeaders(self)

    @headers.setter
    def headers(self, value: Any) -> None:
        view = SerializerHeaders(self)
        for name in list(view):
            del view[name]
        for name, v in (value.items() if hasattr(value, "items") else value):
            view[name] = v

    def set_basic_auth(self, username: str, password: str) -> None:
        """Sets ``Authorization: Basic base64(username:password)``."""
        lib.afs_serializer_set_basic_auth(self._h.get(), cstr(username, "username"),
                                          cstr(password, "password"))

    def clear_authorization(self) -> None:
        """Removes the ``Authorization`` header."""
        lib.afs_serializer_clear_authorization(self._h.get())

    def set_content_encoding(self, coding: Optional[str], level: Optional[int] = None,
                             exact: bool = False, existing: Any = "error",
                             min_size: int = 0) -> None:
        """Compresses the body of every request made from now on, as
        :meth:`Request.set_content_encoding` does, when it has at least ``min_size`` bytes
        (a body of unknown length always). ``existing`` ("error", "replace", "skip" or an
        :class:`~afserialization.transforms.ExistingEncoding`) decides for a request that
        already has ``Content-Encoding``. ``coding`` None turns it off."""
        from . import transforms
        transforms.serializer_set_content_encoding(self._h.get(), coding, level, exact,
                                                   existing, min_size)

    # -- behaviour ------------------------------------------------------------------------

    @property
    def uri_methods(self) -> FrozenSet[str]:
        """Methods whose parameters go into the URL query (default GET, HEAD, DELETE);
        stored uppercase."""
        return self._uri_methods

    @uri_methods.setter
    def uri_methods(self, methods: Iterable[str]) -> None:
        methods = list(methods)
        encoded = [cstr(m, "method", InvalidMethodError) for m in methods]
        array = (c_char_p * max(len(encoded), 1))(*encoded)
        lib.afs_serializer_set_uri_methods(self._h.get(), array, len(encoded))
        self._uri_methods = frozenset(m.upper() if isinstance(m, str) else m.decode().upper()
                                      for m in methods)

    @property
    def string_encoding(self) -> StringEncoding:
        """Encoding of form bodies: ``StringEncoding`` or ``"utf-8"``, ``"ascii"``,
        ``"iso-8859-1"`` when set."""
        return self._string_encoding

    @string_encoding.setter
    def string_encoding(self, value: Any) -> None:
        code = _coerce_encoding(value)
        lib.afs_serializer_set_string_encoding(self._h.get(), code)
        self._string_encoding = StringEncoding(code)

    def set_query_style(self, array: Any = None, bools: Any = None, spaces: Any = None) -> None:
        """Sets the query styles (``None`` keeps the current one). Each accepts the enum,
        its name (``"indexed"``) or its int value."""
        a = self._styles[0] if array is None else _coerce(ArrayStyle, array)
        b = self._styles[1] if bools is None else _coerce(BoolStyle, bools)
        s = self._styles[2] if spaces is None else _coerce(SpaceStyle, spaces)
        lib.afs_serializer_set_query_style(self._h.get(), a, b, s)
        self._styles = (ArrayStyle(a), BoolStyle(b), SpaceStyle(s))

    @property
    def array_style(self) -> ArrayStyle:
        """How arrays are written in queries (default ``BRACKETS``)."""
        return self._styles[0]

    @array_style.setter
    def array_style(self, value: Any) -> None:
        self.set_query_style(array=value)

    @property
    def bool_style(self) -> BoolStyle:
        """How bools are written in queries (default ``NUMERIC``)."""
        return self._styles[1]

    @bool_style.setter
    def bool_style(self, value: Any) -> None:
        self.set_query_style(bools=value)

    @property
    def space_style(self) -> SpaceStyle:
        """How spaces are written in queries (default ``PERCENT``)."""
        return self._styles[2]

    @space_style.setter
    def space_style(self, value: Any) -> None:
        self.set_query_style(spaces=value)

    @property
    def query_serializer(self) -> Optional[QuerySerializer]:
        """A callable replacing the whole default query algorithm, or ``None``.

        Called as ``fn(request, params)`` (``request``: a read-only :class:`Request` view
        valid during the call; ``params``: the object passed to :meth:`request`); returns
        the query string. If it raises, the request fails with
        :class:`~afserialization.QueryCallbackError` whose ``__cause__`` is that exception
        (KeyboardInterrupt and SystemExit propagate as themselves); returning ``None``
        fails it too.
        """
        return self._query_serializer

    @query_serializer.setter
    def query_serializer(self, fn: Optional[QuerySerializer]) -> None:
        ptr = self._h.get()
        if fn is None:
            lib.afs_serializer_set_query_callback(ptr, QUERY_FN(), None)
            self._h.keepalive.pop("query", None)
        else:
            if not callable(fn):
                raise TypeError("query_serializer must be callable or None")
            trampoline = _make_query_trampoline(fn)
            lib.afs_serializer_set_query_callback(ptr, trampoline, None)
            self._h.keepalive["query"] = trampoline
        self._query_serializer = fn

    # -- request properties (NSURLRequest's) ----------------------------------------------

    def _set_property(self, name: str, value: Any) -> None:
        getattr(lib, f"afs_serializer_set_{name}")(self._h.get(), value)
        self._properties[name] = value

    @property
    def timeout_interval(self) -> float:
        """Seconds copied onto each request (default 60)."""
        return self._properties["timeout_interval"]

    @timeout_interval.setter
    def timeout_interval(self, value: float) -> None:
        self._set_property("timeout_interval", float(value))

    @property
    def cache_policy(self) -> int:
        """NSURLRequestCachePolicy value (default 0)."""
        return self._properties["cache_policy"]

    @cache_policy.setter
    def cache_policy(self, value: int) -> None:
        self._set_property("cache_policy", int(value))

    @property
    def should_handle_cookies(self) -> bool:
        """Default True."""
        return self._properties["should_handle_cookies"]

    @should_handle_cookies.setter
    def should_handle_cookies(self, value: bool) -> None:
        self._set_property("should_handle_cookies", bool(value))

    @property
    def should_use_pipelining(self) -> bool:
        """Default False."""
        return self._properties["should_use_pipelining"]

    @should_use_pipelining.setter
    def should_use_pipelining(self, value: bool) -> None:
        self._set_property("should_use_pipelining", bool(value))

    @property
    def allows_cellular_access(self) -> bool:
        """Default True."""
        return self._properties["allows_cellular_access"]

    @allows_cellular_access.setter
    def allows_cellular_access(self, value: bool) -> None:
        self._set_property("allows_cellular_access", bool(value))

    @property
    def network_service_type(self) -> int:
        """NSURLRequestNetworkServiceType value (default 0)."""
        return self._properties["network_service_type"]

    @network_service_type.setter
    def network_service_type(self, value: int) -> None:
        self._set_property("network_service_type", int(value))

    # -- base URL -------------------------------------------------------------------------

    @property
    def base_url(self) -> Optional[str]:
        """AFHTTPSessionManager's ``baseURL`` (``afs_serializer_set_base_url``), or ``None``.

        Relative references (``"users/1"``, ``"/users/1"``, ``"?page=2"``) resolve against
        it by RFC 3986 section 5.2; absolute URLs ignore it. As in AFNetworking, a base whose
        path is not empty and lacks a trailing ``/`` gets one:
        ``https://api.example.com/v1`` resolves ``users`` to
        ``https://api.example.com/v1/users``. Setting ``None`` clears it.

        Raises (setting):
            BadURLError: not an absolute URL, or refused by URL intake.
        """
        return self._base_url

    @base_url.setter
    def base_url(self, value: Optional[str]) -> None:
        if value is None:
            lib.afs_serializer_set_base_url(self._h.get(), None)
            self._base_url = None
            return
        lib.afs_serializer_set_base_url(self._h.get(), cstr(value, "base_url", BadURLError))
        # What the library stored (after intake and the slash rule): the empty reference
        # resolves to it (without its fragment).
        ptr = lib.afs_serializer_request(self._h.get(), b"GET", b"", None)
        with Request._adopt(ptr) as r:
            self._base_url = r.url

    # -- building requests ---------------------------------------------------------------

    def request(self, method: str, url: str, params: Params = None) -> Request:
        """``requestWithMethod:URLString:parameters:error:``.

        Args:
            method: an HTTP token, e.g. ``"GET"``.
            url: an absolute URL, or a relative reference when :attr:`base_url` is set;
                after URL intake (a valid RFC 3986 URI is kept byte for byte; space,
                non-ASCII and other bytes RFC 3986 does not allow are percent-encoded; a
                non-ASCII host becomes its IDNA A-label), resolved, then the query added.
            params: plain Python objects (see :mod:`afserialization.values`), a
                :class:`~afserialization.Value`, or ``None`` for no parameters.

        Raises:
            InvalidMethodError, BadURLError, InvalidArgumentError, InvalidJSONError,
            InvalidPlistError, EncodingError, QueryCallbackError, InvalidUTF8Error,
            UnsupportedTypeError, ValueOutOfRangeError
        """
        m = _METHODS.get(method) if type(method) is str else None
        if m is None:
            m = cstr(method, "method", InvalidMethodError)
        u = _url_bytes(url)
        if _values._PARAMS_AS_PICKLE and not isinstance(params, Value):
            # One crossing: the parameters as one pickle in, the request's snapshot out.
            data = b"" if params is None else _transfer.dumps(params)
            if data is not None:
                try:
                    if self._query_serializer is None:  # no callback: the plain function
                        _, eref, snapshot, sref, length, lref = _transfer.scratch()
                        ptr = _request_pickle_raw(self._h.get(), m, u, data, len(data),
                                                  sref, lref, eref)
                    else:
                        snapshot, length = POINTER(c_uint8)(), c_size_t()
                        with _Calling(params):
                            ptr = _request_pickle(self._h.get(), m, u, data, len(data),
                                                  byref(snapshot), byref(length))
                except (InvalidArgumentError, InvalidUTF8Error):
                    pass  # perhaps the parameters: the node-by-node path names the problem
                else:
                    return Request._adopt(ptr, _transfer.load_at(_transfer.address_of(snapshot), length.value))
        with ParamsRef(params) as p, _Calling(params):
            ptr = lib.afs_serializer_request(self._h.get(), m, u, p)
        return Request._adopt(ptr)

    def serialize(self, request: Request, params: Params = None) -> Request:
        """``requestBySerializingRequest:withParameters:error:``: a new request, a copy of
        ``request`` with the default headers it lacks and ``params`` serialized; the
        request's own properties are kept."""
        if not isinstance(request, Request):
            raise TypeError(f"request must be an afserialization.Request, not "
                            f"{type(request).__name__}")
        with ParamsRef(params) as p, _Calling(params):
            ptr = lib.afs_serializer_serialize(self._h.get(), request._h.get(), p)
        return Request._adopt(ptr)

    def multipart_form(self, method: str, url: str, params: Params = None) -> "MultipartForm":
        """``multipartFormRequestWithMethod:URLString:parameters:constructingBodyWithBlock:``
        as a builder: append parts, then :meth:`MultipartForm.finish` gives the request.
        Parameters become field parts first, in query-pair order. Use it as a context
        manager (``with serializer.multipart_form(...) as form:``).

        Raises:
            InvalidMethodError (also for GET and HEAD), BadURLError, ...
        """
        from .multipart import MultipartForm
        m = cstr(method, "method", InvalidMethodError)
        u = cstr(url, "url", BadURLError)
        with ParamsRef(params) as p, _Calling(params):
            ptr = lib.afs_serializer_multipart_form(self._h.get(), m, u, p)
        return MultipartForm._adopt(ptr)


class JSONRequestSerializer(HTTPRequestSerializer):
    """AFJSONRequestSerializer: ``application/json`` bodies in NSJSONSerialization's exact
    format (``options``: :class:`JSONWritingOptions`, flag names or int)."""

    _KIND = 1

    def __init__(self, options: Any = JSONWritingOptions.NONE, *,
                 base_url: Optional[str] = None) -> None:
        """``options``: :class:`JSONWritingOptions`, an int, a flag name or a list of them;
        ``base_url``: see :attr:`HTTPRequestSerializer.base_url`."""
        super().__init__(base_url=base_url)
        if options:
            self.options = options

    @property
    def options(self) -> JSONWritingOptions:
        """NSJSONWritingOptions (``PRETTY_PRINTED | SORTED_KEYS`` …)."""
        return self._json_options

    @options.setter
    def options(self, value: Any) -> None:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, int) and isinstance(value, Iterable):
            value = sum(_coerce(JSONWritingOptions, v) for v in value)
        lib.afs_serializer_set_json_options(self._h.get(), int(value))
        self._json_options = JSONWritingOptions(int(value))


class PropertyListRequestSerializer(HTTPRequestSerializer):
    """AFPropertyListRequestSerializer: ``application/x-plist`` bodies, XML (default) or
    binary (``format``: :class:`PropertyListFormat`, ``"xml"``/``"binary"`` or 100/200)."""

    _KIND = 2

    def __init__(self, format: Any = PropertyListFormat.XML, *,  # noqa: A002
                 base_url: Optional[str] = None) -> None:
        """``format``: :class:`PropertyListFormat`, ``"xml"``/``"binary"`` or 100/200;
        ``base_url``: see :attr:`HTTPRequestSerializer.base_url`."""
        super().__init__(base_url=base_url)
        if _coerce(PropertyListFormat, format) != PropertyListFormat.XML:
            self.format = format

    @property
    def format(self) -> PropertyListFormat:
        """NSPropertyListFormat."""
        return self._plist_format

    @format.setter
    def format(self, value: Any) -> None:
        code = _coerce(PropertyListFormat, value)
        lib.afs_serializer_set_plist_format(self._h.get(), code)
        self._plist_format = PropertyListFormat(code)


_request_pickle = lib.afs_serializer_request_pickle
_request_pickle_raw = lib.raw.afs_serializer_request_pickle


def _url_bytes(url: Any) -> bytes:
    """``cstr(url, "url", BadURLError)`` with a fast path for plain text."""
    if type(url) is str and "\0" not in url:
        try:
            return url.encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: cstr passes it on for the library to name
    return cstr(url, "url", BadURLError)
#: The encoded common methods (``cstr`` for the others).
_METHODS = {m: m.encode("ascii") for m in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD",
                                           "OPTIONS")}
