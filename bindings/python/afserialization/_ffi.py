"""ctypes declarations of libafserialization: every C function of the contract, once.

In the manner of python-libarchive-c's ``ffi.py``: the library is located (environment
variable ``AFSERIALIZATION_LIBRARY`` first, then the copy shipped inside this package, then a
source checkout's ``build/lib``), each function gets ``argtypes``/``restype``, and an
``errcheck`` turns a status plus the ``afs_error`` into a typed exception.

Each declared function is exposed on :data:`lib` as a small wrapper that

* appends a fresh ``afs_error *`` for the functions whose last parameter is one, so callers
  never pass it;
* turns ``ctypes.ArgumentError`` (e.g. a request handle passed where a serializer handle is
  expected: every handle has its own pointer type) into :class:`TypeError`;
* re-raises an exception that a Python callback stored while C was calling it (the callback
  itself returned an error value to C), chained to the library's error when there is one.

The undecorated ctypes functions are on ``lib.raw`` for the few hot loops that need them;
``lib.untyped(name)`` derives from the same declaration a variant taking and returning
handles as plain ``int`` addresses (the value-tree walk, one call per node).
The table is checked against ``include/afserialization.h`` by Tests/python/test_ffi_header.py
(argument counts, every argument's and result's C type, callback prototypes, the
``afs_error`` layout and every enumerator). A library that lacks a declared function is
refused at import (:class:`~afserialization.errors.MissingFunctionError`): the package and
the library come from one header.

This module is internal: its names may change without notice.
"""
from __future__ import annotations

import ctypes
import os
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_bool, c_char, c_char_p, c_double,
                    c_int, c_int64, c_size_t, c_uint, c_uint64, c_void_p)
from ctypes import c_uint8, c_uint32
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import errors

__all__ = ["lib", "library_path", "LIBRARY_ENV", "AFS_NTS", "afs_error"]

#: Environment variable naming a ``libafserialization.so`` to load instead of the packaged one.
LIBRARY_ENV = "AFSERIALIZATION_LIBRARY"
#: ``AFS_NTS`` (``SIZE_MAX``): a length meaning "NUL-terminated".
AFS_NTS = c_size_t(-1).value


# --------------------------------------------------------------------------------------
# Types


class afs_error(Structure):
    """``typedef struct afs_error { afs_status code; int os_errno; char message[512]; }``"""

    _fields_ = [("code", c_int), ("os_errno", c_int), ("message", c_char * 512)]

    def to_exception(self, code: Optional[int] = None) -> errors.SerializationError:
        """The typed exception for this error (``code`` stands in for a zero ``self.code``)."""
        status = self.code or code or errors.Status.INVALID_ARGUMENT
        return errors.make_error(status, self.message.decode("utf-8", "replace"), self.os_errno)


c_error_p = POINTER(afs_error)


_OPAQUE_TYPES: List[Any] = []


def _opaque(name: str) -> Any:
    """A distinct ctypes pointer type for one opaque C handle: passing a pointer of another
    handle type raises (ctypes checks pointer types), instead of crashing in C."""
    struct = type(name, (Structure,), {})
    pointer_type = POINTER(struct)
    _OPAQUE_TYPES.append(pointer_type)
    return pointer_type


c_value_p = _opaque("afs_value")
c_serializer_p = _opaque("afs_serializer")
c_request_p = _opaque("afs_request")
c_form_p = _opaque("afs_form")
c_body_stream_p = _opaque("afs_body_stream")
c_response_serializer_p = _opaque("afs_response_serializer")
c_response_reader_p = _opaque("afs_response_reader")
c_security_policy_p = _opaque("afs_security_policy")
c_multipart_parser_p = _opaque("afs_multipart_parser")
c_multipart_reader_p = _opaque("afs_multipart_reader")
c_json_parser_p = _opaque("afs_json_parser")

#: ``char *(*afs_query_fn)(void *ctx, const afs_request *, const afs_value *, afs_error *)``
QUERY_FN = CFUNCTYPE(c_void_p, c_void_p, c_request_p, c_value_p, c_error_p)
#: ``int64_t (*afs_read_fn)(void *ctx, uint8_t *buffer, size_t max_length)``
READ_FN = CFUNCTYPE(c_int64, c_void_p, c_void_p, c_size_t)
#: ``int (*afs_rewind_fn)(void *ctx)``
REWIND_FN = CFUNCTYPE(c_int, c_void_p)
#: ``void (*afs_release_fn)(void *ctx)``
RELEASE_FN = CFUNCTYPE(None, c_void_p)
#: ``void (*afs_progress_fn)(void *ctx, uint64_t sent, uint64_t total)``
PROGRESS_FN = CFUNCTYPE(None, c_void_p, c_uint64, c_uint64)
#: ``int (*afs_progress_cancel_fn)(void *ctx, uint64_t sent, uint64_t total)``
PROGRESS_CANCEL_FN = CFUNCTYPE(c_int, c_void_p, c_uint64, c_uint64)

