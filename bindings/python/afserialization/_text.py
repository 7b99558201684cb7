"""Internal: Python strings to the C strings the library takes."""
from __future__ import annotations

import os
from typing import Any, Type

from .errors import InvalidArgumentError, SerializationError, Status, UnsupportedTypeError

__all__ = ["cstr", "cpath"]


def cstr(value: Any, what: str, error: Type[SerializationError] = InvalidArgumentError) -> bytes:
    """``value`` (``str`` or bytes-like) as NUL-terminated UTF-8 for a ``const char *``.

    A ``str`` is encoded with ``surrogatepass`` so that a lone surrogate reaches the library
    and fails there as invalid UTF-8 (the library names the offset). An embedded NUL would
    silently cut a C string, so it raises ``error`` here.
    """
    if isinstance(value, str):
        b = value.encode("utf-8", "surrogatepass")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
    else:
        raise UnsupportedTypeError(f"{what} must be str or bytes, not {type(value).__name__}")
    i = b.find(b"\0")
    if i >= 0:
        raise error(error.status or Status.INVALID_ARGUMENT,
                    f"{what} contains a NUL byte at offset {i}")
    return b


def cpath(path: Any, what: str = "path") -> bytes:
    """A filesystem path (``str``, ``bytes`` or ``os.PathLike``) as bytes for C."""
    try:
        b = os.fsencode(path)
    except TypeError:
        raise UnsupportedTypeError(
            f"{what} must be str, bytes or os.PathLike, not {type(path).__name__}") from None
    if b"\0" in b:
        raise InvalidArgumentError(Status.INVALID_ARGUMENT, f"{what} contains a NUL byte")
    return b
