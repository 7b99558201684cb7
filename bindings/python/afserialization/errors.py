"""Typed exceptions: one class per ``afs_status``.

Every failing C call fills an ``afs_error`` (status code, ``errno`` when the OS reported
one, and a message naming what was wrong and where). The bindings raise it as the
:class:`SerializationError` subclass of its status, so callers can catch precisely::

    try:
        serializer.request("GET", "not a url")
    except afserialization.BadURLError as e:
        print(e.code.name, e.message)

A few classes also derive from the built-in exception that Python code expects for the
same situation: :class:`HandleClosedError` is a :class:`ValueError` (like I/O on a closed
file), :class:`UnsupportedTypeError` a :class:`TypeError` and :class:`ValueOutOfRangeError`
an :class:`OverflowError`.
"""
from __future__ import annotations

import enum
from typing import Any, Dict, Optional, Type

from ._enum import QuietEnumMeta, QuietType

__all__ = [
    "Status", "SerializationError",
    "InvalidArgumentError", "InvalidUTF8Error", "BadURLError", "InvalidMethodError",
    "InvalidHeaderError", "InvalidJSONError", "InvalidPlistError", "EncodingError",
    "QueryCallbackError", "FileError", "StreamIOError", "LengthMismatchError", "StateError",
    "UnsupportedError", "NoMemoryError", "UnacceptableStatusError",
    "UnacceptableContentTypeError", "InvalidXMLError", "InvalidImageError", "UntrustedError",
    "BadResponseError", "LimitError", "InvalidMultipartError",
    "HandleClosedError", "UnsupportedTypeError", "ValueOutOfRangeError", "MissingFunctionError",
    "error_class",
]


class Status(enum.IntEnum, metaclass=QuietEnumMeta):
    """``afs_status``: the values are pinned by the C library forever."""

    OK = 0
    INVALID_ARGUMENT = 1
    INVALID_UTF8 = 2
    BAD_URL = 3
    INVALID_METHOD = 4
    INVALID_HEADER = 5
    INVALID_JSON = 6
    INVALID_PLIST = 7
    ENCODING = 8
    QUERY_CALLBACK = 9
    FILE = 10
    IO = 11
    LENGTH_MISMATCH = 12
    STATE = 13
    UNSUPPORTED = 14
    NO_MEMORY = 15
    UNACCEPTABLE_STATUS = 16
    UNACCEPTABLE_CONTENT_TYPE = 17
    INVALID_XML = 18
    INVALID_IMAGE = 19
    UNTRUSTED = 20
    BAD_RESPONSE = 21
    LIMIT = 22
    INVALID_MULTIPART = 23

    @property
    def c_name(self) -> str:
        """The C enumerator's name, e.g. ``"AFS_E_BAD_URL"`` (``"AFS_OK"`` for OK)."""
        return "AFS_OK" if self is Status.OK else "AFS_E_" + self.name


class SerializationError(Exception, metaclass=QuietType):
    """A failed library call.

    Attributes:
        code: the :class:`Status` (or the raw int for a status this module does not know).
        message: the library's message, naming what was wrong and where.
        os_errno: ``errno`` when the operating system reported one, else 0.
    """

    #: The status this class stands for (``None`` on the base class).
    status: Optional[Status] = None

    def __init__(self, code: int, message: str, os_errno: int = 0) -> None:
        try:
            self.code: "Status | int" = Status(code)
        except ValueError:
            self.code = code
        self.message = message
        self.os_errno = os_errno
        super().__init__(code, message)

    def __str__(self) -> str:
        name = self.code.c_name if isinstance(self.code, Status) else f"status {self.code}"
        text = f"{name}: {self.message}"
        if self.os_errno:
            import os
            text += f" [errno {self.os_errno}: {os.strerror(self.os_errno)}]"
        return text

    def __reduce__(self):  # picklable across processes, whatever a subclass's __init__ takes
        return (_rebuild, (type(self), int(self.code), self.message, self.os_errno))


def _rebuild(cls: "Type[SerializationError]", code: int, message: str,
             os_errno: int) -> "SerializationError":
    error = cls.__new__(cls)
    SerializationError.__init__(error, code, message, os_errno)
    return error