#: ``int (*afs_body_fn)(void *ctx, const uint8_t *bytes, size_t len)``
BODY_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t)


class afs_reader_limits(Structure):
    """``afs_reader_limits``: the response reader's size limits (0: the default)."""
    _fields_ = [("max_head_bytes", c_size_t), ("max_headers", c_size_t),
                ("max_line_length", c_size_t), ("max_chunk_extension", c_size_t)]


class afs_security_limits(Structure):
    """``afs_security_limits``: the certificate reader's and a policy's limits (0: the default)."""
    _fields_ = [("max_certificate_bytes", c_size_t), ("max_pem_bytes", c_size_t),
                ("max_der_depth", c_size_t), ("max_pins", c_size_t), ("max_chain", c_size_t)]


c_char_pp = POINTER(c_char_p)
c_size_p = POINTER(c_size_t)

c_xml_parser_p = _opaque("afs_xml_parser")


class afs_xml_attribute(Structure):
    """``afs_xml_attribute``: qname, ns_uri, local_name, value (UTF-8, borrowed)."""

    _fields_ = [("qname", c_char_p), ("ns_uri", c_char_p), ("local_name", c_char_p), ("value", c_char_p)]


#: ``afs_xml_handler`` members (character data and comments come with a length).
XML_START_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_char_p, c_char_p, POINTER(afs_xml_attribute), c_size_t)
XML_END_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_char_p, c_char_p)
XML_TEXT_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t)
XML_PI_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_char_p)


class afs_xml_handler(Structure):
    """``afs_xml_handler``: the callbacks of an XML parse."""

    _fields_ = [("start_element", XML_START_FN), ("end_element", XML_END_FN), ("characters", XML_TEXT_FN),
                ("comment", XML_TEXT_FN), ("processing_instruction", XML_PI_FN)]


class afs_query_parse_options(Structure):
    """``afs_query_parse_options`` (section 16)."""

    _fields_ = [("array_style", c_int), ("max_depth", c_size_t), ("max_params", c_size_t),
                ("max_length", c_size_t), ("flags", c_uint)]


class afs_multipart_limits(Structure):
    """``afs_multipart_limits`` (section 16)."""

    _fields_ = [("max_parts", c_size_t), ("max_header_bytes", c_size_t), ("max_headers", c_size_t),
                ("max_line_length", c_size_t), ("max_total_bytes", c_uint64),
                ("max_field_bytes", c_uint64)]


#: ``afs_multipart_handler.part_begin``
PART_BEGIN_FN = CFUNCTYPE(c_int, c_void_p, c_size_t, c_char_p, c_char_p, POINTER(c_char_p),
                          POINTER(c_char_p), c_size_t)
#: ``afs_multipart_handler.part_data``
PART_DATA_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t)
#: ``afs_multipart_handler.part_end``
PART_END_FN = CFUNCTYPE(c_int, c_void_p)


class afs_multipart_handler(Structure):
    """``afs_multipart_handler`` (section 16)."""

    _fields_ = [("part_begin", PART_BEGIN_FN), ("part_data", PART_DATA_FN), ("part_end", PART_END_FN)]


class afs_multipart_event(Structure):
    """``afs_multipart_event`` (section 16): one record of afs_multipart_parser_feed_events."""

    _fields_ = [("flags", c_uint32), ("header_count", c_uint32), ("index", c_uint64),
                ("head_offset", c_uint64), ("head_length", c_uint64),
                ("data_offset", c_uint64), ("data_length", c_uint64)]


class afs_multipart_feed_result(Structure):
    """``afs_multipart_feed_result`` (section 16)."""

    _fields_ = [("consumed", c_size_t), ("event_count", c_size_t), ("arena", c_void_p),
                ("arena_length", c_size_t), ("more", c_int)]


# --------------------------------------------------------------------------------------
# Exceptions raised inside callbacks

_pending = threading.local()


def store_exception(exc: BaseException) -> None:
    """Remembers an exception raised by Python code that C called back into. The first one
    wins until :func:`take_exception` collects it (C calls back on the calling thread)."""
    if getattr(_pending, "exc", None) is None:
        _pending.exc = exc


def take_exception() -> Optional[BaseException]:
    """The stored callback exception of this thread, cleared; ``None`` if there is none."""
    exc = getattr(_pending, "exc", None)
    if exc is not None:
        _pending.exc = None
    return exc


def raise_pending(error: Optional[BaseException] = None) -> None:
    """Raises a stored callback exception: ``error`` chained from it when given, else the
    stored exception itself. Does nothing when neither is present. An interrupt or exit
    (KeyboardInterrupt, SystemExit: not an ``Exception``) is raised as itself, never
    wrapped, so Ctrl-C during an upload stays Ctrl-C."""
    exc = take_exception()
    if exc is not None and not isinstance(exc, Exception):
        raise exc
    if error is not None:
        if exc is not None:
            raise error from exc
        raise error
    if exc is not None:
        raise exc


