"""Stateless helpers: AFPercentEscapedStringFromString and AFQueryStringFromParameters."""
from __future__ import annotations

import warnings
from typing import Union

from ._ffi import lib
from ._text import cstr
from .errors import BadURLError, UnsupportedTypeError
from .values import Params, ParamsRef

__all__ = ["percent_escape", "query_string", "library_version", "resolve_url"]


def percent_escape(s: Union[str, bytes]) -> str:
    """Percent-escapes every byte of the UTF-8 text outside ``A-Z a-z 0-9 - . _ ~ / ?``
    (uppercase hex), as AFNetworking's ``AFPercentEscapedStringFromString``.

    >>> percent_escape("a b&c")
    'a%20b%26c'

    Raises:
        InvalidUTF8Error: ``bytes`` that are not UTF-8, or a ``str`` with a lone surrogate
            (the offset is named).
    """
    if isinstance(s, str):
        data = s.encode("utf-8", "surrogatepass")
    elif isinstance(s, (bytes, bytearray, memoryview)):
        data = bytes(s)
    else:
        raise UnsupportedTypeError(f"percent_escape() takes str or bytes, not {type(s).__name__}")
    return lib.afs_percent_escape(data, len(data))


def query_string(params: Params) -> str:
    """The query string of a dictionary with AFNetworking's default styles: keys sorted,
    nested keys ``parent[child]``, arrays ``key[]``, sets ``key``, ``None`` as the bare key.

    >>> query_string({"b": [1, 2], "a": "x y"})
    'a=x%20y&b%5B%5D=1&b%5B%5D=2'

    ``None`` (no parameters) gives ``""``, as an empty dictionary does.

    Raises:
        InvalidArgumentError: ``params`` is neither a dictionary (mapping) nor ``None``.
    """
    with ParamsRef({} if params is None else params) as p:
        return lib.afs_query_string(p)


def library_version() -> str:
    """The loaded library's version, ``"MAJOR.MINOR.PATCH"`` (``afs_version``). The
    package exposes it as the attribute ``afserialization.library_version``, beside
    ``afserialization.library_path``."""
    return lib.afs_version().decode("utf-8", "replace")


class VersionString(str):
    """``afserialization.library_version``: the library's version as a string attribute,
    like ``library_path``. It was a function before; calling it still returns the
    version, with a DeprecationWarning."""

    __slots__ = ()

    def __call__(self) -> str:
        warnings.warn("afserialization.library_version is a string attribute (like "
                      "library_path); calling it is deprecated", DeprecationWarning,
                      stacklevel=2)
        return str(self)


def resolve_url(base: str, reference: str) -> str:
    """Resolves ``reference`` against ``base`` by RFC 3986 section 5.2 strictly
    (``afs_url_resolve``; no AFNetworking slash rule). Both go through URL intake first.

    >>> resolve_url("http://a/b/c/d;p?q", "../g")
    'http://a/b/g'

    Raises:
        BadURLError: ``base`` is not absolute, or intake refuses either string.
        InvalidUTF8Error
    """
    return lib.afs_url_resolve(cstr(base, "base", BadURLError), cstr(reference, "reference", BadURLError))