def _status_class(name: str, status: Status, doc: str,
                  builtin: Optional[type] = None) -> Type[SerializationError]:
    bases: tuple = (SerializationError,) if builtin is None else (SerializationError, builtin)
    cls = type(name, bases, {"__doc__": doc, "status": status, "__module__": __name__})
    return cls


InvalidArgumentError = _status_class(
    "InvalidArgumentError", Status.INVALID_ARGUMENT,
    "AFS_E_INVALID_ARGUMENT: a bad argument (wrong shape of parameters, unknown option, "
    "bad boundary, seek past the end).")
InvalidUTF8Error = _status_class(
    "InvalidUTF8Error", Status.INVALID_UTF8,
    "AFS_E_INVALID_UTF8: a string is not valid UTF-8 (e.g. a lone surrogate); the offset is named.")
BadURLError = _status_class(
    "BadURLError", Status.BAD_URL,
    "AFS_E_BAD_URL: not an absolute RFC 3986 URI; the character and offset are named.")
InvalidMethodError = _status_class(
    "InvalidMethodError", Status.INVALID_METHOD,
    "AFS_E_INVALID_METHOD: the method is not an HTTP token, or GET/HEAD with a multipart body.")
InvalidHeaderError = _status_class(
    "InvalidHeaderError", Status.INVALID_HEADER,
    "AFS_E_INVALID_HEADER: a header name that is not a token, CR/LF/NUL in a value, or "
    "Content-Length / Transfer-Encoding set by the caller (the library frames the body).")
InvalidJSONError = _status_class(
    "InvalidJSONError", Status.INVALID_JSON,
    "AFS_E_INVALID_JSON: parameters not representable as JSON, or malformed JSON text.")
InvalidPlistError = _status_class(
    "InvalidPlistError", Status.INVALID_PLIST,
    "AFS_E_INVALID_PLIST: parameters not representable as a property list.")
EncodingError = _status_class(
    "EncodingError", Status.ENCODING,
    "AFS_E_ENCODING: text not representable in the serializer's string encoding.")
QueryCallbackError = _status_class(
    "QueryCallbackError", Status.QUERY_CALLBACK,
    "AFS_E_QUERY_CALLBACK: the custom query serializer failed. When it was a Python "
    "callable that raised, that exception is ``__cause__``.")
FileError = _status_class(
    "FileError", Status.FILE,
    "AFS_E_FILE: a file could not be opened or stat'ed when appended (see os_errno).")
StreamIOError = _status_class(
    "StreamIOError", Status.IO,
    "AFS_E_IO: a read or write failed while streaming or writing a body (see os_errno). "
    "When a Python stream source raised, that exception is ``__cause__``.")
LengthMismatchError = _status_class(
    "LengthMismatchError", Status.LENGTH_MISMATCH,
    "AFS_E_LENGTH_MISMATCH: a part source yielded fewer or more bytes than declared.")
StateError = _status_class(
    "StateError", Status.STATE,
    "AFS_E_STATE: a call on a spent form or a closed stream.")
UnsupportedError = _status_class(
    "UnsupportedError", Status.UNSUPPORTED,
    "AFS_E_UNSUPPORTED: e.g. rewinding over a stream part that cannot rewind.")
NoMemoryError = _status_class(
    "NoMemoryError", Status.NO_MEMORY,
    "AFS_E_NO_MEMORY: an allocation failed (also a :class:`MemoryError`).", MemoryError)


class UnacceptableStatusError(SerializationError):
    """AFS_E_UNACCEPTABLE_STATUS: a response status outside the acceptable ranges
    ("Request failed: not found (404)").

    Attributes:
        status_code: the response's status code (``None`` when not raised by a response
            serializer).
        document: the decoded body (the server's error document, as plain Python objects)
            when :meth:`~afserialization.HTTPResponseSerializer.response_object` could
            decode it; ``None`` when the body was empty, could not be decoded (the message
            then says why), or after :meth:`~afserialization.HTTPResponseSerializer.validate`,
            which decodes nothing.
    """

    status = Status.UNACCEPTABLE_STATUS
    status_code: Optional[int] = None
    document: Any = None

    def __reduce__(self):  # keeps status_code and document
        rebuild, args = super().__reduce__()
        return (rebuild, args, {"status_code": self.status_code, "document": self.document})