# --------------------------------------------------------------------------------------
# errcheck functions (ctypes calls them with the result, the function and the arguments)


def _error_of(args: Tuple[Any, ...]) -> afs_error:
    return args[-1]._obj  # the afs_error behind byref()


def check_status(result: int, func: Any, args: Tuple[Any, ...]) -> int:
    """For ``afs_status`` results: non-zero raises the typed exception."""
    if result != 0:
        raise _error_of(args).to_exception(result)
    return result


def check_handle(result: Any, func: Any, args: Tuple[Any, ...]) -> Any:
    """For handle results: NULL raises the typed exception."""
    if not result:
        raise _error_of(args).to_exception()
    return result


def check_owned_string(result: Optional[int], func: Any, args: Tuple[Any, ...]) -> str:
    """For owned ``char *`` results: NULL raises; otherwise the text, and the C copy freed."""
    if not result:
        raise _error_of(args).to_exception()
    return take_string(result)


def check_optional_owned_string(result: Optional[int], func: Any, args: Tuple[Any, ...]
                                ) -> Optional[str]:
    """For owned ``char *`` results where NULL means "absent"."""
    return take_string(result) if result else None


def take_string(address: int) -> str:
    """Copies an owned C string and frees it with ``afs_free``."""
    try:
        return ctypes.string_at(address).decode("utf-8")
    finally:
        _raw_free(address)


# --------------------------------------------------------------------------------------
# The declarations

_E = c_error_p
_STATUS, _HANDLE, _OWNED, _OPT_OWNED = "status", "handle", "owned", "optional-owned"
_CHECKS = {_STATUS: check_status, _HANDLE: check_handle, _OWNED: check_owned_string,
           _OPT_OWNED: check_optional_owned_string}

