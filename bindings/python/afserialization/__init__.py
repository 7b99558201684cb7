"""AFSerialization for Python: AFNetworking's request and response serialization through
ctypes.

Build requests exactly as AFNetworking does — query strings, form, JSON and property-list
bodies, streaming ``multipart/form-data`` — and send them with any HTTP client::

    import requests
    from afserialization import HTTPRequestSerializer

    serializer = HTTPRequestSerializer()
    with serializer.multipart_form("POST", "http://127.0.0.1:8000/upload",
                                   {"title": "holiday"}) as form:
        form.append_file("photo.jpg", "photo")
        with form.finish() as request:
            requests.post(request.url, data=request.body_stream, headers=request.headers)

Validate and decode what comes back with a response serializer (plain Python objects)::

    from afserialization import JSONResponseSerializer

    r = requests.get("http://127.0.0.1:8000/users/1")
    user = JSONResponseSerializer().response_object(
        r.status_code, r.headers.get("Content-Type"), r.content)

The shared library (``libafserialization.so.0``) ships inside this package; the environment
variable ``AFSERIALIZATION_LIBRARY`` (a path) overrides it when the package is imported.
"""
from __future__ import annotations

from ._ffi import LIBRARY_ENV, library_path
from .body_stream import DEFAULT_CHUNK_SIZE, AsyncBodyIterator, BodyStream, ProgressCallback
from .errors import (BadURLError, EncodingError, FileError, HandleClosedError,
                     InvalidArgumentError, InvalidHeaderError, InvalidJSONError,
                     InvalidMethodError, InvalidPlistError, InvalidUTF8Error,
                     LengthMismatchError, MissingFunctionError, NoMemoryError,
                     QueryCallbackError, SerializationError, StateError, Status, StreamIOError,
                     UnacceptableContentTypeError, UnacceptableStatusError, UnsupportedError,
                     UnsupportedTypeError, ValueOutOfRangeError)
from .errors import (BadResponseError, InvalidImageError, InvalidMultipartError, InvalidXMLError,
                     LimitError, UntrustedError)
from .decoders import MultipartParser, Part, iter_multipart, parse_form, parse_query
from .helpers import VersionString as _VersionString
from .helpers import library_version as _library_version
from .helpers import percent_escape, query_string, resolve_url
from .multipart import (UPLOAD_STREAM_3G_SUGGESTED_DELAY, UPLOAD_STREAM_3G_SUGGESTED_PACKET_SIZE,
                        MultipartForm)
from .reader import ReaderState, ResponseReader, read_response
from .request import MultipartRequest, Request, RequestHeaders
from .security import (PinningMode, SecurityPolicy, UntrustedError, httpx_transport,
                       public_key_pin, read_certificates, requests_adapter)
from .response import (CompoundResponseSerializer, HTTPResponseSerializer, JSONReadingOptions,
                       JSONResponseSerializer, PropertyListResponseSerializer)
from .response import ImageResponseSerializer
from .errors import (BadResponseError, InvalidImageError, InvalidMultipartError, InvalidXMLError,
                     LimitError, UntrustedError)
from .serializers import (ArrayStyle, BoolStyle, HTTPRequestSerializer, JSONRequestSerializer,
                          JSONWritingOptions, PropertyListFormat, PropertyListRequestSerializer,
                          SerializerHeaders, SpaceStyle, StringEncoding)
from .values import Value, ValueKind
from .xmlparse import XMLParser, XMLResponseSerializer, xml_events

#: The loaded library's version, "MAJOR.MINOR.PATCH" (an attribute, like ``library_path``;
#: calling it, as the earlier function, still works with a DeprecationWarning).
library_version: str = _VersionString(_library_version())
#: The version of the loaded library (written once, in include/afserialization.h).
__version__ = str(library_version)

__all__ = [
    # decoders (section 16)
    "parse_query", "parse_form", "MultipartParser", "Part", "iter_multipart",
    # third-round statuses
    "InvalidXMLError", "InvalidImageError", "UntrustedError", "BadResponseError", "LimitError",
    "InvalidMultipartError",
    # serializers and what they make
    "HTTPRequestSerializer", "JSONRequestSerializer", "PropertyListRequestSerializer",
    "SerializerHeaders", "Request", "MultipartRequest", "RequestHeaders", "MultipartForm",
    "BodyStream", "AsyncBodyIterator",
    "Value", "ValueKind",
    # response serializers
    "HTTPResponseSerializer", "JSONResponseSerializer", "PropertyListResponseSerializer",
    "CompoundResponseSerializer", "JSONReadingOptions", "ImageResponseSerializer",
    # XML
    "XMLResponseSerializer", "XMLParser", "xml_events",
    # reading responses off the wire
    "ResponseReader", "ReaderState", "read_response",
    # options
    "ArrayStyle", "BoolStyle", "SpaceStyle", "StringEncoding", "JSONWritingOptions",
    "PropertyListFormat", "UPLOAD_STREAM_3G_SUGGESTED_PACKET_SIZE",
    "UPLOAD_STREAM_3G_SUGGESTED_DELAY", "DEFAULT_CHUNK_SIZE", "ProgressCallback",
    # security policy
    "SecurityPolicy", "PinningMode", "requests_adapter", "httpx_transport", "read_certificates",
    "public_key_pin", "UntrustedError",
    # helpers
    "percent_escape", "query_string", "library_version", "library_path", "LIBRARY_ENV",
    "resolve_url",
    # errors
    "Status", "SerializationError", "InvalidArgumentError", "InvalidUTF8Error", "BadURLError",
    "InvalidMethodError", "InvalidHeaderError", "InvalidJSONError", "InvalidPlistError",
    "EncodingError", "QueryCallbackError", "FileError", "StreamIOError", "LengthMismatchError",
    "StateError", "UnsupportedError", "NoMemoryError", "UnacceptableStatusError",
    "UnacceptableContentTypeError", "HandleClosedError", "UnsupportedTypeError",
    "ValueOutOfRangeError", "MissingFunctionError",
    "InvalidXMLError", "InvalidImageError", "UntrustedError", "BadResponseError", "LimitError",
    "InvalidMultipartError",
]

# `from __future__ import annotations` binds the name `annotations`; dir(afserialization)
# lists the package's API only.
del annotations
