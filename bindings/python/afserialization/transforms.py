"""Bodies of unknown length, compressed bodies and body digests (header section 15).

The methods are on :class:`~afserialization.Request` (``set_body_stream``, ``is_chunked``,
``set_content_encoding``, ``add_digest``, ``set_temp_dir``, ``trailers``) and on the
serializers (``set_content_encoding``); this module holds their constants and the shared
code.
"""
from __future__ import annotations

import enum
from typing import Any, Dict, List, Optional, Tuple

from ._enum import QuietEnumMeta
from ._ffi import REWIND_FN, lib
from ._text import cstr

__all__ = ["LENGTH_UNKNOWN", "COMPRESS_EXACT", "DigestWhere", "ExistingEncoding", "CODINGS",
           "DIGEST_ALGORITHMS"]

#: ``AFS_LENGTH_UNKNOWN``: the length of a source read until it ends.
LENGTH_UNKNOWN = (1 << 64) - 1
#: ``AFS_COMPRESS_EXACT``.
COMPRESS_EXACT = 1
#: The content codings ``set_content_encoding`` accepts.
CODINGS = ("gzip", "deflate", "zstd", "br")
#: The digest algorithms ``add_digest`` accepts.
DIGEST_ALGORITHMS = ("sha-256", "sha-512", "md5")


class DigestWhere(enum.IntEnum, metaclass=QuietEnumMeta):
    """``afs_digest_where``."""

    HEADER = 0
    TRAILER = 1


class ExistingEncoding(enum.IntEnum, metaclass=QuietEnumMeta):
    """``afs_existing_encoding``: what a serializer-wide compression does with a request
    that already has ``Content-Encoding``."""

    ERROR = 0
    REPLACE = 1
    SKIP = 2


#: Every enumerator of header section 15 (checked against the header by the tests).
ENUMERATORS: Dict[str, int] = {
    "AFS_COMPRESS_EXACT": COMPRESS_EXACT,
    "AFS_DIGEST_HEADER": DigestWhere.HEADER, "AFS_DIGEST_TRAILER": DigestWhere.TRAILER,
    "AFS_EXISTING_ENCODING_ERROR": ExistingEncoding.ERROR,
    "AFS_EXISTING_ENCODING_REPLACE": ExistingEncoding.REPLACE,
    "AFS_EXISTING_ENCODING_SKIP": ExistingEncoding.SKIP,
}


def length_arg(length: Optional[int]) -> int:
    """``None`` → LENGTH_UNKNOWN; else a byte count."""
    if length is None:
        return LENGTH_UNKNOWN
    if not isinstance(length, int) or isinstance(length, bool):
        raise TypeError(f"length must be an int or None, not {type(length).__name__}")
    if length < 0:
        raise ValueError("length must be >= 0 (or None for unknown)")
    return length


def set_body_stream(ptr: Any, source: Any, length: Optional[int]) -> None:
    """``afs_request_set_body_stream`` with a Python source (see ``Request.set_body_stream``)."""
    from . import multipart
    n = length_arg(length)
    part = multipart._PartSource(source, n)
    key = next(multipart._ids)
    multipart._sources[key] = part  # released by C through _release (also on failure)
    lib.afs_request_set_body_stream(ptr, multipart._READ,
                                    multipart._REWIND if part.can_rewind else REWIND_FN(),
                                    multipart._RELEASE, key, n)


def set_content_encoding(ptr: Any, coding: str, level: Optional[int], exact: bool) -> None:
    lib.afs_request_set_content_encoding(ptr, cstr(coding, "coding"), _level(level),
                                         COMPRESS_EXACT if exact else 0)


def add_digest(ptr: Any, algorithm: str, trailer: bool) -> None:
    lib.afs_request_add_digest(ptr, cstr(algorithm, "algorithm"),
                               DigestWhere.TRAILER if trailer else DigestWhere.HEADER)


def trailers(ptr: Any) -> List[Tuple[str, str]]:
    text = lib.afs_request_copy_trailers(ptr, None) or ""
    out = []
    for line in text.split("\r\n"):
        if line:
            name, _, value = line.partition(": ")
            out.append((name, value))
    return out


def serializer_set_content_encoding(ptr: Any, coding: Optional[str], level: Optional[int],
                                    exact: bool, existing: Any, min_size: int) -> None:
    if isinstance(existing, str):
        try:
            existing = ExistingEncoding[existing.upper()]
        except KeyError:
            raise ValueError(f"existing must be 'error', 'replace' or 'skip', not {existing!r}") from None
    if min_size < 0:
        raise ValueError("min_size must be >= 0")
    lib.afs_serializer_set_content_encoding(ptr, None if coding is None else cstr(coding, "coding"),
                                            _level(level), COMPRESS_EXACT if exact else 0,
                                            int(ExistingEncoding(existing)), min_size)


def _level(level: Optional[int]) -> int:
    if level is None:
        return 0
    if not isinstance(level, int) or isinstance(level, bool):
        raise TypeError(f"level must be an int or None, not {type(level).__name__}")
    return level