# (name, restype, argtypes, check)
_DECLARATIONS: List[Tuple[str, Any, Sequence[Any], Optional[str]]] = [
    # 1. version and conventions
    ("afs_version", c_char_p, [], None),
    ("afs_version_number", c_uint, [], None),
    ("afs_free", None, [c_void_p], None),
    # 2. errors
    ("afs_status_name", c_char_p, [c_int], None),
    # 3. values
    ("afs_value_new_dict", c_value_p, [], None),
    ("afs_value_new_array", c_value_p, [], None),
    ("afs_value_new_set", c_value_p, [], None),
    ("afs_value_new_string", c_value_p, [c_char_p, c_size_t, _E], _HANDLE),
    ("afs_value_new_int", c_value_p, [c_int64], None),
    ("afs_value_new_double", c_value_p, [c_double], None),
    ("afs_value_new_bool", c_value_p, [c_bool], None),
    ("afs_value_new_null", c_value_p, [], None),
    ("afs_value_new_data", c_value_p, [c_void_p, c_size_t], None),
    ("afs_value_dict_set", c_int, [c_value_p, c_char_p, c_size_t, c_value_p, _E], _STATUS),
    ("afs_value_append", c_int, [c_value_p, c_value_p, _E], _STATUS),
    ("afs_value_dict_set_new_dict", c_value_p, [c_value_p, c_char_p, c_size_t, _E], _HANDLE),
    ("afs_value_dict_set_new_array", c_value_p, [c_value_p, c_char_p, c_size_t, _E], _HANDLE),
    ("afs_value_append_new_dict", c_value_p, [c_value_p, _E], _HANDLE),
    ("afs_value_append_new_array", c_value_p, [c_value_p, _E], _HANDLE),
    ("afs_value_parse_json", c_value_p, [c_char_p, c_size_t, _E], _HANDLE),
    ("afs_value_kind_of", c_int, [c_value_p], None),
    ("afs_value_free", None, [c_value_p], None),
    ("afs_json_parser_new", c_json_parser_p, [_E], _HANDLE),
    ("afs_json_parser_parse", c_value_p, [c_json_parser_p, c_char_p, c_size_t, _E], _HANDLE),
    ("afs_json_parser_free", None, [c_json_parser_p], None),
    # 4. helpers
    ("afs_percent_escape", c_void_p, [c_char_p, c_size_t, _E], _OWNED),
    ("afs_query_string", c_void_p, [c_value_p, _E], _OWNED),
    # 5. serializers
    ("afs_serializer_new", c_serializer_p, [c_int], None),
    ("afs_serializer_copy", c_serializer_p, [c_serializer_p], None),
    ("afs_serializer_free", None, [c_serializer_p], None),
    ("afs_serializer_set_header", c_int, [c_serializer_p, c_char_p, c_char_p, _E], _STATUS),
    ("afs_serializer_copy_header", c_void_p, [c_serializer_p, c_char_p], _OPT_OWNED),
    ("afs_serializer_copy_headers", c_void_p, [c_serializer_p], _OPT_OWNED),
    ("afs_serializer_set_basic_auth", c_int, [c_serializer_p, c_char_p, c_char_p, _E], _STATUS),
    ("afs_serializer_clear_authorization", None, [c_serializer_p], None),
    ("afs_serializer_set_uri_methods", c_int, [c_serializer_p, c_char_pp, c_size_t, _E], _STATUS),
    ("afs_serializer_set_string_encoding", c_int, [c_serializer_p, c_int, _E], _STATUS),
    ("afs_serializer_set_timeout_interval", None, [c_serializer_p, c_double], None),
    ("afs_serializer_set_cache_policy", None, [c_serializer_p, c_int], None),
    ("afs_serializer_set_should_handle_cookies", None, [c_serializer_p, c_bool], None),
    ("afs_serializer_set_should_use_pipelining", None, [c_serializer_p, c_bool], None),
    ("afs_serializer_set_allows_cellular_access", None, [c_serializer_p, c_bool], None),
    ("afs_serializer_set_network_service_type", None, [c_serializer_p, c_int], None),
    ("afs_serializer_set_query_style", c_int, [c_serializer_p, c_int, c_int, c_int, _E], _STATUS),
    ("afs_string_new", c_void_p, [c_char_p, c_size_t], None),
    ("afs_serializer_set_query_callback", None, [c_serializer_p, QUERY_FN, c_void_p], None),
    ("afs_serializer_set_json_options", c_int, [c_serializer_p, c_uint, _E], _STATUS),
    ("afs_serializer_set_plist_format", c_int, [c_serializer_p, c_int, _E], _STATUS),
    # 6. requests
    ("afs_serializer_request", c_request_p,
     [c_serializer_p, c_char_p, c_char_p, c_value_p, _E], _HANDLE),
    ("afs_request_new", c_request_p, [c_char_p, c_char_p, _E], _HANDLE),
    ("afs_request_set_header", c_int, [c_request_p, c_char_p, c_char_p, _E], _STATUS),
    ("afs_serializer_serialize", c_request_p, [c_serializer_p, c_request_p, c_value_p, _E], _HANDLE),
    ("afs_request_free", None, [c_request_p], None),
    ("afs_request_method", c_char_p, [c_request_p], None),
    ("afs_request_url", c_char_p, [c_request_p], None),
    ("afs_request_header_count", c_size_t, [c_request_p], None),
    ("afs_request_header_name", c_char_p, [c_request_p, c_size_t], None),
    ("afs_request_header_value", c_char_p, [c_request_p, c_size_t], None),
    ("afs_request_header", c_char_p, [c_request_p, c_char_p], None),
    ("afs_request_body", c_void_p, [c_request_p, c_size_p], None),
    ("afs_request_body_stream", c_body_stream_p, [c_request_p], None),
    ("afs_request_timeout_interval", c_double, [c_request_p], None),
    ("afs_request_cache_policy", c_int, [c_request_p], None),
    ("afs_request_should_handle_cookies", c_bool, [c_request_p], None),
    ("afs_request_should_use_pipelining", c_bool, [c_request_p], None),
    ("afs_request_allows_cellular_access", c_bool, [c_request_p], None),
    ("afs_request_network_service_type", c_int, [c_request_p], None),
    ("afs_request_write_body_to_file", c_request_p, [c_request_p, c_char_p, _E], _HANDLE),
    # URLs and the request as HTTP/1.1 bytes (issue 14)
    ("afs_url_resolve", c_void_p, [c_char_p, c_char_p, _E], _OWNED),
    ("afs_serializer_set_base_url", c_int, [c_serializer_p, c_char_p, _E], _STATUS),
    ("afs_request_copy_head", c_void_p, [c_request_p, POINTER(c_size_t), _E], _OWNED),
    ("afs_request_write_to_fd", c_int, [c_request_p, c_int, POINTER(c_uint64), _E], _STATUS),
    ("afs_request_set_interruptible", None, [c_request_p, c_bool], None),
    # 15. body transforms (issue 22)
    ("afs_request_set_body_stream", c_int,
     [c_request_p, READ_FN, REWIND_FN, RELEASE_FN, c_void_p, c_uint64, _E], _STATUS),
    ("afs_request_is_chunked", c_bool, [c_request_p], None),
    ("afs_request_set_content_encoding", c_int, [c_request_p, c_char_p, c_int, c_uint, _E], _STATUS),
    ("afs_request_add_digest", c_int, [c_request_p, c_char_p, c_int, _E], _STATUS),
    ("afs_request_set_temp_dir", c_int, [c_request_p, c_char_p, _E], _STATUS),
    ("afs_request_copy_trailers", c_void_p, [c_request_p, POINTER(c_size_t), _E], _OWNED),
    ("afs_serializer_set_content_encoding", c_int,
     [c_serializer_p, c_char_p, c_int, c_uint, c_int, c_uint64, _E], _STATUS),
    # 7. multipart
    ("afs_serializer_multipart_form", c_form_p,
     [c_serializer_p, c_char_p, c_char_p, c_value_p, _E], _HANDLE),
    ("afs_form_append_file", c_int, [c_form_p, c_char_p, c_char_p, _E], _STATUS),
    ("afs_form_append_file_ex", c_int,
     [c_form_p, c_char_p, c_char_p, c_char_p, c_char_p, _E], _STATUS),
    ("afs_form_append_file_data", c_int,
     [c_form_p, c_void_p, c_size_t, c_char_p, c_char_p, c_char_p, _E], _STATUS),
    ("afs_form_append_form_data", c_int, [c_form_p, c_void_p, c_size_t, c_char_p, _E], _STATUS),
    ("afs_form_append_stream", c_int,
     [c_form_p, READ_FN, REWIND_FN, RELEASE_FN, c_void_p, c_uint64, c_char_p, c_char_p,
      c_char_p, _E], _STATUS),
    ("afs_form_append_part", c_int,
     [c_form_p, c_char_pp, c_char_pp, c_size_t, c_void_p, c_size_t, _E], _STATUS),
    ("afs_form_throttle_bandwidth", None, [c_form_p, c_size_t, c_double], None),
    ("afs_form_set_boundary", c_int, [c_form_p, c_char_p, _E], _STATUS),
    ("afs_form_boundary", c_char_p, [c_form_p], None),
    ("afs_form_finish", c_request_p, [c_form_p, _E], _HANDLE),
    ("afs_form_free", None, [c_form_p], None),
    # 8. body streams
    ("afs_body_stream_open", c_int, [c_body_stream_p, _E], _STATUS),
    ("afs_body_stream_read", c_int64, [c_body_stream_p, c_void_p, c_size_t], None),
    ("afs_body_stream_has_bytes_available", c_bool, [c_body_stream_p], None),
    ("afs_body_stream_content_length", c_uint64, [c_body_stream_p], None),
    ("afs_body_stream_close", None, [c_body_stream_p], None),
    # afs_body_stream_error fills its afs_error as an out-parameter: no errcheck.
    ("afs_body_stream_error", c_int, [c_body_stream_p, c_error_p], None),
    ("afs_body_stream_rewind", c_int, [c_body_stream_p, _E], _STATUS),
    ("afs_body_stream_seek", c_int, [c_body_stream_p, c_uint64, _E], _STATUS),
    ("afs_body_stream_position", c_uint64, [c_body_stream_p], None),
    ("afs_body_stream_write_to_fd", c_int, [c_body_stream_p, c_int, POINTER(c_uint64), _E], _STATUS),
    ("afs_body_stream_set_interruptible", None, [c_body_stream_p, c_bool], None),
    ("afs_body_stream_set_progress", None, [c_body_stream_p, PROGRESS_FN, c_void_p], None),
    ("afs_body_stream_set_progress_cancel", None, [c_body_stream_p, PROGRESS_CANCEL_FN, c_void_p], None),
    # 9. response side (declared for the response bindings; afs_response_object returns a
    # status AND an out value, so it has no errcheck)
    ("afs_response_serializer_new", c_response_serializer_p, [c_int], None),
    ("afs_response_serializer_new_compound", c_response_serializer_p,
     [POINTER(c_response_serializer_p), c_size_t, _E], _HANDLE),
    ("afs_response_serializer_copy", c_response_serializer_p, [c_response_serializer_p], None),
    ("afs_response_serializer_free", None, [c_response_serializer_p], None),
    ("afs_response_serializer_set_acceptable_status_codes", c_int,
     [c_response_serializer_p, POINTER(c_int), POINTER(c_int), c_size_t, _E], _STATUS),
    ("afs_response_serializer_set_acceptable_content_types", c_int,
     [c_response_serializer_p, c_char_pp, c_size_t, _E], _STATUS),
    ("afs_response_serializer_set_removes_keys_with_null_values", None,
     [c_response_serializer_p, c_bool], None),
    ("afs_response_serializer_set_max_decoded_bytes", None,
     [c_response_serializer_p, c_uint64], None),
    ("afs_response_serializer_set_json_reading_options", c_int,
     [c_response_serializer_p, c_uint, _E], _STATUS),
    ("afs_response_validate", c_int,
     [c_response_serializer_p, c_int, c_char_p, c_void_p, c_size_t, _E], _STATUS),
    ("afs_response_object", c_int,
     [c_response_serializer_p, c_int, c_char_p, c_void_p, c_size_t, POINTER(c_value_p), c_error_p],
     None),
    # 11. XML (xmlparse.py)
    ("afs_xml_parse", c_int, [c_void_p, c_size_t, POINTER(afs_xml_handler), c_void_p, _E], _STATUS),
    ("afs_xml_parser_new", c_xml_parser_p, [POINTER(afs_xml_handler), c_void_p, _E], _HANDLE),
    ("afs_xml_parser_set_limits", c_int, [c_xml_parser_p, c_size_t, c_uint64, _E], _STATUS),
    ("afs_xml_parser_feed", c_int, [c_xml_parser_p, c_void_p, c_size_t, _E], _STATUS),
    ("afs_xml_parser_finish", c_int, [c_xml_parser_p, _E], _STATUS),
    ("afs_xml_parser_free", None, [c_xml_parser_p], None),
    ("afs_value_count", c_size_t, [c_value_p], None),
    ("afs_value_key_at", c_void_p, [c_value_p, c_size_t, c_size_p], None),
    ("afs_value_at", c_value_p, [c_value_p, c_size_t], None),
    ("afs_value_get", c_value_p, [c_value_p, c_char_p], None),
    ("afs_value_get_bool", c_bool, [c_value_p], None),
    ("afs_value_get_int", c_int64, [c_value_p], None),
    ("afs_value_get_double", c_double, [c_value_p], None),
    ("afs_value_get_string", c_void_p, [c_value_p, c_size_p], None),
    ("afs_value_get_data", c_void_p, [c_value_p, c_size_p], None),
    # 10. bulk transfer (one crossing each way; the pickle subset of the header). Owned
    # results (afs_value_to_pickle, the out buffer of afs_response_object_pickle) are
    # freed with afs_free; afs_request_pickle and the snapshot of
    # afs_serializer_request_pickle are borrowed from the request.
    ("afs_value_from_pickle", c_value_p, [c_void_p, c_size_t, _E], _HANDLE),
    ("afs_value_to_pickle", c_void_p, [c_value_p, c_size_p, _E], None),
    ("afs_serializer_request_pickle", c_request_p,
     [c_serializer_p, c_char_p, c_char_p, c_void_p, c_size_t, POINTER(POINTER(c_uint8)), c_size_p,
      _E],
     _HANDLE),
    ("afs_request_pickle", c_void_p, [c_request_p, c_size_p], None),
    ("afs_request_copy", c_request_p, [c_request_p, _E], _HANDLE),
    ("afs_value_copy", c_value_p, [c_value_p], None),
    ("afs_response_object_pickle", c_int,
     [c_response_serializer_p, c_int, c_char_p, c_void_p, c_size_t, POINTER(POINTER(c_uint8)),
      c_size_p, c_error_p], None),
    # 14. response reader (afs_response_reader_object returns a status AND an out value)
    ("afs_response_reader_new", c_response_reader_p, [c_char_p, _E], _HANDLE),
    ("afs_response_reader_feed", c_int,
     [c_response_reader_p, c_void_p, c_size_t, c_size_p, _E], _STATUS),
    ("afs_response_reader_eof", c_int, [c_response_reader_p, _E], _STATUS),
    ("afs_response_reader_reset", c_int, [c_response_reader_p, c_char_p, _E], _STATUS),
    ("afs_response_reader_free", None, [c_response_reader_p], None),
    ("afs_response_reader_state", c_int, [c_response_reader_p], None),
    ("afs_response_reader_status", c_int, [c_response_reader_p], None),
    ("afs_response_reader_reason", c_char_p, [c_response_reader_p], None),
    ("afs_response_reader_version", c_int, [c_response_reader_p], None),
    ("afs_response_reader_header_count", c_size_t, [c_response_reader_p], None),
    ("afs_response_reader_header_name", c_char_p, [c_response_reader_p, c_size_t], None),
    ("afs_response_reader_header_value", c_char_p, [c_response_reader_p, c_size_t], None),
    ("afs_response_reader_header", c_char_p, [c_response_reader_p, c_char_p], None),
    ("afs_response_reader_trailer_count", c_size_t, [c_response_reader_p], None),
    ("afs_response_reader_trailer_name", c_char_p, [c_response_reader_p, c_size_t], None),
    ("afs_response_reader_trailer_value", c_char_p, [c_response_reader_p, c_size_t], None),
    ("afs_response_reader_set_body_callback", None, [c_response_reader_p, BODY_FN, c_void_p], None),
    ("afs_response_reader_body", c_void_p, [c_response_reader_p, c_size_p], None),
    ("afs_response_reader_set_decodes_content", None, [c_response_reader_p, c_bool], None),
    ("afs_response_reader_set_max_decoded_bytes", None, [c_response_reader_p, c_uint64], None),
    ("afs_response_reader_set_limits", c_int,
     [c_response_reader_p, POINTER(afs_reader_limits), _E], _STATUS),
    ("afs_response_reader_interim_count", c_size_t, [c_response_reader_p], None),
    ("afs_response_reader_interim_status", c_int, [c_response_reader_p, c_size_t], None),
    ("afs_response_reader_text", c_void_p, [c_response_reader_p, c_char_p, c_size_p, _E], None),
    ("afs_response_reader_object", c_int,
     [c_response_reader_p, c_response_serializer_p, POINTER(c_value_p), c_error_p], None),
    # 13. security policy
    ("afs_security_policy_new", c_security_policy_p, [c_int, _E], _HANDLE),
    ("afs_security_policy_add_pinned_certificate", c_int,
     [c_security_policy_p, c_void_p, c_size_t, _E], _STATUS),
    ("afs_security_policy_add_pinned_public_key_sha256", c_int,
     [c_security_policy_p, c_char_p, _E], _STATUS),
    ("afs_security_policy_set_limits", c_int,
     [c_security_policy_p, POINTER(afs_security_limits), _E], _STATUS),
    ("afs_security_policy_set_allows_invalid_certificates", None, [c_security_policy_p, c_bool], None),
    ("afs_security_policy_set_validates_domain_name", None, [c_security_policy_p, c_bool], None),
    ("afs_security_policy_set_time", None, [c_security_policy_p, c_int64], None),
    ("afs_security_policy_copy", c_security_policy_p, [c_security_policy_p], None),
    ("afs_security_policy_free", None, [c_security_policy_p], None),
    ("afs_security_policy_evaluate", c_int,
     [c_security_policy_p, POINTER(c_void_p), c_size_p, c_size_t, c_char_p, c_bool, _E], _STATUS),
    ("afs_certificate_read", c_int, [c_void_p, c_size_t, POINTER(c_value_p), _E], _STATUS),
    ("afs_certificate_read_with_limits", c_int,
     [c_void_p, c_size_t, POINTER(afs_security_limits), POINTER(c_value_p), _E], _STATUS),
    # 16. decoders
    ("afs_query_parse", c_value_p, [c_char_p, c_size_t, POINTER(afs_query_parse_options), _E], _HANDLE),
    ("afs_form_body_parse", c_value_p, [c_void_p, c_size_t, POINTER(afs_query_parse_options), _E], _HANDLE),
    ("afs_query_parse_pickle", c_void_p, [c_char_p, c_size_t, POINTER(afs_query_parse_options), c_size_p, _E], None),
    ("afs_multipart_parser_new", c_multipart_parser_p,
     [c_char_p, POINTER(afs_multipart_limits), POINTER(afs_multipart_handler), c_void_p, _E], _HANDLE),
    ("afs_multipart_parser_feed", c_int, [c_multipart_parser_p, c_void_p, c_size_t, _E], _STATUS),
    ("afs_multipart_parser_finish", c_int, [c_multipart_parser_p, _E], _STATUS),
    ("afs_multipart_parser_free", None, [c_multipart_parser_p], None),
    ("afs_multipart_parser_feed_events", c_int,
     [c_multipart_parser_p, c_void_p, c_size_t, POINTER(afs_multipart_event), c_size_t,
      POINTER(afs_multipart_feed_result), _E], _STATUS),
    ("afs_multipart_reader_new", c_multipart_reader_p,
     [c_int, c_char_p, POINTER(afs_multipart_limits), _E], _HANDLE),
    ("afs_multipart_reader_next_part", c_int, [c_multipart_reader_p, _E], None),
    ("afs_multipart_reader_name", c_char_p, [c_multipart_reader_p], None),
    ("afs_multipart_reader_filename", c_char_p, [c_multipart_reader_p], None),
    ("afs_multipart_reader_header_count", c_size_t, [c_multipart_reader_p], None),
    ("afs_multipart_reader_header_name", c_char_p, [c_multipart_reader_p, c_size_t], None),
    ("afs_multipart_reader_header_value", c_char_p, [c_multipart_reader_p, c_size_t], None),
    ("afs_multipart_reader_read", c_int64, [c_multipart_reader_p, c_void_p, c_size_t, _E], None),
    ("afs_multipart_reader_part_to_fd", c_int, [c_multipart_reader_p, c_int, POINTER(c_uint64), _E], _STATUS),
    ("afs_multipart_reader_free", None, [c_multipart_reader_p], None),
    # 12. images and the rest of the response family; dates (section 3)
    ("afs_value_new_date", c_value_p, [c_double], None),
    ("afs_value_get_date", c_double, [c_value_p], None),
    ("afs_response_serializer_set_image_scale", c_int, [c_response_serializer_p, c_double, _E], _STATUS),
    ("afs_response_serializer_set_max_image_pixels", c_int,
     [c_response_serializer_p, c_uint64, _E], _STATUS),
    ("afs_response_serializer_set_empty_response_codes", c_int,
     [c_response_serializer_p, POINTER(c_int), c_size_t, _E], _STATUS),
    ("afs_response_object_for_method", c_int,
     [c_response_serializer_p, c_char_p, c_int, c_char_p, c_void_p, c_size_t, POINTER(c_value_p),
      c_error_p], None),
    ("afs_response_serializer_set_accepts_structured_suffix", None, [c_response_serializer_p, c_bool], None),
    ("afs_response_serializer_set_strips_xssi_prefix", None, [c_response_serializer_p, c_bool], None),
    ("afs_response_object_pickle_for_method", c_int,
     [c_response_serializer_p, c_char_p, c_int, c_char_p, c_void_p, c_size_t,
      POINTER(POINTER(c_uint8)), c_size_p, c_error_p], None),
]