UnacceptableContentTypeError = _status_class(
    "UnacceptableContentTypeError", Status.UNACCEPTABLE_CONTENT_TYPE,
    "AFS_E_UNACCEPTABLE_CONTENT_TYPE: a response MIME type that is not acceptable.")
InvalidXMLError = _status_class(
    "InvalidXMLError", Status.INVALID_XML,
    "AFS_E_INVALID_XML: XML that is not well-formed, or an unsupported encoding "
    "(line, column and byte offset named; also a :class:`ValueError`).", ValueError)
InvalidImageError = _status_class(
    "InvalidImageError", Status.INVALID_IMAGE,
    "AFS_E_INVALID_IMAGE: a corrupt or truncated image header, or a content type that "
    "disagrees with the bytes (also a :class:`ValueError`).", ValueError)
UntrustedError = _status_class(
    "UntrustedError", Status.UNTRUSTED,
    "AFS_E_UNTRUSTED: a security policy refused the server; the message names the rule, "
    "the host and the certificates (also a :class:`ValueError`).", ValueError)
BadResponseError = _status_class(
    "BadResponseError", Status.BAD_RESPONSE,
    "AFS_E_BAD_RESPONSE: malformed HTTP response framing or a corrupt content coding "
    "(line and byte offset named; also a :class:`ValueError`).", ValueError)
LimitError = _status_class(
    "LimitError", Status.LIMIT,
    "AFS_E_LIMIT: a documented limit of a reader or decoder was reached; the limit and "
    "where are named (also a :class:`ValueError`).", ValueError)
InvalidMultipartError = _status_class(
    "InvalidMultipartError", Status.INVALID_MULTIPART,
    "AFS_E_INVALID_MULTIPART: malformed multipart framing, or a body that ends before its "
    "closing boundary (also a :class:`ValueError`).", ValueError)


class HandleClosedError(StateError, ValueError):
    """An object was used after ``close()`` (also a :class:`ValueError`, as for files)."""

    def __init__(self, what: str) -> None:
        super().__init__(Status.STATE, f"{what} is closed")


class UnsupportedTypeError(InvalidArgumentError, TypeError):
    """A parameter of a type the library cannot represent (also a :class:`TypeError`)."""

    def __init__(self, message: str) -> None:
        super().__init__(Status.INVALID_ARGUMENT, message)


class ValueOutOfRangeError(InvalidArgumentError, OverflowError):
    """An integer outside int64 (also an :class:`OverflowError`)."""

    def __init__(self, message: str) -> None:
        super().__init__(Status.INVALID_ARGUMENT, message)


class MissingFunctionError(SerializationError, AttributeError):
    """The ``libafserialization.so`` being loaded does not export a function of the
    contract (an older build): raised when the package is imported, naming the function
    and the library path. An ``AttributeError`` too, as ctypes raises for a missing
    symbol."""

    def __init__(self, function: str, library: str) -> None:
        self.function = function
        self.library = library
        super().__init__(Status.UNSUPPORTED,
                         f"{function} is not exported by {library} (a library built before it "
                         f"landed? rebuild with scripts/build-library.sh)")


_BY_STATUS: Dict[int, Type[SerializationError]] = {
    cls.status: cls for cls in (
        InvalidArgumentError, InvalidUTF8Error, BadURLError, InvalidMethodError,
        InvalidHeaderError, InvalidJSONError, InvalidPlistError, EncodingError,
        QueryCallbackError, FileError, StreamIOError, LengthMismatchError, StateError,
        UnsupportedError, NoMemoryError, UnacceptableStatusError,
        UnacceptableContentTypeError, InvalidXMLError, InvalidImageError, UntrustedError,
        BadResponseError, LimitError, InvalidMultipartError)
}


def error_class(code: int) -> Type[SerializationError]:
    """The exception class for a status code (:class:`SerializationError` for an unknown one)."""
    return _BY_STATUS.get(code, SerializationError)


def make_error(code: int, message: str, os_errno: int = 0) -> SerializationError:
    """An exception instance of the right class for ``code``."""
    return error_class(code)(code, message, os_errno)