_BY_NAME: Dict[str, Tuple[str, Any, Sequence[Any], Optional[str]]] = {
    d[0]: d for d in _DECLARATIONS}

# --------------------------------------------------------------------------------------
# Loading


def _candidate_paths() -> List[Tuple[str, str]]:
    here = os.path.dirname(os.path.abspath(__file__))
    return [
        ("packaged copy", os.path.join(here, "libafserialization.so.0")),
        ("source checkout", os.path.normpath(
            os.path.join(here, "..", "..", "..", "build", "lib", "libafserialization.so"))),
    ]


def find_library() -> str:
    """The path of the library to load: ``$AFSERIALIZATION_LIBRARY``, else the packaged copy,
    else a source checkout's ``build/lib/libafserialization.so``."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        if not os.path.exists(env):
            raise ImportError(f"{LIBRARY_ENV}={env!r} does not exist")
        return env
    tried = []
    for what, path in _candidate_paths():
        if os.path.exists(path):
            return path
        tried.append(f"{what} {path}")
    raise ImportError("libafserialization.so not found: set " + LIBRARY_ENV +
                      " to a built library, or build one with scripts/build-library.sh "
                      "(tried: " + "; ".join(tried) + ")")


class _Raw:
    """The plain ctypes function objects, by C name."""


class Library:
    """The loaded library: one attribute per C function (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.cdll = ctypes.CDLL(path)
        self.raw = _Raw()
        for name, restype, argtypes, check in _DECLARATIONS:
            try:
                f = getattr(self.cdll, name)
            except AttributeError:
                raise errors.MissingFunctionError(name, path) from None
            f.restype = restype
            f.argtypes = list(argtypes)
            if check is not None:
                f.errcheck = _CHECKS[check]
            setattr(self.raw, name, f)
            setattr(self, name, _wrap(name, f, takes_error=bool(argtypes) and argtypes[-1] is _E
                                      and check is not None))

    def untyped(self, name: str, restype: Any = None) -> Any:
        """A second ctypes function object for the declared function ``name``, for hot loops:
        every opaque handle type of its declaration becomes ``c_void_p``, so handles go in
        and come out as plain ``int`` addresses instead of one pointer object per call.
        ``restype``, when given, replaces the declared result type (``c_char_p`` reads a
        NUL-terminated borrowed string as ``bytes`` in the same call). No ``errcheck``, no
        wrapper: the caller owns every check. The declaration itself stays the one in
        ``_DECLARATIONS``.

        Raises:
            KeyError: ``name`` is not a declared function.
        """
        declaration = _BY_NAME[name]
        _, declared_restype, argtypes, _ = declaration
        f = self.cdll[name]  # indexing makes a new function object (attributes are cached)
        f.argtypes = [c_void_p if t in _OPAQUE_TYPES else t for t in argtypes]
        if restype is None:
            restype = c_void_p if declared_restype in _OPAQUE_TYPES else declared_restype
        f.restype = restype
        return f


def _wrap(name: str, f: Any, takes_error: bool) -> Callable[..., Any]:
    ArgumentError = ctypes.ArgumentError
    SerializationError = errors.SerializationError
    pending = _pending

    if takes_error:
        def call(*args: Any) -> Any:
            try:
                result = f(*args, byref(afs_error()))
            except SerializationError as e:
                exc = getattr(pending, "exc", None)
                if exc is not None:
                    pending.exc = None
                    if not isinstance(exc, Exception):
                        raise exc  # KeyboardInterrupt, SystemExit: never wrapped
                    raise e from exc
                raise
            except ArgumentError as e:
                raise TypeError(f"{name}: {e}") from e
            if getattr(pending, "exc", None) is not None:
                raise_pending()
            return result
    else:
        def call(*args: Any) -> Any:
            try:
                result = f(*args)
            except ArgumentError as e:
                raise TypeError(f"{name}: {e}") from e
            if getattr(pending, "exc", None) is not None:
                raise_pending()
            return result
    call.__name__ = name
    call.__qualname__ = name
    call.__doc__ = f"C: {name} (argtypes {f.argtypes}, restype {f.restype})"
    return call


library_path: str = find_library()
lib: Library = Library(library_path)
_raw_free = lib.raw.afs_free

#: The C callback objects must outlive every C object that may call them.
KEEP_ALIVE: Dict[str, Any] = {}


# Interruptible writes (issue 19): the write loops ask the library to return on a signal
# (afs_request_set_interruptible, afs_body_stream_set_interruptible) and run the
# interpreter's pending signal handlers between attempts, so Ctrl-C (KeyboardInterrupt, or
# whatever a handler raises) stops a write to a peer that stopped reading.
_check_signals = ctypes.pythonapi.PyErr_CheckSignals
_check_signals.argtypes = []
_check_signals.restype = ctypes.c_int


def check_signals() -> None:
    """Runs pending signal handlers (PyErr_CheckSignals); what a handler raises propagates
    (ctypes' pythonapi raises the exception it leaves set)."""
    _check_signals()
